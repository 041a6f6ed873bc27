// Graph IR throughput on the zoo's largest graphs: building, validating and hashing
// BERT-base, Inception-v3 and ResNet-50. Items are graphs; the "nodes" counter gives the
// graph size, so items/s times nodes is nodes/s.

#include <rlflow/core/canonical.hpp>
#include <rlflow/models/zoo.hpp>

#include <benchmark/benchmark.h>

#include <string>

namespace {

using namespace rlflow;

void set_counters(benchmark::State& state, const Graph& g) {
    state.SetItemsProcessed(state.iterations());
    state.counters["nodes"] = static_cast<double>(g.num_nodes());
}

/// Builds the zoo model: Builder calls, op normalisation and shape inference.
void build(benchmark::State& state, const std::string& name) {
    for (auto _ : state) {
        Graph g = models::build_zoo_model(name);
        benchmark::DoNotOptimize(g);
    }
    set_counters(state, models::build_zoo_model(name));
}

/// Re-checks every structural invariant and re-infers every shape.
void validate(benchmark::State& state, const std::string& name) {
    const Graph g = models::build_zoo_model(name);
    for (auto _ : state) g.validate();
    set_counters(state, g);
}

/// Computes the canonical form and its hash.
void hash(benchmark::State& state, const std::string& name) {
    const Graph g = models::build_zoo_model(name);
    for (auto _ : state) benchmark::DoNotOptimize(canonical_hash(g));
    set_counters(state, g);
}

/// The three together: what a search pays to create, check and deduplicate one graph.
void build_validate_hash(benchmark::State& state, const std::string& name) {
    for (auto _ : state) {
        const Graph g = models::build_zoo_model(name);
        g.validate();
        benchmark::DoNotOptimize(canonical_hash(g));
    }
    set_counters(state, models::build_zoo_model(name));
}

}  // namespace

BENCHMARK_CAPTURE(build_validate_hash, bert, std::string("bert"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(build_validate_hash, inception_v3, std::string("inception_v3"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(build_validate_hash, resnet50, std::string("resnet50"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(build, bert, std::string("bert"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(build, inception_v3, std::string("inception_v3"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(build, resnet50, std::string("resnet50"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(validate, bert, std::string("bert"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(validate, inception_v3, std::string("inception_v3"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(validate, resnet50, std::string("resnet50"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(hash, bert, std::string("bert"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(hash, inception_v3, std::string("inception_v3"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(hash, resnet50, std::string("resnet50"))->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
