#pragma once
/// \file
/// Constant-folding evaluators of the ONNX ops that compute: Cast, Range, elementwise
/// unary/binary/variadic ops with numpy broadcasting, Where and the Reduce family.
///
/// Each elementwise op is a small functor: `supports<T>` says which element types it is
/// defined on, `apply` computes one element and returns nullopt where the result would be
/// undefined (integer division by zero, an out-of-range conversion). float32 is computed
/// in float, not double, to match ONNX Runtime bit for bit where the op is correctly rounded.

#include <rlflow/core/detail/typed_ops.hpp>
#include <rlflow/onnx/detail/fold_context.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace rlflow::onnx_io::detail::folding {

// The element machinery and tensor-level evaluators the executor shares.
using namespace rlflow::detail::typed;

// ---- Cast ------------------------------------------------------------------------------------

inline FoldResult fold_cast(const FoldContext& c) {
    c.expect_inputs(1, 1);
    const std::int64_t to = c.required_int("to");
    if (!is_valid_dtype(static_cast<int>(to)) || to != static_cast<int>(to))
        c.fail("attribute 'to' is not a data type: " + std::to_string(to));
    return single(cast_tensor(c.value(0), static_cast<DType>(to)));
}

/// CastLike (opset 15): cast input 0 to the dtype of input 1.
inline FoldResult fold_cast_like(const FoldContext& c) {
    c.expect_inputs(2, 2);
    return single(cast_tensor(c.value(0), c.value(1).dtype()));
}

// ---- Range -----------------------------------------------------------------------------------

/// Range: n = max(ceil((limit - start) / delta), 0) elements start, start + delta, ...
/// accumulated in T, as the ONNX function body and ONNX Runtime do.
template <class T>
[[nodiscard]] FoldResult range_typed(const FoldContext& c) {
    if constexpr (!is_number_v<T>) {
        return std::nullopt;
    } else {
        T value = c.value(0).to_vector<T>()[0];
        const T limit = c.value(1).to_vector<T>()[0];
        const T delta = c.value(2).to_vector<T>()[0];
        if (delta == T{0}) c.fail("delta is 0");
        const double span = std::is_floating_point_v<T> ? static_cast<double>(limit - value)
                                                        : static_cast<double>(limit) - static_cast<double>(value);
        const double count = std::max(std::ceil(span / static_cast<double>(delta)), 0.0);
        if (!(count <= static_cast<double>(max_fold_elements))) return std::nullopt;
        std::vector<T> result(static_cast<std::size_t>(count));
        for (auto& element : result) {
            element = value;
            value = wrapping(value, delta, std::plus<>{});
        }
        return single(Tensor::from_values(dtype_of<T>(), Shape{static_cast<std::int64_t>(result.size())}, result));
    }
}

inline FoldResult fold_range(const FoldContext& c) {
    c.expect_inputs(3, 3);
    const DType dtype = c.value(0).dtype();
    for (std::size_t i = 0; i < 3; ++i) {
        if (c.value(i).numel() != 1) c.fail("input " + std::to_string(i) + " must be a scalar");
        if (c.value(i).dtype() != dtype) c.fail("inputs have different types");
    }
    return visit_element_type(dtype, [&](auto tag) { return range_typed<typename decltype(tag)::type>(c); });
}

// ---- elementwise functors ------------------------------------------------------------------

/// Arithmetic on numbers; integers wrap instead of overflowing.
template <class Operation>
struct Arithmetic {
    template <class T>
    static constexpr bool supports = is_number_v<T>;
    template <class T>
    static std::optional<T> apply(T a, T b) noexcept { return wrapping(a, b, Operation{}); }
};
using AddOp = Arithmetic<std::plus<>>;
using SubOp = Arithmetic<std::minus<>>;
using MulOp = Arithmetic<std::multiplies<>>;

/// Div: integers truncate toward zero (C++ `/`, as ONNX Runtime); x/0 and MIN/-1 do not fold.
struct DivOp {
    template <class T>
    static constexpr bool supports = is_number_v<T>;
    template <class T>
    static std::optional<T> apply(T a, T b) noexcept {
        if constexpr (std::is_integral_v<T>) {
            if (b == 0) return std::nullopt;
            if constexpr (std::is_signed_v<T>)
                if (a == std::numeric_limits<T>::min() && b == -1) return std::nullopt;
            return static_cast<T>(a / b);
        } else {
            return a / b;
        }
    }
};

/// An integer a % b as C++ computes it (the dividend's sign); x % 0 does not fold, and
/// x % -1 is 0 (MIN % -1 overflows in C++).
template <class T>
std::optional<T> integer_remainder(T a, T b) noexcept {
    if (b == 0) return std::nullopt;
    if constexpr (std::is_signed_v<T>)
        if (b == -1) return T{0};
    return static_cast<T>(a % b);
}

/// Mod with fmod = 0 (the default): the remainder takes the divisor's sign, as Python's %
/// (ONNX allows it on integers only; floats need fmod = 1). x mod 0 does not fold; MIN mod
/// -1 is 0.
struct FloorModOp {
    template <class T>
    static constexpr bool supports = std::is_integral_v<T>;
    template <class T>
    static std::optional<T> apply(T a, T b) noexcept {
        auto r = integer_remainder(a, b);
        if constexpr (std::is_signed_v<T>)
            if (r && *r != 0 && (*r < 0) != (b < 0)) *r = static_cast<T>(*r + b);
        return r;
    }
};

/// Mod with fmod = 1: C's fmod, the remainder takes the dividend's sign. An integer x mod 0
/// does not fold; a float one is NaN, as std::fmod gives.
struct TruncModOp {
    template <class T>
    static constexpr bool supports = is_number_v<T>;
    template <class T>
    static std::optional<T> apply(T a, T b) noexcept {
        if constexpr (std::is_integral_v<T>) return integer_remainder(a, b);
        else return static_cast<T>(std::fmod(a, b));
    }
};

/// Min/Max; a NaN operand gives NaN.
template <bool is_max>
struct Extremum {
    template <class T>
    static constexpr bool supports = is_number_v<T>;
    template <class T>
    static std::optional<T> apply(T a, T b) noexcept {
        if constexpr (std::is_floating_point_v<T>)
            if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
        return is_max ? (a < b ? b : a) : (b < a ? b : a);
    }
};
using MinOp = Extremum<false>;
using MaxOp = Extremum<true>;

/// Unary op on floating-point numbers only (ONNX defines these on float types).
template <class Function>
struct FloatingUnary {
    template <class T>
    static constexpr bool supports = std::is_floating_point_v<T>;
    template <class T>
    static std::optional<T> apply(T x) noexcept { return Function::compute(x); }
};
struct SqrtFunction { template <class T> static T compute(T x) noexcept { return std::sqrt(x); } };
struct FloorFunction { template <class T> static T compute(T x) noexcept { return std::floor(x); } };
struct CeilFunction { template <class T> static T compute(T x) noexcept { return std::ceil(x); } };
/// Round half to even (the default floating-point rounding mode).
struct RoundFunction { template <class T> static T compute(T x) noexcept { return std::nearbyint(x); } };
struct ErfFunction { template <class T> static T compute(T x) noexcept { return std::erf(x); } };
struct ExpFunction { template <class T> static T compute(T x) noexcept { return std::exp(x); } };
struct LogFunction { template <class T> static T compute(T x) noexcept { return std::log(x); } };
struct ReciprocalFunction { template <class T> static T compute(T x) noexcept { return T{1} / x; } };
using SqrtOp = FloatingUnary<SqrtFunction>;
using FloorOp = FloatingUnary<FloorFunction>;
using CeilOp = FloatingUnary<CeilFunction>;
using RoundOp = FloatingUnary<RoundFunction>;
using ErfOp = FloatingUnary<ErfFunction>;
using ExpOp = FloatingUnary<ExpFunction>;
using LogOp = FloatingUnary<LogFunction>;
using ReciprocalOp = FloatingUnary<ReciprocalFunction>;

/// Neg (signed numbers; integers wrap).
struct NegOp {
    template <class T>
    static constexpr bool supports = is_number_v<T> && std::is_signed_v<T>;
    template <class T>
    static std::optional<T> apply(T x) noexcept { return wrapping(T{0}, x, std::minus<>{}); }
};
/// Abs (integers wrap: |MIN| = MIN, as two's complement negation).
struct AbsOp {
    template <class T>
    static constexpr bool supports = is_number_v<T>;
    template <class T>
    static std::optional<T> apply(T x) noexcept {
        if constexpr (std::is_floating_point_v<T>) return std::fabs(x);
        else return x < T{0} ? wrapping(T{0}, x, std::minus<>{}) : x;
    }
};
/// Sign: -1, 0 or 1 (NaN stays NaN).
struct SignOp {
    template <class T>
    static constexpr bool supports = is_number_v<T>;
    template <class T>
    static std::optional<T> apply(T x) noexcept {
        if constexpr (std::is_floating_point_v<T>)
            if (std::isnan(x)) return x;
        return static_cast<T>(T{0} < x ? 1 : (x < T{0} ? -1 : 0));
    }
};

}  // namespace rlflow::onnx_io::detail::folding
