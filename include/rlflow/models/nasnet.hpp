#pragma once
/// \file
/// NasNet-A in the form TASO benchmarks it (TASO examples/nasnet_a.py; RLFlow and
/// X-RLflow reuse it): no stem and no classifier. The input is a (batch, 128, 56, 56)
/// feature map; three stages each run 5 normal cells and 1 reduction cell, with C = 128
/// in the first stage's normal cells and doubling at every reduction cell (256, 512,
/// 1024). Each cell squeezes its inputs to C channels and concatenates five sums to 5C.
/// The output "features" is (batch, 5120, 7, 7).
///
/// What differs from TASO's script, and why:
/// - TASO's fused conv ReLUs are separate Relu nodes (the unfused, exported form);
/// - SAME padding is written as explicit ONNX pads (SAME_UPPER: the odd pixel goes to
///   the bottom / right), and average pools count the padding, which is the semantics of
///   TASO's avg-pool axiom (avgpool = conv with the pooling kernel);
/// - TASO's 1x1 stride-1 max pool on the input (a no-op it used to start the graph) is
///   left out;
/// - convolutions have no bias and there is no batch norm, as in TASO.
/// 216 convolutions (12 per cell), 90 of them depthwise.

#include <rlflow/models/builder.hpp>
#include <rlflow/models/detail/nasnet_cells.hpp>

#include <cstdint>
#include <string>

namespace rlflow::models {

/// NasNet-A hyper-parameters (defaults: TASO's benchmark).
struct NasNetConfig {
    std::int64_t input_channels = 128;
    std::int64_t input_size = 56;
    /// C of the first stage's normal cells; doubles at each reduction cell.
    std::int64_t channels = 128;
    int stages = 3;
    int normal_cells = 5;
};

/// NasNet-A on "input" (batch, 128, 56, 56), returning "features" (batch, 5120, 7, 7).
[[nodiscard]] inline Graph nasnet_a(std::int64_t batch = 1, const NasNetConfig& config = {}) {
    Builder b;
    TensorRef input = b.input("input", {batch, config.input_channels, config.input_size, config.input_size});
    std::int64_t channels = config.channels;
    for (int stage = 0; stage < config.stages; ++stage) {
        const std::string prefix = "stage" + std::to_string(stage + 1);
        TensorRef prev = input;
        TensorRef cur = input;
        for (int cell = 0; cell < config.normal_cells; ++cell) {
            const TensorRef next
                = detail::nasnet_normal_cell(b, prefix + ".normal" + std::to_string(cell), prev, cur, channels);
            prev = cur;
            cur = next;
        }
        channels *= 2;
        input = detail::nasnet_reduction_cell(b, prefix + ".reduction", prev, cur, channels);
    }
    b.output(input, "features");
    return std::move(b).finish();
}

}  // namespace rlflow::models
