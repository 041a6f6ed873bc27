// The graph-rewriting environment (rl/env/env.hpp, rl/env/observation.hpp) and the action
// space (rl/env/action_space.hpp) on zoo graphs priced by the analytic cpu preset.
#include "../small_graphs.hpp"

#include <rlflow/cost/analytic.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/rewrite/builtin_rules.hpp>
#include <rlflow/rl/env/action_space.hpp>
#include <rlflow/rl/env/env.hpp>
#include <rlflow/rl/env/random_policy.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

using namespace rlflow;
using rlflow::test::analytic_cpu;
using rlflow::test::builtin;

TEST_CASE("an episode's rewards sum to the fraction of the input's cost it saved, times the scale") {
    auto model = analytic_cpu();
    rl::EnvOptions options;
    options.step_limit = 12;
    options.reward_scale = 100;
    for (const char* name : {"squeezenet1_1", "resnet18"}) {
        rl::GraphEnv env(builtin(), model, options);
        rl::Observation o = env.reset(models::build_zoo_model(name));
        const double initial = env.initial_cost_ms();
        CHECK(initial == doctest::Approx(model.graph_cost(env.graph())).epsilon(1e-12));
        Rng rng(7);
        double total = 0;
        std::size_t steps = 0;
        for (;;) {
            const rl::StepResult s = env.step(rl::random_action(o, rng));
            total += s.reward;
            ++steps;
            // The incrementally tracked cost is the graph's cost summed afresh (the same
            // prices, added in another order).
            CHECK(s.info.cost_ms == doctest::Approx(model.graph_cost(env.graph())).epsilon(1e-9));
            CHECK(s.info.graph_nodes == env.graph().num_nodes());
            if (s.terminated || s.truncated) break;
            o = s.observation;
        }
        CHECK(steps <= options.step_limit);
        CHECK(total == doctest::Approx((initial - env.cost_ms()) / initial * options.reward_scale).epsilon(1e-9));
    }
}

TEST_CASE("NO-OP terminates and changes nothing, the step limit truncates, and forbidden actions throw") {
    auto model = analytic_cpu();
    rl::EnvOptions options;
    options.step_limit = 2;
    rl::GraphEnv env(builtin(), model, options);
    const Graph input = models::build_zoo_model("squeezenet1_1");
    rl::Observation o = env.reset(input);
    const std::uint32_t noop = env.num_xfers();
    CHECK(o.xfer_mask.size() == noop + 1);
    CHECK(o.xfer_mask[noop] == 1);

    const rl::StepResult stop = env.step({noop, 0});
    CHECK(stop.terminated);
    CHECK_FALSE(stop.truncated);
    CHECK(stop.reward == 0);
    CHECK(stop.info.rule.empty());
    CHECK(canonical_hash(env.graph()) == canonical_hash(input));
    CHECK(env.done());
    CHECK_THROWS_AS((void)env.step({noop, 0}), precondition_error);

    o = env.reset(input);
    std::uint32_t applicable = noop;
    for (std::uint32_t r = 0; r < noop && applicable == noop; ++r)
        if (o.xfer_mask[r]) applicable = r;
    REQUIRE(applicable < noop);
    // Past the locations, past the xfers, and an xfer with no location: refused.
    CHECK_THROWS_AS((void)env.step({applicable, o.location_count(applicable)}), precondition_error);
    CHECK_THROWS_AS((void)env.step({noop + 1, 0}), precondition_error);
    for (std::uint32_t r = 0; r < noop; ++r)
        if (!o.xfer_mask[r]) {
            CHECK_THROWS_AS((void)env.step({r, 0}), precondition_error);
            break;
        }
    const rl::StepResult first = env.step({applicable, 0});
    CHECK_FALSE(first.terminated);
    CHECK_FALSE(first.truncated);
    CHECK(first.info.rule == env.rules()[applicable].name);
    Rng rng(1);
    const rl::StepResult second = env.step(rl::random_action(first.observation, rng));
    CHECK((second.truncated || second.terminated));
    CHECK(env.steps() == 2);
    CHECK_THROWS_AS((void)env.step({noop, 0}), precondition_error);
}

TEST_CASE("an observation holds the features with op costs, prefix masks, and the nodes each location matched") {
    auto model = analytic_cpu();
    rl::GraphEnv env(builtin(), model, {});
    const rl::Observation o = env.reset(models::build_zoo_model("resnet18"));
    const Graph& g = env.graph();
    CHECK(o.graph.sizes == rl::observation_feature_sizes);
    CHECK(o.graph.num_nodes == static_cast<std::int64_t>(g.num_nodes()));
    CHECK(o.graph.nodes.size() == static_cast<std::size_t>(o.graph.num_nodes * rl::observation_feature_sizes.node));
    CHECK(o.num_xfers == env.num_xfers());
    CHECK(o.max_locations == env.options().max_locations);

    std::vector<const Node*> rows;
    for (const Node& n : g.nodes()) rows.push_back(&n);
    const auto width = static_cast<std::size_t>(rl::observation_feature_sizes.node);
    // The cost column: 0 for sources and weights, positive for a convolution.
    bool conv_priced = false;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const double c = o.graph.nodes[i * width + width - 1];
        if (rows[i]->traits().has(op_flag_source)) CHECK(c == 0);
        if (rows[i]->op == OpKind::Conv2D && c > 0) conv_priced = true;
    }
    CHECK(conv_priced);

    std::size_t locations = 0;
    for (std::uint32_t r = 0; r < o.num_xfers; ++r) {
        const std::uint32_t count = o.location_count(r);
        CHECK(count <= o.max_locations);
        CHECK((o.xfer_mask[r] != 0) == (count > 0));
        const std::vector<std::uint8_t> mask = o.location_mask(r);
        for (std::uint32_t l = 0; l < o.max_locations; ++l) CHECK((mask[l] != 0) == (l < count));
        const rewrite::Rule& rule = env.rules()[r];
        for (std::uint32_t l = 0; l < count; ++l) {
            CHECK(o.allows(r, l));
            const std::span<const std::int32_t> nodes = o.location(r, l);
            REQUIRE(nodes.size() == rule.source.size());
            // Each matched row is a node of the op its source pattern node names.
            for (std::size_t k = 0; k < nodes.size(); ++k) {
                REQUIRE(nodes[k] >= 0);
                REQUIRE(static_cast<std::size_t>(nodes[k]) < rows.size());
                CHECK(rows[static_cast<std::size_t>(nodes[k])]->op == rule.source[k].op);
            }
            ++locations;
        }
        CHECK_FALSE(o.allows(r, count));
    }
    CHECK(locations > 0);
    CHECK(o.allows(o.num_xfers, 0));
}

TEST_CASE("the action space keeps the always-kept rules and only the others that match a training graph") {
    const rewrite::RuleSet all = rewrite::builtin_rules();
    const std::vector<Graph> graphs{models::build_zoo_model("squeezenet1_1")};
    const rewrite::RuleSet matching = rl::rules_matching(all, 0, graphs);
    CHECK(matching.size() > 0);
    CHECK(matching.size() < all.size());
    const auto shared = std::make_shared<const rewrite::RuleSet>(matching);
    rewrite::LocationIndex index(shared);
    index.rebuild(graphs.front());
    for (std::size_t r = 0; r < matching.size(); ++r) CHECK_FALSE(index.locations(r).empty());
    // Order is kept, and the first `always` rules stay whether or not they match.
    const rewrite::RuleSet kept = rl::rules_matching(all, 3, graphs);
    for (std::size_t r = 0; r < 3; ++r) CHECK(kept[r].name == all[r].name);
    const std::vector<std::string> names = rl::rule_names(kept);
    CHECK(names.size() == kept.size());
    for (std::size_t r = 1; r < names.size(); ++r) CHECK(*all.find(names[r - 1]) < *all.find(names[r]));
}

TEST_CASE("a graph measure in place of the per-op sum sets the rewards, and NO-OP measures nothing") {
    auto model = analytic_cpu();
    rl::EnvOptions options;
    options.step_limit = 8;
    rl::GraphEnv env(builtin(), model, options);
    // A stand-in for ORT's end-to-end latency: a cost per live node, so every rewrite that
    // removes nodes pays, whatever the per-op prices say.
    std::size_t calls = 0;
    env.measure_with([&calls](const Graph& g) {
        ++calls;
        return 0.5 * static_cast<double>(g.num_nodes());
    });
    rl::Observation o = env.reset(models::build_zoo_model("squeezenet1_1"));
    CHECK(calls == 1);
    CHECK(env.initial_cost_ms() == 0.5 * static_cast<double>(env.graph().num_nodes()));
    Rng rng(3);
    double total = 0;
    for (std::size_t step = 0; step < 3; ++step) {
        rl::Action a = rl::random_action(o, rng);
        if (a.xfer == o.num_xfers) a = {0, 0};  // keep rewriting: the NO-OP comes last
        if (o.location_count(a.xfer) == 0) break;
        const rl::StepResult s = env.step(a);
        total += s.reward;
        CHECK(s.info.cost_ms == 0.5 * static_cast<double>(env.graph().num_nodes()));
        // Observations keep the cost model's per-op costs.
        CHECK(model.graph_cost(env.graph()) > 0);
        if (s.terminated || s.truncated) break;
        o = s.observation;
    }
    const std::size_t before = calls;
    const double cost = env.cost_ms();
    const rl::StepResult stop = env.step({o.num_xfers, 0});
    CHECK(stop.terminated);
    CHECK(stop.reward == 0);
    CHECK(calls == before);
    CHECK(env.cost_ms() == cost);
    CHECK(total == doctest::Approx((env.initial_cost_ms() - cost) / env.initial_cost_ms() * options.reward_scale).epsilon(1e-9));
}

TEST_CASE("each location's one-step gain is the reward its rewrite earns, scaled to the current cost") {
    auto model = analytic_cpu();
    rl::GraphEnv env(builtin(), model, {});
    rl::Observation o = env.reset(models::build_zoo_model("squeezenet1_1"));
    Rng rng(5);
    // The gains are floats: equal to the double rewards within float rounding.
    const double float_tolerance = 1e-5;
    for (int step = 0; step < 3; ++step) {
        const double now = env.cost_ms();
        std::size_t checked = 0;
        bool some_positive = false;
        for (std::uint32_t x = 0; x < o.num_xfers; ++x)
            for (std::uint32_t l = 0; l < o.location_count(x); ++l) {
                auto child = env;
                const rl::StepResult s = child.step({x, l});
                const double expected = s.reward * env.initial_cost_ms() / now;
                CHECK(o.gain(x, l) == doctest::Approx(expected).epsilon(float_tolerance).scale(1.0));
                some_positive = some_positive || o.gain(x, l) > 0;
                ++checked;
            }
        CHECK(checked == o.location_gain.size());
        CHECK(some_positive);
        // Probing left the environment as it was: the next step's cost is the graph's.
        const rl::StepResult s = env.step(rl::random_action(o, rng));
        CHECK(s.info.cost_ms == doctest::Approx(model.graph_cost(env.graph())).epsilon(1e-9));
        REQUIRE_FALSE(s.terminated);
        o = s.observation;
    }
    // Off, the gains are zeros of the same count, and nothing else changes.
    rl::GraphEnv plain(builtin(), model, {.one_step_gains = false});
    const rl::Observation p = plain.reset(models::build_zoo_model("squeezenet1_1"));
    const rl::Observation q = rl::GraphEnv(builtin(), model, {}).reset(models::build_zoo_model("squeezenet1_1"));
    CHECK(p.location_gain == std::vector<float>(q.location_gain.size(), 0.0f));
    CHECK(p.location_nodes == q.location_nodes);
    CHECK(p.graph.nodes == q.graph.nodes);
}

TEST_CASE("an observation kept step by step equals the observation of the same graph built afresh") {
    auto model = analytic_cpu();
    rl::GraphEnv env(builtin(), model, {});
    rl::Observation o = env.reset(models::build_zoo_model("inception_v3"));
    Rng rng(9);
    for (int step = 0; step < 12 && !env.done(); ++step) {
        const rl::Action a = rl::random_action(o, rng);
        if (a.xfer == o.num_xfers) break;  // nothing left to rewrite
        o = env.step(a).observation;
        rl::GraphEnv fresh(builtin(), model, {});
        const rl::Observation f = fresh.reset(env.graph());
        // The same code describes each node, once or again: the same bits.
        CHECK(o.graph.nodes == f.graph.nodes);
        CHECK(o.graph.edges == f.graph.edges);
        CHECK(o.graph.globals == f.graph.globals);
        CHECK(o.graph.senders == f.graph.senders);
        CHECK(o.graph.receivers == f.graph.receivers);
        CHECK(o.xfer_mask == f.xfer_mask);
        // The gains from the kept prices are those probed afresh, up to the rounding of
        // the running cost total the probes read.
        REQUIRE(o.location_gain.size() == f.location_gain.size());
        for (std::size_t i = 0; i < o.location_gain.size(); ++i) {
            CAPTURE(i);
            CHECK(o.location_gain[i] == doctest::Approx(f.location_gain[i]).epsilon(1e-4).scale(1e-3));
        }
    }
}

TEST_CASE("undo steps back to the graph, cost, step count and observation before the step") {
    auto model = analytic_cpu();
    rl::GraphEnv env(builtin(), model, {});
    env.keep_steps(true);
    std::vector<rl::Observation> seen{env.reset(models::build_zoo_model("inception_v3"))};
    std::vector<double> costs{env.cost_ms()};
    Rng rng(11);
    while (seen.size() < 9) {
        const rl::Action a = rl::random_action(seen.back(), rng);
        if (a.xfer == seen.back().num_xfers) break;
        seen.push_back(env.step(a).observation);
        costs.push_back(env.cost_ms());
    }
    REQUIRE(seen.size() > 3);
    CHECK(env.step({env.num_xfers(), 0}).terminated);  // NO-OP is kept and stepped back over too
    CHECK(env.done());
    env.undo();
    CHECK_FALSE(env.done());
    for (std::size_t k = seen.size() - 1; k-- > 0;) {
        CAPTURE(k);
        env.undo();
        const rl::Observation o = env.observe();
        CHECK(env.steps() == k);
        CHECK(env.cost_ms() == costs[k]);
        // The graph's cost summed afresh, up to the order of the tracker's running sum.
        CHECK(model.graph_cost(env.graph()) == doctest::Approx(costs[k]).epsilon(1e-9));
        CHECK(o.graph.nodes == seen[k].graph.nodes);
        CHECK(o.graph.senders == seen[k].graph.senders);
        CHECK(o.graph.receivers == seen[k].graph.receivers);
        CHECK(o.xfer_mask == seen[k].xfer_mask);
        CHECK(o.location_nodes == seen[k].location_nodes);
        REQUIRE(o.location_gain.size() == seen[k].location_gain.size());
        for (std::size_t i = 0; i < o.location_gain.size(); ++i)
            CHECK(o.location_gain[i] == doctest::Approx(seen[k].location_gain[i]).epsilon(1e-4).scale(1e-3));
    }
    CHECK_THROWS_AS(env.undo(), precondition_error);  // nothing left to step back over
    env.keep_steps(false);
    (void)env.step(rl::random_action(seen.front(), rng));
    CHECK_THROWS_AS(env.undo(), precondition_error);  // steps are not kept
}

TEST_CASE("redo takes known steps again: the same graph, cost and observation as stepping there") {
    auto model = analytic_cpu();
    rl::GraphEnv env(builtin(), model, {});
    env.keep_steps(true);
    rl::Observation o = env.reset(models::build_zoo_model("inception_v3"));
    struct Taken {
        std::uint32_t xfer;
        rewrite::Location where;
        double cost_after;
    };
    std::vector<Taken> taken;
    Rng rng(13);
    while (taken.size() < 8) {
        const rl::Action a = rl::random_action(o, rng);
        if (a.xfer == o.num_xfers) break;
        const rewrite::Location where = env.location(a);
        o = env.step(a).observation;
        taken.push_back({a.xfer, where, env.cost_ms()});
    }
    REQUIRE(taken.size() > 3);
    for (std::size_t k = 0; k < taken.size(); ++k) env.undo();
    CHECK(env.steps() == 0);
    for (const Taken& t : taken) env.redo(t.xfer, t.where, t.cost_after);
    CHECK(env.steps() == taken.size());
    CHECK(env.cost_ms() == taken.back().cost_after);
    const rl::Observation again = env.observe();
    CHECK(again.graph.nodes == o.graph.nodes);
    CHECK(again.graph.senders == o.graph.senders);
    CHECK(again.xfer_mask == o.xfer_mask);
    CHECK(again.location_nodes == o.location_nodes);
    REQUIRE(again.location_gain.size() == o.location_gain.size());
    for (std::size_t i = 0; i < o.location_gain.size(); ++i)
        CHECK(again.location_gain[i] == doctest::Approx(o.location_gain[i]).epsilon(1e-4).scale(1e-3));
    // And the episode goes on from there: a step at a location named by where it is.
    const rl::Action next = rl::random_action(again, rng);
    if (next.xfer < again.num_xfers) {
        const rl::StepResult s = env.step_at(next.xfer, env.location(next));
        CHECK(s.info.cost_ms == doctest::Approx(model.graph_cost(env.graph())).epsilon(1e-9));
    }
}
