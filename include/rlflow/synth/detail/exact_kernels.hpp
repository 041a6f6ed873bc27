#pragma once
/// \file
/// Private parts of synth/exact_value.hpp and detail/exact_op_table.hpp: the 128-bit and
/// modular arithmetic under `Exact`, and the data loops of the exact kernels.
///
/// The loops are templates over the element type, so one loop runs on `Exact` values and,
/// when every operand is a small integer, on plain int64 with no overflow checks (the
/// caller proves that none can happen). Windows, broadcasting and row walks use the float
/// executor's own index arithmetic (exec/detail/window.hpp and view.hpp), so both
/// evaluators read exactly the same input positions.

#include <rlflow/core/attributes.hpp>
#include <rlflow/core/op_traits.hpp>
#include <rlflow/core/shape.hpp>
#include <rlflow/exec/detail/gemm.hpp>
#include <rlflow/exec/detail/layout.hpp>
#include <rlflow/exec/detail/view.hpp>
#include <rlflow/exec/detail/window.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace rlflow::synth::detail {

// ---- 128-bit integers ------------------------------------------------------------------

// __extension__: GCC and Clang support __int128 in every mode; this keeps -Wpedantic quiet.
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

inline constexpr Int128 int128_max = static_cast<Int128>(~UInt128{0} >> 1);

/// Decimal digits of a 128-bit integer (std::to_string has no overload for it).
[[nodiscard]] inline std::string int128_to_string(Int128 value) {
    UInt128 magnitude = value < 0 ? UInt128{0} - static_cast<UInt128>(value) : static_cast<UInt128>(value);
    std::string digits;
    do {
        digits += static_cast<char>('0' + static_cast<int>(magnitude % 10));
        magnitude /= 10;
    } while (magnitude != 0);
    if (value < 0) digits += '-';
    std::reverse(digits.begin(), digits.end());
    return digits;
}

// ---- 210-adic numbers ------------------------------------------------------------------

/// The base of Exact's denominators: 2 * 3 * 5 * 7, so dividing by any count whose prime
/// factors are at most 7 stays exact.
inline constexpr std::int64_t exact_base = 210;
/// The largest k with 210^k < 2^127.
inline constexpr int max_base_power = 16;

[[nodiscard]] constexpr std::array<Int128, max_base_power + 1> make_base_powers() noexcept {
    std::array<Int128, max_base_power + 1> powers{};
    powers[0] = 1;
    for (std::size_t k = 1; k < powers.size(); ++k) powers[k] = powers[k - 1] * exact_base;
    return powers;
}
/// 210^k for k in [0, max_base_power].
inline constexpr std::array<Int128, max_base_power + 1> base_powers = make_base_powers();
static_assert(base_powers[max_base_power] > int128_max / exact_base, "210^17 must overflow 128 bits");

/// n * 210^k into `out`; false on overflow.
[[nodiscard]] inline bool scale_by_base(Int128 n, std::int64_t k, Int128& out) noexcept {
    if (n == 0) {
        out = 0;
        return true;
    }
    if (k > max_base_power) return false;
    return !__builtin_mul_overflow(n, base_powers[static_cast<std::size_t>(k)], &out);
}

/// A count 2^a 3^b 5^c 7^d as 1 / count = cofactor / 210^power, with power = max(a, b, c, d)
/// and cofactor = 2^(power-a) 3^(power-b) 5^(power-c) 7^(power-d).
struct CountFraction {
    /// False when the count has a prime factor above 7.
    bool representable = true;
    /// False when the cofactor overflows 128 bits.
    bool fits = true;
    std::int64_t power = 0;
    Int128 cofactor = 1;
};

/// Divides `prime` out of `count` as often as it goes; returns how often. `prime` is a
/// template argument so that the divisions compile to multiplications.
template <std::int64_t prime>
[[nodiscard]] constexpr std::int64_t strip_factor(std::int64_t& count) noexcept {
    std::int64_t multiplicity = 0;
    for (; count % prime == 0; count /= prime) ++multiplicity;
    return multiplicity;
}

/// The CountFraction of `count` > 0.
[[nodiscard]] constexpr CountFraction count_fraction(std::int64_t count) noexcept {
    constexpr std::array<std::int64_t, 4> primes{2, 3, 5, 7};
    const std::array<std::int64_t, 4> multiplicity{strip_factor<2>(count), strip_factor<3>(count),
                                                   strip_factor<5>(count), strip_factor<7>(count)};
    CountFraction fraction;
    if (count != 1) {
        fraction.representable = false;
        return fraction;
    }
    fraction.power = *std::max_element(multiplicity.begin(), multiplicity.end());
    for (std::size_t i = 0; i < primes.size(); ++i)
        for (std::int64_t j = multiplicity[i]; j < fraction.power && fraction.fits; ++j)
            fraction.fits = !__builtin_mul_overflow(fraction.cofactor, Int128{primes[i]}, &fraction.cofactor);
    return fraction;
}
static_assert(count_fraction(12).power == 2 && count_fraction(12).cofactor == 210 * 210 / 12);
static_assert(!count_fraction(22).representable);

/// Whether `n` fits in int64, where 64-bit division is much faster than 128-bit.
[[nodiscard]] constexpr bool fits_int64(Int128 n) noexcept {
    return n >= std::numeric_limits<std::int64_t>::min() && n <= std::numeric_limits<std::int64_t>::max();
}

/// n / divisor, rounded towards zero, in 64 bits when n fits.
[[nodiscard]] constexpr Int128 quotient(Int128 n, std::int64_t divisor) noexcept {
    return fits_int64(n) ? Int128{static_cast<std::int64_t>(n) / divisor} : n / divisor;
}

// ---- arithmetic modulo the Mersenne prime 2^61 - 1 ---------------------------------------

inline constexpr std::uint64_t mersenne_61 = (std::uint64_t{1} << 61) - 1;
inline constexpr int mersenne_bits = 61;

/// x mod (2^61 - 1): since 2^61 = 1 (mod p), folding the high bits onto the low ones keeps
/// the residue; each fold shrinks x until it is at most p.
[[nodiscard]] constexpr std::uint64_t reduce_mod_mersenne(UInt128 x) noexcept {
    while (x > mersenne_61) x = (x & mersenne_61) + (x >> mersenne_bits);
    return x == mersenne_61 ? 0 : static_cast<std::uint64_t>(x);
}

/// a * b mod p for a, b < p.
[[nodiscard]] constexpr std::uint64_t mul_mod(std::uint64_t a, std::uint64_t b) noexcept {
    return reduce_mod_mersenne(static_cast<UInt128>(a) * b);
}

/// base^exponent mod p.
[[nodiscard]] constexpr std::uint64_t pow_mod(std::uint64_t base, std::uint64_t exponent) noexcept {
    std::uint64_t result = 1;
    base = reduce_mod_mersenne(base);
    while (exponent != 0) {
        if ((exponent & 1) != 0) result = mul_mod(result, base);
        base = mul_mod(base, base);
        exponent >>= 1;
    }
    return result;
}

/// 210^-1 mod p, by Fermat's little theorem (p is prime): 210^(p-2).
inline constexpr std::uint64_t inverse_base_mod = pow_mod(exact_base, mersenne_61 - 2);
static_assert(mul_mod(exact_base, inverse_base_mod) == 1, "210 * 210^-1 must be 1 mod 2^61 - 1");

// ---- data loops --------------------------------------------------------------------------

using ::rlflow::detail::IndexRange;
using ::rlflow::detail::Strides;
using ::rlflow::detail::WindowAxis;

/// y = combine(a, b) elementwise under numpy broadcasting: the float BinaryOp's walk.
template <class T, class Combine>
void broadcast_binary(const T* a, const Shape& a_shape, const T* b, const Shape& b_shape, T* y, const Shape& y_shape,
                      Combine&& combine) {
    using namespace ::rlflow::detail;
    const std::array<Strides, 3> strides{contiguous_strides(y_shape), broadcast_strides(a_shape, y_shape),
                                         broadcast_strides(b_shape, y_shape)};
    const std::int64_t a_step = inner_stride(y_shape, strides[1]);
    const std::int64_t b_step = inner_stride(y_shape, strides[2]);
    for_each_row(y_shape, strides, [&](const std::array<std::int64_t, 3>& at, std::int64_t length) {
        for (std::int64_t i = 0; i < length; ++i) y[at[0] + i] = combine(a[at[1] + i * a_step], b[at[2] + i * b_step]);
    });
}

/// Walks `y` (of `y_shape`) in order, reading `x` through `source` strides (the input
/// stride of a step along each output axis): the one loop under broadcasting, transposes
/// and strided slices.
template <class T>
void strided_copy(const T* x, const Strides& source, T* y, const Shape& y_shape) {
    using namespace ::rlflow::detail;
    const std::array<Strides, 2> strides{contiguous_strides(y_shape), source};
    const std::int64_t step = inner_stride(y_shape, strides[1]);
    for_each_row(y_shape, strides, [&](const std::array<std::int64_t, 2>& at, std::int64_t length) {
        for (std::int64_t i = 0; i < length; ++i) y[at[0] + i] = x[at[1] + i * step];
    });
}

/// Copies `x` broadcast to `y_shape` into `y` (Expand, and Gemm's C).
template <class T>
void broadcast_copy(const T* x, const Shape& x_shape, T* y, const Shape& y_shape) {
    strided_copy(x, ::rlflow::detail::broadcast_strides(x_shape, y_shape), y, y_shape);
}

/// Transpose: walks y in order, reading x through permuted strides.
template <class T>
void transpose(const T* x, const Shape& x_shape, T* y, const Shape& y_shape, std::span<const std::int64_t> perm) {
    const Strides source = ::rlflow::detail::contiguous_strides(x_shape);
    Strides permuted{};
    for (std::size_t i = 0; i < perm.size(); ++i) permuted[i] = source[static_cast<std::size_t>(perm[i])];
    strided_copy(x, permuted, y, y_shape);
}

/// Slice with steps, read where the float executor reads (exec's slice_source).
template <class T>
void strided_slice(const T* x, const Shape& x_shape, T* y, const Shape& y_shape, const Attributes& attributes) {
    const ::rlflow::detail::SliceSource source = ::rlflow::detail::slice_source(attributes, x_shape);
    strided_copy(x + source.base, source.strides, y, y_shape);
}

/// Resize in nearest mode: every output element copies the one input element exec's
/// resize_plan gives it. False, writing nothing, on a plan that blends neighbours (linear
/// weights are floats).
template <class T>
[[nodiscard]] bool resize_nearest(const T* x, const Shape& x_shape, T* y, const Shape& y_shape, const Attributes& attributes) {
    const ::rlflow::detail::ResizePlan plan = ::rlflow::detail::resize_plan(attributes, x_shape, y_shape);
    if (plan.blended != 0) return false;
    std::array<std::int64_t, Shape::max_rank> at{};
    const auto rank = static_cast<std::size_t>(plan.rank);
    for (std::int64_t i = 0; i < y_shape.numel(); ++i) {
        std::int64_t offset = 0;
        for (std::size_t d = 0; d < rank; ++d) offset += plan.low[static_cast<std::size_t>(plan.first_tap[d] + at[d])];
        y[i] = x[offset];
        for (std::size_t d = rank; d-- > 0;) {  // the next output coordinate, row-major
            if (++at[d] < plan.out_dims[d]) break;
            at[d] = 0;
        }
    }
    return true;
}

/// The layout Concat and Split share (the executor's for_each_axis_chunk): along `axis`
/// of `whole`, part p, of extent `extent(p)` on that axis, fills a chunk of extent x inner
/// contiguous elements in each outer block. Calls copy(p, whole_offset, part_offset, chunk).
template <class Extent, class Copy>
void for_each_part_chunk(const Shape& whole, int axis, std::size_t parts, Extent&& extent, Copy&& copy) {
    const std::int64_t outer = whole.product(0, axis), inner = whole.product(axis + 1, whole.rank());
    const std::int64_t block = whole[axis] * inner;
    std::int64_t offset = 0;
    for (std::size_t p = 0; p < parts; ++p) {
        const std::int64_t chunk = extent(p) * inner;
        for (std::int64_t o = 0; o < outer; ++o) copy(p, o * block + offset, o * chunk, chunk);
        offset += chunk;
    }
}

/// The input offset of the start of output row `row` of a constant Pad (every dimension
/// but the last), or -1 when some outer index falls into the padding. Negative pads crop.
[[nodiscard]] inline std::int64_t constant_pad_row_source(std::int64_t row, const Shape& x_shape, const Shape& y_shape,
                                                          std::span<const std::int64_t> pads) {
    const Strides strides = ::rlflow::detail::contiguous_strides(x_shape);
    std::int64_t base = 0;
    for (int d = y_shape.rank() - 2; d >= 0; --d) {
        const std::int64_t source = row % y_shape[d] - pads[static_cast<std::size_t>(d)];
        row /= y_shape[d];
        if (source < 0 || source >= x_shape[d]) return -1;
        base += source * strides[static_cast<std::size_t>(d)];
    }
    return base;
}

/// Pad in constant mode: y[o] = x[o - pads_begin] inside x, `value` elsewhere.
template <class T>
void pad_constant(const T* x, const Shape& x_shape, T* y, const Shape& y_shape, std::span<const std::int64_t> pads,
                  const T& value) {
    const int rank = x_shape.rank();
    if (rank == 0) {
        y[0] = x[0];
        return;
    }
    const std::int64_t length = y_shape[rank - 1], lead = pads[static_cast<std::size_t>(rank - 1)];
    const std::int64_t rows = y_shape.product(0, rank - 1), width = x_shape[rank - 1];
    for (std::int64_t row = 0; row < rows; ++row, y += length) {
        const std::int64_t base = constant_pad_row_source(row, x_shape, y_shape, pads);
        for (std::int64_t i = 0; i < length; ++i) {
            const std::int64_t source = i - lead;
            y[i] = base >= 0 && source >= 0 && source < width ? x[base + source] : value;
        }
    }
}

/// Enlarge: the (M, C, kh, kw) kernel `w` centred in the zero-filled (M, C, KH, KW) `y`.
template <class T>
void enlarge(const T* w, const Shape& w_shape, T* y, const Shape& y_shape) {
    const std::int64_t kh = w_shape[2], kw = w_shape[3], big_h = y_shape[2], big_w = y_shape[3];
    const std::int64_t top = (big_h - kh) / 2, left = (big_w - kw) / 2;
    const std::int64_t planes = w_shape[0] * w_shape[1];
    for (std::int64_t p = 0; p < planes; ++p)
        for (std::int64_t i = 0; i < kh; ++i)
            std::copy_n(w + (p * kh + i) * kw, kw, y + (p * big_h + top + i) * big_w + left);
}

/// MergeGConv: row o of `w` goes to input-channel block layout.block(o) of the zero-filled
/// merged kernel `y` (see MergeGConvOp).
template <class T>
void merge_gconv(const T* w, const Shape& w_shape, T* y, const Attributes& attributes) {
    const std::int64_t filters = w_shape[0];
    const auto layout = ::rlflow::detail::MergeGConvOp::layout(attributes, filters);
    const std::int64_t filter_size = w_shape.product(1, w_shape.rank());
    for (std::int64_t o = 0; o < filters; ++o)
        std::copy_n(w + o * filter_size, filter_size, y + (o * layout.count + layout.block(o)) * filter_size);
}

// ---- windows ------------------------------------------------------------------------------

/// The taps of every output position along one window axis, computed once per op rather
/// than once per window.
struct WindowTaps {
    /// Taps inside the input.
    std::vector<IndexRange> valid;
    /// How many taps lie inside the padded extent (count_include_pad's divisor).
    std::vector<std::int64_t> padded;
};

[[nodiscard]] inline WindowTaps window_taps(const WindowAxis& axis) {
    WindowTaps taps;
    taps.valid.reserve(static_cast<std::size_t>(axis.output));
    taps.padded.reserve(static_cast<std::size_t>(axis.output));
    for (std::int64_t o = 0; o < axis.output; ++o) {
        taps.valid.push_back(axis.valid_taps(o));
        taps.padded.push_back(axis.padded_taps(o).size());
    }
    return taps;
}

/// The window of one 2-D window op: its axes (height, width) and their taps.
struct Window2D {
    std::array<WindowAxis, 2> axes;
    std::array<WindowTaps, 2> taps;

    Window2D(const Attributes& attributes, const Shape& x, const Shape& y)
        : axes(::rlflow::detail::window_axes(attributes, x, y)), taps{window_taps(axes[0]), window_taps(axes[1])} {}

    [[nodiscard]] IndexRange rows(std::int64_t oh) const noexcept {
        return taps[0].valid[static_cast<std::size_t>(oh)];
    }
    [[nodiscard]] IndexRange columns(std::int64_t ow) const noexcept {
        return taps[1].valid[static_cast<std::size_t>(ow)];
    }
    /// The input offset of tap (0, 0) of output (oh, ow) (possibly in the padding).
    [[nodiscard]] std::int64_t origin(std::int64_t oh, std::int64_t ow) const noexcept {
        return axes[0].start(oh) * axes[1].input + axes[1].start(ow);
    }
};

// ---- convolution -------------------------------------------------------------------------

/// The sizes of one Conv2D (NCHW input, (M, C/group, kh, kw) weight).
struct ConvGeometry {
    Window2D window;
    std::int64_t batch = 1;
    std::int64_t group = 1;
    /// Input channels per group.
    std::int64_t channels = 1;
    /// Output channels per group.
    std::int64_t filters = 1;
    std::int64_t input_pixels = 1;

    ConvGeometry(const Attributes& attributes, const Shape& x, const Shape& y)
        : window(attributes, x, y),
          batch(x[0]),
          group(attributes.get_int("group", 1)),
          channels(x[1] / group),
          filters(y[1] / group),
          input_pixels(x[2] * x[3]) {}

    /// Multiply-adds per output element: channels x kernel height x kernel width.
    [[nodiscard]] std::int64_t taps() const noexcept {
        return channels * window.axes[0].kernel * window.axes[1].kernel;
    }
};

/// acc + the sum over the taps of output (oh, ow) inside the input (padding reads 0, so it
/// adds nothing) of one filter over its group's `planes`.
template <class T>
T conv_window_sum(const T* planes, const T* filter, const ConvGeometry& g, std::int64_t oh, std::int64_t ow, T acc) {
    const WindowAxis& height = g.window.axes[0];
    const WindowAxis& width = g.window.axes[1];
    const IndexRange rows = g.window.rows(oh);
    const IndexRange cols = g.window.columns(ow);
    const std::int64_t kernel_pixels = height.kernel * width.kernel;
    const std::int64_t origin = g.window.origin(oh, ow);
    for (std::int64_t c = 0; c < g.channels; ++c) {
        const T* plane = planes + c * g.input_pixels;
        const T* taps = filter + c * kernel_pixels;
        for (std::int64_t kh = rows.begin; kh < rows.end; ++kh) {
            // Offsets, not pointers: the origin of a padded window lies before the plane.
            const std::int64_t line = origin + kh * height.dilation * width.input;
            const T* weights = taps + kh * width.kernel;
            for (std::int64_t kw = cols.begin; kw < cols.end; ++kw)
                acc = acc + plane[line + kw * width.dilation] * weights[kw];
        }
    }
    return acc;
}

/// Direct Conv2D: y[n, o] = bias[o] + sum over taps of x[n, group(o)] * w[o]. `bias` may
/// be null. The fused activation is the caller's.
template <class T>
void conv2d(const T* x, const T* w, const T* bias, T* y, const ConvGeometry& g) {
    const std::int64_t out_channels = g.filters * g.group;
    const std::int64_t filter_size = g.taps();
    for (std::int64_t n = 0; n < g.batch; ++n)
        for (std::int64_t o = 0; o < out_channels; ++o) {
            const T* planes = x + (n * g.group + o / g.filters) * g.channels * g.input_pixels;
            const T* filter = w + o * filter_size;
            const T start = bias != nullptr ? bias[o] : T{};
            for (std::int64_t oh = 0; oh < g.window.axes[0].output; ++oh)
                for (std::int64_t ow = 0; ow < g.window.axes[1].output; ++ow)
                    *y++ = conv_window_sum(planes, filter, g, oh, ow, start);
        }
}

// ---- matrix products ---------------------------------------------------------------------

/// A strided read-only matrix: element (i, j) at data[i * row_stride + j * column_stride].
template <class T>
struct MatrixRef {
    const T* data;
    std::int64_t row_stride;
    std::int64_t column_stride;
    [[nodiscard]] const T& operator()(std::int64_t i, std::int64_t j) const noexcept {
        return data[i * row_stride + j * column_stride];
    }
};

/// y = a @ b for an (m x k) @ (k x n) product into a contiguous (m x n) y.
template <class T>
void matrix_product(MatrixRef<T> a, MatrixRef<T> b, T* y, std::int64_t m, std::int64_t k, std::int64_t n) {
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            T acc{};
            for (std::int64_t p = 0; p < k; ++p) acc = acc + a(i, p) * b(p, j);
            y[i * n + j] = acc;
        }
}

// The same batch geometry as the float executor's MatMul (numpy's 1-D promotion,
// broadcast batch dimensions).
using ::rlflow::detail::MatMulGeometry;
using ::rlflow::detail::matmul_geometry;

/// MatMul: one product per output batch, operands located by broadcast strides.
template <class T>
void batched_matmul(const T* a, const T* b, T* y, const MatMulGeometry& g) {
    using namespace ::rlflow::detail;
    const std::int64_t a_size = g.m * g.k, b_size = g.k * g.n, y_size = g.m * g.n;
    const std::array<Strides, 3> strides{contiguous_strides(g.out_batch), broadcast_strides(g.a_batch, g.out_batch),
                                         broadcast_strides(g.b_batch, g.out_batch)};
    const std::int64_t a_step = inner_stride(g.out_batch, strides[1]);
    const std::int64_t b_step = inner_stride(g.out_batch, strides[2]);
    for_each_row(g.out_batch, strides, [&](const std::array<std::int64_t, 3>& at, std::int64_t length) {
        for (std::int64_t i = 0; i < length; ++i)
            matrix_product(MatrixRef<T>{a + (at[1] + i * a_step) * a_size, g.k, 1},
                           MatrixRef<T>{b + (at[2] + i * b_step) * b_size, g.n, 1}, y + (at[0] + i) * y_size, g.m, g.k,
                           g.n);
    });
}

// ---- reductions --------------------------------------------------------------------------

/// The result of reducing one pooling window.
template <class T>
struct WindowReduction {
    /// The reduction of the input taps (meaningless when `valid` is 0).
    T value{};
    /// Taps inside the input.
    std::int64_t valid = 0;
    /// Taps inside the padded extent (count_include_pad's divisor).
    std::int64_t padded = 0;
};

/// Reduces the input taps of output (oh, ow) of one plane with `combine`, starting from
/// the first tap: padding never takes part.
template <class T, class Combine>
WindowReduction<T> reduce_window(const T* plane, const Window2D& window, std::int64_t oh, std::int64_t ow,
                                 Combine& combine) {
    const WindowAxis& height = window.axes[0];
    const WindowAxis& width = window.axes[1];
    const IndexRange rows = window.rows(oh);
    const IndexRange cols = window.columns(ow);
    WindowReduction<T> result;
    result.valid = rows.size() * cols.size();
    result.padded =
        window.taps[0].padded[static_cast<std::size_t>(oh)] * window.taps[1].padded[static_cast<std::size_t>(ow)];
    bool first = true;
    for (std::int64_t kh = rows.begin; kh < rows.end; ++kh) {
        const std::int64_t line = window.origin(oh, ow) + kh * height.dilation * width.input;
        for (std::int64_t kw = cols.begin; kw < cols.end; ++kw) {
            const T& value = plane[line + kw * width.dilation];
            result.value = first ? value : combine(result.value, value);
            first = false;
        }
    }
    return result;
}

/// MaxPool or AveragePool over NCHW: y = finish(reduce_window(...)) for every window.
template <class T, class Combine, class Finish>
void pool_windows(const T* x, const Shape& x_shape, T* y, const Shape& y_shape, const Attributes& attributes,
                  Combine&& combine, Finish&& finish) {
    const Window2D window(attributes, x_shape, y_shape);
    const std::int64_t planes = x_shape[0] * x_shape[1];
    const std::int64_t plane_size = x_shape[2] * x_shape[3];
    for (std::int64_t p = 0; p < planes; ++p)
        for (std::int64_t oh = 0; oh < window.axes[0].output; ++oh)
            for (std::int64_t ow = 0; ow < window.axes[1].output; ++ow)
                *y++ = finish(reduce_window(x + p * plane_size, window, oh, ow, combine));
}

/// Combines every element of x into out[position with the reduced axes dropped]: `kept`
/// is x's shape with each reduced dimension set to 1, `out` (kept.numel() values) its
/// layout. The first element of a group is stored as it is, the rest combined into it
/// (`out` keeps its value where a group is empty).
template <class T, class Combine>
void reduce_groups(const T* x, const Shape& x_shape, const Shape& kept, T* out, Combine&& combine) {
    using namespace ::rlflow::detail;
    const std::array<Strides, 2> strides{contiguous_strides(x_shape), broadcast_strides(kept, x_shape)};
    const std::int64_t step = inner_stride(x_shape, strides[1]);
    std::vector<bool> seen(static_cast<std::size_t>(kept.numel()), false);
    for_each_row(x_shape, strides, [&](const std::array<std::int64_t, 2>& at, std::int64_t length) {
        for (std::int64_t i = 0; i < length; ++i) {
            const std::int64_t j = at[1] + i * step;
            out[j] = seen[static_cast<std::size_t>(j)] ? combine(out[j], x[at[0] + i]) : x[at[0] + i];
            seen[static_cast<std::size_t>(j)] = true;
        }
    });
}

}  // namespace rlflow::synth::detail
