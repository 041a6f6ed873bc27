#pragma once
/// \file
/// Optimisation: `Adam<B>` (Kingma & Ba, "Adam: A Method for Stochastic Optimization",
/// ICLR 2015, Algorithm 1) with optional decoupled weight decay (Loshchilov & Hutter,
/// "Decoupled Weight Decay Regularization", ICLR 2019), a `LearningRateSchedule`, and
/// global gradient-norm clipping (`clip_grad_norm`).
///
/// Everything runs on backend B's primitives (element-wise maps and zips with broadcast
/// scalars, row reductions); only one scalar per parameter comes back to the host.
///
/// A step never leaves a model half-updated: the new moments and weights of every
/// parameter are computed aside and checked to be finite first. If a gradient or a result
/// is NaN or infinite, `step` throws `training_error` naming the parameter, and no weight,
/// moment or step count has changed.

#include <rlflow/core/error.hpp>
#include <rlflow/nn/detail/optim_functions.hpp>
#include <rlflow/nn/functions.hpp>
#include <rlflow/nn/ops.hpp>
#include <rlflow/nn/tape.hpp>
#include <rlflow/nn/tensor.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace rlflow::nn {

/// A learning rate as a function of the number of steps already taken: constant, or
/// decaying from `initial` to a floor over `steps` steps (linearly or along a half
/// cosine), and staying at the floor after.
class LearningRateSchedule {
public:
    enum class Kind : std::uint8_t { constant, linear, cosine };

    /// `rate` at every step.
    [[nodiscard]] static LearningRateSchedule constant(double rate) { return {Kind::constant, rate, rate, 1}; }
    /// initial + (floor - initial) t / steps, then floor.
    [[nodiscard]] static LearningRateSchedule linear(double initial, double floor, std::int64_t steps) {
        return {Kind::linear, initial, floor, steps};
    }
    /// floor + (initial - floor) (1 + cos(pi t / steps)) / 2, then floor (Loshchilov & Hutter,
    /// "SGDR", ICLR 2017, eq. 5, without restarts).
    [[nodiscard]] static LearningRateSchedule cosine(double initial, double floor, std::int64_t steps) {
        return {Kind::cosine, initial, floor, steps};
    }

    /// The rate of the update that follows `step` earlier updates.
    [[nodiscard]] double at(std::int64_t step) const noexcept {
        const double progress = static_cast<double>(std::clamp<std::int64_t>(step, 0, m_steps)) / static_cast<double>(m_steps);
        switch (m_kind) {
        case Kind::linear: return m_initial + (m_floor - m_initial) * progress;
        case Kind::cosine: return m_floor + (m_initial - m_floor) * (1 + std::cos(std::numbers::pi * progress)) / 2;
        case Kind::constant: break;
        }
        return m_initial;
    }
    [[nodiscard]] Kind kind() const noexcept { return m_kind; }

private:
    LearningRateSchedule(Kind kind, double initial, double floor, std::int64_t steps)
        : m_kind(kind), m_initial(initial), m_floor(floor), m_steps(steps) {
        RLFLOW_EXPECTS(std::isfinite(initial) && initial >= 0 && std::isfinite(floor) && floor >= 0, precondition_error,
                       "learning rates must be finite and non-negative, got " + std::to_string(initial) + " and "
                           + std::to_string(floor));
        RLFLOW_EXPECTS(steps > 0, precondition_error, "a learning-rate schedule needs steps > 0, got " + std::to_string(steps));
    }

    Kind m_kind;
    double m_initial;
    double m_floor;
    std::int64_t m_steps;
};

/// Adam's settings; the defaults are the paper's.
struct AdamOptions {
    LearningRateSchedule learning_rate = LearningRateSchedule::constant(1e-3);
    double beta1 = 0.9;
    double beta2 = 0.999;
    double epsilon = 1e-8;
    /// Decoupled weight decay lambda (AdamW): each step also subtracts rate * lambda * theta,
    /// apart from the adaptive update. 0 turns it off.
    double weight_decay = 0;
};

namespace detail {

template <TensorBackend B>
[[nodiscard]] Tensor<B> scaled(const Tensor<B>& t, double factor) {
    return zip<B, fn::Mul>(t, Tensor<B>::scalar(static_cast<typename B::Scalar>(factor)), "optimiser");
}

/// Whether every element of `t` is finite.
template <TensorBackend B>
[[nodiscard]] bool all_finite(const Tensor<B>& t) {
    if (t.numel() == 0) return true;
    const Tensor<B> flags = map<B, NonFinite>(t);
    Tensor<B> any(Shape{1});
    B::row_max(any.data(), flags.data(), 1, t.numel());
    return any.item() == 0;
}

/// The largest |element| of a finite tensor (0 if empty).
template <TensorBackend B>
[[nodiscard]] double max_abs(const Tensor<B>& t) {
    if (t.numel() == 0) return 0;
    Tensor<B> largest(Shape{1});
    B::row_max(largest.data(), map<B, Absolute>(t).data(), 1, t.numel());
    return static_cast<double>(largest.item());
}

/// sum((t / divisor)^2): with divisor >= max |t| no term exceeds 1, so the sum does not
/// overflow even where t^2 would (the scaling of LAPACK's nrm2).
template <TensorBackend B>
[[nodiscard]] double scaled_sum_of_squares(const Tensor<B>& t, double divisor) {
    if (t.numel() == 0) return 0;
    const Tensor<B> squares = map<B, fn::Square>(zip<B, fn::Div>(t, Tensor<B>::scalar(static_cast<typename B::Scalar>(divisor)), "norm"));
    Tensor<B> total(Shape{1});
    B::row_sum(total.data(), squares.data(), 1, t.numel());
    return static_cast<double>(total.item());
}

template <TensorBackend B>
void check_gradient_shape(const Parameter<B>& p) {
    RLFLOW_EXPECTS(p.grad.defined() && p.grad.shape() == p.value.shape(), precondition_error,
                   "parameter '" + p.name + "' of shape " + p.value.shape().to_string() + " has a gradient of shape "
                       + p.grad.shape().to_string());
}

}  // namespace detail

/// The 2-norm of all gradients of `params` taken as one vector; NaN if any gradient holds
/// a NaN or an infinity.
template <TensorBackend B>
[[nodiscard]] double gradient_norm(const std::vector<Parameter<B>*>& params) {
    double largest = 0;
    for (const Parameter<B>* p : params) {
        detail::check_gradient_shape(*p);
        if (!detail::all_finite(p->grad)) return std::numeric_limits<double>::quiet_NaN();
        largest = std::max(largest, detail::max_abs(p->grad));
    }
    if (largest == 0) return 0;
    double sum = 0;
    for (const Parameter<B>* p : params) sum += detail::scaled_sum_of_squares(p->grad, largest);
    return largest * std::sqrt(sum);
}

/// Scales all gradients of `params` by one factor so that their global 2-norm is at most
/// `max_norm`; returns the norm before clipping. A NaN norm (a non-finite gradient) is
/// returned as is and nothing is scaled.
template <TensorBackend B>
double clip_grad_norm(const std::vector<Parameter<B>*>& params, double max_norm) {
    RLFLOW_EXPECTS(std::isfinite(max_norm) && max_norm > 0, precondition_error,
                   "clip_grad_norm needs a finite max_norm > 0, got " + std::to_string(max_norm));
    const double norm = gradient_norm(params);
    if (std::isfinite(norm) && norm > max_norm)
        for (Parameter<B>* p : params) p->grad = detail::scaled(p->grad, max_norm / norm);
    return norm;
}

/// Adam over a fixed list of parameters, which must outlive it and have distinct names
/// (checkpoints store the moments by name).
template <TensorBackend B>
class Adam {
public:
    explicit Adam(std::vector<Parameter<B>*> params, AdamOptions options = {}) : m_parameters(std::move(params)), m_options(options) {
        const AdamOptions& o = m_options;
        RLFLOW_EXPECTS(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1, precondition_error,
                       "Adam needs betas in [0, 1), got " + std::to_string(o.beta1) + " and " + std::to_string(o.beta2));
        RLFLOW_EXPECTS(o.epsilon > 0 && o.weight_decay >= 0, precondition_error,
                       "Adam needs epsilon > 0 and weight_decay >= 0, got " + std::to_string(o.epsilon) + " and "
                           + std::to_string(o.weight_decay));
        std::unordered_set<std::string> names;
        for (const Parameter<B>* p : m_parameters) {
            RLFLOW_EXPECTS(p != nullptr && p->value.defined(), precondition_error, "Adam over a missing or empty parameter");
            RLFLOW_EXPECTS(names.insert(p->name).second, precondition_error, "Adam: two parameters are named '" + p->name + "'");
            m_first.emplace_back(p->value.shape());
            m_second.emplace_back(p->value.shape());
        }
    }

    /// One update from the current gradients, clipped first to a global norm of
    /// `max_grad_norm` if given (the gradients themselves are left as they are). Returns
    /// the gradient norm before clipping when clipping was asked for. Throws
    /// training_error, changing nothing, if a gradient, moment or weight would not be finite.
    std::optional<double> step(std::optional<double> max_grad_norm = std::nullopt) {
        for (const Parameter<B>* p : m_parameters) {
            detail::check_gradient_shape(*p);
            if (!detail::all_finite(p->grad))
                fail(*p, "has a non-finite gradient (NaN or infinity)");
        }
        std::optional<double> norm;
        double clip_scale = 1;
        if (max_grad_norm) {
            RLFLOW_EXPECTS(std::isfinite(*max_grad_norm) && *max_grad_norm > 0, precondition_error,
                           "Adam::step needs a finite max_grad_norm > 0, got " + std::to_string(*max_grad_norm));
            norm = gradient_norm(m_parameters);
            if (*norm > *max_grad_norm) clip_scale = *max_grad_norm / *norm;
        }
        const Coefficients k = coefficients();
        std::vector<Candidate> next;
        next.reserve(m_parameters.size());
        for (std::size_t i = 0; i < m_parameters.size(); ++i) next.push_back(candidate(i, clip_scale, k));
        // Nothing has changed so far; from here on nothing throws.
        for (std::size_t i = 0; i < m_parameters.size(); ++i) {
            Tensor<B>& value = m_parameters[i]->value;
            B::copy(value.data(), next[i].value.data(), value.numel());
            m_first[i] = std::move(next[i].first);
            m_second[i] = std::move(next[i].second);
        }
        ++m_steps;
        return norm;
    }

    /// Zeros every parameter's gradient.
    void zero_grad() {
        for (Parameter<B>* p : m_parameters) {
            if (p->grad.defined() && p->grad.shape() == p->value.shape()) p->grad.fill(0);
            else p->grad = Tensor<B>(p->value.shape());
        }
    }

    /// The learning rate the next step uses.
    [[nodiscard]] double learning_rate() const noexcept { return m_options.learning_rate.at(m_steps); }
    [[nodiscard]] const AdamOptions& options() const noexcept { return m_options; }
    [[nodiscard]] const std::vector<Parameter<B>*>& parameters() const noexcept { return m_parameters; }

    // State, for checkpoints: the step count t and the moment estimates m and v, in
    // parameter order.
    [[nodiscard]] std::int64_t steps() const noexcept { return m_steps; }
    [[nodiscard]] const Tensor<B>& first_moment(std::size_t i) const { return m_first.at(i); }
    [[nodiscard]] const Tensor<B>& second_moment(std::size_t i) const { return m_second.at(i); }

    /// Replaces the state (a checkpoint's); throws precondition_error, changing nothing,
    /// unless there is one moment of each parameter's shape per parameter.
    void restore(std::int64_t steps, std::vector<Tensor<B>> first, std::vector<Tensor<B>> second) {
        RLFLOW_EXPECTS(steps >= 0, precondition_error, "Adam::restore: negative step count " + std::to_string(steps));
        RLFLOW_EXPECTS(first.size() == m_parameters.size() && second.size() == m_parameters.size(), precondition_error,
                       "Adam::restore: " + std::to_string(first.size()) + " and " + std::to_string(second.size())
                           + " moments for " + std::to_string(m_parameters.size()) + " parameters");
        for (std::size_t i = 0; i < m_parameters.size(); ++i) {
            const Shape& shape = m_parameters[i]->value.shape();
            RLFLOW_EXPECTS(first[i].shape() == shape && second[i].shape() == shape, precondition_error,
                           "Adam::restore: moments of shapes " + first[i].shape().to_string() + " and "
                               + second[i].shape().to_string() + " for parameter '" + m_parameters[i]->name + "' of shape "
                               + shape.to_string());
        }
        m_steps = steps;
        m_first = std::move(first);
        m_second = std::move(second);
    }

private:
    /// The step's scalars, for t = steps() + 1 and rate alpha (Kingma & Ba, end of section 2):
    /// alpha_t = alpha sqrt(1 - beta2^t) / (1 - beta1^t) and epsilon_t = epsilon sqrt(1 - beta2^t),
    /// so that alpha_t m / (sqrt(v) + epsilon_t) = alpha m_hat / (sqrt(v_hat) + epsilon) exactly.
    struct Coefficients {
        double step_size;
        double epsilon;
        /// rate * weight_decay.
        double decay;
    };
    struct Candidate {
        Tensor<B> first, second, value;
    };

    [[nodiscard]] Coefficients coefficients() const {
        const double t = static_cast<double>(m_steps + 1);
        const double rate = learning_rate();
        const double root = std::sqrt(1 - std::pow(m_options.beta2, t));
        return {rate * root / (1 - std::pow(m_options.beta1, t)), m_options.epsilon * root, rate * m_options.weight_decay};
    }

    /// Parameter i's moments and weights after this step (Algorithm 1), checked finite.
    [[nodiscard]] Candidate candidate(std::size_t i, double clip_scale, const Coefficients& k) const {
        using detail::scaled;
        const Parameter<B>& p = *m_parameters[i];
        const double beta1 = m_options.beta1, beta2 = m_options.beta2;
        const Tensor<B> g = clip_scale == 1 ? p.grad : scaled(p.grad, clip_scale);
        Candidate c;
        // m_t = beta1 m_{t-1} + (1 - beta1) g_t,  v_t = beta2 v_{t-1} + (1 - beta2) g_t^2.
        c.first = detail::zip<B, fn::Add>(scaled(m_first[i], beta1), scaled(g, 1 - beta1), "adam");
        c.second = detail::zip<B, fn::Add>(scaled(m_second[i], beta2), scaled(detail::map<B, fn::Square>(g), 1 - beta2), "adam");
        const Tensor<B> root = detail::zip<B, fn::Add>(detail::map<B, fn::Sqrt>(c.second),
                                                       Tensor<B>::scalar(static_cast<typename B::Scalar>(k.epsilon)), "adam");
        const Tensor<B> update = scaled(detail::zip<B, fn::Div>(c.first, root, "adam"), k.step_size);
        c.value = detail::zip<B, fn::Sub>(p.value, update, "adam");
        if (k.decay > 0) c.value = detail::zip<B, fn::Sub>(c.value, scaled(p.value, k.decay), "adam");
        if (!detail::all_finite(c.first) || !detail::all_finite(c.second))
            fail(p, "would get a non-finite moment estimate (gradient too large?)");
        if (!detail::all_finite(c.value)) fail(p, "would get a non-finite weight (learning rate too large?)");
        return c;
    }

    [[noreturn]] void fail(const Parameter<B>& p, const std::string& what) const {
        throw training_error("Adam step " + std::to_string(m_steps + 1) + ": parameter '" + p.name + "' " + what
                             + "; no weight was changed");
    }

    std::vector<Parameter<B>*> m_parameters;
    AdamOptions m_options;
    std::vector<Tensor<B>> m_first;
    std::vector<Tensor<B>> m_second;
    std::int64_t m_steps = 0;
};

}  // namespace rlflow::nn
