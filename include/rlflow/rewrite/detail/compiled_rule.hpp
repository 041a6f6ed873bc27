#pragma once
/// \file
/// What the matcher precomputes for a rule: one search plan per possible anchor node, the
/// source attributes that can only be checked once the match is complete, and whether a
/// match could close a cycle.

#include <rlflow/rewrite/rule.hpp>

#include <cstdint>
#include <vector>

namespace rlflow::rewrite::detail {

/// One step of a search plan: how to find candidates for source node `node`.
struct PlanStep {
    enum class Kind : std::uint8_t {
        /// The unique producer of a tensor an already matched node consumes.
        producer,
        /// A consumer of the already bound tensor `from`.
        consumer,
    };
    Kind kind = Kind::producer;
    std::uint32_t node = 0;
    PatternRef from;
};

/// A rule prepared for matching.
struct CompiledRule {
    /// plans[a]: the steps that match every other source node once node a is bound.
    std::vector<std::vector<PlanStep>> plans;
    /// Bit k of mapped_outputs[n]: output k of source node n is replaced by a target tensor.
    std::vector<std::uint32_t> mapped_outputs;
    /// (node, attribute) pairs of source attributes computed from the whole match.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> deferred_attributes;
    /// Whether a structurally valid match may still close a cycle (see compile_rule).
    bool cycle_prone = false;
};

/// The search plan that starts from source node `anchor`: producer steps first (one
/// candidate each), then consumers of bound node outputs, then of bound variables.
[[nodiscard]] inline std::vector<PlanStep> plan_from(const Rule& rule, std::uint32_t anchor) {
    const auto& nodes = rule.source;
    std::vector<char> planned(nodes.size(), 0);
    std::vector<char> bound_variable(rule.variables.size(), 0);
    std::vector<PlanStep> plan;
    const auto mark = [&](std::uint32_t q) {
        planned[q] = 1;
        for (const PatternRef& r : nodes[q].inputs)
            if (r.is_variable()) bound_variable[r.index] = 1;
    };
    mark(anchor);
    for (std::size_t count = 1; count < nodes.size(); ++count) {
        std::optional<PlanStep> next;
        for (std::uint32_t c = 0; c < nodes.size() && !next; ++c)
            if (planned[c])
                for (const PatternRef& r : nodes[c].inputs)
                    if (!r.is_variable() && !planned[r.index] && !next) next = PlanStep{PlanStep::Kind::producer, r.index, {}};
        for (int pass = 0; pass < 2 && !next; ++pass)
            for (std::uint32_t q = 0; q < nodes.size() && !next; ++q) {
                if (planned[q]) continue;
                for (const PatternRef& r : nodes[q].inputs) {
                    const bool ready = pass == 0 ? !r.is_variable() && planned[r.index]
                                                 : r.is_variable() && bound_variable[r.index];
                    if (ready) {
                        next = PlanStep{PlanStep::Kind::consumer, q, r};
                        break;
                    }
                }
            }
        if (!next)
            throw rule_error("rule '" + rule.name + "': source pattern is not connected (through nodes or shared variables)");
        plan.push_back(*next);
        mark(next->node);
    }
    return plan;
}

/// reach[b][a]: source node b reaches node a along pattern edges (a node reaches itself).
[[nodiscard]] inline std::vector<std::vector<char>> pattern_reachability(const std::vector<PatternNode>& nodes) {
    std::vector<std::vector<char>> reach(nodes.size(), std::vector<char>(nodes.size(), 0));
    for (std::size_t a = 0; a < nodes.size(); ++a) {
        reach[a][a] = 1;
        // Nodes are topologically ordered, so a's inputs are settled before a.
        for (const PatternRef& r : nodes[a].inputs)
            if (!r.is_variable())
                for (std::size_t b = 0; b < nodes.size(); ++b)
                    if (reach[b][r.index]) reach[b][a] = 1;
    }
    return reach;
}

/// Prepares a (validated) rule. A match can close a cycle only through an outside path
/// from a replaced output back to a variable's producer. If every node consuming a
/// variable reaches every node with a replaced output inside the pattern, such a path
/// would already be a cycle in the graph, so the rule is not cycle-prone.
[[nodiscard]] inline CompiledRule compile_rule(const Rule& rule) {
    CompiledRule c;
    for (std::uint32_t a = 0; a < rule.source.size(); ++a) c.plans.push_back(plan_from(rule, a));
    c.mapped_outputs.assign(rule.source.size(), 0);
    for (const OutputMapping& m : rule.outputs) c.mapped_outputs[m.source.index] |= 1u << m.source.output;
    for (std::uint32_t n = 0; n < rule.source.size(); ++n)
        for (std::uint32_t a = 0; a < rule.source[n].attributes.size(); ++a) {
            const auto kind = rule.source[n].attributes[a].value.kind;
            if (kind != AttrExpr::Kind::literal && kind != AttrExpr::Kind::symbol) c.deferred_attributes.emplace_back(n, a);
        }
    const auto reach = pattern_reachability(rule.source);
    for (std::size_t a = 0; a < rule.source.size(); ++a) {
        if (!c.mapped_outputs[a]) continue;
        for (std::size_t b = 0; b < rule.source.size(); ++b) {
            const auto& inputs = rule.source[b].inputs;
            const bool takes_variable = std::any_of(inputs.begin(), inputs.end(), [](PatternRef r) { return r.is_variable(); });
            if (takes_variable && !reach[b][a]) c.cycle_prone = true;
        }
    }
    return c;
}

}  // namespace rlflow::rewrite::detail
