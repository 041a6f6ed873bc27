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

#include <rlflow/core/graph.hpp>

#include <cstdint>

namespace rlflow {

/// Memory needed to run a graph once.
struct MemoryProfile {
    std::int64_t peak_activation_bytes = 0;
    std::int64_t weight_bytes = 0;
};

/// The memory profile of `g` under `order` (a topological order of `g`).
[[nodiscard]] inline MemoryProfile memory_profile(const Graph& g, const std::vector<NodeId>& order) {
    MemoryProfile profile;
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
        if (n.op == OpKind::Weight || n.op == OpKind::Constant) {
            profile.weight_bytes += n.outputs[0].type.bytes();
            continue;
        }
        if (!n.traits().has(op_flag_view))
            for (const auto& o : n.outputs) live += o.type.bytes();
        profile.peak_activation_bytes = std::max(profile.peak_activation_bytes, live);
        for (const auto& in : n.inputs) {
            if (!in.present()) continue;
            const Node& producer = g.node(in.node);
            if (producer.op == OpKind::Weight || producer.op == OpKind::Constant) continue;
            const TensorRef r = root[in.node.value][in.index];
            if (--pending[r.node.value][r.index] == 0) live -= g.type(r).bytes();
        }
        // An output nobody reads and no graph output names is freed as soon as it exists.
        for (std::uint32_t i = 0; i < n.outputs.size(); ++i)
            if (!n.traits().has(op_flag_view) && pending[id.value][i] == 0) live -= n.outputs[i].type.bytes();
    }
    return profile;
}

/// The memory profile of `g` under its default topological order.
[[nodiscard]] inline MemoryProfile memory_profile(const Graph& g) { return memory_profile(g, g.topological_order()); }

}  // namespace rlflow
