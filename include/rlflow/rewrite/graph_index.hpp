#pragma once
/// \file
/// What the matcher reads beside the graph: the nodes of each op kind (so a search starts
/// from the rarest pattern op rather than from every node) and a topological labelling
/// (so cycle checks stop early). Both are kept up to date edit by edit.

#include <rlflow/core/graph.hpp>

#include <algorithm>
#include <array>
#include <span>
#include <vector>

namespace rlflow::rewrite {

/// Nodes by op kind, and levels with level(consumer) > level(producer) on every edge.
class GraphIndex {
public:
    GraphIndex() = default;
    explicit GraphIndex(const Graph& graph) { rebuild(graph); }

    /// Indexes `graph` from scratch; levels are longest-path depths.
    void rebuild(const Graph& graph) {
        for (auto& list : m_by_kind) list.clear();
        m_kind.assign(graph.id_bound(), not_indexed);
        m_level.assign(graph.id_bound(), 0);
        for (const Node& n : graph.nodes()) {
            m_by_kind[static_cast<std::size_t>(n.op)].push_back(n.id);
            m_kind[n.id.value] = static_cast<std::uint8_t>(n.op);
        }
        for (const NodeId id : graph.topological_order()) m_level[id.value] = level_from_inputs(graph.node(id));
    }

    /// Brings the index up to date after edits that touched exactly `touched` (created,
    /// removed or rewired nodes, as EditJournal::touched_nodes lists them).
    void update(const Graph& graph, std::span<const NodeId> touched) {
        // Never shrink: an undo drops the newest ids, which must still be unindexed.
        if (graph.id_bound() > m_kind.size()) {
            m_kind.resize(graph.id_bound(), not_indexed);
            m_level.resize(graph.id_bound(), 0);
        }
        std::vector<NodeId> work;
        for (const NodeId id : touched) {
            if (id.value < m_kind.size() && m_kind[id.value] != not_indexed) unindex(id);
            if (!graph.contains(id)) continue;
            const Node& n = graph.node(id);
            auto& list = m_by_kind[static_cast<std::size_t>(n.op)];
            list.insert(std::lower_bound(list.begin(), list.end(), id), id);
            m_kind[id.value] = static_cast<std::uint8_t>(n.op);
            work.push_back(id);
        }
        relevel(graph, std::move(work));
    }

    /// The live nodes of op `kind`, in id order.
    [[nodiscard]] std::span<const NodeId> nodes_of(OpKind kind) const noexcept {
        return m_by_kind[static_cast<std::size_t>(kind)];
    }
    [[nodiscard]] std::uint32_t level(NodeId id) const noexcept { return m_level[id.value]; }

private:
    static constexpr std::uint8_t not_indexed = 0xff;

    void unindex(NodeId id) {
        auto& list = m_by_kind[m_kind[id.value]];
        const auto it = std::lower_bound(list.begin(), list.end(), id);
        if (it != list.end() && *it == id) list.erase(it);
        m_kind[id.value] = not_indexed;
    }
    [[nodiscard]] std::uint32_t level_from_inputs(const Node& n) const {
        std::uint32_t level = 0;
        for (const TensorRef& in : n.inputs)
            if (in.present()) level = std::max(level, m_level[in.node.value] + 1);
        return level;
    }
    /// Recomputes the touched nodes' levels from their inputs and pushes consumers up
    /// where the labelling would otherwise break. Levels may end above the longest-path
    /// depth; any labelling that increases along edges serves.
    void relevel(const Graph& graph, std::vector<NodeId> work) {
        while (!work.empty()) {
            const NodeId id = work.back();
            work.pop_back();
            const Node& n = graph.node(id);
            m_level[id.value] = level_from_inputs(n);
            for (const auto& out : n.outputs)
                for (const Use& u : out.uses)
                    if (m_level[u.node.value] <= m_level[id.value]) work.push_back(u.node);
        }
    }

    std::array<std::vector<NodeId>, op_kind_count> m_by_kind;
    std::vector<std::uint8_t> m_kind;
    std::vector<std::uint32_t> m_level;
};

}  // namespace rlflow::rewrite
