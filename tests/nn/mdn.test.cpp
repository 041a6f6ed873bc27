// MdnHead: the mixture NLL against a hand computation and finite differences, its
// stability far from every component, recovery of a known two-mode mixture by plain SGD,
// and temperature-controlled sampling.
#include "gradient_check.hpp"

#include <rlflow/nn/mdn.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

using namespace nn_test;
namespace nn = rlflow::nn;

namespace {

/// Mixture parameters held as constants, each (batch, dims, K).
nn::MdnParams<Double> constant_params(nn::Tape<Double>& tape, const Shape& shape, const std::vector<double>& logits,
                                      const std::vector<double>& means, const std::vector<double>& log_stddevs) {
    return {tape.constant(T::from_host(shape, logits)), tape.constant(T::from_host(shape, means)),
            tape.constant(T::from_host(shape, log_stddevs))};
}

double normal_density(double y, double mean, double stddev) {
    const double z = (y - mean) / stddev;
    return std::exp(-0.5 * z * z) / (stddev * std::sqrt(2 * std::numbers::pi));
}

}  // namespace

TEST_CASE("mdn negative log-likelihood of a two-component mixture equals the hand computation") {
    nn::Tape<Double> tape;
    // pi = (0.25, 0.75), mu = (-1, 2), sigma = (1, 2), y = 0.5.
    const auto params = constant_params(tape, {1, 1, 2}, {0, std::log(3.0)}, {-1, 2}, {0, std::log(2.0)});
    const double expected = -std::log(0.25 * normal_density(0.5, -1, 1) + 0.75 * normal_density(0.5, 2, 2));
    const V nll = nn::MdnHead<Double>::negative_log_likelihood(tape, params, T::from_host(Shape{1, 1}, {0.5}));
    CHECK(nll.value().item() == doctest::Approx(expected).epsilon(1e-12));

    // Two dimensions sum, two batch rows average.
    const auto two = constant_params(tape, {2, 2, 2}, {0, std::log(3.0), 0, 0, 1, 1, 0, std::log(3.0)},
                                     {-1, 2, 0, 0, 0, 1, -1, 2}, {0, std::log(2.0), 0, 0, 0, 0, 0, std::log(2.0)});
    const double row0 = expected - std::log(normal_density(1.0, 0, 1));
    const double row1 = -std::log(0.5 * normal_density(0.0, 0, 1) + 0.5 * normal_density(0.0, 1, 1)) + expected;
    const V nll2 = nn::MdnHead<Double>::negative_log_likelihood(tape, two, T::from_host(Shape{2, 2}, {0.5, 1.0, 0.0, 0.5}));
    CHECK(nll2.value().item() == doctest::Approx((row0 + row1) / 2).epsilon(1e-12));
    CHECK_THROWS_AS((void)nn::MdnHead<Double>::negative_log_likelihood(tape, params, T(Shape{1, 2})), shape_error);
}

TEST_CASE("mdn negative log-likelihood stays finite and exact far from every component") {
    nn::Tape<Double> tape;
    // Every density underflows to 0 at y = 1000, so the naive -log(sum) is +inf.
    const auto params = constant_params(tape, {1, 1, 2}, {0, std::log(3.0)}, {-1, 2}, {0, std::log(2.0)});
    const double y = 1000;
    const auto log_term = [&](double weight, double mean, double stddev) {
        const double z = (y - mean) / stddev;
        return std::log(weight) - 0.5 * z * z - std::log(stddev) - 0.5 * std::log(2 * std::numbers::pi);
    };
    const double a = log_term(0.25, -1, 1), b = log_term(0.75, 2, 2);
    const double expected = -(std::max(a, b) + std::log(std::exp(a - std::max(a, b)) + std::exp(b - std::max(a, b))));
    const V nll = nn::MdnHead<Double>::negative_log_likelihood(tape, params, T::from_host(Shape{1, 1}, {y}));
    CHECK(std::isfinite(nll.value().item()));
    CHECK(nll.value().item() == doctest::Approx(expected).epsilon(1e-12));
}

TEST_CASE("mdn head and negative log-likelihood have exact gradients, the log-stddev bound included") {
    Rng rng(5);
    const T target = random_tensor({3, 2}, rng, -2, 2);
    // Raw outputs for 2 dims x 3 components, through split (bounded log-stddevs) and the NLL.
    const Function f = [&](nn::Tape<Double>& tape, const std::vector<V>& p) {
        return nn::MdnHead<Double>::negative_log_likelihood(tape, nn::MdnHead<Double>::split(tape, p[0], 2, 3), target);
    };
    CHECK(check_gradients(f, random_parameters({{3, 18}}, rng, -3, 3), {1}) < 1e-6);
    // And through the head's own linear layer, from a hidden input.
    nn::MdnHead<Double> head("mdn", 4, 2, rng, 3);
    const Function through_head = [&](nn::Tape<Double>& tape, const std::vector<V>& p) {
        return nn::MdnHead<Double>::negative_log_likelihood(tape, head(tape, p[0]), target);
    };
    CHECK(check_gradients(through_head, random_parameters({{3, 4}}, rng), {1}) < 1e-6);
}

TEST_CASE("mdn head bounds log-stddevs, names its parameters, and lays out (batch, dims, K)") {
    static_assert(nn::Module<nn::MdnHead<Double>, Double>);
    Rng rng(6);
    nn::MdnHead<Double> head("world_model.mdn", 4, 2, rng);
    CHECK(head.components() == nn::default_mdn_components);
    const auto params = head.parameters();
    REQUIRE(params.size() == 2);
    CHECK(params[0]->name == "world_model.mdn.weight");
    CHECK(params[0]->value.shape() == Shape{4, 3 * 2 * 8});
    nn::Tape<Double> tape;
    const auto out = head(tape, tape.constant(random_tensor({5, 4}, rng)));
    CHECK(out.means.shape() == Shape{5, 2, 8});
    // Raw log-stddevs of +-1000 land inside the bound; one at the midpoint is unchanged.
    std::vector<double> raw(6, 0.0);
    raw[4] = -1000;
    raw[5] = 1000;
    const auto split = nn::MdnHead<Double>::split(tape, tape.constant(T::from_host(Shape{1, 6}, raw)), 1, 2);
    const auto bounded = split.log_stddevs.value().to_host();
    CHECK(bounded[0] == doctest::Approx(nn::mdn_min_log_stddev));
    CHECK(bounded[1] == doctest::Approx(nn::mdn_max_log_stddev));
    const double midpoint = (nn::mdn_min_log_stddev + nn::mdn_max_log_stddev) / 2;
    raw[4] = midpoint;
    const auto centred = nn::MdnHead<Double>::split(tape, tape.constant(T::from_host(Shape{1, 6}, raw)), 1, 2);
    CHECK(centred.log_stddevs.value().to_host()[0] == doctest::Approx(midpoint));
}

TEST_CASE("mdn head on a constant input fitted by plain SGD recovers a known two-mode mixture") {
    // Samples of 0.3 N(-2, 0.5^2) + 0.7 N(3, 0.5^2). From a near-symmetric start, gradient
    // descent can sit for a while on the plateau where one broad component covers both
    // modes; 1500 updates leave room for that (every seed of 1..20 then recovers the mixture).
    constexpr std::int64_t samples = 1000, updates = 1500;
    constexpr double rate = 0.1;
    Rng rng(21);
    std::vector<double> data(samples);
    for (double& y : data) y = (rng.uniform() < 0.3 ? -2.0 : 3.0) + 0.5 * rng.normal();
    const T target = T::from_host(Shape{samples, 1}, data);
    const T ones(Shape{samples, 1}, 1.0);
    nn::MdnHead<Double> head("mdn", 1, 1, rng, 2);
    for (std::int64_t update = 0; update < updates; ++update) {
        nn::Tape<Double> tape;
        tape.backward(head.negative_log_likelihood(tape, head(tape, tape.constant(ones)), target));
        for (P* p : head.parameters()) {
            std::vector<double> v = p->value.to_host();
            const std::vector<double> g = p->grad.to_host();
            for (std::size_t i = 0; i < v.size(); ++i) v[i] -= rate * g[i];
            p->value = T::from_host(p->value.shape(), v);
            p->zero_grad();
        }
    }
    nn::Tape<Double> tape;
    const auto fitted = head(tape, tape.constant(T(Shape{1, 1}, 1.0)));
    const auto weights = nn::softmax(fitted.logits).value().to_host();
    const auto means = fitted.means.value().to_host();
    const auto stddevs = fitted.log_stddevs.value().to_host();
    const std::size_t low = means[0] < means[1] ? 0 : 1, high = 1 - low;
    CHECK(std::abs(means[low] - -2.0) < 0.2);
    CHECK(std::abs(means[high] - 3.0) < 0.2);
    CHECK(std::abs(weights[low] - 0.3) < 0.1);
    CHECK(std::abs(weights[high] - 0.7) < 0.1);
    CHECK(std::abs(std::exp(stddevs[low]) - 0.5) < 0.15);
    CHECK(std::abs(std::exp(stddevs[high]) - 0.5) < 0.15);
}

namespace {

struct Moments {
    double mean = 0, variance = 0;
};
Moments moments(const std::vector<double>& xs) {
    Moments m;
    for (const double x : xs) m.mean += x / static_cast<double>(xs.size());
    for (const double x : xs) m.variance += (x - m.mean) * (x - m.mean) / static_cast<double>(xs.size());
    return m;
}

/// `count` draws of a one-row, one-dimension mixture at `temperature`.
std::vector<double> draws(const nn::MdnParams<Double>& params, double temperature, int count, Rng& rng) {
    std::vector<double> out;
    for (int i = 0; i < count; ++i) out.push_back(nn::MdnHead<Double>::sample(params, temperature, rng).item());
    return out;
}

}  // namespace

TEST_CASE("mdn sampling: temperature scales the noise variance and sharpens the component choice") {
    constexpr int count = 20000;
    Rng rng(8);
    nn::Tape<Double> tape;
    // One Gaussian N(1, 2^2): the variance at temperature tau is 4 tau.
    const auto single = constant_params(tape, {1, 1, 1}, {0}, {1}, {std::log(2.0)});
    for (const double tau : {1.0, 0.25}) {
        CAPTURE(tau);
        const Moments m = moments(draws(single, tau, count, rng));
        CHECK(m.mean == doctest::Approx(1).epsilon(0.05));
        CHECK(m.variance == doctest::Approx(4 * tau).epsilon(0.05));
    }
    // 0.3 N(-2, 0.5^2) + 0.7 N(3, 0.5^2): at tau = 1 about 30% of draws come from the low mode.
    const auto mixture = constant_params(tape, {1, 1, 2}, {std::log(0.3), std::log(0.7)}, {-2, 3}, {std::log(0.5), std::log(0.5)});
    const auto at_one = draws(mixture, 1.0, count, rng);
    const double low_share = static_cast<double>(std::count_if(at_one.begin(), at_one.end(), [](double y) { return y < 0.5; })) / count;
    CHECK(low_share == doctest::Approx(0.3).epsilon(0.05));
    // As tau -> 0 draws concentrate at the most likely component's mean; tau = 0 returns it.
    const auto cold = draws(mixture, 0.01, 2000, rng);
    CHECK(std::all_of(cold.begin(), cold.end(), [](double y) { return std::abs(y - 3) < 0.25; }));
    CHECK(moments(cold).mean == doctest::Approx(3).epsilon(0.01));
    CHECK(nn::MdnHead<Double>::sample(mixture, 0.0, rng).item() == 3.0);
    CHECK_THROWS_AS((void)nn::MdnHead<Double>::sample(mixture, -1.0, rng), precondition_error);
}
