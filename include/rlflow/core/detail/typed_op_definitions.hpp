#pragma once
/// \file
/// Shape and type inference of the typed core ops: the ops that compute on int32, int64
/// and bool tensors as well as float32 (op_flag_typed). Real exports keep them on data
/// where a mask or an index comes from a graph input (an attention mask, token ids): Where,
/// Equal, Less, Greater, Not, And, Or, Cast, Expand and Gather. Semantics follow ONNX
/// (opset 13-17); Expand's shape input, a compile-time constant, is an attribute.

#include <rlflow/core/detail/op_common.hpp>
#include <rlflow/core/detail/op_definitions.hpp>
#include <rlflow/core/detail/typed_ops.hpp>
#include <rlflow/core/dtype.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace rlflow::detail {

/// Fails unless input `i` holds an element type the executor computes on.
inline void expect_executable_input(const OpContext& c, std::size_t i) {
    if (!is_executable_dtype(c.inputs[i].dtype))
        c.fail("input " + std::to_string(i) + " is " + c.inputs[i].to_string()
               + "; typed ops compute on float, int32, int64 and bool");
}

/// The numpy broadcast of inputs `i` and `j`, which must share their element type.
[[nodiscard]] inline Shape same_type_broadcast(const OpContext& c, std::size_t i, std::size_t j) {
    expect_executable_input(c, i);
    if (c.inputs[i].dtype != c.inputs[j].dtype)
        c.fail("operand types differ: " + c.inputs[i].to_string() + " vs " + c.inputs[j].to_string());
    const auto out = broadcast_shapes(c.in(i), c.in(j));
    if (!out) c.fail("cannot broadcast " + c.in(i).to_string() + " with " + c.in(j).to_string());
    return *out;
}

/// Expand: the input broadcast against the attribute "shape" (numpy rules, either side may
/// be 1 or missing).
struct ExpandOp {
    static Infer infer(const OpContext& c) {
        expect_executable_input(c, 0);
        const auto& dims = c.attributes.get_ints("shape");
        if (dims.size() > static_cast<std::size_t>(Shape::max_rank) || std::any_of(dims.begin(), dims.end(), [](auto d) { return d < 0; }))
            c.fail("cannot expand to shape " + ints_to_string(dims));
        const auto out = broadcast_shapes(c.in(0), Shape(dims));
        if (!out) c.fail("cannot expand " + c.in(0).to_string() + " to " + ints_to_string(dims));
        // The shape comes from a file: its element count, and its bytes at the widest dtype,
        // must not overflow int64.
        constexpr std::int64_t widest = 16;
        std::int64_t elements = widest;
        for (int d = 0; d < out->rank(); ++d)
            if (__builtin_mul_overflow(elements, (*out)[d], &elements))
                c.fail("cannot expand to " + out->to_string() + ": more bytes than int64 counts");
        return detail::one(c.inputs[0].dtype, *out);
    }
};

/// Gather along "axis": data's dims before the axis, the indices' dims, data's dims after.
/// Indices are int32 or int64; negative ones count from the end (checked when it runs).
struct GatherOp {
    static void normalize(Attributes& a, std::span<const TensorType> in, std::string_view where) {
        normalize_axis(a, in, where, 0);
    }
    static Infer infer(const OpContext& c) {
        expect_executable_input(c, 0);
        const DType index = c.inputs[1].dtype;
        if (index != DType::Int64 && index != DType::Int32) c.fail("indices must be int32 or int64, got " + c.inputs[1].to_string());
        const auto axis = static_cast<int>(c.attributes.get_int("axis", 0));
        if (axis < 0 || axis >= c.in(0).rank()) c.fail("axis " + std::to_string(axis) + " out of range for " + c.in(0).to_string());
        const auto dims = typed::gather_dims(c.in(0), c.in(1), axis);
        if (dims.size() > static_cast<std::size_t>(Shape::max_rank))
            c.fail("output rank " + std::to_string(dims.size()) + " exceeds " + std::to_string(Shape::max_rank));
        return detail::one(c.inputs[0].dtype, Shape(dims));
    }
};

/// Where(condition, x, y): x where the bool condition holds, else y, all three broadcast.
struct WhereOp {
    static Infer infer(const OpContext& c) {
        if (c.inputs[0].dtype != DType::Bool) c.fail("condition must be bool, got " + c.inputs[0].to_string());
        const Shape values = same_type_broadcast(c, 1, 2);
        const auto out = broadcast_shapes(c.in(0), values);
        if (!out) c.fail("cannot broadcast condition " + c.in(0).to_string() + " with " + values.to_string());
        return detail::one(c.inputs[1].dtype, *out);
    }
};

/// Equal, Less, Greater: a bool per broadcast element pair of one numeric type (Equal also
/// compares bools).
template <bool with_bool>
struct CompareOp {
    static Infer infer(const OpContext& c) {
        const Shape out = same_type_broadcast(c, 0, 1);
        if (c.inputs[0].dtype == DType::Bool && !with_bool) c.fail("does not compare bools");
        return detail::one(DType::Bool, out);
    }
};

/// And, Or: bools in, bool out, broadcast.
struct LogicalOp {
    static Infer infer(const OpContext& c) {
        const Shape out = same_type_broadcast(c, 0, 1);
        if (c.inputs[0].dtype != DType::Bool) c.fail("takes bools, got " + c.inputs[0].to_string());
        return detail::one(DType::Bool, out);
    }
};

struct NotOp {
    static Infer infer(const OpContext& c) {
        if (c.inputs[0].dtype != DType::Bool) c.fail("takes bools, got " + c.inputs[0].to_string());
        return detail::one(DType::Bool, c.in(0));
    }
};

/// Cast to the element type in attribute "to" (an ONNX TensorProto.DataType code): float
/// to integer truncates toward zero, anything to bool tests != 0, bool is 0 or 1.
struct CastOp {
    static Infer infer(const OpContext& c) {
        expect_executable_input(c, 0);
        const std::int64_t to = c.attributes.get_int("to", 0);
        if (!is_valid_dtype(static_cast<int>(to)) || to != static_cast<int>(to) || !is_executable_dtype(static_cast<DType>(to)))
            c.fail("casts to float, int32, int64 or bool, not type code " + std::to_string(to));
        return detail::one(static_cast<DType>(to), c.in(0));
    }
};

}  // namespace rlflow::detail
