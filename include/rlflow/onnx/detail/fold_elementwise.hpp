#pragma once
/// \file
/// Constant-folding evaluators that apply the functors of fold_math_ops.hpp elementwise with
/// numpy broadcasting (unary, binary, variadic, Pow, Where) and along axes (Reduce*).

#include <rlflow/core/detail/typed_ops.hpp>
#include <rlflow/onnx/detail/fold_context.hpp>
#include <rlflow/onnx/detail/fold_math_ops.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

namespace rlflow::onnx_io::detail::folding {

// The element machinery and tensor-level evaluators the executor shares.
using namespace rlflow::detail::typed;

template <class Op>
FoldResult fold_unary(const FoldContext& c) {
    c.expect_inputs(1, 1);
    const Tensor& input = c.value(0);
    return single(unary_tensor<Op>(input));
}

/// The numpy broadcast of two inputs' shapes; fails when they do not broadcast.
[[nodiscard]] inline Shape broadcast_or_fail(const FoldContext& c, const Shape& a, const Shape& b) {
    const auto shape = broadcast_shapes(a, b);
    if (!shape) c.fail("cannot broadcast " + a.to_string() + " with " + b.to_string());
    return *shape;
}

/// `Op` on two tensors of one dtype, broadcast.
template <class Op>
[[nodiscard]] std::optional<Tensor> apply_binary(const FoldContext& c, const Tensor& a, const Tensor& b) {
    if (a.dtype() != b.dtype())
        c.fail("input types " + a.type().to_string() + " and " + b.type().to_string() + " differ");
    const Shape shape = broadcast_or_fail(c, a.shape(), b.shape());
    if (!bounded_shape(shape.dims())) return std::nullopt;
    return binary_tensor<Op>(a, b, shape);
}

template <class Op>
FoldResult fold_binary(const FoldContext& c) {
    c.expect_inputs(2, 2);
    return single(apply_binary<Op>(c, c.value(0), c.value(1)));
}

/// Mod: the remainder with the divisor's sign (fmod = 0, integers) or the dividend's
/// (fmod = 1). fmod = 0 on floats, which ONNX forbids, is left unfolded.
inline FoldResult fold_mod(const FoldContext& c) {
    c.expect_inputs(2, 2);
    if (c.int_attribute("fmod", 0) != 0) return single(apply_binary<TruncModOp>(c, c.value(0), c.value(1)));
    return single(apply_binary<FloorModOp>(c, c.value(0), c.value(1)));
}

/// Min, Max, Sum: `Op` folded left to right over any number of inputs.
template <class Op>
FoldResult fold_variadic(const FoldContext& c) {
    c.expect_inputs(1, std::numeric_limits<int>::max());
    std::optional<Tensor> result = c.value(0);
    for (std::size_t i = 1; i < c.input_count() && result; ++i) result = apply_binary<Op>(c, *result, c.value(i));
    return single(std::move(result));
}

/// Pow as ONNX Runtime computes it: `std::pow(base, exponent)` in the C++ overload the two
/// element types select, except that a scalar exponent 2 or 3 multiplies.
template <class T, class E>
[[nodiscard]] std::optional<Tensor> pow_typed(const Tensor& base, const Tensor& exponent, const Shape& output) {
    if constexpr (!is_number_v<T> || !is_number_v<E>) {
        return std::nullopt;
    } else {
        const auto bases = base.to_vector<T>();
        const auto exponents = exponent.to_vector<E>();
        const bool scalar_exponent = exponents.size() == 1;
        std::vector<T> result(static_cast<std::size_t>(output.numel()));
        BroadcastWalker<2> walker(output, {base.shape(), exponent.shape()});
        for (auto& element : result) {
            const T x = bases[static_cast<std::size_t>(walker.offsets()[0])];
            const E y = exponents[static_cast<std::size_t>(walker.offsets()[1])];
            walker.next();
            const T square = wrapping(x, x, std::multiplies<>{});
            if (scalar_exponent && y == E{2}) element = square;
            else if (scalar_exponent && y == E{3}) element = wrapping(square, x, std::multiplies<>{});
            else if (const auto value = convert_element<T>(std::pow(x, y))) element = *value;
            else return std::nullopt;
        }
        return Tensor::from_values(base.dtype(), output, result);
    }
}

inline FoldResult fold_pow(const FoldContext& c) {
    c.expect_inputs(2, 2);
    const Tensor& base = c.value(0);
    const Tensor& exponent = c.value(1);
    const Shape shape = broadcast_or_fail(c, base.shape(), exponent.shape());
    if (!bounded_shape(shape.dims())) return std::nullopt;
    return single(visit_element_type(base.dtype(), [&](auto base_tag) {
        return visit_element_type(exponent.dtype(), [&](auto exponent_tag) -> std::optional<Tensor> {
            return pow_typed<typename decltype(base_tag)::type, typename decltype(exponent_tag)::type>(base, exponent,
                                                                                                        shape);
        });
    }));
}

/// Where(condition, x, y), broadcasting all three; copies raw bytes, so any dtype works.
inline FoldResult fold_where(const FoldContext& c) {
    c.expect_inputs(3, 3);
    const Tensor& condition = c.value(0);
    const Tensor& x = c.value(1);
    const Tensor& y = c.value(2);
    if (condition.dtype() != DType::Bool) c.fail("condition must be bool, got " + condition.type().to_string());
    if (x.dtype() != y.dtype()) c.fail("input types " + x.type().to_string() + " and " + y.type().to_string() + " differ");
    const Shape shape = broadcast_or_fail(c, condition.shape(), broadcast_or_fail(c, x.shape(), y.shape()));
    if (!bounded_shape(shape.dims())) return std::nullopt;
    return single(where_tensor(condition, x, y, shape));
}

// ---- reductions ----------------------------------------------------------------------------

/// The opset in which ReduceProd/Mean/Max/Min axes turned into an input (ReduceSum's did in 13).
inline constexpr std::int64_t reduce_axes_input_opset = 18;

/// A reduction: `identity` starts each group, `combine` adds an element. `mean` divides by the
/// group size; `needs_elements` refuses empty groups (Max/Min/Mean have no value for them).
template <class Combine, int identity_value, bool is_mean, std::int64_t axes_input_since>
struct Accumulate {
    static constexpr std::int64_t axes_input_opset = axes_input_since;
    static constexpr bool mean = is_mean;
    static constexpr bool needs_elements = is_mean;
    template <class T>
    static T identity() noexcept { return static_cast<T>(identity_value); }
    template <class T>
    static T combine(T total, T x) noexcept { return wrapping(total, x, Combine{}); }
};
using ReduceSumOp = Accumulate<std::plus<>, 0, false, inputs_replace_attributes_opset>;
using ReduceProdOp = Accumulate<std::multiplies<>, 1, false, reduce_axes_input_opset>;
using ReduceMeanOp = Accumulate<std::plus<>, 0, true, reduce_axes_input_opset>;

template <bool is_max>
struct ReduceExtremumOp {
    static constexpr std::int64_t axes_input_opset = reduce_axes_input_opset;
    static constexpr bool mean = false;
    static constexpr bool needs_elements = true;
    template <class T>
    static T identity() noexcept {
        if constexpr (std::numeric_limits<T>::has_infinity)
            return is_max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
        else return is_max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    }
    template <class T>
    static T combine(T best, T x) noexcept { return *Extremum<is_max>::apply(best, x); }
};
using ReduceMaxOp = ReduceExtremumOp<true>;
using ReduceMinOp = ReduceExtremumOp<false>;

/// Reduces `data` into groups: `kept` is data's shape with the reduced axes set to 1.
template <class Op, class T>
[[nodiscard]] std::optional<Tensor> reduce_typed(const Tensor& data, const Shape& kept, const Shape& output) {
    if constexpr (!is_number_v<T>) {
        return std::nullopt;
    } else {
        const std::int64_t groups = kept.numel();
        const std::int64_t group_size = groups == 0 ? 0 : data.numel() / groups;
        if (Op::needs_elements && groups > 0 && group_size == 0) return std::nullopt;
        std::vector<T> result(static_cast<std::size_t>(groups), Op::template identity<T>());
        BroadcastWalker<1> walker(data.shape(), {kept});
        for (const T x : data.to_vector<T>()) {
            T& total = result[static_cast<std::size_t>(walker.offsets()[0])];
            total = Op::combine(total, x);
            walker.next();
        }
        if constexpr (Op::mean)
            for (auto& total : result) total = static_cast<T>(total / static_cast<T>(group_size));
        return Tensor::from_values(data.dtype(), output, result);
    }
}

/// ReduceSum (axes an input since 13), ReduceProd/Mean/Max/Min (since 18); keepdims and
/// noop_with_empty_axes as ONNX defines them.
template <class Op>
FoldResult fold_reduce(const FoldContext& c) {
    constexpr std::int64_t axes_input_since = Op::axes_input_opset;
    c.expect_inputs(1, c.opset() < axes_input_since ? 1 : 2);
    const Tensor& data = c.value(0);
    const int rank = data.shape().rank();
    const auto axes = c.axes("axes", axes_input_since, 1);
    const bool all = !axes || axes->empty();
    if (all && c.int_attribute("noop_with_empty_axes", 0) != 0) return single(data);
    std::vector<int> reduced = all ? std::vector<int>{} : unique_axes(c, *axes, rank);
    for (int d = 0; all && d < rank; ++d) reduced.push_back(d);
    const bool keep = c.int_attribute("keepdims", 1) != 0;
    Shape kept = data.shape();
    std::vector<std::int64_t> dims;
    for (int d = 0; d < rank; ++d) {
        const bool is_reduced = std::find(reduced.begin(), reduced.end(), d) != reduced.end();
        if (is_reduced) kept[d] = 1;
        if (!is_reduced || keep) dims.push_back(kept[d]);
    }
    return single(visit_element_type(data.dtype(), [&](auto tag) -> std::optional<Tensor> {
        return reduce_typed<Op, typename decltype(tag)::type>(data, kept, Shape(dims));
    }));
}

}  // namespace rlflow::onnx_io::detail::folding
