#include "support.hpp"

using namespace exec_test;

TEST_CASE("batch normalization matches the inference formula per channel") {
    const Shape shape{2, 3, 4, 5};
    const Tensor x = random_tensor(shape, 140);
    const Tensor scale = random_tensor({3}, 141);
    const Tensor bias = random_tensor({3}, 142);
    const Tensor mean = random_tensor({3}, 143);
    const Tensor var = random_tensor({3}, 144, 0.5, 1.5);
    const double epsilon = 1e-3;
    std::vector<double> expected;
    for (std::int64_t i = 0; i < shape.numel(); ++i) {
        const std::int64_t c = unravel(i, shape)[1];
        expected.push_back(at(scale, c) * (at(x, i) - at(mean, c)) / std::sqrt(at(var, c) + epsilon) + at(bias, c));
    }
    check_close(run_op(OpKind::BatchNormalization, {x, scale, bias, mean, var}, {{"epsilon", epsilon}}).at(0), shape,
                expected);
}

TEST_CASE("batch normalization accepts rank 2 inputs") {
    const Tensor x = random_tensor({3, 4}, 145);
    const Tensor ones = Tensor::from_floats({4}, {1, 1, 1, 1});
    const Tensor zeros = Tensor::from_floats({4}, {0, 0, 0, 0});
    const Tensor y = run_op(OpKind::BatchNormalization, {x, ones, zeros, zeros, ones}, {{"epsilon", 0.0}}).at(0);
    check_close(y, x.shape(), std::vector<double>(x.floats().begin(), x.floats().end()));
}

namespace {

/// LayerNormalization in double: rows are the dims [axis, rank).
std::vector<double> layer_norm_reference(const Tensor& x, int axis, const Tensor& scale, const Tensor* bias,
                                         double epsilon) {
    const Shape& shape = x.shape();
    const Shape row_shape(shape.dims().subspan(static_cast<std::size_t>(axis)));
    const std::int64_t inner = row_shape.numel();
    std::vector<double> y;
    for (std::int64_t r = 0; r < shape.numel() / inner; ++r) {
        double mean = 0, var = 0;
        for (std::int64_t i = 0; i < inner; ++i) mean += at(x, r * inner + i) / static_cast<double>(inner);
        for (std::int64_t i = 0; i < inner; ++i) var += std::pow(at(x, r * inner + i) - mean, 2) / static_cast<double>(inner);
        for (std::int64_t i = 0; i < inner; ++i) {
            const Index index = unravel(i, row_shape);
            const double shift = bias ? at(*bias, broadcast_source(index, bias->shape())) : 0.0;
            y.push_back((at(x, r * inner + i) - mean) / std::sqrt(var + epsilon)
                            * at(scale, broadcast_source(index, scale.shape())) + shift);
        }
    }
    return y;
}

}  // namespace

TEST_CASE("layer normalization normalises the dims from axis on, with broadcast scale and bias") {
    const Tensor x = random_tensor({3, 4, 5}, 150, -2.0, 3.0);
    SUBCASE("axis 1 with a full scale and a broadcast bias") {
        const Tensor scale = random_tensor({4, 5}, 151);
        const Tensor bias = random_tensor({5}, 152);
        check_close(run_op(OpKind::LayerNormalization, {x, scale, bias}, {{"axis", std::int64_t{1}}, {"epsilon", 1e-3}}).at(0),
                    x.shape(), layer_norm_reference(x, 1, scale, &bias, 1e-3));
    }
    SUBCASE("last axis (negative) without bias") {
        const Tensor scale = random_tensor({5}, 153);
        check_close(run_op(OpKind::LayerNormalization, {x, scale}, {{"axis", std::int64_t{-1}}}).at(0), x.shape(),
                    layer_norm_reference(x, 2, scale, nullptr, 1e-5));
    }
    SUBCASE("axis 0 normalises the whole tensor") {
        const Tensor scale = random_tensor({1, 5}, 154);
        check_close(run_op(OpKind::LayerNormalization, {x, scale}, {{"axis", std::int64_t{0}}}).at(0), x.shape(),
                    layer_norm_reference(x, 0, scale, nullptr, 1e-5));
    }
}

TEST_CASE("softmax along a middle axis matches the reference and each slice sums to one") {
    const Shape shape{3, 5, 4};
    const Tensor x = random_tensor(shape, 160, -30.0, 30.0);  // wide range: needs the max shift
    std::vector<double> expected(static_cast<std::size_t>(shape.numel()));
    for (std::int64_t o = 0; o < 3; ++o)
        for (std::int64_t i = 0; i < 4; ++i) {
            double top = -INFINITY, sum = 0;
            for (std::int64_t k = 0; k < 5; ++k) top = std::max(top, at(x, (o * 5 + k) * 4 + i));
            for (std::int64_t k = 0; k < 5; ++k) sum += std::exp(at(x, (o * 5 + k) * 4 + i) - top);
            for (std::int64_t k = 0; k < 5; ++k)
                expected[static_cast<std::size_t>((o * 5 + k) * 4 + i)] = std::exp(at(x, (o * 5 + k) * 4 + i) - top) / sum;
        }
    const Tensor y = run_op(OpKind::Softmax, {x}, {{"axis", std::int64_t{1}}}).at(0);
    check_close(y, shape, expected, 1e-5);
    double slice = 0;
    for (std::int64_t k = 0; k < 5; ++k) slice += at(y, k * 4 + 2);
    CHECK(slice == doctest::Approx(1.0).epsilon(1e-5));
}

TEST_CASE("softmax on the last axis survives inputs that would overflow exp") {
    const Tensor x = Tensor::from_floats({2, 3}, {1000.0f, 1000.0f, 1000.0f, -1000.0f, 0.0f, 1000.0f});
    check_close(run_op(OpKind::Softmax, {x}).at(0), Shape{2, 3}, {1.0 / 3, 1.0 / 3, 1.0 / 3, 0.0, 0.0, 1.0}, 1e-6);
}

namespace {

/// Checks ReduceMean, ReduceSum and ReduceMax over `axes` against sums and maxima taken
/// in double over every element.
void check_reductions(const Tensor& x, const Ints& axes, bool keepdims) {
    CAPTURE(axes.size());
    CAPTURE(keepdims);
    const Shape& shape = x.shape();
    Ints positive;
    for (const std::int64_t a : axes) positive.push_back(a < 0 ? a + shape.rank() : a);
    const auto reduced = [&](int d) {
        return positive.empty() || std::find(positive.begin(), positive.end(), d) != positive.end();
    };
    Shape kept, out;
    for (int d = 0; d < shape.rank(); ++d) {
        kept.push_back(reduced(d) ? 1 : shape[d]);
        if (!reduced(d)) out.push_back(shape[d]);
        else if (keepdims) out.push_back(1);
    }
    std::vector<double> sums(static_cast<std::size_t>(kept.numel()), 0.0);
    std::vector<double> maxima(sums.size(), -INFINITY);
    for (std::int64_t i = 0; i < shape.numel(); ++i) {
        Index index = unravel(i, shape);
        for (int d = 0; d < shape.rank(); ++d)
            if (reduced(d)) index[static_cast<std::size_t>(d)] = 0;
        const auto k = static_cast<std::size_t>(ravel(index, kept));
        sums[k] += at(x, i);
        maxima[k] = std::max(maxima[k], at(x, i));
    }
    const Attributes attributes{{"axes", axes}, {"keepdims", std::int64_t{keepdims}}};
    check_close(run_op(OpKind::ReduceSum, {x}, attributes).at(0), out, sums);
    check_close(run_op(OpKind::ReduceMax, {x}, attributes).at(0), out, maxima, 0.0);
    const double count = static_cast<double>(shape.numel() / kept.numel());
    for (double& s : sums) s /= count;
    check_close(run_op(OpKind::ReduceMean, {x}, attributes).at(0), out, sums);
}

}  // namespace

TEST_CASE("reduce mean, sum and max over chosen axes with keepdims 0 and 1 match the reference") {
    const Tensor x = random_tensor({3, 4, 5, 2}, 170);
    for (const bool keepdims : {false, true}) {
        check_reductions(x, {1}, keepdims);
        check_reductions(x, {0, 2}, keepdims);
        check_reductions(x, {2, 3}, keepdims);
        check_reductions(x, {-1}, keepdims);
        check_reductions(x, {}, keepdims);
    }
}

TEST_CASE("instance normalization normalises each (n, c) plane and applies the channel's scale and bias") {
    const Tensor x = random_tensor({2, 3, 4, 5}, 131, -2.0, 3.0);
    const Tensor scale = Tensor::from_floats({3}, {0.5f, 1.0f, -2.0f});
    const Tensor bias = Tensor::from_floats({3}, {0.0f, 1.0f, 0.25f});
    const double epsilon = 1e-3;
    std::vector<double> expected;
    const auto v = x.floats();
    for (std::size_t plane = 0; plane < 6; ++plane) {
        double mean = 0, variance = 0;
        for (std::size_t i = 0; i < 20; ++i) mean += v[plane * 20 + i] / 20.0;
        for (std::size_t i = 0; i < 20; ++i) variance += (v[plane * 20 + i] - mean) * (v[plane * 20 + i] - mean) / 20.0;
        const std::size_t c = plane % 3;
        for (std::size_t i = 0; i < 20; ++i)
            expected.push_back((v[plane * 20 + i] - mean) / std::sqrt(variance + epsilon) * scale.floats()[c] + bias.floats()[c]);
    }
    check_close(run_op(OpKind::InstanceNormalization, {x, scale, bias}, {{"epsilon", epsilon}}).at(0), x.shape(), expected, 1e-5);
    CHECK_THROWS_AS(run_op(OpKind::InstanceNormalization, {x, Tensor::from_floats({2}, {1, 1}), bias}), rlflow::shape_error);
}
