#pragma once
/// \file
/// The `mf` and `mb` searches: a trained policy rolled out on a graph, once with its most probable
/// actions and `samples` more times with sampled ones; the cheapest graph met on any
/// rollout (not only where it ended) is the result, verified and written by the caller
/// like any other search's. By default rollouts go on past the policy's NO-OP to the step
/// limit (AgentSearchOptions::until_limit). With a plan (AgentSearchOptions::plan), the
/// agent then guides a tree search (plan.hpp) with the rest of the budget, whose cheapest
/// graph competes with the rollouts'; or the rollouts' cheapest graph seeds equality
/// saturation (PlanKind::eqsat), or the agent grows an e-graph from it (PlanKind::grow,
/// grow.hpp). Runners-up are the other rollouts' cheapest distinct graphs.
///
/// An agent that learned from measured latency (rlflow train --reward ort-latency) knows
/// what the cost model does not: with `endpoints`, a rollout's result is where its policy
/// chose NO-OP, as X-RLflow writes the graph its agent ends at, and the cheapest graphs by
/// the cost model follow as runners-up, for a guard that times them all to decide.

#include <rlflow/core/canonical.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/rl/env/env.hpp>
#include <rlflow/rl/model_free/policy.hpp>
#include <rlflow/rl/grow.hpp>
#include <rlflow/rl/plan.hpp>
#include <rlflow/search/eqsat.hpp>
#include <rlflow/search/search.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace rlflow::rl {

/// How the policy is rolled out.
struct AgentSearchOptions {
    /// Sampled rollouts after the greedy one.
    std::size_t samples = 0;
    /// Seed of the sampled rollouts.
    std::uint64_t seed = 0;
    /// Roll on past the policy's NO-OP while a rewrite applies, to the step limit: the
    /// policy still picks every rewrite, NO-OP is masked out of its choice, and since the
    /// cheapest graph met is the result, going on can only find more. A rollout then ends
    /// when the environment's step limit has passed since its cheapest graph, or at the
    /// budget: a graph may need more rewrites than an agent's training episodes took
    /// (Inception-v3 takes 207 under greedy search), and the policy does not see the step
    /// count.
    /// False: a rollout ends where the policy chooses NO-OP or at the environment's step
    /// limit, as in training.
    bool until_limit = true;
    /// Each rollout's result is where it ended, not its cheapest graph (see the file
    /// comment); for rollouts that end at the policy's NO-OP (until_limit false). The
    /// result is then `chosen_by_policy`: the guard times it whatever the cost model says.
    bool endpoints = false;
    /// The environment the policy was trained with (its L must match the policy's).
    EnvOptions env;
    /// The tree search after the rollouts (PlanKind::none: none).
    PlanOptions plan;
    /// Budget (real environment steps over all rollouts, and the tree's evaluations), time
    /// limit, stop flag, progress and keep_best, as every search reads them.
    search::SearchOptions search;
};

/// The relative fall in cost that counts as a cheaper graph for a rollout.
inline constexpr double significant_gain = 1e-9;

/// Takes NO-OP out of `o`'s xfer mask when another xfer has a location.
inline void mask_no_op(Observation& o) {
    if (std::any_of(o.xfer_mask.begin(), o.xfer_mask.end() - 1, [](std::uint8_t valid) { return valid != 0; }))
        o.xfer_mask.back() = 0;
}

/// Rolls out `policy`: an ActorCritic, or any agent that acts as one does (act() on a batch
/// of one observation; MbPolicy), begin_episode() called before each rollout where
/// the agent has one (a recurrent agent clears its state).
template <class Policy, cost::CostBackend C>
[[nodiscard]] search::SearchResult agent_search(const Graph& graph, std::shared_ptr<const rewrite::RuleSet> rules,
                                                cost::CostModel<C>& model, Policy& policy, const AgentSearchOptions& options) {
    RLFLOW_EXPECTS(rules->size() == policy.num_xfers() && options.env.max_locations == policy.max_locations(),
                   precondition_error, "agent_search: the policy was made for another action space");
    const search::StopRules stop(options.search);
    EnvOptions env_options = options.env;
    if (options.until_limit) env_options.step_limit = std::max(env_options.step_limit, options.search.budget);
    GraphEnv<C> env(rules, model, env_options);
    struct Best {
        Graph graph;
        double cost_ms;
        std::vector<std::uint32_t> path;
        /// Rewrites equality saturation added after the path (they have no order).
        std::map<std::string, std::size_t> saturated;
    };
    RLFLOW_EXPECTS(!options.endpoints || !options.until_limit, precondition_error,
                   "agent_search: endpoints are where the policy chose NO-OP; they need until_limit off");
    std::vector<Best> bests;  // one per rollout, and the plan's; cheapest first
    std::vector<Best> ends;   // with endpoints: where each rollout ended, in rollout order
    const auto keep = [&bests](Best b) {
        bests.push_back(std::move(b));
        std::stable_sort(bests.begin(), bests.end(), [](const Best& x, const Best& y) { return x.cost_ms < y.cost_ms; });
    };
    search::SearchResult result;
    Rng rng(options.seed);
    bool stopped = false;
    for (std::size_t rollout = 0; rollout <= options.samples && !stopped; ++rollout) {
        Observation o = env.reset(graph);
        if constexpr (requires { policy.begin_episode(); }) policy.begin_episode();
        result.initial_cost_ms = env.initial_cost_ms();
        Best best{env.graph(), env.cost_ms(), {}, {}};
        std::vector<std::uint32_t> path;
        std::size_t since_best = 0;  // steps since the rollout's cheapest graph
        for (;;) {
            if (const auto why = stop.check(result.expansions)) {
                result.reason = *why;
                stopped = true;
                break;
            }
            if (options.until_limit) mask_no_op(o);
            const Observation* one[] = {&o};
            const Action a = policy.act(one, rng, rollout == 0).actions[0];
            StepResult s = env.step(a);
            ++result.expansions;
            if (a.xfer < policy.num_xfers()) path.push_back(a.xfer);
            ++since_best;
            // A real gain, not the rounding of a running total that a rewrite and its
            // inverse leave behind.
            if (s.info.cost_ms < best.cost_ms * (1 - significant_gain)) {
                best = {env.graph(), s.info.cost_ms, path, {}};
                since_best = 0;
            }
            if (options.search.on_progress)
                options.search.on_progress({result.expansions, options.search.budget, result.initial_cost_ms,
                                            std::min(best.cost_ms, bests.empty() ? best.cost_ms : bests.front().cost_ms)});
            if (s.terminated || s.truncated || since_best >= options.env.step_limit) break;
            o = std::move(s.observation);
        }
        if (options.endpoints && !stopped) ends.push_back({env.graph(), env.cost_ms(), path, {}});
        keep(std::move(best));
    }
    if (!stopped && options.plan.kind == PlanKind::mcts) {
        const double best_rollout = bests.front().cost_ms;
        const auto progress = [&](double cost_ms) {
            if (options.search.on_progress)
                options.search.on_progress({result.expansions, options.search.budget, result.initial_cost_ms, std::min(cost_ms, best_rollout)});
        };
        // The plan expects the longest path to a rollout's cheapest graph.
        std::size_t expected_steps = 1;
        for (const Best& b : bests) expected_steps = std::max(expected_steps, b.path.size());
        PlanResult planned = plan(env, graph, policy, options.plan, stop, result.expansions, progress, expected_steps);
        if (planned.stopped) {
            result.reason = *planned.stopped;
            stopped = true;
        }
        keep({std::move(planned.graph), planned.cost_ms, std::move(planned.path), {}});
    }
    // Saturation follows rollouts that spent the budget (it is not counted in it), not
    // ones the clock or the caller stopped.
    if (options.plan.kind == PlanKind::eqsat && (!stopped || result.reason == search::StopReason::budget)) {
        search::SearchOptions saturation = options.search;
        if (saturation.time_limit_seconds > 0) saturation.time_limit_seconds = std::max(saturation.time_limit_seconds - stop.seconds(), 1e-3);
        saturation.on_progress = nullptr;
        search::EqsatResult e = search::eqsat(bests.front().graph, rules, model, saturation);
        // Priced as the rollouts' graphs are, the whole graph summed: the extraction's own
        // figure counts a subgraph its choices share once, and can be the lower.
        const double saturated_ms = model.graph_cost(e.search.graph);
        if (saturated_ms < bests.front().cost_ms * (1 - significant_gain))
            keep({std::move(e.search.graph), saturated_ms, bests.front().path, std::move(e.search.rewrites)});
        if (e.search.reason == search::StopReason::interrupted) {
            result.reason = e.search.reason;
            stopped = true;
        }
    }
    // Growing the e-graph follows the rollouts as saturation does.
    if (options.plan.kind == PlanKind::grow && (!stopped || result.reason == search::StopReason::budget)) {
        search::SearchOptions growing = options.search;
        if (growing.time_limit_seconds > 0) growing.time_limit_seconds = std::max(growing.time_limit_seconds - stop.seconds(), 1e-3);
        growing.budget = std::numeric_limits<std::size_t>::max();
        const search::StopRules grow_stop(growing);
        GrowResult g = grow_egraph(env, bests.front().graph, policy, model, options.plan, grow_stop);
        if (g.cost_ms < bests.front().cost_ms * (1 - significant_gain))
            keep({std::move(g.graph), g.cost_ms, bests.front().path, std::move(g.rewrites)});
        if (g.stopped == search::StopReason::interrupted) {
            result.reason = *g.stopped;
            stopped = true;
        }
    }
    if (!stopped) result.reason = search::StopReason::converged;
    // With endpoints, the greedy rollout's end leads, then the other ends, then the
    // cheapest graphs; a rollout stopped before its end offers only its cheapest.
    result.chosen_by_policy = !ends.empty();
    if (result.chosen_by_policy) {
        for (Best& b : bests) ends.push_back(std::move(b));
        bests = std::move(ends);
    }
    const Best& top = bests.front();
    result.graph = top.graph;
    result.best_cost_ms = model.graph_cost(result.graph);
    result.rewrites = search::named_counts(*rules, top.path);
    result.sequence = search::named_sequence(*rules, top.path);
    for (const auto& [name, count] : top.saturated) {
        result.rewrites[name] += count;
        result.sequence.insert(result.sequence.end(), count, name);  // in name order
    }
    std::unordered_set<std::uint64_t> seen{canonical_hash(top.graph)};
    for (std::size_t i = 1; i < bests.size() && result.runners_up.size() + 1 < options.search.keep_best; ++i) {
        if (bests[i].path.empty() || !seen.insert(canonical_hash(bests[i].graph)).second) continue;
        result.runners_up.push_back({bests[i].graph, model.graph_cost(bests[i].graph),
                                     search::named_counts(*rules, bests[i].path),
                                     search::named_sequence(*rules, bests[i].path)});
    }
    result.seconds = stop.seconds();
    return result;
}

}  // namespace rlflow::rl
