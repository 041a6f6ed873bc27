#pragma once
/// \file
/// Proximal policy optimisation (Schulman et al. 2017) for the ActorCritic, with the
/// details that make it work in practice (Huang et al. 2022, "The 37 implementation
/// details of PPO"): GAE, minibatches over several epochs, advantage normalisation per
/// minibatch, a masked entropy bonus of both heads, a value loss, global gradient-norm
/// clipping, early stop of the epochs when the approximate KL passes a target, a
/// learning-rate schedule (nn::Adam's), and values bootstrapped at truncation (gae.hpp).
/// Adam refuses non-finite gradients or weights (nn's NaN guard) and changes nothing then.

#include <rlflow/core/communicator.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/core/parallel.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn/distributed.hpp>
#include <rlflow/nn/optim.hpp>
#include <rlflow/rl/model_free/gae.hpp>
#include <rlflow/rl/model_free/policy.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <utility>
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

namespace detail {

/// The mean and the (population) standard deviation of `v` joined over the ranks of
/// `comm`, in two passes as mean_and_sd (which it equals, bit for bit, on one process).
template <Communicator C>
[[nodiscard]] MeanSd global_mean_and_sd(C& comm, std::span<const double> v) {
    std::array<double, 2> sum_count{std::accumulate(v.begin(), v.end(), 0.0), static_cast<double>(v.size())};
    comm.all_reduce_sum(std::span<double>(sum_count));
    if (sum_count[1] == 0) return {};
    const double mean = sum_count[0] / sum_count[1];
    std::array<double, 1> deviations{0};
    for (const double x : v) deviations[0] += (x - mean) * (x - mean);
    comm.all_reduce_sum(std::span<double>(deviations));
    return {mean, std::sqrt(deviations[0] / sum_count[1])};
}

/// Where this rank's samples sit among the run's: the run's segments are every rank's,
/// in the order `placement` gives (the global index of each of this rank's segments;
/// empty: the ranks' segments in rank order), and its samples are theirs in that order,
/// as flatten() lays them out on one process. Returns, per run sample, its index among
/// this rank's flattened samples (npos: another rank's).
template <Communicator C, class Obs>
[[nodiscard]] std::vector<std::size_t> local_positions(C& comm, std::span<const BasicRolloutSegment<Obs>> segments,
                                                       std::span<const std::size_t> placement) {
    std::vector<std::size_t> where(placement.begin(), placement.end());
    if (where.empty()) {
        std::vector<double> counts(static_cast<std::size_t>(comm.size()), 0.0);
        counts[static_cast<std::size_t>(comm.rank())] = static_cast<double>(segments.size());
        comm.all_reduce_sum(std::span<double>(counts));
        std::size_t first = 0;
        for (int r = 0; r < comm.rank(); ++r) first += static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]);
        for (std::size_t j = 0; j < segments.size(); ++j) where.push_back(first + j);
    }
    RLFLOW_EXPECTS(where.size() == segments.size(), precondition_error,
                   "ppo_update: " + std::to_string(where.size()) + " placements for " + std::to_string(segments.size()) + " segments");
    std::array<double, 1> total{static_cast<double>(segments.size())};
    comm.all_reduce_sum(std::span<double>(total));
    std::vector<double> lengths(static_cast<std::size_t>(total[0]), 0.0);
    for (std::size_t j = 0; j < segments.size(); ++j) lengths.at(where[j]) = static_cast<double>(segments[j].size());
    comm.all_reduce_sum(std::span<double>(lengths));
    std::vector<std::size_t> starts(lengths.size() + 1, 0);
    for (std::size_t g = 0; g < lengths.size(); ++g) starts[g + 1] = starts[g] + static_cast<std::size_t>(lengths[g]);
    std::vector<std::size_t> local(starts.back(), static_cast<std::size_t>(-1));
    std::size_t mine = 0;
    for (std::size_t j = 0; j < segments.size(); ++j)
        for (std::size_t t = 0; t < segments[j].size(); ++t) local[starts[where[j]] + t] = mine++;
    return local;
}

/// The minibatch of the run's samples at positions [start, end) of `order` (indices into
/// the run's samples) that this rank holds (`local`: local_positions).
template <class Obs>
[[nodiscard]] BasicMinibatch<Obs> gather_minibatch(const FlatRollout<Obs>& flat, std::span<const std::size_t> order, std::size_t start,
                                                   std::size_t end, std::span<const std::size_t> local) {
    BasicMinibatch<Obs> mb;
    for (std::size_t k = start; k < end; ++k) {
        const std::size_t i = local[order[k]];
        if (i == static_cast<std::size_t>(-1)) continue;
        mb.observations.push_back(flat.observations[i]);
        mb.actions.push_back(flat.actions[i]);
        mb.advantages.push_back(flat.advantages[i]);
        mb.old_log_probs.push_back(flat.old_log_probs[i]);
        mb.returns.push_back(flat.returns[i]);
    }
    return mb;
}

/// 1 - Var(returns - values) / Var(returns) over every rank's steps.
template <class Obs, Communicator C>
[[nodiscard]] double explained_variance(C& comm, const FlatRollout<Obs>& flat) {
    std::vector<double> residual(flat.returns.size());
    for (std::size_t i = 0; i < residual.size(); ++i) residual[i] = flat.returns[i] - flat.values[i];
    const double sd_returns = global_mean_and_sd(comm, flat.returns).sd;
    const double sd_residual = global_mean_and_sd(comm, residual).sd;
    return sd_returns > 0 ? 1 - (sd_residual * sd_residual) / (sd_returns * sd_returns) : 0;
}

/// `sums` and `samples` added over the ranks (the log-prob gap stays this rank's).
template <Communicator C>
void all_reduce_sums(C& comm, MinibatchSums& sums, std::size_t& samples) {
    std::array<double, 6> v{sums.kl, sums.clipped, sums.policy_loss, sums.value_loss, sums.entropy, static_cast<double>(samples)};
    comm.all_reduce_sum(std::span<double>(v));
    sums.kl = v[0];
    sums.clipped = v[1];
    sums.policy_loss = v[2];
    sums.value_loss = v[3];
    sums.entropy = v[4];
    samples = static_cast<std::size_t>(v[5]);
}

}  // namespace detail

/// One data-parallel PPO update over the ranks of `comm` (docs/scale-out.md): each rank
/// holds its own `segments`, and the run's samples are the ranks' in the order
/// `placement` gives (detail::local_positions; empty: rank order). Every rank
/// shuffles the run's sample indices alike (one generator, seeded alike), and each
/// minibatch of minibatch_size of them is taken by the ranks that hold its samples: the
/// advantages are normalised over the whole minibatch, the gradients averaged over the
/// ranks weighted by their samples (nn::all_reduce_mean_gradients), and the KL that stops
/// the epochs is all ranks'. So ranks that start equal stay equal, and the update is the
/// single process's update of all the samples, up to how float sums round; on one
/// process (SingleProcess) it is ppo_update exactly. Ranks may hold different numbers of
/// samples.
template <nn::TensorBackend B, PpoPolicy<B> Policy, Communicator C>
UpdateStats ppo_update_over(C& comm, Policy& policy, nn::Adam<B>& adam,
                            std::span<const BasicRolloutSegment<typename Policy::Input>> segments, const PpoOptions& options,
                            Rng& rng, ThreadPool* pool = nullptr, std::span<const std::size_t> placement = {}) {
    using Input = typename Policy::Input;
    const FlatRollout<Input> flat = flatten(segments, options);
    const std::vector<std::size_t> local = detail::local_positions(comm, segments, placement);
    const std::size_t n = local.size();
    RLFLOW_EXPECTS(n > 0 && options.minibatch_size > 0 && options.epochs > 0, precondition_error,
                   "ppo_update needs steps, a minibatch size and epochs");
    const bool spread = comm.size() > 1;
    UpdateStats stats;
    stats.explained_variance = detail::explained_variance(comm, flat);
    ShardedGradient<B, Policy> gradient(policy, options.gradient_shards);
    const std::vector<nn::Parameter<B>*> params = policy.parameters();
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    MinibatchSums total;
    std::size_t counted = 0;
    for (int epoch = 0; epoch < options.epochs; ++epoch) {
        // A seeded Fisher-Yates shuffle: the same on every platform.
        for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.next() % i]);
        MinibatchSums epoch_sums;
        std::size_t epoch_samples = 0;
        for (std::size_t start = 0; start < n; start += options.minibatch_size) {
            const std::size_t end = std::min(n, start + options.minibatch_size);
            BasicMinibatch<Input> mb = detail::gather_minibatch(flat, order, start, end, std::span<const std::size_t>(local));
            if (options.normalize_advantages && end - start > 1) {
                const detail::MeanSd a = detail::global_mean_and_sd(comm, mb.advantages);
                for (double& x : mb.advantages) x = (x - a.mean) / (a.sd + 1e-8);
            }
            adam.zero_grad();
            const MinibatchSums sums = mb.size() > 0 ? gradient.add(mb, options, pool) : MinibatchSums{};
            if (spread) nn::all_reduce_mean_gradients<B>(comm, params, static_cast<double>(mb.size()));
            adam.step(options.max_grad_norm);
            if (stats.gradient_steps++ == 0) stats.first_log_prob_gap = sums.log_prob_gap;
            epoch_sums += sums;
            epoch_samples += mb.size();
        }
        detail::all_reduce_sums(comm, epoch_sums, epoch_samples);
        total += epoch_sums;
        counted += epoch_samples;
        stats.epochs = epoch + 1;
        if (epoch_sums.kl / static_cast<double>(epoch_samples) > options.target_kl) break;
    }
    const auto per_sample = [&](double sum) { return sum / static_cast<double>(counted); };
    stats.policy_loss = per_sample(total.policy_loss);
    stats.value_loss = per_sample(total.value_loss);
    stats.entropy = per_sample(total.entropy);
    stats.approx_kl = per_sample(total.kl);
    stats.clip_fraction = per_sample(total.clipped);
    return stats;
}

/// One PPO update of `policy` from `segments`, its minibatch gradients computed on `pool`'s
/// threads (none: on this one; the result is the same for any number).
template <nn::TensorBackend B, PpoPolicy<B> Policy>
UpdateStats ppo_update(Policy& policy, nn::Adam<B>& adam, std::span<const BasicRolloutSegment<typename Policy::Input>> segments,
                       const PpoOptions& options, Rng& rng, ThreadPool* pool = nullptr) {
    SingleProcess one;
    return ppo_update_over<B>(one, policy, adam, segments, options, rng, pool);
}

}  // namespace rlflow::rl
