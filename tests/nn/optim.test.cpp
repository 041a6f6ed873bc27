// Adam against a hand computation of its formulas, learning-rate schedules, gradient-norm
// clipping, the NaN/Inf guard (nothing changes when it fires), and training an MLP on XOR.
#include <rlflow/core/error.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn.hpp>
#include <rlflow/nn/optim.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <optional>
#include <vector>

using namespace rlflow;
namespace nn = rlflow::nn;
using Float = nn::backend::Eigen;
using Double = nn::backend::EigenDouble;

namespace {

template <class B>
void set_grad(nn::Parameter<B>& p, std::vector<typename B::Scalar> g) {
    p.grad = nn::Tensor<B>::from_host(p.value.shape(), g);
}

/// Snapshot of everything a failed step must leave alone.
template <class B>
struct AdamSnapshot {
    std::vector<std::vector<typename B::Scalar>> values, first, second;
    std::int64_t steps;
    explicit AdamSnapshot(const nn::Adam<B>& adam) : steps(adam.steps()) {
        for (std::size_t i = 0; i < adam.parameters().size(); ++i) {
            values.push_back(adam.parameters()[i]->value.to_host());
            first.push_back(adam.first_moment(i).to_host());
            second.push_back(adam.second_moment(i).to_host());
        }
    }
    bool operator==(const AdamSnapshot&) const = default;
};

}  // namespace

TEST_CASE("adam's first steps match a hand computation of the adam formulas") {
    nn::Parameter<Double> w("w", nn::Tensor<Double>::from_host(Shape{3}, {1.0, -2.0, 0.5}));
    constexpr double rate = 0.1, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
    nn::Adam<Double> adam({&w}, nn::AdamOptions{.learning_rate = nn::LearningRateSchedule::constant(rate)});
    std::vector<double> theta{1.0, -2.0, 0.5}, m(3, 0.0), v(3, 0.0);
    const std::vector<std::vector<double>> gradients{{0.5, -1.0, 0.0}, {0.2, 0.3, -4.0}, {-0.1, 0.0, 2.0}};
    for (std::size_t t = 1; t <= gradients.size(); ++t) {
        set_grad(w, gradients[t - 1]);
        adam.step();
        for (std::size_t i = 0; i < 3; ++i) {
            const double g = gradients[t - 1][i];
            m[i] = beta1 * m[i] + (1 - beta1) * g;
            v[i] = beta2 * v[i] + (1 - beta2) * g * g;
            const double m_hat = m[i] / (1 - std::pow(beta1, static_cast<double>(t)));
            const double v_hat = v[i] / (1 - std::pow(beta2, static_cast<double>(t)));
            theta[i] -= rate * m_hat / (std::sqrt(v_hat) + epsilon);
        }
        CAPTURE(t);
        CHECK(adam.steps() == static_cast<std::int64_t>(t));
        for (std::size_t i = 0; i < 3; ++i) {
            CHECK(w.value.to_host()[i] == doctest::Approx(theta[i]).epsilon(1e-12));
            CHECK(adam.first_moment(0).to_host()[i] == doctest::Approx(m[i]).epsilon(1e-12));
            CHECK(adam.second_moment(0).to_host()[i] == doctest::Approx(v[i]).epsilon(1e-12));
        }
    }
    // The first step moves every weight with a non-zero gradient by the rate, against the gradient.
    nn::Parameter<Float> x("x", nn::Tensor<Float>::from_host(Shape{2}, {0.0f, 0.0f}));
    nn::Adam<Float> first({&x}, nn::AdamOptions{.learning_rate = nn::LearningRateSchedule::constant(0.01)});
    set_grad(x, {3.0f, -0.001f});
    first.step();
    CHECK(x.value.to_host()[0] == doctest::Approx(-0.01).epsilon(1e-5));
    CHECK(x.value.to_host()[1] == doctest::Approx(0.01).epsilon(1e-4));
}

TEST_CASE("decoupled weight decay shrinks weights by rate times lambda, apart from the gradient") {
    nn::Parameter<Double> w("w", nn::Tensor<Double>::from_host(Shape{2}, {2.0, -4.0}));
    nn::Adam<Double> adam({&w}, nn::AdamOptions{.learning_rate = nn::LearningRateSchedule::constant(0.1), .weight_decay = 0.5});
    adam.zero_grad();
    adam.step();  // zero gradient: the adaptive update is 0, only the decay acts
    // Adam computes w - w x (rate x lambda), two roundings, the reference w x 0.95 one:
    // equal to within a few units in the last place (1e-15 is about 4.5 ulp of a double).
    constexpr double decay_tolerance = 1e-15;
    const std::vector<double> decayed = w.value.to_host();
    REQUIRE(decayed.size() == 2);
    CHECK(decayed[0] == doctest::Approx(2.0 * 0.95).epsilon(decay_tolerance));
    CHECK(decayed[1] == doctest::Approx(-4.0 * 0.95).epsilon(decay_tolerance));
}

TEST_CASE("learning-rate schedules: constant, linear decay to a floor, cosine, and adam follows them step by step") {
    const auto constant = nn::LearningRateSchedule::constant(0.01);
    CHECK(constant.at(0) == 0.01);
    CHECK(constant.at(1'000'000) == 0.01);

    const auto linear = nn::LearningRateSchedule::linear(1.0, 0.1, 10);
    CHECK(linear.at(0) == doctest::Approx(1.0));
    CHECK(linear.at(5) == doctest::Approx(0.55));
    CHECK(linear.at(10) == doctest::Approx(0.1));
    CHECK(linear.at(50) == doctest::Approx(0.1));

    const auto cosine = nn::LearningRateSchedule::cosine(1.0, 0.2, 10);
    CHECK(cosine.at(0) == doctest::Approx(1.0));
    CHECK(cosine.at(2) == doctest::Approx(0.2 + 0.8 * (1 + std::cos(0.2 * std::numbers::pi)) / 2));
    CHECK(cosine.at(5) == doctest::Approx(0.6));
    CHECK(cosine.at(10) == doctest::Approx(0.2));
    CHECK(cosine.at(11) == doctest::Approx(0.2));

    CHECK_THROWS_WITH_AS((void)nn::LearningRateSchedule::linear(1.0, 0.1, 0), doctest::Contains("steps > 0, got 0"), precondition_error);
    CHECK_THROWS_AS((void)nn::LearningRateSchedule::constant(-1.0), precondition_error);

    // With a constant gradient m_hat = g and v_hat = g^2, so each step moves a weight by
    // (almost exactly) the scheduled rate.
    nn::Parameter<Double> w("w", nn::Tensor<Double>::from_host(Shape{1}, {0.0}));
    nn::Adam<Double> adam({&w}, nn::AdamOptions{.learning_rate = linear});
    double previous = 0;
    for (std::int64_t t = 0; t < 12; ++t) {
        CHECK(adam.learning_rate() == linear.at(t));
        set_grad(w, {1.0});
        adam.step();
        const double now = w.value.item();
        CHECK(previous - now == doctest::Approx(linear.at(t)).epsilon(1e-6));
        previous = now;
    }
}

TEST_CASE("clipping scales all gradients together to the max norm and returns the norm before") {
    nn::Parameter<Float> a("a", nn::Tensor<Float>(Shape{2}));
    nn::Parameter<Float> b("b", nn::Tensor<Float>(Shape{1, 1}));
    set_grad(a, {3, 4});
    set_grad(b, {12});
    const std::vector<nn::Parameter<Float>*> params{&a, &b};
    CHECK(nn::gradient_norm(params) == doctest::Approx(13));
    CHECK(nn::clip_grad_norm(params, 100.0) == doctest::Approx(13));
    CHECK(a.grad.to_host() == std::vector<float>{3, 4});  // under the limit: unchanged
    CHECK(nn::clip_grad_norm(params, 6.5) == doctest::Approx(13));
    CHECK(a.grad.to_host()[0] == doctest::Approx(1.5));
    CHECK(a.grad.to_host()[1] == doctest::Approx(2));
    CHECK(b.grad.to_host()[0] == doctest::Approx(6));
    CHECK(nn::gradient_norm(params) == doctest::Approx(6.5));

    // Gradients whose squares overflow float32 still have a finite norm.
    set_grad(a, {3e20f, 4e20f});
    set_grad(b, {0});
    CHECK(nn::gradient_norm(params) == doctest::Approx(5e20).epsilon(1e-6));
    // A NaN gradient gives a NaN norm and is not scaled.
    set_grad(b, {std::numeric_limits<float>::quiet_NaN()});
    CHECK(std::isnan(nn::clip_grad_norm(params, 1.0)));
    CHECK(a.grad.to_host() == std::vector<float>{3e20f, 4e20f});
    CHECK_THROWS_AS((void)nn::clip_grad_norm(params, 0.0), precondition_error);
}

TEST_CASE("adam::step with a max norm equals clipping first, and leaves the gradients as they were") {
    const auto make = [] { return nn::Parameter<Float>("w", nn::Tensor<Float>::from_host(Shape{2}, {1.0f, 2.0f})); };
    nn::Parameter<Float> clipped_inside = make(), clipped_before = make();
    nn::Adam<Float> inside({&clipped_inside}), before({&clipped_before});
    for (int t = 0; t < 3; ++t) {
        // Alternating large and small gradients, so clipping changes the moments' mix.
        const std::vector<float> g = t % 2 == 0 ? std::vector<float>{30, -40} : std::vector<float>{0.3f, 0.1f};
        set_grad(clipped_inside, g);
        set_grad(clipped_before, g);
        const std::optional<double> norm = inside.step(1.0);
        REQUIRE(norm.has_value());
        CHECK(*norm == doctest::Approx(nn::gradient_norm<Float>({&clipped_before})));
        CHECK(clipped_inside.grad.to_host() == g);
        (void)nn::clip_grad_norm<Float>({&clipped_before}, 1.0);
        CHECK_FALSE(before.step().has_value());
        // Bit for bit, on any CPU: both scale the gradient by max_norm / gradient_norm with
        // the same function, then run the same update, so no rounding can differ.
        CHECK(clipped_inside.value.to_host() == clipped_before.value.to_host());
        CHECK(inside.second_moment(0).to_host() == before.second_moment(0).to_host());
    }
}

TEST_CASE("a NaN or infinite gradient, moment or weight makes adam throw naming the parameter, changing nothing") {
    nn::Parameter<Float> a("layer.weight", nn::Tensor<Float>::from_host(Shape{2}, {1.0f, -1.0f}));
    nn::Parameter<Float> b("layer.bias", nn::Tensor<Float>::from_host(Shape{1}, {0.5f}));
    nn::Adam<Float> adam({&a, &b});
    set_grad(a, {0.1f, 0.2f});
    set_grad(b, {0.3f});
    adam.step();  // non-zero state to protect
    const AdamSnapshot<Float> before(adam);

    set_grad(b, {std::numeric_limits<float>::quiet_NaN()});
    CHECK_THROWS_WITH_AS(adam.step(), "[rlflow.training_error] Adam step 2: parameter 'layer.bias' has a non-finite gradient (NaN or "
                                      "infinity); no weight was changed",
                         training_error);
    CHECK(AdamSnapshot<Float>(adam) == before);

    set_grad(b, {0.3f});
    set_grad(a, {0.1f, -std::numeric_limits<float>::infinity()});
    CHECK_THROWS_WITH_AS(adam.step(1.0), doctest::Contains("parameter 'layer.weight' has a non-finite gradient"), training_error);
    CHECK(AdamSnapshot<Float>(adam) == before);

    // Finite, but its square overflows float32: the second moment would be infinite. The
    // bias comes later in the list and is fine; the weight must not move either.
    set_grad(a, {1e30f, 0.0f});
    CHECK_THROWS_WITH_AS(adam.step(), doctest::Contains("parameter 'layer.weight' would get a non-finite moment estimate"), training_error);
    CHECK(AdamSnapshot<Float>(adam) == before);

    // A weight pushed past the largest float: the failing parameter is the last one, so
    // the earlier one's (finite) update must have been held back.
    nn::Parameter<Float> small("small", nn::Tensor<Float>::from_host(Shape{1}, {0.0f}));
    nn::Parameter<Float> huge("huge", nn::Tensor<Float>::from_host(Shape{1}, {-3e38f}));
    nn::Adam<Float> reckless({&small, &huge}, nn::AdamOptions{.learning_rate = nn::LearningRateSchedule::constant(1e38)});
    set_grad(small, {1.0f});
    set_grad(huge, {1.0f});
    const AdamSnapshot<Float> untouched(reckless);
    CHECK_THROWS_WITH_AS(reckless.step(), doctest::Contains("parameter 'huge' would get a non-finite weight"), training_error);
    CHECK(AdamSnapshot<Float>(reckless) == untouched);
    CHECK(untouched.steps == 0);
}

TEST_CASE("adam rejects parameters that share a name and gradients of the wrong shape") {
    nn::Parameter<Float> a("w", nn::Tensor<Float>(Shape{2}));
    nn::Parameter<Float> b("w", nn::Tensor<Float>(Shape{2}));
    CHECK_THROWS_WITH_AS(nn::Adam<Float>({&a, &b}), "[rlflow.precondition_error] Adam: two parameters are named 'w'", precondition_error);
    nn::Adam<Float> adam({&a});
    a.grad = nn::Tensor<Float>(Shape{3});
    CHECK_THROWS_WITH_AS(adam.step(), doctest::Contains("parameter 'w' of shape (2,) has a gradient of shape (3,)"), precondition_error);
    adam.zero_grad();
    CHECK(a.grad.shape() == Shape{2});
    CHECK(a.grad.to_host() == std::vector<float>{0, 0});
}

namespace {

struct XorRun {
    int steps = 0;
    float loss = 0;
    std::vector<float> outputs;
};

/// Trains a 2-8-1 tanh MLP on XOR with Adam in float32 until the loss is below `target`
/// and all four points are on the right side of 0.5, or `max_steps` pass.
XorRun train_xor(std::uint64_t seed, int max_steps, float target) {
    Rng rng(seed);
    nn::MlpOptions options;
    options.sizes = {2, 8, 1};
    options.activation = nn::Activation::tanh;
    options.output_gain = 1.0;
    nn::Mlp<Float> mlp("xor", options, rng);
    nn::Adam<Float> adam(mlp.parameters(), nn::AdamOptions{.learning_rate = nn::LearningRateSchedule::constant(0.05)});
    const auto inputs = nn::Tensor<Float>::from_host(Shape{4, 2}, {0, 0, 0, 1, 1, 0, 1, 1});
    const auto targets = nn::Tensor<Float>::from_host(Shape{4, 1}, {0, 1, 1, 0});
    XorRun run;
    for (run.steps = 0; run.steps < max_steps; ++run.steps) {
        nn::Tape<Float> tape;
        const nn::Var<Float> out = mlp(tape, tape.constant(inputs));
        const nn::Var<Float> loss = nn::mean(nn::square(nn::sub(out, tape.constant(targets))));
        run.loss = loss.value().item();
        run.outputs = out.value().to_host();
        bool separated = true;
        for (std::size_t i = 0; i < 4; ++i) separated = separated && (run.outputs[i] > 0.5f) == (targets.to_host()[i] > 0.5f);
        if (run.loss < target && separated) break;
        adam.zero_grad();
        tape.backward(loss);
        adam.step();
    }
    return run;
}

}  // namespace

TEST_CASE("an mlp trained with adam learns xor in float32 within a bounded number of steps, deterministically") {
    constexpr int max_steps = 500;
    const XorRun run = train_xor(2024, max_steps, 0.01f);
    CAPTURE(run.steps);
    CAPTURE(run.loss);
    CHECK(run.steps < max_steps);
    CHECK(run.loss < 0.01f);
    REQUIRE(run.outputs.size() == 4);
    CHECK(run.outputs[0] < 0.5f);
    CHECK(run.outputs[1] > 0.5f);
    CHECK(run.outputs[2] > 0.5f);
    CHECK(run.outputs[3] < 0.5f);
    // The same seed gives the same run, bit for bit (the same code on the same values).
    const XorRun again = train_xor(2024, max_steps, 0.01f);
    CHECK(again.steps == run.steps);
    CHECK(again.outputs == run.outputs);
}
