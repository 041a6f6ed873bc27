// Search throughput with the analytic v100 model and the built-in rules:
// - taso_expansions: backtracking (alpha 1.05) expansions per second; each expansion
//   walks the working graph to the dequeued one, updates its index and the prices the
//   walk touched, hashes it, and queues its cheapest successors. Items are expansions
//   (20 a run, so the pricing of the input's actions weighs in).
// - greedy: a whole greedy search to convergence; the counter gives the cost ratio.
// - search_at_scale: a whole greedy or taso search at the default budget on the scale
//   family (1k and 50k nodes); counters give expansions, the ratio and the search's memory.
// - eqsat_saturate: equality saturation of a graph seeded into a fresh e-graph, for 3
//   iterations (multi-output rules in the first); items are e-nodes added, so items/s is
//   e-nodes added per second.
// - eqsat_extract_greedy / eqsat_extract_ilp: extraction from that e-graph (priced once,
//   outside the timing): greedy's choice, and the ILP's seeded with it (60 s limit).
// - eqsat_extract_local: the local search from greedy's choice, on the e-graph of
//   EqsatOptions::saturated() (multi-output rules twice, after saturation); counters:
//   moves kept, DAG-cost evaluations, and the DAG cost's ratio greedy / local.

#include <rlflow/cost.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/rewrite.hpp>
#include <rlflow/search.hpp>

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

namespace {

using namespace rlflow;

const std::shared_ptr<const rewrite::RuleSet>& rules() {
    static const auto set = std::make_shared<const rewrite::RuleSet>(rewrite::builtin_rules());
    return set;
}

constexpr std::size_t expansions_per_run = 20;

void taso_expansions(benchmark::State& state, const std::string& model) {
    const Graph g = models::build_zoo_model(model);
    cost::CostModel<cost::AnalyticBackend> costs(cost::AnalyticBackend::preset("v100"));
    search::SearchOptions options;
    options.budget = expansions_per_run;
    double ratio = 1;
    for (auto _ : state) {
        const auto result = search::backtracking(g, rules(), costs, options);
        ratio = result.initial_cost_ms / result.best_cost_ms;
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(expansions_per_run));
    state.counters["speedup"] = ratio;
}

void greedy(benchmark::State& state, const std::string& model) {
    const Graph g = models::build_zoo_model(model);
    cost::CostModel<cost::AnalyticBackend> costs(cost::AnalyticBackend::preset("v100"));
    double ratio = 1;
    std::size_t steps = 0;
    for (auto _ : state) {
        const auto result = search::greedy(g, rules(), costs);
        ratio = result.initial_cost_ms / result.best_cost_ms;
        steps = result.expansions;
    }
    state.SetItemsProcessed(state.iterations());
    state.counters["speedup"] = ratio;
    state.counters["rewrites"] = static_cast<double>(steps);
}

// The scale family (issue 26): a whole search at the default budget (1000, or one
// expansion per 8 nodes), on zoo:encoder_small at 19 and 943 layers (1,008 and about
// 50,000 nodes). Counters: expansions, the cost ratio, and the bytes the search held
// beyond its working graph.
void search_at_scale(benchmark::State& state, const std::string& model, bool taso) {
    const Graph g = models::build_zoo_model(model);
    cost::CostModel<cost::AnalyticBackend> costs(cost::AnalyticBackend::preset("v100"));
    search::SearchOptions options;
    options.budget = search::default_budget(g.num_nodes());
    search::SearchResult result;
    for (auto _ : state)
        result = taso ? search::backtracking(g, rules(), costs, options) : search::greedy(g, rules(), costs, options);
    state.counters["nodes"] = static_cast<double>(g.num_nodes());
    state.counters["expansions"] = static_cast<double>(result.expansions);
    state.counters["speedup"] = result.initial_cost_ms / result.best_cost_ms;
    state.counters["search_MB"] = static_cast<double>(result.peak_search_bytes) / (1 << 20);
}

search::EqsatOptions bench_eqsat() {
    search::EqsatOptions eq;
    eq.iteration_limit = 3;
    return eq;
}

void eqsat_saturate(benchmark::State& state, const std::string& model) {
    const Graph g = models::build_zoo_model(model);
    std::size_t added = 0, enodes = 0;
    for (auto _ : state) {
        search::SeededEGraph seeded = search::seed_egraph(g);
        const std::size_t before = seeded.egraph.node_bound();
        search::EqsatStats stats;
        benchmark::DoNotOptimize(search::saturate(seeded.egraph, *rules(), bench_eqsat(), stats));
        added += seeded.egraph.node_bound() - before;
        enodes = seeded.egraph.num_nodes();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(added));
    state.counters["enodes"] = static_cast<double>(enodes);
}

/// A saturated e-graph of `model` and its e-node prices.
struct Saturated {
    Graph graph;
    search::SeededEGraph seeded;
    std::vector<double> cost;
};

Saturated saturated(const std::string& model, const search::EqsatOptions& eq = bench_eqsat()) {
    Saturated s{models::build_zoo_model(model), {}, {}};
    s.seeded = search::seed_egraph(s.graph);
    search::EqsatStats stats;
    (void)search::saturate(s.seeded.egraph, *rules(), eq, stats);
    cost::CostModel<cost::AnalyticBackend> costs(cost::AnalyticBackend::preset("v100"));
    s.cost = search::enode_costs(s.seeded.egraph, costs);
    return s;
}

void eqsat_extract_greedy(benchmark::State& state, const std::string& model) {
    const Saturated s = saturated(model);
    for (auto _ : state) benchmark::DoNotOptimize(search::greedy_choice(s.seeded.egraph, s.cost));
    state.counters["enodes"] = static_cast<double>(s.seeded.egraph.num_nodes());
}

void eqsat_extract_local(benchmark::State& state, const std::string& model) {
    const Saturated s = saturated(model, search::EqsatOptions::saturated());
    const auto greedy = search::greedy_choice(s.seeded.egraph, s.cost);
    search::LocalSearchOutcome out;
    for (auto _ : state) out = search::improve_choice(s.seeded.egraph, s.seeded.roots, s.cost, greedy);
    state.counters["enodes"] = static_cast<double>(s.seeded.egraph.num_nodes());
    state.counters["moves"] = static_cast<double>(out.moves);
    state.counters["evaluations"] = static_cast<double>(out.evaluations);
    state.counters["speedup"] = out.start_cost_ms / out.cost_ms;
}

void eqsat_extract_ilp(benchmark::State& state, const std::string& model) {
    if (!search::ilp_available) {
        state.SkipWithError("built without CBC");
        return;
    }
    const Saturated s = saturated(model);
    constexpr double ilp_seconds = 60;
    std::string status;
    for (auto _ : state) {
        const auto greedy = search::greedy_choice(s.seeded.egraph, s.cost);
        status = search::ilp_choice(s.seeded.egraph, s.seeded.roots, s.cost, greedy, ilp_seconds).status;
    }
    state.SetLabel(status);
    state.counters["enodes"] = static_cast<double>(s.seeded.egraph.num_nodes());
}

}  // namespace

BENCHMARK_CAPTURE(taso_expansions, bert, std::string("bert"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(taso_expansions, inception_v3, std::string("inception_v3"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(greedy, bert, std::string("bert"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(greedy, inception_v3, std::string("inception_v3"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(greedy, resnext50, std::string("resnext50"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(search_at_scale, greedy_encoder_small_1k, std::string("encoder_small:19"), false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(search_at_scale, greedy_encoder_small_50k, std::string("encoder_small:943"), false)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(search_at_scale, taso_encoder_small_1k, std::string("encoder_small:19"), true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(search_at_scale, taso_encoder_small_50k, std::string("encoder_small:943"), true)->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK_CAPTURE(eqsat_saturate, bert, std::string("bert"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(eqsat_extract_greedy, bert, std::string("bert"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(eqsat_extract_greedy, nasnet_a, std::string("nasnet_a"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(eqsat_extract_local, inception_v3, std::string("inception_v3"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(eqsat_extract_local, bert, std::string("bert"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(eqsat_extract_ilp, bert, std::string("bert"))->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(eqsat_extract_ilp, nasnet_a, std::string("nasnet_a"))->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK_MAIN();
