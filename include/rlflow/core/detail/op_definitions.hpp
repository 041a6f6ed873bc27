#pragma once
/// \file
/// Attribute normalisation, shape inference and FLOP counts of every core op. Each op
/// is one small struct here; `op_traits.hpp` assembles them into the one op table.
///
/// Semantics follow ONNX (opset 13-17) except where an attribute replaces an ONNX input
/// that must be a compile-time constant (Reshape's shape, Split's sizes, Pad's pads, Clip's
/// bounds): the importer folds those inputs into attributes.

#include <rlflow/core/detail/op_common.hpp>
#include <rlflow/core/op_kind.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

namespace rlflow::detail {

using Infer = std::vector<TensorType>;

inline void no_normalize(Attributes&, std::span<const TensorType>, std::string_view) {}
inline double no_flops(const OpContext&) { return 0.0; }
/// One flop per output element.
inline double elementwise_flops(const OpContext& c) {
    double n = 0;
    for (const auto& o : c.outputs) n += static_cast<double>(o.shape.numel());
    return n;
}
/// Source and opaque nodes keep the types they were given.
inline Infer keep_outputs(const OpContext& c) { return {c.outputs.begin(), c.outputs.end()}; }

/// Defaults an axis attribute and rewrites it as a non-negative index into input 0
/// (`extra` = 1 allows axis == rank, as Flatten does), so equal ops compare equal.
inline void normalize_axis(Attributes& a, std::span<const TensorType> in, std::string_view where,
                           std::int64_t fallback, int extra = 0) {
    default_int(a, "axis", fallback);
    if (in.empty()) return;
    const int rank = in[0].shape.rank();
    std::int64_t axis = a.get_int("axis", fallback);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank + extra)
        throw shape_error(std::string(where) + ": axis " + std::to_string(a.get_int("axis", fallback))
                          + " out of range for " + in[0].shape.to_string());
    a.set("axis", axis);
}

struct UnaryOp {
    static Infer infer(const OpContext& c) { return detail::one(c.inputs[0].dtype, c.in(0)); }
};

struct BinaryOp {
    static Infer infer(const OpContext& c) {
        if (c.inputs[0].dtype != c.inputs[1].dtype)
            c.fail("operand types differ: " + c.inputs[0].to_string() + " vs " + c.inputs[1].to_string());
        auto out = broadcast_shapes(c.in(0), c.in(1));
        if (!out) c.fail("cannot broadcast " + c.in(0).to_string() + " with " + c.in(1).to_string());
        return detail::one(c.inputs[0].dtype, *out);
    }
};

struct ClipOp {
    static void normalize(Attributes& a, std::span<const TensorType>, std::string_view) {
        default_float(a, "min", -std::numeric_limits<double>::infinity());
        default_float(a, "max", std::numeric_limits<double>::infinity());
    }
};

/// The 2-D window attributes Conv and ConvTranspose share: kernel_shape (from the weight's
/// spatial dims when absent), strides, pads (begin h, begin w, end h, end w), dilations, group.
inline void normalize_window_2d(Attributes& a, std::span<const TensorType> in, std::string_view where) {
    if (in.size() >= 2 && in[1].shape.rank() == 4 && !a.has("kernel_shape"))
        a.set("kernel_shape", std::vector<std::int64_t>{in[1].shape[2], in[1].shape[3]});
    default_ints(a, "kernel_shape", {0, 0}, where);
    default_ints(a, "strides", {1, 1}, where);
    default_ints(a, "pads", {0, 0, 0, 0}, where);
    default_ints(a, "dilations", {1, 1}, where);
    default_int(a, "group", 1);
}

struct ConvOp {
    static void normalize(Attributes& a, std::span<const TensorType> in, std::string_view where) {
        normalize_window_2d(a, in, where);
        default_int(a, "activation", 0);
    }
    static Infer infer(const OpContext& c) {
        const Shape& x = c.in(0);
        const Shape& w = c.in(1);
        if (x.rank() != 4 || w.rank() != 4) c.fail("expects rank-4 input and weight, got " + x.to_string() + " and " + w.to_string());
        const auto& k = c.attributes.get_ints("kernel_shape");
        const auto& s = c.attributes.get_ints("strides");
        const auto& p = c.attributes.get_ints("pads");
        const auto& d = c.attributes.get_ints("dilations");
        const std::int64_t group = c.attributes.get_int("group", 1);
        const std::int64_t act = c.attributes.get_int("activation", 0);
        if (act < 0 || act > 3) c.fail("unknown fused activation " + std::to_string(act));
        if (k[0] != w[2] || k[1] != w[3])
            c.fail("kernel_shape " + ints_to_string(k) + " does not match weight " + w.to_string());
        if (group < 1 || x[1] != w[1] * group || w[0] % group != 0)
            c.fail("input " + x.to_string() + " and weight " + w.to_string() + " do not fit group "
                   + std::to_string(group));
        for (int i = 0; i < 2; ++i)
            if (s[static_cast<std::size_t>(i)] < 1 || d[static_cast<std::size_t>(i)] < 1) c.fail("strides and dilations must be >= 1");
        if (c.inputs.size() == 3 && !(c.in(2).rank() == 1 && c.in(2)[0] == w[0]))
            c.fail("bias " + c.in(2).to_string() + " does not match " + std::to_string(w[0]) + " output channels");
        Shape out{x[0], w[0], window_output(x[2], p[0], p[2], k[0], s[0], d[0], false),
                  window_output(x[3], p[1], p[3], k[1], s[1], d[1], false)};
        if (out[2] < 1 || out[3] < 1) c.fail("window larger than padded input " + x.to_string());
        return detail::one(c.inputs[0].dtype, out);
    }
    static double flops(const OpContext& c) {
        const Shape& w = c.in(1);
        const double outputs = static_cast<double>(c.outputs[0].shape.numel());
        const double extra = (c.inputs.size() == 3 ? 1.0 : 0.0) + (c.attributes.get_int("activation", 0) ? 1.0 : 0.0);
        return outputs * (2.0 * static_cast<double>(w.product(1, 4)) + extra);
    }
};

struct MatMulOp {
    static Infer infer(const OpContext& c) {
        Shape a = c.in(0), b = c.in(1);
        if (a.rank() < 1 || b.rank() < 1) c.fail("MatMul needs operands of rank >= 1");
        const bool a_vec = a.rank() == 1, b_vec = b.rank() == 1;
        if (a_vec) a = Shape{1, a[0]};
        if (b_vec) b = Shape{b[0], 1};
        if (a.dim(-1) != b.dim(-2)) c.fail("inner dimensions differ: " + c.in(0).to_string() + " x " + c.in(1).to_string());
        const auto batch = broadcast_shapes(Shape(a.dims().first(static_cast<std::size_t>(a.rank() - 2))),
                                            Shape(b.dims().first(static_cast<std::size_t>(b.rank() - 2))));
        if (!batch) c.fail("batch dimensions do not broadcast: " + c.in(0).to_string() + " x " + c.in(1).to_string());
        Shape out = *batch;
        if (!a_vec) out.push_back(a.dim(-2));
        if (!b_vec) out.push_back(b.dim(-1));
        return detail::one(c.inputs[0].dtype, out);
    }
    static double flops(const OpContext& c) {
        const Shape& a = c.in(0);
        return 2.0 * static_cast<double>(c.outputs[0].shape.numel()) * static_cast<double>(a.dim(-1));
    }
};

struct GemmOp {
    static void normalize(Attributes& a, std::span<const TensorType>, std::string_view) {
        default_float(a, "alpha", 1.0);
        default_float(a, "beta", 1.0);
        default_int(a, "transA", 0);
        default_int(a, "transB", 0);
    }
    static Infer infer(const OpContext& c) {
        const Shape& a = c.in(0);
        const Shape& b = c.in(1);
        if (a.rank() != 2 || b.rank() != 2) c.fail("Gemm needs rank-2 operands, got " + a.to_string() + " and " + b.to_string());
        const bool ta = c.attributes.get_int("transA", 0) != 0, tb = c.attributes.get_int("transB", 0) != 0;
        const std::int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
        const std::int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
        if (k != kb) c.fail("inner dimensions differ: " + a.to_string() + " x " + b.to_string());
        const Shape out{m, n};
        if (c.inputs.size() == 3) {
            const auto bc = broadcast_shapes(out, c.in(2));
            if (!bc || !(*bc == out)) c.fail("bias " + c.in(2).to_string() + " does not broadcast to " + out.to_string());
        }
        return detail::one(c.inputs[0].dtype, out);
    }
    static double flops(const OpContext& c) {
        const Shape& a = c.in(0);
        const double k = static_cast<double>(c.attributes.get_int("transA", 0) ? a[0] : a[1]);
        const double mn = static_cast<double>(c.outputs[0].shape.numel());
        return mn * (2.0 * k + (c.inputs.size() == 3 ? 1.0 : 0.0));
    }
};

struct SoftmaxOp {
    static void normalize(Attributes& a, std::span<const TensorType> in, std::string_view where) {
        normalize_axis(a, in, where, -1);
    }
    static Infer infer(const OpContext& c) {
        (void)c.in(0).normalize_axis(c.attributes.get_int("axis", -1));
        return detail::one(c.inputs[0].dtype, c.in(0));
    }
    static double flops(const OpContext& c) { return 3.0 * static_cast<double>(c.in(0).numel()); }
};

/// MaxPool and AveragePool over NCHW.
struct PoolOp {
    static void normalize(Attributes& a, std::span<const TensorType>, std::string_view where) {
        default_ints(a, "kernel_shape", {1, 1}, where);
        default_ints(a, "strides", {1, 1}, where);
        default_ints(a, "pads", {0, 0, 0, 0}, where);
        default_ints(a, "dilations", {1, 1}, where);
        default_int(a, "ceil_mode", 0);
    }
    static void normalize_average(Attributes& a, std::span<const TensorType> in, std::string_view where) {
        normalize(a, in, where);
        default_int(a, "count_include_pad", 0);
    }
    static Infer infer(const OpContext& c) {
        const Shape& x = c.in(0);
        if (x.rank() != 4) c.fail("expects an NCHW input, got " + x.to_string());
        const auto& k = c.attributes.get_ints("kernel_shape");
        const auto& s = c.attributes.get_ints("strides");
        const auto& p = c.attributes.get_ints("pads");
        const auto& d = c.attributes.get_ints("dilations");
        const bool ceil_mode = c.attributes.get_int("ceil_mode", 0) != 0;
        for (std::size_t i = 0; i < 2; ++i)
            if (k[i] < 1 || s[i] < 1 || d[i] < 1) c.fail("kernel, strides and dilations must be >= 1");
        Shape out{x[0], x[1], window_output(x[2], p[0], p[2], k[0], s[0], d[0], ceil_mode),
                  window_output(x[3], p[1], p[3], k[1], s[1], d[1], ceil_mode)};
        if (out[2] < 1 || out[3] < 1) c.fail("window larger than padded input " + x.to_string());
        return detail::one(c.inputs[0].dtype, out);
    }
    static double flops(const OpContext& c) {
        const auto& k = c.attributes.get_ints("kernel_shape");
        return static_cast<double>(c.outputs[0].shape.numel() * k[0] * k[1]);
    }
};

struct GlobalAveragePoolOp {
    static Infer infer(const OpContext& c) {
        const Shape& x = c.in(0);
        if (x.rank() < 3) c.fail("expects rank >= 3, got " + x.to_string());
        Shape out{x[0], x[1]};
        for (int i = 2; i < x.rank(); ++i) out.push_back(1);
        return detail::one(c.inputs[0].dtype, out);
    }
    static double flops(const OpContext& c) { return static_cast<double>(c.in(0).numel()); }
};

struct BatchNormOp {
    static void normalize(Attributes& a, std::span<const TensorType>, std::string_view) {
        default_float(a, "epsilon", 1e-5);
    }
    static Infer infer(const OpContext& c) {
        const Shape& x = c.in(0);
        if (x.rank() < 2) c.fail("expects rank >= 2, got " + x.to_string());
        for (std::size_t i = 1; i < 5; ++i)
            if (!(c.in(i).rank() == 1 && c.in(i)[0] == x[1]))
                c.fail("parameter " + std::to_string(i) + " " + c.in(i).to_string() + " does not match "
                       + std::to_string(x[1]) + " channels");
        return detail::one(c.inputs[0].dtype, x);
    }
    static double flops(const OpContext& c) { return 2.0 * static_cast<double>(c.in(0).numel()); }
};

struct LayerNormOp {
    static void normalize(Attributes& a, std::span<const TensorType> in, std::string_view where) {
        normalize_axis(a, in, where, -1);
        default_float(a, "epsilon", 1e-5);
    }
    static Infer infer(const OpContext& c) {
        const Shape& x = c.in(0);
        const int axis = x.normalize_axis(c.attributes.get_int("axis", -1));
        const Shape normalized(x.dims().subspan(static_cast<std::size_t>(axis)));
        for (std::size_t i = 1; i < c.inputs.size(); ++i) {
            const auto bc = broadcast_shapes(normalized, c.in(i));
            if (!bc || !(*bc == normalized))
                c.fail("parameter " + c.in(i).to_string() + " does not broadcast to " + normalized.to_string());
        }
        return detail::one(c.inputs[0].dtype, x);
    }
    static double flops(const OpContext& c) { return 8.0 * static_cast<double>(c.in(0).numel()); }
};

struct ConcatOp {
    static void normalize(Attributes& a, std::span<const TensorType> in, std::string_view where) {
        if (a.has("axis")) normalize_axis(a, in, where, 0);
    }
    static Infer infer(const OpContext& c) {
        const Shape& first = c.in(0);
        const int axis = first.normalize_axis(c.attributes.get<std::int64_t>("axis"));
        Shape out = first;
        out[axis] = 0;
        for (std::size_t i = 0; i < c.inputs.size(); ++i) {
            const Shape& s = c.in(i);
            bool fits = s.rank() == first.rank() && c.inputs[i].dtype == c.inputs[0].dtype;
            for (int d = 0; fits && d < s.rank(); ++d) fits = d == axis || s[d] == first[d];
            if (!fits) c.fail("input " + std::to_string(i) + " " + s.to_string() + " does not fit " + first.to_string()
                              + " on axis " + std::to_string(axis));
            out[axis] += s[axis];
        }
        return detail::one(c.inputs[0].dtype, out);
    }
};

struct SplitOp {
    static Infer infer(const OpContext& c) {
        const Shape& x = c.in(0);
        const int axis = x.normalize_axis(c.attributes.get_int("axis", 0));
        const auto& sizes = c.attributes.get_ints("split");
        if (sizes.empty()) c.fail("attribute 'split' is empty");
        std::int64_t total = 0;
        Infer out;
        for (const auto s : sizes) {
            if (s < 0) c.fail("negative split size");
            total += s;
            Shape part = x;
            part[axis] = s;
            out.push_back({c.inputs[0].dtype, part});
        }
        if (total != x[axis])
            c.fail("split sizes " + ints_to_string(sizes) + " do not sum to " + std::to_string(x[axis]));
        return out;
    }
    static void normalize(Attributes& a, std::span<const TensorType> in, std::string_view where) {
        normalize_axis(a, in, where, 0);
    }
};

struct TransposeOp {
    static void normalize(Attributes& a, std::span<const TensorType> in, std::string_view) {
        if (a.has("perm") || in.empty()) return;
        std::vector<std::int64_t> perm(static_cast<std::size_t>(in[0].shape.rank()));
        std::iota(perm.rbegin(), perm.rend(), 0);
        a.set("perm", perm);
    }
    static Infer infer(const OpContext& c) {
        const Shape& x = c.in(0);
        const auto& perm = c.attributes.get_ints("perm");
        if (static_cast<int>(perm.size()) != x.rank()) c.fail("perm " + ints_to_string(perm) + " does not fit " + x.to_string());
        std::vector<bool> seen(perm.size(), false);
        Shape out;
        for (const auto p : perm) {
            if (p < 0 || p >= x.rank() || seen[static_cast<std::size_t>(p)]) c.fail("perm " + ints_to_string(perm) + " is not a permutation");
            seen[static_cast<std::size_t>(p)] = true;
            out.push_back(x[static_cast<int>(p)]);
        }
        return detail::one(c.inputs[0].dtype, out);
    }
};

/// Reshape's "shape" is resolved at normalisation (0 copies a dim, -1 is inferred), so the
/// attribute always holds the exact output dims and equal reshapes compare equal.
struct ReshapeOp {
    static void normalize(Attributes& a, std::span<const TensorType> in, std::string_view where) {
        if (in.empty()) return;
        const Shape& x = in[0].shape;
        const bool allow_zero = a.get_int("allowzero", 0) != 0;
        std::vector<std::int64_t> dims = a.get_ints("shape");
        std::int64_t known = 1;
        int infer_at = -1;
        for (std::size_t i = 0; i < dims.size(); ++i) {
            if (dims[i] == 0 && !allow_zero) {
                if (static_cast<int>(i) >= x.rank()) throw shape_error(std::string(where) + ": shape copies a missing dim");
                dims[i] = x[static_cast<int>(i)];
            }
            if (dims[i] == -1) {
                if (infer_at >= 0) throw shape_error(std::string(where) + ": more than one -1 in shape");
                infer_at = static_cast<int>(i);
            } else {
                known *= dims[i];
            }
        }
        if (infer_at >= 0) {
            if (known == 0 || x.numel() % known != 0)
                throw shape_error(std::string(where) + ": cannot reshape " + x.to_string() + " to " + ints_to_string(a.get_ints("shape")));
            dims[static_cast<std::size_t>(infer_at)] = x.numel() / known;
        }
        a.set("shape", dims);
        a.erase("allowzero");
    }
    static Infer infer(const OpContext& c) {
        const Shape out(c.attributes.get_ints("shape"));
        if (out.numel() != c.in(0).numel() || !out.is_static())
            c.fail("cannot reshape " + c.in(0).to_string() + " to " + out.to_string());
        return detail::one(c.inputs[0].dtype, out);
    }
};

struct FlattenOp {
    static void normalize(Attributes& a, std::span<const TensorType> in, std::string_view where) {
        normalize_axis(a, in, where, 1, 1);
    }
    static Infer infer(const OpContext& c) {
        const Shape& x = c.in(0);
        std::int64_t axis = c.attributes.get_int("axis", 1);
        if (axis < 0) axis += x.rank();
        if (axis < 0 || axis > x.rank()) c.fail("axis " + std::to_string(axis) + " out of range for " + x.to_string());
        return detail::one(c.inputs[0].dtype, Shape{x.product(0, static_cast<int>(axis)), x.product(static_cast<int>(axis), x.rank())});
    }
};

struct PadOp {
    static void normalize(Attributes& a, std::span<const TensorType>, std::string_view) {
        if (!a.has("mode")) a.set("mode", std::string("constant"));
        default_float(a, "value", 0.0);
    }
    static Infer infer(const OpContext& c) {
        const Shape& x = c.in(0);
        const auto& pads = c.attributes.get_ints("pads");
        const auto& mode = c.attributes.get<std::string>("mode");
        if (mode != "constant" && mode != "reflect" && mode != "edge") c.fail("unknown pad mode '" + mode + "'");
        if (static_cast<int>(pads.size()) != 2 * x.rank()) c.fail("pads " + ints_to_string(pads) + " do not fit " + x.to_string());
        Shape out = x;
        for (int i = 0; i < x.rank(); ++i) {
            out[i] = x[i] + pads[static_cast<std::size_t>(i)] + pads[static_cast<std::size_t>(i + x.rank())];
            if (out[i] < 0) c.fail("pads " + ints_to_string(pads) + " crop more than " + x.to_string());
            // reflect and edge read from the axis after cropping, so it must not be empty.
            const std::int64_t cropped = x[i] + std::min<std::int64_t>(0, pads[static_cast<std::size_t>(i)])
                                         + std::min<std::int64_t>(0, pads[static_cast<std::size_t>(i + x.rank())]);
            const bool needs_source = mode != "constant" && out[i] > 0 && cropped <= 0;
            if (needs_source) c.fail("mode '" + mode + "' cannot pad an empty axis");
        }
        return detail::one(c.inputs[0].dtype, out);
    }
};

/// ReduceMean, ReduceSum and ReduceMax: one schema, one shape rule.
struct ReduceOp {
    static void normalize(Attributes& a, std::span<const TensorType> in, std::string_view where) {
        default_int(a, "keepdims", 1);
        if (!a.has("axes")) a.set("axes", std::vector<std::int64_t>{});
        if (in.empty()) return;
        // Normalised form: sorted, non-negative axes; empty means all.
        auto axes = a.get_ints("axes");
        for (auto& ax : axes) ax = in[0].shape.normalize_axis(ax);
        std::sort(axes.begin(), axes.end());
        if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
            throw shape_error(std::string(where) + ": axes " + ints_to_string(a.get_ints("axes")) + " repeat an axis");
        a.set("axes", axes);
    }
    static Infer infer(const OpContext& c) {
        const Shape& x = c.in(0);
        const auto& axes = c.attributes.get_ints("axes");
        const bool keep = c.attributes.get_int("keepdims", 1) != 0;
        Shape out;
        for (int i = 0; i < x.rank(); ++i) {
            const bool reduced = axes.empty() || std::find(axes.begin(), axes.end(), i) != axes.end();
            if (!reduced) out.push_back(x[i]);
            else if (keep) out.push_back(1);
        }
        return detail::one(c.inputs[0].dtype, out);
    }
    static double flops(const OpContext& c) { return static_cast<double>(c.in(0).numel()); }
};

/// HardSigmoid: max(0, min(1, alpha * x + beta)), ONNX's defaults alpha 0.2, beta 0.5.
struct HardSigmoidOp {
    static void normalize(Attributes& a, std::span<const TensorType>, std::string_view) {
        default_float(a, "alpha", 0.2);
        default_float(a, "beta", 0.5);
    }
};

/// LeakyRelu: x for x >= 0, alpha * x below (ONNX's default alpha 0.01).
struct LeakyReluOp {
    static void normalize(Attributes& a, std::span<const TensorType>, std::string_view) { default_float(a, "alpha", 0.01); }
};

/// One axis of a Slice: the first index read and how many are read, `step` apart.
struct SliceAxis {
    std::int64_t start;
    std::int64_t count;
    std::int64_t step;
};

/// Slice with steps (ONNX Slice-10 and later) on a static tensor. Canonical attributes,
/// one entry per axis of the input: "starts" and "ends" clamped as ONNX clamps them
/// (negative indices counted from the end; a positive step keeps both in [0, dim], a
/// negative one in [-1, dim - 1]; an end is one past the last index read, or one before
/// it stepping down, and INT64_MIN for "before index 0"), and "steps", clamped to
/// [-dim, dim] as ONNX Runtime does, 1 where an axis keeps at most one index (an axis that
/// keeps none is written 0, 0, 1). Equal slices thus have equal attributes. Unit-step
/// slices import as Split parts instead; this op is the rest.
struct SliceOp {
    /// The indices of one axis of length `dim` that [start, end) with `step` (not 0)
    /// reads, from ONNX's unclamped values. No arithmetic here overflows, whatever the
    /// values.
    [[nodiscard]] static SliceAxis axis(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step) noexcept {
        if (dim <= 0) return {0, 0, 1};
        step = std::clamp(step, -dim, dim);
        const auto resolve = [dim](std::int64_t v, std::int64_t low, std::int64_t high) {
            if (v < 0) v = v < -dim ? -dim - 1 : v + dim;  // no overflow for INT64_MIN
            return std::clamp(v, low, high);
        };
        if (step > 0) {
            const std::int64_t first = resolve(start, 0, dim), last = resolve(end, 0, dim);
            return {first, last > first ? (last - first - 1) / step + 1 : 0, step};
        }
        const std::int64_t first = resolve(start, 0, dim - 1), last = resolve(end, -1, dim - 1);
        return {first, first > last ? (first - last - 1) / -step + 1 : 0, step};
    }
    /// Every axis of a canonical Slice of `x`.
    [[nodiscard]] static std::vector<SliceAxis> axes(const Attributes& a, const Shape& x) {
        const auto& starts = a.get_ints("starts");
        const auto& ends = a.get_ints("ends");
        const auto& steps = a.get_ints("steps");
        std::vector<SliceAxis> out;
        for (int d = 0; d < x.rank(); ++d) {
            const auto i = static_cast<std::size_t>(d);
            out.push_back(axis(x[d], starts[i], ends[i], steps[i]));
        }
        return out;
    }
    static void normalize(Attributes& a, std::span<const TensorType> in, std::string_view where) {
        if (in.empty()) return;
        const Shape& x = in[0].shape;
        const auto rank = static_cast<std::size_t>(x.rank());
        default_ints(a, "steps", std::vector<std::int64_t>(rank, 1), where);
        const auto& starts = a.get_ints("starts");
        const auto& ends = a.get_ints("ends");
        const auto& steps = a.get_ints("steps");
        if (starts.size() != rank || ends.size() != rank || steps.size() != rank)
            throw shape_error(std::string(where) + ": Slice needs one start, end and step per axis of " + x.to_string());
        if (std::find(steps.begin(), steps.end(), 0) != steps.end())
            throw shape_error(std::string(where) + ": Slice step 0 in " + ints_to_string(steps));
        std::vector<std::int64_t> first, last, stride;
        for (int d = 0; d < x.rank(); ++d) {
            const auto i = static_cast<std::size_t>(d);
            SliceAxis s = axis(x[d], starts[i], ends[i], steps[i]);
            if (s.count == 0) s = {0, 0, 1};
            if (s.count == 1) s.step = 1;
            // Ends become one past (before, stepping down) the last index read; before
            // index 0 is written as INT64_MIN, since -1 would count from the end.
            first.push_back(s.start);
            const std::int64_t past = s.count == 0 ? s.start : s.start + (s.count - 1) * s.step + (s.step > 0 ? 1 : -1);
            last.push_back(past < 0 ? std::numeric_limits<std::int64_t>::min() : past);
            stride.push_back(s.step);
        }
        a.set("starts", first);
        a.set("ends", last);
        a.set("steps", stride);
    }
    static Infer infer(const OpContext& c) {
        const Shape& x = c.in(0);
        const auto rank = static_cast<std::size_t>(x.rank());
        if (c.attributes.get_ints("starts").size() != rank || c.attributes.get_ints("ends").size() != rank
            || c.attributes.get_ints("steps").size() != rank)
            c.fail("Slice attributes do not match rank of " + x.to_string());
        Shape out;
        for (const SliceAxis& s : axes(c.attributes, x)) out.push_back(s.count);
        return detail::one(c.inputs[0].dtype, out);
    }
};

/// Gelu (ONNX Gelu-20): x * Phi(x) with the exact normal CDF (approximate "none", the form
/// x * (erf(x / sqrt 2) + 1) * 0.5 that PyTorch exports) or its tanh approximation.
struct GeluOp {
    static void normalize(Attributes& a, std::span<const TensorType>, std::string_view where) {
        if (!a.has("approximate")) a.set("approximate", std::string("none"));
        const auto& mode = a.get<std::string>("approximate");
        if (mode != "none" && mode != "tanh") throw shape_error(std::string(where) + ": unknown Gelu approximate '" + mode + "'");
    }
    /// The five operations of its Erf form (Div, Erf, Add, Mul, Mul) per element, so that
    /// fusing the pattern leaves a model's FLOPs as they were.
    static double flops(const OpContext& c) { return 5.0 * elementwise_flops(c); }
};

/// InstanceNormalization: each (n, c) plane of an (N, C, D1, ...) input normalised to zero
/// mean and unit (biased) variance, then scaled and shifted by the channel's scale and B.
struct InstanceNormOp {
    static void normalize(Attributes& a, std::span<const TensorType>, std::string_view) { default_float(a, "epsilon", 1e-5); }
    static Infer infer(const OpContext& c) {
        const Shape& x = c.in(0);
        if (x.rank() < 3) c.fail("expects (N, C, D1, ...) input, got " + x.to_string());
        for (std::size_t i = 1; i < 3; ++i)
            if (!(c.in(i).rank() == 1 && c.in(i)[0] == x[1]))
                c.fail("parameter " + c.in(i).to_string() + " does not match " + std::to_string(x[1]) + " channels");
        return detail::one(c.inputs[0].dtype, x);
    }
    static double flops(const OpContext& c) { return 8.0 * static_cast<double>(c.in(0).numel()); }
};

/// ConvTranspose (NCHW): the adjoint of the Conv2D with the same weight, strides, pads,
/// dilations and groups. Input (N, C, H, W), weight (C, M / group, kh, kw), optional bias
/// (M); output side s (H - 1) + output_padding + (kh - 1) d + 1 - pads at both ends.
struct ConvTransposeOp {
    static void normalize(Attributes& a, std::span<const TensorType> in, std::string_view where) {
        normalize_window_2d(a, in, where);
        default_ints(a, "output_padding", {0, 0}, where);
    }
    static Infer infer(const OpContext& c) {
        const Shape& x = c.in(0);
        const Shape& w = c.in(1);
        if (x.rank() != 4 || w.rank() != 4) c.fail("expects rank-4 input and weight, got " + x.to_string() + " and " + w.to_string());
        const auto& k = c.attributes.get_ints("kernel_shape");
        const auto& s = c.attributes.get_ints("strides");
        const auto& p = c.attributes.get_ints("pads");
        const auto& d = c.attributes.get_ints("dilations");
        const auto& extra = c.attributes.get_ints("output_padding");
        const std::int64_t group = c.attributes.get_int("group", 1);
        if (k[0] != w[2] || k[1] != w[3]) c.fail("kernel_shape " + ints_to_string(k) + " does not match weight " + w.to_string());
        if (group < 1 || x[1] != w[0] || x[1] % group != 0)
            c.fail("input " + x.to_string() + " and weight " + w.to_string() + " do not fit group " + std::to_string(group));
        Shape out{x[0], w[1] * group};
        for (std::size_t i = 0; i < 2; ++i) {
            // Output padding past the stride would add outputs no input reaches (ONNX
            // Runtime refuses it too).
            if (s[i] < 1 || d[i] < 1 || extra[i] < 0 || extra[i] >= std::max(s[i], d[i]))
                c.fail("strides and dilations must be >= 1, output_padding in [0, max(stride, dilation))");
            const std::int64_t side = s[i] * (x[static_cast<int>(i) + 2] - 1) + extra[i] + (k[i] - 1) * d[i] + 1 - p[i] - p[i + 2];
            if (side < 1) c.fail("pads " + ints_to_string(p) + " leave no output of input " + x.to_string());
            out.push_back(side);
        }
        if (c.inputs.size() == 3 && !(c.in(2).rank() == 1 && c.in(2)[0] == out[1]))
            c.fail("bias " + c.in(2).to_string() + " does not match " + std::to_string(out[1]) + " output channels");
        return detail::one(c.inputs[0].dtype, out);
    }
    /// Each input element times its (M / group) kh kw taps, plus the bias.
    static double flops(const OpContext& c) {
        const Shape& w = c.in(1);
        const double bias = c.inputs.size() == 3 ? static_cast<double>(c.outputs[0].shape.numel()) : 0.0;
        return 2.0 * static_cast<double>(c.in(0).numel()) * static_cast<double>(w.product(1, 4)) + bias;
    }
};

/// One output index of one Resize axis: it reads input indices `low` and `high`, weighted
/// `low_weight` and `high_weight` (nearest: one index, weights 1 and 0).
struct ResizeTap {
    std::int64_t low;
    std::int64_t high;
    float low_weight;
    float high_weight;
};

/// Resize (ONNX Resize-11 to 18) in modes nearest and linear, on a static tensor.
/// Canonical attributes: "mode", "coordinate_transformation_mode" (half_pixel,
/// pytorch_half_pixel, align_corners, asymmetric), "nearest_mode", "scales" (one per axis,
/// float32 values, what maps output to input coordinates) and "sizes" (the output shape).
/// A model that gives scales has sizes floor(scale * dim); one that gives sizes has scales
/// size / dim, as ONNX Runtime computes them. Coordinates are computed in float32 as ONNX
/// Runtime computes them (onnxruntime/core/providers/cpu/tensor/upsamplebase.h).
struct ResizeOp {
    static constexpr std::string_view modes[] = {"nearest", "linear"};
    static constexpr std::string_view coordinate_modes[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                                            "asymmetric"};
    static constexpr std::string_view nearest_modes[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

    template <std::size_t N>
    static void default_choice(Attributes& a, std::string_view name, const std::string_view (&choices)[N],
                               std::string_view where) {
        if (!a.has(name)) a.set(name, std::string(choices[0]));
        const auto& value = a.get<std::string>(name);
        if (std::find(std::begin(choices), std::end(choices), value) == std::end(choices))
            throw shape_error(std::string(where) + ": Resize " + std::string(name) + " '" + value + "' is not supported");
    }
    /// The output length of an axis of length `dim` scaled by `scale` (float32, truncated);
    /// nullopt when it is no length at all (a scale past float32, or a product past int64).
    [[nodiscard]] static std::optional<std::int64_t> scaled_length(std::int64_t dim, double scale) noexcept {
        if (!(scale <= std::numeric_limits<float>::max())) return std::nullopt;
        const float length = static_cast<float>(scale) * static_cast<float>(dim);
        constexpr float int64_limit = 9.2e18f;  // below 2^63
        if (!(length < int64_limit)) return std::nullopt;
        return static_cast<std::int64_t>(length);
    }
    static void normalize(Attributes& a, std::span<const TensorType> in, std::string_view where) {
        default_choice(a, "mode", modes, where);
        default_choice(a, "coordinate_transformation_mode", coordinate_modes, where);
        default_choice(a, "nearest_mode", nearest_modes, where);
        if (a.get<std::string>("mode") == "linear") a.set("nearest_mode", std::string(nearest_modes[0]));  // unused
        if (in.empty()) return;
        const Shape& x = in[0].shape;
        const auto rank = static_cast<std::size_t>(x.rank());
        if (!a.has("scales") && !a.has("sizes")) throw shape_error(std::string(where) + ": Resize needs scales or sizes");
        if (a.has("scales")) {
            const auto& scales = a.get<std::vector<double>>("scales");
            // Scales are float32 in ONNX: one past its range came from a damaged file.
            if (scales.size() != rank || std::any_of(scales.begin(), scales.end(), [](double s) {
                    return !(s > 0.0 && s <= std::numeric_limits<float>::max());
                }))
                throw shape_error(std::string(where) + ": Resize needs one positive float32 scale per axis of " + x.to_string());
            if (!a.has("sizes")) {
                std::vector<std::int64_t> sizes;
                for (std::size_t d = 0; d < rank; ++d) {
                    const auto length = scaled_length(x[static_cast<int>(d)], scales[d]);
                    if (!length)
                        throw shape_error(std::string(where) + ": Resize scale " + std::to_string(scales[d]) + " of axis "
                                          + std::to_string(d) + " of " + x.to_string() + " gives no representable length");
                    sizes.push_back(*length);
                }
                a.set("sizes", sizes);
            }
        }
        const auto& sizes = a.get_ints("sizes");
        if (sizes.size() != rank || std::any_of(sizes.begin(), sizes.end(), [](std::int64_t s) { return s < 0; }))
            throw shape_error(std::string(where) + ": Resize needs one size per axis of " + x.to_string());
        if (!a.has("scales")) {
            std::vector<double> scales;
            for (std::size_t d = 0; d < rank; ++d) {
                const std::int64_t dim = x[static_cast<int>(d)];
                scales.push_back(dim == 0 ? 1.0 : static_cast<double>(static_cast<float>(sizes[d]) / static_cast<float>(dim)));
            }
            a.set("scales", scales);
        }
    }
    static Infer infer(const OpContext& c) {
        const Shape& x = c.in(0);
        const auto& sizes = c.attributes.get_ints("sizes");
        if (sizes.size() != static_cast<std::size_t>(x.rank()) || c.attributes.get<std::vector<double>>("scales").size() != sizes.size())
            c.fail("Resize attributes do not match rank of " + x.to_string());
        Shape out;
        for (std::size_t d = 0; d < sizes.size(); ++d) {
            if (sizes[d] > 0 && x[static_cast<int>(d)] == 0) c.fail("cannot resize an empty axis of " + x.to_string());
            out.push_back(sizes[d]);
        }
        return detail::one(c.inputs[0].dtype, out);
    }
    /// Linear: a multiply-add per tap of every interpolated axis; nearest gathers.
    static double flops(const OpContext& c) {
        if (c.attributes.get<std::string>("mode") != "linear") return 0.0;
        const Shape& x = c.in(0);
        const auto& sizes = c.attributes.get_ints("sizes");
        double taps = 1.0;
        for (std::size_t d = 0; d < sizes.size(); ++d)
            if (sizes[d] != x[static_cast<int>(d)]) taps *= 2.0;
        return 2.0 * taps * static_cast<double>(c.outputs[0].shape.numel());
    }
    /// Where output index `o` of an axis lies in input coordinates.
    [[nodiscard]] static float source_coordinate(std::string_view mode, std::int64_t o, float scale, std::int64_t in_len,
                                                 std::int64_t out_len) noexcept {
        const auto x = static_cast<float>(o);
        if (mode == "asymmetric") return x / scale;
        if (mode == "align_corners")
            return out_len == 1 ? 0.0f : x * static_cast<float>(in_len - 1) / static_cast<float>(out_len - 1);
        if (mode == "pytorch_half_pixel" && out_len <= 1) return 0.0f;
        return (x + 0.5f) / scale - 0.5f;  // half_pixel, pytorch_half_pixel
    }
    /// The input index nearest to `x` under `mode`, before clamping.
    [[nodiscard]] static std::int64_t nearest_index(std::string_view mode, float x) noexcept {
        if (mode == "floor") return static_cast<std::int64_t>(std::floor(x));
        if (mode == "ceil") return static_cast<std::int64_t>(std::ceil(x));
        if (mode == "round_prefer_floor" && x == static_cast<float>(static_cast<std::int64_t>(x)) + 0.5f)
            return static_cast<std::int64_t>(std::floor(x));
        return static_cast<std::int64_t>(std::round(x));
    }
    /// The taps of every output index of `axis` of a canonical Resize of `x`.
    [[nodiscard]] static std::vector<ResizeTap> taps(const Attributes& a, const Shape& x, int axis) {
        const std::int64_t in_len = x[axis];
        const std::int64_t out_len = a.get_ints("sizes")[static_cast<std::size_t>(axis)];
        const auto scale = static_cast<float>(a.get<std::vector<double>>("scales")[static_cast<std::size_t>(axis)]);
        const auto& coordinates = a.get<std::string>("coordinate_transformation_mode");
        const bool linear = a.get<std::string>("mode") == "linear";
        const auto& rounding = a.get<std::string>("nearest_mode");
        std::vector<ResizeTap> out;
        out.reserve(static_cast<std::size_t>(out_len));
        const std::int64_t last = std::max<std::int64_t>(in_len - 1, 0);
        for (std::int64_t o = 0; o < out_len; ++o) {
            const float source = source_coordinate(coordinates, o, scale, in_len, out_len);
            if (!linear) {
                const std::int64_t i = std::clamp<std::int64_t>(nearest_index(rounding, source), 0, last);
                out.push_back({i, i, 1.0f, 0.0f});
                continue;
            }
            const float clamped = std::clamp(source, 0.0f, static_cast<float>(last));
            const std::int64_t low = std::min(static_cast<std::int64_t>(clamped), last);
            const std::int64_t high = std::min(low + 1, last);
            if (low == high) out.push_back({low, high, 1.0f, 0.0f});
            else out.push_back({low, high, std::fabs(clamped - static_cast<float>(high)), std::fabs(clamped - static_cast<float>(low))});
        }
        return out;
    }
};

/// TASO's Enlarge: zero-pads a (M, C, kh, kw) kernel, centred, to kernel_shape. The size
/// differences must be even, so that a SAME-padded convolution computes the same result.
struct EnlargeOp {
    static Infer infer(const OpContext& c) {
        const Shape& w = c.in(0);
        const auto& k = c.attributes.get_ints("kernel_shape");
        if (w.rank() != 4 || k.size() != 2) c.fail("expects a rank-4 kernel and a 2-value kernel_shape");
        if (k[0] < w[2] || k[1] < w[3] || (k[0] - w[2]) % 2 != 0 || (k[1] - w[3]) % 2 != 0)
            c.fail("cannot enlarge kernel " + w.to_string() + " to " + ints_to_string(k));
        return detail::one(c.inputs[0].dtype, Shape{w[0], w[1], k[0], k[1]});
    }
};

/// TASO's grouped-convolution weight merge: the (M, n, kh, kw) kernel of a Conv with
/// `group` groups becomes the (M, n*count, kh, kw) kernel of the same Conv with
/// group / count groups. Output channel o belongs to original group o / (M / group) and
/// keeps its n input channels in block b = (o / (M / group)) % count of the merged kernel;
/// every other block is zero, so Conv(x, W, group) == Conv(x, MergeGConv(W), group / count).
struct MergeGConvOp {
    /// Which input-channel block of the merged kernel each output channel fills.
    struct Layout {
        /// Output channels per original group, M / group.
        std::int64_t per_group = 1;
        std::int64_t count = 1;

        [[nodiscard]] constexpr std::int64_t block(std::int64_t output_channel) const noexcept {
            return (output_channel / per_group) % count;
        }
    };
    /// The layout of a node with these attributes over a kernel with `filters` output channels.
    [[nodiscard]] static Layout layout(const Attributes& a, std::int64_t filters) {
        return {filters / a.get_int("group", 1), a.get_int("count", 1)};
    }
    static Infer infer(const OpContext& c) {
        const Shape& w = c.in(0);
        const std::int64_t count = c.attributes.get_int("count", 1);
        const std::int64_t group = c.attributes.get_int("group", 1);
        if (w.rank() != 4) c.fail("expects a rank-4 kernel, got " + w.to_string());
        if (group < 1 || w[0] % group != 0)
            c.fail("group " + std::to_string(group) + " does not divide the " + std::to_string(w[0])
                   + " output channels of kernel " + w.to_string());
        if (count < 1 || group % count != 0)
            c.fail("count " + std::to_string(count) + " does not divide group " + std::to_string(group));
        return detail::one(c.inputs[0].dtype, Shape{w[0], w[1] * count, w[2], w[3]});
    }
};

}  // namespace rlflow::detail
