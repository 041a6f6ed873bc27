#pragma once
/// \file
/// The values of exact evaluation: `Exact`, a rational n / 210^e with a 128-bit n, and
/// `ExactTensor`, a dense tensor of them, with conversions from and to float tensors.
///
/// Values are rationals n / 210^e (`Exact`): integers stay integers under Add, Sub, Mul,
/// Conv2D and MatMul, and the only division the core ops need, an average over a window
/// or an axis, divides by a count; 210 = 2 * 3 * 5 * 7, so every count whose prime factors
/// are at most 7 divides exactly. `Exact::residue()` maps a value into the integers modulo
/// the prime 2^61 - 1, a ring homomorphism, so a fingerprint can be a few 64-bit words.

#include <rlflow/core/error.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/core/tensor.hpp>
#include <rlflow/synth/detail/exact_kernels.hpp>

#include <algorithm>
#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace rlflow::synth {

/// A value or op with no exact form: a 128-bit overflow, a division by a count with a
/// prime factor above 7, or an op or attribute outside exact arithmetic (Sigmoid, a
/// tanh-activated Conv2D, Gemm with alpha = 0.1).
class exact_error : public ::rlflow::error {
public:
    explicit exact_error(const std::string& message) : ::rlflow::error("exact_error", message), m_reason(message) {}
    /// The message without its "[rlflow.exact_error] " prefix (to add context to).
    [[nodiscard]] const std::string& reason() const noexcept { return m_reason; }

private:
    std::string m_reason;
};

/// The prime of the modular projection: 2^61 - 1.
inline constexpr std::uint64_t fingerprint_prime = (std::uint64_t{1} << 61) - 1;
static_assert(fingerprint_prime == detail::mersenne_61);

/// An exact rational number n / 210^e, n a signed 128-bit integer and e >= 0, always kept
/// with the smallest e (n is not a multiple of 210 when e > 0; zero has e = 0), so equal
/// values have equal representations. Arithmetic throws exact_error rather than round.
class Exact {
public:
    /// The numerator type, a signed 128-bit integer.
    using Numerator = detail::Int128;

    /// Zero.
    Exact() = default;
    [[nodiscard]] static Exact integer(std::int64_t value) noexcept { return {value, 0}; }
    /// numerator / 210^exponent, exponent >= 0, brought to the smallest exponent.
    [[nodiscard]] static Exact from_parts(Numerator numerator, std::int64_t exponent) {
        RLFLOW_EXPECTS(exponent >= 0, precondition_error,
                       "Exact::from_parts: exponent " + std::to_string(exponent) + " is negative");
        return normalized(numerator, exponent);
    }
    /// `value` exactly, if it is a finite n / 210^e with a 128-bit n: every integer-valued
    /// double below 2^127 in magnitude, and m / 2^k (m odd) when m * 105^k fits in 128
    /// bits (0.5, -1.25, 2^-18; not 0.1).
    [[nodiscard]] static std::optional<Exact> try_from_double(double value) noexcept;
    /// try_from_double, throwing exact_error when `value` has no exact form.
    [[nodiscard]] static Exact from_double(double value) {
        const std::optional<Exact> exact = try_from_double(value);
        if (!exact) throw exact_error("the double " + std::to_string(value) + " is not n / 210^e with a 128-bit n");
        return *exact;
    }

    friend Exact operator+(const Exact& a, const Exact& b) {
        if ((a.m_exponent | b.m_exponent) == 0) [[likely]] {
            Numerator n;
            if (__builtin_add_overflow(a.m_numerator, b.m_numerator, &n)) overflow(a, "+", b);
            return {n, 0};
        }
        return aligned_sum(a, b, false);
    }
    friend Exact operator-(const Exact& a, const Exact& b) {
        if ((a.m_exponent | b.m_exponent) == 0) [[likely]] {
            Numerator n;
            if (__builtin_sub_overflow(a.m_numerator, b.m_numerator, &n)) overflow(a, "-", b);
            return {n, 0};
        }
        return aligned_sum(a, b, true);
    }
    friend Exact operator*(const Exact& a, const Exact& b) {
        if ((a.m_exponent | b.m_exponent) == 0) [[likely]] {
            Numerator n;
            if (__builtin_mul_overflow(a.m_numerator, b.m_numerator, &n)) overflow(a, "*", b);
            return {n, 0};
        }
        return fractional_product(a, b);
    }
    Exact operator-() const {
        Numerator n;
        if (__builtin_sub_overflow(Numerator{0}, m_numerator, &n))
            throw exact_error("128-bit overflow negating " + to_string());
        return {n, m_exponent};
    }
    /// Exact equality: representations are unique.
    friend bool operator==(const Exact& a, const Exact& b) noexcept {
        return a.m_numerator == b.m_numerator && a.m_exponent == b.m_exponent;
    }
    /// Exact comparison (never throws: an alignment that would overflow decides the order).
    friend std::strong_ordering operator<=>(const Exact& a, const Exact& b) noexcept;

    /// This value divided by `count` > 0; exact_error if `count` has a prime factor above 7
    /// (whatever this value is, so that failures depend on shapes, not on data) or the
    /// result overflows.
    [[nodiscard]] Exact divided_by(std::int64_t count) const;
    /// The value modulo fingerprint_prime, n * (210^-1)^e mod p, in [0, p). A ring
    /// homomorphism: residue(a * b) = residue(a) * residue(b) mod p, and likewise for + and -.
    [[nodiscard]] std::uint64_t residue() const noexcept;
    /// The nearest double (exact for integers below 2^53).
    [[nodiscard]] double to_double() const noexcept;
    [[nodiscard]] bool is_negative() const noexcept { return m_numerator < 0; }
    [[nodiscard]] bool is_zero() const noexcept { return m_numerator == 0; }
    [[nodiscard]] bool is_integer() const noexcept { return m_exponent == 0; }
    /// n of n / 210^e.
    [[nodiscard]] Numerator numerator() const noexcept { return m_numerator; }
    /// e of n / 210^e, the smallest possible.
    [[nodiscard]] std::int64_t exponent() const noexcept { return m_exponent; }
    /// "-7" or "105/210^1".
    [[nodiscard]] std::string to_string() const {
        const std::string n = detail::int128_to_string(m_numerator);
        return m_exponent == 0 ? n : n + "/210^" + std::to_string(m_exponent);
    }

private:
    Exact(Numerator numerator, std::int64_t exponent) noexcept : m_numerator(numerator), m_exponent(exponent) {}

    /// n / 210^e with the smallest exponent. An odd n is never a multiple of 210, and a
    /// numerator that fits in 64 bits is divided in 64 bits: both skip the slow 128-bit
    /// division for most values.
    [[nodiscard]] static Exact normalized(Numerator n, std::int64_t e) noexcept {
        if (n == 0) return {};
        while (e > 0 && (n & 1) == 0) {
            const Numerator q = detail::quotient(n, detail::exact_base);
            if (q * detail::exact_base != n) break;
            n = q;
            --e;
        }
        return {n, e};
    }
    /// a + b or a - b over the larger exponent of the two (out of line, like fractional_product).
    [[nodiscard, gnu::noinline]] static Exact aligned_sum(const Exact& a, const Exact& b, bool subtract) {
        const std::int64_t e = std::max(a.m_exponent, b.m_exponent);
        Numerator x = a.m_numerator, y = b.m_numerator, n;
        const bool fits = (a.m_exponent == e || detail::scale_by_base(a.m_numerator, e - a.m_exponent, x))
                          && (b.m_exponent == e || detail::scale_by_base(b.m_numerator, e - b.m_exponent, y))
                          && !(subtract ? __builtin_sub_overflow(x, y, &n) : __builtin_add_overflow(x, y, &n));
        if (!fits) overflow(a, subtract ? "-" : "+", b);
        return normalized(n, e);
    }
    /// a * b when either is a fraction (kept out of line, off the integer fast path).
    [[nodiscard, gnu::noinline]] static Exact fractional_product(const Exact& a, const Exact& b) {
        Numerator n;
        std::int64_t e = 0;
        if (__builtin_mul_overflow(a.m_numerator, b.m_numerator, &n)
            || __builtin_add_overflow(a.m_exponent, b.m_exponent, &e))
            overflow(a, "*", b);
        return normalized(n, e);
    }
    [[noreturn, gnu::cold, gnu::noinline]] static void overflow(const Exact& a, const char* op, const Exact& b) {
        throw exact_error("128-bit overflow in " + a.to_string() + " " + op + " " + b.to_string());
    }

    Numerator m_numerator = 0;
    std::int64_t m_exponent = 0;
};

static_assert(std::is_trivially_copyable_v<Exact>, "Exact must stay a plain pair of integers");

inline std::optional<Exact> Exact::try_from_double(double value) noexcept {
    if (!std::isfinite(value)) return std::nullopt;
    if (value == 0) return Exact{};
    constexpr int mantissa_bits = std::numeric_limits<double>::digits;
    int binary_exponent = 0;
    const double fraction = std::frexp(value, &binary_exponent);
    // value = mantissa * 2^shift with an integer mantissa of at most 53 bits.
    auto mantissa = static_cast<std::int64_t>(std::ldexp(fraction, mantissa_bits));
    std::int64_t shift = binary_exponent - mantissa_bits;
    for (; shift < 0 && mantissa % 2 == 0; ++shift) mantissa /= 2;
    Numerator n = mantissa;
    if (shift >= 0) {
        constexpr std::int64_t widest_shift = 126;
        if (shift > widest_shift || __builtin_mul_overflow(n, Numerator{1} << shift, &n)) return std::nullopt;
        return Exact{n, 0};
    }
    // mantissa / 2^k = mantissa * 105^k / 210^k; the odd mantissa keeps it normalised.
    constexpr std::int64_t odd_part_of_base = detail::exact_base / 2;
    for (std::int64_t k = shift; k < 0; ++k)
        if (__builtin_mul_overflow(n, Numerator{odd_part_of_base}, &n)) return std::nullopt;
    return Exact{n, -shift};
}

inline std::strong_ordering operator<=>(const Exact& a, const Exact& b) noexcept {
    const auto compare = [](Exact::Numerator x, Exact::Numerator y) {
        return x < y ? std::strong_ordering::less : x > y ? std::strong_ordering::greater : std::strong_ordering::equal;
    };
    if (a.m_exponent == b.m_exponent) return compare(a.m_numerator, b.m_numerator);
    const bool a_is_finer = a.m_exponent > b.m_exponent;
    const Exact& coarse = a_is_finer ? b : a;
    const Exact& fine = a_is_finer ? a : b;
    Exact::Numerator scaled;
    std::strong_ordering coarse_vs_fine = std::strong_ordering::equal;
    if (detail::scale_by_base(coarse.m_numerator, fine.m_exponent - coarse.m_exponent, scaled))
        coarse_vs_fine = compare(scaled, fine.m_numerator);
    else  // |coarse numerator| * 210^d exceeds every 128-bit numerator, so its sign decides.
        coarse_vs_fine = coarse.m_numerator > 0 ? std::strong_ordering::greater : std::strong_ordering::less;
    return a_is_finer ? 0 <=> coarse_vs_fine : coarse_vs_fine;
}

inline Exact Exact::divided_by(std::int64_t count) const {
    if (count <= 0)
        throw exact_error("cannot divide " + to_string() + " by " + std::to_string(count) + ": counts are positive");
    const detail::CountFraction fraction = detail::count_fraction(count);
    if (!fraction.representable)
        throw exact_error("cannot divide by " + std::to_string(count) + " exactly: it has a prime factor above 7");
    if (m_numerator == 0 || count == 1) return *this;
    // A multiple of 210 divided by count would have been a multiple of 210 before.
    if (const Numerator q = detail::quotient(m_numerator, count); q * count == m_numerator) return {q, m_exponent};
    Numerator n;
    std::int64_t e = 0;
    if (!fraction.fits || __builtin_mul_overflow(m_numerator, fraction.cofactor, &n)
        || __builtin_add_overflow(m_exponent, fraction.power, &e))
        throw exact_error("128-bit overflow dividing " + to_string() + " by " + std::to_string(count));
    return normalized(n, e);
}

inline std::uint64_t Exact::residue() const noexcept {
    const detail::UInt128 magnitude = m_numerator < 0 ? detail::UInt128{0} - static_cast<detail::UInt128>(m_numerator)
                                                      : static_cast<detail::UInt128>(m_numerator);
    std::uint64_t r = detail::reduce_mod_mersenne(magnitude);
    if (m_numerator < 0 && r != 0) r = fingerprint_prime - r;
    if (m_exponent == 0) return r;
    return detail::mul_mod(r, detail::pow_mod(detail::inverse_base_mod, static_cast<std::uint64_t>(m_exponent)));
}

inline double Exact::to_double() const noexcept {
    if (m_exponent == 0) return static_cast<double>(m_numerator);
    const long double denominator =
        std::pow(static_cast<long double>(detail::exact_base), static_cast<long double>(m_exponent));
    return static_cast<double>(static_cast<long double>(m_numerator) / denominator);
}

/// A dense row-major tensor of exact values.
struct ExactTensor {
    Shape shape;
    std::vector<Exact> values;

    /// A zero-filled tensor of `shape`.
    [[nodiscard]] static ExactTensor zeros(const Shape& shape) {
        return {shape, std::vector<Exact>(static_cast<std::size_t>(shape.numel()))};
    }
    friend bool operator==(const ExactTensor&, const ExactTensor&) = default;
};

/// Uniform random integers in [-bound, bound] from `rng`, 0 <= bound <= 2^62.
[[nodiscard]] inline ExactTensor random_exact_tensor(const Shape& shape, Rng& rng, std::int64_t bound = 3) {
    constexpr std::int64_t largest_bound = std::int64_t{1} << 62;
    RLFLOW_EXPECTS(bound >= 0 && bound <= largest_bound, precondition_error,
                   "random_exact_tensor: bound " + std::to_string(bound) + " is outside [0, 2^62]");
    RLFLOW_EXPECTS(shape.is_static(), precondition_error,
                   "random_exact_tensor: shape " + shape.to_string() + " is not static");
    ExactTensor t = ExactTensor::zeros(shape);
    const auto choices = static_cast<std::uint64_t>(2 * bound + 1);
    for (Exact& v : t.values) v = Exact::integer(static_cast<std::int64_t>(rng.below(choices)) - bound);
    return t;
}

/// The exact values of float tensor `t`, all of which must be integers (exact_error
/// naming the first that is not).
[[nodiscard]] inline ExactTensor exact_from_tensor(const Tensor& t) {
    if (t.dtype() != DType::Float32)
        throw exact_error("a " + std::string(dtype_name(t.dtype())) + " tensor has no exact float values");
    ExactTensor exact = ExactTensor::zeros(t.shape());
    const std::span<const float> floats = t.floats();
    for (std::size_t i = 0; i < floats.size(); ++i) {
        const float f = floats[i];
        if (!std::isfinite(f) || std::trunc(f) != f)
            throw exact_error("element " + std::to_string(i) + " of a " + t.shape().to_string() + " tensor, "
                              + std::to_string(f) + ", is not an integer");
        exact.values[i] = Exact::from_double(f);
    }
    return exact;
}

/// A float tensor of the nearest floats to `t`'s values (for the float executor).
[[nodiscard]] inline Tensor to_float_tensor(const ExactTensor& t) {
    std::vector<float> floats(t.values.size());
    for (std::size_t i = 0; i < floats.size(); ++i) floats[i] = static_cast<float>(t.values[i].to_double());
    return Tensor::from_floats(t.shape, std::move(floats));
}

}  // namespace rlflow::synth
