#pragma once
/// \file
/// A 128-bit hash of a graph's structure, kept current edit by edit, for searches that
/// drop graphs they have met before (TASO hashes each graph; rlflow's canonical form is
/// exact but costs a pass over the whole graph).
///
/// Construction (Weisfeiler and Lehman's refinement, cut at `depth` rounds): a node's
/// round-0 value encodes the node alone as the canonical form does (op, attributes,
/// output types; a source by its name, a Constant with data by its data); its round-k
/// value mixes its round-0 value with its producers' round-(k-1) values and output
/// indices, in input order. The graph's hash is the sum of the last round's values over
/// live nodes, plus the graph outputs in order. Like canonical_form it does not depend on
/// node ids or insertion order, so one graph reached by two orders of rewrites gets one
/// hash. Unlike it, it is not exact: two graphs whose nodes have the same neighbourhoods
/// `depth` edges upstream hash alike. A search that drops such a graph loses a branch,
/// never soundness.
///
/// An edit changes the last round's values only within `depth` edges downstream of the
/// nodes it touched, so an update costs in proportion to the edit.

#include <rlflow/core/canonical.hpp>
#include <rlflow/core/detail/byte_writer.hpp>
#include <rlflow/core/graph.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace rlflow {

/// Two independent 64-bit lanes.
struct Hash128 {
    std::uint64_t low = 0;
    std::uint64_t high = 0;
    friend constexpr bool operator==(const Hash128&, const Hash128&) = default;
};

/// Hashes Hash128 values for unordered containers (they are well mixed already).
struct Hash128Hasher {
    std::size_t operator()(const Hash128& h) const noexcept { return static_cast<std::size_t>(h.low ^ (h.high << 1)); }
};

namespace detail {

/// Two lanes of a word-at-a-time hash of `bytes`: hash_bytes's, and one with another seed.
[[nodiscard]] inline Hash128 hash_bytes128(std::string_view bytes) noexcept {
    std::uint64_t b = 0xc2b2ae3d27d4eb4fULL + bytes.size();
    std::size_t i = 0;
    for (; i + sizeof(std::uint64_t) <= bytes.size(); i += sizeof(std::uint64_t)) {
        std::uint64_t w = 0;
        std::memcpy(&w, bytes.data() + i, sizeof w);
        b = mix64(b + w + 0x165667b19e3779f9ULL);
    }
    std::uint64_t tail = 0;
    std::memcpy(&tail, bytes.data() + i, bytes.size() - i);
    return {hash_bytes(bytes), mix64(b + tail + 0xc4ceb9fe1a85ec53ULL)};
}

/// Folds `value` into `h`, lane by lane, order-dependently.
[[nodiscard]] constexpr Hash128 fold(Hash128 h, Hash128 value) noexcept {
    return {mix64(h.low * 31 + value.low), mix64(h.high * 37 + value.high + 0x2545f4914f6cdd1dULL)};
}

}  // namespace detail

/// The structure hash of one graph, updated from edit journals' touched nodes.
class StructureHash {
public:
    /// Rounds of refinement: each node's value sees this many edges upstream.
    static constexpr std::size_t default_depth = 3;

    explicit StructureHash(const Graph& graph, std::size_t depth = default_depth) : m_depth(depth) { rebuild(graph); }

    /// Hashes `graph` from scratch.
    void rebuild(const Graph& graph) {
        m_values.assign(graph.id_bound() * (m_depth + 1), Hash128{});
        m_counted.assign(graph.id_bound(), 0);
        m_sum = {};
        std::vector<NodeId> all;
        all.reserve(graph.num_nodes());
        for (const Node& n : graph.nodes()) all.push_back(n.id);
        refine(graph, all);
        for (const NodeId id : all) count(id);
        m_outputs = outputs_hash(graph);
    }

    /// Brings the hash up to date after edits that touched `touched` (rewrites and their
    /// undos: EditJournal::touched_nodes).
    void update(const Graph& graph, std::span<const NodeId> touched) {
        if (graph.id_bound() > m_counted.size()) {
            m_values.resize(graph.id_bound() * (m_depth + 1), Hash128{});
            m_counted.resize(graph.id_bound(), 0);
        }
        // The nodes whose last-round value may change: the touched ones and, for each
        // further round, the consumers of the last ring.
        m_mark.resize(graph.id_bound(), 0);
        std::vector<NodeId> region;
        for (const NodeId id : touched) {
            if (id.value < m_counted.size() && m_counted[id.value]) uncount(id);
            if (graph.contains(id) && !m_mark[id.value]) {
                m_mark[id.value] = 1;
                region.push_back(id);
            }
        }
        std::size_t ring = 0;
        for (std::size_t round = 0; round < m_depth; ++round) {
            const std::size_t end = region.size();
            for (; ring < end; ++ring)
                for (const auto& out : graph.node(region[ring]).outputs)
                    for (const Use& u : out.uses)
                        if (!m_mark[u.node.value]) {
                            m_mark[u.node.value] = 1;
                            region.push_back(u.node);
                        }
        }
        for (const NodeId id : region) {
            m_mark[id.value] = 0;
            if (m_counted[id.value]) uncount(id);
        }
        refine(graph, region);
        for (const NodeId id : region) count(id);
        m_outputs = outputs_hash(graph);
    }

    /// The graph's hash as it is now.
    [[nodiscard]] Hash128 value() const noexcept {
        return {m_sum.low + m_outputs.low, m_sum.high + m_outputs.high};
    }

private:
    [[nodiscard]] Hash128& at(NodeId id, std::size_t round) noexcept { return m_values[id.value * (m_depth + 1) + round]; }

    /// Computes every round's value of `nodes` (all of whose producers outside `nodes`
    /// have current values), round by round, so no order among them is needed.
    void refine(const Graph& graph, std::span<const NodeId> nodes) {
        for (const NodeId id : nodes) {
            detail::ByteWriter w;
            detail::encode_node_alone(w, graph.node(id));
            at(id, 0) = detail::hash_bytes128(w.take());
        }
        for (std::size_t round = 1; round <= m_depth; ++round)
            for (const NodeId id : nodes) {
                Hash128 h = at(id, 0);
                for (const TensorRef& in : graph.node(id).inputs) {
                    const Hash128 producer = in.present() ? at(in.node, round - 1) : Hash128{};
                    h = detail::fold(h, {producer.low + in.index, producer.high ^ in.index});
                }
                at(id, round) = h;
            }
    }
    [[nodiscard]] Hash128 outputs_hash(const Graph& graph) {
        Hash128 h{0x51af, 0xd7ed};
        for (const GraphOutput& out : graph.outputs()) {
            const Hash128 v = at(out.value.node, m_depth);
            h = detail::fold(h, {v.low + out.value.index, v.high ^ out.value.index});
        }
        return h;
    }
    void count(NodeId id) {
        const Hash128 v = at(id, m_depth);
        m_sum.low += v.low;
        m_sum.high += v.high;
        m_counted[id.value] = 1;
    }
    void uncount(NodeId id) {
        const Hash128 v = at(id, m_depth);
        m_sum.low -= v.low;
        m_sum.high -= v.high;
        m_counted[id.value] = 0;
    }

    std::size_t m_depth;
    std::vector<Hash128> m_values;  // id * (depth + 1) + round
    std::vector<char> m_counted;
    std::vector<char> m_mark;
    Hash128 m_sum;
    Hash128 m_outputs;
};

}  // namespace rlflow
