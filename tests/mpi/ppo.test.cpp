// Data-parallel PPO on the ranks mpiexec started: one update with each rank holding its
// share of a rollout (equal shares or not) equals one single-process update of the whole
// rollout.

#include <doctest/doctest.h>

#include <rlflow/core/mpi_communicator.hpp>
#include <rlflow/cost/analytic.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rl/model_free/policy.hpp>
#include <rlflow/rl/model_free/ppo.hpp>
#include <rlflow/rl/model_free/rollout.hpp>

#include "../rl/parameter_gaps.hpp"
#include "../rl/small_graphs.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

using namespace rlflow;
using Float = nn::backend::Eigen;

TEST_CASE("one update with each rank holding 1/K of the rollout equals one update of it all on one process") {
    MpiCommunicator comm;
    const auto ranks = static_cast<std::size_t>(comm.size());
    auto model = cost::CostModel<cost::AnalyticBackend>{cost::AnalyticBackend::preset("cpu")};
    rl::EnvOptions env_options;
    env_options.step_limit = 4;
    // One environment per rank: every rank collects the same rollout, one segment each.
    rl::EnvironmentSet<cost::AnalyticBackend> envs({test::two_branches()}, test::builtin(), model, env_options, ranks);
    const auto xfers = static_cast<std::uint32_t>(test::builtin()->size());
    const auto locations = static_cast<std::uint32_t>(env_options.max_locations);
    rl::ActorCritic<Float> alone(xfers, locations, {.seed = 6});
    rl::ActorCritic<Float> shared(xfers, locations, {.seed = 6});
    Rng collect_rng(8);
    std::vector<rl::EpisodeRecord> episodes;
    const std::vector<rl::RolloutSegment> segments = envs.collect(alone, 6, collect_rng, episodes);
    REQUIRE(segments.size() == ranks);

    rl::PpoOptions options;
    options.epochs = 2;  // each epoch one minibatch of everything: the shuffle only reorders sums
    options.minibatch_size = 6 * ranks;
    options.target_kl = 1e9;
    nn::Adam<Float> adam_alone(alone.parameters(), {});
    nn::Adam<Float> adam_shared(shared.parameters(), {});
    Rng rng_alone(3), rng_shared(3);
    const rl::UpdateStats a = rl::ppo_update(alone, adam_alone, std::span<const rl::RolloutSegment>(segments), options, rng_alone);
    const rl::UpdateStats b = rl::ppo_update_over<Float>(comm, shared, adam_shared,
                                                         std::span<const rl::RolloutSegment>(segments).subspan(static_cast<std::size_t>(comm.rank()), 1),
                                                         options, rng_shared);
    CHECK(b.gradient_steps == a.gradient_steps);
    CHECK(b.epochs == a.epochs);
    // Float32 sums in another order and grouping: the statistics within a relative 1e-4,
    // the weights within 1e-5 of the largest weight.
    CHECK(b.policy_loss == doctest::Approx(a.policy_loss).epsilon(1e-4));
    CHECK(b.value_loss == doctest::Approx(a.value_loss).epsilon(1e-4));
    CHECK(b.entropy == doctest::Approx(a.entropy).epsilon(1e-4));
    CHECK(b.explained_variance == doctest::Approx(a.explained_variance).epsilon(1e-9));
    const auto pa = alone.parameters(), pb = shared.parameters();
    rl::ActorCritic<Float> start(xfers, locations, {.seed = 6});
    CHECK(test::largest_gap(pa, start.parameters(), test::Field::value) > 1e-5);  // the update moved the weights
    const double largest = test::largest_entry(pa, test::Field::value);
    for (std::size_t p = 0; p < pa.size(); ++p)
        CHECK_MESSAGE(test::largest_gap(*pa[p], *pb[p], test::Field::value) <= 1e-5 * largest, pa[p]->name);
}

TEST_CASE("ranks holding different numbers of steps make the single-process update of small minibatches") {
    MpiCommunicator comm;
    const auto ranks = static_cast<std::size_t>(comm.size());
    auto model = cost::CostModel<cost::AnalyticBackend>{cost::AnalyticBackend::preset("cpu")};
    rl::EnvOptions env_options;
    env_options.step_limit = 4;
    // K + 1 segments: rank 0 holds two of them, the others one (rank_share).
    rl::EnvironmentSet<cost::AnalyticBackend> envs({test::two_branches()}, test::builtin(), model, env_options, ranks + 1);
    const auto xfers = static_cast<std::uint32_t>(test::builtin()->size());
    const auto locations = static_cast<std::uint32_t>(env_options.max_locations);
    rl::ActorCritic<Float> alone(xfers, locations, {.seed = 4});
    rl::ActorCritic<Float> shared(xfers, locations, {.seed = 4});
    Rng collect_rng(5);
    std::vector<rl::EpisodeRecord> episodes;
    const std::vector<rl::RolloutSegment> segments = envs.collect(alone, 5, collect_rng, episodes);
    const auto [begin, end] = rlflow::rank_share(segments.size(), comm.rank(), comm.size());

    rl::PpoOptions options;
    options.epochs = 3;
    options.minibatch_size = 4;  // minibatches of a few samples, from one rank or both
    options.target_kl = 1e9;
    nn::Adam<Float> adam_alone(alone.parameters(), {});
    nn::Adam<Float> adam_shared(shared.parameters(), {});
    const auto before = test::values_of(alone.parameters());
    Rng rng_alone(7), rng_shared(7);
    const rl::UpdateStats a = rl::ppo_update(alone, adam_alone, std::span<const rl::RolloutSegment>(segments), options, rng_alone);
    const rl::UpdateStats b = rl::ppo_update_over<Float>(comm, shared, adam_shared,
                                                         std::span<const rl::RolloutSegment>(segments).subspan(begin, end - begin),
                                                         options, rng_shared);
    CHECK(b.gradient_steps == a.gradient_steps);
    CHECK(rng_shared.state() == rng_alone.state());  // the same shuffles
    // Float32 sums in another grouping, through nine Adam steps: statistics within a
    // relative 1e-4, and the two updates within 1% of the update's length.
    CHECK(b.policy_loss == doctest::Approx(a.policy_loss).epsilon(1e-4));
    CHECK(b.approx_kl == doctest::Approx(a.approx_kl).epsilon(1e-3));
    const double gap = test::relative_update_gap(alone.parameters(), shared.parameters(), before);
    MESSAGE("relative update gap ", gap);
    CHECK(gap <= 1e-2);
}
