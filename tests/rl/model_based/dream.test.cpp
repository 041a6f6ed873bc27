// The dream (rl/model_based/dream.hpp): it chooses only what M's masks allow, and its
// segments are PPO's.
#include "../small_graphs.hpp"
#include "../small_mb_options.hpp"

#include <rlflow/cost/analytic.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rl/model_based/dream.hpp>
#include <rlflow/rl/model_based/trainer.hpp>
#include <rlflow/rl/model_free/ppo.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace rlflow;
using Float = nn::backend::Eigen;
using rlflow::test::builtin;
using rlflow::test::conv_chain;
using rlflow::test::small_mb_options;
using rlflow::test::two_branches;
using Analytic = cost::AnalyticBackend;

TEST_CASE("the dream chooses only what M's masks allow, and its segments are PPO's") {
    auto costs = cost::CostModel<Analytic>{Analytic::preset("cpu")};
    rl::GraphEnv<Analytic> env(builtin(), costs, {.step_limit = 8});
    const rl::Observation start = env.reset(two_branches());
    const rl::MbOptions o = small_mb_options(3);
    rl::WorldModel<Float> model(env.num_xfers(), o.model);
    rl::Controller<Float> controller(env.num_xfers(), o.model.latent, o.model.lstm_hidden, o.controller);
    rl::Dream dream(model, controller, o.dream);
    const std::vector<rl::DreamStart> starts{{std::vector<float>(4, 0.1f), rl::xfer_best_gains(start), start.xfer_mask}};
    Rng rng(11);
    rl::DreamStats stats;
    const auto segments = dream.collect(starts, 12, rng, stats);
    REQUIRE(segments.size() == o.dream.batch);
    CHECK(stats.steps == 12 * o.dream.batch);
    std::size_t masked = 0, steps = 0;
    for (const auto& s : segments) {
        REQUIRE(s.size() == 12);
        for (std::size_t t = 0; t < s.size(); ++t) {
            const rl::DreamInput& in = s.observations[t];
            CHECK(in.mask.at(s.actions[t].xfer) == 1);
            CHECK(in.mask.back() == 1);
            masked += static_cast<std::size_t>(std::count(in.mask.begin(), in.mask.end(), 0));
            ++steps;
            if (s.actions[t].xfer == env.num_xfers()) CHECK(s.terminated[t] == 1);
            CHECK(std::isfinite(s.rewards[t]));
        }
    }
    // M's untrained mask head forbids some xfers: the check above is not vacuous.
    CHECK(masked > 0);
    // PPO takes the dream's segments as they are.
    Rng update_rng(1);
    nn::Adam<Float> adam(controller.parameters());
    const rl::UpdateStats u = rl::ppo_update(controller, adam, std::span<const rl::BasicRolloutSegment<rl::DreamInput>>(segments),
                                             rl::PpoOptions{.minibatch_size = 32}, update_rng);
    CHECK(u.gradient_steps > 0);
    CHECK(u.first_log_prob_gap < 1e-4);  // the frozen controller's log-probabilities are the tape's
}
