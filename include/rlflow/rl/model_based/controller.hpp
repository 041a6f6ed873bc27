#pragma once
/// \file
/// C, the model-based agent's controller (RLFlow thesis §4.4; "World Models"): a policy
/// and value over [z, h], V's latent of the graph and M's recurrent state, trained by PPO
/// (ppo.hpp) in the dream only. It chooses the xfer; the location is the xfer's best
/// one-step-gain location (world_model.hpp says why). As the model-free agent's xfer
/// head, its logits add a small MLP of each xfer's best one-step gain: real gains in the
/// real environment, M's predicted ones in the dream. NO-OP starts with the same prior.
///
/// Beside that MLP, the logits add β·gain with β = softplus(a learned scalar) > 0, starting
/// at ControllerOptions::gain_prior: all else equal, a rewrite that earns less is never
/// preferred. Without it C ignored the gain: on inception-v3, trained in a dream whose
/// states mostly had positive fold gains, it went on folding batch norms at scaled gains
/// down to -4.4 while M predicted the negative rewards (the trained agent's real episode ended at
/// 1.019 of the start cost, greedy's at 0.985). The untrained C is a soft greedy policy.
///
/// The [z, h] term is bounded: A·tanh(f(z, h) / A), A = ControllerOptions::state_logit_bound.
/// C learns in a dream that only knows the states M saw; an unbounded term grew to logits
/// of 10 for one rewrite (a preference learned where its gains were positive) and carried
/// it into real states where that rewrite's gain was -3. Bounded, what C learns in the
/// dream reorders rewrites whose gains are close, and the gain decides between rewrites
/// far apart (with β near 1, more than 2A apart in scaled gain).
///
/// `FrozenController` is C on the host for acting (dream rollouts and the real agent):
/// the same outputs up to float rounding, no tape.

#include <rlflow/core/error.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn/distributions.hpp>
#include <rlflow/nn/functions.hpp>
#include <rlflow/nn/inference.hpp>
#include <rlflow/nn/layers.hpp>
#include <rlflow/nn/ops.hpp>
#include <rlflow/nn/tape.hpp>
#include <rlflow/rl/env/env.hpp>
#include <rlflow/rl/model_free/policy.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace rlflow::rl {

/// What C acts on: z, h, each xfer's scaled best one-step gain (N), and the xfer mask
/// (N + 1, NO-OP last).
struct DreamInput {
    std::vector<float> z;
    std::vector<float> h;
    std::vector<float> gains;
    std::vector<std::uint8_t> mask;
};

/// β's initial value when rewards are measured latencies (rlflow train --reward
/// ort-latency or gpu-latency). The gains C reads are still the cost model's one-step
/// gains, and the measured reward is there because they mislead: at β = 1 a rewrite the
/// cost model prices at a scaled gain of -3 starts 3 logits behind, more than the state
/// term's bound can make up, which argues against the convolution merges that pay at ONNX
/// Runtime's level all (they are priced as losses op by op). At 0.25 the gain orders
/// rewrites whose prices are far apart and leaves the rest to what C learns. (Measured on
/// the resnext50s at 300 real steps: no change beyond the noise; docs/results.md §7.)
inline constexpr double measured_reward_gain_prior = 0.25;

/// Sizes of the controller.
struct ControllerOptions {
    std::int64_t hidden = 64;
    std::int64_t gain_hidden = 16;
    /// β's initial value: the logit per unit of scaled gain (file comment).
    double gain_prior = 1.0;
    /// A, the bound of the [z, h] term of the logits (file comment).
    double state_logit_bound = 1.0;
    /// The NO-OP logit's initial bias. 0: NO-OP starts as a rewrite that earns nothing, so
    /// the untrained C's most probable action is greedy's, stopping included. The
    /// model-free agent's -4.6 (PolicyOptions::noop_logit) kept a C that learned the gain
    /// term folding at scaled gains of -2 to the step limit on inception-v3.
    double noop_logit = 0.0;
    std::uint64_t seed = 0;
    friend bool operator==(const ControllerOptions&, const ControllerOptions&) = default;
};

/// A controller pass over a batch: keep it until the backward pass is done.
template <nn::TensorBackend B>
struct ControllerPass {
    nn::Var<B> log_prob;
    nn::Var<B> entropy;
    nn::Var<B> value;
};

template <nn::TensorBackend B>
class Controller {
public:
    using Scalar = typename B::Scalar;
    using Input = DreamInput;

    Controller(std::uint32_t num_xfers, std::int64_t latent, std::int64_t lstm_hidden, ControllerOptions options = {})
        : m_num_xfers(num_xfers), m_latent(latent), m_lstm_hidden(lstm_hidden), m_options(options) {
        RLFLOW_EXPECTS(num_xfers > 0 && latent > 0 && lstm_hidden > 0, precondition_error, "Controller needs xfers, z and h");
        Rng rng(options.seed);
        const std::int64_t in = latent + lstm_hidden;
        m_xfer = nn::Mlp<B>("controller.xfer", {.sizes = {in, options.hidden, num_xfers + std::int64_t{1}}, .output_gain = 0.01}, rng);
        set_output_bias(m_xfer, num_xfers, options.noop_logit);
        m_gain = nn::Mlp<B>("controller.gain", {.sizes = {1, options.gain_hidden, 1}, .output_gain = 0.01}, rng);
        m_value = nn::Mlp<B>("controller.value", {.sizes = {in, options.hidden, 1}, .output_gain = 1.0}, rng);
        RLFLOW_EXPECTS(options.gain_prior > 0 && options.state_logit_bound > 0, precondition_error,
                       "ControllerOptions: gain_prior and state_logit_bound must be positive");
        const Scalar slope = static_cast<Scalar>(std::log(std::expm1(options.gain_prior)));  // softplus⁻¹
        m_slope = nn::Parameter<B>("controller.gain_slope", nn::Tensor<B>::from_host(Shape{1, 1}, std::span<const Scalar>(&slope, 1)));
    }

    [[nodiscard]] std::uint32_t num_xfers() const noexcept { return m_num_xfers; }
    [[nodiscard]] std::int64_t latent() const noexcept { return m_latent; }
    [[nodiscard]] std::int64_t lstm_hidden() const noexcept { return m_lstm_hidden; }
    [[nodiscard]] const ControllerOptions& options() const noexcept { return m_options; }
    [[nodiscard]] std::unique_ptr<Controller> replica() const {
        return std::make_unique<Controller>(m_num_xfers, m_latent, m_lstm_hidden, m_options);
    }
    [[nodiscard]] std::vector<nn::Parameter<B>*> parameters() {
        std::vector<nn::Parameter<B>*> out;
        for (nn::Mlp<B>* m : {&m_xfer, &m_gain, &m_value})
            for (nn::Parameter<B>* p : m->parameters()) out.push_back(p);
        out.push_back(&m_slope);
        return out;
    }
    [[nodiscard]] const nn::Mlp<B>& xfer_head() const noexcept { return m_xfer; }
    [[nodiscard]] const nn::Mlp<B>& gain_head() const noexcept { return m_gain; }
    [[nodiscard]] const nn::Mlp<B>& value_head() const noexcept { return m_value; }
    /// β, the logit per unit of scaled gain.
    [[nodiscard]] double gain_slope() const { return nn::fn::Softplus::apply(double(m_slope.value.to_host()[0])); }

    /// Log-probabilities, entropies and values of `actions` (their locations ignored) at `inputs`.
    [[nodiscard]] ControllerPass<B> evaluate(nn::Tape<B>& tape, std::span<const DreamInput* const> inputs, std::span<const Action> actions) {
        RLFLOW_EXPECTS(inputs.size() == actions.size() && !inputs.empty(), precondition_error,
                       "Controller::evaluate needs one action per input");
        const auto rows = static_cast<std::int64_t>(inputs.size());
        const std::int64_t width = m_num_xfers + std::int64_t{1};
        std::vector<Scalar> zh, gains;
        std::vector<std::uint8_t> mask;
        for (const DreamInput* in : inputs) {
            RLFLOW_EXPECTS(std::ssize(in->z) == m_latent && std::ssize(in->h) == m_lstm_hidden && in->gains.size() == m_num_xfers
                               && std::ssize(in->mask) == width,
                           precondition_error, "Controller: an input of the wrong shape");
            zh.insert(zh.end(), in->z.begin(), in->z.end());
            zh.insert(zh.end(), in->h.begin(), in->h.end());
            gains.insert(gains.end(), in->gains.begin(), in->gains.end());
            gains.push_back(Scalar(0));  // NO-OP's
            mask.insert(mask.end(), in->mask.begin(), in->mask.end());
        }
        const nn::Var<B> x = tape.constant(nn::Tensor<B>::from_host(Shape{rows, m_latent + m_lstm_hidden}, zh));
        const nn::Var<B> g = tape.constant(nn::Tensor<B>::from_host(Shape{rows * width, 1}, gains));
        const nn::Var<B> gain_terms = add(m_gain(tape, g), matmul(g, softplus(tape.parameter(m_slope))));
        const double bound = m_options.state_logit_bound;
        const nn::Var<B> state_terms = scale(tanh(scale(m_xfer(tape, x), Scalar(1 / bound))), Scalar(bound));
        const nn::Var<B> logits = add(state_terms, reshape(gain_terms, Shape{rows, width}));
        const nn::MaskedCategorical<B> dist(logits, mask);
        std::vector<std::int32_t> chosen;
        for (const Action& a : actions) chosen.push_back(static_cast<std::int32_t>(a.xfer));
        return {dist.log_prob(chosen), dist.entropy(), reshape(m_value(tape, x), Shape{rows})};
    }

private:
    std::uint32_t m_num_xfers;
    std::int64_t m_latent;
    std::int64_t m_lstm_hidden;
    ControllerOptions m_options;
    nn::Mlp<B> m_xfer;
    nn::Mlp<B> m_gain;
    nn::Mlp<B> m_value;
    nn::Parameter<B> m_slope;
};

/// softmax(logits) over the entries `mask` allows, 0 elsewhere; at least one must be allowed.
[[nodiscard]] inline std::vector<double> masked_probabilities(std::span<const float> logits, std::span<const std::uint8_t> mask) {
    double top = -std::numeric_limits<double>::infinity();
    for (std::size_t a = 0; a < logits.size(); ++a)
        if (mask[a] != 0) top = std::max(top, static_cast<double>(logits[a]));
    RLFLOW_EXPECTS(std::isfinite(top), precondition_error, "masked_probabilities: no valid action");
    std::vector<double> p(logits.size(), 0.0);
    double total = 0;
    for (std::size_t a = 0; a < logits.size(); ++a)
        if (mask[a] != 0) total += p[a] = std::exp(static_cast<double>(logits[a]) - top);
    for (double& x : p) x /= total;
    return p;
}

/// An action drawn from masked logits on the host, and its log-probability.
struct HostChoice {
    std::uint32_t action = 0;
    double log_prob = 0;
};

/// Draws from softmax(logits) over the entries `mask` allows (inverse CDF, one uniform), or
/// takes the most probable one (the first on ties) when `greedy`.
[[nodiscard]] inline HostChoice choose_masked(std::span<const float> logits, std::span<const std::uint8_t> mask, Rng& rng, bool greedy) {
    double top = -std::numeric_limits<double>::infinity();
    std::uint32_t best = 0;
    for (std::size_t a = 0; a < logits.size(); ++a)
        if (mask[a] != 0 && logits[a] > top) {
            top = logits[a];
            best = static_cast<std::uint32_t>(a);
        }
    RLFLOW_EXPECTS(std::isfinite(top), precondition_error, "choose_masked: no valid action");
    double total = 0;
    for (std::size_t a = 0; a < logits.size(); ++a)
        if (mask[a] != 0) total += std::exp(double(logits[a]) - top);
    const double log_total = top + std::log(total);
    std::uint32_t pick = best;
    if (!greedy) {
        double u = rng.uniform() * total;
        for (std::size_t a = 0; a < logits.size(); ++a) {
            if (mask[a] == 0) continue;
            const double w = std::exp(double(logits[a]) - top);
            if (u < w) {
                pick = static_cast<std::uint32_t>(a);
                break;
            }
            u -= w;
        }
    }
    return {pick, double(logits[pick]) - log_total};
}

/// C on the host.
class FrozenController {
public:
    FrozenController() = default;
    template <nn::TensorBackend B>
    explicit FrozenController(const Controller<B>& c) {
        refresh(c);
    }
    template <nn::TensorBackend B>
    void refresh(const Controller<B>& c) {
        m_num_xfers = c.num_xfers();
        m_xfer.refresh(c.xfer_head());
        m_gain.refresh(c.gain_head());
        m_value.refresh(c.value_head());
        m_slope = static_cast<float>(c.gain_slope());
        m_bound = static_cast<float>(c.options().state_logit_bound);
    }

    /// The xfer logits (rows, N + 1) for [z, h] rows `zh` and scaled gains (rows, N).
    void logits(const nn::HostMatrix& zh, const nn::HostMatrix& gains, nn::HostMatrix& out) {
        m_xfer.apply(zh, out);
        out = (out.array() / m_bound).tanh().matrix() * m_bound;
        const auto width = static_cast<std::int64_t>(m_num_xfers) + 1;
        m_column.resize(zh.rows() * width, 1);
        for (std::int64_t r = 0; r < zh.rows(); ++r)
            for (std::int64_t x = 0; x < width; ++x) m_column(r * width + x, 0) = x < m_num_xfers ? gains(r, x) : 0.0f;
        m_gain.apply(m_column, m_terms);
        for (std::int64_t r = 0; r < zh.rows(); ++r)
            for (std::int64_t x = 0; x < width; ++x) out(r, x) += m_terms(r * width + x, 0) + m_slope * m_column(r * width + x, 0);
    }
    /// V(zh) per row.
    void values(const nn::HostMatrix& zh, nn::HostMatrix& out) { m_value.apply(zh, out); }

private:
    std::int64_t m_num_xfers = 0;
    nn::FrozenMlp m_xfer;
    nn::FrozenMlp m_gain;
    nn::FrozenMlp m_value;
    float m_slope = 0;
    float m_bound = 1;
    nn::HostMatrix m_column;
    nn::HostMatrix m_terms;
};

}  // namespace rlflow::rl
