// The model-based trainer over the ranks mpiexec started: the real steps, M's windows and
// the dream's rows are shared out, and the ranks' networks stay equal.

#include <doctest/doctest.h>

#include <rlflow/core/mpi_communicator.hpp>
#include <rlflow/cost/analytic.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rl/model_based/trainer.hpp>

#include "../rl/parameter_gaps.hpp"
#include "../rl/small_graphs.hpp"
#include "../rl/small_mb_options.hpp"

#include <cmath>
#include <vector>

using namespace rlflow;
using Float = nn::backend::Eigen;
using Analytic = cost::AnalyticBackend;
using MbTrainer = rl::MbTrainer<Float, Analytic>;

namespace {

/// A small run, as the single-process world-model tests train.
rl::MbOptions small_mb_run() { return test::small_mb_options(5); }

/// The largest gap between this rank's parameters and rank 0's, over the ranks.
template <class Params>
double gap_to_rank_zero(MpiCommunicator& mpi, const Params& params) {
    std::vector<std::vector<float>> mine = test::values_of(params);
    double gap = 0;
    for (std::vector<float>& values : mine) {
        std::vector<float> root = values;
        mpi.broadcast(std::span<float>(root), 0);
        for (std::size_t i = 0; i < values.size(); ++i) gap = std::max(gap, static_cast<double>(std::abs(values[i] - root[i])));
    }
    std::array<double, 1> largest{gap};
    mpi.all_reduce_sum(std::span<double>(largest));
    return largest[0];
}

}  // namespace

TEST_CASE("a model-based trainer over the ranks counts every rank's real steps and keeps the ranks' networks equal") {
    MpiCommunicator mpi;
    auto costs = cost::CostModel<Analytic>{Analytic::preset("cpu")};
    const rl::MbOptions o = small_mb_run();
    MbTrainer trainer({test::two_branches(), test::conv_chain(3)}, test::builtin(), costs, o, 1, {}, AnyCommunicator(mpi));
    trainer.synchronise();
    const std::size_t iterations = test::train_to_budget(trainer, o);
    // The budget over all ranks, as one process spends it: 20 random steps and 10 by the
    // controller, then 7 more.
    CHECK(trainer.real_steps() == o.real_steps);
    CHECK(iterations == 2);
    std::size_t stored = 0;
    for (const rl::RealEpisode& e : trainer.buffer()) stored += e.size();
    std::array<double, 1> all_stored{static_cast<double>(stored)};
    mpi.all_reduce_sum(std::span<double>(all_stored));
    CHECK(all_stored[0] == static_cast<double>(o.real_steps));
    CHECK(stored < o.real_steps);  // each rank holds its share only
    // Every step applied the same averaged gradients on every rank.
    CHECK(gap_to_rank_zero(mpi, trainer.model().parameters()) <= 1e-6);
    CHECK(gap_to_rank_zero(mpi, trainer.controller().parameters()) <= 1e-6);
}

TEST_CASE("a model-based trainer with fewer of M's windows than ranks is refused by name") {
    MpiCommunicator mpi;
    if (mpi.size() == 1) {
        MESSAGE("skipped: one rank always has a window");
        return;
    }
    auto costs = cost::CostModel<Analytic>{Analytic::preset("cpu")};
    rl::MbOptions o = small_mb_run();
    o.windows = static_cast<std::size_t>(mpi.size()) - 1;
    CHECK_THROWS_WITH_AS(MbTrainer({test::two_branches()}, test::builtin(), costs, o, 1, {}, AnyCommunicator(mpi)),
                         doctest::Contains("needs as many of M's windows"), precondition_error);
}
