#pragma once
/// \file
/// Tensor-level evaluators of the ops that compute on any element type, shared by the ONNX
/// importer's constant folder and the reference executor's typed ops (Where, the
/// comparisons, the logical ops, Cast, Expand, Gather), so that a value folded at import and
/// the same value computed at run time come from one piece of code.
///
/// Each elementwise op is a small functor: `supports<T>` says which element types it is
/// defined on, `apply` computes one element and returns nullopt where the result would be
/// undefined (integer division by zero, an out-of-range conversion). Callers check shapes
/// and dtypes first and report problems in their own words; these functions return
/// nullopt only where an element has no defined value.

#include <rlflow/core/detail/typed_elements.hpp>
#include <rlflow/core/shape.hpp>
#include <rlflow/core/tensor.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace rlflow::detail::typed {

// ---- elementwise functors ----------------------------------------------------------------

/// A comparison producing bool; `with_bool` says whether bool inputs are allowed (Equal).
template <class Comparison, bool with_bool>
struct Compare {
    template <class T>
    static constexpr bool supports = is_number_v<T> || (with_bool && std::is_same_v<T, BoolByte>);
    template <class T>
    static std::optional<BoolByte> apply(T a, T b) noexcept {
        return BoolByte{static_cast<std::uint8_t>(Comparison{}(a, b) ? 1 : 0)};
    }
};
using EqualOp = Compare<std::equal_to<>, true>;
using LessOp = Compare<std::less<>, false>;
using GreaterOp = Compare<std::greater<>, false>;
using LessOrEqualOp = Compare<std::less_equal<>, false>;
using GreaterOrEqualOp = Compare<std::greater_equal<>, false>;

/// A logical op on bools.
template <class Logic>
struct Logical {
    template <class T>
    static constexpr bool supports = std::is_same_v<T, BoolByte>;
    template <class T>
    static std::optional<BoolByte> apply(T a, T b) noexcept {
        return BoolByte{static_cast<std::uint8_t>(Logic{}(a.value != 0, b.value != 0) ? 1 : 0)};
    }
};
using AndOp = Logical<std::logical_and<>>;
using OrOp = Logical<std::logical_or<>>;
using XorOp = Logical<std::not_equal_to<>>;

struct NotOp {
    template <class T>
    static constexpr bool supports = std::is_same_v<T, BoolByte>;
    template <class T>
    static std::optional<T> apply(T x) noexcept { return BoolByte{static_cast<std::uint8_t>(x.value == 0 ? 1 : 0)}; }
};

// ---- applying them -----------------------------------------------------------------------

template <class Op, class T>
[[nodiscard]] std::optional<Tensor> unary_typed(const Tensor& input) {
    if constexpr (!Op::template supports<T>) {
        return std::nullopt;
    } else {
        const auto values = input.to_vector<T>();
        std::vector<T> result(values.size());
        for (std::size_t i = 0; i < values.size(); ++i) {
            const auto value = Op::apply(values[i]);
            if (!value) return std::nullopt;
            result[i] = *value;
        }
        return Tensor::from_values(input.dtype(), input.shape(), result);
    }
}

/// `Op` on every element of `input`; nullopt where its dtype is not one `Op` supports.
template <class Op>
[[nodiscard]] std::optional<Tensor> unary_tensor(const Tensor& input) {
    return visit_element_type(input.dtype(), [&](auto tag) -> std::optional<Tensor> {
        return unary_typed<Op, typename decltype(tag)::type>(input);
    });
}

template <class Op, class T>
[[nodiscard]] std::optional<Tensor> binary_typed(const Tensor& a, const Tensor& b, const Shape& output) {
    if constexpr (!Op::template supports<T>) {
        return std::nullopt;
    } else {
        using Result = typename decltype(Op::apply(T{}, T{}))::value_type;
        const auto lhs = a.to_vector<T>();
        const auto rhs = b.to_vector<T>();
        std::vector<Result> result(static_cast<std::size_t>(output.numel()));
        BroadcastWalker<2> walker(output, {a.shape(), b.shape()});
        for (auto& element : result) {
            const auto [i, j] = walker.offsets();
            const auto value = Op::apply(lhs[static_cast<std::size_t>(i)], rhs[static_cast<std::size_t>(j)]);
            if (!value) return std::nullopt;
            element = *value;
            walker.next();
        }
        return Tensor::from_values(dtype_of<Result>(), output, result);
    }
}

/// `Op` on two tensors of one dtype, broadcast to `output` (their numpy broadcast);
/// nullopt where the dtype is not one `Op` supports.
template <class Op>
[[nodiscard]] std::optional<Tensor> binary_tensor(const Tensor& a, const Tensor& b, const Shape& output) {
    return visit_element_type(a.dtype(), [&](auto tag) -> std::optional<Tensor> {
        return binary_typed<Op, typename decltype(tag)::type>(a, b, output);
    });
}

// ---- Cast ------------------------------------------------------------------------------------

template <class D, class S>
[[nodiscard]] std::optional<Tensor> cast_typed(const Tensor& input) {
    const auto values = input.to_vector<S>();
    std::vector<D> result(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
        const auto converted = convert_element<D>(values[i]);
        if (!converted) return std::nullopt;
        result[i] = *converted;
    }
    return Tensor::from_values(dtype_of<D>(), input.shape(), result);
}

/// `input` converted to `target` as ONNX's Cast does; nullopt for dtypes this does not
/// convert, and where an element has no defined value in `target` (NaN or an out-of-range
/// float to an integer).
[[nodiscard]] inline std::optional<Tensor> cast_tensor(const Tensor& input, DType target) {
    return visit_element_type(input.dtype(), [&](auto source) {
        return visit_element_type(target, [&](auto destination) -> std::optional<Tensor> {
            return cast_typed<typename decltype(destination)::type, typename decltype(source)::type>(input);
        });
    });
}

// ---- moving elements -------------------------------------------------------------------------

/// Where(condition, x, y) broadcast to `output`: x's element where the bool condition holds,
/// else y's. Copies raw bytes, so any dtype works (x and y must share it).
[[nodiscard]] inline Tensor where_tensor(const Tensor& condition, const Tensor& x, const Tensor& y, const Shape& output) {
    const std::size_t element_size = dtype_size(x.dtype());
    std::vector<std::byte> bytes(static_cast<std::size_t>(output.numel()) * element_size);
    BroadcastWalker<3> walker(output, {condition.shape(), x.shape(), y.shape()});
    for (std::size_t i = 0; i < bytes.size(); i += element_size) {
        const auto [k, from_x, from_y] = walker.offsets();
        const bool pick_x = condition.raw()[static_cast<std::size_t>(k)] != std::byte{0};
        const auto source = pick_x ? x.raw().subspan(static_cast<std::size_t>(from_x) * element_size, element_size)
                                   : y.raw().subspan(static_cast<std::size_t>(from_y) * element_size, element_size);
        std::memcpy(bytes.data() + i, source.data(), element_size);
        walker.next();
    }
    return Tensor::from_raw(x.dtype(), output, bytes);
}

/// `data` repeated to `output`, a shape it broadcasts to (Expand).
[[nodiscard]] inline Tensor expand_tensor(const Tensor& data, const Shape& output) {
    const auto strides = row_major_strides(data.shape());
    const int lead = output.rank() - data.shape().rank();
    OffsetTable table;
    for (int d = 0; d < output.rank(); ++d) {
        const bool repeats = d < lead || data.shape()[d - lead] == 1;
        table.push_back(identity_offsets(output[d], repeats ? 0 : strides[static_cast<std::size_t>(d - lead)]));
    }
    return remap(data, table, output);
}

/// The shape of Gather(data, indices) along `axis`: data's dims before it, the indices'
/// dims, then data's dims after it (its rank may exceed Shape::max_rank: callers check).
[[nodiscard]] inline std::vector<std::int64_t> gather_dims(const Shape& data, const Shape& indices, int axis) {
    std::vector<std::int64_t> dims;
    for (int d = 0; d < axis; ++d) dims.push_back(data[d]);
    for (const auto d : indices.dims()) dims.push_back(d);
    for (int d = axis + 1; d < data.rank(); ++d) dims.push_back(data[d]);
    return dims;
}

/// The first index in `indices` outside [-size, size), if any (ONNX's Gather range).
[[nodiscard]] inline std::optional<std::int64_t> index_out_of_range(std::span<const std::int64_t> indices,
                                                                    std::int64_t size) noexcept {
    for (const auto index : indices)
        if (index < -size || index >= size) return index;
    return std::nullopt;
}

/// Gather(data, indices) along `axis` into `output` (gather_dims' shape); every index must be
/// in [-size, size) of that axis (index_out_of_range finds one that is not), negative ones
/// counting from the end.
[[nodiscard]] inline Tensor gather_tensor(const Tensor& data, std::span<const std::int64_t> indices, int axis,
                                          const Shape& output) {
    const Shape& shape = data.shape();
    const std::int64_t size = shape[axis];
    const auto strides = row_major_strides(shape);
    OffsetTable table;
    for (int d = 0; d < axis; ++d) table.push_back(identity_offsets(shape[d], strides[static_cast<std::size_t>(d)]));
    auto& picked = table.emplace_back();
    for (const auto index : indices) picked.push_back((index < 0 ? index + size : index) * strides[static_cast<std::size_t>(axis)]);
    for (int d = axis + 1; d < shape.rank(); ++d)
        table.push_back(identity_offsets(shape[d], strides[static_cast<std::size_t>(d)]));
    return remap(data, table, output);
}

/// The elements of an integer tensor (int32 or int64) as int64; nullopt for other dtypes.
[[nodiscard]] inline std::optional<std::vector<std::int64_t>> integer_values(const Tensor& t) {
    if (t.dtype() == DType::Int64) return t.to_vector<std::int64_t>();
    if (t.dtype() != DType::Int32) return std::nullopt;
    const auto narrow = t.to_vector<std::int32_t>();
    return std::vector<std::int64_t>(narrow.begin(), narrow.end());
}

}  // namespace rlflow::detail::typed
