// The model-free trainer (rl/model_free/trainer.hpp) and its agent directory
// (rl/model_free/agent_file.hpp): a round trip gives identical actions and a resumed
// trainer continues exactly; one thread and two compute the same; the entropy schedule.
#include "../parameter_gaps.hpp"
#include "../small_graphs.hpp"

#include <rlflow/cost/analytic.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rl/env/action_space.hpp>
#include <rlflow/rl/model_free/agent_file.hpp>
#include <rlflow/rl/model_free/trainer.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace rlflow;
using Float = nn::backend::Eigen;
using rlflow::test::builtin;
using rlflow::test::two_branches;

TEST_CASE("an agent directory round trip gives identical actions, and a resumed trainer continues exactly") {
    auto model = cost::CostModel<cost::AnalyticBackend>{cost::AnalyticBackend::preset("cpu")};
    rl::MfAgentState state;
    state.rules = rl::rule_names(*builtin());
    state.graphs = {"two branches"};
    state.ppo.rollout_steps = 16;
    state.ppo.minibatch_size = 8;
    state.env.step_limit = 3;
    state.seed = 9;
    state.policy.seed = 9;
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "rlflow-rl-agent-round-trip";
    std::filesystem::remove_all(dir);

    rl::MfTrainer<Float, cost::AnalyticBackend> trainer({two_branches()}, builtin(), model, state);
    (void)trainer.update();
    rl::save_mf_agent(dir, trainer.snapshot(), trainer.policy().parameters(), &trainer.adam());
    const rl::UpdateLog next = trainer.update();

    const rl::MfAgentState read = rl::read_mf_agent_state(dir);
    CHECK(read.updates == 1);
    CHECK(read.rules == state.rules);
    CHECK(read.ppo == state.ppo);
    CHECK(read.policy == state.policy);
    rl::MfTrainer<Float, cost::AnalyticBackend> resumed({two_branches()}, builtin(), model, read);
    rl::load_agent_weights(dir, resumed.policy().parameters(), &resumed.adam());

    // The same greedy and sampled actions, with bit-identical log-probabilities.
    rl::GraphEnv env(builtin(), model, state.env);
    const rl::Observation o = env.reset(two_branches());
    const rl::Observation* one[] = {&o};
    rl::ActorCritic<Float> loaded(static_cast<std::uint32_t>(builtin()->size()), static_cast<std::uint32_t>(state.env.max_locations),
                                  read.policy);
    rl::load_agent_weights(dir, loaded.parameters());
    for (const bool greedy : {true, false}) {
        Rng a(5), b(5);
        const rl::Decision saved_one = resumed.policy().act(one, a, greedy);
        const rl::Decision loaded_one = loaded.act(one, b, greedy);
        CHECK(saved_one.actions == loaded_one.actions);
        CHECK(saved_one.log_probs == loaded_one.log_probs);
    }
    // The resumed trainer's next update is the one the original made.
    const rl::UpdateLog again = resumed.update();
    CHECK(again.env_steps == next.env_steps);
    CHECK(again.stats.policy_loss == next.stats.policy_loss);
    CHECK(again.stats.value_loss == next.stats.value_loss);

    // An agent of the first format (no gain head) is refused by its version, not misread.
    const std::filesystem::path json = rl::agent_json_path(dir);
    std::string text;
    {
        std::ifstream in(json);
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    const std::string current = "\"version\": " + std::to_string(rl::agent_format(rl::AgentKind::model_free).version);
    const std::size_t at = text.find(current);
    REQUIRE(at != std::string::npos);
    text.replace(at, current.size(), "\"version\": 1");
    std::ofstream(json) << text;
    CHECK_THROWS_WITH_AS((void)rl::read_mf_agent_state(dir), doctest::Contains("agent format version 1, this rlflow reads 2"),
                         checkpoint_error);
    std::filesystem::remove_all(dir);
}

TEST_CASE("training computes the same on one thread and on two") {
    auto model = cost::CostModel<cost::AnalyticBackend>{cost::AnalyticBackend::preset("cpu")};
    rl::MfAgentState state;
    state.rules = rl::rule_names(*builtin());
    state.graphs = {"two branches"};
    state.ppo.rollout_steps = 24;
    state.ppo.minibatch_size = 8;
    state.ppo.environments_per_graph = 3;
    state.ppo.gradient_shards = 2;
    state.env.step_limit = 3;
    state.seed = 11;
    state.policy.seed = 11;
    rl::MfTrainer<Float, cost::AnalyticBackend> serial({two_branches()}, builtin(), model, state, 1);
    rl::MfTrainer<Float, cost::AnalyticBackend> parallel({two_branches()}, builtin(), model, state, 2);
    for (int update = 0; update < 3; ++update) {
        const rl::UpdateLog a = serial.update();
        const rl::UpdateLog b = parallel.update();
        CHECK(a.env_steps == 24 * (update + 1));
        CHECK(a.episodes == b.episodes);
        CHECK(a.stats.policy_loss == b.stats.policy_loss);
        CHECK(a.stats.value_loss == b.stats.value_loss);
        CHECK(a.stats.entropy == b.stats.entropy);
    }
    // Bit for bit: the same code computes every environment's steps and every shard.
    const auto pa = serial.policy().parameters(), pb = parallel.policy().parameters();
    for (std::size_t p = 0; p < pa.size(); ++p) CHECK_MESSAGE(pa[p]->value.to_host() == pb[p]->value.to_host(), pa[p]->name);
    CHECK(serial.snapshot().episode_actions == parallel.snapshot().episode_actions);
}

TEST_CASE("the entropy weight decays linearly over the planned updates, then stays") {
    rl::PpoOptions ppo;
    ppo.entropy_coefficient = 0.1;
    ppo.final_entropy_coefficient = 0.01;
    CHECK(rl::entropy_at(ppo, 0) == 0.1);
    CHECK(rl::entropy_at(ppo, rl::planned_updates / 2) == doctest::Approx(0.055).epsilon(1e-12));
    CHECK(rl::entropy_at(ppo, rl::planned_updates) == doctest::Approx(0.01).epsilon(1e-12));
    CHECK(rl::entropy_at(ppo, 10 * rl::planned_updates) == doctest::Approx(0.01).epsilon(1e-12));
    ppo.final_entropy_coefficient = ppo.entropy_coefficient;  // no decay
    CHECK(rl::entropy_at(ppo, 7) == 0.1);
}
