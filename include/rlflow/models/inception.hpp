#pragma once
/// \file
/// torchvision's Inception-v3 (aux_logits=False, transform_input=False) on 299x299
/// images, as PyTorch exports it: BasicConv2d = Conv (no bias) + BatchNormalization
/// (eps 0.001) + Relu, 3x3 average pools with count_include_pad=1, 94 convolutions and
/// 23,834,568 parameters.

#include <rlflow/models/builder.hpp>
#include <rlflow/models/detail/inception_blocks.hpp>

#include <array>
#include <cstdint>

namespace rlflow::models {

/// Input side of Inception-v3.
inline constexpr std::int64_t inception_resolution = 299;

/// Inception-v3 on (batch, 3, 299, 299), returning (batch, 1000) logits named "logits".
[[nodiscard]] inline Graph inception_v3(std::int64_t batch = 1) {
    using detail::basic_conv2d;
    Builder b;
    TensorRef x = b.input("input", {batch, rgb_channels, inception_resolution, inception_resolution});
    x = basic_conv2d(b, "Conv2d_1a_3x3", x, 32, Window::square(3, 2));
    x = basic_conv2d(b, "Conv2d_2a_3x3", x, 32, Window::square(3));
    x = basic_conv2d(b, "Conv2d_2b_3x3", x, 64, Window::square(3, 1, 1));
    x = b.max_pool("maxpool1", x, Window::square(3, 2));
    x = basic_conv2d(b, "Conv2d_3b_1x1", x, 80, Window::square(1));
    x = basic_conv2d(b, "Conv2d_4a_3x3", x, 192, Window::square(3));
    x = b.max_pool("maxpool2", x, Window::square(3, 2));
    x = detail::inception_a(b, "Mixed_5b", x, 32);
    x = detail::inception_a(b, "Mixed_5c", x, 64);
    x = detail::inception_a(b, "Mixed_5d", x, 64);
    x = detail::inception_b(b, "Mixed_6a", x);
    x = detail::inception_c(b, "Mixed_6b", x, 128);
    x = detail::inception_c(b, "Mixed_6c", x, 160);
    x = detail::inception_c(b, "Mixed_6d", x, 160);
    x = detail::inception_c(b, "Mixed_6e", x, 192);
    x = detail::inception_d(b, "Mixed_7a", x);
    x = detail::inception_e(b, "Mixed_7b", x);
    x = detail::inception_e(b, "Mixed_7c", x);
    b.output(b.classifier_head(x), "logits");
    return std::move(b).finish();
}

}  // namespace rlflow::models
