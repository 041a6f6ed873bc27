#pragma once
/// \file
/// The agent grows the e-graph (PlanKind::grow), as in Hartmann, He and Yoneki (2024,
/// equality saturation guided by Monte Carlo tree search), with the trained policy in
/// the place of their random rollouts: equality saturation applies every rule at every
/// match, and an e-graph grown that way is often too large for its extraction (NasRNN's
/// ILP, at Tensat's settings, ends at its time limit with a gap of 78%); here each growth
/// step adds the matches of one rule, the one the agent chooses, and ILP extraction
/// finishes.
///
/// A step: the graph that extraction takes from the e-graph (greedy's choice improved by
/// a short local search, which counts a shared merge once) is shown to the agent, whose
/// xfer probabilities rank the rules that have a match in the e-graph; the
/// `max_children` most probable are each applied to a copy (all their matches, at most
/// EqsatOptions::match_limit), and the copy whose extraction is cheapest is kept.
/// Where none is cheaper than the e-graph it grew from, the rule that changes the e-graph
/// with the fewest new e-nodes is kept (the more probable on a tie): a rewrite that pays
/// only after another (a merge after a fold) must be added first, an e-graph loses no
/// graph by growing, and the small step leaves room under the e-node limit
/// (merge_matmul_triple takes NasRNN's from 470 e-nodes to 43,000 in one step). Growth ends at
/// `grow_steps`, the e-node limit, a step that changes nothing, or the caller's clock
/// and stop flag; extraction then runs as equality saturation's does (greedy, the local
/// search, the ILP), and the cheaper of its graph and the cheapest step's is the result.
///
/// E-nodes are priced once, when they are added (search::enode_costs from the e-nodes
/// already priced): the extraction that judges a step sees the prices the final one will.

#include <rlflow/rl/env/env.hpp>
#include <rlflow/rl/plan.hpp>
#include <rlflow/search/eqsat.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace rlflow::rl {

/// What growing the e-graph found.
struct GrowResult {
    /// The cheapest extraction, priced whole (CostModel::graph_cost).
    Graph graph;
    double cost_ms = 0;
    /// Growth steps taken, and the rule each added, in order.
    std::vector<std::string> grown;
    /// The e-graph, its extraction and the rules the extraction's graph used.
    search::EqsatStats stats;
    std::map<std::string, std::size_t> rewrites;
    std::optional<search::StopReason> stopped;
};

namespace detail {

/// An e-graph with the prices of its e-nodes, grown together.
struct PricedEGraph {
    search::SeededEGraph seeded;
    std::vector<double> costs;

    /// Prices the e-nodes added since the last call.
    template <cost::CostBackend C>
    void price(cost::CostModel<C>& model) {
        const auto from = static_cast<search::ENodeId>(costs.size());
        if (from == seeded.egraph.node_bound()) return;
        std::vector<double> added = search::enode_costs(seeded.egraph, model, from);
        costs.resize(added.size());
        std::copy(added.begin() + from, added.end(), costs.begin() + from);
    }

    /// Greedy's choice improved by the local search within `local`, and its DAG cost.
    [[nodiscard]] std::pair<double, std::vector<search::ENodeId>> judge(const search::LocalSearchOptions& local) const {
        search::LocalSearchOutcome o =
            search::improve_choice(seeded.egraph, seeded.roots, costs, search::greedy_choice(seeded.egraph, costs), local);
        return {o.cost_ms, std::move(o.choice)};
    }
};

/// Adds every match of rule `r` in `matches` to `g`, at most `node_limit` e-nodes; whether
/// the e-graph changed.
inline bool grow_with(search::EGraph& g, const rewrite::RuleSet& rules, const std::vector<search::EMatch>& matches,
                      std::size_t node_limit) {
    const std::size_t nodes = g.node_bound(), unions = g.unions();
    g.space_levels();
    for (const search::EMatch& m : matches) {
        if (g.node_bound() >= node_limit) break;
        (void)search::apply_ematch(g, rules, m);
    }
    g.rebuild();
    return g.node_bound() != nodes || g.unions() != unions;
}

}  // namespace detail

/// Grows an e-graph from `start` with `policy` choosing the rules (see the file comment),
/// in `env` (whose rules the policy's xfers index), and extracts its cheapest graph.
template <PlanningPolicy P, cost::CostBackend C>
[[nodiscard]] GrowResult grow_egraph(GraphEnv<C>& env, const Graph& start, P& policy, cost::CostModel<C>& model,
                                     const PlanOptions& plan, const search::StopRules& stop,
                                     const search::EqsatOptions& eq = {}) {
    const rewrite::RuleSet& rules = env.rules();
    GrowResult out;
    const auto began = search::detail::Clock::now();
    detail::PricedEGraph grown{search::seed_egraph(start), {}};
    out.stats.node_limit = eq.node_limit > 0 ? eq.node_limit : search::default_node_limit(grown.seeded.egraph.node_bound());
    grown.price(model);
    // A step's judge: greedy's tree costs count a merged op once per output it feeds, so
    // the merges that pay only when shared look dear; the local search counts it once.
    const search::LocalSearchOptions judging{.max_evaluations = 20'000, .seconds = 2, .depth = 1};
    auto [cost, choice] = grown.judge(judging);
    // The cheapest step's extraction, kept whole: the final extraction of a larger
    // e-graph can miss it (NasRNN's e-graph grows 100-fold on merge_matmul_triple, and
    // the local search from greedy there ends above what it found before).
    search::SearchResult::RunnerUp stepped{search::extract_graph(start, grown.seeded, choice), cost, {}, {}};
    out.stats.stop = search::SaturationStop::iteration_limit;
    for (std::size_t step = 0; step < plan.grow_steps; ++step) {
        if (const auto why = stop.check(0)) {
            out.stopped = why;
            out.stats.stop = why == search::StopReason::interrupted ? search::SaturationStop::interrupted : search::SaturationStop::time_limit;
            break;
        }
        if (grown.seeded.egraph.node_bound() >= out.stats.node_limit) {
            out.stats.stop = search::SaturationStop::node_limit;
            break;
        }
        // The agent's view: the graph greedy extraction takes now.
        const Graph shown = search::extract_graph(start, grown.seeded, choice);
        const Guidance guidance = policy.guide(env.reset(shown));
        std::vector<std::vector<search::EMatch>> matches(rules.size());
        std::vector<std::uint32_t> candidates;
        {
            search::EMatcher matcher(grown.seeded.egraph, rules);
            for (std::uint32_t r = 0; r < rules.size(); ++r) {
                matcher.find_all(r, matches[r], eq.match_limit);
                if (!matches[r].empty()) candidates.push_back(r);
            }
        }
        // Most probable first; rules the shown graph has no location for (probability 0)
        // follow in rule order.
        std::stable_sort(candidates.begin(), candidates.end(),
                         [&](std::uint32_t a, std::uint32_t b) { return guidance.xfer_probs[a] > guidance.xfer_probs[b]; });
        if (candidates.size() > plan.max_children) candidates.resize(plan.max_children);
        std::optional<detail::PricedEGraph> best, first_changed;
        double best_cost = cost * (1 - 1e-9);
        std::uint32_t best_rule = 0, first_rule = 0;
        for (const std::uint32_t r : candidates) {
            detail::PricedEGraph tried = grown;
            if (!detail::grow_with(tried.seeded.egraph, rules, matches[r], out.stats.node_limit)) continue;
            tried.price(model);
            // Under a time limit, the candidates share what is left (0: greedy alone).
            search::LocalSearchOptions within = judging;
            if (const auto left = stop.seconds_left()) within.seconds = std::min(within.seconds, *left / static_cast<double>(candidates.size()));
            const double c = tried.judge(within).first;
            if (c < best_cost) {
                best_cost = c;
                best_rule = r;
                best = std::move(tried);
            } else if (!first_changed || tried.seeded.egraph.node_bound() < first_changed->seeded.egraph.node_bound()) {
                first_rule = r;
                first_changed = std::move(tried);
            }
        }
        if (!best && !first_changed) {
            out.stats.stop = search::SaturationStop::saturated;
            break;
        }
        const std::uint32_t taken = best ? best_rule : first_rule;
        grown = best ? std::move(*best) : std::move(*first_changed);
        out.grown.push_back(rules[taken].name);
        ++out.stats.applied[rules[taken].name];
        const double before = cost;
        std::tie(cost, choice) = grown.judge(judging);
        if (cost < before) {
            stepped.graph = search::extract_graph(start, grown.seeded, choice);
            stepped.rewrites = search::rules_used(grown.seeded.egraph, grown.seeded.roots, choice, rules);
        }
        out.stats.iterations = step + 1;
    }
    const search::EGraph& eg = grown.seeded.egraph;
    out.stats.classes = eg.num_classes();
    out.stats.enodes = eg.num_nodes();
    out.stats.explore_seconds = search::detail::seconds_since(began);
    const auto extracting = search::detail::Clock::now();
    std::vector<search::detail::Extracted> candidates =
        search::detail::extract_candidates(start, grown.seeded, rules, model, grown.costs, eq, out.stats);
    out.stats.extract_seconds = search::detail::seconds_since(extracting);
    out.stats.extraction = candidates.front().by;
    search::SearchResult::RunnerUp& extracted = candidates.front().graph;
    stepped.cost_ms = model.graph_cost(stepped.graph);
    search::SearchResult::RunnerUp& kept = stepped.cost_ms < extracted.cost_ms ? stepped : extracted;
    out.graph = std::move(kept.graph);
    out.cost_ms = kept.cost_ms;
    out.rewrites = std::move(kept.rewrites);
    return out;
}

}  // namespace rlflow::rl
