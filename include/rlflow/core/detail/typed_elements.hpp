#pragma once
/// \file
/// Element-level machinery shared by the ONNX importer's constant folder and the reference
/// executor's typed ops: C++ types for ONNX dtypes (dispatch by dtype), float16 and numeric
/// conversions, wrapping integer arithmetic, numpy broadcast iteration and byte-level
/// remapping of tensors (gather, slice, transpose, tile, expand).

#include <rlflow/core/shape.hpp>
#include <rlflow/core/tensor.hpp>

#include <array>
#include <bit>
#include <cmath>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

namespace rlflow::detail::typed {

/// An ONNX bool element: one byte holding 0 or 1 (std::vector<bool> would pack bits).
/// Its comparisons are written out, not defaulted: nvcc's front end declares a defaulted
/// operator== that it never defines.
struct BoolByte {
    std::uint8_t value = 0;
    friend constexpr bool operator==(BoolByte a, BoolByte b) noexcept { return a.value == b.value; }
    friend constexpr auto operator<=>(BoolByte a, BoolByte b) noexcept { return a.value <=> b.value; }
};
/// An IEEE 754 binary16 element, held as its bits.
struct Half {
    std::uint16_t bits = 0;
};

/// True for the element types arithmetic is defined on (not bool, not float16).
template <class T>
inline constexpr bool is_number_v = std::is_arithmetic_v<T>;

/// The DType of a C++ element type.
template <class T>
[[nodiscard]] constexpr DType dtype_of() noexcept {
    if constexpr (std::is_same_v<T, float>) return DType::Float32;
    else if constexpr (std::is_same_v<T, double>) return DType::Float64;
    else if constexpr (std::is_same_v<T, std::int8_t>) return DType::Int8;
    else if constexpr (std::is_same_v<T, std::uint8_t>) return DType::UInt8;
    else if constexpr (std::is_same_v<T, std::int16_t>) return DType::Int16;
    else if constexpr (std::is_same_v<T, std::uint16_t>) return DType::UInt16;
    else if constexpr (std::is_same_v<T, std::int32_t>) return DType::Int32;
    else if constexpr (std::is_same_v<T, std::int64_t>) return DType::Int64;
    else if constexpr (std::is_same_v<T, std::uint32_t>) return DType::UInt32;
    else if constexpr (std::is_same_v<T, std::uint64_t>) return DType::UInt64;
    else if constexpr (std::is_same_v<T, BoolByte>) return DType::Bool;
    else {
        static_assert(std::is_same_v<T, Half>, "no ONNX dtype for this element type");
        return DType::Float16;
    }
}

/// Calls `f(std::type_identity<T>{})` with the element type of `dtype`; returns a
/// value-initialised result (nullopt) for dtypes the folder does not compute on.
template <class F>
auto visit_element_type(DType dtype, F&& f) {
    using Result = decltype(f(std::type_identity<float>{}));
    switch (dtype) {
        case DType::Float32: return f(std::type_identity<float>{});
        case DType::Float64: return f(std::type_identity<double>{});
        case DType::Int8: return f(std::type_identity<std::int8_t>{});
        case DType::UInt8: return f(std::type_identity<std::uint8_t>{});
        case DType::Int16: return f(std::type_identity<std::int16_t>{});
        case DType::UInt16: return f(std::type_identity<std::uint16_t>{});
        case DType::Int32: return f(std::type_identity<std::int32_t>{});
        case DType::Int64: return f(std::type_identity<std::int64_t>{});
        case DType::UInt32: return f(std::type_identity<std::uint32_t>{});
        case DType::UInt64: return f(std::type_identity<std::uint64_t>{});
        case DType::Bool: return f(std::type_identity<BoolByte>{});
        case DType::Float16: return f(std::type_identity<Half>{});
        default: return Result{};
    }
}

// ---- float16 -----------------------------------------------------------------------------

inline constexpr std::uint32_t float_exponent_bias = 127;
inline constexpr std::uint32_t half_exponent_bias = 15;
inline constexpr int float_mantissa_bits = 23;
inline constexpr int half_mantissa_bits = 10;
inline constexpr int mantissa_shift = float_mantissa_bits - half_mantissa_bits;
inline constexpr std::uint32_t half_exponent_all_ones = 0x1f;
inline constexpr std::uint32_t half_sign_bit = 0x8000;
inline constexpr std::uint32_t float_exponent_all_ones = 0xff;
/// The bit that makes a float16 NaN quiet (the top mantissa bit).
inline constexpr std::uint32_t half_quiet_nan_bit = 0x200;
/// The smallest float16 subnormal is 2^-24.
inline constexpr int half_subnormal_exponent = -24;

/// Rounds `mantissa >> shift` to nearest, ties to even.
[[nodiscard]] constexpr std::uint32_t shift_round_even(std::uint32_t mantissa, int shift) noexcept {
    const std::uint32_t kept = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((std::uint32_t{1} << shift) - 1);
    const std::uint32_t halfway = std::uint32_t{1} << (shift - 1);
    return kept + ((rest > halfway || (rest == halfway && (kept & 1U))) ? 1U : 0U);
}

/// float -> float16, round to nearest even (overflow gives infinity, NaN stays NaN).
[[nodiscard]] inline Half float_to_half(float value) noexcept {
    const auto bits = std::bit_cast<std::uint32_t>(value);
    const std::uint32_t sign = (bits >> 16) & half_sign_bit;
    const std::uint32_t exponent = (bits >> float_mantissa_bits) & float_exponent_all_ones;
    std::uint32_t mantissa = bits & ((1U << float_mantissa_bits) - 1);
    const std::uint32_t infinity = half_exponent_all_ones << half_mantissa_bits;
    if (exponent == float_exponent_all_ones)
        return {static_cast<std::uint16_t>(sign | infinity | (mantissa != 0 ? half_quiet_nan_bit : 0U))};
    const int biased = static_cast<int>(exponent) - static_cast<int>(float_exponent_bias) + static_cast<int>(half_exponent_bias);
    if (biased >= static_cast<int>(half_exponent_all_ones)) return {static_cast<std::uint16_t>(sign | infinity)};
    if (biased <= 0) {  // a float16 subnormal (or zero): value = m * 2^-24
        if (biased < -half_mantissa_bits) return {static_cast<std::uint16_t>(sign)};
        mantissa |= 1U << float_mantissa_bits;
        return {static_cast<std::uint16_t>(sign | shift_round_even(mantissa, mantissa_shift + 1 - biased))};
    }
    // A carry out of the mantissa correctly bumps the exponent (up to infinity).
    const std::uint32_t normal = (static_cast<std::uint32_t>(biased) << float_mantissa_bits) | mantissa;
    return {static_cast<std::uint16_t>(sign | shift_round_even(normal, mantissa_shift))};
}

/// float16 -> float (exact).
[[nodiscard]] inline float half_to_float(Half half) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(half.bits & half_sign_bit) << 16;
    const std::uint32_t exponent = (half.bits >> half_mantissa_bits) & half_exponent_all_ones;
    const std::uint32_t mantissa = half.bits & ((1U << half_mantissa_bits) - 1);
    if (exponent == half_exponent_all_ones)
        return std::bit_cast<float>(sign | (float_exponent_all_ones << float_mantissa_bits) | (mantissa << mantissa_shift));
    if (exponent == 0) {
        const float magnitude = std::ldexp(static_cast<float>(mantissa), half_subnormal_exponent);
        return sign != 0 ? -magnitude : magnitude;
    }
    const std::uint32_t rebiased = exponent + float_exponent_bias - half_exponent_bias;
    return std::bit_cast<float>(sign | (rebiased << float_mantissa_bits) | (mantissa << mantissa_shift));
}

// ---- conversions ---------------------------------------------------------------------------

/// Float -> integer, truncating toward zero; nullopt for NaN or a value out of D's range
/// (undefined behaviour in C++, implementation-specific in ONNX Runtime).
template <class D, class S>
[[nodiscard]] std::optional<D> float_to_integer(S value) noexcept {
    const double truncated = std::trunc(static_cast<double>(value));
    const double low = static_cast<double>(std::numeric_limits<D>::min());
    const double high = std::ldexp(1.0, std::numeric_limits<D>::digits);  // exclusive bound
    if (!(truncated >= low && truncated < high)) return std::nullopt;
    return static_cast<D>(truncated);
}

/// ONNX Cast of one element: float->int truncates, ->bool tests `!= 0`, int narrowing wraps.
template <class D, class S>
[[nodiscard]] std::optional<D> convert_element(S value) noexcept {
    if constexpr (std::is_same_v<S, Half>) return convert_element<D>(half_to_float(value));
    else if constexpr (std::is_same_v<S, BoolByte>) return convert_element<D>(value.value);
    else if constexpr (std::is_same_v<D, BoolByte>) return BoolByte{static_cast<std::uint8_t>(value != S{} ? 1 : 0)};
    else if constexpr (std::is_same_v<D, Half>) return float_to_half(static_cast<float>(value));
    else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) return float_to_integer<D>(value);
    else return static_cast<D>(value);
}

// ---- wrapping integer arithmetic -------------------------------------------------------------

/// The unsigned type integer arithmetic on T wraps in (at least `unsigned`, so that
/// promotion of narrow types cannot overflow a signed int).
template <class T>
using WrapType = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <class T, class Op>
[[nodiscard]] constexpr T wrapping(T a, T b, Op op) noexcept {
    if constexpr (std::is_integral_v<T>) {
        using U = WrapType<T>;
        return static_cast<T>(op(static_cast<U>(static_cast<std::make_unsigned_t<T>>(a)),
                                 static_cast<U>(static_cast<std::make_unsigned_t<T>>(b))));
    } else {
        return op(a, b);
    }
}

// ---- layout and iteration ------------------------------------------------------------------

/// Row-major element strides of `shape`.
[[nodiscard]] inline std::array<std::int64_t, Shape::max_rank> row_major_strides(const Shape& shape) noexcept {
    std::array<std::int64_t, Shape::max_rank> strides{};
    std::int64_t stride = 1;
    for (int d = shape.rank() - 1; d >= 0; --d) {
        strides[static_cast<std::size_t>(d)] = stride;
        stride *= shape[d];
    }
    return strides;
}

/// Walks the elements of a broadcast output in row-major order, tracking the element offset
/// of each of N inputs (numpy broadcasting: size-1 and missing leading dims repeat).
template <std::size_t N>
class BroadcastWalker {
public:
    BroadcastWalker(const Shape& output, const std::array<Shape, N>& inputs) : m_output(output) {
        for (std::size_t k = 0; k < N; ++k) {
            const auto strides = row_major_strides(inputs[k]);
            const int lead = output.rank() - inputs[k].rank();
            RLFLOW_ASSERT(lead >= 0);
            for (int d = 0; d < inputs[k].rank(); ++d)
                m_strides[k][static_cast<std::size_t>(d + lead)] = inputs[k][d] == 1 ? 0 : strides[static_cast<std::size_t>(d)];
        }
    }
    /// The input offsets of the current output element.
    [[nodiscard]] const std::array<std::int64_t, N>& offsets() const noexcept { return m_offsets; }
    /// Moves to the next output element.
    void next() noexcept {
        for (int d = m_output.rank() - 1; d >= 0; --d) {
            const auto du = static_cast<std::size_t>(d);
            for (std::size_t k = 0; k < N; ++k) m_offsets[k] += m_strides[k][du];
            if (++m_index[du] < m_output[d]) return;
            for (std::size_t k = 0; k < N; ++k) m_offsets[k] -= m_strides[k][du] * m_output[d];
            m_index[du] = 0;
        }
    }

private:
    Shape m_output;
    std::array<std::array<std::int64_t, Shape::max_rank>, N> m_strides{};
    std::array<std::int64_t, Shape::max_rank> m_index{};
    std::array<std::int64_t, N> m_offsets{};
};

/// For each level of a (row-major) output walk, the input element offset contributed by each
/// index along it. The output has the product of the level sizes as elements; an output
/// element's input offset is the sum of its indices' contributions.
using OffsetTable = std::vector<std::vector<std::int64_t>>;

/// Offsets `0, stride, 2*stride, ...` for an untouched dimension of size `size`.
[[nodiscard]] inline std::vector<std::int64_t> identity_offsets(std::int64_t size, std::int64_t stride) {
    std::vector<std::int64_t> offsets(static_cast<std::size_t>(size));
    for (std::int64_t i = 0; i < size; ++i) offsets[static_cast<std::size_t>(i)] = i * stride;
    return offsets;
}

inline void remap_level(std::span<const std::byte> input, std::size_t element_size, const OffsetTable& table,
                        std::size_t level, std::int64_t base, std::byte*& out) {
    if (level == table.size()) {
        std::memcpy(out, input.data() + static_cast<std::size_t>(base) * element_size, element_size);
        out += element_size;
        return;
    }
    for (const auto offset : table[level]) remap_level(input, element_size, table, level + 1, base + offset, out);
}

/// A tensor of shape `output` whose elements are copied from `input` per `table`.
[[nodiscard]] inline Tensor remap(const Tensor& input, const OffsetTable& table, const Shape& output) {
    const std::size_t element_size = dtype_size(input.dtype());
    std::vector<std::byte> bytes(static_cast<std::size_t>(output.numel()) * element_size);
    std::byte* out = bytes.data();
    if (!bytes.empty()) remap_level(input.raw(), element_size, table, 0, 0, out);
    RLFLOW_ASSERT(out == bytes.data() + bytes.size());
    return Tensor::from_raw(input.dtype(), output, bytes);
}

/// A copy of `input`'s data with another shape of the same element count.
[[nodiscard]] inline Tensor with_shape(const Tensor& input, const Shape& shape) {
    return Tensor::from_raw(input.dtype(), shape, input.raw());
}

}  // namespace rlflow::detail::typed
