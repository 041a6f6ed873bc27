#pragma once
/// \file
/// SqueezeNet's fire module.

#include <rlflow/models/builder.hpp>

#include <string>

namespace rlflow::detail {

/// Fire: squeeze 1x1 + relu, then expand1x1 + relu and expand3x3 (pad 1) + relu, concat.
inline TensorRef squeezenet_fire(models::Builder& b, const std::string& p, TensorRef x, std::int64_t squeeze,
                                 std::int64_t expand) {
    using models::Window;
    const TensorRef s
        = b.relu(p + ".squeeze_activation",
                 b.conv(p + ".squeeze", x, {.out_channels = squeeze, .window = Window::square(1), .bias = true}));
    const TensorRef e1
        = b.conv(p + ".expand1x1", s, {.out_channels = expand, .window = Window::square(1), .bias = true});
    const TensorRef e3
        = b.conv(p + ".expand3x3", s, {.out_channels = expand, .window = Window::square(3, 1, 1), .bias = true});
    return b.concat(p + ".concat", {b.relu(p + ".expand1x1_activation", e1), b.relu(p + ".expand3x3_activation", e3)},
                    1);
}

}  // namespace rlflow::detail
