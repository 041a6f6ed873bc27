// Collecting experience (rl/model_free/rollout.hpp): segments that do not depend on the
// threads or on how the environments are shared out, episodes that end and restart,
// values bootstrapped where a segment or an episode is cut, and restoring a set from its
// episodes' actions.
#include "../small_graphs.hpp"

#include <rlflow/core/parallel.hpp>
#include <rlflow/cost/analytic.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rl/model_free/policy.hpp>
#include <rlflow/rl/model_free/rollout.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace rlflow;
using Float = nn::backend::Eigen;
using rlflow::test::analytic_cpu;
using rlflow::test::builtin;
using rlflow::test::two_branches;

namespace {

using Analytic = cost::AnalyticBackend;
using Set = rl::EnvironmentSet<Analytic>;


/// The graphs of the tests: two, so that environments differ by graph as well as by copy.
std::vector<Graph> graphs() { return {two_branches(), models::build_zoo_model("squeezenet1_1")}; }

/// Episodes end within a few steps, so that a short rollout sees ends and restarts.
constexpr rl::EnvOptions short_episodes{.max_locations = 16, .step_limit = 3};

rl::ActorCritic<Float> policy_for(std::uint64_t seed = 5) {
    return rl::ActorCritic<Float>(static_cast<std::uint32_t>(builtin()->size()), static_cast<std::uint32_t>(short_episodes.max_locations),
                                  rl::PolicyOptions{.seed = seed});
}

/// One environment per graph, priced by the analytic model, with a policy to act in them.
struct OnePerGraph {
    cost::CostModel<Analytic> model = analytic_cpu();
    Set set{graphs(), builtin(), model, short_episodes, 1};
    rl::ActorCritic<Float> policy = policy_for();
};

void check_same_segment(const rl::RolloutSegment& a, const rl::RolloutSegment& b) {
    REQUIRE(a.size() == b.size());
    CHECK(a.actions == b.actions);
    CHECK(a.rewards == b.rewards);
    CHECK(a.log_probs == b.log_probs);  // the same code on the same inputs: the same bits
    CHECK(a.values == b.values);
    CHECK(a.next_values == b.next_values);
    CHECK(a.terminated == b.terminated);
    CHECK(a.truncated == b.truncated);
    for (std::size_t t = 0; t < a.size(); ++t) CHECK(a.observations[t].graph.nodes == b.observations[t].graph.nodes);
}

}  // namespace

TEST_CASE("a rollout is the same on one thread or two, and a share collects what the whole set does for it") {
    auto model = analytic_cpu();
    constexpr std::size_t copies = 2, steps = 7;
    Set one(graphs(), builtin(), model, short_episodes, copies);
    Set two(graphs(), builtin(), model, short_episodes, copies);
    Set share(graphs(), builtin(), model, short_episodes, copies, {}, {1, 2});
    CHECK(one.total() == 4);
    CHECK(share.size() == 2);
    CHECK(share.total() == 4);
    CHECK(share.graph_of(0) == 0);  // global environment 1: graph 0's second copy
    CHECK(share.graph_of(1) == 1);
    auto policy = policy_for();
    Rng rng_one(3), rng_two(3), rng_share(3);
    std::vector<rl::EpisodeRecord> ended_one, ended_two, ended_share;
    ThreadPool pool(2);
    const auto a = one.collect(policy, steps, rng_one, ended_one);
    const auto b = two.collect(policy, steps, rng_two, ended_two, &pool);
    const auto s = share.collect(policy, steps, rng_share, ended_share);
    REQUIRE(a.size() == 4);
    for (std::size_t e = 0; e < a.size(); ++e) check_same_segment(a[e], b[e]);
    check_same_segment(s[0], a[1]);
    check_same_segment(s[1], a[2]);
    CHECK(ended_one.size() == ended_two.size());
    // The generator moved on by one seed per environment of the whole run and step, held or not.
    CHECK(rng_one.next() == rng_share.next());
}

TEST_CASE("episodes end, restart on their graph, and are bootstrapped where they are cut") {
    OnePerGraph run;
    Set& set = run.set;
    Rng rng(11);
    std::vector<rl::EpisodeRecord> ended;
    constexpr std::size_t steps = 10;
    const auto segments = set.collect(run.policy, steps, rng, ended);
    REQUIRE(segments.size() == 2);
    std::size_t ends = 0;
    for (std::size_t e = 0; e < segments.size(); ++e) {
        const rl::RolloutSegment& seg = segments[e];
        REQUIRE(seg.size() == steps);
        std::size_t in_episode = 0;
        double episode_return = 0;
        for (std::size_t t = 0; t < steps; ++t) {
            ++in_episode;
            episode_return += seg.rewards[t];
            CHECK(in_episode <= short_episodes.step_limit);
            CHECK_FALSE((seg.terminated[t] && seg.truncated[t]));
            if (seg.terminated[t]) CHECK(seg.next_values[t] == 0);  // nothing follows an end
            // A step inside an episode is followed by the value of the next observation.
            if (!seg.terminated[t] && !seg.truncated[t] && t + 1 < steps) CHECK(seg.next_values[t] == seg.values[t + 1]);
            if (seg.terminated[t] || seg.truncated[t]) {
                // The record of the episode that ended here, in the order they ended.
                REQUIRE(ends < ended.size());
                const rl::EpisodeRecord& r = ended[ends++];
                CHECK(r.environment == e);
                CHECK(r.graph == e);
                CHECK(r.steps == in_episode);
                CHECK(r.episode_return == doctest::Approx(episode_return).epsilon(1e-12));
                // Rewards are the fraction of the cost saved, times the scale.
                CHECK(r.cost_ratio == doctest::Approx(1.0 - episode_return / short_episodes.reward_scale).epsilon(1e-9));
                in_episode = 0;
                episode_return = 0;
            }
        }
        // The segment's last step, cut by the rollout, is bootstrapped from where it stopped.
        if (!seg.terminated.back() && !seg.truncated.back()) {
            const rl::Observation* at = &set.observation(e);
            CHECK(seg.next_values.back() == run.policy.values(std::span<const rl::Observation* const>(&at, 1))[0]);
        }
    }
    CHECK(ends == ended.size());
    CHECK(ends > 0);  // step limit 3 over 10 steps: every environment ended an episode
}

TEST_CASE("a set restored from its episodes' actions collects what the original does next") {
    OnePerGraph run;
    Set& original = run.set;
    auto& policy = run.policy;
    auto& model = run.model;
    Rng rng(17);
    std::vector<rl::EpisodeRecord> ended;
    (void)original.collect(policy, 2, rng, ended);
    Set restored(graphs(), builtin(), model, short_episodes, 1);
    restored.restore(original.episode_actions(), original.episode_returns());
    for (std::size_t e = 0; e < original.size(); ++e) {
        CHECK(restored.observation(e).graph.nodes == original.observation(e).graph.nodes);
        CHECK(restored.env(e).steps() == original.env(e).steps());
    }
    Rng again = rng;
    std::vector<rl::EpisodeRecord> ended_original, ended_restored;
    const auto a = original.collect(policy, 4, rng, ended_original);
    const auto b = restored.collect(policy, 4, again, ended_restored);
    for (std::size_t e = 0; e < a.size(); ++e) check_same_segment(a[e], b[e]);
    // A share out of order, an index past the set, and a restore of the wrong size are refused.
    CHECK_THROWS_AS(Set(graphs(), builtin(), model, short_episodes, 1, {}, {1, 0}), precondition_error);
    CHECK_THROWS_AS(Set(graphs(), builtin(), model, short_episodes, 1, {}, {2}), precondition_error);
    CHECK_THROWS_AS(restored.restore({}, {}), precondition_error);
}
