// The actor-critic (rl/model_free/policy.hpp): masks, log-probabilities recomputed as
// stored, gradients reaching the encoder, and the NO-OP prior.
#include "../small_graphs.hpp"

#include <rlflow/cost/analytic.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rl/env/env.hpp>
#include <rlflow/rl/model_free/policy.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace rlflow;
using Float = nn::backend::Eigen;
using rlflow::test::builtin;
using rlflow::test::two_branches;

TEST_CASE("the actor-critic acts within the masks, recomputes the log-probabilities it acted with, and trains its encoder") {
    auto model = cost::CostModel<cost::AnalyticBackend>{cost::AnalyticBackend::preset("cpu")};
    rl::GraphEnv env(builtin(), model, {});
    const rl::Observation o = env.reset(two_branches());
    rl::ActorCritic<Float> policy(env.num_xfers(), static_cast<std::uint32_t>(env.options().max_locations), {.seed = 5});
    Rng rng(1);
    std::vector<const rl::Observation*> batch(16, &o);
    const rl::Decision d = policy.act(batch, rng);
    std::vector<rl::Action> actions = d.actions;
    bool some_rewrite = false;
    for (const rl::Action& a : actions) {
        CHECK(o.allows(a.xfer, a.location));
        some_rewrite = some_rewrite || a.xfer != o.num_xfers;
    }
    CHECK(some_rewrite);
    nn::Tape<Float> tape;
    rl::PolicyPass<Float> pass = policy.evaluate(tape, batch, actions);
    const std::vector<float> recomputed = pass.log_prob.value().to_host();
    const std::vector<float> values = pass.value.value().to_host();
    for (std::size_t i = 0; i < actions.size(); ++i) {
        // One observation acted on alone or in a batch of 16 runs through different matrix
        // sizes: equal within float rounding.
        CHECK(recomputed[i] == doctest::Approx(d.log_probs[i]).epsilon(1e-4));
        CHECK(values[i] == doctest::Approx(d.values[i]).epsilon(1e-4));
        CHECK(recomputed[i] <= 0);
    }
    for (nn::Parameter<Float>* p : policy.parameters()) p->zero_grad();
    tape.backward(nn::add(nn::sum(pass.log_prob), nn::add(nn::sum(pass.value), nn::sum(pass.entropy))));
    for (nn::Parameter<Float>* p : policy.encoder_parameters()) {
        const std::vector<float> g = p->grad.to_host();
        const bool nonzero = std::any_of(g.begin(), g.end(), [](float x) { return x != 0; });
        CHECK_MESSAGE(nonzero, p->name);
    }
}

TEST_CASE("a new policy's NO-OP starts at its prior logit, so early episodes run long") {
    auto model = cost::CostModel<cost::AnalyticBackend>{cost::AnalyticBackend::preset("cpu")};
    rl::GraphEnv env(builtin(), model, {});
    const rl::Observation o = env.reset(two_branches());
    std::uint32_t valid = 0;
    for (std::uint32_t x = 0; x < o.num_xfers; ++x) valid += o.allows(x, 0) ? 1 : 0;
    REQUIRE(valid >= 2);
    const std::vector<const rl::Observation*> one{&o};
    const std::vector<rl::Action> no_op{{o.num_xfers, 0}};
    const auto no_op_probability = [&](double noop_logit) {
        rl::ActorCritic<Float> policy(env.num_xfers(), static_cast<std::uint32_t>(env.options().max_locations),
                                      {.seed = 5, .noop_logit = noop_logit});
        nn::Tape<Float> tape;
        return std::exp(static_cast<double>(policy.evaluate(tape, one, no_op).log_prob.value().item()));
    };
    // The other logits start near 0 (gain 0.01), so NO-OP's probability is about
    // e^z / (valid + e^z); 0.05 of relative slack covers the small initial logits.
    const double tolerance = 0.05;
    const double uniform = no_op_probability(0.0);
    CHECK(uniform == doctest::Approx(1.0 / (valid + 1)).epsilon(tolerance));
    const double prior = rl::PolicyOptions{}.noop_logit;
    const double expected = std::exp(prior) / (valid + std::exp(prior));
    CHECK(no_op_probability(prior) == doctest::Approx(expected).epsilon(tolerance));
    CHECK(no_op_probability(prior) < 0.01);
}
