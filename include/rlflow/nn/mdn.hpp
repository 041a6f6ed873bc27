#pragma once
/// \file
/// `MdnHead`: the mixture density network head of the MDN-RNN world model (Bishop 1994;
/// "World Models", Ha & Schmidhuber 2018; RLFlow thesis §4.3.1, fig. 4.1). From a hidden
/// state it predicts, for every output dimension d independently, a mixture of K
/// one-dimensional Gaussians:
///
///     p(y_d | h) = Σ_k π_dk N(y_d; μ_dk, σ_dk²),    π_d = softmax(logits_d)
///
/// Parameterisation: one set of K mixture weights *per output dimension*, as in World
/// Models, whose recipe the thesis follows ("all other hyperparameters ... the same as
/// those used by Ha and Schmidhuber", §5.3): a diagonal model whose dimensions are
/// separate mixtures, so a dimension's modes are not tied to another's. K = 8 (RLFlow
/// thesis §5.3).
///
/// Log-stddevs are bounded smoothly to [min_log_stddev, max_log_stddev]:
///
///     log σ = m + r tanh((u - m) / r),   m, r: the midpoint and half-width of the range
///
/// with u the raw network output. Without a floor, σ → 0 on a repeated target drives the
/// NLL to -∞ and its gradients ((y - μ)/σ²) to overflow in float32; without a ceiling, an
/// early bad step can make every component flat. The tanh keeps a non-zero gradient
/// everywhere (a hard clamp would freeze an output that strays outside), and has slope 1 at
/// the midpoint.

#include <rlflow/core/error.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn/layers.hpp>
#include <rlflow/nn/ops.hpp>
#include <rlflow/nn/tape.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

namespace rlflow::nn {

/// Mixture components per output dimension (the RLFlow thesis's MDN: 8 Gaussians).
inline constexpr std::int64_t default_mdn_components = 8;
/// The range of log σ: σ in [e^-5, e^2] ≈ [0.0067, 7.4], ample for latents of unit scale.
inline constexpr double mdn_min_log_stddev = -5.0;
inline constexpr double mdn_max_log_stddev = 2.0;
/// The midpoint m and half-width r of that range, for log σ = m + r tanh((u - m) / r).
inline constexpr double mdn_log_stddev_midpoint = (mdn_min_log_stddev + mdn_max_log_stddev) / 2;
inline constexpr double mdn_log_stddev_half_width = (mdn_max_log_stddev - mdn_min_log_stddev) / 2;

/// log σ from a raw head output u, bounded as above (the scalar form of `MdnHead::split`).
[[nodiscard]] inline double bounded_log_stddev(double raw) {
    return mdn_log_stddev_midpoint + mdn_log_stddev_half_width * std::tanh((raw - mdn_log_stddev_midpoint) / mdn_log_stddev_half_width);
}
/// The gain of the head's orthogonal initialisation: outputs of the scale of the hidden state.
inline constexpr double mdn_weight_gain = 1.0;

/// log Σ_k exp(x_k) over the last axis, kept with size 1. The row maximum m is subtracted
/// first and added back (log Σ exp(x) = m + log Σ exp(x - m)), so no exp overflows; m is a
/// constant on the tape, which is exact: the result does not depend on the choice of m, so
/// the gradient (softmax(x)) is the same. Each row needs one finite entry.
template <TensorBackend B>
[[nodiscard]] Var<B> logsumexp(Var<B> x) {
    const Tensor<B>& xv = x.value();  // read before constant() below grows the tape
    const std::int64_t cols = xv.dim(-1), rows = xv.numel() / std::max<std::int64_t>(1, cols);
    RLFLOW_EXPECTS(cols > 0, shape_error, "logsumexp of an empty last axis: " + xv.shape().to_string());
    Shape reduced = xv.shape();
    reduced[reduced.rank() - 1] = 1;
    Tensor<B> row_max(reduced);
    B::row_max(row_max.data(), xv.data(), rows, cols);
    const Var<B> shift = x.tape().constant(std::move(row_max));
    return add(shift, log(sum(exp(sub(x, shift)), -1)));
}

/// The mixture parameters for a batch: each (batch, dims, K).
template <TensorBackend B>
struct MdnParams {
    /// Unnormalised log mixture weights; π = softmax over the last axis.
    Var<B> logits;
    Var<B> means;
    /// log σ, already bounded to [mdn_min_log_stddev, mdn_max_log_stddev].
    Var<B> log_stddevs;
};

/// An index k ~ softmax(logits / τ) over `count` logits (the largest logit when τ = 0), by
/// inverse CDF over weights exp((l_k - max l) / τ), which are in (0, 1] and cannot
/// overflow. Draws one uniform when τ > 0, none when τ = 0.
template <class Scalar>
[[nodiscard]] std::size_t choose_mixture_component(const Scalar* logits, std::int64_t count, double temperature, Rng& rng) {
    std::size_t best = 0;
    for (std::size_t k = 1; k < static_cast<std::size_t>(count); ++k)
        if (logits[k] > logits[best]) best = k;
    if (temperature == 0) return best;
    // On the stack for the usual K, so that a rollout step allocates nothing per draw.
    constexpr std::int64_t on_stack = 64;
    std::array<double, on_stack> weights;
    std::vector<double> spill;
    double* w = weights.data();
    if (count > on_stack) {
        spill.resize(static_cast<std::size_t>(count));
        w = spill.data();
    }
    double total = 0;
    for (std::size_t k = 0; k < static_cast<std::size_t>(count); ++k)
        total += w[k] = std::exp((double(logits[k]) - double(logits[best])) / temperature);
    double u = rng.uniform() * total;
    for (std::size_t k = 0; k < static_cast<std::size_t>(count); ++k) {
        if (u < w[k]) return k;
        u -= w[k];
    }
    return best;  // u landed on rounding error past the last weight
}

/// μ + σ √τ ε with ε ~ N(0, 1) and σ = exp(log_stddev); μ itself (no draw) when τ = 0.
[[nodiscard]] inline double draw_gaussian(double mean, double log_stddev, double temperature, Rng& rng) {
    return temperature > 0 ? mean + std::exp(log_stddev) * std::sqrt(temperature) * rng.normal() : mean;
}

/// A linear map from a hidden state to per-dimension Gaussian mixtures.
template <TensorBackend B>
class MdnHead {
public:
    MdnHead() = default;
    /// Parameters are named `name + ".weight"` and `name + ".bias"`; the linear output holds
    /// [logits | means | log-stddevs], each block (dims x K) with index d K + k.
    MdnHead(const std::string& name, std::int64_t hidden_size, std::int64_t output_dims, Rng& rng,
            std::int64_t components = default_mdn_components)
        : m_dims(output_dims), m_components(components),
          m_linear(name, hidden_size, 3 * output_dims * components, rng, mdn_weight_gain) {
        RLFLOW_EXPECTS(hidden_size > 0 && output_dims > 0 && components > 0, precondition_error,
                       "mdn head '" + name + "' needs positive sizes, got hidden " + std::to_string(hidden_size) + ", dims "
                           + std::to_string(output_dims) + ", components " + std::to_string(components));
    }

    /// The mixtures predicted from `hidden` (batch, hidden_size).
    [[nodiscard]] MdnParams<B> operator()(Tape<B>& tape, Var<B> hidden) {
        RLFLOW_EXPECTS(hidden.shape().rank() == 2, shape_error, "mdn head takes (batch, hidden), got " + hidden.shape().to_string());
        return split(tape, m_linear(tape, hidden), m_dims, m_components);
    }

    /// Splits raw outputs (batch, 3 dims K), laid out as above, into mixture parameters,
    /// bounding the log-stddevs.
    [[nodiscard]] static MdnParams<B> split(Tape<B>& tape, Var<B> raw, std::int64_t dims, std::int64_t components) {
        const std::int64_t block = dims * components;
        RLFLOW_EXPECTS(raw.shape().rank() == 2 && raw.dim(1) == 3 * block, shape_error,
                       "mdn outputs for " + std::to_string(dims) + " dims x " + std::to_string(components) + " components are (batch, "
                           + std::to_string(3 * block) + "), got " + raw.shape().to_string());
        const Shape shape{raw.dim(0), dims, components};
        const auto part = [&](std::int64_t i) { return reshape(slice(raw, 1, i * block, (i + 1) * block), shape); };
        using Scalar = typename B::Scalar;
        const Var<B> centre = tape.constant(Tensor<B>::scalar(static_cast<Scalar>(mdn_log_stddev_midpoint)));
        const Var<B> squashed = tanh(scale(sub(part(2), centre), static_cast<Scalar>(1 / mdn_log_stddev_half_width)));
        return {part(0), part(1), add(scale(squashed, static_cast<Scalar>(mdn_log_stddev_half_width)), centre)};
    }

    /// -log p(target), summed over dimensions and averaged over the batch; target is
    /// (batch, dims). Per component, log π_dk + log N(y_d; μ_dk, σ_dk) with
    /// log N = -((y - μ)/σ)²/2 - log σ - log(2π)/2, then a stable logsumexp over k. The
    /// world-model loss divides this by dims (the RLFlow thesis's world-model loss: the
    /// mixture NLL over the latent size).
    [[nodiscard]] static Var<B> negative_log_likelihood(Tape<B>& tape, const MdnParams<B>& params, const Tensor<B>& target) {
        // A copy: a reference into the tape dangles once the constants below grow it.
        const Shape shape = params.means.shape();
        RLFLOW_EXPECTS(shape.rank() == 3 && params.logits.shape() == shape && params.log_stddevs.shape() == shape, shape_error,
                       "mdn parameters must share a (batch, dims, K) shape: logits " + params.logits.shape().to_string() + ", means "
                           + shape.to_string() + ", log-stddevs " + params.log_stddevs.shape().to_string());
        RLFLOW_EXPECTS(target.shape() == (Shape{shape[0], shape[1]}), shape_error,
                       "mdn target " + target.shape().to_string() + " for mixtures " + shape.to_string());
        using Scalar = typename B::Scalar;
        const Var<B> y = tape.constant(Tensor<B>(target).reshaped(Shape{shape[0], shape[1], 1}));
        const Var<B> standardised = mul(sub(y, params.means), exp(scale(params.log_stddevs, Scalar(-1))));
        const Var<B> log_normaliser = tape.constant(Tensor<B>::scalar(static_cast<Scalar>(0.5 * std::log(2 * std::numbers::pi))));
        const Var<B> log_density = sub(sub(scale(square(standardised), Scalar(-0.5)), params.log_stddevs), log_normaliser);
        const Var<B> log_likelihood = logsumexp(add(log_softmax(params.logits), log_density));
        return scale(sum(log_likelihood), static_cast<Scalar>(-1.0 / static_cast<double>(shape[0])));
    }

    /// One draw per (batch row, dimension), on the host, at temperature τ ≥ 0 (Ha &
    /// Schmidhuber; thesis §4.3.1): the component k ~ softmax(logits / τ), then
    /// y = μ_k + σ_k √τ ε with ε ~ N(0, 1). τ = 1 samples the model; τ → 0 approaches the
    /// mean of the most likely component, which τ = 0 returns. Returns (batch, dims).
    [[nodiscard]] static Tensor<B> sample(const MdnParams<B>& params, double temperature, Rng& rng) {
        RLFLOW_EXPECTS(temperature >= 0 && std::isfinite(temperature), precondition_error,
                       "mdn sampling temperature must be finite and >= 0, got " + std::to_string(temperature));
        const Shape shape = params.means.shape();
        const std::int64_t components = shape[2];
        const auto logits = params.logits.value().to_host();
        const auto means = params.means.value().to_host();
        const auto log_stddevs = params.log_stddevs.value().to_host();
        std::vector<typename B::Scalar> out(static_cast<std::size_t>(shape[0] * shape[1]));
        for (std::size_t row = 0; row < out.size(); ++row) {
            const std::size_t first = row * static_cast<std::size_t>(components);
            const std::size_t k = first + choose_mixture_component(&logits[first], components, temperature, rng);
            out[row] = static_cast<typename B::Scalar>(draw_gaussian(double(means[k]), double(log_stddevs[k]), temperature, rng));
        }
        return Tensor<B>::from_host(Shape{shape[0], shape[1]}, out);
    }

    [[nodiscard]] std::int64_t output_dims() const noexcept { return m_dims; }
    [[nodiscard]] std::int64_t components() const noexcept { return m_components; }
    [[nodiscard]] Linear<B>& linear() noexcept { return m_linear; }
    [[nodiscard]] const Linear<B>& linear() const noexcept { return m_linear; }
    [[nodiscard]] std::vector<Parameter<B>*> parameters() { return m_linear.parameters(); }

private:
    std::int64_t m_dims = 0;
    std::int64_t m_components = 0;
    Linear<B> m_linear;
};

}  // namespace rlflow::nn
