#pragma once
/// \file
/// The cost of a graph one rewrite away, found without copying the graph: the rewrite is
/// applied in place, the cost tracker re-prices the nodes it touched, and both are put
/// back. Greedy and backtracking search price their successors so, and the RL
/// environment its observation's one-step gains.

#include <rlflow/cost/cost_tracker.hpp>
#include <rlflow/rewrite/rewriter.hpp>

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace rlflow::search {

/// The cost after action (rule, location), leaving graph and tracker as they were.
template <cost::CostBackend Backend>
[[nodiscard]] double probe_cost(rewrite::Rewriter& rw, cost::CostTracker<Backend>& tracker, std::size_t rule,
                                std::size_t location) {
    auto [after, touched] = rw.probe(rule, location, [&](const Graph& g, std::span<const NodeId> t) {
        tracker.update(g, t);
        return std::pair(tracker.total(), std::vector<NodeId>(t.begin(), t.end()));
    });
    tracker.update(rw.graph(), touched);
    return after;
}

}  // namespace rlflow::search
