// Search throughput with the analytic v100 model and the built-in rules:
// - taso_expansions: backtracking (alpha 1.05) expansions per second; each expansion
//   indexes the dequeued graph, prices every successor incrementally and canonicalises
//   the kept ones. Items are expansions.
// - greedy: a whole greedy search to convergence; the counter gives the cost ratio.

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

}  // namespace

BENCHMARK_CAPTURE(taso_expansions, bert, std::string("bert"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(taso_expansions, inception_v3, std::string("inception_v3"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(greedy, bert, std::string("bert"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(greedy, inception_v3, std::string("inception_v3"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(greedy, resnext50, std::string("resnext50"))->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
