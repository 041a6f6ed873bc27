#pragma once
/// \file
/// The modules of torchvision's Inception-v3 (BasicConv2d and InceptionA to InceptionE).
/// Channel counts and kernels are torchvision's architecture table, written out.

#include <rlflow/models/builder.hpp>

#include <string>

namespace rlflow::detail {

/// Inception's BatchNorm2d epsilon (torchvision BasicConv2d).
inline constexpr double inception_batch_norm_epsilon = 1e-3;

/// BasicConv2d: "<name>.conv" (no bias) -> "<name>.bn" (eps 0.001) -> "<name>.relu".
inline TensorRef basic_conv2d(models::Builder& b, const std::string& name, TensorRef x, std::int64_t out_channels,
                              const models::Window& window) {
    const TensorRef conv = b.conv(name + ".conv", x, {.out_channels = out_channels, .window = window});
    return b.relu(name + ".relu", b.batch_norm(name + ".bn", conv, inception_batch_norm_epsilon));
}

/// The 3x3, stride 1, pad 1 average pool in front of a branch_pool convolution
/// (F.avg_pool2d, count_include_pad=True).
inline TensorRef inception_pool_branch(models::Builder& b, const std::string& prefix, TensorRef x,
                                       std::int64_t out_channels) {
    const TensorRef pooled = b.average_pool(prefix + ".avg_pool", x, models::Window::square(3, 1, 1));
    return basic_conv2d(b, prefix + ".branch_pool", pooled, out_channels, models::Window::square(1));
}

/// InceptionA (35x35): 1x1 | 1x1 -> 5x5 | 1x1 -> 3x3 -> 3x3 | avg -> 1x1.
inline TensorRef inception_a(models::Builder& b, const std::string& p, TensorRef x, std::int64_t pool_features) {
    using models::Window;
    const TensorRef branch1x1 = basic_conv2d(b, p + ".branch1x1", x, 64, Window::square(1));
    TensorRef branch5x5 = basic_conv2d(b, p + ".branch5x5_1", x, 48, Window::square(1));
    branch5x5 = basic_conv2d(b, p + ".branch5x5_2", branch5x5, 64, Window::square(5, 1, 2));
    TensorRef branch3x3dbl = basic_conv2d(b, p + ".branch3x3dbl_1", x, 64, Window::square(1));
    branch3x3dbl = basic_conv2d(b, p + ".branch3x3dbl_2", branch3x3dbl, 96, Window::square(3, 1, 1));
    branch3x3dbl = basic_conv2d(b, p + ".branch3x3dbl_3", branch3x3dbl, 96, Window::square(3, 1, 1));
    const TensorRef branch_pool = inception_pool_branch(b, p, x, pool_features);
    return b.concat(p + ".concat", {branch1x1, branch5x5, branch3x3dbl, branch_pool}, 1);
}

/// InceptionB (35x35 -> 17x17): 3x3/2 | 1x1 -> 3x3 -> 3x3/2 | max 3x3/2.
inline TensorRef inception_b(models::Builder& b, const std::string& p, TensorRef x) {
    using models::Window;
    const TensorRef branch3x3 = basic_conv2d(b, p + ".branch3x3", x, 384, Window::square(3, 2));
    TensorRef branch3x3dbl = basic_conv2d(b, p + ".branch3x3dbl_1", x, 64, Window::square(1));
    branch3x3dbl = basic_conv2d(b, p + ".branch3x3dbl_2", branch3x3dbl, 96, Window::square(3, 1, 1));
    branch3x3dbl = basic_conv2d(b, p + ".branch3x3dbl_3", branch3x3dbl, 96, Window::square(3, 2));
    const TensorRef branch_pool = b.max_pool(p + ".max_pool", x, Window::square(3, 2));
    return b.concat(p + ".concat", {branch3x3, branch3x3dbl, branch_pool}, 1);
}

/// InceptionC (17x17) with factorised 7x7s: 1x1 | 1x1 -> 1x7 -> 7x1 |
/// 1x1 -> 7x1 -> 1x7 -> 7x1 -> 1x7 | avg -> 1x1.
inline TensorRef inception_c(models::Builder& b, const std::string& p, TensorRef x, std::int64_t channels_7x7) {
    using models::Window;
    constexpr std::int64_t out = 192;
    const std::int64_t c7 = channels_7x7;
    const Window row = Window::rect(1, 7, 0, 3);
    const Window column = Window::rect(7, 1, 3, 0);
    const TensorRef branch1x1 = basic_conv2d(b, p + ".branch1x1", x, out, Window::square(1));
    TensorRef branch7x7 = basic_conv2d(b, p + ".branch7x7_1", x, c7, Window::square(1));
    branch7x7 = basic_conv2d(b, p + ".branch7x7_2", branch7x7, c7, row);
    branch7x7 = basic_conv2d(b, p + ".branch7x7_3", branch7x7, out, column);
    TensorRef branch7x7dbl = basic_conv2d(b, p + ".branch7x7dbl_1", x, c7, Window::square(1));
    branch7x7dbl = basic_conv2d(b, p + ".branch7x7dbl_2", branch7x7dbl, c7, column);
    branch7x7dbl = basic_conv2d(b, p + ".branch7x7dbl_3", branch7x7dbl, c7, row);
    branch7x7dbl = basic_conv2d(b, p + ".branch7x7dbl_4", branch7x7dbl, c7, column);
    branch7x7dbl = basic_conv2d(b, p + ".branch7x7dbl_5", branch7x7dbl, out, row);
    const TensorRef branch_pool = inception_pool_branch(b, p, x, out);
    return b.concat(p + ".concat", {branch1x1, branch7x7, branch7x7dbl, branch_pool}, 1);
}

/// InceptionD (17x17 -> 8x8): 1x1 -> 3x3/2 | 1x1 -> 1x7 -> 7x1 -> 3x3/2 | max 3x3/2.
inline TensorRef inception_d(models::Builder& b, const std::string& p, TensorRef x) {
    using models::Window;
    TensorRef branch3x3 = basic_conv2d(b, p + ".branch3x3_1", x, 192, Window::square(1));
    branch3x3 = basic_conv2d(b, p + ".branch3x3_2", branch3x3, 320, Window::square(3, 2));
    TensorRef branch7x7x3 = basic_conv2d(b, p + ".branch7x7x3_1", x, 192, Window::square(1));
    branch7x7x3 = basic_conv2d(b, p + ".branch7x7x3_2", branch7x7x3, 192, Window::rect(1, 7, 0, 3));
    branch7x7x3 = basic_conv2d(b, p + ".branch7x7x3_3", branch7x7x3, 192, Window::rect(7, 1, 3, 0));
    branch7x7x3 = basic_conv2d(b, p + ".branch7x7x3_4", branch7x7x3, 192, Window::square(3, 2));
    const TensorRef branch_pool = b.max_pool(p + ".max_pool", x, Window::square(3, 2));
    return b.concat(p + ".concat", {branch3x3, branch7x7x3, branch_pool}, 1);
}

/// A 1x3 and a 3x1 convolution of the same input, concatenated (InceptionE's split).
inline TensorRef inception_e_split(models::Builder& b, const std::string& p, const std::string& stem, TensorRef x) {
    using models::Window;
    constexpr std::int64_t out = 384;
    const TensorRef row = basic_conv2d(b, p + "." + stem + "a", x, out, Window::rect(1, 3, 0, 1));
    const TensorRef column = basic_conv2d(b, p + "." + stem + "b", x, out, Window::rect(3, 1, 1, 0));
    return b.concat(p + "." + stem + ".concat", {row, column}, 1);
}

/// InceptionE (8x8): 1x1 | 1x1 -> (1x3, 3x1) | 1x1 -> 3x3 -> (1x3, 3x1) | avg -> 1x1.
inline TensorRef inception_e(models::Builder& b, const std::string& p, TensorRef x) {
    using models::Window;
    const TensorRef branch1x1 = basic_conv2d(b, p + ".branch1x1", x, 320, Window::square(1));
    const TensorRef branch3x3
        = inception_e_split(b, p, "branch3x3_2", basic_conv2d(b, p + ".branch3x3_1", x, 384, Window::square(1)));
    TensorRef branch3x3dbl = basic_conv2d(b, p + ".branch3x3dbl_1", x, 448, Window::square(1));
    branch3x3dbl = basic_conv2d(b, p + ".branch3x3dbl_2", branch3x3dbl, 384, Window::square(3, 1, 1));
    branch3x3dbl = inception_e_split(b, p, "branch3x3dbl_3", branch3x3dbl);
    const TensorRef branch_pool = inception_pool_branch(b, p, x, 192);
    return b.concat(p + ".concat", {branch1x1, branch3x3, branch3x3dbl, branch_pool}, 1);
}

}  // namespace rlflow::detail
