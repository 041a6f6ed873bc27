// PPO (rl/model_free/ppo.hpp) learning a small rewriting task, and a minibatch's gradient
// split over shards.
#include "../parameter_gaps.hpp"
#include "../small_graphs.hpp"

#include <rlflow/cost/analytic.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rl/env/env.hpp>
#include <rlflow/rl/model_free/policy.hpp>
#include <rlflow/rl/model_free/ppo.hpp>
#include <rlflow/rl/model_free/rollout.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

using namespace rlflow;
using Float = nn::backend::Eigen;
using rlflow::test::builtin;
using rlflow::test::two_branches;

namespace {

/// The best return reachable from `env`'s state within `depth` more steps (NO-OP: 0).
template <class Env>
double best_return(const Env& env, const rl::Observation& o, std::size_t depth) {
    double best = 0;
    if (depth == 0) return best;
    for (std::uint32_t r = 0; r < o.num_xfers; ++r)
        for (std::uint32_t l = 0; l < o.location_count(r); ++l) {
            Env child = env;
            rl::StepResult s = child.step({r, l});
            const double future = s.terminated || s.truncated ? 0.0 : best_return(child, s.observation, depth - 1);
            best = std::max(best, s.reward + future);
        }
    return best;
}

/// The return of the policy's most probable actions from `graph`.
template <class Model>
double greedy_return(rl::ActorCritic<Float>& policy, Model& model, const rl::EnvOptions& options, const Graph& graph) {
    rl::GraphEnv env(builtin(), model, options);
    rl::Observation o = env.reset(graph);
    Rng unused(0);
    double total = 0;
    for (;;) {
        const rl::Observation* one[] = {&o};
        const rl::Decision d = policy.act(one, unused, true);
        rl::StepResult s = env.step(d.actions[0]);
        total += s.reward;
        if (s.terminated || s.truncated) return total;
        o = std::move(s.observation);
    }
}

}  // namespace

TEST_CASE("PPO learns the best rewrite sequence of a small graph") {
    auto model = cost::CostModel<cost::AnalyticBackend>{cost::AnalyticBackend::preset("cpu")};
    rl::EnvOptions env_options;
    env_options.step_limit = 3;
    rl::GraphEnv probe(builtin(), model, env_options);
    const rl::Observation start = probe.reset(two_branches());
    const double optimum = best_return(probe, start, env_options.step_limit);
    REQUIRE(optimum > 0);

    // Two environments on the graph; the default two gradient shards.
    rl::EnvironmentSet<cost::AnalyticBackend> envs({two_branches()}, builtin(), model, env_options, 2);
    // The first policy seed from 31 whose untrained argmax misses the optimum (with the
    // one-step gains in view, some find it untrained).
    std::optional<rl::ActorCritic<Float>> untrained;
    constexpr std::uint64_t first_seed = 31, seeds = 20;
    for (std::uint64_t seed = first_seed; seed < first_seed + seeds; ++seed) {
        untrained.emplace(probe.num_xfers(), static_cast<std::uint32_t>(env_options.max_locations), rl::PolicyOptions{.seed = seed});
        if (greedy_return(*untrained, model, env_options, two_branches()) < optimum - 1e-6) break;
    }
    rl::ActorCritic<Float>& policy = *untrained;
    REQUIRE(greedy_return(policy, model, env_options, two_branches()) < optimum - 1e-6);
    rl::PpoOptions ppo;
    ppo.minibatch_size = 16;
    nn::Adam<Float> adam(policy.parameters(), nn::AdamOptions{.learning_rate = nn::LearningRateSchedule::constant(3e-3)});
    ThreadPool pool(2);
    Rng rng(131);
    std::vector<rl::EpisodeRecord> episodes;
    double first_gap = 1;
    // Trained in rounds of 20 updates until the greedy policy reaches the best return (which
    // it did not before training), at most 160 updates: how many it takes depends on the
    // initial weights, which change with the width of the node features (one per op kind).
    constexpr int round = 20, most_updates = 160;
    int updates = 0;
    bool reached = false;
    while (!reached && updates < most_updates) {
        for (int i = 0; i < round; ++i, ++updates) {
            const std::vector<rl::RolloutSegment> segments = envs.collect(policy, 16, rng, episodes, &pool);
            const rl::UpdateStats stats = rl::ppo_update(policy, adam, std::span<const rl::RolloutSegment>(segments), ppo, rng, &pool);
            if (updates == 0) first_gap = stats.first_log_prob_gap;
            CHECK(std::isfinite(stats.policy_loss));
            CHECK(stats.epochs >= 1);
        }
        reached = greedy_return(policy, model, env_options, two_branches()) == doctest::Approx(optimum).epsilon(1e-6);
    }
    // The first minibatch of an update sees the policy that acted.
    CHECK(first_gap < 1e-3);
    MESSAGE("PPO reached the best return after " << updates << " updates");
    CHECK(reached);
}

TEST_CASE("a minibatch's gradient split over shards adds up to its whole gradient") {
    auto model = cost::CostModel<cost::AnalyticBackend>{cost::AnalyticBackend::preset("cpu")};
    rl::EnvOptions env_options;
    env_options.step_limit = 4;
    rl::EnvironmentSet<cost::AnalyticBackend> envs({two_branches()}, builtin(), model, env_options, 3);
    const auto xfers = static_cast<std::uint32_t>(builtin()->size());
    const auto locations = static_cast<std::uint32_t>(env_options.max_locations);
    rl::ActorCritic<Float> whole(xfers, locations, {.seed = 6});
    rl::ActorCritic<Float> split(xfers, locations, {.seed = 6});
    Rng rng(8);
    std::vector<rl::EpisodeRecord> episodes;
    const std::vector<rl::RolloutSegment> segments = envs.collect(whole, 5, rng, episodes);
    rl::Minibatch mb;
    for (const rl::RolloutSegment& s : segments)
        for (std::size_t t = 0; t < s.size(); ++t) {
            mb.observations.push_back(&s.observations[t]);
            mb.actions.push_back(s.actions[t]);
            mb.advantages.push_back(s.rewards[t] - 0.1 * static_cast<double>(t));
            mb.old_log_probs.push_back(s.log_probs[t] - 0.05);  // ratios off 1, some clipped
            mb.returns.push_back(s.rewards[t]);
        }
    REQUIRE(mb.size() == 15);
    const rl::PpoOptions options;
    rl::ShardedGradient<Float> one(whole, 1);
    rl::ShardedGradient<Float> four(split, 4);  // uneven shards: 3, 4, 4, 4 samples
    ThreadPool pool(2);
    const rl::MinibatchSums a = one.add(mb, options);
    const rl::MinibatchSums b = four.add(mb, options, &pool);
    // Float32 sums in another order: equal within a relative 1e-4.
    CHECK(b.policy_loss == doctest::Approx(a.policy_loss).epsilon(1e-4));
    CHECK(b.value_loss == doctest::Approx(a.value_loss).epsilon(1e-4));
    CHECK(b.entropy == doctest::Approx(a.entropy).epsilon(1e-4));
    CHECK(a.clipped == b.clipped);
    const auto pa = whole.parameters(), pb = split.parameters();
    REQUIRE(pa.size() == pb.size());
    // Each gradient equal within 1e-4 of the largest gradient element.
    const double largest = test::largest_entry(pa, test::Field::grad);
    CHECK(largest > 1e-4);  // the gradients compared are not all zero
    for (std::size_t p = 0; p < pa.size(); ++p)
        CHECK_MESSAGE(test::largest_gap(*pa[p], *pb[p], test::Field::grad) <= 1e-4 * largest, pa[p]->name);
}
