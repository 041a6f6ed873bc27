// The controller (rl/model_based/controller.hpp): untrained, it is greedy: the largest gain
// first, NO-OP when nothing earns, and its logits rise with gains.
#include "../small_graphs.hpp"
#include "../small_mb_options.hpp"

#include <rlflow/cost/analytic.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rl/env/observation.hpp>
#include <rlflow/rl/model_based/controller.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace rlflow;
using Float = nn::backend::Eigen;
using rlflow::test::builtin;
using rlflow::test::conv_chain;
using rlflow::test::small_mb_options;
using rlflow::test::two_branches;
using Analytic = cost::AnalyticBackend;

TEST_CASE("the untrained controller is greedy: the largest gain first, NO-OP when nothing earns, and logits rise with gains") {
    const std::uint32_t xfers = 5;
    const std::int64_t latent = 4, hidden = 32;
    const rl::Controller<Float> controller(xfers, latent, hidden, rl::ControllerOptions{.seed = 9});
    CHECK(controller.gain_slope() == doctest::Approx(rl::ControllerOptions{}.gain_prior).epsilon(1e-5));
    rl::FrozenController frozen(controller);
    Rng rng(4);
    nn::HostMatrix zh(1, latent + hidden), gains(1, xfers), logits;
    const std::vector<std::uint8_t> all(xfers + 1, 1);
    const auto pick = [&](const std::vector<float>& g) {
        for (std::uint32_t x = 0; x < xfers; ++x) gains(0, x) = g[x];
        frozen.logits(zh, gains, logits);
        return rl::choose_masked(std::span<const float>(logits.data(), xfers + 1), all, rng, true).action;
    };
    for (int draw = 0; draw < 20; ++draw) {
        for (std::int64_t d = 0; d < zh.cols(); ++d) zh(0, d) = static_cast<float>(2 * rng.uniform() - 1);
        CHECK(pick({0.5f, -1.0f, 2.0f, 1.2f, 0.0f}) == 2);
        CHECK(pick({-0.5f, -1.0f, -2.0f, -0.3f, -4.0f}) == xfers);  // NO-OP
        // All else equal, a larger gain never lowers an xfer's logit.
        std::vector<float> g{0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
        (void)pick(g);
        const float before = logits(0, 1);
        g[1] += 0.25f;
        (void)pick(g);
        CHECK(logits(0, 1) > before);
    }
}
