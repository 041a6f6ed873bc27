#pragma once
/// \file
/// BatchNormalization (inference), LayerNormalization, InstanceNormalization and Softmax.

#include <rlflow/exec/detail/eigen.hpp>
#include <rlflow/exec/detail/view.hpp>

#include <cmath>
#include <vector>

namespace rlflow::detail {

/// BatchNormalization in inference mode, folded per channel into y = x * a + b with
/// a = scale / sqrt(var + epsilon) and b = B - mean * a.
inline void batch_norm_kernel(const KernelArgs& args) {
    const Shape& x = args.inputs[0].shape;
    const auto epsilon = static_cast<float>(args.node.attributes.get_float("epsilon", 1e-5));
    const std::int64_t channels = x[1], inner = x.product(2, x.rank());
    const auto input = [&](std::size_t i) { return array(args.inputs[i].data); };
    const Eigen::ArrayXf a = input(1) / (input(4) + epsilon).sqrt();
    const Eigen::ArrayXf b = input(2) - input(3) * a;
    const std::int64_t image = channels * inner;
    for (std::int64_t n = 0; n < x[0]; ++n) {
        const auto in = array(args.inputs[0].data.data() + n * image, channels, inner);
        auto out = array(args.outputs[0].data.data() + n * image, channels, inner);
        out = (in.colwise() * a).colwise() + b;
    }
}

/// LayerNormalization: each row of the dims [axis, rank) is normalised to zero mean and
/// unit variance (biased, as ONNX defines it), then scaled and shifted by Scale and B
/// broadcast to that row shape.
inline void layer_norm_kernel(const KernelArgs& args) {
    const Shape& x = args.inputs[0].shape;
    const int axis = x.normalize_axis(args.node.attributes.get_int("axis", -1));
    const auto epsilon = static_cast<float>(args.node.attributes.get_float("epsilon", 1e-5));
    const Shape row_shape(x.dims().subspan(static_cast<std::size_t>(axis)));
    const std::int64_t inner = row_shape.numel(), outer = x.product(0, axis);
    Eigen::ArrayXf scale(inner), shift = Eigen::ArrayXf::Zero(inner);
    broadcast_to(args.inputs[1], row_shape, {scale.data(), static_cast<std::size_t>(inner)});
    if (args.inputs.size() == 3) broadcast_to(args.inputs[2], row_shape, {shift.data(), static_cast<std::size_t>(inner)});
    for (std::int64_t r = 0; r < outer; ++r) {
        const auto in = array(args.inputs[0].data.subspan(static_cast<std::size_t>(r * inner), static_cast<std::size_t>(inner)));
        auto out = array(args.outputs[0].data.subspan(static_cast<std::size_t>(r * inner), static_cast<std::size_t>(inner)));
        const float mean = in.mean();
        const float variance = (in - mean).square().mean();
        out = (in - mean) * (scale / std::sqrt(variance + epsilon)) + shift;
    }
}

/// InstanceNormalization: each (n, c) plane normalised like a LayerNormalization row, then
/// scaled and shifted by its channel's scale and B.
inline void instance_norm_kernel(const KernelArgs& args) {
    const Shape& x = args.inputs[0].shape;
    const auto epsilon = static_cast<float>(args.node.attributes.get_float("epsilon", 1e-5));
    const std::int64_t channels = x[1], inner = x.product(2, x.rank());
    for (std::int64_t r = 0; r < x[0] * channels; ++r) {
        const auto in = array(args.inputs[0].data.subspan(static_cast<std::size_t>(r * inner), static_cast<std::size_t>(inner)));
        auto out = array(args.outputs[0].data.subspan(static_cast<std::size_t>(r * inner), static_cast<std::size_t>(inner)));
        const auto c = static_cast<std::size_t>(r % channels);
        const float mean = in.mean();
        const float variance = (in - mean).square().mean();
        out = (in - mean) * (args.inputs[1].data[c] / std::sqrt(variance + epsilon)) + args.inputs[2].data[c];
    }
}

/// Softmax along one axis (opset 13): each (axis x inner) block is shifted by its
/// column maxima before exponentiating, so no exponent overflows.
inline void softmax_kernel(const KernelArgs& args) {
    const Shape& x = args.inputs[0].shape;
    const int axis = x.normalize_axis(args.node.attributes.get_int("axis", -1));
    const std::int64_t length = x[axis], inner = x.product(axis + 1, x.rank()), outer = x.product(0, axis);
    const std::int64_t block = length * inner;
    for (std::int64_t o = 0; o < outer; ++o) {
        const auto in = array(args.inputs[0].data.data() + o * block, length, inner);
        auto out = array(args.outputs[0].data.data() + o * block, length, inner);
        // Reductions go to temporaries: replicated inside the expression they would be
        // re-evaluated per coefficient, and the sum would read `out` while it changes.
        const Eigen::Array<float, 1, Eigen::Dynamic> maxima = in.colwise().maxCoeff();
        out = (in.rowwise() - maxima).exp();
        const Eigen::Array<float, 1, Eigen::Dynamic> sums = out.colwise().sum();
        out.rowwise() /= sums;
    }
}

}  // namespace rlflow::detail
