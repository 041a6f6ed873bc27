#pragma once
/// \file
/// Folding weight-only work ahead of time. The cost model prices weight-only nodes
/// (rlflow::is_weight_only: computed from constants and weights with data alone) at zero,
/// because a deployment computes them once at load time. A rewrite such as Conv +
/// BatchNorm folding leaves them in the graph as ordinary nodes (Add, Sqrt, Div, Mul on
/// the BatchNorm weights), and a runtime that does not fold constants would run them on
/// every inference. fold_weight_only evaluates them here, with the reference executor, and
/// writes their results as new weights, so the graph that is written runs what was priced.

#include <rlflow/core/graph.hpp>
#include <rlflow/core/memory.hpp>
#include <rlflow/exec/executor.hpp>

#include <algorithm>
#include <memory>
#include <ranges>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace rlflow::detail {

/// Weight-only nodes of `g` (sources included) that the reference executor can evaluate, by node
/// id: every output is of a dtype the node holds (holds_dtype) and every input comes from
/// such a node. This is the rule of cost::detail::runs_on_executor (no opaque op;
/// is_weight_only already rules opaque ops out), applied to the whole weight-only subgraph a
/// node needs.
[[nodiscard]] inline std::vector<char> foldable_nodes(const Graph& g) {
    const std::vector<char> weight_only = weight_only_nodes(g);
    std::vector<char> foldable(g.id_bound(), 0);
    for (const NodeId id : g.topological_order()) {
        const Node& n = g.node(id);
        if (!weight_only[id.value]) continue;
        bool runs = std::all_of(n.outputs.begin(), n.outputs.end(),
                                [&](const NodeOutput& out) { return holds_dtype(n.op, out.type.dtype); });
        for (const TensorRef& in : n.inputs) runs = runs && (!in.present() || foldable[in.node.value]);
        foldable[id.value] = runs ? 1 : 0;
    }
    return foldable;
}

/// The tensors to fold, in node id then output order: outputs of foldable computed nodes
/// that a graph output names or a node left in place (not foldable) reads.
[[nodiscard]] inline std::vector<TensorRef> fold_boundary(const Graph& g, const std::vector<char>& foldable) {
    std::vector<TensorRef> boundary;
    for (const Node& n : g.nodes()) {
        if (!foldable[n.id.value] || n.traits().has(op_flag_source)) continue;
        for (std::uint32_t i = 0; i < n.outputs.size(); ++i) {
            const TensorRef ref{n.id, i};
            const auto& uses = n.outputs[i].uses;
            const bool read_at_run_time =
                std::any_of(uses.begin(), uses.end(), [&](const Use& u) { return !foldable[u.node.value]; });
            if (read_at_run_time || g.is_graph_output(ref)) boundary.push_back(ref);
        }
    }
    return boundary;
}

/// The nodes the tensors of `boundary` are computed from (their producers included), in
/// topological order of `g`.
[[nodiscard]] inline std::vector<NodeId> fold_ancestors(const Graph& g, std::span<const TensorRef> boundary) {
    std::vector<char> needed(g.id_bound(), 0);
    std::vector<NodeId> stack;
    for (const TensorRef& ref : boundary) stack.push_back(ref.node);
    while (!stack.empty()) {
        const NodeId id = stack.back();
        stack.pop_back();
        if (needed[id.value]) continue;
        needed[id.value] = 1;
        for (const TensorRef& in : g.node(id).inputs)
            if (in.present()) stack.push_back(in.node);
    }
    std::vector<NodeId> order = g.topological_order();
    std::erase_if(order, [&](NodeId id) { return !needed[id.value]; });
    return order;
}

/// A graph of `nodes` alone (a topologically ordered, input-closed set of foldable nodes
/// of `g`) with the tensors of `boundary` as its outputs, in that order. It has no graph
/// inputs: constants and weights become weights sharing their data.
[[nodiscard]] inline Graph weight_only_subgraph(const Graph& g, std::span<const NodeId> nodes,
                                                std::span<const TensorRef> boundary) {
    Graph sub;
    std::vector<NodeId> copy_of(g.id_bound());
    for (const NodeId id : nodes) {
        const Node& n = g.node(id);
        if (n.traits().has(op_flag_source)) {
            copy_of[id.value] = sub.add_weight(n.name, n.outputs[0].type, n.data);
            continue;
        }
        std::vector<TensorRef> inputs;
        inputs.reserve(n.inputs.size());
        for (const TensorRef& in : n.inputs) inputs.push_back({copy_of[in.node.value], in.index});
        copy_of[id.value] = sub.add_node(n.op, std::move(inputs), n.attributes, n.name);
    }
    for (const TensorRef& ref : boundary) sub.add_output({copy_of[ref.node.value], ref.index});
    return sub;
}

/// Every node and tensor name of `g`.
[[nodiscard]] inline std::set<std::string> used_names(const Graph& g) {
    std::set<std::string> names;
    for (const Node& n : g.nodes()) {
        names.insert(n.name);
        for (const NodeOutput& out : n.outputs) names.insert(out.name);
    }
    return names;
}

/// The name of the weight that holds the folded value of `ref`: "<node>_folded", with
/// "_<output index>" for a node of several outputs, and "_<k>" (k = 2, 3, ...) after it
/// if that is taken. The name is added to `taken`.
[[nodiscard]] inline std::string folded_name(const Graph& g, TensorRef ref, std::set<std::string>& taken) {
    const Node& n = g.node(ref.node);
    std::string base = n.name + "_folded";
    if (n.outputs.size() > 1) base += "_" + std::to_string(ref.index);
    std::string name = base;
    for (std::size_t k = 2; taken.contains(name); ++k) name = base + "_" + std::to_string(k);
    taken.insert(name);
    return name;
}

/// Removes the nodes of `nodes` (topologically ordered) that nothing reads any more and
/// no graph output names, consumers before producers.
inline void remove_unread(Graph& g, std::span<const NodeId> nodes) {
    for (const NodeId id : std::views::reverse(nodes)) {
        const Node& n = g.node(id);
        bool read = false;
        for (std::uint32_t i = 0; i < n.outputs.size(); ++i)
            read = read || !n.outputs[i].uses.empty() || g.is_graph_output({id, i});
        if (!read) g.remove_node(id);
    }
}

}  // namespace rlflow::detail

namespace rlflow::exec {

/// Folds the weight-only work of `g` into new weights, so that `g` runs at run time only
/// what cost::CostModel prices. Every tensor computed (not a source) by a weight-only node
/// (rlflow::is_weight_only) that a graph output names or a node left in place reads is
/// replaced by a new Weight holding its value, named "<node>_folded" (see
/// detail::folded_name). The values come from running, in the reference executor, only
/// the weight-only nodes those tensors need; no graph input is read. Weight-only nodes the
/// executor cannot run (a tensor that is not float32) stay in place, as does what is
/// computed from them. The nodes folding leaves unread are removed; nodes that were dead
/// before are kept (Graph::remove_dead_nodes removes them). Deterministic: the result
/// depends on `g` alone. Returns how many tensors were folded.
inline std::size_t fold_weight_only(Graph& g) {
    const std::vector<char> foldable = detail::foldable_nodes(g);
    const std::vector<TensorRef> boundary = detail::fold_boundary(g, foldable);
    if (boundary.empty()) return 0;
    const std::vector<NodeId> needed = detail::fold_ancestors(g, boundary);
    RunResult run = Executor{}.run(detail::weight_only_subgraph(g, needed, boundary), std::span<const Tensor>{});
    RLFLOW_ASSERT(run.outputs.size() == boundary.size());
    std::set<std::string> taken = detail::used_names(g);
    for (std::size_t k = 0; k < boundary.size(); ++k) {
        const TensorRef ref = boundary[k];
        const std::string name = detail::folded_name(g, ref, taken);
        const TensorType type = g.type(ref);
        const NodeId weight = g.add_weight(name, type, std::make_shared<const Tensor>(std::move(run.outputs[k])));
        g.replace_all_uses(ref, {weight, 0});
    }
    detail::remove_unread(g, needed);
    return boundary.size();
}

}  // namespace rlflow::exec
