#pragma once
/// \file
/// The basic modules: `Linear` (y = x W + b), `LayerNorm` (a learned scale and shift over
/// the last axis) and `Mlp` (linear layers with an activation between them, optionally
/// layer-normalised at the end, as the graph-nets blocks use). Weights are initialised
/// orthogonally (Saxe et al.) with a gain, biases at zero.
///
/// Every module names its parameters hierarchically ("encoder.edge.0.weight") and lists
/// them with `parameters()`, in a fixed order: what optimisers step and checkpoints save.

#include <rlflow/core/error.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn/ops.hpp>
#include <rlflow/nn/tape.hpp>

#include <Eigen/QR>

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rlflow::nn {

/// Anything with named parameters.
template <class M, class B>
concept Module = requires(M& m) {
    { m.parameters() } -> std::same_as<std::vector<Parameter<B>*>>;
};

/// A (rows, cols) matrix with orthonormal rows or columns (whichever are fewer), times
/// `gain`, from the QR decomposition of a standard normal matrix (signs fixed by R's
/// diagonal, so the draw is uniform over orthogonal matrices). A template only so that a
/// unit that includes this header without building a layer does not instantiate Eigen's
/// QR (about 3 s of every such unit's compile): `Random` is always Rng.
template <std::same_as<Rng> Random>
[[nodiscard]] std::vector<double> orthogonal_values(std::int64_t rows, std::int64_t cols, double gain, Random& rng) {
    const std::int64_t tall = std::max(rows, cols), wide = std::min(rows, cols);
    ::Eigen::MatrixXd a(tall, wide);
    for (std::int64_t i = 0; i < tall; ++i)
        for (std::int64_t j = 0; j < wide; ++j) a(i, j) = rng.normal();
    const ::Eigen::HouseholderQR<::Eigen::MatrixXd> qr(a);
    ::Eigen::MatrixXd q = qr.householderQ() * ::Eigen::MatrixXd::Identity(tall, wide);
    const ::Eigen::MatrixXd r = qr.matrixQR();
    for (std::int64_t j = 0; j < wide; ++j)
        if (r(j, j) < 0) q.col(j) *= -1;
    std::vector<double> out(static_cast<std::size_t>(rows * cols));
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) out[static_cast<std::size_t>(i * cols + j)] = gain * (rows >= cols ? q(i, j) : q(j, i));
    return out;
}

/// A tensor of `shape` (rank 2) initialised orthogonally.
template <TensorBackend B>
[[nodiscard]] Tensor<B> orthogonal(const Shape& shape, double gain, Rng& rng) {
    RLFLOW_EXPECTS(shape.rank() == 2, shape_error, "orthogonal initialisation of a matrix, not " + shape.to_string());
    const std::vector<double> v = orthogonal_values(shape[0], shape[1], gain, rng);
    return Tensor<B>::from_host(shape, std::vector<typename B::Scalar>(v.begin(), v.end()));
}

/// One block of a layer's input: the rows of `value`, or with `rows` the rows of `value`
/// that `rows` picks (as `gather(value, *rows)`). `rows` must outlive the backward pass.
template <TensorBackend B>
struct InputBlock {
    Var<B> value;
    const Indices<B>* rows = nullptr;
};

/// y = x W + b for x (…, in): W (in, out), b (out).
template <TensorBackend B>
class Linear {
public:
    Linear() = default;
    Linear(std::string name, std::int64_t in, std::int64_t out, Rng& rng, double gain = std::sqrt(2.0))
        : m_name(std::move(name)), m_weight(m_name + ".weight", orthogonal<B>(Shape{in, out}, gain, rng)),
          m_bias(m_name + ".bias", Tensor<B>(Shape{out})) {}

    [[nodiscard]] Var<B> operator()(Tape<B>& tape, Var<B> x) {
        RLFLOW_EXPECTS(x.dim(-1) == in_features(), shape_error,
                       "linear '" + m_name + "' takes " + std::to_string(in_features()) + " features, got " + x.shape().to_string());
        return add(matmul(x, tape.parameter(m_weight)), tape.parameter(m_bias));
    }
    /// relu of the layer, the bias and the relu in one op (bias_relu).
    [[nodiscard]] Var<B> relu(Tape<B>& tape, Var<B> x) {
        RLFLOW_EXPECTS(x.dim(-1) == in_features(), shape_error,
                       "linear '" + m_name + "' takes " + std::to_string(in_features()) + " features, got " + x.shape().to_string());
        return bias_relu(matmul(x, tape.parameter(m_weight)), tape.parameter(m_bias));
    }
    /// The layer on the concatenation of `blocks` along their last axis, without building
    /// it: Σ_i block_i W_i + b, with W_i the weight rows of block i. A gathered block is
    /// multiplied first and gathered after (gather(v, rows) W_i = gather(v W_i, rows)), so
    /// it costs v's rows, not the gathered ones: one row for a graph's globals that every
    /// edge reads. Blocks are matrices; after gathering they must have equal row counts.
    /// With `relu`, relu of it, applied in place (sum_rows).
    [[nodiscard]] Var<B> operator()(Tape<B>& tape, std::span<const InputBlock<B>> blocks, bool relu = false) {
        check_blocks(blocks);
        const Var<B> weight = tape.parameter(m_weight);
        std::int64_t offset = 0;
        std::vector<Var<B>> terms;
        std::vector<const Indices<B>*> gathers;
        for (const InputBlock<B>& block : blocks) {
            const std::int64_t width = block.value.dim(1);
            terms.push_back(matmul(block.value, slice(weight, 0, offset, offset + width)));
            gathers.push_back(block.rows);
            offset += width;
        }
        return sum_rows<B>(terms, gathers, tape.parameter(m_bias), relu);
    }
    /// Checks that `blocks` (at least one) are matrices whose widths add up to the input
    /// features and whose row counts (after gathering) agree; returns that row count.
    /// Throws shape_error naming the layer and the block that does not fit.
    std::int64_t check_blocks(std::span<const InputBlock<B>> blocks) const {
        RLFLOW_EXPECTS(!blocks.empty(), precondition_error, "linear '" + m_name + "' on no input blocks");
        std::int64_t offset = 0;
        std::optional<std::int64_t> rows;
        for (const InputBlock<B>& block : blocks) {
            const Shape& shape = block.value.shape();
            const std::int64_t width = shape.rank() == 2 ? shape[1] : 0;
            RLFLOW_EXPECTS(shape.rank() == 2 && offset + width <= in_features(), shape_error,
                           "linear '" + m_name + "' takes " + std::to_string(in_features()) + " features in all; block "
                               + shape.to_string() + " at feature " + std::to_string(offset) + " does not fit");
            RLFLOW_EXPECTS(block.rows == nullptr || block.rows->bound() <= shape[0], shape_error,
                           "linear '" + m_name + "': block " + shape.to_string() + " gathered at rows below "
                               + std::to_string(block.rows->bound()));
            const std::int64_t block_rows = block.rows != nullptr ? block.rows->size() : shape[0];
            RLFLOW_EXPECTS(!rows || *rows == block_rows, shape_error,
                           "linear '" + m_name + "': input blocks of " + std::to_string(*rows) + " and " + std::to_string(block_rows)
                               + " rows");
            rows = block_rows;
            offset += width;
        }
        RLFLOW_EXPECTS(offset == in_features(), shape_error,
                       "linear '" + m_name + "' takes " + std::to_string(in_features()) + " features, its input blocks have "
                           + std::to_string(offset));
        return *rows;
    }
    [[nodiscard]] std::int64_t in_features() const { return m_weight.value.dim(0); }
    [[nodiscard]] std::int64_t out_features() const { return m_weight.value.dim(1); }
    [[nodiscard]] std::vector<Parameter<B>*> parameters() { return {&m_weight, &m_bias}; }
    [[nodiscard]] Parameter<B>& weight() noexcept { return m_weight; }
    [[nodiscard]] Parameter<B>& bias() noexcept { return m_bias; }
    [[nodiscard]] const Parameter<B>& weight() const noexcept { return m_weight; }
    [[nodiscard]] const Parameter<B>& bias() const noexcept { return m_bias; }

private:
    std::string m_name;
    Parameter<B> m_weight;
    Parameter<B> m_bias;
};

/// Learned scale (ones) and shift (zeros) after normalising the last axis.
template <TensorBackend B>
class LayerNorm {
public:
    LayerNorm() = default;
    LayerNorm(const std::string& name, std::int64_t features)
        : m_gamma(name + ".gamma", Tensor<B>(Shape{features}, typename B::Scalar(1))), m_beta(name + ".beta", Tensor<B>(Shape{features})) {}
    [[nodiscard]] Var<B> operator()(Tape<B>& tape, Var<B> x) {
        return layer_norm(x, tape.parameter(m_gamma), tape.parameter(m_beta), eps);
    }
    [[nodiscard]] std::vector<Parameter<B>*> parameters() { return {&m_gamma, &m_beta}; }
    [[nodiscard]] const Parameter<B>& gamma() const noexcept { return m_gamma; }
    [[nodiscard]] const Parameter<B>& beta() const noexcept { return m_beta; }
    /// What the variance is offset by.
    static constexpr typename B::Scalar eps = typename B::Scalar(1e-5);

private:
    Parameter<B> m_gamma;
    Parameter<B> m_beta;
};

enum class Activation : std::uint8_t { relu, tanh };

template <TensorBackend B>
[[nodiscard]] Var<B> activate(Var<B> x, Activation a) {
    return a == Activation::relu ? relu(x) : tanh(x);
}

/// Layer sizes and options of an Mlp.
struct MlpOptions {
    /// in, hidden..., out (at least two entries).
    std::vector<std::int64_t> sizes;
    Activation activation = Activation::relu;
    /// Apply the activation after the last layer too.
    bool activate_output = false;
    /// Layer-normalise the output (graph-nets MLPs do).
    bool layer_norm_output = false;
    /// Gain of the last layer's orthogonal initialisation (small for policy heads).
    double output_gain = std::sqrt(2.0);
};

template <TensorBackend B>
class Mlp {
public:
    Mlp() = default;
    Mlp(const std::string& name, MlpOptions options, Rng& rng) : m_options(std::move(options)) {
        RLFLOW_EXPECTS(m_options.sizes.size() >= 2, precondition_error, "mlp '" + name + "' needs an input and an output size");
        for (std::size_t i = 0; i + 1 < m_options.sizes.size(); ++i) {
            const bool last = i + 2 == m_options.sizes.size();
            m_layers.emplace_back(name + "." + std::to_string(i), m_options.sizes[i], m_options.sizes[i + 1], rng,
                                  last ? m_options.output_gain : std::sqrt(2.0));
        }
        if (m_options.layer_norm_output) m_norm = LayerNorm<B>(name + ".norm", m_options.sizes.back());
    }

    /// The MLP on x (…, in). Without gradients (NoGrad) on a matrix, `infer`.
    [[nodiscard]] Var<B> operator()(Tape<B>& tape, Var<B> x) {
        if (!tape.grad_enabled() && x.shape().rank() == 2) {
            const InputBlock<B> whole[] = {{x, nullptr}};
            return infer(tape, whole);
        }
        return after_first(tape, fused_relu(0) ? m_layers.front().relu(tape, x) : m_layers.front()(tape, x));
    }
    /// The MLP on the concatenation of `blocks`, which its first layer never builds
    /// (`Linear::operator()` on blocks). Without gradients, `infer`.
    [[nodiscard]] Var<B> operator()(Tape<B>& tape, std::span<const InputBlock<B>> blocks) {
        if (!tape.grad_enabled()) return infer(tape, blocks);
        return after_first(tape, m_layers.front()(tape, blocks, fused_relu(0)));
    }
    [[nodiscard]] std::vector<Parameter<B>*> parameters() {
        std::vector<Parameter<B>*> out;
        for (Linear<B>& l : m_layers)
            for (Parameter<B>* p : l.parameters()) out.push_back(p);
        if (m_options.layer_norm_output)
            for (Parameter<B>* p : m_norm.parameters()) out.push_back(p);
        return out;
    }
    [[nodiscard]] std::int64_t out_features() const { return m_options.sizes.back(); }
    /// The last affine layer (for a head's initial bias).
    [[nodiscard]] Linear<B>& output_layer() { return m_layers.back(); }
    [[nodiscard]] const std::vector<Linear<B>>& layers() const noexcept { return m_layers; }
    [[nodiscard]] const MlpOptions& options() const noexcept { return m_options; }

    /// The MLP without a tape's records (no gradient will flow), as one pass over tiles of
    /// B::row_tile rows: a tile's hidden activations stay in one scratch block in cache,
    /// where the op-by-op path writes each layer's product, its bias and activation and
    /// the normalisation as whole tensors, each a trip through main memory on a large
    /// graph (a sixth of a graph network's pass at 50,000 nodes). Gathered blocks are
    /// multiplied before gathering, as Linear does, and blocks gathered by the same index
    /// (a node's encoded and latent features) are summed into one term first, so each
    /// index is gathered once. The value is the op-by-op path's up to float rounding (its
    /// sums run in another order).
    [[nodiscard]] Var<B> infer(Tape<B>& tape, std::span<const InputBlock<B>> blocks) const {
        using Scalar = typename B::Scalar;
        const Linear<B>& first = m_layers.front();
        const std::int64_t rows = first.check_blocks(blocks);
        const std::int64_t hidden = first.out_features();
        const Scalar* w0 = first.weight().value.data();
        const auto product = [](std::int64_t n, std::int64_t cols, std::int64_t k, const Scalar* x, const Scalar* w, Scalar beta,
                                Scalar* y) {
            B::gemm(Transpose::no, Transpose::no, n, cols, k, Scalar(1), x, k, w, cols, beta, y, cols, 1, 0, 0, 0);
        };
        struct Whole {
            const InputBlock<B>* block;
            std::int64_t first_row;  // of the weight
        };
        struct Gathered {
            const Indices<B>* rows;
            Tensor<B> term;
        };
        std::vector<Whole> whole;
        std::vector<Gathered> gathered;
        std::int64_t offset = 0;
        for (const InputBlock<B>& block : blocks) {
            const std::int64_t width = block.value.dim(1), from = block.value.dim(0);
            if (block.rows == nullptr) {
                whole.push_back({&block, offset});
            } else {
                auto same = std::find_if(gathered.begin(), gathered.end(),
                                         [&](const Gathered& g) { return g.rows == block.rows && g.term.dim(0) == from; });
                const Scalar beta = same == gathered.end() ? Scalar(0) : Scalar(1);
                if (same == gathered.end()) same = gathered.insert(gathered.end(), {block.rows, Tensor<B>::uninitialized(Shape{from, hidden})});
                product(from, hidden, width, block.value.value().data(), w0 + offset * hidden, beta, same->term.data());
            }
            offset += width;
        }
        const std::int64_t out_width = out_features();
        auto out = Tensor<B>::uninitialized(Shape{rows, out_width});
        const std::int64_t tile = B::row_tile > 0 ? std::min<std::int64_t>(B::row_tile, rows) : rows;
        std::int64_t widest = 0;
        for (const Linear<B>& layer : m_layers) widest = std::max(widest, layer.out_features());
        std::array<Tensor<B>, 2> scratch{Tensor<B>::uninitialized(Shape{tile, widest}), Tensor<B>()};
        if (m_layers.size() > 1) scratch[1] = Tensor<B>::uninitialized(Shape{tile, widest});
        for (std::int64_t r0 = 0; r0 < rows; r0 += tile) {
            const std::int64_t n = std::min(tile, rows - r0);
            const Scalar* in = nullptr;
            for (std::size_t i = 0; i < m_layers.size(); ++i) {
                const Linear<B>& layer = m_layers[i];
                const std::int64_t cols = layer.out_features();
                const bool into_out = i + 1 == m_layers.size() && !m_options.layer_norm_output;
                Scalar* y = into_out ? out.data() + r0 * cols : scratch[i % 2].data();
                if (i == 0) {
                    bool written = false;
                    for (const Whole& w : whole) {
                        const std::int64_t width = w.block->value.dim(1);
                        B::prefetch(w.block->value.value().data() + (r0 + n) * width, std::min(tile, rows - r0 - n) * width);
                        product(n, cols, width, w.block->value.value().data() + r0 * width, w0 + w.first_row * cols,
                                written ? Scalar(1) : Scalar(0), y);
                        written = true;
                    }
                    for (const Gathered& g : gathered) {
                        if (written) B::gather_add_rows(y, g.term.data(), g.rows->data() + r0, n, cols);
                        else B::gather_rows(y, g.term.data(), g.rows->data() + r0, n, cols);
                        written = true;
                    }
                } else {
                    product(n, cols, layer.in_features(), in, layer.weight().value.data(), Scalar(0), y);
                }
                const Shape shape{n, cols};
                const Strided3 plan = detail::elementwise_plan(shape, shape, Shape{cols});
                const Scalar* bias = layer.bias().value.data();
                if (fused_relu(i)) {
                    B::template zip<fn::AddRelu>(plan, y, y, bias);
                } else {
                    B::template zip<fn::Add>(plan, y, y, bias);
                    if (activated(i)) B::template map<fn::Tanh>(detail::elementwise_plan(shape, shape, shape), y, y);
                }
                in = y;
            }
            if (m_options.layer_norm_output)
                B::layer_norm(out.data() + r0 * out_width, nullptr, nullptr, in, m_norm.gamma().value.data(), m_norm.beta().value.data(),
                              n, out_width, LayerNorm<B>::eps);
        }
        return tape.constant(std::move(out));
    }

private:
    /// Whether layer i is activated by relu, which its own op then applies (bias and relu
    /// in one pass, rather than two tensors more each).
    [[nodiscard]] bool fused_relu(std::size_t i) const { return m_options.activation == Activation::relu && activated(i); }
    /// Whether layer i's output is activated: every hidden layer's, and the last one's with
    /// activate_output.
    [[nodiscard]] bool activated(std::size_t i) const { return i + 1 < m_layers.size() || m_options.activate_output; }

    /// Everything after the first layer (y: its output, activated when fused_relu(0)).
    [[nodiscard]] Var<B> after_first(Tape<B>& tape, Var<B> y) {
        for (std::size_t i = 0; i < m_layers.size(); ++i) {
            if (i > 0) y = fused_relu(i) ? m_layers[i].relu(tape, y) : m_layers[i](tape, y);
            if (!fused_relu(i) && activated(i)) y = activate(y, m_options.activation);
        }
        return m_options.layer_norm_output ? m_norm(tape, y) : y;
    }

    MlpOptions m_options;
    std::vector<Linear<B>> m_layers;
    LayerNorm<B> m_norm;
};

}  // namespace rlflow::nn
