#pragma once
/// \file
/// Conv2D as im2col + GEMM per image and group (a 1x1, stride-1, unpadded convolution
/// multiplies the input directly), ConvTranspose as its adjoint (GEMM + col2im), and the
/// kernel transforms Enlarge, which zero-pads a kernel, and MergeGConv, which merges the
/// groups of a grouped kernel.

#include <rlflow/exec/detail/eigen.hpp>
#include <rlflow/exec/detail/elementwise.hpp>
#include <rlflow/exec/detail/window.hpp>

#include <algorithm>
#include <memory>

namespace rlflow::detail {

/// The sizes of one Conv2D, per group where that is what the GEMM sees.
struct ConvGeometry {
    std::array<WindowAxis, 2> axes;
    std::int64_t batch = 1;
    std::int64_t group = 1;
    /// Input channels per group.
    std::int64_t channels = 1;
    /// Output channels per group.
    std::int64_t filters = 1;
    /// Rows of the im2col matrix: channels * kernel height * kernel width.
    std::int64_t patch = 1;
    std::int64_t input_pixels = 1;
    std::int64_t output_pixels = 1;

    /// A 1x1 window with unit strides and no padding reads the input as it lies.
    [[nodiscard]] bool is_pointwise() const noexcept {
        return std::all_of(axes.begin(), axes.end(), [](const WindowAxis& a) {
            return a.kernel == 1 && a.stride == 1 && a.pad_begin == 0 && a.pad_end == 0;
        });
    }
};

/// The Conv2D from NCHW shape `x` to NCHW shape `y` under the node's window attributes.
[[nodiscard]] inline ConvGeometry conv_geometry(const Attributes& attributes, const Shape& x, const Shape& y) {
    ConvGeometry g;
    g.axes = window_axes(attributes, x, y);
    g.batch = x[0];
    g.group = attributes.get_int("group", 1);
    g.channels = x[1] / g.group;
    g.filters = y[1] / g.group;
    g.patch = g.channels * g.axes[0].kernel * g.axes[1].kernel;
    g.input_pixels = x[2] * x[3];
    g.output_pixels = y[2] * y[3];
    return g;
}

[[nodiscard]] inline ConvGeometry conv_geometry(const KernelArgs& args) {
    return conv_geometry(args.node.attributes, args.inputs[0].shape, args.outputs[0].shape);
}

/// One im2col row: tap (kh, kw) of one input plane, for every output pixel; taps that
/// fall into the padding read 0.
inline void im2col_row(const float* plane, const ConvGeometry& g, std::int64_t kh, std::int64_t kw, float* row) {
    const WindowAxis& height = g.axes[0];
    const WindowAxis& width = g.axes[1];
    const IndexRange rows = height.outputs_inside(kh);
    const IndexRange cols = width.outputs_inside(kw);
    const std::int64_t first_column = cols.begin * width.stride + kw * width.dilation - width.pad_begin;
    std::fill(row, row + rows.begin * width.output, 0.0f);
    for (std::int64_t oh = rows.begin; oh < rows.end; ++oh) {
        const float* source = plane + (height.start(oh) + kh * height.dilation) * width.input + first_column;
        float* target = row + oh * width.output;
        std::fill(target, target + cols.begin, 0.0f);
        if (width.stride == 1) {
            std::copy(source, source + cols.size(), target + cols.begin);
        } else {
            for (std::int64_t i = 0; i < cols.size(); ++i) target[cols.begin + i] = source[i * width.stride];
        }
        std::fill(target + cols.end, target + width.output, 0.0f);
    }
    std::fill(row + rows.end * width.output, row + g.output_pixels, 0.0f);
}

/// Lays out the patches of `g.channels` input planes as a (patch x output_pixels)
/// row-major matrix, row index (channel, kh, kw) matching the weight's layout.
inline void im2col(const float* planes, const ConvGeometry& g, float* columns) {
    const std::int64_t kernel_h = g.axes[0].kernel, kernel_w = g.axes[1].kernel;
    for (std::int64_t c = 0; c < g.channels; ++c)
        for (std::int64_t kh = 0; kh < kernel_h; ++kh)
            for (std::int64_t kw = 0; kw < kernel_w; ++kw)
                im2col_row(planes + c * g.input_pixels, g, kh, kw,
                           columns + ((c * kernel_h + kh) * kernel_w + kw) * g.output_pixels);
}

/// Conv2D (NCHW): per image and group, y_g = W_g @ im2col(x_g), then bias and the
/// fused activation.
inline void conv_kernel(const KernelArgs& args) {
    const ConvGeometry g = conv_geometry(args);
    const float* x = args.inputs[0].data.data();
    const float* w = args.inputs[1].data.data();
    float* y = args.outputs[0].data.data();
    const bool pointwise = g.is_pointwise();
    FloatBuffer columns(pointwise ? 0 : static_cast<std::size_t>(g.patch * g.output_pixels));
    for (std::int64_t n = 0; n < g.batch; ++n) {
        for (std::int64_t group = 0; group < g.group; ++group) {
            const float* planes = x + (n * g.group + group) * g.channels * g.input_pixels;
            if (!pointwise) im2col(planes, g, columns.data());
            const float* rhs = pointwise ? planes : columns.data();
            float* out = y + (n * g.group + group) * g.filters * g.output_pixels;
            matrix(out, g.filters, g.output_pixels).noalias() =
                matrix(w + group * g.filters * g.patch, g.filters, g.patch) * matrix(rhs, g.patch, g.output_pixels);
        }
    }
    const std::int64_t out_channels = g.filters * g.group;
    if (args.inputs.size() == 3) {
        const Eigen::Map<const Eigen::VectorXf> bias(args.inputs[2].data.data(), static_cast<Eigen::Index>(out_channels));
        for (std::int64_t n = 0; n < g.batch; ++n)
            matrix(y + n * out_channels * g.output_pixels, out_channels, g.output_pixels).colwise() += bias;
    }
    apply_activation(static_cast<Activation>(args.node.attributes.get_int("activation", 0)), args.outputs[0].data);
}

/// The adjoint of im2col_row: adds one row of columns back into the plane, each value at
/// the tap it would have been read from.
inline void col2im_row(const float* row, const ConvGeometry& g, std::int64_t kh, std::int64_t kw, float* plane) {
    const WindowAxis& height = g.axes[0];
    const WindowAxis& width = g.axes[1];
    const IndexRange rows = height.outputs_inside(kh);
    const IndexRange cols = width.outputs_inside(kw);
    const std::int64_t first_column = cols.begin * width.stride + kw * width.dilation - width.pad_begin;
    for (std::int64_t oh = rows.begin; oh < rows.end; ++oh) {
        float* target = plane + (height.start(oh) + kh * height.dilation) * width.input + first_column;
        const float* source = row + oh * width.output + cols.begin;
        for (std::int64_t i = 0; i < cols.size(); ++i) target[i * width.stride] += source[i];
    }
}

/// ConvTranspose (NCHW): the adjoint of Conv2D. Seen as the convolution from the output's
/// shape to the input's with the same weight, per image and group: columns = W_g^T @ x_g,
/// then col2im adds every column into the output (as ONNX Runtime computes it), then bias.
inline void conv_transpose_kernel(const KernelArgs& args) {
    const Shape& x = args.inputs[0].shape;
    const Shape& y = args.outputs[0].shape;
    // The convolution it is the adjoint of runs from the output's shape to the input's.
    const ConvGeometry g = conv_geometry(args.node.attributes, y, x);
    const float* in = args.inputs[0].data.data();
    const float* w = args.inputs[1].data.data();
    float* out = args.outputs[0].data.data();
    std::fill(args.outputs[0].data.begin(), args.outputs[0].data.end(), 0.0f);
    FloatBuffer columns(static_cast<std::size_t>(g.patch * g.output_pixels));
    const std::int64_t kernel_h = g.axes[0].kernel, kernel_w = g.axes[1].kernel;
    for (std::int64_t n = 0; n < g.batch; ++n)
        for (std::int64_t group = 0; group < g.group; ++group) {
            matrix(columns.data(), g.patch, g.output_pixels).noalias() =
                matrix(w + group * g.filters * g.patch, g.filters, g.patch).transpose()
                * matrix(in + (n * g.group + group) * g.filters * g.output_pixels, g.filters, g.output_pixels);
            float* planes = out + (n * g.group + group) * g.channels * g.input_pixels;
            for (std::int64_t c = 0; c < g.channels; ++c)
                for (std::int64_t kh = 0; kh < kernel_h; ++kh)
                    for (std::int64_t kw = 0; kw < kernel_w; ++kw)
                        col2im_row(columns.data() + ((c * kernel_h + kh) * kernel_w + kw) * g.output_pixels, g, kh, kw,
                                   planes + c * g.input_pixels);
        }
    if (args.inputs.size() == 3) {
        const std::int64_t out_channels = y[1];
        const Eigen::Map<const Eigen::VectorXf> bias(args.inputs[2].data.data(), static_cast<Eigen::Index>(out_channels));
        for (std::int64_t n = 0; n < g.batch; ++n)
            matrix(out + n * out_channels * g.input_pixels, out_channels, g.input_pixels).colwise() += bias;
    }
}

/// Enlarge: zero-pads a (M, C, kh, kw) kernel, centred, to (M, C, KH, KW).
inline void enlarge_kernel(const KernelArgs& args) {
    const ConstView& w = args.inputs[0];
    const MutableView& y = args.outputs[0];
    const std::int64_t kh = w.shape[2], kw = w.shape[3], big_h = y.shape[2], big_w = y.shape[3];
    const std::int64_t top = (big_h - kh) / 2, left = (big_w - kw) / 2;
    std::fill(y.data.begin(), y.data.end(), 0.0f);
    const std::int64_t planes = w.shape[0] * w.shape[1];
    for (std::int64_t p = 0; p < planes; ++p)
        for (std::int64_t i = 0; i < kh; ++i) {
            const float* source = w.data.data() + (p * kh + i) * kw;
            std::copy(source, source + kw, y.data.data() + (p * big_h + top + i) * big_w + left);
        }
}

/// MergeGConv: out[o, b*n + j] = W[o, j] for b = the block of output channel o (see
/// MergeGConvOp), zero elsewhere. W[o, :] and its target block are both contiguous.
inline void merge_gconv_kernel(const KernelArgs& args) {
    const ConstView& w = args.inputs[0];
    const MutableView& y = args.outputs[0];
    const std::int64_t filters = w.shape[0];
    const MergeGConvOp::Layout layout = MergeGConvOp::layout(args.node.attributes, filters);
    const std::int64_t filter_size = w.shape.product(1, w.shape.rank());
    std::fill(y.data.begin(), y.data.end(), 0.0f);
    for (std::int64_t o = 0; o < filters; ++o) {
        const float* source = w.data.data() + o * filter_size;
        std::copy(source, source + filter_size, y.data.data() + (o * layout.count + layout.block(o)) * filter_size);
    }
}

}  // namespace rlflow::detail
