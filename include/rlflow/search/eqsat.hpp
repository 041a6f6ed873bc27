#pragma once
/// \file
/// Equality saturation (Tensat): apply every rule at every match into one e-graph, which
/// keeps all the graphs found at once, until nothing changes or a limit is reached; then
/// extract the cheapest graph.
///
/// Each iteration finds every rule's matches in the e-graph as it stands, applies them
/// all, then rebuilds. Rules with several outputs grow the e-graph fastest, so they run
/// in the first `multi_rounds` iterations only (Tensat's k_multi, default 1).
/// Limits: e-nodes, iterations, matches per rule and iteration, the clock and the stop
/// flag; when one ends exploration, extraction still runs.
///
/// Cycles. A rewrite can make a class reachable from itself (a tensor equal to something
/// computed from it). The e-graph keeps such rewrites; extraction never uses them:
/// greedy settles classes in an order in which every chosen e-node's children come
/// first, the ILP has order variables per class, and converting a choice back to a graph
/// checks for a cycle. Filtering them while exploring, as Tensat does, costs a
/// descendants search per match and only removes choices extraction avoids anyway.
///
/// Extraction prices e-nodes with the cost model (extract.hpp), takes greedy's choice,
/// and with `ilp` also the ILP's (extract_ilp.hpp) seeded with greedy's. Both are priced
/// as whole graphs by CostModel::graph_cost, the price every other search reports, and
/// the cheaper is the result; the other is its runner-up. A result that is not cheaper
/// than the input is the input.

#include <rlflow/search/egraph_convert.hpp>
#include <rlflow/search/erewrite.hpp>
#include <rlflow/search/extract.hpp>
#include <rlflow/search/extract_ilp.hpp>
#include <rlflow/search/search.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace rlflow::search {

/// How eqsat explores and extracts (Tensat's experiments: 50,000 e-nodes, 15 iterations).
struct EqsatOptions {
    std::size_t node_limit = 50000;
    std::size_t iteration_limit = 15;
    /// The first iterations, in which rules with several outputs run too.
    std::size_t multi_rounds = 1;
    /// Matches of one rule applied per iteration, at most.
    std::size_t match_limit = 20000;
    enum class Extraction : std::uint8_t { greedy, ilp };
    Extraction extraction = ilp_available ? Extraction::ilp : Extraction::greedy;
    double ilp_time_limit_seconds = 60;
    /// How the ILP keeps its choice acyclic (extract_ilp.hpp).
    IlpCycles ilp_cycles = IlpCycles::filter;
};

/// What eqsat did, for the report.
struct EqsatStats {
    std::size_t classes = 0;
    std::size_t enodes = 0;
    std::size_t iterations = 0;
    std::size_t multi_rounds = 0;
    /// saturated, node_limit, iteration_limit, time_limit or interrupted.
    std::string stop;
    /// greedy or ilp: which extraction gave the result.
    std::string extraction;
    double greedy_cost_ms = 0;
    /// Set when the ILP ran.
    std::optional<IlpOutcome> ilp;
    double ilp_cost_ms = 0;
    double explore_seconds = 0;
    double price_seconds = 0;
    double extract_seconds = 0;
    /// Rule name -> applications that changed the e-graph.
    std::map<std::string, std::size_t> applied;
};

struct EqsatResult {
    SearchResult search;
    EqsatStats stats;
};

namespace detail {

using Clock = std::chrono::steady_clock;

[[nodiscard]] inline double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

[[nodiscard]] inline StopReason search_stop_reason(const std::string& stop) {
    if (stop == "saturated") return StopReason::converged;
    if (stop == "time_limit") return StopReason::time_limit;
    if (stop == "interrupted") return StopReason::interrupted;
    return StopReason::budget;
}

}  // namespace detail

/// Explores: runs the iterations of the file comment on `eg` under `options`' clock and
/// stop flag (its progress callback sees iterations); fills `stats`' iterations,
/// multi_rounds (iterations that ran them) and applied. Returns why it ended: saturated, node_limit,
/// iteration_limit, time_limit or interrupted.
[[nodiscard]] inline std::string saturate(EGraph& eg, const rewrite::RuleSet& rules, const EqsatOptions& eq, EqsatStats& stats,
                                          const SearchOptions& options = {}, double initial_cost_ms = 0) {
    const detail::StopRules stop(options);
    for (std::size_t iteration = 0;; ++iteration) {
        if (const auto why = stop.check(0)) return why == StopReason::interrupted ? "interrupted" : "time_limit";
        if (iteration >= eq.iteration_limit) return "iteration_limit";
        if (eg.node_bound() >= eq.node_limit) return "node_limit";
        const bool multi = iteration < eq.multi_rounds;
        std::vector<EMatch> matches;
        EMatcher matcher(eg, rules);
        for (std::uint32_t r = 0; r < rules.size(); ++r)
            if (rules[r].outputs.size() == 1 || multi) matcher.find_all(r, matches, eq.match_limit, options.stop);
        if (multi) stats.multi_rounds = iteration + 1;
        const std::size_t nodes_before = eg.node_bound(), unions_before = eg.unions();
        for (const EMatch& m : matches) {
            if (eg.node_bound() >= eq.node_limit || stop.check(0)) break;
            const std::size_t n = eg.node_bound(), u = eg.unions();
            if (apply_ematch(eg, rules, m) && (eg.node_bound() != n || eg.unions() != u)) ++stats.applied[rules[m.rule].name];
        }
        eg.rebuild();
        stats.iterations = iteration + 1;
        if (options.on_progress) options.on_progress({iteration + 1, eq.iteration_limit, initial_cost_ms, initial_cost_ms});
        if (eg.node_bound() == nodes_before && eg.unions() == unions_before) return "saturated";
    }
}

/// Equality saturation from `graph` with `rules`, priced by `model` (see the file comment).
template <cost::CostBackend Backend>
[[nodiscard]] EqsatResult eqsat(const Graph& graph, std::shared_ptr<const rewrite::RuleSet> rules,
                                cost::CostModel<Backend>& model, const SearchOptions& options = {}, const EqsatOptions& eq = {}) {
    const detail::StopRules stop(options);
    EqsatResult out;
    SearchResult& result = out.search;
    EqsatStats& stats = out.stats;
    result.initial_cost_ms = model.graph_cost(graph);
    auto clock = detail::Clock::now();
    SeededEGraph seeded = seed_egraph(graph);
    stats.stop = saturate(seeded.egraph, *rules, eq, stats, options, result.initial_cost_ms);
    stats.classes = seeded.egraph.num_classes();
    stats.enodes = seeded.egraph.num_nodes();
    stats.explore_seconds = detail::seconds_since(clock);
    clock = detail::Clock::now();
    const std::vector<double> costs = enode_costs(seeded.egraph, model);
    stats.price_seconds = detail::seconds_since(clock);
    clock = detail::Clock::now();
    const std::vector<ENodeId> greedy = greedy_choice(seeded.egraph, costs);
    Graph best = extract_graph(graph, seeded, greedy);
    auto best_rules = rules_used(seeded.egraph, seeded.roots, greedy, *rules);
    stats.greedy_cost_ms = model.graph_cost(best);
    stats.extraction = "greedy";
    double best_cost = stats.greedy_cost_ms;
    if (eq.extraction == EqsatOptions::Extraction::ilp) {
        stats.ilp = ilp_choice(seeded.egraph, seeded.roots, costs, greedy, eq.ilp_time_limit_seconds, eq.ilp_cycles);
        Graph ilp = extract_graph(graph, seeded, stats.ilp->choice);
        auto ilp_rules = rules_used(seeded.egraph, seeded.roots, stats.ilp->choice, *rules);
        stats.ilp_cost_ms = model.graph_cost(ilp);
        if (stats.ilp_cost_ms < best_cost) {
            result.runners_up.push_back({std::move(best), best_cost, std::move(best_rules), {}});
            best = std::move(ilp);
            best_rules = std::move(ilp_rules);
            best_cost = stats.ilp_cost_ms;
            stats.extraction = "ilp";
        } else if (stats.ilp_cost_ms > best_cost) {
            result.runners_up.push_back({std::move(ilp), stats.ilp_cost_ms, std::move(ilp_rules), {}});
        }
    }
    stats.extract_seconds = detail::seconds_since(clock);
    if (best_cost < result.initial_cost_ms) {
        result.graph = std::move(best);
        result.best_cost_ms = best_cost;
        result.rewrites = std::move(best_rules);
    } else {
        result.graph = graph;
        result.best_cost_ms = result.initial_cost_ms;
        result.runners_up.clear();
    }
    if (result.runners_up.size() + 1 > options.keep_best) result.runners_up.resize(options.keep_best > 0 ? options.keep_best - 1 : 0);
    result.expansions = stats.iterations;
    result.reason = detail::search_stop_reason(stats.stop);
    result.seconds = stop.seconds();
    return out;
}

}  // namespace rlflow::search
