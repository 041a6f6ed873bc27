#pragma once
/// \file
/// Exact evaluation of small graphs, for the substitution generator.
///
/// The generator fingerprints a candidate graph by running it on random integer inputs.
/// With exact arithmetic two graphs computing the same function give identical outputs,
/// and two different functions (almost surely) do not, so fingerprints can be compared
/// for equality instead of within a float tolerance.
///
/// Values are rationals n / 210^e (`Exact`): integers stay integers under Add, Sub, Mul,
/// Conv2D and MatMul, and the only division the core ops need, an average over a window
/// or an axis, divides by a count; 210 = 2 * 3 * 5 * 7, so every count whose prime factors
/// are at most 7 divides exactly. `Exact::residue()` maps a value into the integers modulo
/// the prime 2^61 - 1, a ring homomorphism, so a fingerprint can be a few 64-bit words.
///
/// Every op follows the float reference executor (exec/executor.hpp) exactly; where that
/// executor's result has no exact form (a sigmoid, a max over padding only) an
/// `exact_error` says so instead.

#include <rlflow/core/error.hpp>
#include <rlflow/core/graph.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/core/tensor.hpp>
#include <rlflow/rewrite/detail/exact_kernels.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <compare>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace rlflow::rewrite {

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

namespace detail {

/// What an exact kernel sees: the node's (normalised) attributes, its inputs in slot
/// order, and its outputs, already shaped and zero-filled.
struct ExactArgs {
    const Attributes& attributes;
    std::span<const ExactTensor* const> inputs;
    std::span<ExactTensor> outputs;

    [[nodiscard]] const ExactTensor& input(std::size_t i) const noexcept { return *inputs[i]; }
    [[nodiscard]] ExactTensor& output(std::size_t i = 0) const noexcept { return outputs[i]; }
};

// ---- the int64 fast path of Conv2D and MatMul ------------------------------------------

// Each operand is brought to one denominator 210^e (its largest exponent), so its values
// become integer numerators; when those are small, the products and sums run in plain
// int64 and every output is normalised once, instead of checking each multiply-add.

/// Numerators of at most 2^31 in magnitude multiply to at most 2^62, so int64 sums of
/// many such products can be bounded before they are computed.
inline constexpr std::int64_t small_integer_limit = std::int64_t{1} << 31;

/// Buffers of the fast path, reused across calls on one thread (no per-call allocation).
struct IntegerScratch {
    std::array<std::vector<std::int64_t>, 3> operands;
    std::vector<std::int64_t> result;
};

[[nodiscard]] inline IntegerScratch& integer_scratch() {
    thread_local IntegerScratch scratch;
    return scratch;
}

/// The largest exponent among the values of `t` (0 when empty).
[[nodiscard]] inline std::int64_t largest_exponent(const ExactTensor& t) noexcept {
    std::int64_t largest = 0;
    for (const Exact& v : t.values) largest = std::max(largest, v.exponent());
    return largest;
}

/// Writes the values of `t` as numerators over 210^`exponent` (no smaller than any
/// value's own exponent) into `out` when all are at most small_integer_limit in
/// magnitude; returns the largest magnitude, or -1 when some numerator is larger.
[[nodiscard]] inline std::int64_t small_numerators(const ExactTensor& t, std::int64_t exponent,
                                                   std::vector<std::int64_t>& out) {
    out.resize(t.values.size());
    std::int64_t largest = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        Int128 n = t.values[i].numerator();
        const std::int64_t own = t.values[i].exponent();
        if (own > exponent || (own != exponent && !scale_by_base(n, exponent - own, n)) || n > small_integer_limit
            || n < -small_integer_limit)
            return -1;
        out[i] = static_cast<std::int64_t>(n);
        largest = std::max(largest, out[i] < 0 ? -out[i] : out[i]);
    }
    return largest;
}

/// Denominator exponents of a sum of products lhs * rhs plus an offset: the products,
/// and so the offset and the result, are over 210^(lhs + rhs).
struct CommonExponents {
    std::int64_t lhs = 0;
    std::int64_t rhs = 0;
    [[nodiscard]] std::int64_t product() const noexcept { return lhs + rhs; }
};

[[nodiscard]] inline CommonExponents common_exponents(const ExactTensor& lhs, const ExactTensor& rhs,
                                                      const ExactTensor* offset) noexcept {
    CommonExponents e{largest_exponent(lhs), largest_exponent(rhs)};
    if (offset != nullptr) e.lhs = std::max(e.lhs, largest_exponent(*offset) - e.rhs);
    return e;
}

/// Whether every partial sum of `terms` products of magnitudes at most `lhs` * `rhs`,
/// plus an offset of magnitude at most `offset`, fits in int64.
[[nodiscard]] inline bool sums_fit_int64(std::int64_t lhs, std::int64_t rhs, std::int64_t terms, std::int64_t offset) {
    Int128 bound = Int128{lhs} * rhs;
    return !__builtin_mul_overflow(bound, Int128{terms}, &bound)
           && bound <= Int128{std::numeric_limits<std::int64_t>::max()} - offset;
}

/// y = numerators / 210^exponent.
inline void store_numerators(std::span<const std::int64_t> numerators, std::int64_t exponent, ExactTensor& y) {
    for (std::size_t i = 0; i < numerators.size(); ++i)
        y.values[i] = exponent == 0 ? Exact::integer(numerators[i]) : Exact::from_parts(numerators[i], exponent);
}

/// Conv2D in int64 over common denominators when the numerators are small and no sum
/// can overflow; false (nothing written) otherwise.
[[nodiscard]] inline bool conv_on_integers(const ExactArgs& args, const ConvGeometry& g) {
    IntegerScratch& s = integer_scratch();
    const ExactTensor* bias = args.inputs.size() == 3 ? args.inputs[2] : nullptr;
    const CommonExponents e = common_exponents(args.input(0), args.input(1), bias);
    const std::int64_t x_max = small_numerators(args.input(0), e.lhs, s.operands[0]);
    const std::int64_t w_max = x_max < 0 ? -1 : small_numerators(args.input(1), e.rhs, s.operands[1]);
    const std::int64_t b_max = bias == nullptr || w_max < 0 ? 0 : small_numerators(*bias, e.product(), s.operands[2]);
    if (x_max < 0 || w_max < 0 || b_max < 0 || !sums_fit_int64(x_max, w_max, g.taps(), b_max)) return false;
    s.result.resize(args.output().values.size());
    conv2d(s.operands[0].data(), s.operands[1].data(), bias != nullptr ? s.operands[2].data() : nullptr,
           s.result.data(), g);
    store_numerators(s.result, e.product(), args.output());
    return true;
}

/// MatMul in int64 under the same conditions as conv_on_integers.
[[nodiscard]] inline bool matmul_on_integers(const ExactArgs& args, const MatMulGeometry& g) {
    IntegerScratch& s = integer_scratch();
    const CommonExponents e = common_exponents(args.input(0), args.input(1), nullptr);
    const std::int64_t a_max = small_numerators(args.input(0), e.lhs, s.operands[0]);
    const std::int64_t b_max = a_max < 0 ? -1 : small_numerators(args.input(1), e.rhs, s.operands[1]);
    if (a_max < 0 || b_max < 0 || !sums_fit_int64(a_max, b_max, g.k, 0)) return false;
    s.result.resize(args.output().values.size());
    batched_matmul(s.operands[0].data(), s.operands[1].data(), s.result.data(), g);
    store_numerators(s.result, e.product(), args.output());
    return true;
}

// ---- kernels -------------------------------------------------------------------------------

/// max(x, 0).
[[nodiscard]] inline Exact relu(const Exact& x) noexcept { return x.is_negative() ? Exact{} : x; }

/// Identity, Reshape and Flatten: the same values under the output's shape.
inline void copy_kernel(const ExactArgs& args) {
    std::copy(args.input(0).values.begin(), args.input(0).values.end(), args.output().values.begin());
}

inline void relu_kernel(const ExactArgs& args) {
    std::transform(args.input(0).values.begin(), args.input(0).values.end(), args.output().values.begin(), relu);
}

/// A numpy-broadcasting binary op.
template <class Combine>
void binary_kernel(const ExactArgs& args) {
    const ExactTensor& a = args.input(0);
    const ExactTensor& b = args.input(1);
    ExactTensor& y = args.output();
    broadcast_binary(a.values.data(), a.shape, b.values.data(), b.shape, y.values.data(), y.shape, Combine{});
}

/// A float attribute as the float kernel reads it: rounded to float.
[[nodiscard]] inline double float_attribute(const Attributes& attributes, std::string_view name, double fallback) {
    return static_cast<double>(static_cast<float>(attributes.get_float(name, fallback)));
}

/// Clip: an infinite bound clips nothing; finite bounds were checked representable.
inline void clip_kernel(const ExactArgs& args) {
    const double low = float_attribute(args.attributes, "min", -std::numeric_limits<double>::infinity());
    const double high = float_attribute(args.attributes, "max", std::numeric_limits<double>::infinity());
    const std::optional<Exact> lower = std::isinf(low) ? std::nullopt : Exact::try_from_double(low);
    const std::optional<Exact> upper = std::isinf(high) ? std::nullopt : Exact::try_from_double(high);
    std::transform(args.input(0).values.begin(), args.input(0).values.end(), args.output().values.begin(),
                   [&](Exact v) {  // max then min, as the float kernel
                       if (lower && v < *lower) v = *lower;
                       if (upper && v > *upper) v = *upper;
                       return v;
                   });
}

/// Conv2D with optional bias and fused Relu (other activations are refused up front).
inline void conv_kernel(const ExactArgs& args) {
    ExactTensor& y = args.output();
    const ConvGeometry g(args.attributes, args.input(0).shape, y.shape);
    if (!conv_on_integers(args, g)) {
        const Exact* bias = args.inputs.size() == 3 ? args.input(2).values.data() : nullptr;
        conv2d(args.input(0).values.data(), args.input(1).values.data(), bias, y.values.data(), g);
    }
    if (args.attributes.get_int("activation", 0) == static_cast<std::int64_t>(Activation::Relu))
        std::transform(y.values.begin(), y.values.end(), y.values.begin(), relu);
}

inline void matmul_kernel(const ExactArgs& args) {
    const MatMulGeometry g = matmul_geometry(args.input(0).shape, args.input(1).shape);
    if (matmul_on_integers(args, g)) return;
    batched_matmul(args.input(0).values.data(), args.input(1).values.data(), args.output().values.data(), g);
}

/// Gemm: Y = alpha * op(A) @ op(B) + beta * C, C broadcast to (M, N) and not read when
/// beta is 0 (alpha and beta were checked representable).
inline void gemm_kernel(const ExactArgs& args) {
    const ExactTensor& a = args.input(0);
    const ExactTensor& b = args.input(1);
    ExactTensor& y = args.output();
    const bool transpose_a = args.attributes.get_int("transA", 0) != 0;
    const bool transpose_b = args.attributes.get_int("transB", 0) != 0;
    const MatrixRef<Exact> lhs = transpose_a ? MatrixRef<Exact>{a.values.data(), 1, a.shape[1]}
                                             : MatrixRef<Exact>{a.values.data(), a.shape[1], 1};
    const MatrixRef<Exact> rhs = transpose_b ? MatrixRef<Exact>{b.values.data(), 1, b.shape[1]}
                                             : MatrixRef<Exact>{b.values.data(), b.shape[1], 1};
    const std::int64_t inner = transpose_a ? a.shape[0] : a.shape[1];
    matrix_product(lhs, rhs, y.values.data(), y.shape[0], inner, y.shape[1]);
    const Exact alpha = Exact::from_double(float_attribute(args.attributes, "alpha", 1.0));
    const Exact beta = Exact::from_double(float_attribute(args.attributes, "beta", 1.0));
    for (Exact& v : y.values) v = alpha * v;
    if (args.inputs.size() < 3 || beta.is_zero()) return;
    ExactTensor c = ExactTensor::zeros(y.shape);
    broadcast_copy(args.input(2).values.data(), args.input(2).shape, c.values.data(), y.shape);
    for (std::size_t i = 0; i < y.values.size(); ++i) y.values[i] = y.values[i] + beta * c.values[i];
}

/// MaxPool: padding never wins; a window over padding only has no exact result (the
/// float kernel gives lowest()).
inline void max_pool_kernel(const ExactArgs& args) {
    const ExactTensor& x = args.input(0);
    ExactTensor& y = args.output();
    pool_windows(
        x.values.data(), x.shape, y.values.data(), y.shape, args.attributes,
        [](const Exact& acc, const Exact& v) { return v > acc ? v : acc; },
        [](const WindowReduction<Exact>& window) {
            if (window.valid == 0)
                throw exact_error(
                    "a window covers only padding; the float result, the lowest float, has no exact form");
            return window.value;
        });
}

/// AveragePool: the sum of the input taps over their number, or with count_include_pad
/// over the taps inside the padded extent; 0 when that number is 0 (as exec/detail/pool.hpp).
inline void average_pool_kernel(const ExactArgs& args) {
    const ExactTensor& x = args.input(0);
    ExactTensor& y = args.output();
    const bool include_pad = args.attributes.get_int("count_include_pad", 0) != 0;
    pool_windows(x.values.data(), x.shape, y.values.data(), y.shape, args.attributes, std::plus<>{},
                 [include_pad](const WindowReduction<Exact>& window) {
                     const std::int64_t divisor = include_pad ? window.padded : window.valid;
                     return divisor > 0 ? window.value.divided_by(divisor) : Exact{};
                 });
}

/// GlobalAveragePool: the mean of every (n, c) plane.
inline void global_average_pool_kernel(const ExactArgs& args) {
    const ExactTensor& x = args.input(0);
    const std::int64_t plane = x.shape.product(2, x.shape.rank());
    Exact* y = args.output().values.data();
    for (std::int64_t p = 0; p < x.shape[0] * x.shape[1]; ++p) {
        Exact sum;
        for (std::int64_t i = 0; i < plane; ++i) sum = sum + x.values[static_cast<std::size_t>(p * plane + i)];
        y[p] = sum.divided_by(plane);
    }
}

/// ReduceMean: sums into the keepdims layout (the same as the output's either way), then
/// divides by the number of elements per output.
inline void reduce_mean_kernel(const ExactArgs& args) {
    const ExactTensor& x = args.input(0);
    ExactTensor& y = args.output();
    const auto& axes = args.attributes.get_ints("axes");
    Shape kept;
    for (int i = 0; i < x.shape.rank(); ++i) {
        const bool reduced = axes.empty() || std::any_of(axes.begin(), axes.end(), [&](std::int64_t axis) {
                                 return x.shape.normalize_axis(axis) == i;
                             });
        kept.push_back(reduced ? 1 : x.shape[i]);
    }
    reduce_sums(x.values.data(), x.shape, kept, y.values.data());
    const std::int64_t count = x.shape.numel() / std::max<std::int64_t>(kept.numel(), 1);
    for (Exact& v : y.values) v = v.divided_by(count);
}

inline void concat_kernel(const ExactArgs& args) {
    ExactTensor& y = args.output();
    const int axis = y.shape.normalize_axis(args.attributes.get_int("axis", 0));
    for_each_part_chunk(
        y.shape, axis, args.inputs.size(), [&](std::size_t p) { return args.input(p).shape[axis]; },
        [&](std::size_t p, std::int64_t whole_at, std::int64_t part_at, std::int64_t chunk) {
            std::copy_n(args.input(p).values.data() + part_at, chunk, y.values.data() + whole_at);
        });
}

inline void split_kernel(const ExactArgs& args) {
    const ExactTensor& x = args.input(0);
    const int axis = x.shape.normalize_axis(args.attributes.get_int("axis", 0));
    for_each_part_chunk(
        x.shape, axis, args.outputs.size(), [&](std::size_t p) { return args.output(p).shape[axis]; },
        [&](std::size_t p, std::int64_t whole_at, std::int64_t part_at, std::int64_t chunk) {
            std::copy_n(x.values.data() + whole_at, chunk, args.output(p).values.data() + part_at);
        });
}

inline void transpose_kernel(const ExactArgs& args) {
    const ExactTensor& x = args.input(0);
    ExactTensor& y = args.output();
    transpose(x.values.data(), x.shape, y.values.data(), y.shape, args.attributes.get_ints("perm"));
}

/// Pad in constant mode (other modes are refused up front); negative pads crop.
inline void pad_kernel(const ExactArgs& args) {
    const ExactTensor& x = args.input(0);
    ExactTensor& y = args.output();
    const Exact value = Exact::from_double(float_attribute(args.attributes, "value", 0.0));
    pad_constant(x.values.data(), x.shape, y.values.data(), y.shape, args.attributes.get_ints("pads"), value);
}

inline void enlarge_kernel(const ExactArgs& args) {
    enlarge(args.input(0).values.data(), args.input(0).shape, args.output().values.data(), args.output().shape);
}

inline void merge_gconv_kernel(const ExactArgs& args) {
    merge_gconv(args.input(0).values.data(), args.input(0).shape, args.output().values.data(), args.attributes);
}

/// The kernel of an op that refuse_inexact has already turned away.
inline void refused_kernel(const ExactArgs&) { throw exact_error("this op has no exact kernel"); }

// ---- which ops and attributes have an exact form --------------------------------------------

/// Why an op with these attributes has no exact form; empty when it has one.
using ExactRefusal = std::string (*)(OpKind, const Attributes&);

inline std::string always_exact(OpKind, const Attributes&) { return {}; }

inline std::string never_exact(OpKind op, const Attributes&) {
    return "op " + std::string(op_name(op)) + " has no exact form";
}

/// Why float attribute `name` (read as the float kernel reads it) has no exact form.
[[nodiscard]] inline std::string float_refusal(const Attributes& attributes, std::string_view name, double fallback,
                                               bool infinity_allowed) {
    const double value = float_attribute(attributes, name, fallback);
    if ((infinity_allowed && std::isinf(value)) || Exact::try_from_double(value)) return {};
    return "attribute " + std::string(name) + " = " + std::to_string(value) + " has no exact form";
}

inline std::string conv_refusal(OpKind, const Attributes& attributes) {
    const std::int64_t activation = attributes.get_int("activation", 0);
    if (activation == static_cast<std::int64_t>(Activation::None)
        || activation == static_cast<std::int64_t>(Activation::Relu))
        return {};
    const bool sigmoid = activation == static_cast<std::int64_t>(Activation::Sigmoid);
    return std::string("fused activation ") + (sigmoid ? "sigmoid" : "tanh") + " has no exact form";
}

inline std::string gemm_refusal(OpKind, const Attributes& attributes) {
    std::string reason = float_refusal(attributes, "alpha", 1.0, false);
    return reason.empty() ? float_refusal(attributes, "beta", 1.0, false) : reason;
}

inline std::string clip_refusal(OpKind, const Attributes& attributes) {
    std::string reason = float_refusal(attributes, "min", -std::numeric_limits<double>::infinity(), true);
    return reason.empty() ? float_refusal(attributes, "max", std::numeric_limits<double>::infinity(), true) : reason;
}

inline std::string pad_refusal(OpKind, const Attributes& attributes) {
    const std::string mode = attributes.get_or<std::string>("mode", "constant");
    if (mode != "constant") return "mode '" + mode + "' is not supported exactly (only 'constant')";
    return float_refusal(attributes, "value", 0.0, false);
}

/// One row of the exact kernel table.
struct ExactKernelEntry {
    OpKind kind;
    void (*run)(const ExactArgs&);
    ExactRefusal refusal;
};

// clang-format off
/// The one exact kernel table, indexed by OpKind like core's op table. Source rows are
/// never run: exact_run binds sources to their values.
inline constexpr std::array<ExactKernelEntry, op_kind_count> exact_kernel_table{{
    {OpKind::Input, refused_kernel, never_exact},
    {OpKind::Weight, refused_kernel, never_exact},
    {OpKind::Constant, refused_kernel, never_exact},
    {OpKind::Conv2D, conv_kernel, conv_refusal},
    {OpKind::MatMul, matmul_kernel, always_exact},
    {OpKind::Gemm, gemm_kernel, gemm_refusal},
    {OpKind::Add, binary_kernel<std::plus<>>, always_exact},
    {OpKind::Sub, binary_kernel<std::minus<>>, always_exact},
    {OpKind::Mul, binary_kernel<std::multiplies<>>, always_exact},
    {OpKind::Div, refused_kernel, never_exact},
    {OpKind::Pow, refused_kernel, never_exact},
    {OpKind::Relu, relu_kernel, always_exact},
    {OpKind::Sigmoid, refused_kernel, never_exact},
    {OpKind::Tanh, refused_kernel, never_exact},
    {OpKind::Erf, refused_kernel, never_exact},
    {OpKind::Sqrt, refused_kernel, never_exact},
    {OpKind::Identity, copy_kernel, always_exact},
    {OpKind::Clip, clip_kernel, clip_refusal},
    {OpKind::Softmax, refused_kernel, never_exact},
    {OpKind::MaxPool, max_pool_kernel, always_exact},
    {OpKind::AveragePool, average_pool_kernel, always_exact},
    {OpKind::GlobalAveragePool, global_average_pool_kernel, always_exact},
    {OpKind::BatchNormalization, refused_kernel, never_exact},
    {OpKind::LayerNormalization, refused_kernel, never_exact},
    {OpKind::Concat, concat_kernel, always_exact},
    {OpKind::Split, split_kernel, always_exact},
    {OpKind::Transpose, transpose_kernel, always_exact},
    {OpKind::Reshape, copy_kernel, always_exact},
    {OpKind::Flatten, copy_kernel, always_exact},
    {OpKind::Pad, pad_kernel, pad_refusal},
    {OpKind::ReduceMean, reduce_mean_kernel, always_exact},
    {OpKind::Enlarge, enlarge_kernel, always_exact},
    {OpKind::MergeGConv, merge_gconv_kernel, always_exact},
    {OpKind::Opaque, refused_kernel, never_exact},
}};
// clang-format on

constexpr bool exact_kernel_table_is_indexed_by_kind() {
    for (std::size_t i = 0; i < exact_kernel_table.size(); ++i)
        if (static_cast<std::size_t>(exact_kernel_table[i].kind) != i) return false;
    return true;
}
static_assert(exact_kernel_table_is_indexed_by_kind(), "exact_kernel_table rows must be in OpKind order");

[[nodiscard]] constexpr const ExactKernelEntry& exact_kernel(OpKind op) noexcept {
    return exact_kernel_table[static_cast<std::size_t>(op)];
}

// ---- running ops ---------------------------------------------------------------------------

/// Zero-filled outputs of the given types.
[[nodiscard]] inline std::vector<ExactTensor> allocate_outputs(std::span<const TensorType> types) {
    std::vector<ExactTensor> outputs;
    outputs.reserve(types.size());
    for (const TensorType& t : types) outputs.push_back(ExactTensor::zeros(t.shape));
    return outputs;
}

/// Runs the kernel of `op` unless every output is empty (kernels may then assume
/// non-empty windows and reductions). An exact_error from inside gets `describe()`, the
/// node or op, in front of its message.
template <class Describe>
void run_exact_kernel(OpKind op, const Attributes& attributes, std::span<const ExactTensor* const> inputs,
                      std::span<ExactTensor> outputs, const Describe& describe) {
    if (std::all_of(outputs.begin(), outputs.end(), [](const ExactTensor& t) { return t.values.empty(); })) return;
    try {
        exact_kernel(op).run(ExactArgs{attributes, inputs, outputs});
    } catch (const exact_error& e) {
        throw exact_error(describe() + ": " + e.reason());
    }
}

/// Checks what exact_op is given: the op's arity, tensors that fill their shapes, and
/// output types equal to what shape inference gives for these inputs.
inline void check_exact_operands(const OpTraits& traits, const Attributes& attributes,
                                 std::span<const ExactTensor* const> inputs, std::span<const TensorType> output_types) {
    const std::string_view where = traits.name;
    const auto count = static_cast<int>(inputs.size());
    RLFLOW_EXPECTS(count >= traits.min_inputs && (traits.max_inputs < 0 || count <= traits.max_inputs),
                   precondition_error,
                   "exact_op " + std::string(where) + ": takes " + std::to_string(traits.min_inputs) + ".."
                       + std::to_string(traits.max_inputs) + " inputs, got " + std::to_string(count));
    std::vector<TensorType> input_types;
    for (const ExactTensor* t : inputs) {
        RLFLOW_EXPECTS(t != nullptr && static_cast<std::int64_t>(t->values.size()) == t->shape.numel(),
                       precondition_error,
                       "exact_op " + std::string(where) + ": an input is null or does not fill its shape");
        input_types.push_back({DType::Float32, t->shape});
    }
    const std::vector<TensorType> inferred = traits.infer(OpContext{attributes, input_types, {}, where});
    bool same = inferred.size() == output_types.size();
    for (std::size_t i = 0; same && i < inferred.size(); ++i) same = inferred[i].shape == output_types[i].shape;
    RLFLOW_EXPECTS(same, shape_error,
                   "exact_op " + std::string(where) + ": output types differ from the inferred ones");
}

}  // namespace detail

/// Whether `op` with these (normalised) attributes has an exact kernel: false for opaque
/// and source ops, ops outside exact arithmetic (Sigmoid, Div, Softmax...) and attributes
/// without an exact form (a sigmoid-activated Conv2D, Pad in reflect mode). An op for
/// which this holds can still throw exact_error on particular shapes or values: an
/// overflow, an average over 11 elements, a MaxPool window over padding only.
[[nodiscard]] inline bool has_exact_form(OpKind op, const Attributes& attributes) {
    const OpTraits& traits = op_traits(op);
    if (traits.has(op_flag_opaque) || traits.has(op_flag_source)) return false;
    return detail::exact_kernel(op).refusal(op, attributes).empty();
}

/// Runs one core op exactly. `attributes` are normalised as on a Graph node (see
/// Graph::add_node); `output_types` are the node's inferred output types (their shapes
/// give the outputs'). Throws graph_error for an opaque op, precondition_error for a
/// source op or a wrong number of inputs, shape_error for output types that inference
/// does not give, exact_error (naming the op) for an op or value with no exact form.
[[nodiscard]] inline std::vector<ExactTensor> exact_op(OpKind op, const Attributes& attributes,
                                                       std::span<const ExactTensor* const> inputs,
                                                       std::span<const TensorType> output_types) {
    const OpTraits& traits = op_traits(op);
    RLFLOW_EXPECTS(!traits.has(op_flag_opaque), graph_error, "exact_op: an opaque op has no exact form");
    RLFLOW_EXPECTS(!traits.has(op_flag_source), precondition_error,
                   "exact_op: " + std::string(traits.name) + " is a source op; exact_run binds its value");
    const std::string reason = detail::exact_kernel(op).refusal(op, attributes);
    if (!reason.empty()) throw exact_error(std::string(traits.name) + ": " + reason);
    detail::check_exact_operands(traits, attributes, inputs, output_types);
    std::vector<ExactTensor> outputs = detail::allocate_outputs(output_types);
    detail::run_exact_kernel(op, attributes, inputs, outputs, [&] { return std::string(traits.name); });
    return outputs;
}

namespace detail {

/// The values of one exact run: source values are borrowed (from the caller's map) or
/// converted from node data; op outputs are owned.
class ExactRunState {
public:
    explicit ExactRunState(const Graph& graph) : m_owned(graph.id_bound()), m_borrowed(graph.id_bound(), nullptr) {}

    /// Binds a source node to values[name] if given, else to its data.
    void bind_source(const Node& n, const std::map<std::string, ExactTensor>& values) {
        const auto given = values.find(n.name);
        if (given != values.end()) {
            const Shape& declared = n.outputs[0].type.shape;
            RLFLOW_EXPECTS(given->second.shape == declared
                               && static_cast<std::int64_t>(given->second.values.size()) == declared.numel(),
                           shape_error,
                           "exact_run: the value for '" + n.name + "' is " + given->second.shape.to_string() + " with "
                               + std::to_string(given->second.values.size()) + " values; " + n.describe() + " declares "
                               + declared.to_string());
            m_borrowed[n.id.value] = &given->second;
            return;
        }
        RLFLOW_EXPECTS(n.op != OpKind::Input, precondition_error,
                       "exact_run: no value for graph input '" + n.name + "'");
        RLFLOW_EXPECTS(n.data != nullptr, precondition_error,
                       "exact_run: " + n.describe() + " has neither a value nor data");
        try {
            m_owned[n.id.value] = {exact_from_tensor(*n.data)};
        } catch (const exact_error& e) {
            throw exact_error(n.describe() + ": " + e.reason());
        }
    }

    /// Runs one op node on the values of its inputs.
    void execute(const Node& n) {
        m_inputs.clear();
        for (const TensorRef& in : n.inputs) m_inputs.push_back(&value(in));
        std::vector<ExactTensor>& outputs = m_owned[n.id.value];
        outputs.clear();
        for (const NodeOutput& out : n.outputs) outputs.push_back(ExactTensor::zeros(out.type.shape));
        run_exact_kernel(n.op, n.attributes, m_inputs, outputs, [&] { return n.describe(); });
    }

    [[nodiscard]] const ExactTensor& value(TensorRef ref) const {
        const ExactTensor* borrowed = m_borrowed[ref.node.value];
        return borrowed != nullptr ? *borrowed : m_owned[ref.node.value][ref.index];
    }

private:
    std::vector<std::vector<ExactTensor>> m_owned;
    std::vector<const ExactTensor*> m_borrowed;
    /// Scratch: the input pointers of the node being run.
    std::vector<const ExactTensor*> m_inputs;
};

/// Rejects, before anything runs, a node with no exact form.
inline void check_exact_node(const Node& n) {
    if (n.traits().has(op_flag_opaque))
        throw graph_error(n.describe() + ": opaque op '" + std::string(n.op_label()) + "' has no exact form");
    if (n.traits().has(op_flag_source)) return;
    const std::string reason = exact_kernel(n.op).refusal(n.op, n.attributes);
    if (!reason.empty()) throw exact_error(n.describe() + ": " + reason);
}

}  // namespace detail

/// Runs a whole graph exactly and returns its outputs in `g.outputs()` order. `values`
/// gives a tensor for every graph input, by node name; a Weight or Constant node takes
/// `values[name]` if present, else its float data (which must hold integers). Names that
/// match no source node are ignored, so one map can serve several graphs over the same
/// inputs. Throws graph_error for an opaque node, exact_error (naming the node) for an op
/// or value with no exact form, precondition_error for a missing input value or weight
/// data, shape_error for a value whose shape differs from the node's.
[[nodiscard]] inline std::vector<ExactTensor> exact_run(const Graph& g,
                                                        const std::map<std::string, ExactTensor>& values) {
    const std::vector<NodeId> order = g.topological_order();
    for (const NodeId id : order) detail::check_exact_node(g.node(id));
    detail::ExactRunState state(g);
    for (const NodeId id : order) {
        const Node& n = g.node(id);
        if (n.traits().has(op_flag_source))
            state.bind_source(n, values);
        else
            state.execute(n);
    }
    std::vector<ExactTensor> outputs;
    outputs.reserve(g.outputs().size());
    for (const GraphOutput& o : g.outputs()) outputs.push_back(state.value(o.value));
    return outputs;
}

}  // namespace rlflow::rewrite
