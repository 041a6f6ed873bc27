#pragma once
/// \file
/// Canonical forms of graphs: an exact byte string, and its 64-bit hash, that do not
/// depend on node ids or insertion order. Deduplication compares the exact form; the
/// hash only buckets.
///
/// Construction. Nodes are grouped by depth (longest path from a source). Level by level,
/// each node is encoded as (op, attributes, output types, inputs), where an input is the
/// canonical index of its producer and the output index; source nodes are encoded by
/// their name and type (a Constant with data by its data and type alone). Within a level, nodes are sorted by
/// encoding and numbered in that order. Inputs only refer to lower levels, so the
/// numbering depends on the structure alone. Nodes with identical encodings compute the
/// same value; references to any of them use the first one's number, so their order
/// does not matter either. Graph outputs (index, output, name) close the form.
///
/// Guarantee: isomorphic graphs (same structure, attributes, input and weight names,
/// constant values) have equal forms; equal forms imply the graphs compute the same function with the
/// same op multiset.

#include <rlflow/core/detail/byte_writer.hpp>
#include <rlflow/core/graph.hpp>

#include <algorithm>
#include <numeric>

namespace rlflow {

/// The canonical form of a graph.
struct CanonicalForm {
    std::string bytes;
    std::uint64_t hash = 0;
    friend bool operator==(const CanonicalForm& a, const CanonicalForm& b) {
        return a.hash == b.hash && a.bytes == b.bytes;
    }
};

namespace detail {

/// Float attributes are float32 in ONNX and in every kernel, so values that differ only
/// below float precision are the same attribute.
[[nodiscard]] inline double as_float32(double v) noexcept { return static_cast<double>(static_cast<float>(v)); }

inline void encode_attribute_value(ByteWriter& w, const AttributeValue& value) {
    w.u64(value.index());
    std::visit(
        [&](const auto& v) {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, std::int64_t>) w.i64(v);
            else if constexpr (std::is_same_v<V, double>) w.f64(as_float32(v));
            else if constexpr (std::is_same_v<V, std::string>) w.str(v);
            else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>) {
                w.u64(v.size());
                for (auto x : v) w.i64(x);
            } else if constexpr (std::is_same_v<V, std::vector<double>>) {
                w.u64(v.size());
                for (auto x : v) w.f64(as_float32(x));
            } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
                w.u64(v.size());
                for (const auto& x : v) w.str(x);
            } else if constexpr (std::is_same_v<V, TensorPtr>) {
                w.u64(v ? 1 : 0);
                if (v) {
                    w.u64(static_cast<std::uint64_t>(v->dtype()));
                    for (auto d : v->shape().dims()) w.i64(d);
                    w.bytes(v->raw());
                }
            } else {
                w.str(v.serialized);
            }
        },
        value);
}

inline void encode_type(ByteWriter& w, const TensorType& t) {
    w.u64(static_cast<std::uint64_t>(t.dtype));
    w.u64(static_cast<std::uint64_t>(t.shape.rank()));
    for (auto d : t.shape.dims()) w.i64(d);
}

/// Encodes node `n` alone, without where its inputs come from: op, attributes, output
/// types and input count; a source by its name, a Constant with data by its data.
inline void encode_node_alone(ByteWriter& w, const Node& n) {
    w.u64(static_cast<std::uint64_t>(n.op));
    w.str(n.op_type);
    w.str(n.domain);
    // A Constant with data is its value: rewrites name the constants they add after node
    // ids, so one graph reached by two rewrite orders would otherwise get two forms.
    const bool by_value = n.op == OpKind::Constant && n.data;
    const bool named = n.traits().has(op_flag_source) && !by_value;
    w.str(named ? std::string_view(n.name) : std::string_view());
    if (by_value) w.bytes(n.data->raw());
    w.u64(n.attributes.size());
    for (const auto& [name, value] : n.attributes) {
        w.str(name);
        encode_attribute_value(w, value);
    }
    w.u64(n.outputs.size());
    for (const auto& o : n.outputs) encode_type(w, o.type);
    w.u64(n.inputs.size());
}

/// Encodes one node; `index` maps node ids to canonical representative numbers.
inline std::string encode_node(const Node& n, const std::vector<std::uint32_t>& index) {
    ByteWriter w;
    encode_node_alone(w, n);
    for (const auto& in : n.inputs) {
        w.u64(in.present() ? index[in.node.value] : NodeId::invalid);
        w.u64(in.index);
    }
    return w.take();
}
/// Depth of every node: 0 for nodes without inputs, else 1 + max depth of producers.
inline std::vector<std::uint32_t> node_depths(const Graph& g, const std::vector<NodeId>& order) {
    std::vector<std::uint32_t> depth(g.id_bound(), 0);
    for (const NodeId id : order)
        for (const auto& in : g.node(id).inputs)
            if (in.present()) depth[id.value] = std::max(depth[id.value], depth[in.node.value] + 1);
    return depth;
}

}  // namespace detail

/// Computes the canonical form of `g` (see the file comment).
[[nodiscard]] inline CanonicalForm canonical_form(const Graph& g) {
    const std::vector<NodeId> order = g.topological_order();
    const std::vector<std::uint32_t> depth = detail::node_depths(g, order);
    std::vector<NodeId> by_level = order;
    std::stable_sort(by_level.begin(), by_level.end(),
                     [&](NodeId a, NodeId b) { return depth[a.value] < depth[b.value]; });

    std::vector<std::uint32_t> index(g.id_bound(), NodeId::invalid);
    detail::ByteWriter form;
    std::vector<std::pair<std::string, NodeId>> level;
    std::uint32_t next = 0;
    for (std::size_t begin = 0; begin < by_level.size();) {
        std::size_t end = begin;
        level.clear();
        while (end < by_level.size() && depth[by_level[end].value] == depth[by_level[begin].value]) {
            level.emplace_back(detail::encode_node(g.node(by_level[end]), index), by_level[end]);
            ++end;
        }
        std::sort(level.begin(), level.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        for (std::size_t i = 0; i < level.size(); ++i) {
            const bool duplicate = i > 0 && level[i].first == level[i - 1].first;
            index[level[i].second.value] = duplicate ? index[level[i - 1].second.value] : next;
            ++next;
            form.str(level[i].first);
        }
        begin = end;
    }
    form.u64(g.outputs().size());
    for (const auto& o : g.outputs()) {
        form.u64(index[o.value.node.value]);
        form.u64(o.value.index);
        form.str(o.name);
    }
    CanonicalForm result;
    result.bytes = form.take();
    result.hash = detail::hash_bytes(result.bytes);
    return result;
}

/// The 64-bit canonical hash of `g` (the hash of its canonical form).
[[nodiscard]] inline std::uint64_t canonical_hash(const Graph& g) { return canonical_form(g).hash; }

}  // namespace rlflow
