// The agent grows the e-graph (rl/grow.hpp): each step adds the matches of one rule the
// agent ranks, and the ILP or greedy extraction finishes.
#include "small_graphs.hpp"

#include <rlflow/cost/analytic.hpp>
#include <rlflow/exec.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rewrite.hpp>
#include <rlflow/rl/agent_search.hpp>
#include <rlflow/rl/grow.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <vector>

using namespace rlflow;

namespace {

/// An agent that ranks the rules by fixed probabilities, whatever it is shown.
struct FixedGuide {
    std::vector<double> probs;
    [[nodiscard]] rl::Guidance guide(const rl::Observation&) const { return {probs, 0.0}; }
};

/// Growth from `graph` with `policy`, `steps` steps of the `children` most probable rules.
template <class Policy>
rl::GrowResult grow(const Graph& graph, Policy& policy, std::size_t steps, std::size_t children) {
    auto model = test::analytic_cpu();
    rl::GraphEnv env(test::builtin(), model, {});
    rl::PlanOptions plan{.kind = rl::PlanKind::grow, .max_children = children, .grow_steps = steps};
    const search::SearchOptions options;
    const search::StopRules stop(options);
    search::EqsatOptions eq;
    eq.extraction = search::EqsatOptions::Extraction::greedy;
    return rl::grow_egraph(env, graph, policy, model, plan, stop, eq);
}

}  // namespace

TEST_CASE("a growth step adds the matches of the agent's most probable rule that changes the e-graph") {
    Graph graph = models::build_zoo_model("squeezenet1_1");
    exec::fill_random_weights(graph, 3);
    const rewrite::RuleSet& rules = *test::builtin();
    auto model = test::analytic_cpu();
    // The rules whose matches change SqueezeNet's seeded e-graph.
    const search::SeededEGraph seeded = search::seed_egraph(graph);
    std::vector<std::uint32_t> changing;
    search::EMatcher matcher(seeded.egraph, rules);
    for (std::uint32_t r = 0; r < rules.size(); ++r) {
        std::vector<search::EMatch> matches;
        matcher.find_all(r, matches, 1000);
        search::EGraph copy = seeded.egraph;
        if (!matches.empty() && rl::detail::grow_with(copy, rules, matches, 1'000'000)) changing.push_back(r);
    }
    REQUIRE(changing.size() >= 2);
    // One child a step: the step takes the most probable rule, the first or the last of
    // them in rule order alike.
    for (const std::uint32_t preferred : {changing.front(), changing.back()}) {
        const std::string& name = rules[preferred].name;
        CAPTURE(name);
        FixedGuide policy{std::vector<double>(rules.size() + 1, 0.0)};
        policy.probs[preferred] = 1.0;
        const rl::GrowResult one = grow(graph, policy, 1, 1);
        REQUIRE(one.grown.size() == 1);
        CHECK(one.grown[0] == name);
        CHECK(one.stats.applied.at(name) == 1);
        CHECK(one.cost_ms <= model.graph_cost(graph));
        CHECK(one.cost_ms == doctest::Approx(model.graph_cost(one.graph)).epsilon(1e-9));
        const auto same = rewrite::check_equivalence(graph, one.graph, {.trials = 1, .seed = 1, .rtol = 1e-3, .atol = 1e-4});
        CHECK_MESSAGE(same.equal, same.detail);
    }
}

TEST_CASE("growing the e-graph with a trained-shape agent is deterministic, keeps the function and never costs more") {
    Graph graph = models::build_zoo_model("squeezenet1_1");
    exec::fill_random_weights(graph, 3);
    auto model = test::analytic_cpu();
    const rl::GraphEnv probe(test::builtin(), model, {});
    rl::ActorCritic<nn::backend::Eigen> policy(probe.num_xfers(), static_cast<std::uint32_t>(rl::EnvOptions{}.max_locations),
                                               {.seed = 8});
    constexpr std::size_t steps = 4;
    const rl::GrowResult grown = grow(graph, policy, steps, 4);
    CHECK(!grown.grown.empty());
    CHECK(grown.grown.size() <= steps);
    CHECK(grown.stats.iterations == grown.grown.size());
    std::size_t applied = 0;
    for (const auto& [rule, count] : grown.stats.applied) applied += count;
    CHECK(applied == grown.grown.size());
    CHECK(grown.cost_ms < model.graph_cost(graph));
    const auto same = rewrite::check_equivalence(graph, grown.graph, {.trials = 1, .seed = 1, .rtol = 1e-3, .atol = 1e-4});
    CHECK_MESSAGE(same.equal, same.detail);
    const rl::GrowResult again = grow(graph, policy, steps, 4);
    CHECK(again.grown == grown.grown);
    CHECK(again.cost_ms == grown.cost_ms);  // the same code on the same graph: the same bits

    // A time limit already spent: no step, and the extraction of the seeded e-graph.
    rl::GraphEnv env(test::builtin(), model, {});
    const search::SearchOptions spent{.time_limit_seconds = 1e-9};
    const search::StopRules stop(spent);
    const rl::GrowResult none = rl::grow_egraph(env, graph, policy, model, {.kind = rl::PlanKind::grow}, stop);
    CHECK(none.grown.empty());
    CHECK(none.stopped == search::StopReason::time_limit);
    CHECK(none.stats.stop == search::SaturationStop::time_limit);
    CHECK(none.cost_ms <= model.graph_cost(graph) * (1 + 1e-9));

    // As the agents' plan: after a short rollout, never costlier than the rollout.
    rl::AgentSearchOptions options;
    options.env.step_limit = 20;
    options.search.budget = 6;
    const search::SearchResult rolled = rl::agent_search(graph, test::builtin(), model, policy, options);
    options.plan = {.kind = rl::PlanKind::grow, .max_children = 4, .grow_steps = steps};
    const search::SearchResult planned = rl::agent_search(graph, test::builtin(), model, policy, options);
    CHECK(planned.best_cost_ms <= rolled.best_cost_ms);
    CHECK(planned.best_cost_ms == doctest::Approx(model.graph_cost(planned.graph)).epsilon(1e-9));
}
