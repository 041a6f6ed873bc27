// The agents' search (rl/agent_search.hpp): rollouts go on past the policy's NO-OP to the
// step limit and keep the cheapest graph met.
#include "small_graphs.hpp"

#include <rlflow/cost/analytic.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rl/agent_search.hpp>
#include <rlflow/rl/env/agent_dir.hpp>
#include <rlflow/rl/model_free/policy.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

using namespace rlflow;
using Float = nn::backend::Eigen;
using rlflow::test::builtin;
using rlflow::test::two_branches;

TEST_CASE("the mf search rolls on past the policy's NO-OP to the step limit, and keeps the cheapest graph met") {
    auto model = cost::CostModel<cost::AnalyticBackend>{cost::AnalyticBackend::preset("cpu")};
    rl::AgentSearchOptions options;
    options.env.step_limit = 6;
    options.search.budget = 100;
    const rl::GraphEnv probe(builtin(), model, options.env);
    rl::ActorCritic<Float> policy(probe.num_xfers(), static_cast<std::uint32_t>(options.env.max_locations), {.seed = 5});
    // A policy that prefers NO-OP above everything: its xfer head's last bias favours it.
    const auto params = policy.parameters();
    const auto bias = std::find_if(params.begin(), params.end(), [](const auto* p) { return p->name == "policy.xfer.1.bias"; });
    REQUIRE(bias != params.end());
    std::vector<float> favour_no_op((*bias)->value.to_host());
    constexpr float strong = 20.0f;
    favour_no_op.back() = strong;
    (*bias)->value = nn::Tensor<Float>::from_host((*bias)->value.shape(), std::span<const float>(favour_no_op));

    options.until_limit = false;
    const search::SearchResult stopped = rl::agent_search(two_branches(), builtin(), model, policy, options);
    CHECK(stopped.expansions == 1);  // NO-OP at once
    CHECK(stopped.rewrites.empty());
    CHECK(stopped.best_cost_ms == doctest::Approx(stopped.initial_cost_ms));

    options.until_limit = true;
    const search::SearchResult rolled = rl::agent_search(two_branches(), builtin(), model, policy, options);
    // It rewrote past the NO-OP the policy prefers, until the step limit passed since its
    // cheapest graph, or until nothing but NO-OP applied (after merging the two
    // convolutions, nothing does).
    CHECK(rolled.expansions >= 2);
    CHECK(rolled.expansions <= rolled.sequence.size() + options.env.step_limit);
    CHECK(rolled.best_cost_ms <= stopped.best_cost_ms);
    CHECK(rolled.best_cost_ms == doctest::Approx(model.graph_cost(rolled.graph)).epsilon(1e-9));
}

TEST_CASE("a rollout to the limit goes on past the trained step limit while it finds cheaper graphs; one that ends at NO-OP keeps it") {
    auto model = cost::CostModel<cost::AnalyticBackend>{cost::AnalyticBackend::preset("cpu")};
    rl::AgentSearchOptions options;
    options.env.step_limit = 3;  // as trained
    options.search.budget = 100;
    const rl::GraphEnv probe(builtin(), model, options.env);
    rl::ActorCritic<Float> policy(probe.num_xfers(), static_cast<std::uint32_t>(options.env.max_locations), {.seed = 6});
    const Graph chain = rlflow::test::conv_chain(8);

    options.until_limit = true;
    const search::SearchResult rolled = rl::agent_search(chain, builtin(), model, policy, options);
    CHECK(rolled.expansions > options.env.step_limit);
    // It ends when the step limit has passed since its cheapest graph.
    CHECK(rolled.expansions <= rolled.sequence.size() + options.env.step_limit);

    options.until_limit = false;
    const search::SearchResult cut = rl::agent_search(chain, builtin(), model, policy, options);
    CHECK(cut.expansions <= options.env.step_limit);
    CHECK(rolled.best_cost_ms <= cut.best_cost_ms);
}

TEST_CASE("an agent trained on latency offers where its rollouts ended, and the cheapest graphs after them") {
    auto model = cost::CostModel<cost::AnalyticBackend>{cost::AnalyticBackend::preset("cpu")};
    rl::AgentSearchOptions options;
    options.env.step_limit = 5;
    options.search.budget = 100;
    options.search.keep_best = 4;
    options.until_limit = false;
    const rl::GraphEnv probe(builtin(), model, options.env);
    rl::ActorCritic<Float> policy(probe.num_xfers(), static_cast<std::uint32_t>(options.env.max_locations), {.seed = 6});
    const Graph chain = rlflow::test::conv_chain(8);
    const auto search = [&](std::size_t samples, bool endpoints) {
        options.samples = samples;
        options.endpoints = endpoints;
        return rl::agent_search(chain, builtin(), model, policy, options);
    };

    // One rollout: its cheapest graph lies on its path to where it ended.
    const search::SearchResult cheapest = search(0, false);
    const search::SearchResult ended = search(0, true);
    CHECK_FALSE(cheapest.chosen_by_policy);
    CHECK(ended.chosen_by_policy);
    CHECK(ended.expansions == cheapest.expansions);
    REQUIRE(cheapest.sequence.size() <= ended.sequence.size());
    CHECK(std::equal(cheapest.sequence.begin(), cheapest.sequence.end(), ended.sequence.begin()));
    CHECK(ended.best_cost_ms == doctest::Approx(model.graph_cost(ended.graph)).epsilon(1e-9));
    CHECK(ended.best_cost_ms >= cheapest.best_cost_ms * (1 - 1e-9));

    // Three rollouts: the greedy one's end leads, and the cheapest graph met on any of them
    // by the cost model is still offered, after the ends.
    const search::SearchResult cheapest_of_3 = search(2, false);
    const search::SearchResult ended_of_3 = search(2, true);
    CHECK(canonical_hash(ended_of_3.graph) == canonical_hash(ended.graph));
    CHECK(ended_of_3.sequence == ended.sequence);
    if (canonical_hash(ended_of_3.graph) != canonical_hash(cheapest_of_3.graph)) {
        const bool offered = std::any_of(ended_of_3.runners_up.begin(), ended_of_3.runners_up.end(), [&](const auto& r) {
            return canonical_hash(r.graph) == canonical_hash(cheapest_of_3.graph);
        });
        CHECK(offered);
    }

    options.until_limit = true;  // an end at the limit says nothing the cost model did not
    CHECK_THROWS_AS((void)search(0, true), precondition_error);

    rl::AgentHeader header;
    header.cost_backend = "ort-latency:1.30.0:all_t2";
    CHECK(rl::learned_from_latency(header));
    header.cost_backend = "cuda:NVIDIA H200:fp32:latency";
    CHECK(rl::learned_from_latency(header));
    header.cost_backend = "ort:1.30.0:all_t2";
    CHECK_FALSE(rl::learned_from_latency(header));
}
