#pragma once
/// \file
/// Greedy search: apply the location that lowers the cost most, until none does (or the
/// budget, clock or stop flag ends it). Ties go to the first (rule, location) in index
/// order, so the result is a function of the graph, the rules and the cost model.

#include <rlflow/cost/cost_tracker.hpp>
#include <rlflow/rewrite/rewriter.hpp>
#include <rlflow/search/probe.hpp>
#include <rlflow/search/search.hpp>

#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace rlflow::search {

namespace detail {

/// A search sees every location, not just an agent's first L.
inline constexpr rewrite::IndexOptions every_location{std::numeric_limits<std::size_t>::max()};

/// Costs within this relative margin count as equal, so float noise is not progress.
inline constexpr double relative_tolerance = 1e-9;

}  // namespace detail

/// Greedy search from `graph` with `rules`, priced by `model`.
template <cost::CostBackend Backend>
[[nodiscard]] SearchResult greedy(const Graph& graph, std::shared_ptr<const rewrite::RuleSet> rules,
                                  cost::CostModel<Backend>& model, const SearchOptions& options = {}) {
    const detail::StopRules stop(options);
    rewrite::Rewriter rw(graph, rules, detail::every_location);
    cost::CostTracker<Backend> tracker(model, rw.graph());
    SearchResult result;
    result.initial_cost_ms = tracker.total();
    std::vector<std::uint32_t> path;  // rule ids applied, in order
    for (;;) {
        if (const auto why = stop.check(result.expansions)) {
            result.reason = *why;
            break;
        }
        const double current = tracker.total();
        double best = current * (1 - detail::relative_tolerance);
        std::optional<std::pair<std::size_t, std::size_t>> choice;
        for (std::size_t r = 0; r < rules->size(); ++r)
            for (std::size_t l = 0; l < rw.index().num_choices(r); ++l)
                if (const double c = probe_cost(rw, tracker, r, l); c < best) {
                    best = c;
                    choice = {r, l};
                }
        if (!choice) {
            result.reason = StopReason::converged;
            break;
        }
        EditJournal journal = rw.apply(choice->first, choice->second);
        tracker.update(rw.graph(), journal.touched_nodes());
        path.push_back(static_cast<std::uint32_t>(choice->first));
        ++result.expansions;
        if (options.on_progress) options.on_progress({result.expansions, options.budget, result.initial_cost_ms, tracker.total()});
    }
    result.graph = rw.graph();
    result.best_cost_ms = model.graph_cost(result.graph);
    result.rewrites = detail::named_counts(*rules, path);
    result.sequence = detail::named_sequence(*rules, path);
    result.seconds = stop.seconds();
    return result;
}

}  // namespace rlflow::search
