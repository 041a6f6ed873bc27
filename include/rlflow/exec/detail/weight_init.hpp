#pragma once
/// \file
/// How random weights and inputs are drawn: the distributions and their streams.

#include <rlflow/core/detail/byte_writer.hpp>
#include <rlflow/core/graph.hpp>
#include <rlflow/core/random.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace rlflow::detail {

/// Strictly positive parameters (a BatchNorm variance) are drawn from U(low, high):
/// away from 0, so 1/sqrt(var + eps) stays moderate, and centred on 1.
inline constexpr double positive_low = 0.5;
inline constexpr double positive_high = 1.5;
/// Graph inputs and rank < 2 weights (biases, norm scales) are drawn from U(-1, 1).
inline constexpr double unit_bound = 1.0;
/// Salts that keep the weight and input streams apart when names coincide.
inline constexpr std::uint64_t weight_stream_salt = 0x77656967687473ULL;  // "weights"
inline constexpr std::uint64_t input_stream_salt = 0x696e70757473ULL;     // "inputs"

/// Bits of `OpTraits::positive_inputs`: slots at or past it are never positive.
inline constexpr std::uint32_t positive_slot_bits = std::numeric_limits<decltype(OpTraits::positive_inputs)>::digits;

/// Whether some consumer of `value` declares that input slot strictly positive
/// (`OpTraits::positive_inputs`), looking through view ops (a reshaped variance).
[[nodiscard]] inline bool feeds_positive_slot(const Graph& g, TensorRef value) {
    for (const Use& use : g.output(value).uses) {
        const OpTraits& traits = g.node(use.node).traits();
        if (use.input < positive_slot_bits && ((traits.positive_inputs >> use.input) & 1u) != 0) return true;
        if (traits.has(op_flag_view) && feeds_positive_slot(g, {use.node, 0})) return true;
    }
    return false;
}

/// The fan-in scale of a weight: U(-b, b) with b = 1/sqrt(numel / dim0) for rank >= 2
/// (inputs per output unit of a conv or linear kernel), b = 1 otherwise.
[[nodiscard]] inline double fan_in_bound(const Shape& shape) {
    if (shape.rank() < 2 || shape[0] == 0) return unit_bound;
    const double fan_in = static_cast<double>(shape.numel() / shape[0]);
    return fan_in > 0 ? 1.0 / std::sqrt(fan_in) : unit_bound;
}

/// `numel` draws from U(low, high).
[[nodiscard]] inline std::vector<float> uniform_values(Rng& rng, std::int64_t numel, double low, double high) {
    std::vector<float> values(static_cast<std::size_t>(numel));
    for (float& v : values) v = static_cast<float>(rng.uniform(low, high));
    return values;
}

/// A tensor of `type` (int32, int64 or bool) whose elements are 0 or 1 at random.
[[nodiscard]] inline Tensor random_bits(Rng& rng, const TensorType& type) {
    const auto count = static_cast<std::size_t>(type.shape.numel());
    const std::size_t size = dtype_size(type.dtype);
    std::vector<std::byte> bytes(count * size, std::byte{0});
    for (std::size_t i = 0; i < count; ++i)  // little-endian: the lowest byte holds the bit
        bytes[i * size] = static_cast<std::byte>(rng.below(2));
    return Tensor::from_raw(type.dtype, type.shape, bytes);
}

/// The generator for the tensor named `name`: a pure function of seed, salt and name,
/// so data does not depend on node ids or on which other tensors were filled.
[[nodiscard]] inline Rng tensor_stream(std::uint64_t seed, std::uint64_t salt, const std::string& name) {
    return Rng(seed).fork(hash_bytes(name) ^ salt);
}

}  // namespace rlflow::detail
