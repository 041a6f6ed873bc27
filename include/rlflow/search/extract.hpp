#pragma once
/// \file
/// Extraction's prices and its greedy form.
///
/// Prices: every op e-node is priced alone by the cost model, with its children's types,
/// and with its known children (constant classes) as initializers, the way the written
/// model will hold them. An e-node computed from known values alone costs 0, as
/// CostModel::graph_cost prices weight-only nodes; so do sources, `output` e-nodes and
/// Opaque nodes (always in the graph, at a price no extraction changes). All op e-nodes
/// are written into one pricing graph first, so a measuring backend prices them in one
/// batch.
///
/// Greedy extraction chooses, per class, the e-node of least tree cost (its price plus
/// its children classes' tree costs, shared subgraphs counted once per use). It settles
/// classes cheapest first (Knuth's generalisation of Dijkstra's algorithm to such sums):
/// an e-node competes only once all its children are settled, so the choices never form
/// a cycle, and an e-node that consumes its own class is never chosen.

#include <rlflow/cost/cost_model.hpp>
#include <rlflow/search/egraph.hpp>
#include <rlflow/search/ematch.hpp>

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <vector>

namespace rlflow::search {

namespace detail {

/// Whether op e-node `e` computes from known values alone (and so costs nothing per run).
[[nodiscard]] inline bool known_before_run(const EGraph& eg, const ENode& e) {
    if (e.kind != ENode::Kind::op || e.payload.op == OpKind::Constant) return true;
    bool any = false;
    for (const ClassId c : e.children) {
        if (c == no_class) continue;
        if (!eg.data(c).constant) return false;
        any = true;
    }
    return any;
}

/// A stand-in for class `c` in the pricing graph: an input, or a known value (with its
/// data when a Constant of the class has some, as the cost signature reads small ones).
[[nodiscard]] inline TensorRef pricing_input(Graph& pricing, std::vector<char>& known, const EGraph& eg, ClassId c) {
    if (c == no_class) return {};
    const EClassData& d = eg.data(c);
    NodeId id;
    if (!d.constant) {
        id = pricing.add_input({}, d.types.at(0));
    } else {
        const ENode* constant = nullptr;
        for (const ENodeId m : eg.members(eg.find(c)))
            if (eg.node(m).kind == ENode::Kind::op && eg.node(m).payload.op == OpKind::Constant) constant = &eg.node(m);
        id = constant ? pricing.add_constant({}, *constant->payload.data) : pricing.add_weight({}, d.types.at(0));
    }
    known.resize(pricing.id_bound(), 0);
    known[id.value] = d.constant ? 1 : 0;
    return {id, 0};
}

}  // namespace detail

/// The price in ms of every e-node (indexed by e-node id; dropped ones cost 0). With
/// `from`, only the e-nodes from that id on are priced, the others cost 0 (an e-graph's
/// growth, priced as it grows).
template <cost::CostBackend Backend>
[[nodiscard]] std::vector<double> enode_costs(const EGraph& eg, cost::CostModel<Backend>& model, ENodeId from = 0) {
    std::vector<double> cost(eg.node_bound(), 0.0);
    Graph pricing;
    std::vector<char> known;
    std::vector<std::pair<ENodeId, NodeId>> priced;
    for (ENodeId id = from; id < eg.node_bound(); ++id) {
        const ENode& e = eg.node(id);
        if (!eg.alive(id) || detail::known_before_run(eg, e)) continue;
        std::vector<TensorRef> inputs;
        for (const ClassId c : e.children) inputs.push_back(detail::pricing_input(pricing, known, eg, c));
        priced.emplace_back(id, pricing.add_node(e.payload.op, std::move(inputs), e.payload.attributes));
    }
    known.resize(pricing.id_bound(), 0);
    model.prefetch(pricing, known);
    for (const auto& [id, node] : priced) cost[id] = model.node_cost(pricing, pricing.node(node), known);
    return cost;
}

/// An unchosen class's entry in a choice.
inline constexpr ENodeId no_choice = std::numeric_limits<ENodeId>::max();

/// The greedy choice (see the file comment): class id -> e-node, no_choice for classes
/// no acyclic choice reaches.
[[nodiscard]] inline std::vector<ENodeId> greedy_choice(const EGraph& eg, const std::vector<double>& cost) {
    std::vector<ENodeId> choice(eg.class_bound(), no_choice);
    std::vector<double> best(eg.class_bound(), 0.0);
    std::vector<std::uint32_t> waiting(eg.node_bound(), 0);
    using Entry = std::pair<double, ENodeId>;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
    for (ENodeId e = 0; e < eg.node_bound(); ++e) {
        if (!eg.alive(e)) continue;
        waiting[e] = static_cast<std::uint32_t>(detail::child_classes(eg, e).size());
        if (waiting[e] == 0) ready.emplace(cost[e], e);
    }
    while (!ready.empty()) {
        const auto [total, e] = ready.top();
        ready.pop();
        const ClassId c = eg.class_of(e);
        if (choice[c] != no_choice) continue;
        choice[c] = e;
        best[c] = total;
        for (const ENodeId p : eg.parents(c)) {
            if (!eg.alive(p) || --waiting[p] != 0) continue;
            // An e-node that consumes its own class gets here only once that class is
            // settled, so it is skipped when it comes off the queue.
            double sum = cost[p];
            for (const ClassId k : detail::child_classes(eg, p)) sum += best[k];
            ready.emplace(sum, p);
        }
    }
    return choice;
}

}  // namespace rlflow::search
