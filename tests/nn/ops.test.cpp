// Every differentiable op: values against hand computations, gradients against finite
// differences in float64, shape errors, and the stable forms (softmax, sigmoid, softplus).
#include "gradient_check.hpp"

#include <cmath>
#include <limits>

using namespace nn_test;
namespace nn = rlflow::nn;

namespace {

/// Checks the gradients of `f` on parameters of `shapes` (uniform in [lo, hi)).
void check(const Function& f, const std::vector<Shape>& shapes, const Shape& out, double lo = -1, double hi = 1) {
    Rng rng(42);
    const double worst = check_gradients(f, random_parameters(shapes, rng, lo, hi), out);
    CHECK(worst < 1e-6);
}

std::vector<double> values(const V& v) { return v.value().to_host(); }

}  // namespace

TEST_CASE("nn ops: matmul values and gradients, plain, batch against one matrix, and batched") {
    nn::Tape<Double> tape;
    const V a = tape.constant(T::from_host(Shape{2, 3}, {1, 2, 3, 4, 5, 6}));
    const V b = tape.constant(T::from_host(Shape{3, 2}, {1, 0, 0, 1, 1, 1}));
    CHECK(values(nn::matmul(a, b)) == std::vector<double>{4, 5, 10, 11});
    check([](auto&, const auto& p) { return nn::matmul(p[0], p[1]); }, {{3, 4}, {4, 5}}, {3, 5});
    check([](auto&, const auto& p) { return nn::matmul(p[0], p[1]); }, {{2, 3, 4}, {4, 5}}, {2, 3, 5});
    check([](auto&, const auto& p) { return nn::matmul(p[0], p[1]); }, {{2, 3, 4}, {2, 4, 5}}, {2, 3, 5});
    CHECK_THROWS_WITH_AS((void)nn::matmul(a, a), "[rlflow.shape_error] matmul: lhs (2,3) vs rhs (2,3)", shape_error);
}

TEST_CASE("nn ops: add, sub, mul and div broadcast both ways, and their gradients sum over broadcast axes") {
    nn::Tape<Double> tape;
    const V m = tape.constant(T::from_host(Shape{2, 2}, {1, 2, 3, 4}));
    const V row = tape.constant(T::from_host(Shape{2}, {10, 20}));
    const V column = tape.constant(T::from_host(Shape{2, 1}, {100, 200}));
    CHECK(values(nn::add(m, row)) == std::vector<double>{11, 22, 13, 24});
    CHECK(values(nn::sub(column, m)) == std::vector<double>{99, 98, 197, 196});
    CHECK(values(nn::mul(m, column)) == std::vector<double>{100, 200, 600, 800});
    CHECK(values(nn::div(row, m)) == std::vector<double>{10, 10, 10.0 / 3, 5});
    check([](auto&, const auto& p) { return nn::add(p[0], p[1]); }, {{3, 4}, {4}}, {3, 4});
    check([](auto&, const auto& p) { return nn::sub(p[0], p[1]); }, {{3, 1}, {3, 4}}, {3, 4});
    check([](auto&, const auto& p) { return nn::mul(p[0], p[1]); }, {{2, 3, 4}, {1, 4}}, {2, 3, 4});
    check([](auto&, const auto& p) { return nn::mul(p[0], p[1]); }, {{2, 1, 4}, {3, 1}}, {2, 3, 4});
    check([](auto&, const auto& p) { return nn::div(p[0], p[1]); }, {{3, 4}, {3, 1}}, {3, 4}, 0.5, 2);
    check([](auto&, const auto& p) { return nn::scale(p[0], 2.5); }, {{3, 4}}, {3, 4});
    CHECK_THROWS_WITH_AS((void)nn::add(m, tape.constant(T(Shape{3}))), "[rlflow.shape_error] add: shapes (2,2) and (3,) do not broadcast",
                         shape_error);
}

TEST_CASE("nn ops: element-wise functions and their gradients") {
    check([](auto&, const auto& p) { return nn::tanh(p[0]); }, {{3, 4}}, {3, 4}, -2, 2);
    check([](auto&, const auto& p) { return nn::sigmoid(p[0]); }, {{3, 4}}, {3, 4}, -4, 4);
    check([](auto&, const auto& p) { return nn::exp(p[0]); }, {{3, 4}}, {3, 4});
    check([](auto&, const auto& p) { return nn::softplus(p[0]); }, {{3, 4}}, {3, 4}, -4, 4);
    check([](auto&, const auto& p) { return nn::square(p[0]); }, {{3, 4}}, {3, 4});
    // Away from their singular points.
    check([](auto&, const auto& p) { return nn::log(p[0]); }, {{3, 4}}, {3, 4}, 0.2, 3);
    check([](auto&, const auto& p) { return nn::sqrt(p[0]); }, {{3, 4}}, {3, 4}, 0.2, 3);
    check([](auto&, const auto& p) { return nn::rsqrt(p[0]); }, {{3, 4}}, {3, 4}, 0.2, 3);
    check([](auto&, const auto& p) { return nn::relu(p[0]); }, {{3, 4}}, {3, 4}, 0.1, 1);
    check([](auto&, const auto& p) { return nn::relu(p[0]); }, {{3, 4}}, {3, 4}, -1, -0.1);
    // Relu passes gradients only where the input is positive.
    nn::Tape<Double> tape;
    P x("x", T::from_host(Shape{4}, {-2, -0.5, 0.5, 2}));
    tape.backward(nn::sum(nn::relu(tape.parameter(x))));
    CHECK(x.grad.to_host() == std::vector<double>{0, 0, 1, 1});
}

TEST_CASE("nn ops: sigmoid, softplus and log-softmax stay finite at extreme inputs") {
    nn::Tape<Double> tape;
    const V big = tape.constant(T::from_host(Shape{1, 4}, {-1000, -1, 1, 1000}));
    const auto s = values(nn::sigmoid(big));
    CHECK(s[0] == 0);
    CHECK(s[3] == 1);
    const auto sp = values(nn::softplus(big));
    CHECK(sp[0] == doctest::Approx(0));
    CHECK(sp[3] == doctest::Approx(1000));
    const auto ls = values(nn::log_softmax(big));
    for (const double v : ls) CHECK(std::isfinite(v));
    CHECK(ls[3] == doctest::Approx(0));
    // Masked entries (-inf) get probability 0, and the rest normalise.
    const double inf = std::numeric_limits<double>::infinity();
    const V masked = tape.constant(T::from_host(Shape{2, 3}, {-inf, 0.5, -inf, 1, 2, 3}));
    const auto p = values(nn::softmax(masked));
    CHECK(p[0] == 0);
    CHECK(p[1] == doctest::Approx(1));
    CHECK(p[2] == 0);
    CHECK(p[3] + p[4] + p[5] == doctest::Approx(1));
}

TEST_CASE("nn ops: softmax and log-softmax over the last axis, reductions, with gradients") {
    nn::Tape<Double> tape;
    const auto p = values(nn::softmax(tape.constant(T::from_host(Shape{1, 2}, {0, std::log(3.0)}))));
    CHECK(p[0] == doctest::Approx(0.25));
    CHECK(p[1] == doctest::Approx(0.75));
    check([](auto&, const auto& q) { return nn::log_softmax(q[0]); }, {{3, 5}}, {3, 5}, -3, 3);
    check([](auto&, const auto& q) { return nn::softmax(q[0]); }, {{2, 3, 4}}, {2, 3, 4}, -3, 3);
    check([](auto&, const auto& q) { return nn::sum(q[0]); }, {{2, 3, 4}}, {1});
    check([](auto&, const auto& q) { return nn::mean(q[0]); }, {{2, 3, 4}}, {1});
    check([](auto&, const auto& q) { return nn::sum(q[0], 0); }, {{2, 3, 4}}, {1, 3, 4});
    check([](auto&, const auto& q) { return nn::sum(q[0], 1); }, {{2, 3, 4}}, {2, 1, 4});
    check([](auto&, const auto& q) { return nn::mean(q[0], -1); }, {{2, 3, 4}}, {2, 3, 1});
    const V m = tape.constant(T::from_host(Shape{2, 3}, {1, 2, 3, 4, 5, 6}));
    CHECK(values(nn::sum(m)) == std::vector<double>{21});
    CHECK(values(nn::sum(m, 0)) == std::vector<double>{5, 7, 9});
    CHECK(values(nn::mean(m, 1)) == std::vector<double>{2, 5});
}

TEST_CASE("nn ops: concat, slice and reshape move values and gradients along any axis") {
    nn::Tape<Double> tape;
    const V a = tape.constant(T::from_host(Shape{2, 2}, {1, 2, 3, 4}));
    const V b = tape.constant(T::from_host(Shape{2, 1}, {5, 6}));
    CHECK(values(nn::concat<Double>({a, b}, 1)) == std::vector<double>{1, 2, 5, 3, 4, 6});
    CHECK(values(nn::concat<Double>({a, a}, 0)) == std::vector<double>{1, 2, 3, 4, 1, 2, 3, 4});
    CHECK(values(nn::slice(a, 1, 1, 2)) == std::vector<double>{2, 4});
    for (const int axis : {0, 1, 2}) {
        CAPTURE(axis);
        Shape other{2, 3, 4};
        other[axis] = 1;
        Shape out{2, 3, 4};
        out[axis] += 1;
        check([axis](auto&, const auto& p) { return nn::concat<Double>({p[0], p[1]}, axis); }, {{2, 3, 4}, other}, out);
        Shape part{2, 3, 4};
        part[axis] -= 1;
        check([axis](auto&, const auto& p) { return nn::slice(p[0], axis, 1, p[0].shape()[axis]); }, {{2, 3, 4}}, part);
    }
    check([](auto&, const auto& p) { return nn::reshape(p[0], Shape{6, 4}); }, {{2, 3, 4}}, {6, 4});
    CHECK_THROWS_AS((void)nn::concat<Double>({a, tape.constant(T(Shape{3, 1}))}, 1), shape_error);
    CHECK_THROWS_AS((void)nn::slice(a, 1, 1, 3), shape_error);
}

TEST_CASE("nn ops: gather, segment sum and segment mean, with repeated rows and an empty segment") {
    nn::Tape<Double> tape;
    const V x = tape.constant(T::from_host(Shape{3, 2}, {1, 2, 3, 4, 5, 6}));
    const nn::Indices<Double> rows({2, 0, 2}, 3);
    CHECK(values(nn::gather(x, rows)) == std::vector<double>{5, 6, 1, 2, 5, 6});
    const nn::Indices<Double> segments({1, 1, 3}, 4);
    CHECK(values(nn::segment_sum(x, segments)) == std::vector<double>{0, 0, 4, 6, 0, 0, 5, 6});
    CHECK(values(nn::segment_mean(x, segments)) == std::vector<double>{0, 0, 2, 3, 0, 0, 5, 6});
    check([&](auto&, const auto& p) { return nn::gather(p[0], rows); }, {{3, 4}}, {3, 4});
    const nn::Indices<Double> edges({0, 2, 2, 1, 0}, 3);
    check([&](auto&, const auto& p) { return nn::segment_sum(p[0], edges); }, {{5, 4}}, {3, 4});
    check([&](auto&, const auto& p) { return nn::segment_mean(p[0], edges); }, {{5, 4}}, {3, 4});
    CHECK_THROWS_WITH_AS((nn::Indices<Double>({0, 3}, 3)), "[rlflow.precondition_error] index 1 is 3, outside [0, 3)", precondition_error);
    CHECK_THROWS_AS((void)nn::segment_sum(x, nn::Indices<Double>({0, 1}, 2)), shape_error);
    CHECK_THROWS_WITH_AS((nn::Indices<Double>({}, -1)), "[rlflow.precondition_error] indices need a bound >= 0, got -1", precondition_error);
    CHECK(segments.inverse_counts().to_host() == std::vector<double>{0, 0.5, 0, 1});
}

TEST_CASE("nn ops: sum_rows adds whole and gathered terms and a bias as one tensor, with exact gradients") {
    nn::Tape<Double> tape;
    const V a = tape.constant(T::from_host(Shape{2, 2}, {1, 2, 3, 4}));
    const V b = tape.constant(T::from_host(Shape{3, 2}, {10, 20, 30, 40, 50, 60}));
    const V bias = tape.constant(T::from_host(Shape{2}, {100, 200}));
    const nn::Indices<Double> rows({2, 0}, 3);
    // a + b[rows] + bias, whichever term comes first.
    const V whole_first[] = {a, b};
    const nn::Indices<Double>* gathers[] = {nullptr, &rows};
    CHECK(values(nn::sum_rows<Double>(whole_first, gathers, bias)) == std::vector<double>{151, 262, 113, 224});
    const V gathered_first[] = {b, a};
    const nn::Indices<Double>* swapped[] = {&rows, nullptr};
    CHECK(values(nn::sum_rows<Double>(gathered_first, swapped, bias)) == std::vector<double>{151, 262, 113, 224});
    // Gradients, with repeated rows (scattered back with sums).
    const nn::Indices<Double> edges({0, 2, 2, 1, 0}, 3);
    check(
        [&](auto&, const auto& p) {
            const V terms[] = {p[0], p[1], p[2]};
            const nn::Indices<Double>* by[] = {nullptr, &edges, &edges};
            return nn::sum_rows<Double>(terms, by, p[3]);
        },
        {{5, 4}, {3, 4}, {3, 4}, {4}}, {5, 4});
    // With relu: the same sums, negatives zeroed, and gradients only where positive
    // (values kept away from 0, where relu has no derivative).
    const V shift = tape.constant(T::from_host(Shape{2}, {-40, -70}));  // sums without a bias: 51, 62; 13, 24
    CHECK(values(nn::sum_rows<Double>(whole_first, gathers, shift, true)) == std::vector<double>{11, 0, 0, 0});
    check(
        [&](auto&, const auto& p) {
            const V terms[] = {p[0], p[1]};
            const nn::Indices<Double>* by[] = {nullptr, &edges};
            return nn::sum_rows<Double>(terms, by, p[2], true);
        },
        {{5, 4}, {3, 4}, {4}}, {5, 4}, 0.1, 1);
    check(
        [&](auto&, const auto& p) {
            const V terms[] = {p[0], p[1]};
            const nn::Indices<Double>* by[] = {nullptr, &edges};
            return nn::sum_rows<Double>(terms, by, p[2], true);
        },
        {{5, 4}, {3, 4}, {4}}, {5, 4}, -1, -0.1);
    const V mismatched[] = {a, tape.constant(T(Shape{3, 2}))};
    const nn::Indices<Double>* none[] = {nullptr, nullptr};
    CHECK_THROWS_AS((void)nn::sum_rows<Double>(mismatched, none, bias), shape_error);
}

TEST_CASE("nn ops: bias_relu is relu(x + bias) in one op, with the gradients of both") {
    nn::Tape<Double> tape;
    const V x = tape.constant(T::from_host(Shape{2, 2}, {1, -2, -3, 4}));
    const V bias = tape.constant(T::from_host(Shape{2}, {0.5, 1}));
    CHECK(values(nn::bias_relu(x, bias)) == values(nn::relu(nn::add(x, bias))));
    CHECK(values(nn::bias_relu(x, bias)) == std::vector<double>{1.5, 0, 0, 5});
    check([](auto&, const auto& p) { return nn::bias_relu(p[0], p[1]); }, {{3, 4}, {4}}, {3, 4}, 0.1, 1);
    check([](auto&, const auto& p) { return nn::bias_relu(p[0], p[1]); }, {{2, 3, 4}, {4}}, {2, 3, 4}, -1, -0.6);
    CHECK_THROWS_AS((void)nn::bias_relu(x, tape.constant(T(Shape{3}))), shape_error);
}

TEST_CASE("nn ops: layer norm normalises the last axis and has exact gradients") {
    nn::Tape<Double> tape;
    const V x = tape.constant(T::from_host(Shape{2, 4}, {1, 2, 3, 4, -1, 0, 0, 1}));
    const V ones = tape.constant(T(Shape{4}, 1.0));
    const V zeros = tape.constant(T(Shape{4}));
    const auto y = values(nn::layer_norm(x, ones, zeros, 0.0));
    for (int r = 0; r < 2; ++r) {
        double m = 0, v = 0;
        for (int c = 0; c < 4; ++c) m += y[static_cast<std::size_t>(r * 4 + c)] / 4;
        for (int c = 0; c < 4; ++c) v += std::pow(y[static_cast<std::size_t>(r * 4 + c)] - m, 2) / 4;
        CHECK(m == doctest::Approx(0).epsilon(1e-12));
        CHECK(v == doctest::Approx(1));
    }
    check([](auto&, const auto& p) { return nn::layer_norm(p[0], p[1], p[2]); }, {{3, 5}, {5}, {5}}, {3, 5});
}

TEST_CASE("nn ops: the one-pass layer norm agrees with the formula op by op, in value and gradients (float)") {
    // Two code paths sum in different orders, so they are compared within float rounding.
    using Float = nn::backend::Eigen;
    Rng rng(3);
    const auto random_tensor = [&](const Shape& shape, double lo, double hi) {
        std::vector<float> v(static_cast<std::size_t>(shape.numel()));
        for (float& x : v) x = static_cast<float>(lo + (hi - lo) * rng.uniform());
        return nn::Tensor<Float>::from_host(shape, v);
    };
    constexpr std::int64_t rows = 300, cols = 257;  // rows longer than a vector register, odd
    const nn::Tensor<Float> x0 = random_tensor({rows, cols}, -3, 5), g0 = random_tensor({rows, cols}, -1, 1);
    const nn::Tensor<Float> gamma0 = random_tensor({cols}, 0.5, 1.5), beta0 = random_tensor({cols}, -1, 1);
    const auto run = [&](bool fused) {
        nn::Parameter<Float> x("x", x0), gamma("gamma", gamma0), beta("beta", beta0);
        nn::Tape<Float> tape;
        const nn::Var<Float> xv = tape.parameter(x), gv = tape.parameter(gamma), bv = tape.parameter(beta);
        nn::Var<Float> y;
        if (fused) {
            y = nn::layer_norm(xv, gv, bv);
        } else {
            const nn::Var<Float> centred = nn::sub(xv, nn::mean(xv, -1));
            const nn::Var<Float> variance = nn::mean(nn::square(centred), -1);
            const nn::Var<Float> eps = tape.constant(nn::Tensor<Float>::scalar(1e-5f));
            y = nn::add(nn::mul(nn::mul(centred, nn::rsqrt(nn::add(variance, eps))), gv), bv);
        }
        const std::vector<float> value = y.value().to_host();
        tape.backward(nn::sum(nn::mul(y, tape.constant(g0))));
        return std::vector<std::vector<float>>{value, x.grad.to_host(), gamma.grad.to_host(), beta.grad.to_host()};
    };
    const auto fused = run(true), composed = run(false);
    const char* what[] = {"value", "dx", "dgamma", "dbeta"};
    for (std::size_t k = 0; k < fused.size(); ++k) {
        CAPTURE(what[k]);
        REQUIRE(fused[k].size() == composed[k].size());
        float scale = 0, worst = 0;
        for (std::size_t i = 0; i < fused[k].size(); ++i) {
            scale = std::max(scale, std::abs(composed[k][i]));
            worst = std::max(worst, std::abs(fused[k][i] - composed[k][i]));
        }
        CHECK(scale > 0);
        CHECK(worst <= 1e-4f * scale);  // float: sums over 257 columns or 300 rows
    }
}

namespace {
/// An op type without a backward pass: recording it must not compile.
struct NoBackward {};
}  // namespace

TEST_CASE("nn tape: no-grad mode records values only, a missing backward is a compile error, misuse is reported") {
    static_assert(nn::Differentiable<nn::detail::MatMulOp<Double>, Double>);
    static_assert(!nn::Differentiable<NoBackward, Double>);
    static_assert(nn::TensorBackend<nn::backend::Eigen> && !nn::is_tensor_backend_v<int>);
    nn::Tape<Double> tape;
    P w("w", T::from_host(Shape{2}, {1, 2}));
    {
        const nn::NoGrad<Double> off(tape);
        const V y = nn::mul(tape.parameter(w), tape.parameter(w));
        CHECK_FALSE(y.requires_grad());
        CHECK(values(y) == std::vector<double>{1, 4});
    }
    CHECK(tape.grad_enabled());
    const V loss = nn::sum(nn::square(tape.parameter(w)));
    CHECK(loss.requires_grad());
    tape.backward(loss);
    CHECK(w.grad.to_host() == std::vector<double>{2, 4});
    CHECK_THROWS_AS(tape.backward(loss), precondition_error);
    nn::Tape<Double> other;
    CHECK_THROWS_AS((void)nn::add(tape.parameter(w), other.parameter(w)), precondition_error);
    other.clear();
    CHECK_THROWS_AS(other.backward(other.parameter(w)), shape_error);
    // Gradients accumulate across backward passes until zeroed.
    tape.clear();
    tape.backward(nn::sum(nn::square(tape.parameter(w))));
    CHECK(w.grad.to_host() == std::vector<double>{4, 8});
    w.zero_grad();
    CHECK(w.grad.to_host() == std::vector<double>{0, 0});
}

TEST_CASE("nn ops: float32 on the Eigen backend agrees with float64") {
    using F = nn::backend::Eigen;
    Rng rng(3);
    const T a64 = random_tensor({4, 6}, rng), b64 = random_tensor({6, 3}, rng);
    const auto narrow = [](const T& t) {
        const auto v = t.to_host();
        return nn::Tensor<F>::from_host(t.shape(), std::vector<float>(v.begin(), v.end()));
    };
    nn::Tape<Double> t64;
    nn::Tape<F> t32;
    const auto y64 = values(nn::log_softmax(nn::tanh(nn::matmul(t64.constant(a64), t64.constant(b64)))));
    const auto y32 = nn::log_softmax(nn::tanh(nn::matmul(t32.constant(narrow(a64)), t32.constant(narrow(b64))))).value().to_host();
    REQUIRE(y32.size() == y64.size());
    for (std::size_t i = 0; i < y64.size(); ++i) CHECK(y32[i] == doctest::Approx(y64[i]).epsilon(1e-5));
}
