// LstmCell and Lstm: parameter layout and initialisation, one step against the gate
// formulas, finite-difference gradients of a step and of an unrolled sequence (inputs,
// initial state and weights), and a memory task learned by plain SGD.
#include "gradient_check.hpp"

#include <rlflow/nn/lstm.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

using namespace nn_test;
namespace nn = rlflow::nn;

namespace {

/// The module's own parameters (and inputs held as parameters) against finite differences
/// of a weighted sum of `forward`'s output, which must have `output_shape`.
double check_module_gradients(const std::function<V(nn::Tape<Double>&)>& forward, const std::vector<P*>& params,
                              const Shape& output_shape) {
    return check_parameter_gradients(params, [&](nn::Tape<Double>& tape) {
        const V out = forward(tape);
        REQUIRE(out.shape() == output_shape);
        return weighted_sum(tape, out, 7);
    });
}

double logistic(double x) { return 1 / (1 + std::exp(-x)); }

}  // namespace

TEST_CASE("lstm cell names its fused gate parameters and starts with a forget bias of 1") {
    static_assert(nn::Module<nn::LstmCell<Double>, Double> && nn::Module<nn::Lstm<Double>, Double>);
    Rng rng(1);
    nn::LstmCell<Double> cell("world_model.rnn", 3, rng, 4);
    const auto params = cell.parameters();
    REQUIRE(params.size() == 2);
    CHECK(params[0]->name == "world_model.rnn.gates.weight");
    CHECK(params[1]->name == "world_model.rnn.gates.bias");
    CHECK(params[0]->value.shape() == Shape{7, 16});
    CHECK(params[1]->value.shape() == Shape{16});
    const auto bias = params[1]->value.to_host();
    for (std::size_t j = 0; j < bias.size(); ++j) CHECK(bias[j] == (j >= 4 && j < 8 ? 1.0 : 0.0));
    CHECK(nn::LstmCell<Double>("default", 3, rng).hidden_size() == nn::default_lstm_hidden);
    nn::Tape<Double> tape;
    CHECK_THROWS_WITH_AS((void)cell(tape, tape.constant(T(Shape{2, 5})), cell.zero_state(tape, 2)),
                         "[rlflow.shape_error] lstm 'world_model.rnn' takes (batch, 3) inputs, got (2,5)", shape_error);
    CHECK_THROWS_WITH_AS((void)cell(tape, tape.constant(T(Shape{2, 3})), cell.zero_state(tape, 3)),
                         "[rlflow.shape_error] lstm 'world_model.rnn' state h (3,4), c (3,4) for a batch of 2 needs (2,4)", shape_error);
}

TEST_CASE("lstm cell step matches the gate formulas by hand") {
    Rng rng(2);
    nn::LstmCell<Double> cell("cell", 2, rng, 1);
    // Rows: x0, x1, h; columns: input, forget, candidate, output.
    cell.gates().weight().value = T::from_host(Shape{3, 4}, {0.1, -0.2, 0.3, 0.4, 0.5, 0.6, -0.7, 0.8, -0.9, 1.0, 1.1, -1.2});
    cell.gates().bias().value = T::from_host(Shape{4}, {0.05, 1.0, -0.1, 0.2});
    const double x0 = 0.5, x1 = -1.0, h = 0.2, c = 0.3;
    nn::Tape<Double> tape;
    const nn::LstmState<Double> previous{tape.constant(T::from_host(Shape{1, 1}, {h})), tape.constant(T::from_host(Shape{1, 1}, {c}))};
    const auto next = cell(tape, tape.constant(T::from_host(Shape{1, 2}, {x0, x1})), previous);
    const double i = logistic(0.1 * x0 + 0.5 * x1 - 0.9 * h + 0.05);
    const double f = logistic(-0.2 * x0 + 0.6 * x1 + 1.0 * h + 1.0);
    const double g = std::tanh(0.3 * x0 - 0.7 * x1 + 1.1 * h - 0.1);
    const double o = logistic(0.4 * x0 + 0.8 * x1 - 1.2 * h + 0.2);
    const double c_next = f * c + i * g;
    CHECK(next.c.value().item() == doctest::Approx(c_next).epsilon(1e-12));
    CHECK(next.h.value().item() == doctest::Approx(o * std::tanh(c_next)).epsilon(1e-12));
}

TEST_CASE("lstm cell gradients match finite differences for inputs, state and weights") {
    Rng rng(3);
    nn::LstmCell<Double> cell("cell", 3, rng, 4);
    P x("x", random_tensor({2, 3}, rng)), h("h", random_tensor({2, 4}, rng)), c("c", random_tensor({2, 4}, rng));
    std::vector<P*> params = cell.parameters();
    params.insert(params.end(), {&x, &h, &c});
    const auto forward = [&](nn::Tape<Double>& tape) {
        const auto next = cell(tape, tape.parameter(x), {tape.parameter(h), tape.parameter(c)});
        return nn::concat<Double>({next.h, next.c}, 1);
    };
    CHECK(check_module_gradients(forward, params, {2, 8}) < 1e-6);
}

TEST_CASE("lstm gradients through a 3-step sequence match finite differences") {
    Rng rng(4);
    nn::Lstm<Double> lstm("rnn", 3, rng, 4);
    std::vector<P> steps;
    for (int t = 0; t < 3; ++t) steps.emplace_back("x" + std::to_string(t), random_tensor({2, 3}, rng));
    P h("h", random_tensor({2, 4}, rng)), c("c", random_tensor({2, 4}, rng));
    std::vector<P*> params = lstm.parameters();
    for (P& s : steps) params.push_back(&s);
    params.insert(params.end(), {&h, &c});
    const auto forward = [&](nn::Tape<Double>& tape) {
        std::vector<V> inputs;
        for (P& s : steps) inputs.push_back(tape.parameter(s));
        const auto run = lstm(tape, inputs, {tape.parameter(h), tape.parameter(c)});
        REQUIRE(run.hidden.size() == 3);
        // Every hidden output and the final memory reach the loss.
        return nn::concat<Double>({nn::reshape(run.stacked(), Shape{6, 4}), run.final_state.c}, 0);
    };
    CHECK(check_module_gradients(forward, params, {8, 4}) < 1e-6);

    // The (time, batch, input) form runs the same steps from the zero state.
    P sequence("sequence", random_tensor({3, 2, 3}, rng));
    const auto from_tensor = [&](nn::Tape<Double>& tape) { return lstm(tape, tape.parameter(sequence)).stacked(); };
    CHECK(check_module_gradients(from_tensor, {&sequence, lstm.parameters()[0]}, {3, 2, 4}) < 1e-6);
}

TEST_CASE("lstm run on a (time, batch, input) tensor equals the step-by-step run") {
    Rng rng(5);
    nn::Lstm<Double> lstm("rnn", 2, rng, 3);
    const T sequence = random_tensor({4, 2, 2}, rng);
    nn::Tape<Double> tape;
    const auto whole = lstm(tape, tape.constant(sequence));
    std::vector<V> inputs;
    for (std::int64_t t = 0; t < 4; ++t) inputs.push_back(nn::reshape(nn::slice(tape.constant(sequence), 0, t, t + 1), Shape{2, 2}));
    const auto stepped = lstm(tape, inputs, lstm.zero_state(tape, 2));
    // Bit for bit, on any CPU: the tensor form slices the sequence and runs these same
    // steps, the same ops on the same values.
    CHECK(whole.stacked().value().to_host() == stepped.stacked().value().to_host());
    CHECK(whole.final_state.c.value().to_host() == stepped.final_state.c.value().to_host());
    CHECK_THROWS_AS((void)lstm(tape, tape.constant(T(Shape{4, 2}))), shape_error);
}

namespace {

using Float = nn::backend::Eigen;

/// A batch of the recall task: `steps` inputs of ±1, the target being the sign of the first.
struct RecallBatch {
    nn::Tensor<Float> sequence;  // (steps, batch, 1)
    nn::Tensor<Float> target;    // (batch, 1), ±1
};

RecallBatch recall_batch(std::int64_t steps, std::int64_t batch, Rng& rng) {
    std::vector<float> inputs(static_cast<std::size_t>(steps * batch));
    for (float& v : inputs) v = rng.below(2) == 0 ? -1.0f : 1.0f;
    return {nn::Tensor<Float>::from_host(Shape{steps, batch, 1}, inputs),
            nn::Tensor<Float>::from_host(Shape{batch, 1}, std::span<const float>(inputs.data(), static_cast<std::size_t>(batch)))};
}

/// Plain SGD: value -= rate * grad, then clears the gradient.
void sgd_step(const std::vector<nn::Parameter<Float>*>& params, float rate) {
    for (nn::Parameter<Float>* p : params) {
        std::vector<float> values = p->value.to_host();
        const std::vector<float> grad = p->grad.to_host();
        for (std::size_t i = 0; i < values.size(); ++i) values[i] -= rate * grad[i];
        p->value = nn::Tensor<Float>::from_host(p->value.shape(), values);
        p->zero_grad();
    }
}

}  // namespace

TEST_CASE("lstm with a linear readout learns to recall the first of 5 random bits by plain SGD") {
    constexpr std::int64_t steps = 5, batch = 32, hidden = 8, updates = 300;
    constexpr float rate = 0.5f;
    Rng rng(11);
    nn::Lstm<Float> lstm("rnn", 1, rng, hidden);
    nn::Linear<Float> readout("readout", hidden, 1, rng, 1.0);
    std::vector<nn::Parameter<Float>*> params = lstm.parameters();
    for (auto* p : readout.parameters()) params.push_back(p);
    // Logistic loss softplus(-target * score): the score's sign should be the first bit.
    const auto score = [&](nn::Tape<Float>& tape, const RecallBatch& b) {
        return readout(tape, lstm(tape, tape.constant(b.sequence)).final_state.h);
    };
    for (std::int64_t update = 0; update < updates; ++update) {
        const RecallBatch b = recall_batch(steps, batch, rng);
        nn::Tape<Float> tape;
        tape.backward(nn::mean(nn::softplus(nn::scale(nn::mul(score(tape, b), tape.constant(b.target)), -1.0f))));
        sgd_step(params, rate);
    }
    const RecallBatch test = recall_batch(steps, 512, rng);
    nn::Tape<Float> tape;
    const auto scores = score(tape, test).value().to_host();
    const auto targets = test.target.to_host();
    int correct = 0;
    for (std::size_t i = 0; i < scores.size(); ++i) correct += (scores[i] > 0) == (targets[i] > 0) ? 1 : 0;
    CHECK(correct >= 0.98 * static_cast<double>(scores.size()));
}
