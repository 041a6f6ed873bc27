// How fast the cost backends price ops, in ops per second: the ort backend cold (every
// signature of a zoo graph measured in ONNX Runtime, in one batch through the worker)
// and from its cache, the analytic roofline, and CostTracker's incremental update.
//
//   build/bench/rlflow_cost_bench [--benchmark_filter=ort]
//
// The ort benchmarks need node and tools/ort/node_modules (bash tools/setup.sh --test);
// without them they report an error instead of a time.
#include <rlflow/cost.hpp>
#include <rlflow/models/zoo.hpp>

#include <benchmark/benchmark.h>

#include <string>

namespace {

using namespace rlflow;

/// The graph's priced nodes: its op nodes that are not weight-only.
std::size_t priced_nodes(const Graph& g) {
    const std::vector<char> constant = weight_only_nodes(g);
    std::size_t n = 0;
    for (const Node& node : g.nodes())
        if (!node.traits().has(op_flag_source) && !constant[node.id.value]) ++n;
    return n;
}

/// Marks the benchmark as an error when ONNX Runtime is not installed; true if so.
bool ort_missing(benchmark::State& state) {
    const auto why = cost::ort_unavailable_reason();
    if (why) state.SkipWithError(why->c_str());
    return why.has_value();
}

/// Every signature measured afresh: a new CostModel (empty cache) each iteration.
void ort_cold(benchmark::State& state, const std::string& model) {
    if (ort_missing(state)) return;
    const Graph g = models::build_zoo_model(model);
    cost::OrtBackendOptions options;
    options.runs = 5;
    std::size_t signatures = 0;
    for (auto _ : state) {
        state.PauseTiming();
        cost::CostModel<cost::OrtBackend> priced{cost::OrtBackend(options)};  // worker start-up not timed
        state.ResumeTiming();
        benchmark::DoNotOptimize(priced.graph_cost(g));
        signatures = priced.cache_size();
    }
    state.counters["signatures"] = static_cast<double>(signatures);
    state.counters["signatures/s"] = benchmark::Counter(static_cast<double>(signatures) * static_cast<double>(state.iterations()),
                                                        benchmark::Counter::kIsRate);
}

/// The same graph priced again: every op from the cache.
void ort_cached(benchmark::State& state, const std::string& model) {
    if (ort_missing(state)) return;
    const Graph g = models::build_zoo_model(model);
    cost::OrtBackendOptions options;
    options.runs = 5;
    cost::CostModel<cost::OrtBackend> priced{cost::OrtBackend(options)};
    (void)priced.graph_cost(g);
    for (auto _ : state) benchmark::DoNotOptimize(priced.graph_cost(g));
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(priced_nodes(g)));
}

/// The analytic roofline, cache cleared every iteration.
void analytic_cold(benchmark::State& state, const std::string& model) {
    const Graph g = models::build_zoo_model(model);
    for (auto _ : state) {
        cost::CostModel<cost::AnalyticBackend> priced(cost::AnalyticBackend::preset("cpu"));
        benchmark::DoNotOptimize(priced.graph_cost(g));
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(priced_nodes(g)));
}

}  // namespace

BENCHMARK_CAPTURE(ort_cold, squeezenet1_1, std::string("squeezenet1_1"))->Unit(benchmark::kSecond)->Iterations(2)->UseRealTime();
BENCHMARK_CAPTURE(ort_cold, resnet18, std::string("resnet18"))->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK_CAPTURE(ort_cached, resnet50, std::string("resnet50"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(ort_cached, bert, std::string("bert"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(analytic_cold, resnet50, std::string("resnet50"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(analytic_cold, bert, std::string("bert"))->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
