#pragma once
/// \file
/// Training the model-free agent: a few environments per training graph, PPO updates from
/// parallel rollouts, and everything an agent directory (agent_file.hpp) needs to stop and
/// continue exactly. An update collects PpoOptions::rollout_steps steps (split over the
/// environments), runs ppo_update and reports what a training log shows.
///
/// The learning rate decays linearly from PpoOptions::learning_rate to a tenth of it over
/// planned_updates updates' gradient steps (Adam counts them, and a checkpoint keeps the
/// count, so a resumed run continues the schedule), then stays there. The entropy weight
/// goes from PpoOptions::entropy_coefficient to final_entropy_coefficient over as many
/// updates (entropy_at).

#include <rlflow/core/parallel.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn/optim.hpp>
#include <rlflow/rl/agent_file.hpp>
#include <rlflow/rl/policy.hpp>
#include <rlflow/rl/ppo.hpp>
#include <rlflow/rl/rollout.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <limits>
#include <memory>
#include <vector>

namespace rlflow::rl {

/// Updates the learning-rate schedule spans.
inline constexpr std::size_t planned_updates = 200;

/// The entropy weight of update `update` (counted from 0).
[[nodiscard]] inline double entropy_at(const PpoOptions& ppo, std::size_t update) {
    const double done = std::min(1.0, static_cast<double>(update) / static_cast<double>(planned_updates));
    return ppo.entropy_coefficient + (ppo.final_entropy_coefficient - ppo.entropy_coefficient) * done;
}

/// What one update did.
struct UpdateLog {
    std::size_t update = 0;
    std::size_t env_steps = 0;
    std::size_t episodes = 0;
    /// Episodes that ended in this update's rollout, and their mean return.
    std::size_t episodes_ended = 0;
    double mean_return = std::numeric_limits<double>::quiet_NaN();
    /// Per training graph: the cost ratio (end over start) of its last finished episode,
    /// and the best ratio any of its episodes reached (NaN until one ends).
    std::vector<double> final_cost_ratio;
    std::vector<double> best_cost_ratio;
    UpdateStats stats;
    double seconds = 0;
};

template <nn::TensorBackend B, cost::CostBackend C>
class MfTrainer {
public:
    /// A trainer over `graphs` (named in `state.graphs`); `state` holds the settings and,
    /// when it comes from an agent directory (state.updates > 0), where training stood:
    /// load the weights into policy() and adam() then (load_agent_weights).
    /// Rollouts and gradients run on up to `jobs` threads; what training computes does not
    /// depend on how many. Rewards come from `measure` when given (GraphEnv::measure_with).
    MfTrainer(std::vector<Graph> graphs, std::shared_ptr<const rewrite::RuleSet> rules, cost::CostModel<C>& model,
              AgentState state, unsigned jobs = 1, const GraphMeasure& measure = {})
        : m_state(std::move(state)),
          m_pool(std::make_unique<ThreadPool>(jobs)),
          m_envs(std::move(graphs), rules, model, m_state.env, m_state.ppo.environments_per_graph, measure),
          m_policy(static_cast<std::uint32_t>(rules->size()), static_cast<std::uint32_t>(m_state.env.max_locations),
                   m_state.policy),
          m_adam(m_policy.parameters(), adam_options(m_state.ppo)),
          m_rng(m_state.updates == 0 ? Rng(m_state.seed) : Rng::from_state(m_state.rng)),
          m_final(m_envs.num_graphs(), std::numeric_limits<double>::quiet_NaN()),
          m_best(m_envs.num_graphs(), std::numeric_limits<double>::quiet_NaN()) {
        RLFLOW_EXPECTS(m_state.rules.size() == rules->size(), precondition_error,
                       "MfTrainer: the agent's rule names and the rule set differ in size");
        if (m_state.updates > 0) m_envs.restore(m_state.episode_actions, m_state.episode_returns);
        if (m_state.final_cost_ratio.size() == m_final.size()) m_final = m_state.final_cost_ratio;
        if (m_state.best_cost_ratio.size() == m_best.size()) m_best = m_state.best_cost_ratio;
    }

    // Adam holds pointers into the policy: a trainer stays where it was made.
    MfTrainer(const MfTrainer&) = delete;
    MfTrainer& operator=(const MfTrainer&) = delete;

    [[nodiscard]] ActorCritic<B>& policy() noexcept { return m_policy; }
    [[nodiscard]] nn::Adam<B>& adam() noexcept { return m_adam; }
    [[nodiscard]] std::size_t num_graphs() const noexcept { return m_envs.num_graphs(); }

    /// Collects a rollout and updates the policy from it.
    UpdateLog update() {
        const auto start = std::chrono::steady_clock::now();
        const std::size_t per_env = std::max<std::size_t>(1, m_state.ppo.rollout_steps / m_envs.size());
        std::vector<EpisodeRecord> ended;
        const std::vector<RolloutSegment> segments = m_envs.collect(m_policy, per_env, m_rng, ended, m_pool.get());
        UpdateLog log;
        PpoOptions now = m_state.ppo;
        now.entropy_coefficient = entropy_at(m_state.ppo, m_state.updates);
        log.stats = ppo_update(m_policy, m_adam, std::span<const RolloutSegment>(segments), now, m_rng, m_pool.get());
        m_state.updates += 1;
        m_state.env_steps += per_env * m_envs.size();
        m_state.episodes += ended.size();
        double returns = 0;
        for (const EpisodeRecord& e : ended) {
            returns += e.episode_return;
            m_final[e.graph] = e.cost_ratio;
            if (!(m_best[e.graph] <= e.cost_ratio)) m_best[e.graph] = e.cost_ratio;
        }
        log.update = m_state.updates;
        log.env_steps = m_state.env_steps;
        log.episodes = m_state.episodes;
        log.episodes_ended = ended.size();
        if (!ended.empty()) log.mean_return = returns / static_cast<double>(ended.size());
        log.final_cost_ratio = m_final;
        log.best_cost_ratio = m_best;
        log.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        m_state.seconds += log.seconds;
        return log;
    }

    /// The agent's state now, for save_agent.
    [[nodiscard]] AgentState snapshot() const {
        AgentState s = m_state;
        s.rng = m_rng.state();
        s.episode_actions = m_envs.episode_actions();
        s.episode_returns = m_envs.episode_returns();
        s.final_cost_ratio = m_final;
        s.best_cost_ratio = m_best;
        return s;
    }
    [[nodiscard]] const AgentState& state() const noexcept { return m_state; }

private:
    [[nodiscard]] static nn::AdamOptions adam_options(const PpoOptions& ppo) {
        const auto per_update = static_cast<std::int64_t>(ppo.epochs) *
                                static_cast<std::int64_t>((ppo.rollout_steps + ppo.minibatch_size - 1) / ppo.minibatch_size);
        constexpr double floor_fraction = 0.1;
        return nn::AdamOptions{.learning_rate = nn::LearningRateSchedule::linear(
                                   ppo.learning_rate, ppo.learning_rate * floor_fraction,
                                   static_cast<std::int64_t>(planned_updates) * std::max<std::int64_t>(per_update, 1))};
    }

    AgentState m_state;
    std::unique_ptr<ThreadPool> m_pool;
    EnvironmentSet<C> m_envs;
    ActorCritic<B> m_policy;
    nn::Adam<B> m_adam;
    Rng m_rng;
    std::vector<double> m_final;
    std::vector<double> m_best;
};

}  // namespace rlflow::rl
