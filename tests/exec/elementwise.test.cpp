#include "support.hpp"

#include <functional>
#include <tuple>
#include <utility>

using namespace exec_test;

namespace {

using BinaryFn = std::function<double(double, double)>;

void check_binary(OpKind op, const BinaryFn& fn, const Shape& a_shape, const Shape& b_shape, bool positive_lhs) {
    CAPTURE(rlflow::op_name(op));
    CAPTURE(a_shape.to_string());
    CAPTURE(b_shape.to_string());
    const Tensor a = positive_lhs ? random_tensor(a_shape, 90, 0.5, 2.0) : random_tensor(a_shape, 90);
    const Tensor b = random_tensor(b_shape, 91, 0.25, 1.5);  // away from 0: Div's divisor
    const Shape out = *rlflow::broadcast_shapes(a_shape, b_shape);
    std::vector<double> expected;
    for (std::int64_t i = 0; i < out.numel(); ++i) {
        const Index index = unravel(i, out);
        expected.push_back(fn(at(a, broadcast_source(index, a_shape)), at(b, broadcast_source(index, b_shape))));
    }
    check_close(run_op(op, {a, b}).at(0), out, expected);
}

/// Shape pairs covering each path: equal shapes, scalars, suffix tiling either side,
/// and general broadcasting on both operands.
const std::vector<std::pair<Shape, Shape>> shape_pairs{
    {{3, 5}, {3, 5}},       {{2, 3, 4}, {}},        {{}, {2, 3, 4}},        {{1, 1}, {3, 4}},
    {{2, 3, 5}, {5}},       {{5}, {2, 3, 5}},       {{2, 3, 5}, {1, 3, 5}}, {{2, 3, 5}, {3, 1}},
    {{1, 3, 1}, {2, 1, 4}}, {{5, 1}, {1, 6}},       {{2, 3, 1, 5}, {3, 4, 1}}, {{3, 1, 7}, {3, 4, 7}},
};

}  // namespace

TEST_CASE("binary ops broadcast like numpy on every path") {
    const std::vector<std::tuple<OpKind, BinaryFn, bool>> ops{
        {OpKind::Add, std::plus<double>{}, false},
        {OpKind::Sub, std::minus<double>{}, false},
        {OpKind::Mul, std::multiplies<double>{}, false},
        {OpKind::Div, std::divides<double>{}, false},
        {OpKind::Pow, [](double x, double y) { return std::pow(x, y); }, true},
    };
    for (const auto& [op, fn, positive] : ops)
        for (const auto& [a, b] : shape_pairs) check_binary(op, fn, a, b, positive);
}

TEST_CASE("unary ops match their scalar definitions") {
    const Tensor x = random_tensor({3, 7, 5}, 100, -6.0, 6.0);
    const Tensor positive = random_tensor({3, 7, 5}, 101, 0.0, 9.0);
    const auto check_unary = [](OpKind op, const Tensor& input, const std::function<double(double)>& fn) {
        CAPTURE(rlflow::op_name(op));
        std::vector<double> expected;
        for (const float v : input.floats()) expected.push_back(fn(v));
        check_close(run_op(op, {input}).at(0), input.shape(), expected);
    };
    check_unary(OpKind::Relu, x, [](double v) { return std::max(v, 0.0); });
    check_unary(OpKind::Sigmoid, x, [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
    check_unary(OpKind::Tanh, x, [](double v) { return std::tanh(v); });
    check_unary(OpKind::Erf, x, [](double v) { return std::erf(v); });
    check_unary(OpKind::Sqrt, positive, [](double v) { return std::sqrt(v); });
    check_unary(OpKind::Identity, x, [](double v) { return v; });
}

TEST_CASE("sigmoid saturates without overflow at extreme inputs") {
    const Tensor x = Tensor::from_floats({4}, {-200.0f, -90.0f, 90.0f, 200.0f});
    check_close(run_op(OpKind::Sigmoid, {x}).at(0), Shape{4}, {0.0, 0.0, 1.0, 1.0});
}

TEST_CASE("clip bounds values by min and max and defaults to no bound") {
    const Tensor x = random_tensor({4, 9}, 110, -3.0, 3.0);
    std::vector<double> both, low_only;
    for (const float v : x.floats()) {
        both.push_back(std::clamp<double>(v, -0.5, 1.25));
        low_only.push_back(std::max<double>(v, 0.0));
    }
    check_close(run_op(OpKind::Clip, {x}, {{"min", -0.5}, {"max", 1.25}}).at(0), x.shape(), both, 0.0);
    check_close(run_op(OpKind::Clip, {x}, {{"min", 0.0}}).at(0), x.shape(), low_only, 0.0);
    CHECK(run_op(OpKind::Clip, {x}).at(0) == x);
}

TEST_CASE("HardSigmoid, HardSwish and LeakyRelu match their ONNX definitions, defaults and attributes") {
    const Tensor x = random_tensor({2, 9, 7}, 120, -5.0, 5.0);
    const auto hard_sigmoid = [](double v, double alpha, double beta) { return std::clamp(alpha * v + beta, 0.0, 1.0); };
    std::vector<double> sigmoid_default, sigmoid_set, swish, leaky_default, leaky_set;
    for (const float f : x.floats()) {
        const double v = f;
        sigmoid_default.push_back(hard_sigmoid(v, 0.2, 0.5));
        sigmoid_set.push_back(hard_sigmoid(v, 0.5, 0.25));
        swish.push_back(v * hard_sigmoid(v, 1.0 / 6.0, 0.5));
        leaky_default.push_back(v >= 0 ? v : 0.01 * v);
        leaky_set.push_back(v >= 0 ? v : 0.3 * v);
    }
    check_close(run_op(OpKind::HardSigmoid, {x}).at(0), x.shape(), sigmoid_default, 1e-6);
    check_close(run_op(OpKind::HardSigmoid, {x}, {{"alpha", 0.5}, {"beta", 0.25}}).at(0), x.shape(), sigmoid_set, 1e-6);
    check_close(run_op(OpKind::HardSwish, {x}).at(0), x.shape(), swish, 1e-6);
    check_close(run_op(OpKind::LeakyRelu, {x}).at(0), x.shape(), leaky_default, 1e-6);
    check_close(run_op(OpKind::LeakyRelu, {x}, {{"alpha", 0.3}}).at(0), x.shape(), leaky_set, 1e-6);
    // The kinks: HardSwish is 0 at -3 and x at 3; HardSigmoid saturates at both ends.
    const Tensor edges = Tensor::from_floats({4}, {-3.0f, 3.0f, -100.0f, 100.0f});
    check_close(run_op(OpKind::HardSwish, {edges}).at(0), Shape{4}, {0.0, 3.0, 0.0, 100.0}, 0.0);
    check_close(run_op(OpKind::HardSigmoid, {edges}).at(0), Shape{4}, {0.0, 1.0, 0.0, 1.0}, 0.0);
}

TEST_CASE("Gelu matches the normal CDF in its exact form and the tanh approximation within it") {
    const Tensor x = random_tensor({3, 41}, 121, -6.0, 6.0);
    std::vector<double> exact, approximate;
    for (const float f : x.floats()) {
        const double v = f;
        exact.push_back(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
        approximate.push_back(0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / 3.141592653589793) * (v + 0.044715 * v * v * v))));
    }
    check_close(run_op(OpKind::Gelu, {x}).at(0), x.shape(), exact, 1e-6);
    check_close(run_op(OpKind::Gelu, {x}, {{"approximate", std::string("tanh")}}).at(0), x.shape(), approximate, 1e-6);
    // The two forms differ by at most about 5e-4 on this range (Hendrycks and Gimpel).
    for (std::size_t i = 0; i < exact.size(); ++i) CHECK(std::abs(exact[i] - approximate[i]) < 1e-3);
    CHECK_THROWS_AS(run_op(OpKind::Gelu, {x}, {{"approximate", std::string("sigmoid")}}), rlflow::shape_error);
}
