// The graph-rewriting environment (rl/env.hpp) with the analytic cpu preset and the
// built-in rules:
// - env_step: one step with a random allowed action (apply the rewrite, update the masks,
//   re-price the touched nodes, build the observation: features with op costs and the
//   nodes of every location). The target on BERT is at most 100 us (the thesis's
//   environment took 850 ms). Episodes are reset outside the timed region when no
//   rewrite is left or the step limit is reached. Items are steps.
// - env_reset: starting an episode (index every rule's locations, price every node).

#include <rlflow/cost.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/rewrite.hpp>
#include <rlflow/rl.hpp>

#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>

namespace {

using namespace rlflow;

const std::shared_ptr<const rewrite::RuleSet>& rules() {
    static const auto set = std::make_shared<const rewrite::RuleSet>(rewrite::builtin_rules());
    return set;
}

void env_step(benchmark::State& state, const std::string& model) {
    const Graph g = models::build_zoo_model(model);
    cost::CostModel<cost::AnalyticBackend> costs(cost::AnalyticBackend::preset("cpu"));
    rl::GraphEnv env(rules(), costs, {});
    rl::Observation o = env.reset(g);
    std::mt19937_64 rng(0);
    for (auto _ : state) {
        rl::Action a = rl::random_rewrite(o, rng);
        if (a.xfer == o.num_xfers || env.done()) {
            state.PauseTiming();
            o = env.reset(g);
            a = rl::random_rewrite(o, rng);
            state.ResumeTiming();
        }
        rl::StepResult s = env.step(a);
        benchmark::DoNotOptimize(s.reward);
        o = std::move(s.observation);
    }
    state.SetItemsProcessed(state.iterations());
}

void env_reset(benchmark::State& state, const std::string& model) {
    const Graph g = models::build_zoo_model(model);
    cost::CostModel<cost::AnalyticBackend> costs(cost::AnalyticBackend::preset("cpu"));
    rl::GraphEnv env(rules(), costs, {});
    for (auto _ : state) {
        rl::Observation o = env.reset(g);
        benchmark::DoNotOptimize(o.xfer_mask.data());
    }
    state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK_CAPTURE(env_step, bert, std::string("bert"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(env_step, inception_v3, std::string("inception_v3"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(env_step, resnet50, std::string("resnet50"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(env_reset, bert, std::string("bert"))->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
