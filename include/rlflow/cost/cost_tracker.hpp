#pragma once
/// \file
/// A graph's cost kept current edit by edit: after a rewrite only the touched nodes are
/// re-priced, so a search or an RL step reads the new cost in microseconds instead of
/// summing the whole graph again.

#include <rlflow/cost/cost_model.hpp>

#include <algorithm>
#include <optional>
#include <span>
#include <vector>

namespace rlflow::cost {

/// The cost of one graph under a CostModel, updated from edit journals' touched nodes.
template <CostBackend Backend>
class CostTracker {
public:
    /// Prices every node of `graph`; `model` must outlive the tracker.
    CostTracker(CostModel<Backend>& model, const Graph& graph) : m_model(&model) { rebuild(graph); }

    /// Re-prices the whole graph.
    void rebuild(const Graph& graph) {
        m_updating = false;
        m_cost.assign(graph.id_bound(), 0.0);
        m_tracked.assign(graph.id_bound(), 0);
        m_constant = weight_only_nodes(graph);
        m_total = 0;
        m_model->prefetch(graph, m_constant);
        for (const NodeId id : graph.topological_order()) track(graph, graph.node(id));
    }

    /// Brings the total up to date after edits that touched `touched` (rewrites and their
    /// undos: EditJournal::touched_nodes). Removed nodes stop counting, new and rewired ones
    /// are priced, and a change of weight-only status flows to consumers.
    void update(const Graph& graph, std::span<const NodeId> touched) {
        m_change = 0;
        m_repriced.clear();
        m_was.clear();
        m_total_before = m_total;
        m_updating = true;
        if (graph.id_bound() > m_cost.size()) {
            m_cost.resize(graph.id_bound(), 0.0);
            m_tracked.resize(graph.id_bound(), 0);
            m_constant.resize(graph.id_bound(), 0);
        }
        std::vector<NodeId> work;
        for (const NodeId id : touched) {
            if (id.value < m_tracked.size() && m_tracked[id.value]) untrack(id);
            if (graph.contains(id)) work.push_back(id);
        }
        // Producers before consumers, so weight-only status is settled once.
        std::sort(work.begin(), work.end(), [&](NodeId a, NodeId b) { return a < b; });
        while (!work.empty()) {
            const NodeId id = work.front();
            work.erase(work.begin());
            const Node& n = graph.node(id);
            // A node priced before whose weight-only status holds cannot change its consumers'.
            const std::optional<char> was = m_tracked[id.value] ? std::optional(m_constant[id.value]) : std::nullopt;
            if (m_tracked[id.value]) untrack(id);
            remember(id);
            m_constant[id.value] = weight_only(n);
            track(graph, n);
            // A fusion head's consumers may be priced in its context (ContextCostBackend).
            if (was == m_constant[id.value] && !n.traits().has(op_flag_fusion_head)) continue;
            // Consumers are priced again: whether an input is known before the model runs is
            // part of their signature (and may change their own status).
            for (const auto& out : n.outputs)
                for (const Use& u : out.uses)
                    if (m_tracked[u.node.value] && std::find(work.begin(), work.end(), u.node) == work.end())
                        work.push_back(u.node);
        }
        m_updating = false;
    }

    /// Returns the tracker to what it was before the last update(), bit for bit, once the
    /// graph is back as it was then (the edits the update followed undone): what a probe
    /// of a rewrite's price does instead of pricing the restored nodes again. The total is
    /// restored, not recomputed, so a probe leaves it exactly as it found it.
    void revert_update() {
        for (auto it = m_was.rbegin(); it != m_was.rend(); ++it) {
            m_cost[it->id.value] = it->cost;
            m_tracked[it->id.value] = it->tracked;
            m_constant[it->id.value] = it->constant;
        }
        m_was.clear();
        m_total = m_total_before;
        m_change = 0;
        m_updating = false;
        m_repriced.clear();
    }

    /// How much the last update() changed total(): the new prices less the old, summed in
    /// the update's own order from zero, so that the same edit in two places of a graph
    /// (or at two times) gives the same bits whatever the total was.
    [[nodiscard]] double last_change() const noexcept { return m_change; }
    /// The live nodes the last update() priced, in the order it priced them.
    [[nodiscard]] std::span<const NodeId> last_repriced() const noexcept { return m_repriced; }
    /// Milliseconds of one inference of the graph as it is now.
    [[nodiscard]] double total() const noexcept { return m_total; }
    /// Milliseconds node `id` adds to total() (0 for weight-only and removed nodes).
    [[nodiscard]] double node_cost(NodeId id) const noexcept { return id.value < m_cost.size() ? m_cost[id.value] : 0.0; }

private:
    /// The rule of weight_only_nodes (rlflow::is_weight_only), read from the statuses
    /// settled so far, so the tracker prices exactly what graph_cost prices.
    [[nodiscard]] char weight_only(const Node& n) const {
        return is_weight_only(n, [this](NodeId producer) { return m_constant[producer.value] != 0; }) ? 1 : 0;
    }
    /// Notes node `id`'s state before update() changes it, for revert_update().
    void remember(NodeId id) {
        if (m_updating) m_was.push_back({id, m_cost[id.value], m_tracked[id.value], m_constant[id.value]});
    }
    void track(const Graph& graph, const Node& n) {
        remember(n.id);
        const double ms = m_constant[n.id.value] ? 0.0 : m_model->node_cost(graph, n, m_constant);
        m_cost[n.id.value] = ms;
        m_tracked[n.id.value] = 1;
        m_total += ms;
        if (m_updating) {
            m_change += ms;
            m_repriced.push_back(n.id);
        }
    }
    void untrack(NodeId id) {
        remember(id);
        if (m_updating) m_change -= m_cost[id.value];
        m_total -= m_cost[id.value];
        m_cost[id.value] = 0;
        m_tracked[id.value] = 0;
    }

    CostModel<Backend>* m_model;
    std::vector<double> m_cost;
    std::vector<char> m_tracked;
    std::vector<char> m_constant;
    double m_total = 0;
    double m_change = 0;
    std::vector<NodeId> m_repriced;
    bool m_updating = false;
    /// What the last update() changed, in order: each node's cost, tracked and weight-only
    /// flags before the change, and the total before it.
    struct Was {
        NodeId id;
        double cost = 0;
        char tracked = 0;
        char constant = 0;
    };
    std::vector<Was> m_was;
    double m_total_before = 0;
};

}  // namespace rlflow::cost
