#include "support.hpp"

#include <array>

using namespace exec_test;

namespace {

struct ConvCase {
    Shape x, w;
    bool bias = false;
    Ints strides{1, 1}, pads{0, 0, 0, 0}, dilations{1, 1};
    std::int64_t group = 1;
    std::int64_t activation = 0;
};

/// Direct 7-loop convolution in double, written from the ONNX definition.
std::vector<double> conv_reference(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor* b, Shape& out) {
    const std::int64_t n_images = c.x[0], channels = c.x[1], height = c.x[2], width = c.x[3];
    const std::int64_t filters = c.w[0], per_group = c.w[1], kh_size = c.w[2], kw_size = c.w[3];
    const std::int64_t out_h = (height + c.pads[0] + c.pads[2] - ((kh_size - 1) * c.dilations[0] + 1)) / c.strides[0] + 1;
    const std::int64_t out_w = (width + c.pads[1] + c.pads[3] - ((kw_size - 1) * c.dilations[1] + 1)) / c.strides[1] + 1;
    out = Shape{n_images, filters, out_h, out_w};
    std::vector<double> y;
    for (std::int64_t n = 0; n < n_images; ++n)
        for (std::int64_t m = 0; m < filters; ++m)
            for (std::int64_t oh = 0; oh < out_h; ++oh)
                for (std::int64_t ow = 0; ow < out_w; ++ow) {
                    const std::int64_t g = m / (filters / c.group);
                    double acc = b ? at(*b, m) : 0.0;
                    for (std::int64_t ci = 0; ci < per_group; ++ci)
                        for (std::int64_t kh = 0; kh < kh_size; ++kh)
                            for (std::int64_t kw = 0; kw < kw_size; ++kw) {
                                const std::int64_t ih = oh * c.strides[0] - c.pads[0] + kh * c.dilations[0];
                                const std::int64_t iw = ow * c.strides[1] - c.pads[1] + kw * c.dilations[1];
                                if (ih < 0 || ih >= height || iw < 0 || iw >= width) continue;
                                acc += at(x, ((n * channels + g * per_group + ci) * height + ih) * width + iw)
                                       * at(w, ((m * per_group + ci) * kh_size + kh) * kw_size + kw);
                            }
                    if (c.activation == 1) acc = std::max(acc, 0.0);
                    if (c.activation == 2) acc = 1.0 / (1.0 + std::exp(-acc));
                    if (c.activation == 3) acc = std::tanh(acc);
                    y.push_back(acc);
                }
    return y;
}

void check_conv(const ConvCase& c, std::uint64_t seed) {
    const Tensor x = random_tensor(c.x, seed);
    const Tensor w = random_tensor(c.w, seed + 1);
    const Tensor b = random_tensor(Shape{c.w[0]}, seed + 2);
    std::vector<Tensor> inputs{x, w};
    if (c.bias) inputs.push_back(b);
    const Attributes attributes{{"strides", c.strides}, {"pads", c.pads},          {"dilations", c.dilations},
                                {"group", c.group},     {"activation", c.activation}};
    Shape out;
    const auto expected = conv_reference(c, x, w, c.bias ? &b : nullptr, out);
    check_close(run_op(OpKind::Conv2D, inputs, attributes).at(0), out, expected);
}

}  // namespace

TEST_CASE("conv matches a direct convolution with strides, dilations, asymmetric pads and bias") {
    SUBCASE("stride 2x1, dilation 1x2, pads top1 left0 bottom2 right1, bias") {
        check_conv({.x = {2, 3, 9, 7}, .w = {5, 3, 3, 2}, .bias = true, .strides = {2, 1}, .pads = {1, 0, 2, 1},
                    .dilations = {1, 2}},
                   11);
    }
    SUBCASE("unpadded dilation 2 without bias") {
        check_conv({.x = {1, 4, 11, 10}, .w = {3, 4, 3, 3}, .dilations = {2, 2}}, 12);
    }
    SUBCASE("stride 3 with a window larger than the stride and uneven padding") {
        check_conv({.x = {1, 2, 13, 8}, .w = {6, 2, 5, 4}, .bias = true, .strides = {3, 2}, .pads = {2, 1, 0, 3}}, 13);
    }
}

TEST_CASE("conv with groups applies each fused activation") {
    for (std::int64_t activation = 0; activation <= 3; ++activation) {
        CAPTURE(activation);
        check_conv({.x = {2, 6, 7, 5}, .w = {9, 2, 3, 3}, .bias = true, .pads = {1, 1, 1, 1}, .group = 3,
                    .activation = activation},
                   20 + static_cast<std::uint64_t>(activation));
    }
}

TEST_CASE("depthwise conv matches the reference") {
    check_conv({.x = {1, 5, 9, 9}, .w = {5, 1, 3, 3}, .bias = true, .strides = {2, 2}, .pads = {1, 1, 0, 0}, .group = 5,
                .activation = 1},
               30);
    check_conv({.x = {2, 4, 6, 7}, .w = {8, 1, 3, 3}, .pads = {1, 1, 1, 1}, .group = 4}, 31);
}

TEST_CASE("1x1 convs match the reference on the direct GEMM path and the strided path") {
    check_conv({.x = {2, 7, 5, 6}, .w = {4, 7, 1, 1}, .bias = true, .activation = 1}, 40);
    check_conv({.x = {1, 6, 5, 6}, .w = {4, 3, 1, 1}, .group = 2}, 41);
    check_conv({.x = {1, 7, 9, 6}, .w = {4, 7, 1, 1}, .strides = {2, 2}}, 42);
    check_conv({.x = {1, 3, 5, 5}, .w = {2, 3, 1, 1}, .pads = {1, 0, 0, 1}}, 43);
}

TEST_CASE("enlarge zero-pads a kernel centred in the larger window") {
    const Tensor w = random_tensor(Shape{3, 2, 1, 3}, 50);
    const Shape out{3, 2, 5, 7};
    std::vector<double> expected(static_cast<std::size_t>(out.numel()), 0.0);
    for (std::int64_t i = 0; i < w.numel(); ++i) {
        const Index k = unravel(i, w.shape());
        expected[static_cast<std::size_t>(ravel({k[0], k[1], k[2] + 2, k[3] + 2}, out))] = at(w, i);
    }
    check_close(run_op(OpKind::Enlarge, {w}, {{"kernel_shape", Ints{5, 7}}}).at(0), out, expected, 0.0);
}

TEST_CASE("an enlarged kernel with SAME padding computes the same convolution") {
    Graph g;
    const auto x = g.add_input("x", f32({1, 3, 8, 8}));
    const auto w = g.add_input("w", f32({4, 3, 3, 3}));
    const auto big = g.add_node(OpKind::Enlarge, {{w, 0}}, {{"kernel_shape", Ints{5, 5}}});
    const auto small = g.add_node(OpKind::Conv2D, {{x, 0}, {w, 0}}, {{"pads", Ints{1, 1, 1, 1}}});
    const auto large = g.add_node(OpKind::Conv2D, {{x, 0}, {big, 0}}, {{"pads", Ints{2, 2, 2, 2}}});
    g.add_output({small, 0});
    g.add_output({large, 0});
    const auto result = rlflow::exec::Executor{}.run(g, rlflow::exec::random_inputs(g, 51));
    std::vector<double> expected(result.outputs[0].floats().begin(), result.outputs[0].floats().end());
    check_close(result.outputs[1], Shape{1, 4, 8, 8}, expected);
}

namespace {

/// ConvTranspose by its definition: every input element scatters x * W into the output
/// at h * stride - pad + k * dilation.
std::vector<double> direct_conv_transpose(const Tensor& x, const Tensor& w, const Tensor* bias, const Shape& out,
                                          std::array<std::int64_t, 2> stride, std::array<std::int64_t, 4> pads,
                                          std::array<std::int64_t, 2> dilation, std::int64_t group) {
    std::vector<double> y(static_cast<std::size_t>(out.numel()), 0.0);
    const Shape& xs = x.shape();
    const Shape& ws = w.shape();
    const std::int64_t per_in = xs[1] / group, per_out = ws[1];
    for (std::int64_t n = 0; n < xs[0]; ++n)
        for (std::int64_t c = 0; c < xs[1]; ++c)
            for (std::int64_t h = 0; h < xs[2]; ++h)
                for (std::int64_t v = 0; v < xs[3]; ++v)
                    for (std::int64_t m = 0; m < per_out; ++m)
                        for (std::int64_t i = 0; i < ws[2]; ++i)
                            for (std::int64_t j = 0; j < ws[3]; ++j) {
                                const std::int64_t oh = h * stride[0] - pads[0] + i * dilation[0];
                                const std::int64_t ow = v * stride[1] - pads[1] + j * dilation[1];
                                if (oh < 0 || oh >= out[2] || ow < 0 || ow >= out[3]) continue;
                                const std::int64_t channel = (c / per_in) * per_out + m;
                                y[static_cast<std::size_t>(((n * out[1] + channel) * out[2] + oh) * out[3] + ow)] +=
                                    at(x, ((n * xs[1] + c) * xs[2] + h) * xs[3] + v) * at(w, ((c * ws[1] + m) * ws[2] + i) * ws[3] + j);
                            }
    if (bias)
        for (std::size_t k = 0; k < y.size(); ++k)
            y[k] += bias->floats()[static_cast<std::size_t>((static_cast<std::int64_t>(k) / (out[2] * out[3])) % out[1])];
    return y;
}

}  // namespace

TEST_CASE("ConvTranspose matches its definition with strides, dilations, asymmetric pads, output padding, groups and bias") {
    const Tensor x = random_tensor({2, 4, 3, 5}, 141);
    const Tensor w = random_tensor({4, 3, 3, 2}, 142);  // (C, M / group, kh, kw)
    const Tensor b = random_tensor({6}, 143);
    const Attributes a{{"strides", Ints{2, 3}}, {"pads", Ints{1, 0, 0, 2}}, {"dilations", Ints{1, 2}},
                       {"output_padding", Ints{1, 2}}, {"group", std::int64_t{2}}};
    // sides: 2 (3 - 1) + 1 + 2 + 1 - 1 = 7 and 3 (5 - 1) + 2 + 2 * 1 + 1 - 2 = 15
    const Shape out{2, 6, 7, 15};
    check_close(run_op(OpKind::ConvTranspose, {x, w, b}, a).at(0), out,
                direct_conv_transpose(x, w, &b, out, {2, 3}, {1, 0, 0, 2}, {1, 2}, 2), 1e-5);
    // Stride 1, no pads: the full correlation's adjoint, without bias.
    const Tensor w1 = random_tensor({4, 2, 3, 3}, 144);
    check_close(run_op(OpKind::ConvTranspose, {x, w1}).at(0), Shape{2, 2, 5, 7},
                direct_conv_transpose(x, w1, nullptr, Shape{2, 2, 5, 7}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1), 1e-5);
    CHECK_THROWS_AS(run_op(OpKind::ConvTranspose, {x, w1}, {{"strides", Ints{2, 2}}, {"output_padding", Ints{2, 0}}}),
                    rlflow::shape_error);
}
