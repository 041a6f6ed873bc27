#include "support.hpp"

#include <limits>

using namespace exec_test;

namespace {

struct PoolCase {
    Shape x;
    Ints kernel, strides{1, 1}, pads{0, 0, 0, 0}, dilations{1, 1};
    bool ceil_mode = false;
    bool count_include_pad = false;
};

/// Output extent of one axis. In ceil mode a last window that would start inside the end
/// padding is dropped (PyTorch's rule, which onnxruntime and the opset-19 spec follow).
std::int64_t pooled_size(std::int64_t in, std::int64_t pad_begin, std::int64_t pad_end, std::int64_t kernel,
                         std::int64_t stride, std::int64_t dilation, bool ceil_mode) {
    const double span = static_cast<double>(in + pad_begin + pad_end - ((kernel - 1) * dilation + 1));
    const double steps = span / static_cast<double>(stride);
    std::int64_t size = static_cast<std::int64_t>(ceil_mode ? std::ceil(steps) : std::floor(steps)) + 1;
    if (ceil_mode && (size - 1) * stride >= in + pad_begin) --size;
    return size;
}

/// Direct pooling in double. Max ignores padding; average divides by the taps inside
/// the input, or with count_include_pad by the taps inside the padded extent
/// [-pad_begin, in + pad_end) (ceil_mode windows may run past it).
std::vector<double> pool_reference(const PoolCase& c, const Tensor& x, bool average, Shape& out) {
    const std::int64_t height = c.x[2], width = c.x[3];
    const std::int64_t out_h = pooled_size(height, c.pads[0], c.pads[2], c.kernel[0], c.strides[0], c.dilations[0], c.ceil_mode);
    const std::int64_t out_w = pooled_size(width, c.pads[1], c.pads[3], c.kernel[1], c.strides[1], c.dilations[1], c.ceil_mode);
    out = Shape{c.x[0], c.x[1], out_h, out_w};
    std::vector<double> y;
    for (std::int64_t plane = 0; plane < c.x[0] * c.x[1]; ++plane)
        for (std::int64_t oh = 0; oh < out_h; ++oh)
            for (std::int64_t ow = 0; ow < out_w; ++ow) {
                double best = -std::numeric_limits<double>::infinity(), sum = 0;
                std::int64_t inside = 0, padded = 0;
                for (std::int64_t kh = 0; kh < c.kernel[0]; ++kh)
                    for (std::int64_t kw = 0; kw < c.kernel[1]; ++kw) {
                        const std::int64_t ih = oh * c.strides[0] - c.pads[0] + kh * c.dilations[0];
                        const std::int64_t iw = ow * c.strides[1] - c.pads[1] + kw * c.dilations[1];
                        const bool in_pad_h = ih >= -c.pads[0] && ih < height + c.pads[2];
                        const bool in_pad_w = iw >= -c.pads[1] && iw < width + c.pads[3];
                        padded += in_pad_h && in_pad_w ? 1 : 0;
                        if (ih < 0 || ih >= height || iw < 0 || iw >= width) continue;
                        const double v = at(x, (plane * height + ih) * width + iw);
                        best = std::max(best, v);
                        sum += v;
                        ++inside;
                    }
                y.push_back(average ? sum / static_cast<double>(c.count_include_pad ? padded : inside) : best);
            }
    return y;
}

void check_pool(const PoolCase& c, bool average) {
    const Tensor x = random_tensor(c.x, 120, -2.0, -0.5);  // all negative: a padded 0 would win a max
    Attributes attributes{{"kernel_shape", c.kernel}, {"strides", c.strides},
                          {"pads", c.pads},           {"dilations", c.dilations},
                          {"ceil_mode", std::int64_t{c.ceil_mode}}};
    if (average) attributes.set("count_include_pad", std::int64_t{c.count_include_pad});
    Shape out;
    const auto expected = pool_reference(c, x, average, out);
    check_close(run_op(average ? OpKind::AveragePool : OpKind::MaxPool, {x}, attributes).at(0), out, expected);
}

const std::vector<PoolCase> pool_cases{
    {.x = {2, 3, 9, 8}, .kernel = {3, 3}, .strides = {2, 2}},
    {.x = {1, 2, 10, 10}, .kernel = {3, 2}, .strides = {2, 3}, .pads = {1, 0, 1, 1}, .ceil_mode = true},
    {.x = {1, 2, 6, 6}, .kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}, .ceil_mode = true},
    {.x = {1, 3, 11, 7}, .kernel = {2, 3}, .strides = {3, 2}, .pads = {1, 2, 0, 1}, .dilations = {2, 1}},
    {.x = {2, 1, 7, 7}, .kernel = {3, 3}, .pads = {1, 1, 1, 1}},
    // Ceil mode would add a 4th window per axis starting at 6 >= 5 + 1, inside the end
    // padding: it is dropped, leaving 3.
    {.x = {1, 2, 5, 5}, .kernel = {2, 2}, .strides = {2, 2}, .pads = {1, 1, 1, 1}, .ceil_mode = true},
};

}  // namespace

TEST_CASE("max pool with padding, dilation and ceil mode matches the reference, padding never winning") {
    for (const PoolCase& c : pool_cases) {
        CAPTURE(c.x.to_string());
        check_pool(c, false);
    }
}

TEST_CASE("average pool divides by the valid taps, or by the padded window with count_include_pad") {
    for (const bool include : {false, true})
        for (PoolCase c : pool_cases) {
            CAPTURE(c.x.to_string());
            CAPTURE(include);
            c.count_include_pad = include;
            check_pool(c, true);
        }
}

TEST_CASE("a ceil-mode window running past the end padding is clipped to the padded extent") {
    // H = W = 6, pads 1, kernel 3, stride 2, ceil mode: 4 outputs per axis; the last
    // window covers rows 5, 6 (end padding) and 7 (outside even the padding).
    const Tensor ones = Tensor::from_floats({1, 1, 6, 6}, std::vector<float>(36, 1.0f));
    const Attributes base{{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}},
                          {"ceil_mode", std::int64_t{1}}};
    Attributes include = base;
    include.set("count_include_pad", std::int64_t{1});
    const Tensor counted = run_op(OpKind::AveragePool, {ones}, include).at(0);
    REQUIRE(counted.shape() == Shape{1, 1, 4, 4});
    CHECK(counted.floats()[0] == doctest::Approx(4.0 / 9.0));    // 2x2 inside of a 3x3 window
    CHECK(counted.floats()[5] == doctest::Approx(1.0));          // fully inside
    CHECK(counted.floats()[15] == doctest::Approx(1.0 / 4.0));   // 1 input tap, 2x2 padded taps
    CHECK(counted.floats()[3] == doctest::Approx(2.0 / 6.0));    // 2x1 input taps, 3x2 padded taps
    const Tensor valid_only = run_op(OpKind::AveragePool, {ones}, base).at(0);
    for (const float v : valid_only.floats()) CHECK(v == doctest::Approx(1.0));
}

TEST_CASE("global average pool averages every plane") {
    const Shape shape{2, 3, 5, 7};
    const Tensor x = random_tensor(shape, 130);
    const std::int64_t planes = shape[0] * shape[1], pixels = shape[2] * shape[3];
    std::vector<double> expected;
    for (std::int64_t plane = 0; plane < planes; ++plane) {
        double sum = 0;
        for (std::int64_t i = 0; i < pixels; ++i) sum += at(x, plane * pixels + i);
        expected.push_back(sum / static_cast<double>(pixels));
    }
    check_close(run_op(OpKind::GlobalAveragePool, {x}).at(0), Shape{2, 3, 1, 1}, expected);
}
