#pragma once
/// \file
/// torchvision's SqueezeNet 1.1 as PyTorch exports it: convolutions with bias, fire
/// modules (squeeze 1x1 -> expand 1x1 and 3x3 -> concat), ceil-mode max pools, and a
/// 1x1 convolution classifier followed by global average pooling; 26 convolutions and
/// 1,235,496 parameters.

#include <rlflow/models/builder.hpp>
#include <rlflow/models/detail/squeezenet_fire.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace rlflow::models {

/// SqueezeNet 1.1 on (batch, 3, 224, 224), returning (batch, 1000) logits named "logits".
/// Module names follow torchvision's `features.<i>` / `classifier.<i>` indices.
[[nodiscard]] inline Graph squeezenet1_1(std::int64_t batch = 1) {
    /// A fire module: its `features` index, squeeze and expand channels, and whether a
    /// ceil-mode max pool (at index - 1) comes before it.
    struct Fire {
        int index;
        std::int64_t squeeze, expand;
        bool pooled;
    };
    constexpr std::array<Fire, 8> fires{{{3, 16, 64, false},
                                         {4, 16, 64, false},
                                         {6, 32, 128, true},
                                         {7, 32, 128, false},
                                         {9, 48, 192, true},
                                         {10, 48, 192, false},
                                         {11, 64, 256, false},
                                         {12, 64, 256, false}}};
    /// Output channels of the 3x3 stride-2 stem convolution (features.0).
    constexpr std::int64_t stem_channels = 64;
    const Window pool = Window::square(3, 2);
    Builder b;
    TensorRef x = b.input("input", {batch, rgb_channels, imagenet_resolution, imagenet_resolution});
    x = b.conv("features.0", x, {.out_channels = stem_channels, .window = Window::square(3, 2), .bias = true});
    x = b.max_pool("features.2", b.relu("features.1", x), pool, true);
    for (const Fire& fire : fires) {
        if (fire.pooled) x = b.max_pool("features." + std::to_string(fire.index - 1), x, pool, true);
        x = detail::squeezenet_fire(b, "features." + std::to_string(fire.index), x, fire.squeeze, fire.expand);
    }
    x = b.conv("classifier.1", x, {.out_channels = imagenet_classes, .window = Window::square(1), .bias = true});
    x = b.global_average_pool("classifier.3", b.relu("classifier.2", x));
    b.output(b.flatten("flatten", x), "logits");
    return std::move(b).finish();
}

}  // namespace rlflow::models
