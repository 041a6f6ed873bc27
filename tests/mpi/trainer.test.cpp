// The model-free trainer over the ranks mpiexec started: each rank steps its share of the
// environments, and the run equals a single process's, up to how gradient sums round.
// Every rank also runs the single-process trainer, to compare with.

#include <doctest/doctest.h>

#include <rlflow/core/mpi_communicator.hpp>
#include <rlflow/cost/analytic.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rl/env/action_space.hpp>
#include <rlflow/rl/model_free/agent_file.hpp>
#include <rlflow/rl/model_free/trainer.hpp>

#include "../rl/parameter_gaps.hpp"
#include "../rl/small_graphs.hpp"

#include <filesystem>
#include <string>
#include <vector>

using namespace rlflow;
using Float = nn::backend::Eigen;
using Trainer = rl::MfTrainer<Float, cost::AnalyticBackend>;

namespace {

/// Two small graphs, with as many environments each as ranks: each rank steps one of each
/// (every K-th environment), and the run's segments interleave the ranks'.
std::vector<Graph> two_graphs() { return {test::two_branches(), test::conv_chain(3)}; }

rl::MfAgentState small_run(int ranks) {
    rl::MfAgentState state;
    state.rules = rl::rule_names(*test::builtin());
    state.graphs = {"two branches", "conv chain"};
    state.ppo.rollout_steps = 32;
    state.ppo.minibatch_size = 8;
    state.ppo.environments_per_graph = static_cast<std::size_t>(ranks);
    state.env.step_limit = 3;
    state.seed = 9;
    state.policy.seed = 9;
    return state;
}

/// The two trainers' updates from `before` agree within 1% of the update's length
/// (Float32 gradient sums grouped otherwise, through Adam: test::relative_update_gap).
void check_same_update(Trainer& a, Trainer& b, const std::vector<std::vector<float>>& before) {
    const double gap = test::relative_update_gap(a.policy().parameters(), b.policy().parameters(), before);
    MESSAGE("relative update gap ", gap);
    CHECK(gap <= 1e-2);
}

}  // namespace

TEST_CASE("a trainer over the ranks collects the single-process rollout and makes its update") {
    MpiCommunicator mpi;
    auto model = cost::CostModel<cost::AnalyticBackend>{cost::AnalyticBackend::preset("cpu")};
    const rl::MfAgentState state = small_run(mpi.size());
    Trainer alone(two_graphs(), test::builtin(), model, state);
    Trainer spread(two_graphs(), test::builtin(), model, state, 1, {}, AnyCommunicator(mpi));
    spread.synchronise();
    CHECK(spread.local_environments() == 2);
    CHECK(spread.environments() == 2 * static_cast<std::size_t>(mpi.size()));

    const auto before = test::values_of(alone.policy().parameters());
    const rl::UpdateLog a = alone.update();
    const rl::UpdateLog b = spread.update();
    // The same rollout: the steps' seeds come from the run's generator on every rank.
    CHECK(b.env_steps == a.env_steps);
    CHECK(b.episodes_ended == a.episodes_ended);
    REQUIRE(a.episodes_ended > 0);
    CHECK(b.mean_return == doctest::Approx(a.mean_return).epsilon(1e-12));
    CHECK(b.stats.gradient_steps == a.stats.gradient_steps);
    CHECK(b.stats.policy_loss == doctest::Approx(a.stats.policy_loss).epsilon(1e-4));
    check_same_update(alone, spread, before);
    // Every rank's snapshot is the whole run's.
    const rl::MfAgentState sa = alone.snapshot(), sb = spread.snapshot();
    CHECK(sb.episode_actions == sa.episode_actions);
    CHECK(sb.episode_returns == sa.episode_returns);
    CHECK(sb.rng == sa.rng);
}

TEST_CASE("a checkpoint of a single-process run resumes over the ranks and continues it") {
    MpiCommunicator mpi;
    auto model = cost::CostModel<cost::AnalyticBackend>{cost::AnalyticBackend::preset("cpu")};
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "rlflow-mpi-resume";
    Trainer alone(two_graphs(), test::builtin(), model, small_run(mpi.size()));
    (void)alone.update();
    const rl::MfAgentState saved = alone.snapshot();
    if (mpi.rank() == 0) {
        std::filesystem::remove_all(dir);
        rl::save_mf_agent(dir, saved, alone.policy().parameters(), &alone.adam());
    }
    mpi.barrier();

    // Only rank 0 reads the weights; synchronise() gives them, and Adam's state, to all.
    Trainer resumed(two_graphs(), test::builtin(), model, rl::read_mf_agent_state(dir), 1, {}, AnyCommunicator(mpi));
    if (mpi.rank() == 0) rl::load_agent_weights(dir, resumed.policy().parameters(), &resumed.adam());
    resumed.synchronise();
    CHECK(resumed.adam().steps() == alone.adam().steps());
    const auto before = test::values_of(alone.policy().parameters());
    CHECK(test::largest_gap(alone.policy().parameters(), resumed.policy().parameters(), test::Field::value) == 0);

    const rl::UpdateLog a = alone.update();
    const rl::UpdateLog b = resumed.update();
    CHECK(b.update == 2);
    CHECK(b.env_steps == a.env_steps);
    CHECK(b.episodes == a.episodes);
    check_same_update(alone, resumed, before);
    mpi.barrier();
    if (mpi.rank() == 0) std::filesystem::remove_all(dir);
}

TEST_CASE("fewer environments than ranks are refused by name") {
    MpiCommunicator mpi;
    if (mpi.size() == 1) {
        MESSAGE("skipped: one rank always has an environment");
        return;
    }
    auto model = cost::CostModel<cost::AnalyticBackend>{cost::AnalyticBackend::preset("cpu")};
    rl::MfAgentState state = small_run(mpi.size());
    state.graphs = {"two branches"};
    state.ppo.environments_per_graph = static_cast<std::size_t>(mpi.size()) - 1;
    CHECK_THROWS_WITH_AS(Trainer({test::two_branches()}, test::builtin(), model, state, 1, {}, AnyCommunicator(mpi)),
                         doctest::Contains("every rank needs one at least"), precondition_error);
}
