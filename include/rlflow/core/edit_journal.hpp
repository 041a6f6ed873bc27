#pragma once
/// \file
/// EditJournal: the primitive edits made to a Graph while it was recording, with what
/// undoing them needs. Graph::begin_recording() starts one, Graph::end_recording() hands
/// it out, Graph::undo() reverts it.

#include <rlflow/core/detail/graph_edit.hpp>
#include <rlflow/core/node.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <variant>
#include <vector>

namespace rlflow {

namespace detail {
class GraphStorage;
}

/// The edits made to a graph between Graph::begin_recording() and Graph::end_recording():
/// enough to undo them exactly.
class EditJournal {
public:
    /// Whether no edit was recorded.
    [[nodiscard]] bool empty() const noexcept { return m_edits.empty(); }
    /// The number of primitive edits recorded (a public edit makes one or more).
    [[nodiscard]] std::size_t size() const noexcept { return m_edits.size(); }
    /// Every node id that the edits created, removed, rewired (inputs changed), renamed,
    /// retyped, re-attributed, or whose output use lists or graph-output status changed.
    /// Sorted, unique. Costs O(k log k) in the number of edits, independent of graph size.
    [[nodiscard]] std::vector<NodeId> touched_nodes() const;

private:
    // The graph's storage records and reverts the edits (core/detail/graph_storage.hpp).
    friend class detail::GraphStorage;

    std::vector<detail::GraphEdit> m_edits;
    /// The nodes that detail::NodeRemoved edits took out of the graph, in removal order.
    std::vector<Node> m_removed;
    /// The graph's state revision when recording began and when it ended: undo requires
    /// the graph to be in the end state and returns it to the begin state.
    std::uint64_t m_begin_state = 0;
    std::uint64_t m_end_state = 0;
};

inline std::vector<NodeId> EditJournal::touched_nodes() const {
    constexpr std::size_t ids_per_edit = 2;  // a use edit touches its producer and its consumer
    std::vector<NodeId> ids;
    ids.reserve(m_edits.size() * ids_per_edit);
    for (const detail::GraphEdit& edit : m_edits) std::visit([&](const auto& e) { e.add_touched(ids); }, edit);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
}

}  // namespace rlflow
