#pragma once
/// \file
/// MaxPool, AveragePool and GlobalAveragePool over NCHW.

#include <rlflow/exec/detail/eigen.hpp>
#include <rlflow/exec/detail/view.hpp>
#include <rlflow/exec/detail/window.hpp>

#include <limits>
#include <vector>

namespace rlflow::detail {

/// The taps of every output position along one axis.
struct AxisTaps {
    std::vector<IndexRange> valid;
    /// Taps inside the padded extent (count_include_pad's divisor).
    std::vector<std::int64_t> padded;
};

[[nodiscard]] inline AxisTaps axis_taps(const WindowAxis& axis) {
    AxisTaps taps;
    for (std::int64_t o = 0; o < axis.output; ++o) {
        taps.valid.push_back(axis.valid_taps(o));
        taps.padded.push_back(axis.padded_taps(o).size());
    }
    return taps;
}

/// Max over the input taps; padding never wins. A window with no input tap (possible
/// only when a pad reaches a whole window) gives lowest(), as onnxruntime does.
struct MaxWindow {
    static constexpr float initial = std::numeric_limits<float>::lowest();
    static float combine(float acc, float x) noexcept { return x > acc ? x : acc; }
    static float finish(float acc, std::int64_t, std::int64_t) noexcept { return acc; }
};

/// Sum over the input taps divided by their number, or with count_include_pad by the
/// number of taps inside the padded extent. A window with nothing to divide by gives 0.
template <bool CountIncludePad>
struct AverageWindow {
    static constexpr float initial = 0.0f;
    static float combine(float acc, float x) noexcept { return acc + x; }
    static float finish(float acc, std::int64_t valid, std::int64_t padded) noexcept {
        const std::int64_t divisor = CountIncludePad ? padded : valid;
        return divisor > 0 ? acc / static_cast<float>(divisor) : 0.0f;
    }
};

/// Reduces one input plane into one output plane with `Window`.
template <class Window>
void pool_plane(const float* x, float* y, const std::array<WindowAxis, 2>& axes, const AxisTaps& rows,
                const AxisTaps& cols) {
    const WindowAxis& height = axes[0];
    const WindowAxis& width = axes[1];
    for (std::int64_t oh = 0; oh < height.output; ++oh) {
        const IndexRange taps_h = rows.valid[static_cast<std::size_t>(oh)];
        for (std::int64_t ow = 0; ow < width.output; ++ow) {
            const IndexRange taps_w = cols.valid[static_cast<std::size_t>(ow)];
            float acc = Window::initial;
            for (std::int64_t kh = taps_h.begin; kh < taps_h.end; ++kh) {
                const std::int64_t line = (height.start(oh) + kh * height.dilation) * width.input + width.start(ow);
                for (std::int64_t kw = taps_w.begin; kw < taps_w.end; ++kw)
                    acc = Window::combine(acc, x[line + kw * width.dilation]);
            }
            const std::int64_t padded = rows.padded[static_cast<std::size_t>(oh)] * cols.padded[static_cast<std::size_t>(ow)];
            *y++ = Window::finish(acc, taps_h.size() * taps_w.size(), padded);
        }
    }
}

template <class Window>
void pool(const KernelArgs& args) {
    const ConstView& x = args.inputs[0];
    const MutableView& y = args.outputs[0];
    const auto axes = window_axes(args.node.attributes, x.shape, y.shape);
    const AxisTaps rows = axis_taps(axes[0]);
    const AxisTaps cols = axis_taps(axes[1]);
    const std::int64_t planes = x.shape[0] * x.shape[1];
    const std::int64_t in_size = axes[0].input * axes[1].input, out_size = axes[0].output * axes[1].output;
    for (std::int64_t p = 0; p < planes; ++p)
        pool_plane<Window>(x.data.data() + p * in_size, y.data.data() + p * out_size, axes, rows, cols);
}

inline void max_pool_kernel(const KernelArgs& args) { pool<MaxWindow>(args); }

inline void average_pool_kernel(const KernelArgs& args) {
    if (args.node.attributes.get_int("count_include_pad", 0) != 0) pool<AverageWindow<true>>(args);
    else pool<AverageWindow<false>>(args);
}

/// GlobalAveragePool: the mean of every (n, c) plane.
inline void global_average_pool_kernel(const KernelArgs& args) {
    const Shape& x = args.inputs[0].shape;
    const std::int64_t planes = x[0] * x[1];
    const auto in = array(args.inputs[0].data.data(), planes, x.product(2, x.rank()));
    array(args.outputs[0].data.data(), planes, 1) = in.rowwise().mean();
}

}  // namespace rlflow::detail
