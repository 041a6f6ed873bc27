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
/// folded_memory_profile is the graph as deployed, with every weight-only op (see
/// is_weight_only) folded into a constant ahead of time (what the cost model prices): its
/// outputs are weights, the weights only it read are gone.

#include <rlflow/core/graph.hpp>

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <unistd.h>

namespace rlflow {

/// Memory needed to run a graph once.
struct MemoryProfile {
    std::int64_t peak_activation_bytes = 0;
    std::int64_t weight_bytes = 0;
};

/// Whether node `n` is weight-only: its value is known before the model runs, so it can be
/// folded into an initializer ahead of time and costs nothing per inference.
/// `producer_is_weight_only(id)` answers the same question for the producer of an input.
///
/// Weight-only nodes are exactly:
/// - a Constant;
/// - a Weight with data (exported as an ONNX initializer);
/// - a core, non-source op with at least one present input, all of whose present inputs
///   are weight-only.
///
/// The rule prices what is written and run, not what could be. A Weight without data is
/// exported as a graph input fed at run time (zoo models, weight-free exports): nothing can
/// fold what it computes, so that work runs on every inference and is priced. An opaque
/// op is never weight-only: rlflow cannot evaluate it to fold it, and does not know it is
/// deterministic. Nor is any other op without inputs (RandomNormal is opaque, and draws
/// anew on each run). exec::fold_weight_only folds what this rule marks before export.
///
/// weight_only_nodes and cost::CostTracker both decide through this one function, so the
/// full and the incremental price cannot drift apart.
template <std::predicate<NodeId> ProducerIsWeightOnly>
[[nodiscard]] bool is_weight_only(const Node& n, const ProducerIsWeightOnly& producer_is_weight_only) {
    if (n.op == OpKind::Constant) return true;
    if (n.op == OpKind::Weight) return n.data != nullptr;
    if (n.traits().has(op_flag_source) || n.traits().has(op_flag_opaque)) return false;
    bool any_input = false;
    for (const TensorRef& in : n.inputs) {
        if (!in.present()) continue;
        if (!producer_is_weight_only(in.node)) return false;
        any_input = true;
    }
    return any_input;
}

/// The weight-only nodes of `g` (see is_weight_only), sources included, indexed by node
/// id: a deployment computes them once, ahead of time.
[[nodiscard]] inline std::vector<char> weight_only_nodes(const Graph& g) {
    std::vector<char> constant(g.id_bound(), 0);
    const auto producer_is_weight_only = [&](NodeId producer) { return constant[producer.value] != 0; };
    for (const NodeId id : g.topological_order())
        constant[id.value] = is_weight_only(g.node(id), producer_is_weight_only) ? 1 : 0;
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
/// A Weight without data is still the model's parameter memory, so it counts as weight
/// bytes; what is computed from it is not weight-only, runs per inference and counts as
/// activations.
[[nodiscard]] inline MemoryProfile folded_memory_profile(const Graph& g) {
    std::vector<char> constant = weight_only_nodes(g);
    for (const NodeId id : g.weights()) constant[id.value] = 1;
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

/// This machine's physical memory in bytes (0 if the system does not say).
[[nodiscard]] inline std::int64_t physical_memory_bytes() noexcept {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page : 0;
}

/// The memory rlflow lets one run of graphs on test data take: half this machine's, so a
/// model whose tensors would not fit is refused by name instead of ending in an
/// out-of-memory kill.
[[nodiscard]] inline std::int64_t default_run_memory_limit() noexcept { return physical_memory_bytes() / 2; }

/// Bytes as people read them ("12.3 GiB").
[[nodiscard]] inline std::string gibibytes(std::int64_t bytes) {
    constexpr double gib = 1024.0 * 1024.0 * 1024.0;
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / gib);
    return text;
}

}  // namespace rlflow
