#pragma once
/// \file
/// Proximal policy optimisation (Schulman et al. 2017) for the ActorCritic, with the
/// details that make it work in practice (Huang et al. 2022, "The 37 implementation
/// details of PPO"): GAE, minibatches over several epochs, advantage normalisation per
/// minibatch, a masked entropy bonus of both heads, a value loss, global gradient-norm
/// clipping, early stop of the epochs when the approximate KL passes a target, a
/// learning-rate schedule (nn::Adam's), and values bootstrapped at truncation (gae.hpp).
/// Adam refuses non-finite gradients or weights (nn's NaN guard) and changes nothing then.

#include <rlflow/core/error.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn/optim.hpp>
#include <rlflow/rl/gae.hpp>
#include <rlflow/rl/policy.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

namespace rlflow::rl {

/// Every PPO setting, with the defaults the model-free agent trains with.
struct PpoOptions {
    double gamma = 0.99;
    /// GAE's lambda.
    double lambda = 0.95;
    /// The policy ratio is clipped to [1 - clip, 1 + clip].
    double clip = 0.2;
    /// Passes over a rollout per update.
    int epochs = 4;
    /// Samples per gradient step.
    std::size_t minibatch_size = 32;
    bool normalize_advantages = true;
    /// Weight of the entropy bonus (both heads).
    double entropy_coefficient = 0.01;
    double value_coefficient = 0.5;
    /// Global gradient-norm clip.
    double max_grad_norm = 0.5;
    /// The epochs stop once the approximate KL of the old policy to the new passes this.
    double target_kl = 0.05;
    /// Adam's learning rate at the first update.
    double learning_rate = 5e-4;
    /// Environment steps collected per update (over all environments).
    std::size_t rollout_steps = 128;
    friend bool operator==(const PpoOptions&, const PpoOptions&) = default;
};

/// One environment's consecutive steps as collected for an update. Observations are the
/// states the actions were taken in.
struct RolloutSegment {
    std::vector<Observation> observations;
    std::vector<Action> actions;
    std::vector<double> log_probs;
    std::vector<double> values;
    std::vector<double> rewards;
    /// V of the observation each step reached (the bootstrap of truncated steps and of
    /// the segment's last step).
    std::vector<double> next_values;
    std::vector<std::uint8_t> terminated;
    std::vector<std::uint8_t> truncated;
    [[nodiscard]] std::size_t size() const noexcept { return actions.size(); }
};

/// What an update measured.
struct UpdateStats {
    double policy_loss = 0;
    double value_loss = 0;
    double entropy = 0;
    double approx_kl = 0;
    double clip_fraction = 0;
    /// 1 - Var(returns - values) / Var(returns), over the rollout before the update.
    double explained_variance = 0;
    int epochs = 0;
    std::size_t gradient_steps = 0;
    /// Largest |log-prob recomputed - log-prob stored while acting| over the first
    /// minibatch (before any gradient step: they must agree).
    double first_log_prob_gap = 0;
};

/// One PPO update of `policy` from `segments`.
template <nn::TensorBackend B>
UpdateStats ppo_update(ActorCritic<B>& policy, nn::Adam<B>& adam, std::span<const RolloutSegment> segments,
                       const PpoOptions& options, Rng& rng) {
    // Flatten, with GAE per segment.
    std::vector<const Observation*> observations;
    std::vector<Action> actions;
    std::vector<double> old_log_probs, advantages, returns, values;
    for (const RolloutSegment& s : segments) {
        const GaeResult g = generalized_advantages({s.rewards, s.values, s.next_values, s.terminated, s.truncated},
                                                   options.gamma, options.lambda);
        for (std::size_t t = 0; t < s.size(); ++t) {
            observations.push_back(&s.observations[t]);
            actions.push_back(s.actions[t]);
            old_log_probs.push_back(s.log_probs[t]);
            values.push_back(s.values[t]);
        }
        advantages.insert(advantages.end(), g.advantages.begin(), g.advantages.end());
        returns.insert(returns.end(), g.returns.begin(), g.returns.end());
    }
    const std::size_t n = actions.size();
    RLFLOW_EXPECTS(n > 0 && options.minibatch_size > 0 && options.epochs > 0, precondition_error,
                   "ppo_update needs steps, a minibatch size and epochs");
    UpdateStats stats;
    {
        const auto variance = [](const std::vector<double>& v) {
            const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
            double sum = 0;
            for (const double x : v) sum += (x - mean) * (x - mean);
            return sum / static_cast<double>(v.size());
        };
        std::vector<double> residual(n);
        for (std::size_t i = 0; i < n; ++i) residual[i] = returns[i] - values[i];
        const double var_returns = variance(returns);
        stats.explained_variance = var_returns > 0 ? 1 - variance(residual) / var_returns : 0;
    }
    using Scalar = typename B::Scalar;
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    const std::vector<nn::Parameter<B>*> params = policy.parameters();
    double kl_sum = 0, clip_sum = 0, policy_sum = 0, value_sum = 0, entropy_sum = 0;
    std::size_t counted = 0;
    bool first = true;
    for (int epoch = 0; epoch < options.epochs; ++epoch) {
        // A seeded Fisher-Yates shuffle: the same on every platform.
        for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.next() % i]);
        double epoch_kl = 0;
        std::size_t epoch_samples = 0;
        for (std::size_t start = 0; start < n; start += options.minibatch_size) {
            const std::size_t end = std::min(n, start + options.minibatch_size);
            const std::size_t m = end - start;
            std::vector<const Observation*> mb_obs;
            std::vector<Action> mb_actions;
            std::vector<double> mb_adv, mb_old, mb_ret;
            for (std::size_t i = start; i < end; ++i) {
                mb_obs.push_back(observations[order[i]]);
                mb_actions.push_back(actions[order[i]]);
                mb_adv.push_back(advantages[order[i]]);
                mb_old.push_back(old_log_probs[order[i]]);
                mb_ret.push_back(returns[order[i]]);
            }
            if (options.normalize_advantages && m > 1) {
                const double mean = std::accumulate(mb_adv.begin(), mb_adv.end(), 0.0) / static_cast<double>(m);
                double var = 0;
                for (const double a : mb_adv) var += (a - mean) * (a - mean);
                const double sd = std::sqrt(var / static_cast<double>(m));
                for (double& a : mb_adv) a = (a - mean) / (sd + 1e-8);
            }
            nn::Tape<B> tape;
            PolicyPass<B> pass = policy.evaluate(tape, mb_obs, mb_actions);
            const std::vector<Scalar> new_log_probs = pass.log_prob.value().to_host();
            // The clipped surrogate, as weights on the log-probability: the gradient of
            // min(r A, clip(r) A) is r A d(log p) where the unclipped term is the minimum,
            // and 0 where the clip binds.
            std::vector<Scalar> policy_weight(m), value_target(m);
            double mb_kl = 0, mb_clip = 0, mb_policy = 0;
            for (std::size_t i = 0; i < m; ++i) {
                const double log_ratio = static_cast<double>(new_log_probs[i]) - mb_old[i];
                const double ratio = std::exp(log_ratio);
                if (first) stats.first_log_prob_gap = std::max(stats.first_log_prob_gap, std::abs(log_ratio));
                mb_kl += (ratio - 1) - log_ratio;  // Schulman's low-variance KL estimator
                const double unclipped = ratio * mb_adv[i];
                const double clipped = std::clamp(ratio, 1 - options.clip, 1 + options.clip) * mb_adv[i];
                const bool binds = clipped < unclipped;
                if (std::abs(ratio - 1) > options.clip) mb_clip += 1;
                mb_policy += -std::min(unclipped, clipped);
                policy_weight[i] = binds ? Scalar(0) : static_cast<Scalar>(-ratio * mb_adv[i] / static_cast<double>(m));
                value_target[i] = static_cast<Scalar>(mb_ret[i]);
            }
            first = false;
            const Shape column{static_cast<std::int64_t>(m)};
            // loss = sum_i w_i log p_i  +  c_v mean (V - R)^2  -  c_e mean H
            const nn::Var<B> surrogate = sum(mul(pass.log_prob, tape.constant(nn::Tensor<B>::from_host(column, policy_weight))));
            const nn::Var<B> error = sub(pass.value, tape.constant(nn::Tensor<B>::from_host(column, value_target)));
            const nn::Var<B> value_loss = mean(square(error));
            const nn::Var<B> entropy = mean(pass.entropy);
            const nn::Var<B> loss = add(add(surrogate, scale(value_loss, static_cast<Scalar>(options.value_coefficient))),
                                        scale(entropy, static_cast<Scalar>(-options.entropy_coefficient)));
            adam.zero_grad();
            tape.backward(loss);
            adam.step(options.max_grad_norm);
            ++stats.gradient_steps;
            value_sum += static_cast<double>(value_loss.value().to_host()[0]) * static_cast<double>(m);
            entropy_sum += static_cast<double>(entropy.value().to_host()[0]) * static_cast<double>(m);
            policy_sum += mb_policy;
            kl_sum += mb_kl;
            clip_sum += mb_clip;
            counted += m;
            epoch_kl += mb_kl;
            epoch_samples += m;
        }
        stats.epochs = epoch + 1;
        if (epoch_kl / static_cast<double>(epoch_samples) > options.target_kl) break;
    }
    const auto per_sample = [&](double total) { return total / static_cast<double>(counted); };
    stats.policy_loss = per_sample(policy_sum);
    stats.value_loss = per_sample(value_sum);
    stats.entropy = per_sample(entropy_sum);
    stats.approx_kl = per_sample(kl_sum);
    stats.clip_fraction = per_sample(clip_sum);
    return stats;
}

}  // namespace rlflow::rl
