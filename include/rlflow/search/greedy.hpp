#pragma once
/// \file
/// Greedy search: apply the location that lowers the cost most, until none does (or the
/// budget, clock or stop flag ends it). Ties go to the first (rule, location) in index
/// order, so the result is a function of the graph, the rules and the cost model. Every
/// action's price is kept between steps and probed again only where a rewrite touched
/// what it read (SearchState), so a step costs in proportion to the rewrite.

#include <rlflow/cost/cost_tracker.hpp>
#include <rlflow/rewrite/rewriter.hpp>
#include <rlflow/search/search.hpp>
#include <rlflow/search/search_state.hpp>

#include <limits>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace rlflow::search {

/// A search sees every location, not just an agent's first L.
inline constexpr rewrite::IndexOptions every_location{std::numeric_limits<std::size_t>::max()};

namespace detail {

/// Costs within this relative margin count as equal, so float noise is not progress.
inline constexpr double relative_tolerance = 1e-9;

}  // namespace detail

/// Greedy search from `graph` with `rules`, priced by `model`.
template <cost::CostBackend Backend>
[[nodiscard]] SearchResult greedy(const Graph& graph, std::shared_ptr<const rewrite::RuleSet> rules,
                                  cost::CostModel<Backend>& model, const SearchOptions& options = {}) {
    const StopRules stop(options);
    SearchState<Backend> state(graph, rules, model);
    SearchResult result;
    result.initial_cost_ms = state.cost();
    std::vector<std::uint32_t> path;  // rule ids applied, in order
    for (;;) {
        if (const auto why = stop.check(result.expansions)) {
            result.reason = *why;
            break;
        }
        const double current = state.cost();
        const std::optional<PricedAction> choice = state.cheapest();
        if (!choice || !(current + choice->delta_ms < current * (1 - detail::relative_tolerance))) {
            result.reason = StopReason::converged;
            break;
        }
        (void)state.apply(choice->rule, choice->where);
        path.push_back(choice->rule);
        ++result.expansions;
        result.peak_search_bytes = std::max(result.peak_search_bytes, state.cache_bytes());
        if (const auto why = stop.check_memory(state.cache_bytes())) {
            result.reason = *why;
            break;
        }
        if (options.on_progress) options.on_progress({result.expansions, options.budget, result.initial_cost_ms, state.cost()});
    }
    result.best_found_at = result.expansions;  // each step greedy takes lowers the cost
    result.graph = state.graph();
    result.best_cost_ms = model.graph_cost(result.graph);
    result.rewrites = named_counts(*rules, path);
    result.sequence = named_sequence(*rules, path);
    result.seconds = stop.seconds();
    return result;
}

}  // namespace rlflow::search
