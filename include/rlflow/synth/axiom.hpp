#pragma once
/// \file
/// The prover's operator axioms as data: an Axiom is a rule with the instances it is
/// validated on and the guard under which the prover may use it (see synth/prover.hpp for
/// what a guard means), and validate_axiom checks one numerically (synth/rule_check.hpp)
/// before it is used. The shipped axioms are in synth/builtin_axioms.hpp.

#include <rlflow/rewrite/rule.hpp>
#include <rlflow/synth/detail/rewrite_names.hpp>
#include <rlflow/synth/rule_check.hpp>

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow::synth {

/// The numeric validation of one axiom (or one op's shape facts).
struct AxiomReport {
    std::string name;
    bool valid = false;
    std::string detail;
};

/// What must be known defined before an axiom is used (see synth/prover.hpp's file comment).
enum class AxiomGuard : std::uint8_t {
    /// The source: where it is defined (and the constraints hold), the target is defined
    /// and equal. Numeric validation demands the rule apply wherever its source fits.
    source,
    /// Also the target's inner nodes (those no output maps to): for identities that hold
    /// only where the target's parts fit.
    source_and_inner_target,
};

/// An operator axiom: a rule the prover may use once it passes its numeric instances.
struct Axiom {
    Rule rule;
    /// At least two, of different shapes; every one must fit.
    std::vector<RuleInstance> instances;
    AxiomGuard guard = AxiomGuard::source;
};

namespace detail {

/// The instances an axiom is validated on, and its guard.
struct AxiomSpec {
    std::string_view name;
    std::string_view instances;
    AxiomGuard guard = AxiomGuard::source;
};

/// The fewest instances, of different shapes, an axiom must pass.
inline constexpr std::size_t min_axiom_instances = 2;

/// Whether at least two instances give the variables different shapes.
[[nodiscard]] inline bool has_two_shapes(std::span<const RuleInstance> instances) {
    for (std::size_t i = 1; i < instances.size(); ++i)
        if (instances[i].variable_types != instances[0].variable_types) return true;
    return false;
}

/// Checks `axiom` numerically on its instances: every instance must fit, the rule must
/// apply there (its target must instantiate wherever its source does) and both sides must
/// agree, on at least two instances of different shapes.
[[nodiscard]] inline AxiomReport validate_axiom(const Axiom& axiom) {
    const std::string& name = axiom.rule.name;
    const RuleCheckReport check = check_rule_numerically(axiom.rule, axiom.instances);
    const std::string counts = std::to_string(check.instances_checked) + " of " + std::to_string(axiom.instances.size()) + " instances";
    if (!check.equal) return {name, false, "sides differ: " + check.detail};
    if (check.instances_checked != axiom.instances.size() || axiom.instances.size() < min_axiom_instances
        || !has_two_shapes(axiom.instances))
        return {name, false, "checked on " + counts + " (every instance must fit, two shapes at least)"};
    constexpr std::size_t room = 16;  // "-1.2e-308" and less
    std::array<char, room> difference{};
    char* end = std::to_chars(difference.data(), difference.data() + difference.size(), check.max_abs_diff,
                              std::chars_format::scientific, 1).ptr;
    return {name, true, "equal on " + counts + ", max |difference| " + std::string(difference.data(), end)};
}

}  // namespace detail

}  // namespace rlflow::synth
