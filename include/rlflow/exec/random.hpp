#pragma once
/// \file
/// Deterministic random weights and inputs, so graphs without trained data can run.

#include <rlflow/core/graph.hpp>
#include <rlflow/exec/detail/weight_init.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace rlflow::exec {

/// Gives every Weight without data deterministic random data under `seed`: fan-in
/// scaled U(-b, b) (see detail::fan_in_bound), or U(0.5, 1.5) where a consumer needs the
/// input strictly positive (BatchNorm variance). A weight's data depends only on the
/// seed, its name and its type. Non-float weights get zeros: random integers would not be
/// valid indices or shapes.
inline void fill_random_weights(Graph& g, std::uint64_t seed) {
    const std::vector<NodeId> weights = g.weights();
    for (const NodeId id : weights) {
        const Node& n = g.node(id);
        if (n.data) continue;
        const TensorType& type = n.outputs[0].type;
        if (type.dtype != DType::Float32) {
            g.set_weight_data(id, std::make_shared<const Tensor>(type));
            continue;
        }
        Rng rng = detail::tensor_stream(seed, detail::weight_stream_salt, n.name);
        const bool positive = detail::feeds_positive_slot(g, {id, 0});
        const double bound = detail::fan_in_bound(type.shape);
        std::vector<float> values = positive
            ? detail::uniform_values(rng, type.shape.numel(), detail::positive_low, detail::positive_high)
            : detail::uniform_values(rng, type.shape.numel(), -bound, bound);
        g.set_weight_data(id, std::make_shared<const Tensor>(Tensor::from_floats(type.shape, std::move(values))));
    }
}

/// One tensor per graph input, in `g.inputs()` order, drawn under `seed` from U(-1, 1), or
/// from the positive range weights get where a consumer needs the input positive (a
/// variance, a square root's operand). Integer and bool inputs (a mask, token ids) are 0
/// or 1 at random, as the ONNX Runtime harness (tools/ort/compare.js) draws them: valid
/// as an index into any axis of two or more, and both branches of a mask; inputs of
/// other dtypes are zeros.
[[nodiscard]] inline std::vector<Tensor> random_inputs(const Graph& g, std::uint64_t seed) {
    std::vector<Tensor> inputs;
    inputs.reserve(g.inputs().size());
    for (const NodeId id : g.inputs()) {
        const Node& n = g.node(id);
        const TensorType& type = n.outputs[0].type;
        Rng rng = detail::tensor_stream(seed, detail::input_stream_salt, n.name);
        if (type.dtype != DType::Float32) {
            inputs.push_back(is_executable_dtype(type.dtype) ? detail::random_bits(rng, type) : Tensor(type));
            continue;
        }
        const bool positive = detail::feeds_positive_slot(g, {id, 0});
        inputs.push_back(Tensor::from_floats(
            type.shape, positive ? detail::uniform_values(rng, type.shape.numel(), detail::positive_low, detail::positive_high)
                                 : detail::uniform_values(rng, type.shape.numel(), -detail::unit_bound, detail::unit_bound)));
    }
    return inputs;
}

}  // namespace rlflow::exec
