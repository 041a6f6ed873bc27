#pragma once
/// \file
/// The pieces of torchvision's ResNet: stem, basic block and bottleneck block. Layer
/// sizes are written as torchvision's architecture table writes them.

#include <rlflow/models/builder.hpp>

#include <string>

namespace rlflow::detail {

/// Channels of the stem convolution and of the first stage's blocks.
inline constexpr std::int64_t resnet_stem_channels = 64;
/// Output channels of a bottleneck block per unit of `planes`.
inline constexpr std::int64_t resnet_bottleneck_expansion = 4;
/// torchvision's reference group width: `width = planes * width_per_group / 64 * groups`.
inline constexpr std::int64_t resnet_reference_group_width = 64;

/// conv1 7x7/2 -> bn1 -> relu -> maxpool 3x3/2 (pad 1).
inline TensorRef resnet_stem(models::Builder& b, TensorRef image) {
    using models::Window;
    const TensorRef conv
        = b.conv("conv1", image, {.out_channels = resnet_stem_channels, .window = Window::square(7, 2, 3)});
    const TensorRef relu = b.relu("relu", b.batch_norm("bn1", conv));
    return b.max_pool("maxpool", relu, Window::square(3, 2, 1));
}

/// The block's shortcut: the input itself, or downsample.0 (1x1 conv, stride) and
/// downsample.1 (batch norm) when the shape changes.
inline TensorRef resnet_shortcut(models::Builder& b, const std::string& prefix, TensorRef x, std::int64_t out_channels,
                                 std::int64_t stride) {
    if (stride == 1 && b.shape(x)[1] == out_channels) return x;
    const TensorRef conv = b.conv(prefix + ".downsample.0", x,
                                  {.out_channels = out_channels, .window = models::Window::square(1, stride)});
    return b.batch_norm(prefix + ".downsample.1", conv);
}

/// BasicBlock (ResNet-18/34): 3x3 (stride) -> bn -> relu -> 3x3 -> bn, + shortcut, relu.
inline TensorRef resnet_basic_block(models::Builder& b, const std::string& prefix, TensorRef x, std::int64_t planes,
                                    std::int64_t stride) {
    using models::Window;
    TensorRef y = b.conv(prefix + ".conv1", x, {.out_channels = planes, .window = Window::square(3, stride, 1)});
    y = b.relu(prefix + ".relu", b.batch_norm(prefix + ".bn1", y));
    y = b.conv(prefix + ".conv2", y, {.out_channels = planes, .window = Window::square(3, 1, 1)});
    y = b.batch_norm(prefix + ".bn2", y);
    const TensorRef sum = b.add(prefix + ".add", y, resnet_shortcut(b, prefix, x, planes, stride));
    return b.relu(prefix + ".relu_1", sum);
}

/// Bottleneck (ResNet-50, ResNeXt; torchvision's "v1.5", stride on the 3x3):
/// 1x1 -> bn -> relu -> grouped 3x3 (stride) -> bn -> relu -> 1x1 to 4 * planes -> bn,
/// + shortcut, relu.
inline TensorRef resnet_bottleneck_block(models::Builder& b, const std::string& prefix, TensorRef x,
                                         std::int64_t planes, std::int64_t stride, std::int64_t groups,
                                         std::int64_t width_per_group) {
    using models::Window;
    const std::int64_t width = planes * width_per_group / resnet_reference_group_width * groups;
    const std::int64_t out_channels = planes * resnet_bottleneck_expansion;
    TensorRef y = b.conv(prefix + ".conv1", x, {.out_channels = width, .window = Window::square(1)});
    y = b.relu(prefix + ".relu", b.batch_norm(prefix + ".bn1", y));
    y = b.conv(prefix + ".conv2", y, {.out_channels = width, .window = Window::square(3, stride, 1), .group = groups});
    y = b.relu(prefix + ".relu_1", b.batch_norm(prefix + ".bn2", y));
    y = b.conv(prefix + ".conv3", y, {.out_channels = out_channels, .window = Window::square(1)});
    y = b.batch_norm(prefix + ".bn3", y);
    const TensorRef sum = b.add(prefix + ".add", y, resnet_shortcut(b, prefix, x, out_channels, stride));
    return b.relu(prefix + ".relu_2", sum);
}

}  // namespace rlflow::detail
