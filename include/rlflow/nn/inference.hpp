#pragma once
/// \file
/// Frozen host copies of the world model's recurrent modules, for dream rollouts: one
/// MDN-RNN step at a time, without a tape, without allocations after the first step, in
/// float32 on the CPU whatever backend trained the modules.
///
/// A dream step at batch 1 is memory-bound: the LSTM's gate weights (in + 256, 1024) and
/// the MDN head's (256, 3 · dims · K) are about 2.9 MB for a latent of 64, more than one
/// core's L2, so the tape path (`LstmCell` + `MdnHead::sample`) streams them from L3 every
/// step. The frozen copies do less and read less:
/// - weights are stored transposed, (out, in) row-major, so one output is one contiguous
///   dot product;
/// - `FrozenMdnHead::sample` computes all mixture logits but, for every dimension, the mean
///   and log-stddev of the *chosen* component only: 1/K of the means and stddevs, so
///   (dims K + 2 dims) of the head's 3 dims K outputs.
///
/// The draws are the tape path's, in the same order from the same `Rng`
/// (`choose_mixture_component`, then `draw_gaussian`, per row and dimension), so a frozen
/// rollout reproduces `MdnHead::sample` up to float rounding in the dot products.
///
/// A frozen copy does not follow later training: build a new one (or `refresh`) after the
/// modules' weights change. `step` and `sample` reuse scratch buffers, so one frozen copy
/// serves one thread.

#include <rlflow/core/error.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn/layers.hpp>
#include <rlflow/nn/lstm.hpp>
#include <rlflow/nn/mdn.hpp>

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace rlflow::nn {

/// Row-major float32 matrices on the host: a batch is (rows, features).
using HostMatrix = ::Eigen::Matrix<float, ::Eigen::Dynamic, ::Eigen::Dynamic, ::Eigen::RowMajor>;

/// y = x Wᵀ + b on the host, the weight held as (out, in).
class FrozenLinear {
public:
    FrozenLinear() = default;
    template <TensorBackend B>
    explicit FrozenLinear(const Linear<B>& layer) {
        refresh(layer);
    }

    /// Copies `layer`'s current weights.
    template <TensorBackend B>
    void refresh(const Linear<B>& layer) {
        const std::int64_t in = layer.in_features(), out = layer.out_features();
        const auto weight = layer.weight().value.to_host();
        const auto bias = layer.bias().value.to_host();
        m_weight.resize(out, in);
        for (std::int64_t i = 0; i < in; ++i)
            for (std::int64_t o = 0; o < out; ++o) m_weight(o, i) = static_cast<float>(weight[static_cast<std::size_t>(i * out + o)]);
        m_bias.resize(out);
        for (std::int64_t o = 0; o < out; ++o) m_bias[o] = static_cast<float>(bias[static_cast<std::size_t>(o)]);
    }

    /// y (rows, out) = x (rows, in) Wᵀ + b.
    void apply(const HostMatrix& x, HostMatrix& y) const { apply_rows(x, 0, out_features(), y); }

    /// Outputs [first, last) only: y (rows, last - first).
    void apply_rows(const HostMatrix& x, std::int64_t first, std::int64_t last, HostMatrix& y) const {
        RLFLOW_EXPECTS(x.cols() == in_features(), shape_error,
                       "frozen linear takes " + std::to_string(in_features()) + " features, got " + std::to_string(x.cols()));
        RLFLOW_EXPECTS(0 <= first && first <= last && last <= out_features(), precondition_error,
                       "frozen linear outputs [" + std::to_string(first) + ", " + std::to_string(last) + ") of "
                           + std::to_string(out_features()));
        y.resize(x.rows(), last - first);
        y.noalias() = x * m_weight.middleRows(first, last - first).transpose();
        y.rowwise() += m_bias.segment(first, last - first).transpose();
    }

    /// Output `o` for one input row (in floats, in_features of them).
    [[nodiscard]] float output(std::int64_t o, const ::Eigen::Ref<const ::Eigen::RowVectorXf>& x) const {
        return m_weight.row(o).dot(x) + m_bias[o];
    }

    [[nodiscard]] std::int64_t in_features() const noexcept { return m_weight.cols(); }
    [[nodiscard]] std::int64_t out_features() const noexcept { return m_weight.rows(); }

private:
    HostMatrix m_weight;
    ::Eigen::VectorXf m_bias;
};

/// `Mlp` frozen (without an output layer norm): the same layers and activations.
class FrozenMlp {
public:
    FrozenMlp() = default;
    template <TensorBackend B>
    explicit FrozenMlp(const Mlp<B>& mlp) {
        refresh(mlp);
    }

    template <TensorBackend B>
    void refresh(const Mlp<B>& mlp) {
        RLFLOW_EXPECTS(!mlp.options().layer_norm_output, precondition_error, "a frozen mlp has no output layer norm");
        m_layers.clear();
        for (const Linear<B>& layer : mlp.layers()) m_layers.emplace_back(layer);
        m_activation = mlp.options().activation;
        m_activate_output = mlp.options().activate_output;
        m_buffers.resize(m_layers.size());
    }

    /// y (rows, out) from x (rows, in); `y` must not be `x`.
    void apply(const HostMatrix& x, HostMatrix& y) {
        const HostMatrix* in = &x;
        for (std::size_t i = 0; i < m_layers.size(); ++i) {
            HostMatrix& out = i + 1 == m_layers.size() ? y : m_buffers[i];
            m_layers[i].apply(*in, out);
            if (i + 1 < m_layers.size() || m_activate_output) {
                if (m_activation == Activation::relu)
                    out = out.cwiseMax(0.0f);
                else
                    out = out.array().tanh().matrix();
            }
            in = &out;
        }
    }

    [[nodiscard]] std::int64_t in_features() const noexcept { return m_layers.front().in_features(); }
    [[nodiscard]] std::int64_t out_features() const noexcept { return m_layers.back().out_features(); }

private:
    std::vector<FrozenLinear> m_layers;
    Activation m_activation = Activation::relu;
    bool m_activate_output = false;
    std::vector<HostMatrix> m_buffers;
};

/// `LstmCell` frozen: gate order i, f, g, o as in the tape path.
class FrozenLstmCell {
public:
    FrozenLstmCell() = default;
    template <TensorBackend B>
    explicit FrozenLstmCell(const LstmCell<B>& cell) {
        refresh(cell);
    }

    template <TensorBackend B>
    void refresh(const LstmCell<B>& cell) {
        m_hidden = cell.hidden_size();
        m_gates.refresh(cell.gates());
    }

    /// Advances the state (h, c), each (batch, hidden), by one step on x (batch, input).
    void step(const HostMatrix& x, HostMatrix& h, HostMatrix& c) {
        RLFLOW_EXPECTS(x.cols() == input_size() && h.rows() == x.rows() && c.rows() == x.rows() && h.cols() == m_hidden
                           && c.cols() == m_hidden,
                       shape_error,
                       "frozen lstm takes x (batch, " + std::to_string(input_size()) + ") and h, c (batch, " + std::to_string(m_hidden)
                           + "), got x (" + std::to_string(x.rows()) + ", " + std::to_string(x.cols()) + "), h (" + std::to_string(h.rows())
                           + ", " + std::to_string(h.cols()) + "), c (" + std::to_string(c.rows()) + ", " + std::to_string(c.cols())
                           + ")");
        m_input.resize(x.rows(), x.cols() + m_hidden);
        m_input.leftCols(x.cols()) = x;
        m_input.rightCols(m_hidden) = h;
        m_gates.apply(m_input, m_preactivations);
        // Eigen's vectorised logistic and tanh, over whole gate blocks.
        const std::int64_t n = m_hidden;
        const auto gates = m_preactivations.array();
        c.array() = gates.middleCols(n, n).logistic() * c.array() + gates.leftCols(n).logistic() * gates.middleCols(2 * n, n).tanh();
        h.array() = gates.rightCols(n).logistic() * c.array().tanh();
    }

    [[nodiscard]] std::int64_t input_size() const noexcept { return m_gates.in_features() - m_hidden; }
    [[nodiscard]] std::int64_t hidden_size() const noexcept { return m_hidden; }

private:
    std::int64_t m_hidden = 0;
    FrozenLinear m_gates;
    HostMatrix m_input;
    HostMatrix m_preactivations;
};

/// `MdnHead` frozen, for sampling: the outputs' layout is the head's ([logits | means |
/// log-stddevs], each dims x K with index d K + k).
class FrozenMdnHead {
public:
    FrozenMdnHead() = default;
    template <TensorBackend B>
    explicit FrozenMdnHead(const MdnHead<B>& head) {
        refresh(head);
    }

    template <TensorBackend B>
    void refresh(const MdnHead<B>& head) {
        m_dims = head.output_dims();
        m_components = head.components();
        m_linear.refresh(head.linear());
    }

    /// One draw per (row, dimension) from the mixtures predicted for `hidden` (batch,
    /// hidden_size), at temperature τ ≥ 0, into `out` (batch, dims): the same distribution
    /// and the same random draws as `MdnHead::sample`.
    void sample(const HostMatrix& hidden, double temperature, Rng& rng, HostMatrix& out) {
        RLFLOW_EXPECTS(temperature >= 0 && std::isfinite(temperature), precondition_error,
                       "mdn sampling temperature must be finite and >= 0, got " + std::to_string(temperature));
        const std::int64_t block = m_dims * m_components;
        m_linear.apply_rows(hidden, 0, block, m_logits);
        out.resize(hidden.rows(), m_dims);
        for (std::int64_t r = 0; r < hidden.rows(); ++r) {
            const auto h = hidden.row(r);
            for (std::int64_t d = 0; d < m_dims; ++d) {
                const std::int64_t first = d * m_components;
                const auto k = static_cast<std::int64_t>(
                    choose_mixture_component(m_logits.row(r).data() + first, m_components, temperature, rng));
                const double mean = m_linear.output(block + first + k, h);
                const double log_stddev = bounded_log_stddev(m_linear.output(2 * block + first + k, h));
                out(r, d) = static_cast<float>(draw_gaussian(mean, log_stddev, temperature, rng));
            }
        }
    }

    [[nodiscard]] std::int64_t hidden_size() const noexcept { return m_linear.in_features(); }
    [[nodiscard]] std::int64_t output_dims() const noexcept { return m_dims; }
    [[nodiscard]] std::int64_t components() const noexcept { return m_components; }

private:
    std::int64_t m_dims = 0;
    std::int64_t m_components = 0;
    FrozenLinear m_linear;
    HostMatrix m_logits;
};

}  // namespace rlflow::nn
