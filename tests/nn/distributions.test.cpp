// MaskedCategorical: log-probabilities and entropy against hand computations and finite
// differences, the single-valid-action edge case (exact zeros, finite gradients), and
// masked actions never chosen by sample or argmax.
#include "gradient_check.hpp"

#include <rlflow/nn/distributions.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

using namespace nn_test;
namespace nn = rlflow::nn;

namespace {

using Mask = std::vector<std::uint8_t>;

/// -Σ p log p of softmax(logits) over the entries where `valid`.
double masked_entropy(const std::vector<double>& logits, const Mask& valid) {
    double total = 0;
    for (std::size_t a = 0; a < logits.size(); ++a)
        if (valid[a] != 0) total += std::exp(logits[a]);
    double h = 0;
    for (std::size_t a = 0; a < logits.size(); ++a)
        if (valid[a] != 0) {
            const double p = std::exp(logits[a]) / total;
            h -= p * std::log(p);
        }
    return h;
}

}  // namespace

TEST_CASE("masked categorical log-probabilities and entropy equal hand computations over valid actions") {
    nn::Tape<Double> tape;
    const std::vector<double> logits{1, 2, 3, 4, 0.5, -1, 0, 2};
    const Mask mask{1, 0, 1, 1, 0, 1, 1, 1};
    const nn::MaskedCategorical<Double> pi(tape.constant(T::from_host(Shape{2, 4}, logits)), mask);
    const std::vector<std::int32_t> chosen{2, 3};
    const auto log_prob = pi.log_prob(chosen).value().to_host();
    REQUIRE(log_prob.size() == 2);
    CHECK(log_prob[0] == doctest::Approx(3 - std::log(std::exp(1) + std::exp(3) + std::exp(4))));
    CHECK(log_prob[1] == doctest::Approx(2 - std::log(std::exp(-1) + std::exp(0) + std::exp(2))));
    const auto entropy = pi.entropy().value().to_host();
    CHECK(entropy[0] == doctest::Approx(masked_entropy({1, 2, 3, 4}, {1, 0, 1, 1})));
    CHECK(entropy[1] == doctest::Approx(masked_entropy({0.5, -1, 0, 2}, {0, 1, 1, 1})));
    // Masked actions have probability exactly 0.
    const auto all = pi.log_probabilities().value().to_host();
    CHECK(std::exp(all[1]) == 0);
    CHECK(std::exp(all[4]) == 0);
}

TEST_CASE("masked categorical log_prob and entropy have exact gradients with respect to the logits") {
    // Row 0 has one valid action, row 2 has every action valid.
    const Mask mask{0, 0, 1, 0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1};
    const std::vector<std::int32_t> chosen{2, 1, 4};
    const Function log_prob = [&](nn::Tape<Double>&, const std::vector<V>& p) {
        return nn::MaskedCategorical<Double>(p[0], mask).log_prob(chosen);
    };
    const Function entropy = [&](nn::Tape<Double>&, const std::vector<V>& p) {
        return nn::MaskedCategorical<Double>(p[0], mask).entropy();
    };
    Rng rng(9);
    CHECK(check_gradients(log_prob, random_parameters({{3, 5}}, rng, -2, 2), {3}) < 1e-6);
    CHECK(check_gradients(entropy, random_parameters({{3, 5}}, rng, -2, 2), {3}) < 1e-6);
}

TEST_CASE("masked categorical with one valid action: log_prob 0, entropy 0, finite gradients, always chosen") {
    using Float = nn::backend::Eigen;
    nn::Tape<Float> tape;
    // The masked logits are the largest, and large.
    nn::Parameter<Float> logits("logits", nn::Tensor<Float>::from_host(Shape{1, 4}, {1e6f, -3.0f, 1e6f, 50.0f}));
    const nn::MaskedCategorical<Float> pi(tape.parameter(logits), Mask{0, 1, 0, 0});
    const std::vector<std::int32_t> only{1};
    const auto log_prob = pi.log_prob(only);
    const auto entropy = pi.entropy();
    CHECK(log_prob.value().item() == 0.0f);
    CHECK(entropy.value().item() == 0.0f);
    tape.backward(nn::add(nn::sum(log_prob), nn::sum(entropy)));
    for (const float g : logits.grad.to_host()) CHECK(g == 0.0f);  // finite, and the loss is constant
    Rng rng(3);
    for (int draw = 0; draw < 1000; ++draw) REQUIRE(pi.sample(rng) == only);
    CHECK(pi.argmax() == only);
}

TEST_CASE("masked categorical never samples a masked action and samples valid ones by their probability") {
    constexpr int draws = 20000;
    nn::Tape<Double> tape;
    // Masked entries carry the largest logits.
    const std::vector<double> logits{5, 0, 8, std::log(3.0), 9, 0};
    const Mask mask{0, 1, 0, 1, 0, 1};
    const nn::MaskedCategorical<Double> pi(tape.constant(T::from_host(Shape{1, 6}, logits)), mask);
    std::vector<int> counts(6, 0);
    Rng rng(4);
    for (int i = 0; i < draws; ++i) ++counts[static_cast<std::size_t>(pi.sample(rng)[0])];
    CHECK(counts[0] == 0);
    CHECK(counts[2] == 0);
    CHECK(counts[4] == 0);
    // Valid probabilities 1/5, 3/5, 1/5.
    CHECK(counts[1] / double(draws) == doctest::Approx(0.2).epsilon(0.05));
    CHECK(counts[3] / double(draws) == doctest::Approx(0.6).epsilon(0.05));
    CHECK(counts[5] / double(draws) == doctest::Approx(0.2).epsilon(0.05));
}

TEST_CASE("masked categorical argmax ignores masked entries even when their logits are the largest") {
    nn::Tape<Double> tape;
    const nn::MaskedCategorical<Double> pi(tape.constant(T::from_host(Shape{3, 3}, {9, 1, 2, 0, 7, -1, -5, -4, 100})),
                                           Mask{0, 1, 1, 1, 0, 1, 1, 1, 0});
    CHECK(pi.argmax() == std::vector<std::int32_t>{2, 0, 1});
}

TEST_CASE("masked categorical rejects a row without valid actions, a wrong mask size and a masked choice") {
    nn::Tape<Double> tape;
    const V logits = tape.constant(T(Shape{2, 3}));
    CHECK_THROWS_WITH_AS(nn::MaskedCategorical<Double>(logits, Mask{1, 0, 0, 0, 0, 0}),
                         "[rlflow.precondition_error] masked categorical: row 1 has no valid action", precondition_error);
    CHECK_THROWS_WITH_AS(nn::MaskedCategorical<Double>(logits, Mask{1, 1, 1}),
                         "[rlflow.shape_error] masked categorical: 3 mask entries for logits (2,3)", shape_error);
    const nn::MaskedCategorical<Double> pi(logits, Mask{1, 0, 1, 0, 1, 1});
    CHECK_THROWS_WITH_AS((void)pi.log_prob(std::vector<std::int32_t>{1, 1}),
                         "[rlflow.precondition_error] masked categorical: row 0 chose action 1, which is out of range or masked",
                         precondition_error);
}
