#pragma once
/// \file
/// The differentiable ops, written once over the backend primitives (tensor_backend.hpp):
/// matmul (plain, batched, and a batch against one matrix), add/sub/mul/div with
/// broadcasting, scaling, tanh, relu, sigmoid, exp, log, softplus, square, sqrt, rsqrt,
/// stable log-softmax and softmax over the last axis, sum and mean (all, or along an
/// axis), concat and slice along any axis, reshape, row gather, and segment sum and mean
/// (graph aggregation), LayerNorm in one pass, and two fused ops for large graphs: a sum of
/// whole and gathered terms plus a bias (sum_rows), and relu(x + bias) (bias_relu). Each
/// op checks shapes up front (shape_error naming the op and both shapes), computes its
/// value, and records a struct whose `backward` adds its inputs' gradients.

#include <rlflow/core/error.hpp>
#include <rlflow/nn/functions.hpp>
#include <rlflow/nn/tape.hpp>
#include <rlflow/nn/tensor.hpp>

#include <cstdint>
#include <algorithm>
#include <initializer_list>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rlflow::nn {

/// Row indices in backend memory (gather rows, segment ids), checked against a bound.
template <TensorBackend B>
class Indices {
public:
    Indices() = default;
    /// `values`, each in [0, bound); throws precondition_error naming the first that is not.
    Indices(std::vector<std::int32_t> values, std::int64_t bound) : m_host(std::move(values)), m_bound(bound) {
        RLFLOW_EXPECTS(bound >= 0, precondition_error, "indices need a bound >= 0, got " + std::to_string(bound));
        for (std::size_t i = 0; i < m_host.size(); ++i)
            RLFLOW_EXPECTS(m_host[i] >= 0 && m_host[i] < bound, precondition_error,
                           "index " + std::to_string(i) + " is " + std::to_string(m_host[i]) + ", outside [0, "
                               + std::to_string(bound) + ")");
        m_device = B::upload_indices(m_host);
        std::vector<typename B::Scalar> inverse(static_cast<std::size_t>(bound), 0);
        for (const std::int32_t s : m_host) inverse[static_cast<std::size_t>(s)] += 1;
        for (auto& c : inverse) c = c > 0 ? 1 / c : 0;
        m_inverse_counts = Tensor<B>::from_host(Shape{bound, 1}, inverse);
    }
    [[nodiscard]] std::int64_t size() const noexcept { return static_cast<std::int64_t>(m_host.size()); }
    [[nodiscard]] std::int64_t bound() const noexcept { return m_bound; }
    [[nodiscard]] std::span<const std::int32_t> host() const noexcept { return m_host; }
    [[nodiscard]] const std::int32_t* data() const noexcept { return B::data(m_device); }
    /// (bound, 1): 1 / (how often each value occurs), 0 for values that do not: the weights
    /// that turn a segment sum into a segment mean, uploaded once.
    [[nodiscard]] const Tensor<B>& inverse_counts() const noexcept { return m_inverse_counts; }

private:
    std::vector<std::int32_t> m_host;
    std::int64_t m_bound = 0;
    typename B::IndexBuffer m_device{};
    Tensor<B> m_inverse_counts;
};

namespace detail {

/// An element-wise plan for output `out` reading `a` and `b` broadcast to it.
[[nodiscard]] inline Strided3 elementwise_plan(const Shape& out, const Shape& a, const Shape& b) {
    Strided3 p;
    p.dims = padded3(out);
    p.a = broadcast_strides(a, p.dims);
    p.b = broadcast_strides(b, p.dims);
    return p;
}

template <TensorBackend B, class Fn>
[[nodiscard]] Tensor<B> map(const Tensor<B>& a) {
    auto out = Tensor<B>::uninitialized(a.shape());
    B::template map<Fn>(elementwise_plan(a.shape(), a.shape(), a.shape()), out.data(), a.data());
    return out;
}

/// Fn(a, b) over the broadcast shape; throws shape_error naming `op` and both shapes.
template <TensorBackend B, class Fn>
[[nodiscard]] Tensor<B> zip(const Tensor<B>& a, const Tensor<B>& b, const char* op) {
    const auto shape = broadcast_shapes(a.shape(), b.shape());
    RLFLOW_EXPECTS(shape.has_value(), shape_error,
                   std::string(op) + ": shapes " + a.shape().to_string() + " and " + b.shape().to_string() + " do not broadcast");
    auto out = Tensor<B>::uninitialized(*shape);
    B::template zip<Fn>(elementwise_plan(*shape, a.shape(), b.shape()), out.data(), a.data(), b.data());
    return out;
}

/// `g` summed over the axes along which a tensor of shape `to` was broadcast to g's shape.
template <TensorBackend B>
[[nodiscard]] Tensor<B> unbroadcast(const Tensor<B>& g, const Shape& to) {
    if (g.shape() == to) return g;
    Tensor<B> out(to);
    Strided3 p;
    p.dims = padded3(g.shape());
    p.a = broadcast_strides(to, p.dims);
    B::accumulate(p, out.data(), g.data());
    return out;
}

/// `g` repeated along the axes where its shape has size 1 and `to` does not.
template <TensorBackend B>
[[nodiscard]] Tensor<B> broadcast_to(const Tensor<B>& g, const Shape& to) {
    auto out = Tensor<B>::uninitialized(to);
    B::template map<fn::Identity>(elementwise_plan(to, g.shape(), g.shape()), out.data(), g.data());
    return out;
}

/// C = op(A) op(B) for 2-D operands, or batched for 3-D ones (count, rows, cols).
template <TensorBackend B>
void gemm(Transpose ta, Transpose tb, const Tensor<B>& a, const Tensor<B>& b, Tensor<B>& c, typename B::Scalar beta) {
    const int r = a.rank();
    const std::int64_t count = r == 3 ? a.dim(0) : 1;
    const std::int64_t a_rows = a.dim(-2), a_cols = a.dim(-1), b_rows = b.dim(-2), b_cols = b.dim(-1);
    const std::int64_t m = ta == Transpose::no ? a_rows : a_cols;
    const std::int64_t k = ta == Transpose::no ? a_cols : a_rows;
    const std::int64_t n = tb == Transpose::no ? b_cols : b_rows;
    B::gemm(ta, tb, m, n, k, typename B::Scalar(1), a.data(), a_cols, b.data(), b_cols, beta, c.data(), n, count,
            a_rows * a_cols, b.rank() == 3 ? b_rows * b_cols : 0, m * n);
}

/// A tensor viewed around `axis` as (outer, size along axis x inner).
struct AxisView {
    std::int64_t outer = 1, extent = 1, inner = 1;
};
[[nodiscard]] inline AxisView axis_view(const Shape& s, int axis) {
    AxisView v;
    for (int i = 0; i < axis; ++i) v.outer *= s[i];
    v.extent = s[axis];
    for (int i = axis + 1; i < s.rank(); ++i) v.inner *= s[i];
    return v;
}
[[nodiscard]] inline int checked_axis(const Shape& s, int axis, const char* op) {
    const int a = axis < 0 ? axis + s.rank() : axis;
    RLFLOW_EXPECTS(a >= 0 && a < s.rank(), shape_error,
                   std::string(op) + ": axis " + std::to_string(axis) + " outside shape " + s.to_string());
    return a;
}

template <TensorBackend B>
[[nodiscard]] bool any_requires_grad(std::span<const Var<B>> vars) {
    for (const Var<B>& v : vars)
        if (v.requires_grad()) return true;
    return false;
}

// The recorded ops.

template <TensorBackend B>
struct MatMulOp {
    Var<B> a, b;
    void backward(Tape<B>& tape, const Tensor<B>& g, const Tensor<B>&) const {
        const Tensor<B>& av = a.value();
        const Tensor<B>& bv = b.value();
        if (a.requires_grad()) {
            auto ga = Tensor<B>::uninitialized(av.shape());
            // A (…, m, k) x B (k, n) or (…, k, n): dA = dC B^T.
            if (av.rank() == 3 && bv.rank() == 2) {
                Tensor<B> g2 = Tensor<B>(g).reshaped(Shape{g.dim(0) * g.dim(1), g.dim(2)});
                auto ga2 = Tensor<B>::uninitialized(Shape{av.dim(0) * av.dim(1), av.dim(2)});
                gemm(Transpose::no, Transpose::yes, g2, bv, ga2, typename B::Scalar(0));
                ga = std::move(ga2).reshaped(av.shape());
            } else {
                gemm(Transpose::no, Transpose::yes, g, bv, ga, typename B::Scalar(0));
            }
            tape.accumulate(a, std::move(ga));
        }
        if (b.requires_grad()) {
            auto gb = Tensor<B>::uninitialized(bv.shape());
            if (av.rank() == 3 && bv.rank() == 2) {
                const Tensor<B> a2 = Tensor<B>(av).reshaped(Shape{av.dim(0) * av.dim(1), av.dim(2)});
                const Tensor<B> g2 = Tensor<B>(g).reshaped(Shape{g.dim(0) * g.dim(1), g.dim(2)});
                gemm(Transpose::yes, Transpose::no, a2, g2, gb, typename B::Scalar(0));
            } else {
                gemm(Transpose::yes, Transpose::no, av, g, gb, typename B::Scalar(0));
            }
            tape.accumulate(b, std::move(gb));
        }
    }
};

enum class BinaryKind : std::uint8_t { add, sub, mul, div };

template <TensorBackend B, BinaryKind kind>
struct BinaryOp {
    Var<B> a, b;
    void backward(Tape<B>& tape, const Tensor<B>& g, const Tensor<B>& out) const {
        [[maybe_unused]] const char* name = "backward";
        if (a.requires_grad()) {
            if constexpr (kind == BinaryKind::add || kind == BinaryKind::sub) tape.accumulate(a, unbroadcast(g, a.shape()));
            else if constexpr (kind == BinaryKind::mul) tape.accumulate(a, unbroadcast(zip<B, fn::Mul>(g, b.value(), name), a.shape()));
            else tape.accumulate(a, unbroadcast(zip<B, fn::Div>(g, b.value(), name), a.shape()));
        }
        if (b.requires_grad()) {
            if constexpr (kind == BinaryKind::add) tape.accumulate(b, unbroadcast(g, b.shape()));
            else if constexpr (kind == BinaryKind::sub) tape.accumulate(b, map<B, fn::Negate>(unbroadcast(g, b.shape())));
            else if constexpr (kind == BinaryKind::mul) tape.accumulate(b, unbroadcast(zip<B, fn::Mul>(g, a.value(), name), b.shape()));
            else {
                // d(a / b)/db = -(a / b) / b = -out / b.
                const Tensor<B> t = zip<B, fn::Div>(zip<B, fn::Mul>(g, out, name), b.value(), name);
                tape.accumulate(b, map<B, fn::Negate>(unbroadcast(t, b.shape())));
            }
        }
    }
};

/// y = Fn(x) with dx = Grad(g, saved), saved being the output or the input.
enum class Saved : std::uint8_t { input, output };
template <TensorBackend B, class Grad, Saved saved>
struct UnaryOp {
    Var<B> x;
    void backward(Tape<B>& tape, const Tensor<B>& g, const Tensor<B>& out) const {
        tape.accumulate(x, zip<B, Grad>(g, saved == Saved::output ? out : x.value(), "backward"));
    }
};

template <TensorBackend B>
struct ScaleOp {
    Var<B> x;
    typename B::Scalar factor;
    void backward(Tape<B>& tape, const Tensor<B>& g, const Tensor<B>&) const {
        tape.accumulate(x, zip<B, fn::Mul>(g, Tensor<B>::scalar(factor), "backward"));
    }
};

/// Sums into a shape with size 1 along reduced axes (all axes: shape {1}).
template <TensorBackend B>
struct SumOp {
    Var<B> x;
    void backward(Tape<B>& tape, const Tensor<B>& g, const Tensor<B>&) const { tape.accumulate(x, broadcast_to(g, x.shape())); }
};

template <TensorBackend B>
struct LogSoftmaxOp {
    Var<B> x;
    /// dx = g - softmax * sum(g) per row, softmax = exp(output).
    void backward(Tape<B>& tape, const Tensor<B>& g, const Tensor<B>& out) const {
        const std::int64_t cols = out.dim(-1), rows = out.numel() / cols;
        auto row_sums = Tensor<B>::uninitialized(Shape{rows, 1});
        B::row_sum(row_sums.data(), g.data(), rows, cols);
        const Tensor<B> g2 = Tensor<B>(g).reshaped(Shape{rows, cols});
        const Tensor<B> p = map<B, fn::Exp>(Tensor<B>(out).reshaped(Shape{rows, cols}));
        Tensor<B> dx = zip<B, fn::Sub>(g2, zip<B, fn::Mul>(p, row_sums, "backward"), "backward");
        tape.accumulate(x, std::move(dx).reshaped(x.shape()));
    }
};

template <TensorBackend B>
struct ConcatOp {
    std::vector<Var<B>> parts;
    int axis;
    void backward(Tape<B>& tape, const Tensor<B>& g, const Tensor<B>&) const {
        const AxisView whole = axis_view(g.shape(), axis);
        std::int64_t offset = 0;
        for (const Var<B>& part : parts) {
            const AxisView v = axis_view(part.shape(), axis);
            if (part.requires_grad()) {
                auto gp = Tensor<B>::uninitialized(part.shape());
                B::copy_block(gp.data(), v.extent * v.inner, g.data() + offset * whole.inner, whole.extent * whole.inner,
                              whole.outer, v.extent * v.inner);
                tape.accumulate(part, std::move(gp));
            }
            offset += v.extent;
        }
    }
};

template <TensorBackend B>
struct SliceOp {
    Var<B> x;
    int axis;
    std::int64_t begin;
    void backward(Tape<B>& tape, const Tensor<B>& g, const Tensor<B>&) const {
        const AxisView whole = axis_view(x.shape(), axis), part = axis_view(g.shape(), axis);
        Tensor<B> gx(x.shape());
        B::copy_block(gx.data() + begin * whole.inner, whole.extent * whole.inner, g.data(), part.extent * part.inner, whole.outer,
                      part.extent * part.inner);
        tape.accumulate(x, std::move(gx));
    }
};

template <TensorBackend B>
struct ReshapeOp {
    Var<B> x;
    void backward(Tape<B>& tape, const Tensor<B>& g, const Tensor<B>&) const {
        tape.accumulate(x, Tensor<B>(g).reshaped(x.shape()));
    }
};

/// out[r] = x[index[r]]; dx[index[r]] += g[r].
template <TensorBackend B>
struct GatherOp {
    Var<B> x;
    const Indices<B>* index;
    void backward(Tape<B>& tape, const Tensor<B>& g, const Tensor<B>&) const {
        Tensor<B> gx(x.shape());
        B::scatter_add_rows(gx.data(), g.data(), index->data(), index->size(), x.dim(1));
        tape.accumulate(x, std::move(gx));
    }
};

/// out[segment[r]] += x[r]; dx[r] = g[segment[r]].
template <TensorBackend B>
struct SegmentSumOp {
    Var<B> x;
    const Indices<B>* segment;
    void backward(Tape<B>& tape, const Tensor<B>& g, const Tensor<B>&) const {
        auto gx = Tensor<B>::uninitialized(x.shape());
        B::gather_rows(gx.data(), g.data(), segment->data(), segment->size(), x.dim(1));
        tape.accumulate(x, std::move(gx));
    }
};

/// out = relu(x + bias) (`bias_relu`): dx = g where out > 0, and dbias its column sums.
template <TensorBackend B>
struct BiasReluOp {
    Var<B> x, bias;
    void backward(Tape<B>& tape, const Tensor<B>& g, const Tensor<B>& out) const {
        const Tensor<B> masked = zip<B, fn::ReluBackward>(g, out, "backward");
        if (bias.requires_grad()) tape.accumulate(bias, unbroadcast(masked, bias.shape()));
        if (x.requires_grad()) tape.accumulate(x, masked);
    }
};

/// out = Σ_i terms[i] (rows[i] of it where given) + bias, then relu where asked
/// (`sum_rows`); each term's gradient is g (where out > 0 with relu), scattered back to
/// its rows where it was gathered.
template <TensorBackend B>
struct SumRowsOp {
    std::vector<Var<B>> terms;
    std::vector<const Indices<B>*> rows;
    Var<B> bias;
    bool relu = false;
    void backward(Tape<B>& tape, const Tensor<B>& grad_output, const Tensor<B>& out) const {
        const Tensor<B> g = relu ? zip<B, fn::ReluBackward>(grad_output, out, "backward") : grad_output;
        for (std::size_t i = 0; i < terms.size(); ++i) {
            if (!terms[i].requires_grad()) continue;
            if (rows[i] == nullptr) {
                tape.accumulate(terms[i], Tensor<B>(g));
                continue;
            }
            Tensor<B> gt(terms[i].shape());
            B::scatter_add_rows(gt.data(), g.data(), rows[i]->data(), rows[i]->size(), g.dim(1));
            tape.accumulate(terms[i], std::move(gt));
        }
        if (bias.requires_grad()) tape.accumulate(bias, unbroadcast(g, bias.shape()));
    }
};

/// Layer normalisation over the last axis (`layer_norm`), with what its backward pass
/// reads: the normalised input and 1 / sqrt(var + eps) per row.
template <TensorBackend B>
struct LayerNormOp {
    Var<B> x, gamma, beta;
    Tensor<B> normalized;
    Tensor<B> inv_std;
    void backward(Tape<B>& tape, const Tensor<B>& g, const Tensor<B>&) const {
        const std::int64_t cols = x.dim(-1), rows = g.numel() / cols;
        if (x.requires_grad()) {
            auto dx = Tensor<B>::uninitialized(x.shape());
            B::layer_norm_backward(dx.data(), g.data(), normalized.data(), inv_std.data(), gamma.value().data(), rows, cols);
            tape.accumulate(x, std::move(dx));
        }
        if (gamma.requires_grad()) tape.accumulate(gamma, unbroadcast(zip<B, fn::Mul>(g, normalized, "backward"), gamma.shape()));
        if (beta.requires_grad()) tape.accumulate(beta, unbroadcast(g, beta.shape()));
    }
};

template <TensorBackend B, class Op>
Var<B> record(Tensor<B> value, Op op, std::initializer_list<Var<B>> inputs) {
    Tape<B>& tape = inputs.begin()->tape();
    for (const Var<B>& v : inputs)
        RLFLOW_EXPECTS(&v.tape() == &tape, precondition_error, "an op mixes values of two tapes");
    const bool grad = any_requires_grad<B>(std::span<const Var<B>>(inputs.begin(), inputs.size()));
    return tape.record(std::move(value), std::move(op), grad);
}

template <TensorBackend B, class Fn, class Grad, Saved saved>
Var<B> unary(Var<B> x) {
    return record<B>(map<B, Fn>(x.value()), UnaryOp<B, Grad, saved>{x}, {x});
}

template <TensorBackend B, BinaryKind kind, class Fn>
Var<B> binary(Var<B> a, Var<B> b, const char* name) {
    return record<B>(zip<B, Fn>(a.value(), b.value(), name), BinaryOp<B, kind>{a, b}, {a, b});
}

}  // namespace detail

/// a (m, k) x b (k, n); a (batch, m, k) x b (k, n) (one matrix for the whole batch); or
/// a (batch, m, k) x b (batch, k, n).
template <TensorBackend B>
[[nodiscard]] Var<B> matmul(Var<B> a, Var<B> b) {
    const Shape& as = a.shape();
    const Shape& bs = b.shape();
    const bool fits = as.rank() >= 2 && bs.rank() >= 2 && as.dim(-1) == bs.dim(-2)
                      && (bs.rank() == 2 || (as.rank() == 3 && as[0] == bs[0]));
    RLFLOW_EXPECTS(fits, shape_error, "matmul: lhs " + as.to_string() + " vs rhs " + bs.to_string());
    Shape out = as.rank() == 3 ? Shape{as[0], as[1], bs.dim(-1)} : Shape{as[0], bs.dim(-1)};
    auto c = Tensor<B>::uninitialized(out);
    if (as.rank() == 3 && bs.rank() == 2) {
        const Tensor<B> a2 = Tensor<B>(a.value()).reshaped(Shape{as[0] * as[1], as[2]});
        auto c2 = Tensor<B>::uninitialized(Shape{as[0] * as[1], bs[1]});
        detail::gemm(Transpose::no, Transpose::no, a2, b.value(), c2, typename B::Scalar(0));
        c = std::move(c2).reshaped(out);
    } else {
        detail::gemm(Transpose::no, Transpose::no, a.value(), b.value(), c, typename B::Scalar(0));
    }
    return detail::record<B>(std::move(c), detail::MatMulOp<B>{a, b}, {a, b});
}

template <TensorBackend B>
[[nodiscard]] Var<B> add(Var<B> a, Var<B> b) { return detail::binary<B, detail::BinaryKind::add, fn::Add>(a, b, "add"); }
template <TensorBackend B>
[[nodiscard]] Var<B> sub(Var<B> a, Var<B> b) { return detail::binary<B, detail::BinaryKind::sub, fn::Sub>(a, b, "sub"); }
template <TensorBackend B>
[[nodiscard]] Var<B> mul(Var<B> a, Var<B> b) { return detail::binary<B, detail::BinaryKind::mul, fn::Mul>(a, b, "mul"); }
template <TensorBackend B>
[[nodiscard]] Var<B> div(Var<B> a, Var<B> b) { return detail::binary<B, detail::BinaryKind::div, fn::Div>(a, b, "div"); }

/// x times a constant.
template <TensorBackend B>
[[nodiscard]] Var<B> scale(Var<B> x, typename B::Scalar factor) {
    return detail::record<B>(detail::zip<B, fn::Mul>(x.value(), Tensor<B>::scalar(factor), "scale"), detail::ScaleOp<B>{x, factor},
                             {x});
}

template <TensorBackend B>
[[nodiscard]] Var<B> tanh(Var<B> x) { return detail::unary<B, fn::Tanh, fn::TanhBackward, detail::Saved::output>(x); }
template <TensorBackend B>
[[nodiscard]] Var<B> relu(Var<B> x) { return detail::unary<B, fn::Relu, fn::ReluBackward, detail::Saved::input>(x); }
template <TensorBackend B>
[[nodiscard]] Var<B> sigmoid(Var<B> x) { return detail::unary<B, fn::Sigmoid, fn::SigmoidBackward, detail::Saved::output>(x); }
template <TensorBackend B>
[[nodiscard]] Var<B> exp(Var<B> x) { return detail::unary<B, fn::Exp, fn::Mul, detail::Saved::output>(x); }
template <TensorBackend B>
[[nodiscard]] Var<B> log(Var<B> x) { return detail::unary<B, fn::Log, fn::Div, detail::Saved::input>(x); }
template <TensorBackend B>
[[nodiscard]] Var<B> softplus(Var<B> x) { return detail::unary<B, fn::Softplus, fn::SoftplusBackward, detail::Saved::input>(x); }
template <TensorBackend B>
[[nodiscard]] Var<B> square(Var<B> x) { return detail::unary<B, fn::Square, fn::SquareBackward, detail::Saved::input>(x); }
template <TensorBackend B>
[[nodiscard]] Var<B> sqrt(Var<B> x) { return detail::unary<B, fn::Sqrt, fn::SqrtBackward, detail::Saved::output>(x); }
template <TensorBackend B>
[[nodiscard]] Var<B> rsqrt(Var<B> x) { return detail::unary<B, fn::Rsqrt, fn::RsqrtBackward, detail::Saved::output>(x); }

/// The sum of every element, shape {1}.
template <TensorBackend B>
[[nodiscard]] Var<B> sum(Var<B> x) {
    Tensor<B> out(Shape{1});
    Strided3 p;
    p.dims = detail::padded3(x.shape());
    B::accumulate(p, out.data(), x.value().data());
    return detail::record<B>(std::move(out), detail::SumOp<B>{x}, {x});
}
/// The sum along `axis`, kept with size 1.
template <TensorBackend B>
[[nodiscard]] Var<B> sum(Var<B> x, int axis) {
    const int a = detail::checked_axis(x.shape(), axis, "sum");
    Shape shape = x.shape();
    shape[a] = 1;
    Tensor<B> out(shape);
    Strided3 p;
    p.dims = detail::padded3(x.shape());
    p.a = detail::broadcast_strides(shape, p.dims);
    B::accumulate(p, out.data(), x.value().data());
    return detail::record<B>(std::move(out), detail::SumOp<B>{x}, {x});
}
template <TensorBackend B>
[[nodiscard]] Var<B> mean(Var<B> x) {
    return scale(sum(x), typename B::Scalar(1) / static_cast<typename B::Scalar>(std::max<std::int64_t>(1, x.value().numel())));
}
template <TensorBackend B>
[[nodiscard]] Var<B> mean(Var<B> x, int axis) {
    const int a = detail::checked_axis(x.shape(), axis, "mean");
    return scale(sum(x, a), typename B::Scalar(1) / static_cast<typename B::Scalar>(std::max<std::int64_t>(1, x.shape()[a])));
}

/// log softmax over the last axis, shifted by the row maximum (stable). A row may hold
/// -inf entries (masked) as long as one entry is finite.
template <TensorBackend B>
[[nodiscard]] Var<B> log_softmax(Var<B> x) {
    const Tensor<B>& xv = x.value();
    const std::int64_t cols = xv.dim(-1), rows = xv.numel() / std::max<std::int64_t>(1, cols);
    RLFLOW_EXPECTS(cols > 0, shape_error, "log_softmax of an empty last axis: " + xv.shape().to_string());
    const Tensor<B> x2 = Tensor<B>(xv).reshaped(Shape{rows, cols});
    auto row = Tensor<B>::uninitialized(Shape{rows, 1});
    B::row_max(row.data(), x2.data(), rows, cols);
    Tensor<B> shifted = detail::zip<B, fn::Sub>(x2, row, "log_softmax");
    B::row_sum(row.data(), detail::map<B, fn::Exp>(shifted).data(), rows, cols);
    Tensor<B> out = detail::zip<B, fn::Sub>(shifted, detail::map<B, fn::Log>(row), "log_softmax");
    return detail::record<B>(std::move(out).reshaped(xv.shape()), detail::LogSoftmaxOp<B>{x}, {x});
}
template <TensorBackend B>
[[nodiscard]] Var<B> softmax(Var<B> x) {
    return exp(log_softmax(x));
}

/// `parts` joined along `axis`; every other dimension must agree.
template <TensorBackend B>
[[nodiscard]] Var<B> concat(const std::vector<Var<B>>& parts, int axis) {
    RLFLOW_EXPECTS(!parts.empty(), precondition_error, "concat of no tensors");
    const Shape& first = parts.front().shape();
    const int a = detail::checked_axis(first, axis, "concat");
    Shape shape = first;
    shape[a] = 0;
    for (const Var<B>& p : parts) {
        bool same = p.shape().rank() == first.rank();
        for (int i = 0; same && i < first.rank(); ++i) same = i == a || p.shape()[i] == first[i];
        RLFLOW_EXPECTS(same, shape_error, "concat along axis " + std::to_string(a) + ": " + first.to_string() + " vs " + p.shape().to_string());
        shape[a] += p.shape()[a];
    }
    auto out = Tensor<B>::uninitialized(shape);
    const detail::AxisView whole = detail::axis_view(shape, a);
    std::int64_t offset = 0;
    for (const Var<B>& p : parts) {
        const detail::AxisView v = detail::axis_view(p.shape(), a);
        B::copy_block(out.data() + offset * whole.inner, whole.extent * whole.inner, p.value().data(), v.extent * v.inner, whole.outer,
                      v.extent * v.inner);
        offset += v.extent;
    }
    Tape<B>& tape = parts.front().tape();
    bool grad = false;
    for (const Var<B>& p : parts) {
        RLFLOW_EXPECTS(&p.tape() == &tape, precondition_error, "an op mixes values of two tapes");
        grad = grad || p.requires_grad();
    }
    return tape.record(std::move(out), detail::ConcatOp<B>{parts, a}, grad);
}

/// Entries [begin, end) along `axis`.
template <TensorBackend B>
[[nodiscard]] Var<B> slice(Var<B> x, int axis, std::int64_t begin, std::int64_t end) {
    const int a = detail::checked_axis(x.shape(), axis, "slice");
    RLFLOW_EXPECTS(0 <= begin && begin <= end && end <= x.shape()[a], shape_error,
                   "slice [" + std::to_string(begin) + ", " + std::to_string(end) + ") of axis " + std::to_string(a) + " of "
                       + x.shape().to_string());
    Shape shape = x.shape();
    shape[a] = end - begin;
    auto out = Tensor<B>::uninitialized(shape);
    const detail::AxisView whole = detail::axis_view(x.shape(), a), part = detail::axis_view(shape, a);
    B::copy_block(out.data(), part.extent * part.inner, x.value().data() + begin * whole.inner, whole.extent * whole.inner,
                  whole.outer, part.extent * part.inner);
    return detail::record<B>(std::move(out), detail::SliceOp<B>{x, a, begin}, {x});
}

template <TensorBackend B>
[[nodiscard]] Var<B> reshape(Var<B> x, Shape shape) {
    return detail::record<B>(Tensor<B>(x.value()).reshaped(std::move(shape)), detail::ReshapeOp<B>{x}, {x});
}

/// Rows of a matrix x (n, f): out[r] = x[index[r]], shape (index.size(), f). `index`
/// must outlive the tape's backward pass.
template <TensorBackend B>
[[nodiscard]] Var<B> gather(Var<B> x, const Indices<B>& index) {
    RLFLOW_EXPECTS(x.shape().rank() == 2 && index.bound() <= x.shape()[0], shape_error,
                   "gather: rows indexed below " + std::to_string(index.bound()) + " of " + x.shape().to_string());
    auto out = Tensor<B>::uninitialized(Shape{index.size(), x.shape()[1]});
    B::gather_rows(out.data(), x.value().data(), index.data(), index.size(), x.shape()[1]);
    return detail::record<B>(std::move(out), detail::GatherOp<B>{x, &index}, {x});
}

/// Row sums by segment: out[s] = sum of x[r] with segment[r] = s, shape (segment.bound(), f)
/// (empty segments are 0). `segment` must outlive the tape's backward pass.
template <TensorBackend B>
[[nodiscard]] Var<B> segment_sum(Var<B> x, const Indices<B>& segment) {
    RLFLOW_EXPECTS(x.shape().rank() == 2 && segment.size() == x.shape()[0], shape_error,
                   "segment_sum: " + std::to_string(segment.size()) + " segment ids for rows of " + x.shape().to_string());
    Tensor<B> out(Shape{segment.bound(), x.shape()[1]});
    B::scatter_add_rows(out.data(), x.value().data(), segment.data(), segment.size(), x.shape()[1]);
    return detail::record<B>(std::move(out), detail::SegmentSumOp<B>{x, &segment}, {x});
}
/// relu(x + bias), bias along the last axis, as one op: one tensor written where the
/// add and the relu wrote two (a hidden layer's end, layers.hpp).
template <TensorBackend B>
[[nodiscard]] Var<B> bias_relu(Var<B> x, Var<B> bias) {
    RLFLOW_EXPECTS(bias.shape() == Shape{x.dim(-1)}, shape_error,
                   "bias_relu: bias " + bias.shape().to_string() + " for " + x.shape().to_string());
    return detail::record<B>(detail::zip<B, fn::AddRelu>(x.value(), bias.value(), "bias_relu"), detail::BiasReluOp<B>{x, bias},
                             {x, bias});
}

/// Σ_i terms[i] + bias, where a term with `rows[i]` set is read at those rows (gather),
/// as one tensor of (rows, features), with relu applied in place when `relu` is set:
/// one write, each term read once. The sum that a Linear over input blocks ends with
/// (layers.hpp); built from gathers and adds, it made a tensor per gathered block and per
/// partial sum, and on large graphs those trips through memory were most of an edge
/// update. Terms are matrices of one width; after gathering they must have equal row
/// counts; bias has the width.
template <TensorBackend B>
[[nodiscard]] Var<B> sum_rows(std::span<const Var<B>> terms, std::span<const Indices<B>* const> rows, Var<B> bias,
                              bool relu = false) {
    RLFLOW_EXPECTS(!terms.empty() && terms.size() == rows.size(), precondition_error,
                   "sum_rows: " + std::to_string(terms.size()) + " terms with " + std::to_string(rows.size()) + " row indices");
    const std::int64_t width = terms.front().shape().rank() == 2 ? terms.front().shape()[1] : -1;
    const auto count = [&](std::size_t i) { return rows[i] != nullptr ? rows[i]->size() : terms[i].shape()[0]; };
    for (std::size_t i = 0; i < terms.size(); ++i) {
        const Shape& s = terms[i].shape();
        RLFLOW_EXPECTS(s.rank() == 2 && s[1] == width && (rows[i] == nullptr || rows[i]->bound() <= s[0]) && count(i) == count(0),
                       shape_error, "sum_rows: term " + std::to_string(i) + " " + s.to_string() + " does not fit term 0 "
                                        + terms.front().shape().to_string());
    }
    RLFLOW_EXPECTS(bias.shape() == Shape{width}, shape_error, "sum_rows: bias " + bias.shape().to_string() + " for width " + std::to_string(width));
    const Shape shape{count(0), width};
    auto out = Tensor<B>::uninitialized(shape);
    // The bias goes in with the first term when that one is read whole (one pass less).
    const auto add_bias = [&](const typename B::Scalar* from) {
        B::template zip<fn::Add>(detail::elementwise_plan(shape, shape, bias.shape()), out.data(), from, bias.value().data());
    };
    if (rows[0] == nullptr) {
        add_bias(terms[0].value().data());
    } else {
        B::gather_rows(out.data(), terms[0].value().data(), rows[0]->data(), shape[0], width);
        add_bias(out.data());
    }
    for (std::size_t i = 1; i < terms.size(); ++i) {
        const Tensor<B>& t = terms[i].value();
        if (rows[i] == nullptr) B::template zip<fn::Add>(detail::elementwise_plan(shape, shape, shape), out.data(), out.data(), t.data());
        else B::gather_add_rows(out.data(), t.data(), rows[i]->data(), shape[0], width);
    }
    if (relu) B::template map<fn::Relu>(detail::elementwise_plan(shape, shape, shape), out.data(), out.data());
    Tape<B>& tape = bias.tape();
    bool grad = bias.requires_grad();
    for (const Var<B>& t : terms) {
        RLFLOW_EXPECTS(&t.tape() == &tape, precondition_error, "an op mixes values of two tapes");
        grad = grad || t.requires_grad();
    }
    return tape.record(std::move(out),
                       detail::SumRowsOp<B>{std::vector<Var<B>>(terms.begin(), terms.end()),
                                            std::vector<const Indices<B>*>(rows.begin(), rows.end()), bias, relu},
                       grad);
}

/// Row means by segment (empty segments are 0).
template <TensorBackend B>
[[nodiscard]] Var<B> segment_mean(Var<B> x, const Indices<B>& segment) {
    return mul(segment_sum(x, segment), x.tape().constant(segment.inverse_counts()));
}

/// Layer normalisation over the last axis: (x - mean) / sqrt(var + eps) * gamma + beta,
/// gamma and beta of the last axis's size. One backend pass over the rows forward and
/// one backward (B::layer_norm): written as nine element-wise ops, it was about a third
/// of a graph network's pass on large graphs, each op a trip through memory.
template <TensorBackend B>
[[nodiscard]] Var<B> layer_norm(Var<B> x, Var<B> gamma, Var<B> beta, typename B::Scalar eps = typename B::Scalar(1e-5)) {
    RLFLOW_EXPECTS(gamma.shape() == Shape{x.dim(-1)} && beta.shape() == Shape{x.dim(-1)}, shape_error,
                   "layer_norm of " + x.shape().to_string() + " with gamma " + gamma.shape().to_string() + " and beta "
                       + beta.shape().to_string());
    const std::int64_t cols = x.dim(-1), rows = x.value().numel() / std::max<std::int64_t>(cols, 1);
    auto out = Tensor<B>::uninitialized(x.shape());
    // The backward pass reads the normalised input and the per-row scale: kept only when
    // a gradient will flow (inference writes the output alone).
    const Var<B> inputs[] = {x, gamma, beta};
    const bool grad = detail::any_requires_grad<B>(inputs);
    Tensor<B> normalized = grad ? Tensor<B>::uninitialized(x.shape()) : Tensor<B>();
    Tensor<B> inv_std = grad ? Tensor<B>::uninitialized(Shape{rows, 1}) : Tensor<B>();
    B::layer_norm(out.data(), grad ? normalized.data() : nullptr, grad ? inv_std.data() : nullptr, x.value().data(),
                  gamma.value().data(), beta.value().data(), rows, cols, eps);
    return detail::record<B>(std::move(out), detail::LayerNormOp<B>{x, gamma, beta, std::move(normalized), std::move(inv_std)},
                             {x, gamma, beta});
}

}  // namespace rlflow::nn
