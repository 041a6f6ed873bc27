// Frozen host copies (FrozenLinear, FrozenLstmCell, FrozenMdnHead) against the tape path
// they replace in dream rollouts: the same outputs, the same random draws in the same order,
// a whole rollout step for step, refresh after training, and clear errors on bad shapes.
#include "gradient_check.hpp"

#include <rlflow/nn/inference.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

using namespace nn_test;
namespace nn = rlflow::nn;
using nn::HostMatrix;

namespace {

HostMatrix random_matrix(std::int64_t rows, std::int64_t cols, Rng& rng) {
    HostMatrix m(rows, cols);
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c) m(r, c) = static_cast<float>(rng.normal());
    return m;
}

T to_tensor(const HostMatrix& m) {
    std::vector<double> values(static_cast<std::size_t>(m.size()));
    for (std::int64_t r = 0; r < m.rows(); ++r)
        for (std::int64_t c = 0; c < m.cols(); ++c) values[static_cast<std::size_t>(r * m.cols() + c)] = m(r, c);
    return T::from_host(Shape{m.rows(), m.cols()}, values);
}

/// The largest |a - b| over a frozen result and a float64 tape result of the same shape.
double max_difference(const HostMatrix& a, const T& b) {
    REQUIRE(b.shape() == (Shape{a.rows(), a.cols()}));
    const auto values = b.to_host();
    double worst = 0;
    for (std::int64_t r = 0; r < a.rows(); ++r)
        for (std::int64_t c = 0; c < a.cols(); ++c)
            worst = std::max(worst, std::abs(double(a(r, c)) - values[static_cast<std::size_t>(r * a.cols() + c)]));
    return worst;
}

/// Non-zero biases, so that a frozen copy that dropped them would be caught.
void randomise_bias(nn::Linear<Double>& layer, Rng& rng) {
    std::vector<double> bias(static_cast<std::size_t>(layer.out_features()));
    for (double& b : bias) b = 0.5 * rng.normal();
    layer.bias().value = T::from_host(Shape{layer.out_features()}, bias);
}

}  // namespace

TEST_CASE("frozen linear computes the layer's outputs, all of them or a range") {
    Rng rng(11);
    nn::Linear<Double> layer("l", 5, 7, rng);
    randomise_bias(layer, rng);
    const HostMatrix x = random_matrix(3, 5, rng);
    nn::Tape<Double> tape;
    const T expected = layer(tape, tape.constant(to_tensor(x))).value();

    const nn::FrozenLinear frozen(layer);
    CHECK(frozen.in_features() == 5);
    CHECK(frozen.out_features() == 7);
    HostMatrix y;
    frozen.apply(x, y);
    CHECK(max_difference(y, expected) < 1e-5);

    frozen.apply_rows(x, 2, 5, y);
    REQUIRE(y.cols() == 3);
    const auto all = expected.to_host();
    for (std::int64_t r = 0; r < 3; ++r)
        for (std::int64_t o = 2; o < 5; ++o) {
            CHECK(y(r, o - 2) == doctest::Approx(all[static_cast<std::size_t>(r * 7 + o)]).epsilon(1e-5));
            CHECK(frozen.output(o, x.row(r)) == doctest::Approx(all[static_cast<std::size_t>(r * 7 + o)]).epsilon(1e-5));
        }

    CHECK_THROWS_AS(frozen.apply(random_matrix(3, 4, rng), y), shape_error);
    CHECK_THROWS_AS(frozen.apply_rows(x, 4, 8, y), precondition_error);
    CHECK_THROWS_AS(frozen.apply_rows(x, 5, 4, y), precondition_error);
}

TEST_CASE("frozen lstm cell follows the tape cell step for step") {
    Rng rng(12);
    nn::LstmCell<Double> cell("rnn", 6, rng, 16);
    randomise_bias(cell.gates(), rng);
    nn::FrozenLstmCell frozen(cell);
    CHECK(frozen.input_size() == 6);
    CHECK(frozen.hidden_size() == 16);

    HostMatrix h = random_matrix(3, 16, rng), c = random_matrix(3, 16, rng);
    nn::Tape<Double> tape;
    nn::LstmState<Double> state{tape.constant(to_tensor(h)), tape.constant(to_tensor(c))};
    for (int step = 0; step < 8; ++step) {
        const HostMatrix x = random_matrix(3, 6, rng);
        state = cell(tape, tape.constant(to_tensor(x)), state);
        frozen.step(x, h, c);
        CHECK(max_difference(h, state.h.value()) < 1e-5);
        CHECK(max_difference(c, state.c.value()) < 1e-5);
    }

    HostMatrix wrong_batch = random_matrix(2, 16, rng);
    CHECK_THROWS_AS(frozen.step(random_matrix(3, 6, rng), wrong_batch, c), shape_error);
    CHECK_THROWS_AS(frozen.step(random_matrix(3, 5, rng), h, c), shape_error);
}

TEST_CASE("frozen mdn head draws what MdnHead::sample draws, from the same random numbers") {
    Rng init(13);
    nn::MdnHead<Double> head("mdn", 12, 5, init, 4);
    randomise_bias(head.linear(), init);
    nn::FrozenMdnHead frozen(head);
    CHECK(frozen.hidden_size() == 12);
    CHECK(frozen.output_dims() == 5);
    CHECK(frozen.components() == 4);
    const HostMatrix hidden = random_matrix(3, 12, init);

    for (const double temperature : {0.0, 0.3, 1.0, 2.0}) {
        CAPTURE(temperature);
        Rng tape_rng(99), frozen_rng(99);
        nn::Tape<Double> tape;
        const nn::MdnParams<Double> params = head(tape, tape.constant(to_tensor(hidden)));
        for (int draw = 0; draw < 10; ++draw) {
            const T expected = nn::MdnHead<Double>::sample(params, temperature, tape_rng);
            HostMatrix out;
            frozen.sample(hidden, temperature, frozen_rng, out);
            CHECK(max_difference(out, expected) < 1e-4);
        }
        // Both consumed the same number of draws.
        CHECK(tape_rng.next() == frozen_rng.next());
    }
    HostMatrix out;
    CHECK_THROWS_AS(frozen.sample(hidden, -0.5, init, out), precondition_error);
    CHECK_THROWS_AS(frozen.sample(random_matrix(1, 11, init), 1.0, init, out), shape_error);
}

TEST_CASE("a frozen dream rollout reproduces the tape rollout, and refresh follows new weights") {
    constexpr std::int64_t latent = 4, hidden = 16;
    Rng init(14);
    nn::LstmCell<Double> cell("rnn", latent, init, hidden);
    nn::MdnHead<Double> head("mdn", hidden, latent, init, 3);
    randomise_bias(cell.gates(), init);
    randomise_bias(head.linear(), init);
    nn::FrozenLstmCell frozen_cell(cell);
    nn::FrozenMdnHead frozen_head(head);

    const auto rollout_difference = [&] {
        Rng tape_rng(5), frozen_rng(5);
        nn::Tape<Double> tape;
        const nn::NoGrad<Double> no_grad(tape);
        T z(Shape{1, latent});
        nn::LstmState<Double> state = cell.zero_state(tape, 1);
        HostMatrix fz = HostMatrix::Zero(1, latent), fh = HostMatrix::Zero(1, hidden), fc = HostMatrix::Zero(1, hidden);
        double worst = 0;
        for (int step = 0; step < 12; ++step) {
            state = cell(tape, tape.constant(std::move(z)), state);
            z = nn::MdnHead<Double>::sample(head(tape, state.h), 1.0, tape_rng);
            frozen_cell.step(fz, fh, fc);
            frozen_head.sample(fh, 1.0, frozen_rng, fz);
            worst = std::max(worst, max_difference(fz, z));
        }
        return worst;
    };
    CHECK(rollout_difference() < 1e-3);

    // Training moves the weights: the stale copies no longer agree, refreshed ones do.
    std::vector<double> shifted = head.linear().weight().value.to_host();
    for (double& w : shifted) w += 0.25;
    head.linear().weight().value = T::from_host(head.linear().weight().value.shape(), shifted);
    CHECK(rollout_difference() > 1e-2);
    frozen_head.refresh(head);
    CHECK(rollout_difference() < 1e-3);
}
