#pragma once
/// \file
/// The applier: rewrites a graph at a location. Two modes: in place, returning the edit
/// journal as an undo record (the RL environment steps and steps back without copying),
/// and into a copy (tree search keeps both graphs).
///
/// A rewrite adds the target nodes (shape inference runs for each new node only), points
/// every consumer of a replaced output at its replacement, removes the matched nodes, and
/// gives the replacements the replaced tensors' names so downstream names survive.

#include <rlflow/core/graph.hpp>
#include <rlflow/rewrite/detail/target.hpp>
#include <rlflow/rewrite/location.hpp>
#include <rlflow/rewrite/matcher.hpp>

#include <string>
#include <vector>

namespace rlflow::rewrite {

namespace detail {

/// Binds a location's symbols by reading its matched nodes' attributes.
inline void bind_symbols(const Rule& rule, const Graph& graph, const Location& location, SymbolTable& symbols) {
    symbols.reset(rule.symbols.size());
    AttributeValue scratch;
    for (std::uint32_t q = 0; q < rule.source.size(); ++q) {
        RLFLOW_EXPECTS(graph.contains(location.nodes[q]) && graph.node(location.nodes[q]).op == rule.source[q].op,
                       precondition_error, "rule '" + rule.name + "': location does not match source node " + std::to_string(q));
        for (const PatternAttribute& a : rule.source[q].attributes) {
            if (a.value.kind != AttrExpr::Kind::symbol || symbols.bound(a.value.symbol)) continue;
            const AttributeValue* v = pattern_view(graph.node(location.nodes[q]), a.name, scratch);
            RLFLOW_EXPECTS(v != nullptr, precondition_error,
                           "rule '" + rule.name + "': matched node lacks attribute '" + a.name + "'");
            symbols.bind(a.value.symbol, *v);
        }
    }
}

/// The graph tensor a target-side reference stands for, once target nodes exist.
[[nodiscard]] inline TensorRef resolve(PatternRef ref, const Location& location, const std::vector<NodeId>& created) {
    return ref.is_variable() ? location.variables[ref.index] : TensorRef{created[ref.index], ref.output};
}

/// Adds the target nodes of an instantiated rule; returns their ids.
[[nodiscard]] inline std::vector<NodeId> add_target(Graph& graph, const Rule& rule, const Location& location,
                                                    TargetInstance& instance) {
    std::vector<NodeId> created;
    created.reserve(rule.target.size());
    for (std::size_t i = 0; i < rule.target.size(); ++i) {
        const PatternNode& p = rule.target[i];
        if (p.op == OpKind::Constant) {
            created.push_back(graph.add_constant({}, constant_value(instance.attributes[i])));
            continue;
        }
        std::vector<TensorRef> inputs;
        inputs.reserve(p.inputs.size());
        for (const PatternRef& r : p.inputs) inputs.push_back(resolve(r, location, created));
        created.push_back(graph.add_node(p.op, std::move(inputs), std::move(instance.attributes[i])));
    }
    return created;
}

/// Performs the rewrite on `graph` (no recording; on error the graph may be half edited).
inline void rewrite(Graph& graph, const Rule& rule, const Location& location) {
    SymbolTable symbols;
    bind_symbols(rule, graph, location, symbols);
    TargetInstance instance;
    RLFLOW_EXPECTS(instantiate_target(rule, EvalContext{graph, location, symbols}, instance), precondition_error,
                   "rule '" + rule.name + "': the target does not fit this location");
    std::vector<std::string> tensor_names, node_names;
    for (const OutputMapping& m : rule.outputs) {
        tensor_names.push_back(graph.output(location.tensor(m.source)).name);
        node_names.push_back(graph.node(location.nodes[m.source.index]).name);
    }
    const std::vector<NodeId> created = add_target(graph, rule, location, instance);
    for (const OutputMapping& m : rule.outputs)
        graph.replace_all_uses(location.tensor(m.source), resolve(m.target, location, created));
    for (std::size_t q = rule.source.size(); q-- > 0;) graph.remove_node(location.nodes[q]);
    // Each replaced node's name goes to one replacement node (the first that takes over
    // one of its outputs), so node names stay unique.
    std::vector<char> renamed(created.size(), 0), name_given(rule.source.size(), 0);
    for (std::size_t i = 0; i < rule.outputs.size(); ++i) {
        const PatternRef t = rule.outputs[i].target;
        if (t.is_variable()) continue;
        graph.rename_output(resolve(t, location, created), tensor_names[i]);
        const std::uint32_t source = rule.outputs[i].source.index;
        if (renamed[t.index] || name_given[source]) continue;
        graph.rename(created[t.index], node_names[i]);
        renamed[t.index] = name_given[source] = 1;
    }
}

/// Runs `edit` on a recording graph and returns the journal; on any exception the edits
/// are undone and the exception propagates (rlflow errors as precondition_error).
template <class Edit>
[[nodiscard]] EditJournal recorded(Graph& graph, const Rule& rule, Edit&& edit) {
    RLFLOW_EXPECTS(!graph.recording(), precondition_error, "apply: the graph is already recording edits");
    graph.begin_recording();
    try {
        edit();
    } catch (const rlflow::error& e) {
        graph.undo(graph.end_recording());
        throw precondition_error("rule '" + rule.name + "' cannot be applied at this location: " + e.what());
    } catch (...) {
        graph.undo(graph.end_recording());
        throw;
    }
    return graph.end_recording();
}

/// Throws precondition_error unless `location` is a valid location of the rule in `graph`.
inline void expect_location(const Graph& graph, const RuleSet& rules, std::uint32_t rule_id, const Location& location) {
    RLFLOW_EXPECTS(rule_id < rules.size(), precondition_error, "no rule " + std::to_string(rule_id));
    const GraphIndex index(graph);
    Matcher matcher(rules, graph, index);
    RLFLOW_EXPECTS(matcher.is_location(rule_id, location), precondition_error,
                   "rule '" + rules[rule_id].name + "' does not match at this location");
}

}  // namespace detail

/// Whether apply() re-checks the location.
enum class Verify : std::uint8_t {
    /// Check everything the matcher checks (O(|V|) for the cycle check).
    yes,
    /// Trust the caller: the location comes from a LocationIndex that is current for this
    /// graph (what Rewriter does on every step).
    no,
};

/// Applies rule `rule_id` at `location` in place and returns the edits, the record that
/// Graph::undo takes to step back. If the location is not valid, throws
/// precondition_error and leaves the graph as it was. The graph must not be recording.
[[nodiscard]] inline EditJournal apply(Graph& graph, const RuleSet& rules, std::uint32_t rule_id, const Location& location,
                                       Verify verify = Verify::yes) {
    if (verify == Verify::yes) detail::expect_location(graph, rules, rule_id, location);
    const Rule& rule = rules[rule_id];
    return detail::recorded(graph, rule, [&] { detail::rewrite(graph, rule, location); });
}

/// A copy of `graph` with rule `rule_id` applied at `location`. Throws
/// precondition_error if the location is not valid.
[[nodiscard]] inline Graph apply_copy(const Graph& graph, const RuleSet& rules, std::uint32_t rule_id,
                                      const Location& location) {
    detail::expect_location(graph, rules, rule_id, location);
    Graph copy = graph;
    detail::rewrite(copy, rules[rule_id], location);
    return copy;
}

}  // namespace rlflow::rewrite
