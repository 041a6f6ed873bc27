// The graph-rewriting environment (rl/env/env.hpp) with the analytic cpu preset and the
// built-in rules:
// - env_step: one step with a random allowed action (apply the rewrite, update the masks,
//   re-price the touched nodes, build the observation: features with op costs, kept node
//   by node and described again only where the rewrite touched the graph, the nodes of
//   every location, and every location's one-step gain, the price the working graph
//   keeps for each action, probed again only where the rewrite touched what it read;
//   _no_gains: no prices kept). Figures are in docs/scaling.md (the thesis's
//   environment took 850 ms). Episodes are reset outside the timed region when no
//   rewrite is left or the step limit is reached. Items are steps.
// - env_reset: starting an episode (index every rule's locations, price every node).
// - policy_act: one decision of the actor-critic (float Eigen backend) at batch 1: the
//   graph network over the whole graph, both heads, sampling. Items are decisions.
// - ppo_update: one PPO update (4 epochs, minibatches of 32, two gradient shards) from a
//   64-step rollout of the given graph, on 1 or 2 threads. Items are samples (steps x
//   epochs run).
// - train_update: one update of the model-free trainer (a 128-step rollout over two
//   environments of the graph, then the PPO update) on 1 or 2 threads. Items are real
//   environment steps: the training speed with the analytic cost.
// - dream_step: steps of the model-based agent's dream (rl/model_based/dream.hpp) at batch 1 and 64,
//   default sizes (z 32, LSTM 256, 8 Gaussians), BERT's training action space: the
//   controller's choice, M's step and its heads, on the frozen host copies, with the
//   inputs stored for PPO. Items are dream steps (rows x steps).
// - world_model_update: one gradient step of V and M (8 windows of 8 steps of random-agent
//   episodes on the graph), the target encoder's update included. Items are transitions.
// - wm_encode: the world model's encoder V (its target copy, no gradient) on one
//   observation: the graph network and the projection to z.
// - scale_*: env_step, policy_act, wm_encode and ppo_update on the scale family,
//   zoo:encoder_small at 19 to 1887 layers (1,008 to about 100,000 nodes; ppo_update to
//   10,000), named scale_<benchmark>/encoder_small:<depth>. Issue 26's bound: a step and
//   a forward pass at 50,000 nodes (depth 943) within 60x their cost at 1,000.
//   tools/scaling.py reads them into docs/scaling.md.
// - scale_ratio/<benchmark> (env_step, policy_act, wm_encode): that bound measured
//   directly. Each iteration times one pass at 50,000 nodes, then 50 at 1,000, so both
//   sizes see the machine in the same state (on a shared host its speed drifts by a
//   third within minutes, and separate runs' ratios with it); counters: the median
//   milliseconds at each size and their ratio.

#include <rlflow/cost.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rewrite.hpp>
#include <rlflow/rl.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace rlflow;

const std::shared_ptr<const rewrite::RuleSet>& rules() {
    static const auto set = std::make_shared<const rewrite::RuleSet>(rewrite::builtin_rules());
    return set;
}

void env_step(benchmark::State& state, const std::string& model, bool gains) {
    const Graph g = models::build_zoo_model(model);
    cost::CostModel<cost::AnalyticBackend> costs(cost::AnalyticBackend::preset("cpu"));
    rl::GraphEnv env(rules(), costs, {.one_step_gains = gains});
    rl::Observation o = env.reset(g);
    Rng rng(0);
    for (auto _ : state) {
        rl::Action a = rl::random_action(o, rng);
        if (a.xfer == o.num_xfers || env.done()) {
            state.PauseTiming();
            o = env.reset(g);
            a = rl::random_action(o, rng);
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

using Float = nn::backend::Eigen;

void policy_act(benchmark::State& state, const std::string& model) {
    cost::CostModel<cost::AnalyticBackend> costs(cost::AnalyticBackend::preset("cpu"));
    rl::GraphEnv env(rules(), costs, {});
    const rl::Observation o = env.reset(models::build_zoo_model(model));
    rl::ActorCritic<Float> policy(env.num_xfers(), static_cast<std::uint32_t>(env.options().max_locations));
    Rng rng(0);
    const rl::Observation* one[] = {&o};
    for (auto _ : state) {
        const rl::Decision d = policy.act(one, rng);
        benchmark::DoNotOptimize(d.log_probs.data());
    }
    state.SetItemsProcessed(state.iterations());
    state.counters["nodes"] = static_cast<double>(o.graph.num_nodes);
}

void wm_encode(benchmark::State& state, const std::string& model) {
    cost::CostModel<cost::AnalyticBackend> costs(cost::AnalyticBackend::preset("cpu"));
    rl::GraphEnv env(rules(), costs, {});
    const rl::Observation o = env.reset(models::build_zoo_model(model));
    rl::WorldModel<Float> world(env.num_xfers());
    const rl::Observation* one[] = {&o};
    for (auto _ : state) {
        const nn::Tensor<Float> z = world.target_z(one);
        benchmark::DoNotOptimize(z.data());
    }
    state.SetItemsProcessed(state.iterations());
    state.counters["nodes"] = static_cast<double>(o.graph.num_nodes);
}

void ppo_update(benchmark::State& state, const std::string& model, unsigned jobs) {
    cost::CostModel<cost::AnalyticBackend> costs(cost::AnalyticBackend::preset("cpu"));
    rl::EnvironmentSet<cost::AnalyticBackend> envs({models::build_zoo_model(model)}, rules(), costs, {});
    rl::ActorCritic<Float> policy(static_cast<std::uint32_t>(rules()->size()), 200);
    nn::Adam<Float> adam(policy.parameters());
    Rng rng(0);
    std::vector<rl::EpisodeRecord> episodes;
    const std::vector<rl::RolloutSegment> segments = envs.collect(policy, 64, rng, episodes);
    rl::PpoOptions options;
    ThreadPool pool(jobs);
    std::int64_t samples = 0;
    for (auto _ : state) {
        const rl::UpdateStats stats =
            rl::ppo_update(policy, adam, std::span<const rl::RolloutSegment>(segments), options, rng, &pool);
        samples += 64 * stats.epochs;
    }
    state.SetItemsProcessed(samples);
}

void train_update(benchmark::State& state, const std::string& model, unsigned jobs) {
    cost::CostModel<cost::AnalyticBackend> costs(cost::AnalyticBackend::preset("cpu"));
    rl::MfAgentState agent;
    agent.rules = rl::rule_names(*rules());
    agent.graphs = {model};
    rl::MfTrainer<Float, cost::AnalyticBackend> trainer({models::build_zoo_model(model)}, rules(), costs, agent, jobs);
    std::int64_t steps = 0;
    for (auto _ : state) {
        const std::size_t before = trainer.state().env_steps;
        (void)trainer.update();
        steps += static_cast<std::int64_t>(trainer.state().env_steps - before);
    }
    state.SetItemsProcessed(steps);
}

}  // namespace

/// BERT's training action space and a start observation of it.
struct BertSpace {
    std::shared_ptr<const rewrite::RuleSet> rules;
    Graph graph;
};
const BertSpace& bert_space() {
    static const BertSpace space = [] {
        Graph g = models::build_zoo_model("bert");
        const Graph graphs[] = {g};
        return BertSpace{std::make_shared<const rewrite::RuleSet>(rl::training_rules(graphs)), std::move(g)};
    }();
    return space;
}

void dream_step(benchmark::State& state) {
    const BertSpace& space = bert_space();
    cost::CostModel<cost::AnalyticBackend> costs(cost::AnalyticBackend::preset("cpu"));
    rl::GraphEnv env(space.rules, costs, {.one_step_gains = false});
    const rl::Observation start = env.reset(space.graph);
    const rl::WorldModel<Float> model(env.num_xfers());
    const rl::Controller<Float> controller(env.num_xfers(), model.options().latent, model.options().lstm_hidden);
    rl::Dream dream(model, controller, {.batch = static_cast<std::size_t>(state.range(0))});
    const std::vector<rl::DreamStart> starts{{std::vector<float>(32, 0.1f), rl::xfer_best_gains(start), start.xfer_mask}};
    Rng rng(0);
    constexpr std::size_t steps = 16;
    for (auto _ : state) {
        rl::DreamStats stats;
        benchmark::DoNotOptimize(dream.collect(starts, steps, rng, stats));
    }
    state.SetItemsProcessed(state.iterations() * state.range(0) * static_cast<std::int64_t>(steps));
}

void world_model_update(benchmark::State& state, const std::string& name) {
    const Graph g = models::build_zoo_model(name);
    const Graph graphs[] = {g};
    const auto space = std::make_shared<const rewrite::RuleSet>(rl::training_rules(graphs));
    cost::CostModel<cost::AnalyticBackend> costs(cost::AnalyticBackend::preset("cpu"));
    rl::MbOptions options;
    options.random_steps = options.real_steps = 64;
    options.env.step_limit = 16;
    rl::MbTrainer<Float, cost::AnalyticBackend> trainer({g}, space, costs, options);
    trainer.collect(options.random_steps, true);
    nn::Adam<Float> adam(trainer.model().parameters());
    Rng rng(0);
    constexpr std::size_t windows = 8, length = 8;
    for (auto _ : state) {
        std::vector<rl::EpisodeWindow> batch;
        for (std::size_t w = 0; w < windows; ++w) {
            const rl::RealEpisode& e = trainer.buffer()[rng.next() % trainer.buffer().size()];
            const std::size_t offset = rng.next() % e.size();
            batch.push_back({&e, offset, std::min(length, e.size() - offset)});
        }
        adam.zero_grad();
        const rl::WorldModelLosses l = trainer.model().add_gradient(std::move(batch));
        adam.step(1.0);
        trainer.model().update_target(options.model.target_rate);
        state.counters["transitions"] += static_cast<double>(l.steps);
    }
    state.counters["transitions"] = benchmark::Counter(state.counters["transitions"], benchmark::Counter::kIsRate);
}

BENCHMARK(dream_step)->ArgName("batch")->Arg(1)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(world_model_update, squeezenet1_1, std::string("squeezenet1_1"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(world_model_update, bert, std::string("bert"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(policy_act, bert, std::string("bert"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(policy_act, resnet50, std::string("resnet50"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(ppo_update, squeezenet1_1_jobs1, std::string("squeezenet1_1"), 1u)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(ppo_update, squeezenet1_1_jobs2, std::string("squeezenet1_1"), 2u)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(ppo_update, bert_jobs1, std::string("bert"), 1u)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(ppo_update, bert_jobs2, std::string("bert"), 2u)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(train_update, inception_v3_jobs1, std::string("inception_v3"), 1u)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(train_update, inception_v3_jobs2, std::string("inception_v3"), 2u)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(env_step, bert, std::string("bert"), true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(env_step, inception_v3, std::string("inception_v3"), true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(env_step, resnet50, std::string("resnet50"), true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(env_step, bert_no_gains, std::string("bert"), false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(env_step, inception_v3_no_gains, std::string("inception_v3"), false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(env_step, resnet50_no_gains, std::string("resnet50"), false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(env_reset, bert, std::string("bert"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(wm_encode, bert, std::string("bert"))->Unit(benchmark::kMillisecond)->UseRealTime();

/// Times `big()` once, then `small()` 50 times, per iteration (each returns the seconds
/// it timed); reports the medians and their ratio as counters.
template <class Small, class Big>
void interleaved(benchmark::State& state, Small&& small, Big&& big) {
    constexpr int small_per_big = 50;
    std::vector<double> small_s, big_s;
    for (auto _ : state) {
        big_s.push_back(big());
        for (int i = 0; i < small_per_big; ++i) small_s.push_back(small());
    }
    const auto median = [](std::vector<double>& v) {
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
        return v[v.size() / 2];
    };
    const double small_median = median(small_s), big_median = median(big_s);
    state.counters["small_ms"] = small_median * 1e3;
    state.counters["big_ms"] = big_median * 1e3;
    state.counters["ratio"] = big_median / small_median;
}

/// Seconds `f()` takes.
template <class F>
double seconds(F&& f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

constexpr const char* ratio_small = "encoder_small:19";
constexpr const char* ratio_big = "encoder_small:943";

struct Episode {
    Graph g;
    rl::GraphEnv<cost::AnalyticBackend> env;
    rl::Observation o;
    Episode(const char* model, cost::CostModel<cost::AnalyticBackend>& costs)
        : g(models::build_zoo_model(model)), env(rules(), costs, {}), o(env.reset(g)) {}
};

void ratio_env_step(benchmark::State& state) {
    cost::CostModel<cost::AnalyticBackend> costs(cost::AnalyticBackend::preset("cpu"));
    Rng rng(0);
    const auto step = [&](Episode& e) {  // one step, an episode's reset untimed
        rl::Action a = rl::random_action(e.o, rng);
        if (a.xfer == e.o.num_xfers || e.env.done()) {
            e.o = e.env.reset(e.g);
            a = rl::random_action(e.o, rng);
        }
        std::optional<rl::StepResult> r;
        const double t = seconds([&] { r.emplace(e.env.step(a)); });
        e.o = std::move(r->observation);
        return t;
    };
    Episode small(ratio_small, costs), big(ratio_big, costs);
    interleaved(state, [&] { return step(small); }, [&] { return step(big); });
}

void ratio_policy_act(benchmark::State& state) {
    cost::CostModel<cost::AnalyticBackend> costs(cost::AnalyticBackend::preset("cpu"));
    rl::GraphEnv env(rules(), costs, {});
    const rl::Observation small = env.reset(models::build_zoo_model(ratio_small)), big = env.reset(models::build_zoo_model(ratio_big));
    rl::ActorCritic<Float> policy(env.num_xfers(), static_cast<std::uint32_t>(env.options().max_locations));
    Rng rng(0);
    const auto pass = [&](const rl::Observation& o) {
        const rl::Observation* one[] = {&o};
        return seconds([&] { benchmark::DoNotOptimize(policy.act(one, rng).log_probs.data()); });
    };
    interleaved(state, [&] { return pass(small); }, [&] { return pass(big); });
}

void ratio_wm_encode(benchmark::State& state) {
    cost::CostModel<cost::AnalyticBackend> costs(cost::AnalyticBackend::preset("cpu"));
    rl::GraphEnv env(rules(), costs, {});
    const rl::Observation small = env.reset(models::build_zoo_model(ratio_small)), big = env.reset(models::build_zoo_model(ratio_big));
    rl::WorldModel<Float> world(env.num_xfers());
    const auto pass = [&](const rl::Observation& o) {
        const rl::Observation* one[] = {&o};
        return seconds([&] { benchmark::DoNotOptimize(world.target_z(one).data()); });
    };
    interleaved(state, [&] { return pass(small); }, [&] { return pass(big); });
}

BENCHMARK(ratio_env_step)->Name("scale_ratio/env_step")->Iterations(20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(ratio_policy_act)->Name("scale_ratio/policy_act")->Iterations(20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(ratio_wm_encode)->Name("scale_ratio/wm_encode")->Iterations(20)->Unit(benchmark::kMillisecond)->UseRealTime();

// The scale family (see the file comment), registered at run time, one per depth.
int main(int argc, char** argv) {
    constexpr int depths[] = {19, 57, 189, 566, 943, 1887};
    constexpr int ppo_deepest = 189;
    for (const int depth : depths) {
        const std::string model = "encoder_small:" + std::to_string(depth);
        benchmark::RegisterBenchmark(("scale_env_step/" + model).c_str(), env_step, model, true)->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark(("scale_policy_act/" + model).c_str(), policy_act, model)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
        benchmark::RegisterBenchmark(("scale_wm_encode/" + model).c_str(), wm_encode, model)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
        if (depth <= ppo_deepest)
            benchmark::RegisterBenchmark(("scale_ppo_update/" + model).c_str(), ppo_update, model, 1u)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
