#pragma once
/// \file
/// Equality saturation (Tensat): apply every rule at every match into one e-graph, which
/// keeps all the graphs found at once, until nothing changes or a limit is reached; then
/// extract the cheapest graph.
///
/// Each iteration finds every rule's matches in the e-graph as it stands, applies them
/// all, then rebuilds. Rules with several outputs grow the e-graph fastest, so they run
/// in `multi_rounds` iterations only: the first ones (Tensat's k_multi; the default, 1, is
/// what Tensat found best), or, with MultiSchedule::saturated, each one after the
/// single-output rules saturated.
/// Limits: e-nodes, iterations, matches per rule and iteration, the clock and the stop
/// flag; when one ends exploration, extraction still runs.
///
/// Cycles. A rewrite can make a class reachable from itself (a tensor equal to something
/// computed from it). A rule with several outputs is refused where it would close one
/// (Tensat's filtering, a descendants search per match: erewrite.hpp). Cycles that rules
/// with one output make stay in the e-graph, and extraction never uses them: greedy
/// settles classes in an order in which every chosen e-node's children come first, the
/// local search checks each move, the ILP filters or orders them, and converting a
/// choice back to a graph checks for a cycle.
///
/// Extraction prices e-nodes with the cost model (extract.hpp), takes greedy's choice,
/// improves it by local search with shared subgraphs counted once (extract_local.hpp),
/// and with `ilp` also takes the ILP's (extract_ilp.hpp) seeded with the improved choice.
/// On large e-graphs (EqsatOptions::ilp_windows) the ILP is solved by windows from
/// greedy's choice, and the local search, quadratic there, is left out. Each is priced
/// as a whole graph by CostModel::graph_cost, the price every other search reports, and
/// the cheapest is the result; the next is its runner-up. A result that is not cheaper
/// than the input is the input.
///
/// Scale: exploring costs in proportion to the e-graph (each iteration respaces the
/// classes' levels, which keep the cycle checks local: egraph.hpp), the e-node limit
/// grows with the graph (default_node_limit), and extraction by windows costs in
/// proportion to the windows.

#include <rlflow/search/egraph_convert.hpp>
#include <rlflow/search/erewrite.hpp>
#include <rlflow/search/extract.hpp>
#include <rlflow/search/extract_ilp.hpp>
#include <rlflow/search/extract_local.hpp>
#include <rlflow/search/search.hpp>
#include <rlflow/core/names.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace rlflow::search {

/// The e-node limit for a graph of `nodes` nodes when none is given: Tensat's 50,000, or
/// ten e-nodes per node on larger graphs (Tensat's graphs had up to a few thousand nodes;
/// a fixed limit stops a deep stack right after seeding it).
[[nodiscard]] constexpr std::size_t default_node_limit(std::size_t nodes) noexcept {
    constexpr std::size_t least = 50000;
    constexpr std::size_t enodes_per_node = 10;
    return std::max(least, nodes * enodes_per_node);
}

/// How eqsat explores and extracts. The defaults are Tensat's experiments' settings:
/// 50,000 e-nodes (more on larger graphs: default_node_limit), 15 iterations, k_multi 1
/// (MultiSchedule::first). saturated() gives
/// the settings that reached taso's results on all of Tensat's graphs here: the
/// multi-output rules twice, each time after the single-output rules saturated, which
/// needs more iterations (inception-v3 saturates after 28, NasNet-A after 39).
struct EqsatOptions {
    /// E-nodes at most (0: default_node_limit of the input's nodes).
    std::size_t node_limit = 0;
    std::size_t iteration_limit = 15;
    /// Iterations in which rules with several outputs run too.
    std::size_t multi_rounds = 1;
    /// Which iterations those are: the first ones (Tensat's k_multi), or each one that
    /// follows an iteration in which the single-output rules changed nothing, so that the
    /// multi-output rules also see what those made (a merge of two convolutions after
    /// their BatchNorms were folded and their Relus fused, as TASO's sequences do).
    enum class MultiSchedule : std::uint8_t { first, saturated };
    MultiSchedule multi_schedule = MultiSchedule::first;
    /// Matches of one rule applied per iteration, at most.
    std::size_t match_limit = 20000;
    enum class Extraction : std::uint8_t { greedy, ilp };
    Extraction extraction = ilp_available ? Extraction::ilp : Extraction::greedy;
    double ilp_time_limit_seconds = 60;
    /// How the ILP keeps its choice acyclic (extract_ilp.hpp).
    IlpCycles ilp_cycles = IlpCycles::filter;
    /// Above `ilp_windows.above` classes, the ILP is solved by windows (ilp_choice; above
    /// 0: one ILP whatever the size), and the local search, whose every evaluation walks
    /// the whole choice, is left out: the windows start from greedy's choice. The zoo's
    /// e-graphs at these defaults have at most 3,000 classes; a 5,000-node graph about
    /// 7,000.
    IlpWindows ilp_windows{.above = 8000, .classes = 2000};
    /// The local search after greedy (extract_local.hpp); seconds 0 turns it off.
    LocalSearchOptions local;

    /// Two multi-output rounds, each after the single-output rules saturated, and 40
    /// iterations (`rlflow optimize --multi-schedule saturated --multi-rounds 2
    /// --iter-limit 40`).
    [[nodiscard]] static EqsatOptions saturated() {
        EqsatOptions eq;
        eq.iteration_limit = 40;
        eq.multi_rounds = 2;
        eq.multi_schedule = MultiSchedule::saturated;
        return eq;
    }
};

/// The names --extract, --multi-schedule and --ilp-cycles take, and the reports write.
inline constexpr NameTable<EqsatOptions::Extraction, 2> extraction_names{{{
    {EqsatOptions::Extraction::greedy, "greedy"},
    {EqsatOptions::Extraction::ilp, "ilp"},
}}};
inline constexpr NameTable<EqsatOptions::MultiSchedule, 2> multi_schedule_names{{{
    {EqsatOptions::MultiSchedule::first, "first"},
    {EqsatOptions::MultiSchedule::saturated, "saturated"},
}}};
inline constexpr NameTable<IlpCycles, 2> ilp_cycles_names{{{
    {IlpCycles::filter, "filter"},
    {IlpCycles::order, "order"},
}}};

/// Which extraction gave eqsat's result: greedy's choice, the local search's, or the ILP's.
enum class ExtractedBy : std::uint8_t { greedy, local, ilp };

/// The report's names of ExtractedBy.
inline constexpr NameTable<ExtractedBy, 3> extracted_by_names{{{
    {ExtractedBy::greedy, "greedy"},
    {ExtractedBy::local, "local"},
    {ExtractedBy::ilp, "ilp"},
}}};

/// Why exploration of the e-graph ended.
enum class SaturationStop : std::uint8_t { saturated, node_limit, iteration_limit, time_limit, interrupted };

/// The report's names of SaturationStop.
inline constexpr NameTable<SaturationStop, 5> saturation_stop_names{{{
    {SaturationStop::saturated, "saturated"},
    {SaturationStop::node_limit, "node_limit"},
    {SaturationStop::iteration_limit, "iteration_limit"},
    {SaturationStop::time_limit, "time_limit"},
    {SaturationStop::interrupted, "interrupted"},
}}};

/// What eqsat did, for the report.
struct EqsatStats {
    std::size_t classes = 0;
    std::size_t enodes = 0;
    std::size_t iterations = 0;
    std::size_t multi_rounds = 0;
    /// The e-node limit it ran under (EqsatOptions::node_limit, resolved).
    std::size_t node_limit = 0;
    /// Why exploration ended.
    SaturationStop stop = SaturationStop::saturated;
    /// Which extraction gave the result.
    ExtractedBy extraction = ExtractedBy::greedy;
    double greedy_cost_ms = 0;
    /// The local search's outcome (moves 0: it kept greedy's choice) and its graph's cost.
    LocalSearchOutcome local;
    double local_cost_ms = 0;
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

[[nodiscard]] constexpr StopReason search_stop_reason(SaturationStop stop) noexcept {
    switch (stop) {
        case SaturationStop::saturated: return StopReason::converged;
        case SaturationStop::time_limit: return StopReason::time_limit;
        case SaturationStop::interrupted: return StopReason::interrupted;
        case SaturationStop::node_limit:
        case SaturationStop::iteration_limit: break;
    }
    return StopReason::budget;
}

/// One extraction's graph, priced whole, and which extraction it was.
struct Extracted {
    SearchResult::RunnerUp graph;
    ExtractedBy by = ExtractedBy::greedy;
};

/// Extraction's graphs (see the file comment): greedy's, the local search's where it
/// moved, and the ILP's with `eq.extraction` ilp; each distinct cost once, cheapest
/// first (on a tie, the earlier). Fills `stats`' extraction fields but the seconds.
template <cost::CostBackend Backend>
[[nodiscard]] std::vector<Extracted> extract_candidates(const Graph& graph, const SeededEGraph& seeded, const rewrite::RuleSet& rules,
                                                        cost::CostModel<Backend>& model, const std::vector<double>& costs,
                                                        const EqsatOptions& eq, EqsatStats& stats) {
    std::vector<Extracted> out;
    const auto add = [&](const std::vector<ENodeId>& choice, ExtractedBy by) {
        Graph g = extract_graph(graph, seeded, choice);
        const double c = model.graph_cost(g);
        if (std::none_of(out.begin(), out.end(), [&](const Extracted& e) { return e.graph.cost_ms == c; }))
            out.push_back({{std::move(g), c, rules_used(seeded.egraph, seeded.roots, choice, rules), {}}, by});
        return c;
    };
    const std::vector<ENodeId> greedy = greedy_choice(seeded.egraph, costs);
    stats.greedy_cost_ms = add(greedy, ExtractedBy::greedy);
    const bool ilp = eq.extraction == EqsatOptions::Extraction::ilp;
    const bool windows = ilp && eq.ilp_windows.above > 0 &&
                         reached_classes(seeded.egraph, seeded.roots).classes.size() > eq.ilp_windows.above;
    LocalSearchOptions local = eq.local;
    if (windows) local.seconds = 0;
    stats.local = improve_choice(seeded.egraph, seeded.roots, costs, greedy, local);
    stats.local_cost_ms = stats.local.moves > 0 ? add(stats.local.choice, ExtractedBy::local) : stats.greedy_cost_ms;
    if (ilp) {
        stats.ilp = ilp_choice(seeded.egraph, seeded.roots, costs, stats.local.choice, eq.ilp_time_limit_seconds, eq.ilp_cycles,
                               eq.ilp_windows);
        stats.ilp_cost_ms = add(stats.ilp->choice, ExtractedBy::ilp);
    }
    std::stable_sort(out.begin(), out.end(), [](const Extracted& a, const Extracted& b) { return a.graph.cost_ms < b.graph.cost_ms; });
    return out;
}

}  // namespace detail

/// Explores: runs the iterations of the file comment on `eg` under `options`' clock and
/// stop flag (its progress callback sees iterations); fills `stats`' node_limit (with
/// EqsatOptions::node_limit 0, default_node_limit of the e-nodes seeded), iterations,
/// multi_rounds (iterations that ran multi-output rules; 0 on entry) and applied.
/// Returns why it ended.
[[nodiscard]] inline SaturationStop saturate(EGraph& eg, const rewrite::RuleSet& rules, const EqsatOptions& eq, EqsatStats& stats,
                                          const SearchOptions& options = {}, double initial_cost_ms = 0) {
    const StopRules stop(options);
    stats.node_limit = eq.node_limit > 0 ? eq.node_limit : default_node_limit(eg.node_bound());
    bool single_saturated = false;
    for (std::size_t iteration = 0;; ++iteration) {
        if (const auto why = stop.check(0)) return why == StopReason::interrupted ? SaturationStop::interrupted : SaturationStop::time_limit;
        if (iteration >= eq.iteration_limit) return SaturationStop::iteration_limit;
        if (eg.node_bound() >= stats.node_limit) return SaturationStop::node_limit;
        eg.space_levels();  // so that the cycle checks of this iteration's matches stay local
        const bool multi = stats.multi_rounds < eq.multi_rounds &&
                           (eq.multi_schedule == EqsatOptions::MultiSchedule::first || single_saturated);
        std::vector<EMatch> matches;
        EMatcher matcher(eg, rules);
        for (std::uint32_t r = 0; r < rules.size(); ++r)
            if (rules[r].outputs.size() == 1 || multi) matcher.find_all(r, matches, eq.match_limit, options.stop);
        if (multi) ++stats.multi_rounds;
        const std::size_t nodes_before = eg.node_bound(), unions_before = eg.unions();
        for (const EMatch& m : matches) {
            if (eg.node_bound() >= stats.node_limit || stop.check(0)) break;
            const std::size_t n = eg.node_bound(), u = eg.unions();
            if (apply_ematch(eg, rules, m) && (eg.node_bound() != n || eg.unions() != u)) ++stats.applied[rules[m.rule].name];
        }
        eg.rebuild();
        stats.iterations = iteration + 1;
        if (options.on_progress) options.on_progress({iteration + 1, eq.iteration_limit, initial_cost_ms, initial_cost_ms});
        const bool changed = eg.node_bound() != nodes_before || eg.unions() != unions_before;
        single_saturated = !changed && !multi;
        if (!changed && !(single_saturated && stats.multi_rounds < eq.multi_rounds)) return SaturationStop::saturated;
    }
}

/// Equality saturation from `graph` with `rules`, priced by `model` (see the file comment).
template <cost::CostBackend Backend>
[[nodiscard]] EqsatResult eqsat(const Graph& graph, std::shared_ptr<const rewrite::RuleSet> rules,
                                cost::CostModel<Backend>& model, const SearchOptions& options = {}, const EqsatOptions& eq = {}) {
    const StopRules stop(options);
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
    std::vector<detail::Extracted> candidates = detail::extract_candidates(graph, seeded, *rules, model, costs, eq, stats);
    stats.extract_seconds = detail::seconds_since(clock);
    stats.extraction = candidates.front().by;
    const double best_cost = candidates.front().graph.cost_ms;
    if (best_cost < result.initial_cost_ms) {
        result.graph = std::move(candidates.front().graph.graph);
        result.best_cost_ms = best_cost;
        result.rewrites = std::move(candidates.front().graph.rewrites);
        for (std::size_t i = 1; i < candidates.size(); ++i) result.runners_up.push_back(std::move(candidates[i].graph));
    } else {
        result.graph = graph;
        result.best_cost_ms = result.initial_cost_ms;
    }
    if (result.runners_up.size() + 1 > options.keep_best) result.runners_up.resize(options.keep_best > 0 ? options.keep_best - 1 : 0);
    result.expansions = stats.iterations;
    result.reason = detail::search_stop_reason(stats.stop);
    result.seconds = stop.seconds();
    return out;
}

}  // namespace rlflow::search
