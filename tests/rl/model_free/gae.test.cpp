// GAE (rl/model_free/gae.hpp) against a hand computation.
#include "../small_graphs.hpp"

#include <rlflow/cost/analytic.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rl/model_free/gae.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace rlflow;
using Float = nn::backend::Eigen;
using rlflow::test::builtin;
using rlflow::test::two_branches;

TEST_CASE("GAE matches a hand computation, with a terminal step, a truncation and a bootstrapped end") {
    // Steps 0-1: an episode that terminates (NO-OP) at 1; step 2: one cut by the step
    // limit (bootstrapped from 5); step 3: a segment end that did not end (bootstrapped from 7).
    const std::vector<double> rewards{1, 2, 3, 4}, values{0.5, 1.5, 2.5, 3.5}, next{1.5, 99, 5, 7};
    const std::vector<std::uint8_t> terminated{0, 1, 0, 0}, truncated{0, 0, 1, 0};
    const double gamma = 0.9, lambda = 0.8;
    const rl::GaeResult g = rl::generalized_advantages({rewards, values, next, terminated, truncated}, gamma, lambda);
    const double d3 = 4 + gamma * 7 - 3.5;
    const double d2 = 3 + gamma * 5 - 2.5;
    const double d1 = 2 - 1.5;
    const double d0 = 1 + gamma * 1.5 - 0.5;
    const std::vector<double> expected{d0 + gamma * lambda * d1, d1, d2, d3};
    for (std::size_t t = 0; t < 4; ++t) {
        CHECK(g.advantages[t] == doctest::Approx(expected[t]).epsilon(1e-12));
        CHECK(g.returns[t] == doctest::Approx(expected[t] + values[t]).epsilon(1e-12));
    }
    CHECK_THROWS_AS((void)rl::generalized_advantages({rewards, values, next, terminated, {}}, gamma, lambda), precondition_error);
}
