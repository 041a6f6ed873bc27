#pragma once
/// \file
/// The memory model: peak activation memory when a graph runs in a topological schedule,
/// and the bytes of its weights.
///
/// A tensor is allocated when its producer runs and freed after its last consumer ran
/// (right after its producer if it has none), unless it is a graph output. View ops
/// (Reshape, Flatten, Identity) allocate nothing: their output aliases the input buffer
/// and keeps it alive. Graph inputs count as
/// activations; weights and constants count as weight bytes.
///
/// memory_profile is the graph run as it stands (what the reference executor does);
/// folded_memory_profile is the graph as deployed, with every op computed from weights
/// and constants alone folded into a constant ahead of time (what the cost model prices):
/// its outputs are weights, the weights only it read are gone.

#include <rlflow/core/graph.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace rlflow {

/// Memory needed to run a graph once.
struct MemoryProfile {
    std::int64_t peak_activation_bytes = 0;
    std::int64_t weight_bytes = 0;
};

/// Nodes computed from weights and constants alone (weights and constants included),
/// indexed by node id: a deployment computes them once, ahead of time.
[[nodiscard]] inline std::vector<char> weight_only_nodes(const Graph& g) {
    std::vector<char> constant(g.id_bound(), 0);
    for (const NodeId id : g.topological_order()) {
        const Node& n = g.node(id);
        if (n.op == OpKind::Input) continue;
        bool all = true;
        for (const TensorRef& in : n.inputs) all = all && (!in.present() || constant[in.node.value]);
        constant[id.value] = all ? 1 : 0;
    }
    return constant;
}

namespace detail {

/// Peak activation bytes under `order`, where nodes marked in `constant` hold no
/// activations (their outputs are weights).
[[nodiscard]] inline std::int64_t peak_activations(const Graph& g, const std::vector<NodeId>& order,
                                                   const std::vector<char>& constant) {
    std::int64_t peak = 0;
    // root[id][i]: the tensor whose buffer output i of node id lives in.
    std::vector<std::vector<TensorRef>> root(g.id_bound());
    std::vector<std::vector<std::int64_t>> pending(g.id_bound());
    for (const NodeId id : order) {
        const Node& n = g.node(id);
        root[id.value].resize(n.outputs.size());
        pending[id.value].assign(n.outputs.size(), 0);
        const bool view = n.traits().has(op_flag_view);
        for (std::uint32_t i = 0; i < n.outputs.size(); ++i) {
            const TensorRef self{id, i};
            const TensorRef r = view ? root[n.inputs[0].node.value][n.inputs[0].index] : self;
            root[id.value][i] = r;
            pending[r.node.value][r.index] += static_cast<std::int64_t>(n.outputs[i].uses.size())
                                              + (g.is_graph_output(self) ? 1 : 0);
        }
    }
    std::int64_t live = 0;
    for (const NodeId id : order) {
        const Node& n = g.node(id);
        if (constant[id.value]) continue;
        if (!n.traits().has(op_flag_view))
            for (const auto& o : n.outputs) live += o.type.bytes();
        peak = std::max(peak, live);
        for (const auto& in : n.inputs) {
            if (!in.present()) continue;
            const Node& producer = g.node(in.node);
            if (constant[producer.id.value]) continue;
            const TensorRef r = root[in.node.value][in.index];
            if (--pending[r.node.value][r.index] == 0) live -= g.type(r).bytes();
        }
        // An output nobody reads and no graph output names is freed as soon as it exists.
        for (std::uint32_t i = 0; i < n.outputs.size(); ++i)
            if (!n.traits().has(op_flag_view) && pending[id.value][i] == 0) live -= n.outputs[i].type.bytes();
    }
    return peak;
}

}  // namespace detail

/// The memory profile of `g` under `order` (a topological order of `g`), run as it stands.
[[nodiscard]] inline MemoryProfile memory_profile(const Graph& g, const std::vector<NodeId>& order) {
    std::vector<char> constant(g.id_bound(), 0);
    MemoryProfile profile;
    for (const NodeId id : order)
        if (const Node& n = g.node(id); n.op == OpKind::Weight || n.op == OpKind::Constant) {
            constant[id.value] = 1;
            profile.weight_bytes += n.outputs[0].type.bytes();
        }
    profile.peak_activation_bytes = detail::peak_activations(g, order, constant);
    return profile;
}

/// The memory profile of `g` as deployed, with weight-only ops folded (see above): weight
/// bytes are the folded tensors that an op computing on data, or a graph output, reads.
[[nodiscard]] inline MemoryProfile folded_memory_profile(const Graph& g) {
    const std::vector<char> constant = weight_only_nodes(g);
    MemoryProfile profile;
    for (const Node& n : g.nodes()) {
        if (!constant[n.id.value]) continue;
        for (std::uint32_t i = 0; i < n.outputs.size(); ++i) {
            const auto& uses = n.outputs[i].uses;
            const bool read = std::any_of(uses.begin(), uses.end(), [&](const Use& u) { return !constant[u.node.value]; });
            if (read || g.is_graph_output({n.id, i})) profile.weight_bytes += n.outputs[i].type.bytes();
        }
    }
    profile.peak_activation_bytes = detail::peak_activations(g, g.topological_order(), constant);
    return profile;
}



/// The memory profile of `g` under its default topological order.
[[nodiscard]] inline MemoryProfile memory_profile(const Graph& g) { return memory_profile(g, g.topological_order()); }

}  // namespace rlflow
