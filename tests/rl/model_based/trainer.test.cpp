// The model-based trainer (rl/model_based/trainer.hpp) counts every real step, and its
// agent directory (rl/model_based/agent_file.hpp) gives back a policy
// (rl/model_based/policy.hpp) that acts identically.
#include "../small_graphs.hpp"
#include "../small_mb_options.hpp"

#include <rlflow/cost/analytic.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rl/agent_search.hpp>
#include <rlflow/rl/env/action_space.hpp>
#include <rlflow/rl/model_based/agent_file.hpp>
#include <rlflow/rl/model_based/policy.hpp>
#include <rlflow/rl/model_based/trainer.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <vector>

using namespace rlflow;
using Float = nn::backend::Eigen;
using rlflow::test::builtin;
using rlflow::test::conv_chain;
using rlflow::test::small_mb_options;
using rlflow::test::two_branches;
using Analytic = cost::AnalyticBackend;

TEST_CASE("model-based training counts every real step, and an agent directory round trip gives identical actions") {
    auto costs = cost::CostModel<Analytic>{Analytic::preset("cpu")};
    std::size_t measured = 0;
    const rl::GraphMeasure count = [&](const Graph& g) {
        ++measured;
        return costs.graph_cost(g);
    };
    const rl::MbOptions o = small_mb_options(5);
    rl::MbTrainer<Float, Analytic> trainer({two_branches(), conv_chain(3)}, builtin(), costs, o, 1, count);
    const std::size_t iterations = test::train_to_budget(trainer, o);
    CHECK(trainer.real_steps() == o.real_steps);
    CHECK(iterations == 2);  // 20 random steps and 10 by the controller, then 7 more
    std::size_t stored = 0, rewrites = 0;
    for (const rl::RealEpisode& e : trainer.buffer()) {
        stored += e.size();
        for (const rl::Action& a : e.actions) rewrites += a.xfer < builtin()->size() ? 1 : 0;
    }
    CHECK(stored == o.real_steps);
    // The measure runs at each reset (2 at construction, one per stored episode) and after each rewrite.
    CHECK(measured == 2 + trainer.buffer().size() + rewrites);

    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "rlflow_mb_agent_test";
    std::filesystem::remove_all(dir);
    rl::MbAgentState state;
    state.rules = rl::rule_names(*builtin());
    state.model = o.model;
    state.controller = o.controller;
    state.env = o.env;
    state.real_steps = trainer.real_steps();
    rl::save_mb_agent(dir, state, trainer.model(), trainer.controller());
    const rl::MbAgentState read = rl::read_mb_agent_state(dir);
    CHECK(read.model == o.model);
    CHECK(read.controller == o.controller);
    CHECK(read.real_steps == o.real_steps);
    rl::MbAgent<Float> loaded(read, dir);
    const auto max_locations = static_cast<std::uint32_t>(o.env.max_locations);
    rl::MbPolicy<Float> original(trainer.model(), trainer.controller(), max_locations);
    rl::AgentSearchOptions search;
    search.env = o.env;
    search.samples = 2;
    search.search.budget = 100;
    const search::SearchResult a = rl::agent_search(two_branches(), builtin(), costs, original, search);
    const search::SearchResult b = rl::agent_search(two_branches(), builtin(), costs, loaded.policy, search);
    CHECK(a.sequence == b.sequence);
    CHECK(a.expansions == b.expansions);
    CHECK(a.best_cost_ms == b.best_cost_ms);
    // A torn pair is refused.
    std::ofstream(dir / "weights.ckpt", std::ios::app) << "x";
    CHECK_THROWS_AS((void)rl::read_mb_agent_state(dir), checkpoint_error);
    std::filesystem::remove_all(dir);
}

TEST_CASE("a cut ends the model-based trainer's collections after the real step at which it first says so") {
    auto costs = cost::CostModel<Analytic>{Analytic::preset("cpu")};
    const rl::MbOptions o = small_mb_options(5);
    rl::MbTrainer<Float, Analytic> trainer({two_branches(), conv_chain(3)}, builtin(), costs, o, 1);
    std::size_t asked = 0;
    constexpr std::size_t cut_after = 7;  // of the 20 random steps
    trainer.set_cut([&] { return ++asked >= cut_after; });
    const rl::MbLog log = trainer.iterate();
    // The random collection stopped at its 7th step, and the controller's took one step
    // (each collection takes at least one) before the cut, asked again, said so at once.
    CHECK(log.real_steps == cut_after + 1);
    CHECK(trainer.real_steps() == cut_after + 1);
    std::size_t stored = 0;
    for (const rl::RealEpisode& e : trainer.buffer()) stored += e.size();
    CHECK(stored == cut_after + 1);
    CHECK_FALSE(trainer.done());
}
