#pragma once
/// \file
/// Kernels of the typed ops (op_flag_typed): Where, Equal, Less, Greater, Not, And, Or,
/// Cast, Expand and Gather. They compute on tensors of any executable dtype through the
/// evaluators the ONNX importer folds constants with (core/detail/typed_ops.hpp), so a
/// value is the same whether it was folded at import or computed at run time.

#include <rlflow/core/detail/typed_ops.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/core/node.hpp>
#include <rlflow/core/tensor.hpp>

#include <optional>
#include <span>
#include <string>

namespace rlflow::detail {

/// Computes a typed node's one output from its inputs.
using TypedKernelFn = Tensor (*)(const Node&, std::span<const Tensor>);

/// The value a typed kernel computed, or the error naming the node where an element has
/// no defined value.
[[nodiscard]] inline Tensor defined_or_fail(std::optional<Tensor> value, const Node& n, const std::string& why) {
    if (!value) throw shape_error(n.describe() + ": " + why);
    return std::move(*value);
}

inline Tensor where_kernel(const Node& n, std::span<const Tensor> in) {
    return typed::where_tensor(in[0], in[1], in[2], n.outputs[0].type.shape);
}

/// Equal, Less, Greater, And, Or: `Op` per broadcast element pair.
template <class Op>
Tensor typed_binary_kernel(const Node& n, std::span<const Tensor> in) {
    return defined_or_fail(typed::binary_tensor<Op>(in[0], in[1], n.outputs[0].type.shape), n,
                           "no kernel for " + in[0].type().to_string());
}

inline Tensor not_kernel(const Node& n, std::span<const Tensor> in) {
    return defined_or_fail(typed::unary_tensor<typed::NotOp>(in[0]), n, "no kernel for " + in[0].type().to_string());
}

inline Tensor cast_kernel(const Node& n, std::span<const Tensor> in) {
    return defined_or_fail(typed::cast_tensor(in[0], n.outputs[0].type.dtype), n,
                           "an element has no value in " + std::string(dtype_name(n.outputs[0].type.dtype))
                               + " (NaN, or a float out of the integer's range)");
}

inline Tensor expand_kernel(const Node& n, std::span<const Tensor> in) {
    return typed::expand_tensor(in[0], n.outputs[0].type.shape);
}

/// Gather: an index outside [-size, size) of the axis is an error, as in ONNX Runtime.
inline Tensor gather_kernel(const Node& n, std::span<const Tensor> in) {
    const auto indices = typed::integer_values(in[1]);
    RLFLOW_ASSERT(indices.has_value());
    const auto axis = static_cast<int>(n.attributes.get_int("axis", 0));
    const std::int64_t size = in[0].shape()[axis];
    if (const auto bad = typed::index_out_of_range(*indices, size))
        throw shape_error(n.describe() + ": index " + std::to_string(*bad) + " out of range for an axis of size "
                          + std::to_string(size));
    return typed::gather_tensor(in[0], *indices, axis, n.outputs[0].type.shape);
}

}  // namespace rlflow::detail
