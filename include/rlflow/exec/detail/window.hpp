#pragma once
/// \file
/// Sliding-window index arithmetic shared by convolution (im2col) and pooling.

#include <rlflow/core/attributes.hpp>
#include <rlflow/core/shape.hpp>

#include <algorithm>
#include <array>
#include <cstdint>

namespace rlflow::detail {

/// Ceiling of a / b for b > 0 and any sign of a.
[[nodiscard]] constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept {
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

/// The half-open range [begin, end) of i in [0, count) with lo <= offset + i * step < hi
/// (step > 0). Positions are increasing in i, so the range is contiguous.
struct IndexRange {
    std::int64_t begin = 0;
    std::int64_t end = 0;
    [[nodiscard]] constexpr std::int64_t size() const noexcept { return end - begin; }
};

[[nodiscard]] constexpr IndexRange indices_inside(std::int64_t count, std::int64_t offset, std::int64_t step,
                                                  std::int64_t lo, std::int64_t hi) noexcept {
    const std::int64_t begin = std::clamp<std::int64_t>(ceil_div(lo - offset, step), 0, count);
    const std::int64_t end = std::clamp<std::int64_t>(ceil_div(hi - offset, step), begin, count);
    return {begin, end};
}

/// One spatial axis of a window op (ONNX conv/pool attributes for that axis).
struct WindowAxis {
    std::int64_t input = 1;
    std::int64_t output = 1;
    std::int64_t kernel = 1;
    std::int64_t stride = 1;
    std::int64_t pad_begin = 0;
    std::int64_t pad_end = 0;
    std::int64_t dilation = 1;

    /// Input position of tap 0 of output `o`.
    [[nodiscard]] constexpr std::int64_t start(std::int64_t o) const noexcept { return o * stride - pad_begin; }
    /// Taps of output `o` that land inside the input.
    [[nodiscard]] constexpr IndexRange valid_taps(std::int64_t o) const noexcept {
        return indices_inside(kernel, start(o), dilation, 0, input);
    }
    /// Taps of output `o` inside the padded extent [-pad_begin, input + pad_end); with
    /// ceil_mode a last window may run past it, and those taps count for nothing.
    [[nodiscard]] constexpr IndexRange padded_taps(std::int64_t o) const noexcept {
        return indices_inside(kernel, start(o), dilation, -pad_begin, input + pad_end);
    }
    /// Outputs whose tap `k` lands inside the input (im2col's unpadded run).
    [[nodiscard]] constexpr IndexRange outputs_inside(std::int64_t k) const noexcept {
        return indices_inside(output, k * dilation - pad_begin, stride, 0, input);
    }
};

/// The two spatial axes (height, width) of an NCHW window op from its attributes.
[[nodiscard]] inline std::array<WindowAxis, 2> window_axes(const Attributes& attributes, const Shape& input, const Shape& output) {
    const auto& kernel = attributes.get_ints("kernel_shape");
    const auto& strides = attributes.get_ints("strides");
    const auto& pads = attributes.get_ints("pads");
    const auto& dilations = attributes.get_ints("dilations");
    std::array<WindowAxis, 2> axes;
    for (std::size_t i = 0; i < 2; ++i) {
        const int dim = static_cast<int>(i) + 2;
        axes[i] = {input[dim], output[dim], kernel[i], strides[i], pads[i], pads[i + 2], dilations[i]};
    }
    return axes;
}

}  // namespace rlflow::detail
