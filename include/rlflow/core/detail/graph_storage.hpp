#pragma once
/// \file
/// The storage under Graph and the private primitives that change it: append a node, link
/// or unlink a use, write an input slot, erase a node, add or retarget a graph output,
/// rename, retype, replace attributes or data. Each primitive notes itself in the journal
/// while recording, and undo() reverts a journal through the inverse primitives, so every
/// public edit of Graph (built from these) can be undone exactly.

#include <rlflow/core/edit_journal.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/core/node.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace rlflow::detail {

/// Graph's nodes, use lists, ordered input, weight and output lists, revision counters and
/// journal, with the journaled primitives. Graph derives from it privately and re-exports
/// the recording API and the node lookups; everything else here is for Graph alone.
class GraphStorage {
public:
    /// Starts logging every edit into a new journal. Throws precondition_error if the
    /// graph is already recording.
    void begin_recording() {
        RLFLOW_EXPECTS(!m_recording, precondition_error,
                       "Graph::begin_recording: already recording; call end_recording first");
        m_journal = EditJournal{};
        m_journal.m_begin_state = m_state_revision;
        m_recording = true;
    }
    /// Stops recording and hands out the journal. Throws precondition_error if the graph
    /// is not recording.
    [[nodiscard]] EditJournal end_recording() {
        RLFLOW_EXPECTS(m_recording, precondition_error,
                       "Graph::end_recording: not recording; call begin_recording first");
        m_recording = false;
        m_journal.m_end_state = m_state_revision;
        return std::exchange(m_journal, EditJournal{});
    }
    /// Whether edits are being logged.
    [[nodiscard]] bool recording() const noexcept { return m_recording; }
    /// Undoes `journal`, restoring the graph exactly as it was at begin_recording(): the
    /// same nodes with the same ids and id_bound(), names, attributes, data, types, use
    /// lists (same order), inputs/weights/outputs (same order). Costs O(journal size), no
    /// graph scan. Throws precondition_error while recording, or if the graph has been
    /// edited since the journal ended (journals are undone newest first, on the graph that
    /// recorded them or a copy taken after it ended). Consumes the journal.
    void undo(EditJournal&& journal);
    /// Counts mutations of this graph object: every primitive edit and every undo changes
    /// it, and it never takes the same value twice, so a cache keyed on it is never stale.
    /// Copies start from the value of the original.
    [[nodiscard]] std::uint64_t revision() const noexcept { return m_revision; }

    /// Whether `id` names a live node.
    [[nodiscard]] bool contains(NodeId id) const noexcept {
        return id.value < m_nodes.size() && m_nodes[id.value].has_value();
    }
    /// The live node `id`; throws graph_error if there is none.
    [[nodiscard]] const Node& node(NodeId id) const {
        RLFLOW_EXPECTS(contains(id), graph_error, "no node #" + std::to_string(id.value));
        return *m_nodes[id.value];
    }

protected:
    struct Reverter;

    Node& slot(NodeId id) {
        RLFLOW_EXPECTS(contains(id), graph_error, "no node #" + std::to_string(id.value));
        return *m_nodes[id.value];
    }
    NodeOutput& output_slot(TensorRef ref) {
        check_ref_exists(ref, "tensor");
        return m_nodes[ref.node.value]->outputs[ref.index];
    }
    void check_ref_exists(TensorRef ref, std::string_view what) const {
        RLFLOW_EXPECTS(ref.present() && contains(ref.node) && ref.index < m_nodes[ref.node.value]->outputs.size(),
                       graph_error,
                       std::string(what) + " refers to missing tensor #" + std::to_string(ref.node.value) + ":"
                           + std::to_string(ref.index));
    }

    // ---- mutation primitives: every change to the graph goes through one of these ------

    /// Notes one primitive edit: bumps the revision and, only while recording, logs the
    /// edit that `make_edit()` builds, so the non-recording path never builds one.
    template <class MakeEdit>
    void record(const MakeEdit& make_edit) {
        m_state_revision = ++m_revision;
        if (m_recording) [[unlikely]]
            m_journal.m_edits.emplace_back(make_edit());
    }
    /// Adds `n` (whose id is id_bound()), lists it as an input or weight by its op, and
    /// links its inputs.
    NodeId append(Node n) {
        const NodeId id = n.id;
        const OpKind op = n.op;
        RLFLOW_ASSERT(id.value == m_nodes.size());
        m_nodes.emplace_back(std::move(n));
        ++m_live;
        if (op == OpKind::Input) m_inputs.push_back(id);
        if (op == OpKind::Weight) m_weights.push_back(id);
        record([&] { return NodeAppended{{id}}; });
        const std::vector<TensorRef>& inputs = m_nodes.back()->inputs;
        for (std::uint32_t s = 0; s < inputs.size(); ++s)
            if (inputs[s].present()) link(inputs[s], {id, s});
        return id;
    }
    /// Undoes append(): `id` is the last node, and its uses are already unlinked.
    void pop_node(NodeId id) {
        RLFLOW_ASSERT(id.value + 1 == m_nodes.size() && m_nodes.back().has_value());
        const OpKind op = m_nodes.back()->op;
        RLFLOW_ASSERT(op != OpKind::Input || m_inputs.back() == id);
        RLFLOW_ASSERT(op != OpKind::Weight || m_weights.back() == id);
        if (op == OpKind::Input) m_inputs.pop_back();
        if (op == OpKind::Weight) m_weights.pop_back();
        m_nodes.pop_back();
        --m_live;
    }
    /// Removes node `id`, whose inputs are already unlinked. While recording, the Node
    /// moves into the journal.
    void erase_node(NodeId id) {
        std::optional<Node>& entry = m_nodes[id.value];
        const std::uint32_t input_position = erase_listed(m_inputs, id, entry->op == OpKind::Input);
        const std::uint32_t weight_position = erase_listed(m_weights, id, entry->op == OpKind::Weight);
        record([&] {
            m_journal.m_removed.push_back(std::move(*entry));
            return NodeRemoved{{id}, input_position, weight_position};
        });
        entry.reset();
        --m_live;
    }
    /// Erases `id` from `list` if it is `listed` there; returns its position, or
    /// NodeRemoved::absent.
    static std::uint32_t erase_listed(std::vector<NodeId>& list, NodeId id, bool listed) {
        if (!listed) return NodeRemoved::absent;
        const auto it = std::find(list.begin(), list.end(), id);
        RLFLOW_ASSERT(it != list.end());
        const auto position = static_cast<std::uint32_t>(it - list.begin());
        list.erase(it);
        return position;
    }
    /// Undoes erase_node(), putting `n` back in its slot and its input or weight position.
    void restore_node(const NodeRemoved& edit, Node n) {
        RLFLOW_ASSERT(!m_nodes[edit.id.value].has_value());
        m_nodes[edit.id.value] = std::move(n);
        ++m_live;
        if (edit.input_position != NodeRemoved::absent)
            m_inputs.insert(m_inputs.begin() + edit.input_position, edit.id);
        if (edit.weight_position != NodeRemoved::absent)
            m_weights.insert(m_weights.begin() + edit.weight_position, edit.id);
    }
    /// Inserts `use` into the producer's sorted use list (a set, so undoing an unlink
    /// puts it back where it was).
    void link(TensorRef producer, Use use) {
        auto& uses = output_slot(producer).uses;
        uses.insert(std::upper_bound(uses.begin(), uses.end(), use), use);
        record([&] { return UseLinked{{producer, use}}; });
    }
    void unlink(TensorRef producer, Use use) {
        auto& uses = output_slot(producer).uses;
        const auto it = std::find(uses.begin(), uses.end(), use);
        RLFLOW_ASSERT(it != uses.end());
        uses.erase(it);
        record([&] { return UseUnlinked{{producer, use}}; });
    }
    /// Sets an input slot's value only; callers keep the use lists consistent.
    void write_input(NodeId id, std::uint32_t slot_index, TensorRef value) {
        TensorRef& in = slot(id).inputs[slot_index];
        record([&] { return InputWritten{{id}, slot_index, in}; });
        in = value;
    }
    void append_graph_output(GraphOutput graph_output) {
        const NodeId producer = graph_output.value.node;
        m_outputs.push_back(std::move(graph_output));
        record([&] { return OutputAppended{{producer}}; });
    }
    void write_graph_output(std::uint32_t index, TensorRef value) {
        TensorRef& target = m_outputs[index].value;
        record([&] { return OutputRetargeted{index, target, value}; });
        target = value;
    }
    void write_name(NodeId id, std::string name) {
        Node& n = slot(id);
        record([&] { return NodeRenamed{{id}, std::move(n.name)}; });
        n.name = std::move(name);
    }
    void write_output_name(TensorRef ref, std::string name) {
        NodeOutput& out = output_slot(ref);
        record([&] { return OutputRenamed{{ref.node}, ref.index, std::move(out.name)}; });
        out.name = std::move(name);
    }
    void write_output_types(Node& n, std::span<const TensorType> types) {
        RLFLOW_ASSERT(types.size() == n.outputs.size());
        record([&] {
            TypesChanged edit{{n.id}, {}};
            edit.previous.reserve(n.outputs.size());
            for (const NodeOutput& out : n.outputs) edit.previous.push_back(out.type);
            return edit;
        });
        for (std::size_t i = 0; i < types.size(); ++i) n.outputs[i].type = types[i];
    }
    void replace_attributes(Node& n, Attributes attributes) {
        record([&] { return AttributesReplaced{{n.id}, std::move(n.attributes)}; });
        n.attributes = std::move(attributes);
    }
    void replace_data(Node& n, TensorPtr data) {
        record([&] { return DataReplaced{{n.id}, std::move(n.data)}; });
        n.data = std::move(data);
    }

    std::vector<std::optional<Node>> m_nodes;
    std::size_t m_live = 0;
    std::vector<NodeId> m_inputs;
    std::vector<NodeId> m_weights;
    std::vector<GraphOutput> m_outputs;
    /// Mutations so far (see revision()).
    std::uint64_t m_revision = 0;
    /// Names the graph's current state: the revision at which this state was first
    /// reached. An edit sets it to the new revision; undo sets it back to the journal's
    /// begin state, which the graph then equals exactly. So equal values mean equal
    /// states, and undo can check that the graph is still where its journal ended.
    std::uint64_t m_state_revision = 0;
    bool m_recording = false;
    /// The journal being recorded (empty unless m_recording).
    EditJournal m_journal;
};

/// Reverts one recorded edit through the primitive that is its inverse (a std::visit
/// visitor). NodeRemoved takes back the last node the journal removed: edits are undone
/// newest first, so removed nodes come back in reverse removal order.
struct GraphStorage::Reverter {
    GraphStorage& graph;
    std::vector<Node>& removed;

    void operator()(const NodeAppended& e) const { graph.pop_node(e.id); }
    void operator()(const UseLinked& e) const { graph.unlink(e.producer, e.use); }
    void operator()(const UseUnlinked& e) const { graph.link(e.producer, e.use); }
    void operator()(const InputWritten& e) const { graph.write_input(e.id, e.slot, e.previous); }
    void operator()(const NodeRemoved& e) const {
        RLFLOW_ASSERT(!removed.empty() && removed.back().id == e.id);
        graph.restore_node(e, std::move(removed.back()));
        removed.pop_back();
    }
    void operator()(const OutputAppended& e) const {
        RLFLOW_ASSERT(!graph.m_outputs.empty() && graph.m_outputs.back().value.node == e.id);
        graph.m_outputs.pop_back();
    }
    void operator()(const OutputRetargeted& e) const { graph.write_graph_output(e.index, e.previous); }
    void operator()(NodeRenamed& e) const { graph.write_name(e.id, std::move(e.previous)); }
    void operator()(OutputRenamed& e) const { graph.write_output_name({e.id, e.index}, std::move(e.previous)); }
    void operator()(const TypesChanged& e) const { graph.write_output_types(graph.slot(e.id), e.previous); }
    void operator()(AttributesReplaced& e) const { graph.replace_attributes(graph.slot(e.id), std::move(e.previous)); }
    void operator()(DataReplaced& e) const { graph.replace_data(graph.slot(e.id), std::move(e.previous)); }
};

inline void GraphStorage::undo(EditJournal&& journal) {
    RLFLOW_EXPECTS(!m_recording, precondition_error,
                   "Graph::undo: cannot undo while recording; call end_recording first");
    RLFLOW_EXPECTS(journal.m_end_state == m_state_revision, precondition_error,
                   "Graph::undo: the graph was edited after this journal ended; undo journals newest first");
    EditJournal taken = std::exchange(journal, EditJournal{});
    if (taken.empty()) return;
    const Reverter revert{*this, taken.m_removed};
    for (auto it = taken.m_edits.rbegin(); it != taken.m_edits.rend(); ++it) std::visit(revert, *it);
    RLFLOW_ASSERT(taken.m_removed.empty());
    // The reverting primitives counted themselves; pop_node alone does not, so count the undo too.
    ++m_revision;
    m_state_revision = taken.m_begin_state;
}

}  // namespace rlflow::detail
