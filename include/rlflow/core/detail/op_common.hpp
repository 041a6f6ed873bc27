#pragma once
/// \file
/// Shared pieces of the op definitions: the context an op's shape inference sees, and
/// small attribute and shape helpers.

#include <rlflow/core/attributes.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/core/shape.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow {

/// What an op's normalisation, shape inference and cost functions see of a node.
struct OpContext {
    const Attributes& attributes;
    /// Types of the node's (present) inputs.
    std::span<const TensorType> inputs;
    /// The node's current output types: the stored types for source and opaque nodes,
    /// the inferred ones when computing costs.
    std::span<const TensorType> outputs;
    /// "Conv2D node 'conv1' (#17)", for error messages.
    std::string_view where;

    [[noreturn]] void fail(const std::string& message) const {
        throw shape_error(std::string(where) + ": " + message);
    }
    [[nodiscard]] const Shape& in(std::size_t i) const { return inputs[i].shape; }
};

namespace detail {

[[nodiscard]] inline std::string ints_to_string(std::span<const std::int64_t> v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
}

/// Sets an int-list attribute to `fallback` if absent, then checks its length.
inline void default_ints(Attributes& attrs, std::string_view name, std::vector<std::int64_t> fallback,
                         std::string_view where) {
    if (!attrs.has(name)) attrs.set(name, fallback);
    const auto& v = attrs.get_ints(name);
    if (v.size() != fallback.size())
        throw shape_error(std::string(where) + ": attribute '" + std::string(name) + "' has "
                          + std::to_string(v.size()) + " values, expected " + std::to_string(fallback.size()));
}

inline void default_int(Attributes& attrs, std::string_view name, std::int64_t fallback) {
    if (!attrs.has(name)) attrs.set(name, fallback);
}

inline void default_float(Attributes& attrs, std::string_view name, double fallback) {
    if (!attrs.has(name)) attrs.set(name, fallback);
}

/// Output length of a sliding window (ONNX conv/pool arithmetic).
[[nodiscard]] inline std::int64_t window_output(std::int64_t in, std::int64_t pad_begin, std::int64_t pad_end,
                                                std::int64_t kernel, std::int64_t stride, std::int64_t dilation,
                                                bool ceil_mode) {
    const std::int64_t span = in + pad_begin + pad_end - ((kernel - 1) * dilation + 1);
    if (span < 0) return 0;
    if (!ceil_mode) return span / stride + 1;
    // Ceil mode may add a last window; it is dropped when it would start inside the end
    // padding (PyTorch's rule, which ONNX Runtime and the opset-19 spec follow).
    std::int64_t out = (span + stride - 1) / stride + 1;
    if ((out - 1) * stride >= in + pad_begin) --out;
    return out;
}

[[nodiscard]] inline std::vector<TensorType> one(DType dtype, const Shape& shape) {
    return {TensorType{dtype, shape}};
}

}  // namespace detail
}  // namespace rlflow
