#pragma once
/// \file
/// Private part of synth/exact.hpp: the exact kernel of every core op (on `Exact` values,
/// with an int64 fast path for Conv2D and MatMul), why an op or attribute has no exact
/// form, and the one table of both indexed by OpKind.

#include <rlflow/core/attributes.hpp>
#include <rlflow/core/op_traits.hpp>
#include <rlflow/core/shape.hpp>
#include <rlflow/synth/detail/exact_kernels.hpp>
#include <rlflow/synth/exact_value.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow::synth::detail {

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

/// Every axis of `x`, reduced ones (by the normalised "axes"; empty: all) set to 1: the
/// keepdims layout, the same as the output's either way.
[[nodiscard]] inline Shape kept_shape(const Attributes& attributes, const Shape& x) {
    const auto& axes = attributes.get_ints("axes");
    Shape kept;
    for (int i = 0; i < x.rank(); ++i) {
        const bool reduced = axes.empty() || std::any_of(axes.begin(), axes.end(), [&](std::int64_t axis) {
                                 return x.normalize_axis(axis) == i;
                             });
        kept.push_back(reduced ? 1 : x[i]);
    }
    return kept;
}

/// ReduceSum, and ReduceMean (`Mean`): the mean divides each sum by the number of elements
/// per output.
template <bool Mean>
void reduce_sum_kernel(const ExactArgs& args) {
    const ExactTensor& x = args.input(0);
    ExactTensor& y = args.output();
    const Shape kept = kept_shape(args.attributes, x.shape);
    reduce_groups(x.values.data(), x.shape, kept, y.values.data(), std::plus<>{});
    if (!Mean) return;
    const std::int64_t count = x.shape.numel() / std::max<std::int64_t>(kept.numel(), 1);
    for (Exact& v : y.values) v = v.divided_by(count);
}

/// ReduceMax: the float kernel's -infinity over an empty group has no exact form.
inline void reduce_max_kernel(const ExactArgs& args) {
    const ExactTensor& x = args.input(0);
    if (x.shape.numel() == 0 && !args.output().values.empty())
        throw exact_error("ReduceMax over no elements gives -infinity, which has no exact form");
    reduce_groups(x.values.data(), x.shape, kept_shape(args.attributes, x.shape), args.output().values.data(),
                  [](const Exact& acc, const Exact& v) { return v > acc ? v : acc; });
}

inline void slice_kernel(const ExactArgs& args) {
    strided_slice(args.input(0).values.data(), args.input(0).shape, args.output().values.data(), args.output().shape,
                  args.attributes);
}

inline void expand_kernel(const ExactArgs& args) {
    broadcast_copy(args.input(0).values.data(), args.input(0).shape, args.output().values.data(), args.output().shape);
}

/// Resize in nearest mode: each output element copies one input element.
inline void resize_kernel(const ExactArgs& args) {
    if (!resize_nearest(args.input(0).values.data(), args.input(0).shape, args.output().values.data(), args.output().shape,
                        args.attributes))
        throw exact_error("a Resize that blends neighbours weighs them in float; it has no exact form");
}

/// LeakyRelu: x where x >= 0, alpha * x below (alpha was checked representable).
inline void leaky_relu_kernel(const ExactArgs& args) {
    const Exact alpha = Exact::from_double(float_attribute(args.attributes, "alpha", 0.01));
    std::transform(args.input(0).values.begin(), args.input(0).values.end(), args.output().values.begin(),
                   [&](const Exact& v) { return v.is_negative() ? alpha * v : v; });
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

inline std::string leaky_relu_refusal(OpKind, const Attributes& attributes) {
    return float_refusal(attributes, "alpha", 0.01, false);
}

/// Linear Resize weighs neighbours with float32 weights computed from float coordinates;
/// nearest only copies.
inline std::string resize_refusal(OpKind, const Attributes& attributes) {
    const std::string mode = attributes.get_or<std::string>("mode", "nearest");
    return mode == "nearest" ? std::string{} : "Resize mode '" + mode + "' weighs neighbours in float (only 'nearest' is exact)";
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
    {OpKind::ReduceMean, reduce_sum_kernel<true>, always_exact},
    {OpKind::Enlarge, enlarge_kernel, always_exact},
    {OpKind::MergeGConv, merge_gconv_kernel, always_exact},
    {OpKind::HardSigmoid, refused_kernel, never_exact},
    {OpKind::HardSwish, refused_kernel, never_exact},
    {OpKind::LeakyRelu, leaky_relu_kernel, leaky_relu_refusal},
    {OpKind::Slice, slice_kernel, always_exact},
    {OpKind::ReduceSum, reduce_sum_kernel<false>, always_exact},
    {OpKind::ReduceMax, reduce_max_kernel, always_exact},
    {OpKind::Gelu, refused_kernel, never_exact},
    {OpKind::Resize, resize_kernel, resize_refusal},
    {OpKind::InstanceNormalization, refused_kernel, never_exact},
    {OpKind::ConvTranspose, refused_kernel, never_exact},
    {OpKind::Expand, expand_kernel, always_exact},
    {OpKind::Gather, refused_kernel, never_exact},
    {OpKind::Where, refused_kernel, never_exact},
    {OpKind::Equal, refused_kernel, never_exact},
    {OpKind::Less, refused_kernel, never_exact},
    {OpKind::Greater, refused_kernel, never_exact},
    {OpKind::Not, refused_kernel, never_exact},
    {OpKind::And, refused_kernel, never_exact},
    {OpKind::Or, refused_kernel, never_exact},
    {OpKind::Cast, refused_kernel, never_exact},
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

}  // namespace rlflow::synth::detail
