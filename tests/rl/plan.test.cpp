// Planning at inference (rl/plan.hpp): a tree search over rewrites guided by an agent.
#include "small_graphs.hpp"

#include <rlflow/cost/analytic.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rl/agent_search.hpp>
#include <rlflow/rl/plan.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace rlflow;

namespace {

using PlanFloat = nn::backend::Eigen;

/// The search options of the plan tests: a budget of `budget` and a step limit of 20.
rl::AgentSearchOptions planning(rl::PlanKind kind, std::size_t budget) {
    rl::AgentSearchOptions options;
    options.env.step_limit = 20;
    options.search.budget = budget;
    options.plan.kind = kind;
    options.plan.simulations = 8;
    return options;
}

}  // namespace

TEST_CASE("children are the most probable xfers at their best one-step-gain locations, priors renormalised") {
    auto model = test::analytic_cpu();
    rl::GraphEnv env(test::builtin(), model, {});
    const rl::Observation o = env.reset(models::build_zoo_model("inception_v3"));
    rl::Guidance g;
    g.xfer_probs.assign(o.num_xfers + std::size_t{1}, 0.0);
    std::vector<std::uint32_t> valid;
    for (std::uint32_t x = 0; x < o.num_xfers; ++x)
        if (o.location_count(x) > 0) valid.push_back(x);
    REQUIRE(valid.size() >= 2);
    // Probabilities rising with the index, NO-OP the most probable of all.
    for (std::size_t i = 0; i < valid.size(); ++i) g.xfer_probs[valid[i]] = static_cast<double>(i + 1);
    g.xfer_probs.back() = 1e6;
    const std::vector<rl::detail::PlanEdge> edges = rl::plan_children(o, g, 2);
    REQUIRE(edges.size() == 2);
    CHECK(edges[0].action.xfer == valid[valid.size() - 1]);  // NO-OP is never a child
    CHECK(edges[1].action.xfer == valid[valid.size() - 2]);
    const double top = static_cast<double>(valid.size());
    CHECK(edges[0].prior == doctest::Approx(top / (2 * top - 1)));
    CHECK(edges[0].prior + edges[1].prior == doctest::Approx(1.0));
    const std::vector<rl::detail::PlanEdge> one = rl::plan_children(o, g, 1);
    REQUIRE(one.size() == 1);
    CHECK(one[0].action.xfer == edges[0].action.xfer);
    CHECK(one[0].prior == 1.0);
    for (const rl::detail::PlanEdge& e : edges) {
        CHECK(e.action.location == rl::best_location(o, e.action.xfer));
        CHECK(e.gain == o.gain(e.action.xfer, e.action.location));
    }
}

TEST_CASE("the tree search keeps within its budget, is deterministic, and finds no worse than the agent's rollout") {
    auto model = test::analytic_cpu();
    const Graph graph = models::build_zoo_model("squeezenet1_1");
    const rl::GraphEnv probe(test::builtin(), model, {});
    rl::ActorCritic<PlanFloat> policy(probe.num_xfers(), static_cast<std::uint32_t>(rl::EnvOptions{}.max_locations), {.seed = 3});

    constexpr std::size_t budget = 60;
    const search::SearchResult rolled = rl::agent_search(graph, test::builtin(), model, policy, planning(rl::PlanKind::none, budget));
    const search::SearchResult planned = rl::agent_search(graph, test::builtin(), model, policy, planning(rl::PlanKind::mcts, budget));
    CHECK(planned.expansions <= budget);
    CHECK(planned.expansions > rolled.expansions);  // the tree spent what the rollout left
    CHECK(planned.best_cost_ms <= rolled.best_cost_ms);
    CHECK(planned.best_cost_ms < planned.initial_cost_ms);
    CHECK(planned.best_cost_ms == doctest::Approx(model.graph_cost(planned.graph)).epsilon(1e-9));

    const search::SearchResult again = rl::agent_search(graph, test::builtin(), model, policy, planning(rl::PlanKind::mcts, budget));
    CHECK(again.best_cost_ms == planned.best_cost_ms);  // the same code on the same graph: the same bits
    CHECK(again.sequence == planned.sequence);
}

TEST_CASE("the tree search commits step by step and ends with a graph priced as its cost says") {
    auto model = test::analytic_cpu();
    const Graph graph = test::conv_chain(6);
    rl::EnvOptions env_options;
    env_options.step_limit = 10;
    rl::GraphEnv env(test::builtin(), model, env_options);
    rl::ActorCritic<PlanFloat> policy(env.num_xfers(), static_cast<std::uint32_t>(env_options.max_locations), {.seed = 4});
    search::SearchOptions limits;
    limits.budget = 1000;
    const search::StopRules stop(limits);
    std::size_t expansions = 0;
    std::vector<double> improvements;
    rl::PlanOptions options;
    options.kind = rl::PlanKind::mcts;
    options.simulations = 4;
    const rl::PlanResult r = rl::plan(env, graph, policy, options, stop, expansions, [&](double c) { improvements.push_back(c); });
    CHECK_FALSE(r.stopped.has_value());
    CHECK(r.committed > 0);
    CHECK(r.committed < env_options.step_limit);
    CHECK(r.evaluations == expansions);
    // Six activations to fuse: the cheapest graph met fused all of them.
    CHECK(r.path.size() >= 6);
    CHECK(r.cost_ms == doctest::Approx(model.graph_cost(r.graph)).epsilon(1e-9));
    REQUIRE_FALSE(improvements.empty());
    CHECK(std::is_sorted(improvements.rbegin(), improvements.rend()));
    CHECK(improvements.back() == r.cost_ms);
    CHECK_THROWS_AS(env.undo(), precondition_error);  // the plan's steps are not kept after it
}

TEST_CASE("equality saturation seeded with the rollouts' cheapest graph keeps the cheaper of both, with its rewrites counted") {
    auto model = test::analytic_cpu();
    const Graph graph = models::build_zoo_model("squeezenet1_1");
    const rl::GraphEnv probe(test::builtin(), model, {});
    rl::ActorCritic<PlanFloat> policy(probe.num_xfers(), static_cast<std::uint32_t>(rl::EnvOptions{}.max_locations), {.seed = 8});
    rl::AgentSearchOptions options = planning(rl::PlanKind::none, 6);  // a short rollout, which leaves work to do
    const search::SearchResult rolled = rl::agent_search(graph, test::builtin(), model, policy, options);
    options.plan.kind = rl::PlanKind::eqsat;
    const search::SearchResult saturated = rl::agent_search(graph, test::builtin(), model, policy, options);
    CHECK(saturated.best_cost_ms < rolled.best_cost_ms);
    CHECK(saturated.best_cost_ms == doctest::Approx(model.graph_cost(saturated.graph)).epsilon(1e-9));
    std::size_t counted = 0;
    for (const auto& [rule, count] : saturated.rewrites) counted += count;
    CHECK(counted == saturated.sequence.size());
    CHECK(counted > rolled.sequence.size());
    // Equality saturation alone from the input finds no cheaper graph than from the agent's.
    const search::EqsatResult alone = search::eqsat(graph, test::builtin(), model);
    CHECK(saturated.best_cost_ms <= model.graph_cost(alone.search.graph) * (1 + 1e-9));
}
