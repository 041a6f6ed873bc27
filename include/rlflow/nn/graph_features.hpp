#pragma once
/// \file
/// `graph_features`: an rlflow::Graph as a HostGraph, the input of a GraphBatch and so of
/// the graph network that encodes an RL observation. Deliberately modest (node features:
/// op type, log-scaled shapes, op cost; edge features: tensor dims):
///
/// - a node per graph node (source nodes included), in id order;
/// - an edge per use of a tensor, from its producer to its consumer, in producer id,
///   output, then use order (a node reading one tensor twice gets two edges);
/// - node features: a one-hot of the op kind (op_kind_count entries, Opaque last), then
///   log-scaled element count of the first output and log-scaled FLOPs of the op, then,
///   for an op with a `group` attribute (Conv, ConvTranspose, merged convolutions; 0 for
///   the others), its log-scaled group count, its log-scaled input channels per group and
///   their alignment: the largest power of two up to 16 that divides them, over 16. A
///   runtime's blocked layouts (ONNX Runtime's NCHWc) take a grouped convolution only when
///   each group is whole blocks, so whether a merge of groups pays depends on it, and the
///   edges' channel counts alone do not say it;
/// - edge features: the tensor's first four dims log-scaled (0 past its rank), its
///   log-scaled element count, and its rank / Shape::max_rank;
/// - global features: log-scaled node count, edge count and total FLOPs.
///
/// "Log-scaled" is ln(1 + x) / ln(1 + 2^24): counts up to 2^24 land in [0, 1], and larger
/// ones (FLOPs of a big convolution) only a little above 1. Symbolic (unknown) dims count
/// as 0. The op's measured cost, where an environment has it, is for the caller to append.

#include <rlflow/core/error.hpp>
#include <rlflow/core/graph.hpp>
#include <rlflow/core/op_kind.hpp>
#include <rlflow/core/op_traits.hpp>
#include <rlflow/nn/graph_net.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rlflow::nn {

/// How many leading tensor dims an edge describes one by one.
inline constexpr std::int64_t edge_feature_dims = 4;
/// The count that log scaling maps to 1.
inline constexpr double log_feature_reference = 16777216.0;  // 2^24

/// Widths of graph_features' output.
inline constexpr FeatureSizes graph_feature_sizes{
    .edge = edge_feature_dims + 2,
    .node = static_cast<std::int64_t>(op_kind_count) + 2 + 3,
    .global = 3,
};

/// ln(1 + x) / ln(1 + 2^24), with negative x (unknown) as 0.
[[nodiscard]] inline double log_feature(double x) {
    return std::log1p(std::max(x, 0.0)) / std::log1p(log_feature_reference);
}

namespace detail {

/// Counts below this have their log_feature in a table.
inline constexpr std::int64_t counted_below = std::int64_t{1} << 16;

/// log_feature of 0 .. counted_below - 1, computed once by log_feature itself.
[[nodiscard]] inline const std::vector<double>& count_features() {
    static const std::vector<double> table = [] {
        std::vector<double> t(static_cast<std::size_t>(counted_below));
        for (std::size_t i = 0; i < t.size(); ++i) t[i] = log_feature(static_cast<double>(i));
        return t;
    }();
    return table;
}

}  // namespace detail

/// log_feature of a count (a dimension, a number of elements), the same value read from
/// a table for counts below 2^16: an environment step computes some ten of them per edge.
[[nodiscard]] inline double log_count_feature(std::int64_t count) {
    if (count >= 0 && count < detail::counted_below) return detail::count_features()[static_cast<std::size_t>(count)];
    return log_feature(static_cast<double>(count));
}

namespace detail {

/// FLOPs of node `n` of `g`, from its op's traits; `inputs` and `outputs` are scratch
/// space, reused across calls.
[[nodiscard]] inline double node_flops(const Graph& g, const Node& n, std::vector<TensorType>& inputs,
                                       std::vector<TensorType>& outputs) {
    inputs.clear();
    g.append_types(n.inputs, inputs);
    outputs.clear();
    for (const NodeOutput& o : n.outputs) outputs.push_back(o.type);
    return n.traits().flops(OpContext{n.attributes, inputs, outputs, {}});
}

/// The largest power of two that channel alignment features tell apart.
inline constexpr std::int64_t channel_alignment_cap = 16;

/// The group features of node `n` of `g` (file comment): log-scaled group count, input
/// channels per group, and their alignment; zeros for an op without a `group` attribute.
[[nodiscard]] inline std::array<double, 3> group_features(const Graph& g, const Node& n) {
    if (!n.attributes.has("group") || n.inputs.empty()) return {0.0, 0.0, 0.0};
    const std::int64_t group = std::max<std::int64_t>(n.attributes.get_int("group", 1), 1);
    const Shape& in = g.type(n.inputs.front()).shape;
    const std::int64_t per_group = in.rank() >= 2 && in[1] > 0 ? in[1] / group : 0;
    std::int64_t alignment = 1;
    while (per_group > 0 && alignment < channel_alignment_cap && per_group % (alignment * 2) == 0) alignment *= 2;
    return {log_count_feature(group), log_count_feature(per_group),
            per_group > 0 ? static_cast<double>(alignment) / channel_alignment_cap : 0.0};
}

/// The edge features of a tensor of `shape` (graph_feature_sizes.edge values).
inline void append_edge_features(std::vector<double>& out, const Shape& shape) {
    for (int i = 0; i < edge_feature_dims; ++i) out.push_back(i < shape.rank() ? log_count_feature(shape[i]) : 0.0);
    out.push_back(log_count_feature(shape.numel()));
    out.push_back(static_cast<double>(shape.rank()) / Shape::max_rank);
}

}  // namespace detail

/// graph_features kept current edit by edit: what each node contributes (its op, the
/// log-scaled size of its first output, its FLOPs and the features of the edges it sends)
/// is computed once and kept until an edit touches the node (forget()), so a graph that
/// changes by a rewrite at a time is described in time proportional to its size with a
/// small constant, no FLOPs or logarithms of the unchanged nodes computed again. The
/// features are those of graph_features, bit for bit: it is this class, fresh.
class GraphFeatureCache {
public:
    /// Forgets nodes `touched` (an edit's touched nodes: added, removed, rewired, retyped)
    /// of `g` as it is after the edit, and the consumers of those still in it (a node's
    /// FLOPs read its inputs' types).
    void forget(const Graph& g, std::span<const NodeId> touched) {
        const auto drop = [&](NodeId id) {
            if (id.value < m_nodes.size()) m_nodes[id.value].known = false;
        };
        for (const NodeId id : touched) {
            drop(id);
            if (!g.contains(id)) continue;
            for (const NodeOutput& output : g.node(id).outputs)
                for (const Use& use : output.uses) drop(use.node);
        }
    }
    /// Forgets every node (another graph).
    void clear() noexcept { m_nodes.clear(); }

    /// The row of node `id` in the last features() (-1 for a node not in that graph).
    [[nodiscard]] std::int32_t row(NodeId id) const noexcept { return id.value < m_dense.size() ? m_dense[id.value] : -1; }

    /// The features and edges of `g` (see the file comment), with graph_feature_sizes, and
    /// `extra_node_columns` more node columns after graph_feature_sizes.node, left 0 for
    /// the caller to fill (an environment appends each op's measured cost).
    [[nodiscard]] HostGraph features(const Graph& g, std::int64_t extra_node_columns = 0) {
        RLFLOW_EXPECTS(extra_node_columns >= 0, precondition_error, "graph_features: extra node columns must be >= 0");
        HostGraph host;
        host.sizes = graph_feature_sizes;
        host.sizes.node += extra_node_columns;
        const auto width = static_cast<std::size_t>(host.sizes.node);
        host.num_nodes = static_cast<std::int64_t>(g.num_nodes());
        if (m_nodes.size() < g.id_bound()) m_nodes.resize(g.id_bound());
        // Node ids may have gaps after edits: number the live nodes densely, in id order.
        m_dense.assign(g.id_bound(), -1);
        std::int32_t next = 0;
        std::size_t num_edges = 0;
        for (const Node& n : g.nodes()) {
            m_dense[n.id.value] = next++;
            for (const NodeOutput& output : n.outputs) num_edges += output.uses.size();
        }
        host.nodes.assign(static_cast<std::size_t>(host.num_nodes) * width, 0.0);
        host.senders.reserve(num_edges);
        host.receivers.reserve(num_edges);
        host.edges.reserve(num_edges * static_cast<std::size_t>(graph_feature_sizes.edge));
        double total_flops = 0;
        for (const Node& n : g.nodes()) {
            const Known& k = known(g, n);
            const auto first = static_cast<std::size_t>(m_dense[n.id.value]) * width;
            host.nodes[first + static_cast<std::size_t>(n.op)] = 1.0;
            total_flops += k.flops;
            host.nodes[first + op_kind_count] = k.size_feature;
            host.nodes[first + op_kind_count + 1] = k.flops_feature;
            std::copy(k.group_features.begin(), k.group_features.end(), host.nodes.begin() + static_cast<std::ptrdiff_t>(first + op_kind_count + 2));
            const std::size_t edge_width = static_cast<std::size_t>(graph_feature_sizes.edge);
            for (std::size_t o = 0; o < n.outputs.size(); ++o)
                for (const Use& use : n.outputs[o].uses) {
                    host.senders.push_back(m_dense[n.id.value]);
                    host.receivers.push_back(m_dense[use.node.value]);
                    const auto from = k.edge_features.begin() + static_cast<std::ptrdiff_t>(o * edge_width);
                    host.edges.insert(host.edges.end(), from, from + static_cast<std::ptrdiff_t>(edge_width));
                }
        }
        host.globals = {log_feature(static_cast<double>(host.num_nodes)), log_feature(static_cast<double>(host.num_edges())),
                        log_feature(total_flops)};
        return host;
    }

private:
    /// What node `id` contributes, while it is unchanged.
    struct Known {
        bool known = false;
        double flops = 0;
        double size_feature = 0;
        double flops_feature = 0;
        std::array<double, 3> group_features{};
        /// graph_feature_sizes.edge values per output: the features of each edge it sends.
        std::vector<double> edge_features;
    };
    [[nodiscard]] const Known& known(const Graph& g, const Node& n) {
        Known& k = m_nodes[n.id.value];
        if (k.known) return k;
        k.flops = detail::node_flops(g, n, m_inputs, m_outputs);
        k.size_feature = n.outputs.empty() ? log_feature(0.0) : log_count_feature(n.outputs.front().type.shape.numel());
        k.flops_feature = log_feature(k.flops);
        k.group_features = detail::group_features(g, n);
        k.edge_features.clear();
        for (const NodeOutput& output : n.outputs) detail::append_edge_features(k.edge_features, output.type.shape);
        k.known = true;
        return k;
    }

    std::vector<Known> m_nodes;  // by node id
    std::vector<std::int32_t> m_dense;
    std::vector<TensorType> m_inputs, m_outputs;  // node_flops' scratch
};

/// The features and edges of `g` (see the file comment), with graph_feature_sizes, and
/// `extra_node_columns` more node columns after graph_feature_sizes.node, left 0 for the
/// caller to fill (an environment appends each op's measured cost).
[[nodiscard]] inline HostGraph graph_features(const Graph& g, std::int64_t extra_node_columns = 0) {
    return GraphFeatureCache{}.features(g, extra_node_columns);
}

}  // namespace rlflow::nn
