#pragma once
/// \file
/// The cells of TASO's NasNet-A benchmark (examples/nasnet_a.py): squeeze, fit,
/// separable convolution, normal cell and reduction cell. TASO's fused ReLUs are written
/// as separate Relu nodes, as an ONNX export would have them, and its SAME padding as
/// explicit ONNX SAME_UPPER pads.

#include <rlflow/models/builder.hpp>

#include <string>
#include <vector>

namespace rlflow::detail {

/// Kernel of the pools and of the 3x3 separable convolutions.
inline constexpr std::int64_t nasnet_small_kernel = 3;
/// Kernels of the reduction cell's larger separable convolutions.
inline constexpr std::int64_t nasnet_medium_kernel = 5;
inline constexpr std::int64_t nasnet_large_kernel = 7;
/// Stride of every reduction-cell branch that halves the resolution.
inline constexpr std::int64_t nasnet_reduction_stride = 2;

/// A k x k SAME window with stride s for the input `x`.
inline models::Window nasnet_same(const models::Builder& b, TensorRef x, std::int64_t k, std::int64_t s = 1) {
    return models::Window::same(k, s, b.shape(x));
}

/// squeeze: 1x1 convolution to `channels`, then ReLU.
inline TensorRef nasnet_squeeze(models::Builder& b, const std::string& name, TensorRef x, std::int64_t channels) {
    return b.relu(name + ".relu", b.conv(name, x, {.out_channels = channels, .window = models::Window::square(1)}));
}

/// fit: brings `prev` to the channels of `cur`, by a 1x1 squeeze at the same resolution or
/// a 3x3 stride-2 convolution + ReLU at twice it.
inline TensorRef nasnet_fit(models::Builder& b, const std::string& name, TensorRef cur, TensorRef prev) {
    const std::int64_t channels = b.shape(cur)[1];
    if (b.shape(prev)[2] == b.shape(cur)[2]) return nasnet_squeeze(b, name, prev, channels);
    const models::Window window = nasnet_same(b, prev, nasnet_small_kernel, nasnet_reduction_stride);
    return b.relu(name + ".relu", b.conv(name, prev, {.out_channels = channels, .window = window}));
}

/// Separable convolution: a k x k convolution with `channels` groups (depthwise when the
/// input has `channels` channels, as it always has here), then a 1x1 to `channels`.
/// No activation, as in TASO.
inline TensorRef nasnet_separable(models::Builder& b, const std::string& name, TensorRef x, std::int64_t channels,
                                  std::int64_t kernel, std::int64_t stride = 1) {
    const TensorRef depthwise
        = b.conv(name + ".depthwise", x,
                 {.out_channels = channels, .window = nasnet_same(b, x, kernel, stride), .group = channels});
    return b.conv(name + ".pointwise", depthwise, {.out_channels = channels, .window = models::Window::square(1)});
}

/// The two pools of NasNet cells.
enum class NasNetPool { average, max };

/// 3x3 average pool (SAME, padding counted, as TASO's avg-pool = conv with the pooling
/// kernel) or max pool.
inline TensorRef nasnet_pool(models::Builder& b, const std::string& name, TensorRef x, NasNetPool kind,
                             std::int64_t stride = 1) {
    const models::Window window = nasnet_same(b, x, nasnet_small_kernel, stride);
    return kind == NasNetPool::average ? b.average_pool(name, x, window, true) : b.max_pool(name, x, window);
}

/// Normal cell: cur = squeeze(cur), prev = fit(prev); five sums
///   sep3(cur) + cur, sep3(prev) + sep3(cur), avg(cur) + prev, avg(prev) + avg(prev),
///   sep3(prev) + sep3(prev), concatenated to 5 * channels.
inline TensorRef nasnet_normal_cell(models::Builder& b, const std::string& p, TensorRef prev, TensorRef cur,
                                    std::int64_t channels) {
    cur = nasnet_squeeze(b, p + ".squeeze", cur, channels);
    prev = nasnet_fit(b, p + ".fit", cur, prev);
    const auto separable = [&](const char* branch, TensorRef x) {
        return nasnet_separable(b, p + branch, x, channels, nasnet_small_kernel);
    };
    const auto average
        = [&](const char* branch, TensorRef x) { return nasnet_pool(b, p + branch, x, NasNetPool::average); };
    // Each sum's operands are a braced list, evaluated left to right, so node ids do not
    // depend on the compiler's argument evaluation order.
    std::vector<TensorRef> sums;
    sums.push_back(b.op(OpKind::Add, p + ".comb0", {separable(".comb0.left", cur), cur}));
    sums.push_back(b.op(OpKind::Add, p + ".comb1", {separable(".comb1.left", prev), separable(".comb1.right", cur)}));
    sums.push_back(b.op(OpKind::Add, p + ".comb2", {average(".comb2.left", cur), prev}));
    sums.push_back(b.op(OpKind::Add, p + ".comb3", {average(".comb3.left", prev), average(".comb3.right", prev)}));
    sums.push_back(b.op(OpKind::Add, p + ".comb4", {separable(".comb4.left", prev), separable(".comb4.right", prev)}));
    return b.concat(p + ".concat", sums, 1);
}

/// Reduction cell (halves the resolution): cur = squeeze(cur), prev = fit(prev);
///   s0 = sep7/2(prev) + sep5/2(cur),   s1 = max/2(cur) + sep7/2(prev),
///   s2 = avg/2(cur) + sep5/2(prev),    s3 = max/2(cur) + sep3(s0),   s4 = avg(s0) + s1,
/// concatenated to 5 * channels.
inline TensorRef nasnet_reduction_cell(models::Builder& b, const std::string& p, TensorRef prev, TensorRef cur,
                                       std::int64_t channels) {
    constexpr std::int64_t s = nasnet_reduction_stride;
    cur = nasnet_squeeze(b, p + ".squeeze", cur, channels);
    prev = nasnet_fit(b, p + ".fit", cur, prev);
    std::vector<TensorRef> sums;  // operands in braced lists: see nasnet_normal_cell
    sums.push_back(b.op(OpKind::Add, p + ".comb0",
                        {nasnet_separable(b, p + ".comb0.left", prev, channels, nasnet_large_kernel, s),
                         nasnet_separable(b, p + ".comb0.right", cur, channels, nasnet_medium_kernel, s)}));
    sums.push_back(b.op(OpKind::Add, p + ".comb1",
                        {nasnet_pool(b, p + ".comb1.left", cur, NasNetPool::max, s),
                         nasnet_separable(b, p + ".comb1.right", prev, channels, nasnet_large_kernel, s)}));
    sums.push_back(b.op(OpKind::Add, p + ".comb2",
                        {nasnet_pool(b, p + ".comb2.left", cur, NasNetPool::average, s),
                         nasnet_separable(b, p + ".comb2.right", prev, channels, nasnet_medium_kernel, s)}));
    sums.push_back(b.op(OpKind::Add, p + ".comb3",
                        {nasnet_pool(b, p + ".comb3.left", cur, NasNetPool::max, s),
                         nasnet_separable(b, p + ".comb3.right", sums[0], channels, nasnet_small_kernel)}));
    sums.push_back(
        b.op(OpKind::Add, p + ".comb4", {nasnet_pool(b, p + ".comb4.left", sums[0], NasNetPool::average), sums[1]}));
    return b.concat(p + ".concat", sums, 1);
}

}  // namespace rlflow::detail
