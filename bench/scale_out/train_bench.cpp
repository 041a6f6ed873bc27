// Data-parallel training throughput (docs/scale-out.md): the model-free trainer on the
// ranks mpiexec started, each rank one thread, as `rlflow train` runs under mpirun.
//   mpiexec -n K build/bench/rlflow_scale_out_train_bench
// - train: updates of the trainer on squeezenet1_1, resnet18, inception_v3 and bert, two
//   environments per graph (eight in all, split over the ranks), 128 steps per update,
//   the analytic cpu costs. Each update is timed as its slowest rank saw it (manual time).
//   Counters: rollout_steps_per_s (environment steps of all ranks over the slowest
//   rank's rollout seconds), update_samples_per_s (PPO samples, epochs counted, over the
//   slowest rank's update seconds, the exchanges included), ranks.
// - gradient_all_reduce: nn::all_reduce_mean_gradients over the policy's parameters (as
//   doubles), the exchange of every PPO minibatch step. Counters: parameters, bytes
//   (reduced per call).
// Every rank runs the same fixed number of iterations (collectives need all of them);
// rank 0 alone reports.

#include <rlflow/core/mpi_communicator.hpp>
#include <rlflow/cost.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rewrite.hpp>
#include <rlflow/rl.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace rlflow;
using Float = nn::backend::Eigen;

/// Updates timed per run (after one untimed update that warms the caches).
constexpr benchmark::IterationCount timed_updates = 6;

/// The largest of every rank's `value`.
double slowest(MpiCommunicator& comm, double value) {
    std::vector<double> all(static_cast<std::size_t>(comm.size()), 0.0);
    all[static_cast<std::size_t>(comm.rank())] = value;
    comm.all_reduce_sum(std::span<double>(all));
    return *std::max_element(all.begin(), all.end());
}

void train(benchmark::State& state) {
    MpiCommunicator comm;
    const std::vector<std::string> names{"squeezenet1_1", "resnet18", "inception_v3", "bert"};
    std::vector<Graph> graphs;
    for (const std::string& n : names) graphs.push_back(models::build_zoo_model(n));
    const auto rules = std::make_shared<const rewrite::RuleSet>(rewrite::builtin_rules());
    cost::CostModel<cost::AnalyticBackend> costs(cost::AnalyticBackend::preset("cpu"));
    rl::MfAgentState agent;
    agent.rules = rl::rule_names(*rules);
    agent.graphs = names;
    agent.ppo.environments_per_graph = 2;
    rl::MfTrainer<Float, cost::AnalyticBackend> trainer(std::move(graphs), rules, costs, agent, 1, {}, AnyCommunicator(comm));
    trainer.synchronise();
    (void)trainer.update();
    double steps = 0, samples = 0, rollout = 0, update = 0;
    for (auto _ : state) {
        const std::size_t before = trainer.state().env_steps;
        const rl::UpdateLog log = trainer.update();
        const double slow_rollout = slowest(comm, log.rollout_seconds), slow_update = slowest(comm, log.update_seconds);
        state.SetIterationTime(slow_rollout + slow_update);
        steps += static_cast<double>(trainer.state().env_steps - before);
        samples += static_cast<double>(trainer.state().env_steps - before) * log.stats.epochs;
        rollout += slow_rollout;
        update += slow_update;
    }
    state.counters["rollout_steps_per_s"] = steps / rollout;
    state.counters["update_samples_per_s"] = samples / update;
    state.counters["ranks"] = comm.size();
}

BENCHMARK(train)->Iterations(timed_updates)->UseManualTime()->Unit(benchmark::kMillisecond);

/// All-reduces timed per run.
constexpr benchmark::IterationCount timed_reductions = 400;

void gradient_all_reduce(benchmark::State& state) {
    MpiCommunicator comm;
    const auto rules = rewrite::builtin_rules();
    rl::ActorCritic<Float> policy(static_cast<std::uint32_t>(rules.size()), static_cast<std::uint32_t>(rl::EnvOptions{}.max_locations));
    const std::vector<nn::Parameter<Float>*> params = policy.parameters();
    double count = 0;
    for (nn::Parameter<Float>* p : params) {
        p->grad = p->value;
        count += static_cast<double>(p->value.numel());
    }
    comm.barrier();
    for (auto _ : state) nn::all_reduce_mean_gradients<Float>(comm, std::span<nn::Parameter<Float>* const>(params), 1.0);
    state.counters["parameters"] = count;
    state.counters["bytes"] = (count + 1) * sizeof(double);
}

BENCHMARK(gradient_all_reduce)->Iterations(timed_reductions)->Unit(benchmark::kMicrosecond)->UseRealTime();

/// Reports nothing: for the ranks other than 0.
class Silent : public benchmark::BenchmarkReporter {
public:
    bool ReportContext(const Context&) override { return true; }
    void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
    rlflow::MpiSession session(&argc, &argv);
    benchmark::Initialize(&argc, argv);
    if (rlflow::MpiCommunicator().rank() == 0) {
        benchmark::RunSpecifiedBenchmarks();
    } else {
        Silent silent;
        benchmark::RunSpecifiedBenchmarks(&silent);
    }
    benchmark::Shutdown();
    return 0;
}
