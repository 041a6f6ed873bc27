#pragma once
/// \file
/// What the matcher reads beside the graph: the nodes of each op kind (so a search starts
/// from the rarest pattern op rather than from every node) and a topological labelling
/// (so cycle checks stop early). Both are kept up to date edit by edit.

#include <rlflow/core/graph.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace rlflow::rewrite {

/// Nodes by op kind, and levels with level(consumer) > level(producer) on every edge.
///
/// Levels are spaced `level_gap` apart when built (longest-path depth times the gap), so
/// that nodes a rewrite inserts take levels between their producers' and their
/// consumers' without moving anything else: an update costs in proportion to the edit,
/// not to the graph downstream of it. Only when an edge's gap is used up are consumers
/// pushed up, as far as the labelling needs (order maintenance with gaps, as in
/// Dietz and Sleator's list labelling).
class GraphIndex {
public:
    /// The spacing of levels after rebuild(): 2^32 leaves 32 halvings at any one edge
    /// before a push-up, and depths up to 2^31 nodes.
    static constexpr std::uint64_t level_gap = std::uint64_t{1} << 32;

    GraphIndex() = default;
    explicit GraphIndex(const Graph& graph) { rebuild(graph); }

    /// Indexes `graph` from scratch; levels are longest-path depths times level_gap.
    void rebuild(const Graph& graph) {
        for (auto& list : m_by_kind) list.clear();
        m_kind.assign(graph.id_bound(), not_indexed);
        m_level.assign(graph.id_bound(), 0);
        m_pending.assign(graph.id_bound(), 0);
        for (const Node& n : graph.nodes()) {
            m_by_kind[static_cast<std::size_t>(n.op)].push_back(n.id);
            m_kind[n.id.value] = static_cast<std::uint8_t>(n.op);
        }
        for (const NodeId id : graph.topological_order()) m_level[id.value] = input_level(graph.node(id)) + level_gap;
    }

    /// Brings the index up to date after edits that touched exactly `touched` (created,
    /// removed or rewired nodes, as EditJournal::touched_nodes lists them).
    void update(const Graph& graph, std::span<const NodeId> touched) {
        // Never shrink: an undo drops the newest ids, which must still be unindexed.
        if (graph.id_bound() > m_kind.size()) {
            m_kind.resize(graph.id_bound(), not_indexed);
            m_level.resize(graph.id_bound(), 0);
            m_pending.resize(graph.id_bound(), 0);
        }
        std::vector<NodeId> live;
        for (const NodeId id : touched) {
            if (id.value < m_kind.size() && m_kind[id.value] != not_indexed) unindex(id);
            if (!graph.contains(id)) continue;
            const Node& n = graph.node(id);
            auto& list = m_by_kind[static_cast<std::size_t>(n.op)];
            list.insert(std::lower_bound(list.begin(), list.end(), id), id);
            m_kind[id.value] = static_cast<std::uint8_t>(n.op);
            live.push_back(id);
        }
        relevel(graph, live);
    }

    /// The live nodes of op `kind`, in id order.
    [[nodiscard]] std::span<const NodeId> nodes_of(OpKind kind) const noexcept {
        return m_by_kind[static_cast<std::size_t>(kind)];
    }
    /// The node's level: greater than each of its producers' levels.
    [[nodiscard]] std::uint64_t level(NodeId id) const noexcept { return m_level[id.value]; }

private:
    static constexpr std::uint8_t not_indexed = 0xff;

    void unindex(NodeId id) {
        auto& list = m_by_kind[m_kind[id.value]];
        const auto it = std::lower_bound(list.begin(), list.end(), id);
        if (it != list.end() && *it == id) list.erase(it);
        m_kind[id.value] = not_indexed;
    }
    /// The highest level among the node's producers (0 for a node without inputs).
    [[nodiscard]] std::uint64_t input_level(const Node& n) const {
        std::uint64_t level = 0;
        for (const TensorRef& in : n.inputs)
            if (in.present()) level = std::max(level, m_level[in.node.value]);
        return level;
    }
    /// Gives the touched live nodes levels between their producers' and their consumers',
    /// producers first. A node keeps its level where that still fits; a node without room
    /// takes its producers' level plus one and pushes its consumers up.
    void relevel(const Graph& graph, std::span<const NodeId> live) {
        for (const NodeId id : live) m_pending[id.value] = 1;
        std::vector<NodeId> order;  // the live touched nodes, producers before consumers
        order.reserve(live.size());
        std::vector<std::pair<NodeId, std::size_t>> stack;
        for (const NodeId root : live) {
            if (m_pending[root.value] != 1) continue;
            stack.emplace_back(root, 0);
            m_pending[root.value] = 2;
            while (!stack.empty()) {
                auto& [id, next] = stack.back();
                const Node& n = graph.node(id);
                if (next < n.inputs.size()) {
                    const TensorRef in = n.inputs[next++];
                    if (in.present() && m_pending[in.node.value] == 1) {
                        m_pending[in.node.value] = 2;
                        stack.emplace_back(in.node, 0);
                    }
                    continue;
                }
                order.push_back(id);
                stack.pop_back();
            }
        }
        std::vector<NodeId> pushed;
        for (const NodeId id : order) {
            m_pending[id.value] = 0;
            const Node& n = graph.node(id);
            const std::uint64_t low = input_level(n);
            // Consumers still pending are placed after this node, above it.
            std::uint64_t high = std::numeric_limits<std::uint64_t>::max();
            for (const auto& out : n.outputs)
                for (const Use& u : out.uses)
                    if (!m_pending[u.node.value]) high = std::min(high, m_level[u.node.value]);
            std::uint64_t& level = m_level[id.value];
            if (level > low && level < high) continue;
            if (high > low && high - low >= 2) {
                level = low + std::min(level_gap, (high - low) / 2);
                continue;
            }
            level = low + 1;
            pushed.push_back(id);
        }
        push_up(graph, std::move(pushed));
    }
    /// Restores level(consumer) > level(producer) downstream of `work`, moving consumers up
    /// by a whole gap so that the room is there again.
    void push_up(const Graph& graph, std::vector<NodeId> work) {
        while (!work.empty()) {
            const NodeId id = work.back();
            work.pop_back();
            for (const auto& out : graph.node(id).outputs)
                for (const Use& u : out.uses)
                    if (m_level[u.node.value] <= m_level[id.value]) {
                        m_level[u.node.value] = m_level[id.value] + level_gap;
                        work.push_back(u.node);
                    }
        }
    }

    std::array<std::vector<NodeId>, op_kind_count> m_by_kind;
    std::vector<std::uint8_t> m_kind;
    std::vector<std::uint64_t> m_level;
    /// relevel()'s marks: 1 waiting, 2 ordered, 0 done (or never touched).
    std::vector<std::uint8_t> m_pending;
};

}  // namespace rlflow::rewrite
