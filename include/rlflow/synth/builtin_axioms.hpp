#pragma once
/// \file
/// The operator axioms the prover ships with (builtin_axioms), parsed from
/// detail/prover_axioms.hpp with their instances and guards.

#include <rlflow/rewrite/rule_text.hpp>
#include <rlflow/synth/axiom.hpp>
#include <rlflow/synth/detail/prover_axioms.hpp>
#include <rlflow/synth/detail/rewrite_names.hpp>
#include <rlflow/synth/rule_check.hpp>

#include <utility>
#include <vector>

namespace rlflow::synth {

/// The shipped axioms: the rules of detail::prover_axioms_text() with the instances and
/// guards of detail::prover_axiom_specs (an axiom without a spec gets no instances, so it
/// fails validation).
[[nodiscard]] inline std::vector<Axiom> builtin_axioms() {
    std::vector<Axiom> axioms;
    for (Rule& rule : parse_rules_text(detail::prover_axioms_text(), "<prover axioms>")) {
        Axiom axiom{std::move(rule), {}, AxiomGuard::source};
        if (const detail::AxiomSpec* spec = detail::find_axiom_spec(axiom.rule.name)) {
            axiom.instances = parse_rule_instances(axiom.rule, spec->instances);
            axiom.guard = spec->guard;
        }
        axioms.push_back(std::move(axiom));
    }
    return axioms;
}

}  // namespace rlflow::synth
