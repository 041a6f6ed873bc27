#include "support.hpp"

#include <limits>
#include <string>

using namespace exec_test;

namespace {

/// numpy.pad index arithmetic for one axis after cropping: the kept source index for
/// padded position j of a length-n axis, or -1 for the constant.
std::int64_t padded_source(std::int64_t j, std::int64_t n, const std::string& mode) {
    if (j >= 0 && j < n) return j;
    if (mode == "constant") return -1;
    if (mode == "edge") return j < 0 ? 0 : n - 1;
    if (n == 1) return 0;
    while (j < 0 || j >= n) j = j < 0 ? -j : 2 * (n - 1) - j;  // reflect about the edge elements
    return j;
}

/// Pad in double: crop by the negative pads, then pad the cropped tensor.
std::vector<double> pad_reference(const Tensor& x, const Ints& pads, const std::string& mode, double value, Shape& out) {
    const Shape& shape = x.shape();
    const int rank = shape.rank();
    out = shape;
    for (int d = 0; d < rank; ++d) out[d] = shape[d] + pads[static_cast<std::size_t>(d)] + pads[static_cast<std::size_t>(d + rank)];
    std::vector<double> y;
    for (std::int64_t i = 0; i < out.numel(); ++i) {
        const Index o = unravel(i, out);
        Index source(static_cast<std::size_t>(rank));
        bool constant = false;
        for (int d = 0; d < rank; ++d) {
            const auto du = static_cast<std::size_t>(d);
            const std::int64_t crop_begin = std::max<std::int64_t>(0, -pads[du]);
            const std::int64_t crop_end = std::max<std::int64_t>(0, -pads[du + static_cast<std::size_t>(rank)]);
            const std::int64_t j = padded_source(o[du] - std::max<std::int64_t>(0, pads[du]), shape[d] - crop_begin - crop_end, mode);
            constant = constant || j < 0;
            source[du] = crop_begin + j;
        }
        y.push_back(constant ? value : at(x, ravel(source, shape)));
    }
    return y;
}

void check_pad(const Shape& shape, const Ints& pads, const std::string& mode, double value = 0.0) {
    CAPTURE(shape.to_string());
    CAPTURE(mode);
    const Tensor x = random_tensor(shape, 180);
    Shape out;
    const auto expected = pad_reference(x, pads, mode, value, out);
    const Attributes attributes{{"pads", pads}, {"mode", mode}, {"value", value}};
    check_close(run_op(OpKind::Pad, {x}, attributes).at(0), out, expected, 0.0);
}

}  // namespace

TEST_CASE("pad supports constant, reflect and edge modes, and negative pads crop") {
    for (const std::string mode : {"constant", "reflect", "edge"}) {
        check_pad({3, 4}, {1, 2, 2, 1}, mode, 0.5);
        check_pad({2, 3, 5}, {0, 1, 2, 1, 0, 3}, mode, -2.0);
        check_pad({4, 6}, {-1, 2, 1, -2}, mode);    // crop one side, pad the other
        check_pad({5, 4}, {-2, -1, -1, 0}, mode);   // crop only
        check_pad({2, 1, 3}, {0, 2, 0, 0, 3, 0}, mode);  // a length-1 axis
        check_pad({7}, {0, 0}, mode);                  // nothing to do
    }
    check_pad({3, 3}, {4, 5, 5, 4}, "reflect");  // pads longer than the axis fold back
}

TEST_CASE("split then concat gives the input back, and each part is a slice") {
    const Tensor x = random_tensor({3, 7, 4}, 190);
    const Ints sizes{2, 0, 4, 1};
    const auto parts = run_op(OpKind::Split, {x}, {{"axis", std::int64_t{1}}, {"split", sizes}});
    REQUIRE(parts.size() == 4);
    std::int64_t offset = 0;
    for (std::size_t p = 0; p < parts.size(); ++p) {
        const Shape shape{3, sizes[p], 4};
        std::vector<double> slice;
        for (std::int64_t i = 0; i < shape.numel(); ++i) {
            const Index index = unravel(i, shape);
            slice.push_back(at(x, ravel({index[0], index[1] + offset, index[2]}, x.shape())));
        }
        check_close(parts[p], shape, slice, 0.0);
        offset += sizes[p];
    }
    CHECK(run_op(OpKind::Concat, parts, {{"axis", std::int64_t{-2}}}).at(0) == x);
}

TEST_CASE("concat joins inputs of different extents along the first and last axes") {
    const Tensor a = random_tensor({2, 3}, 200);
    const Tensor b = random_tensor({1, 3}, 201);
    const Tensor c = random_tensor({2, 5}, 202);
    const Tensor rows = run_op(OpKind::Concat, {a, b}, {{"axis", std::int64_t{0}}}).at(0);
    std::vector<double> expected(a.floats().begin(), a.floats().end());
    expected.insert(expected.end(), b.floats().begin(), b.floats().end());
    check_close(rows, Shape{3, 3}, expected, 0.0);
    const Tensor cols = run_op(OpKind::Concat, {a, c}, {{"axis", std::int64_t{1}}}).at(0);
    std::vector<double> joined;
    for (std::int64_t r = 0; r < 2; ++r) {
        for (std::int64_t i = 0; i < 3; ++i) joined.push_back(at(a, r * 3 + i));
        for (std::int64_t i = 0; i < 5; ++i) joined.push_back(at(c, r * 5 + i));
    }
    check_close(cols, Shape{2, 8}, joined, 0.0);
}

TEST_CASE("transpose permutes dimensions like the reference") {
    const Tensor x = random_tensor({2, 3, 4, 5}, 210);
    for (const Ints& perm : {Ints{0, 2, 3, 1}, Ints{3, 1, 0, 2}, Ints{0, 1, 3, 2}, Ints{3, 2, 1, 0}}) {
        Shape out;
        for (const auto p : perm) out.push_back(x.shape()[static_cast<int>(p)]);
        std::vector<double> expected;
        for (std::int64_t i = 0; i < out.numel(); ++i) {
            const Index o = unravel(i, out);
            Index source(4);
            for (std::size_t d = 0; d < 4; ++d) source[static_cast<std::size_t>(perm[d])] = o[d];
            expected.push_back(at(x, ravel(source, x.shape())));
        }
        check_close(run_op(OpKind::Transpose, {x}, {{"perm", perm}}).at(0), out, expected, 0.0);
    }
    const Tensor reversed = run_op(OpKind::Transpose, {x}).at(0);  // default: reverse the dims
    CHECK(reversed.shape() == Shape{5, 4, 3, 2});
    CHECK(at(reversed, ravel({4, 1, 2, 1}, reversed.shape())) == at(x, ravel({1, 2, 1, 4}, x.shape())));
}

TEST_CASE("reshape, flatten and identity pass the data through with their new shapes") {
    const Tensor x = random_tensor({2, 3, 4}, 220);
    const std::vector<float> data(x.floats().begin(), x.floats().end());
    const Tensor reshaped = run_op(OpKind::Reshape, {x}, {{"shape", Ints{4, -1}}}).at(0);
    CHECK(reshaped.shape() == Shape{4, 6});
    CHECK(std::vector<float>(reshaped.floats().begin(), reshaped.floats().end()) == data);
    const Tensor flat = run_op(OpKind::Flatten, {x}, {{"axis", std::int64_t{2}}}).at(0);
    CHECK(flat.shape() == Shape{6, 4});
    CHECK(std::vector<float>(flat.floats().begin(), flat.floats().end()) == data);
    CHECK(run_op(OpKind::Identity, {x}).at(0) == x);
}

TEST_CASE("a strided Slice reads first + i * step on every axis, backwards for negative steps") {
    const Tensor x = random_tensor({5, 6, 7}, 130);
    struct Case {
        Ints starts, ends, steps;
        Ints firsts;  // the first index read on each axis, by hand
        Shape out;
    };
    constexpr std::int64_t before_zero = std::numeric_limits<std::int64_t>::min();
    const std::vector<Case> cases{
        {{0, 0, 0}, {5, 6, 7}, {2, 1, 3}, {0, 0, 0}, {3, 6, 3}},               // PatchMerging's x[0::2]
        {{1, 0, 6}, {5, 6, before_zero}, {2, 1, -1}, {1, 0, 6}, {2, 6, 7}},    // x[1::2, :, ::-1]
        {{-1, 5, -2}, {-6, -100, 0}, {-2, -4, -3}, {4, 5, 5}, {3, 2, 2}},      // negative indices, clamped
        {{0, 2, 0}, {100, 3, 7}, {7, 1, 1}, {0, 2, 0}, {1, 1, 7}},             // a step longer than the axis
    };
    for (const Case& c : cases) {
        CAPTURE(rlflow::detail::ints_to_string(c.steps));
        std::vector<double> expected;
        for (std::int64_t i = 0; i < c.out.numel(); ++i) {
            const Index out = unravel(i, c.out);
            Index in(3);
            for (std::size_t d = 0; d < 3; ++d) in[d] = c.firsts[d] + out[d] * c.steps[d];
            expected.push_back(at(x, ravel(in, x.shape())));
        }
        const Attributes attributes{{"starts", c.starts}, {"ends", c.ends}, {"steps", c.steps}};
        check_close(run_op(OpKind::Slice, {x}, attributes).at(0), c.out, expected, 0.0);
    }
}

TEST_CASE("Resize: nearest rounds as its nearest_mode says, linear interpolates between the clamped neighbours") {
    const auto counting = [](const Shape& shape) {
        std::vector<float> v(static_cast<std::size_t>(shape.numel()));
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
        return Tensor::from_floats(shape, std::move(v));
    };
    const auto resize = [](const Tensor& x, std::string mode, std::string coordinates, std::vector<std::int64_t> sizes,
                           std::string rounding = "round_prefer_floor") {
        return run_op(OpKind::Resize, {x},
                      {{"mode", std::move(mode)}, {"coordinate_transformation_mode", std::move(coordinates)},
                       {"nearest_mode", std::move(rounding)}, {"sizes", std::move(sizes)}})
            .at(0);
    };
    // align_corners, 3 -> 5: sources 0, 0.5, 1, 1.5, 2; halves go down or up by the mode.
    const Tensor three = counting({1, 3});
    check_close(resize(three, "nearest", "align_corners", {1, 5}), Shape{1, 5}, {0, 0, 1, 1, 2}, 0.0);
    check_close(resize(three, "nearest", "align_corners", {1, 5}, "round_prefer_ceil"), Shape{1, 5}, {0, 1, 1, 2, 2}, 0.0);
    check_close(resize(three, "nearest", "align_corners", {1, 5}, "floor"), Shape{1, 5}, {0, 0, 1, 1, 2}, 0.0);
    check_close(resize(three, "nearest", "align_corners", {1, 5}, "ceil"), Shape{1, 5}, {0, 1, 1, 2, 2}, 0.0);
    check_close(resize(three, "linear", "align_corners", {1, 5}), Shape{1, 5}, {0, 0.5, 1, 1.5, 2}, 1e-6);
    // asymmetric nearest upsampling by 2 (floor) repeats each element twice on both axes.
    check_close(resize(counting({1, 1, 2, 2}), "nearest", "asymmetric", {1, 1, 4, 4}, "floor"), Shape{1, 1, 4, 4},
                {0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3}, 0.0);
    // half_pixel bilinear 2x2 -> 4x4 of x = 2 * row + column: sources clamp to [0, 1] at
    // -0.25, 0.25, 0.75, 1.25, and bilinear interpolation reproduces a linear function.
    const std::vector<double> c{0, 0.25, 0.75, 1};
    std::vector<double> expected;
    for (const double r : c)
        for (const double k : c) expected.push_back(2 * r + k);
    check_close(resize(counting({1, 1, 2, 2}), "linear", "half_pixel", {1, 1, 4, 4}), Shape{1, 1, 4, 4}, expected, 1e-6);
    // pytorch_half_pixel maps an axis resized to length 1 to source 0; half_pixel to its middle.
    check_close(resize(counting({1, 4}), "linear", "pytorch_half_pixel", {1, 1}), Shape{1, 1}, {0}, 1e-6);
    check_close(resize(counting({1, 4}), "linear", "half_pixel", {1, 1}), Shape{1, 1}, {1.5}, 1e-6);
    // Scales give the sizes floor(scale * dim); sizes give the scales size / dim.
    const auto by_scales = run_op(OpKind::Resize, {counting({2, 5})}, {{"scales", std::vector<double>{1.0, 0.5}}}).at(0);
    CHECK(by_scales.shape() == Shape{2, 2});
    CHECK_THROWS_AS(run_op(OpKind::Resize, {three}, {{"mode", std::string("cubic")}, {"sizes", std::vector<std::int64_t>{1, 6}}}),
                    rlflow::shape_error);
    CHECK_THROWS_AS(run_op(OpKind::Resize, {three}, {{"scales", std::vector<double>{1.0, 0.0}}}), rlflow::shape_error);
}
