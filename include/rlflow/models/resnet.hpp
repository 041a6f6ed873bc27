#pragma once
/// \file
/// torchvision's ResNet family: ResNet-18, ResNet-50 and ResNeXt-50 (32x4d), with the
/// 7x7 stem, four stages, global average pooling and the 1000-way fully connected layer,
/// in the form PyTorch's ONNX exporter writes them (Conv without bias, BatchNormalization,
/// Relu; Gemm with transB=1).

#include <rlflow/models/builder.hpp>
#include <rlflow/models/detail/resnet_blocks.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace rlflow::models {

/// A torchvision ResNet: block type, blocks per stage, and the grouped-conv width.
struct ResNetConfig {
    /// Bottleneck blocks (1x1, 3x3, 1x1) rather than basic blocks (3x3, 3x3).
    bool bottleneck = true;
    std::array<int, 4> blocks{3, 4, 6, 3};
    /// Groups of the bottleneck's 3x3 convolution (ResNeXt's cardinality).
    std::int64_t groups = 1;
    std::int64_t width_per_group = 64;
};

/// A ResNet on (batch, 3, 224, 224) images, returning (batch, 1000) logits named "logits".
[[nodiscard]] inline Graph resnet(const ResNetConfig& config, std::int64_t batch = 1) {
    constexpr std::array<std::int64_t, 4> stage_planes{64, 128, 256, 512};
    Builder b;
    TensorRef x
        = detail::resnet_stem(b, b.input("input", {batch, rgb_channels, imagenet_resolution, imagenet_resolution}));
    for (std::size_t stage = 0; stage < stage_planes.size(); ++stage) {
        for (int block = 0; block < config.blocks[stage]; ++block) {
            const std::string prefix = "layer" + std::to_string(stage + 1) + "." + std::to_string(block);
            const std::int64_t stride = stage > 0 && block == 0 ? 2 : 1;
            x = config.bottleneck ? detail::resnet_bottleneck_block(b, prefix, x, stage_planes[stage], stride,
                                                                    config.groups, config.width_per_group)
                                  : detail::resnet_basic_block(b, prefix, x, stage_planes[stage], stride);
        }
    }
    b.output(b.classifier_head(x), "logits");
    return std::move(b).finish();
}

/// ResNet-18: basic blocks [2, 2, 2, 2]; 20 convolutions, 11,689,512 parameters.
[[nodiscard]] inline Graph resnet18(std::int64_t batch = 1) {
    return resnet({.bottleneck = false, .blocks = {2, 2, 2, 2}}, batch);
}

/// ResNet-50: bottleneck blocks [3, 4, 6, 3]; 53 convolutions, 25,557,032 parameters.
[[nodiscard]] inline Graph resnet50(std::int64_t batch = 1) { return resnet({}, batch); }

/// ResNeXt-50 32x4d: ResNet-50 with 32 groups of width 4 in the 3x3 convolutions (widths
/// 128 ... 1024); 25,028,904 parameters.
[[nodiscard]] inline Graph resnext50(std::int64_t batch = 1) {
    return resnet({.groups = 32, .width_per_group = 4}, batch);
}

}  // namespace rlflow::models
