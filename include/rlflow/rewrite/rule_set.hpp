#pragma once
/// \file
/// An ordered set of rules: the xfers an environment offers, with ids equal to positions,
/// unique names, and the search plans the matcher uses.

#include <rlflow/rewrite/detail/compiled_rule.hpp>
#include <rlflow/rewrite/rule.hpp>

#include <array>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace rlflow::rewrite {

/// Rules with stable ids (their positions) and unique names.
class RuleSet {
public:
    RuleSet() = default;
    /// Validates and adds each rule in order; throws rule_error naming the rule.
    explicit RuleSet(std::vector<Rule> rules) {
        for (auto& r : rules) add(std::move(r));
    }

    /// Validates `rule`, gives it the next id and returns that id. Throws rule_error if the
    /// rule is malformed, was rejected by verification, or its name is taken.
    std::uint32_t add(Rule rule) {
        validate_rule(rule);
        RLFLOW_EXPECTS(rule.verification != Verification::rejected, rule_error,
                       "rule '" + rule.name + "' failed verification (status rejected) and is never used for rewriting");
        RLFLOW_EXPECTS(!find(rule.name), rule_error, "rule '" + rule.name + "' is defined twice");
        rule.id = static_cast<std::uint32_t>(m_rules.size());
        m_compiled.push_back(detail::compile_rule(rule));
        for (std::uint32_t n = 0; n < rule.source.size(); ++n)
            m_anchors[static_cast<std::size_t>(rule.source[n].op)].emplace_back(rule.id, n);
        m_rules.push_back(std::move(rule));
        return m_rules.back().id;
    }

    [[nodiscard]] std::size_t size() const noexcept { return m_rules.size(); }
    [[nodiscard]] bool empty() const noexcept { return m_rules.empty(); }
    [[nodiscard]] const Rule& operator[](std::size_t id) const { return m_rules[id]; }
    [[nodiscard]] std::span<const Rule> rules() const noexcept { return m_rules; }
    [[nodiscard]] auto begin() const noexcept { return m_rules.begin(); }
    [[nodiscard]] auto end() const noexcept { return m_rules.end(); }

    /// The id of the rule named `name`, if any.
    [[nodiscard]] std::optional<std::uint32_t> find(std::string_view name) const noexcept {
        for (const Rule& r : m_rules)
            if (r.name == name) return r.id;
        return std::nullopt;
    }
    /// The rule named `name`; throws rule_error if there is none.
    [[nodiscard]] const Rule& at(std::string_view name) const {
        const auto id = find(name);
        RLFLOW_EXPECTS(id.has_value(), rule_error, "no rule named '" + std::string(name) + "'");
        return m_rules[*id];
    }

    /// The matcher's precomputed plans for rule `id`.
    [[nodiscard]] const detail::CompiledRule& compiled(std::size_t id) const { return m_compiled[id]; }
    /// (rule id, source node) pairs whose source node has op `kind`: where a node of that
    /// kind can anchor a search.
    [[nodiscard]] std::span<const std::pair<std::uint32_t, std::uint32_t>> anchors(OpKind kind) const noexcept {
        return m_anchors[static_cast<std::size_t>(kind)];
    }

private:
    std::vector<Rule> m_rules;
    std::vector<detail::CompiledRule> m_compiled;
    std::array<std::vector<std::pair<std::uint32_t, std::uint32_t>>, op_kind_count> m_anchors;
};

}  // namespace rlflow::rewrite
