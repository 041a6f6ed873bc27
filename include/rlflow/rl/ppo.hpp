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
#include <rlflow/core/parallel.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn/optim.hpp>
#include <rlflow/rl/gae.hpp>
#include <rlflow/rl/policy.hpp>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
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
    /// Weight of the entropy bonus (both heads). 0.1, not the usual 0.01: with 0.01 the
    /// policy collapsed onto NO-OP within a hundred updates on resnet18 (most single
    /// rewrites cost more than they save, and ending at once is a safe return of 0), and
    /// on all four graphs of the model-free agent's results 0.1 ended equal or better.
    double entropy_coefficient = 0.1;
    /// The entropy weight the trainer decays to, linearly over its planned updates (as
    /// the learning rate); equal to entropy_coefficient: no decay.
    double final_entropy_coefficient = 0.1;
    double value_coefficient = 0.5;
    /// Global gradient-norm clip.
    double max_grad_norm = 0.5;
    /// The epochs stop once the approximate KL of the old policy to the new passes this.
    double target_kl = 0.05;
    /// Adam's learning rate at the first update.
    double learning_rate = 5e-4;
    /// Environment steps collected per update (over all environments).
    std::size_t rollout_steps = 128;
    /// Environments per training graph, stepped in parallel during a rollout.
    std::size_t environments_per_graph = 2;
    /// Each minibatch's gradient is the sum of this many shards' gradients (the shards
    /// computed in parallel, added in shard order). A setting of the update, not of the
    /// machine: the result is the same for any number of threads.
    std::size_t gradient_shards = 2;
    friend bool operator==(const PpoOptions&, const PpoOptions&) = default;
};

/// One environment's consecutive steps as collected for an update. Observations are the
/// states the actions were taken in: the real environment's (Observation) for the
/// model-free agent, the dream's for the world-model agent's controller.
template <class Obs>
struct BasicRolloutSegment {
    std::vector<Obs> observations;
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
using RolloutSegment = BasicRolloutSegment<Observation>;

/// What PPO needs of a policy over inputs `Policy::Input`: the log-probabilities,
/// entropies and values of given actions on a tape (a pass holding log_prob, entropy and
/// value), its parameters, and a fresh replica of the same shape for gradient shards.
template <class P, class B>
concept PpoPolicy = requires(P& p, nn::Tape<B>& tape, std::span<const typename P::Input* const> inputs,
                             std::span<const Action> actions) {
    { p.evaluate(tape, inputs, actions).log_prob } -> std::convertible_to<nn::Var<B>>;
    { p.parameters() } -> std::same_as<std::vector<nn::Parameter<B>*>>;
    { p.replica() };
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

namespace detail {

/// The mean and the (population) standard deviation of `v`.
struct MeanSd {
    double mean = 0;
    double sd = 0;
};
[[nodiscard]] inline MeanSd mean_and_sd(std::span<const double> v) {
    if (v.empty()) return {};
    const double n = static_cast<double>(v.size());
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
    double sum = 0;
    for (const double x : v) sum += (x - mean) * (x - mean);
    return {mean, std::sqrt(sum / n)};
}

}  // namespace detail

/// One minibatch of a PPO update (advantages already normalised).
template <class Obs>
struct BasicMinibatch {
    std::vector<const Obs*> observations;
    std::vector<Action> actions;
    std::vector<double> advantages;
    std::vector<double> old_log_probs;
    std::vector<double> returns;
    [[nodiscard]] std::size_t size() const noexcept { return actions.size(); }
};
using Minibatch = BasicMinibatch<Observation>;

/// What the loss of (part of) a minibatch measured: sums over its samples.
struct MinibatchSums {
    double kl = 0;
    double clipped = 0;
    double policy_loss = 0;
    double value_loss = 0;
    double entropy = 0;
    /// Largest |log-prob recomputed - log-prob stored while acting|.
    double log_prob_gap = 0;
    MinibatchSums& operator+=(const MinibatchSums& o) {
        kl += o.kl;
        clipped += o.clipped;
        policy_loss += o.policy_loss;
        value_loss += o.value_loss;
        entropy += o.entropy;
        log_prob_gap = std::max(log_prob_gap, o.log_prob_gap);
        return *this;
    }
};

/// Adds to `policy`'s gradients those of the PPO loss of samples [begin, end) of `mb`,
/// each sample weighted 1 / mb.size(), so that the shards of a minibatch add up to its
/// mean loss:
///   loss = mean_i [ -min(r_i A_i, clip(r_i) A_i) + c_v (V_i - R_i)^2 - c_e H_i ].
template <nn::TensorBackend B, PpoPolicy<B> Policy>
MinibatchSums add_ppo_gradient(Policy& policy, const BasicMinibatch<typename Policy::Input>& mb, std::size_t begin,
                               std::size_t end, const PpoOptions& options) {
    using Scalar = typename B::Scalar;
    const std::size_t k = end - begin;
    MinibatchSums sums;
    if (k == 0) return sums;
    const double per_sample = 1.0 / static_cast<double>(mb.size());
    nn::Tape<B> tape;
    auto pass = policy.evaluate(tape, std::span(mb.observations).subspan(begin, k),
                                         std::span(mb.actions).subspan(begin, k));
    const std::vector<Scalar> new_log_probs = pass.log_prob.value().to_host();
    // The clipped surrogate, as weights on the log-probability: the gradient of
    // min(r A, clip(r) A) is r A d(log p) where the unclipped term is the minimum, and 0
    // where the clip binds.
    std::vector<Scalar> policy_weight(k), value_target(k);
    for (std::size_t j = 0; j < k; ++j) {
        const std::size_t i = begin + j;
        const double log_ratio = static_cast<double>(new_log_probs[j]) - mb.old_log_probs[i];
        const double ratio = std::exp(log_ratio);
        sums.log_prob_gap = std::max(sums.log_prob_gap, std::abs(log_ratio));
        sums.kl += (ratio - 1) - log_ratio;  // Schulman's low-variance KL estimator
        const double unclipped = ratio * mb.advantages[i];
        const double clipped = std::clamp(ratio, 1 - options.clip, 1 + options.clip) * mb.advantages[i];
        if (std::abs(ratio - 1) > options.clip) sums.clipped += 1;
        sums.policy_loss += -std::min(unclipped, clipped);
        policy_weight[j] = clipped < unclipped ? Scalar(0) : static_cast<Scalar>(-ratio * mb.advantages[i] * per_sample);
        value_target[j] = static_cast<Scalar>(mb.returns[i]);
    }
    const Shape column{static_cast<std::int64_t>(k)};
    const nn::Var<B> surrogate = sum(mul(pass.log_prob, tape.constant(nn::Tensor<B>::from_host(column, policy_weight))));
    const nn::Var<B> squared_error = sum(square(sub(pass.value, tape.constant(nn::Tensor<B>::from_host(column, value_target)))));
    const nn::Var<B> entropy = sum(pass.entropy);
    const nn::Var<B> loss =
        add(add(surrogate, scale(squared_error, static_cast<Scalar>(options.value_coefficient * per_sample))),
            scale(entropy, static_cast<Scalar>(-options.entropy_coefficient * per_sample)));
    tape.backward(loss);
    sums.value_loss = static_cast<double>(squared_error.value().item());
    sums.entropy = static_cast<double>(entropy.value().item());
    return sums;
}

/// The gradient of a minibatch, split over PpoOptions::gradient_shards shards: shard 0 on
/// the policy itself, the others on replicas that take the policy's weights before each
/// step, their gradients then added to the policy's in shard order. The shards run on a
/// thread pool's threads; the sum does not depend on how many.
template <nn::TensorBackend B, PpoPolicy<B> Policy = ActorCritic<B>>
class ShardedGradient {
public:
    using Input = typename Policy::Input;
    ShardedGradient(Policy& policy, std::size_t shards) : m_policy(&policy), m_params(policy.parameters()) {
        RLFLOW_EXPECTS(shards >= 1, precondition_error, "PpoOptions::gradient_shards must be at least 1");
        for (std::size_t s = 1; s < shards; ++s) {
            m_replicas.push_back(policy.replica());
            m_replica_params.push_back(m_replicas.back()->parameters());
        }
    }
    [[nodiscard]] std::size_t shards() const noexcept { return m_replicas.size() + 1; }

    /// Adds the minibatch's gradient to the policy's (zero them first) and returns its sums.
    MinibatchSums add(const BasicMinibatch<Input>& mb, const PpoOptions& options, ThreadPool* pool = nullptr) {
        for (std::vector<nn::Parameter<B>*>& params : m_replica_params)
            for (std::size_t p = 0; p < params.size(); ++p) {
                B::copy(params[p]->value.data(), m_params[p]->value.data(), m_params[p]->value.numel());
                params[p]->zero_grad();
            }
        const std::size_t n = shards(), m = mb.size();
        std::vector<MinibatchSums> sums(n);
        run_items(pool, n, [&](std::size_t s, unsigned) {
            Policy& net = s == 0 ? *m_policy : *m_replicas[s - 1];
            sums[s] = add_ppo_gradient<B>(net, mb, s * m / n, (s + 1) * m / n, options);
        });
        MinibatchSums total;
        for (std::size_t s = 0; s < n; ++s) {
            total += sums[s];
            if (s > 0)
                for (std::size_t p = 0; p < m_params.size(); ++p) m_params[p]->add_grad(m_replica_params[s - 1][p]->grad);
        }
        return total;
    }

private:
    Policy* m_policy;
    std::vector<nn::Parameter<B>*> m_params;
    std::vector<std::unique_ptr<Policy>> m_replicas;
    std::vector<std::vector<nn::Parameter<B>*>> m_replica_params;
};

/// A rollout's steps in one list, with their GAE advantages and returns (not normalised)
/// and the values the policy gave them while acting.
template <class Obs>
struct FlatRollout : BasicMinibatch<Obs> {
    std::vector<double> values;
};
template <class Obs>
[[nodiscard]] FlatRollout<Obs> flatten(std::span<const BasicRolloutSegment<Obs>> segments, const PpoOptions& options) {
    FlatRollout<Obs> f;
    for (const BasicRolloutSegment<Obs>& s : segments) {
        const GaeResult g = generalized_advantages({s.rewards, s.values, s.next_values, s.terminated, s.truncated},
                                                   options.gamma, options.lambda);
        for (std::size_t t = 0; t < s.size(); ++t) {
            f.observations.push_back(&s.observations[t]);
            f.actions.push_back(s.actions[t]);
            f.old_log_probs.push_back(s.log_probs[t]);
            f.values.push_back(s.values[t]);
        }
        f.advantages.insert(f.advantages.end(), g.advantages.begin(), g.advantages.end());
        f.returns.insert(f.returns.end(), g.returns.begin(), g.returns.end());
    }
    return f;
}

/// One PPO update of `policy` from `segments`, its minibatch gradients computed on `pool`'s
/// threads (none: on this one; the result is the same for any number).
template <nn::TensorBackend B, PpoPolicy<B> Policy>
UpdateStats ppo_update(Policy& policy, nn::Adam<B>& adam, std::span<const BasicRolloutSegment<typename Policy::Input>> segments,
                       const PpoOptions& options, Rng& rng, ThreadPool* pool = nullptr) {
    using Input = typename Policy::Input;
    const FlatRollout<Input> flat = flatten(segments, options);
    const std::size_t n = flat.actions.size();
    RLFLOW_EXPECTS(n > 0 && options.minibatch_size > 0 && options.epochs > 0, precondition_error,
                   "ppo_update needs steps, a minibatch size and epochs");
    UpdateStats stats;
    {
        std::vector<double> residual(n);
        for (std::size_t i = 0; i < n; ++i) residual[i] = flat.returns[i] - flat.values[i];
        const double sd_returns = detail::mean_and_sd(flat.returns).sd;
        const double sd_residual = detail::mean_and_sd(residual).sd;
        stats.explained_variance = sd_returns > 0 ? 1 - (sd_residual * sd_residual) / (sd_returns * sd_returns) : 0;
    }
    ShardedGradient<B, Policy> gradient(policy, options.gradient_shards);
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    MinibatchSums total;
    std::size_t counted = 0;
    bool first = true;
    for (int epoch = 0; epoch < options.epochs; ++epoch) {
        // A seeded Fisher-Yates shuffle: the same on every platform.
        for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.next() % i]);
        double epoch_kl = 0;
        std::size_t epoch_samples = 0;
        for (std::size_t start = 0; start < n; start += options.minibatch_size) {
            const std::size_t end = std::min(n, start + options.minibatch_size);
            BasicMinibatch<Input> mb;
            for (std::size_t i = start; i < end; ++i) {
                mb.observations.push_back(flat.observations[order[i]]);
                mb.actions.push_back(flat.actions[order[i]]);
                mb.advantages.push_back(flat.advantages[order[i]]);
                mb.old_log_probs.push_back(flat.old_log_probs[order[i]]);
                mb.returns.push_back(flat.returns[order[i]]);
            }
            if (options.normalize_advantages && mb.size() > 1) {
                const detail::MeanSd a = detail::mean_and_sd(mb.advantages);
                for (double& x : mb.advantages) x = (x - a.mean) / (a.sd + 1e-8);
            }
            adam.zero_grad();
            const MinibatchSums sums = gradient.add(mb, options, pool);
            adam.step(options.max_grad_norm);
            ++stats.gradient_steps;
            if (first) stats.first_log_prob_gap = sums.log_prob_gap;
            first = false;
            total += sums;
            counted += mb.size();
            epoch_kl += sums.kl;
            epoch_samples += mb.size();
        }
        stats.epochs = epoch + 1;
        if (epoch_kl / static_cast<double>(epoch_samples) > options.target_kl) break;
    }
    const auto per_sample = [&](double sum) { return sum / static_cast<double>(counted); };
    stats.policy_loss = per_sample(total.policy_loss);
    stats.value_loss = per_sample(total.value_loss);
    stats.entropy = per_sample(total.entropy);
    stats.approx_kl = per_sample(total.kl);
    stats.clip_fraction = per_sample(total.clipped);
    return stats;
}

}  // namespace rlflow::rl
