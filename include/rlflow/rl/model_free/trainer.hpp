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
///
/// Over several ranks (an AnyCommunicator, e.g. MPI under `mpirun`), each rank steps its
/// share of the environments (every K-th: at least one each) and the update is
/// data-parallel (ppo_update_over). The steps' seeds and the minibatches come from the
/// run's generator, which every rank holds alike, so a run is the same for any rank count
/// but for how float sums round (which may, rarely, tip a sampled action). Finished episodes and, for a
/// checkpoint, the episodes in progress are gathered on every rank, so every rank's
/// snapshot() is the whole run's.

#include <rlflow/core/communicator.hpp>
#include <rlflow/core/parallel.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn/distributed.hpp>
#include <rlflow/nn/optim.hpp>
#include <rlflow/rl/model_free/agent_file.hpp>
#include <rlflow/rl/model_free/policy.hpp>
#include <rlflow/rl/model_free/ppo.hpp>
#include <rlflow/rl/model_free/rollout.hpp>

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
    /// Wall seconds in all, and of them collecting the rollout and updating from it (with
    /// the ranks' exchanges).
    double seconds = 0;
    double rollout_seconds = 0;
    double update_seconds = 0;
};

template <nn::TensorBackend B, cost::CostBackend C>
class MfTrainer {
public:
    /// A trainer over `graphs` (named in `state.graphs`); `state` holds the settings and,
    /// when it comes from an agent directory (state.updates > 0), where training stood:
    /// load the weights into policy() and adam() then (load_agent_weights).
    /// Rollouts and gradients run on up to `jobs` threads; what training computes does not
    /// depend on how many. Rewards come from `measure` when given (GraphEnv::measure_with).
    /// Over the ranks of `comm`, every rank makes its trainer alike (then synchronise()).
    MfTrainer(std::vector<Graph> graphs, std::shared_ptr<const rewrite::RuleSet> rules, cost::CostModel<C>& model,
              MfAgentState state, unsigned jobs = 1, const GraphMeasure& measure = {}, AnyCommunicator comm = {})
        : m_state(std::move(state)),
          m_comm(comm),
          m_pool(std::make_unique<ThreadPool>(jobs)),
          m_share(share_of(m_comm, graphs.size() * m_state.ppo.environments_per_graph)),
          m_envs(std::move(graphs), rules, model, m_state.env, m_state.ppo.environments_per_graph, measure, m_share),
          m_policy(static_cast<std::uint32_t>(rules->size()), static_cast<std::uint32_t>(m_state.env.max_locations),
                   m_state.policy),
          m_adam(m_policy.parameters(), adam_options(m_state.ppo)),
          m_rng(m_state.updates == 0 ? Rng(m_state.seed) : Rng::from_state(m_state.rng)),
          m_final(m_envs.num_graphs(), std::numeric_limits<double>::quiet_NaN()),
          m_best(m_envs.num_graphs(), std::numeric_limits<double>::quiet_NaN()) {
        RLFLOW_EXPECTS(m_state.rules.size() == rules->size(), precondition_error,
                       "MfTrainer: the agent's rule names and the rule set differ in size");
        if (m_state.updates > 0) restore_share();
        if (m_state.final_cost_ratio.size() == m_final.size()) m_final = m_state.final_cost_ratio;
        if (m_state.best_cost_ratio.size() == m_best.size()) m_best = m_state.best_cost_ratio;
    }

    // Adam holds pointers into the policy: a trainer stays where it was made.
    MfTrainer(const MfTrainer&) = delete;
    MfTrainer& operator=(const MfTrainer&) = delete;

    [[nodiscard]] ActorCritic<B>& policy() noexcept { return m_policy; }
    [[nodiscard]] nn::Adam<B>& adam() noexcept { return m_adam; }
    [[nodiscard]] std::size_t num_graphs() const noexcept { return m_envs.num_graphs(); }
    [[nodiscard]] const AnyCommunicator& communicator() const noexcept { return m_comm; }
    /// The environments this rank steps (its share), and in the whole run.
    [[nodiscard]] std::size_t local_environments() const noexcept { return m_envs.size(); }
    [[nodiscard]] std::size_t environments() const noexcept { return m_envs.total(); }

    /// Gives every rank rank 0's weights and optimiser state (after rank 0 made or loaded
    /// them); every rank calls it. Ranks start from the same seed, so this only matters
    /// for weights loaded from files, but it makes sure.
    void synchronise() {
        const std::vector<nn::Parameter<B>*> params = m_policy.parameters();
        nn::broadcast_parameters<B>(m_comm, std::span<nn::Parameter<B>* const>(params), 0);
        nn::broadcast_adam(m_comm, m_adam, 0);
    }

    /// Collects a rollout and updates the policy from it (on every rank together).
    UpdateLog update() {
        const auto start = std::chrono::steady_clock::now();
        const std::size_t per_env = std::max<std::size_t>(1, m_state.ppo.rollout_steps / m_envs.total());
        std::vector<EpisodeRecord> mine;
        const std::vector<RolloutSegment> segments = m_envs.collect(m_policy, per_env, m_rng, mine, m_pool.get());
        const auto collected = std::chrono::steady_clock::now();
        UpdateLog log;
        PpoOptions now = m_state.ppo;
        now.entropy_coefficient = entropy_at(m_state.ppo, m_state.updates);
        log.stats = ppo_update_over<B>(m_comm, m_policy, m_adam, std::span<const RolloutSegment>(segments), now, m_rng, m_pool.get(),
                                       std::span<const std::size_t>(m_envs.global_indices()));
        const std::vector<EpisodeRecord> ended = all_ranks(mine);
        m_state.updates += 1;
        m_state.env_steps += per_env * m_envs.total();
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
        const auto end = std::chrono::steady_clock::now();
        log.rollout_seconds = std::chrono::duration<double>(collected - start).count();
        log.update_seconds = std::chrono::duration<double>(end - collected).count();
        log.seconds = std::chrono::duration<double>(end - start).count();
        m_state.seconds += log.seconds;
        return log;
    }

    /// The agent's state now, for save_mf_agent: the whole run's, on every rank (which all
    /// call it).
    [[nodiscard]] MfAgentState snapshot() {
        MfAgentState s = m_state;
        s.rng = m_rng.state();
        gather_episodes(s.episode_actions, s.episode_returns);
        s.final_cost_ratio = m_final;
        s.best_cost_ratio = m_best;
        return s;
    }
    [[nodiscard]] const MfAgentState& state() const noexcept { return m_state; }

private:
    /// This rank's share of the run's `total` environments: every size()-th from its rank
    /// on. The environments are graph-major, so each rank gets the graphs in turn and the
    /// ranks' work stays even when the graphs' sizes differ.
    [[nodiscard]] static std::vector<std::size_t> share_of(AnyCommunicator& comm, std::size_t total) {
        const auto ranks = static_cast<std::size_t>(comm.size());
        RLFLOW_EXPECTS(total >= ranks, precondition_error,
                       std::to_string(total) + " environments (graphs times environments per graph) for " + std::to_string(ranks)
                           + " ranks: every rank needs one at least; give more environments per graph or run fewer ranks");
        std::vector<std::size_t> share;
        for (auto e = static_cast<std::size_t>(comm.rank()); e < total; e += ranks) share.push_back(e);
        return share;
    }

    /// Where the checkpoint's episodes in progress (the whole run's) leave this rank's share.
    void restore_share() {
        RLFLOW_EXPECTS(m_state.episode_actions.size() == m_envs.total() && m_state.episode_returns.size() == m_envs.total(),
                       precondition_error,
                       "MfTrainer: the checkpoint holds " + std::to_string(m_state.episode_actions.size()) + " episodes in progress for "
                           + std::to_string(m_envs.total()) + " environments");
        std::vector<std::vector<Action>> actions;
        std::vector<double> returns;
        for (const std::size_t g : m_envs.global_indices()) {
            actions.push_back(m_state.episode_actions[g]);
            returns.push_back(m_state.episode_returns[g]);
        }
        m_envs.restore(actions, returns);
    }

    /// Every rank's finished episodes, in the order one process lists them (environment by
    /// environment, each in the order they ended).
    [[nodiscard]] std::vector<EpisodeRecord> all_ranks(const std::vector<EpisodeRecord>& mine) {
        if (m_comm.size() == 1) return mine;
        std::vector<EpisodeRecord> all;
        for (const std::string& part : all_gather_bytes(m_comm, to_bytes(std::span<const EpisodeRecord>(mine)))) {
            const std::vector<EpisodeRecord> records = from_bytes<EpisodeRecord>(part);
            all.insert(all.end(), records.begin(), records.end());
        }
        std::stable_sort(all.begin(), all.end(), [](const EpisodeRecord& a, const EpisodeRecord& b) { return a.environment < b.environment; });
        return all;
    }

    /// Every rank's episodes in progress (their actions and returns), in global order.
    void gather_episodes(std::vector<std::vector<Action>>& actions, std::vector<double>& returns) {
        actions = m_envs.episode_actions();
        returns = m_envs.episode_returns();
        if (m_comm.size() == 1) return;
        // Per environment: its global index, its return, its action count, then the actions.
        std::vector<double> packed;
        for (std::size_t e = 0; e < actions.size(); ++e) {
            packed.insert(packed.end(), {static_cast<double>(m_envs.global_indices()[e]), returns[e], static_cast<double>(actions[e].size())});
            for (const Action& a : actions[e]) packed.insert(packed.end(), {static_cast<double>(a.xfer), static_cast<double>(a.location)});
        }
        actions.assign(m_envs.total(), {});
        returns.assign(m_envs.total(), 0);
        for (const std::string& part : all_gather_bytes(m_comm, to_bytes(std::span<const double>(packed)))) {
            const std::vector<double> values = from_bytes<double>(part);
            for (std::size_t i = 0; i < values.size();) {
                const auto g = static_cast<std::size_t>(values[i]);
                returns.at(g) = values[i + 1];
                const auto count = static_cast<std::size_t>(values[i + 2]);
                i += 3;
                for (std::size_t k = 0; k < count; ++k, i += 2)
                    actions[g].push_back({static_cast<std::uint32_t>(values[i]), static_cast<std::uint32_t>(values[i + 1])});
            }
        }
    }

    [[nodiscard]] static nn::AdamOptions adam_options(const PpoOptions& ppo) {
        const auto per_update = static_cast<std::int64_t>(ppo.epochs) *
                                static_cast<std::int64_t>((ppo.rollout_steps + ppo.minibatch_size - 1) / ppo.minibatch_size);
        constexpr double floor_fraction = 0.1;
        return nn::AdamOptions{.learning_rate = nn::LearningRateSchedule::linear(
                                   ppo.learning_rate, ppo.learning_rate * floor_fraction,
                                   static_cast<std::int64_t>(planned_updates) * std::max<std::int64_t>(per_update, 1))};
    }

    MfAgentState m_state;
    AnyCommunicator m_comm;
    std::unique_ptr<ThreadPool> m_pool;
    std::vector<std::size_t> m_share;
    EnvironmentSet<C> m_envs;
    ActorCritic<B> m_policy;
    nn::Adam<B> m_adam;
    Rng m_rng;
    std::vector<double> m_final;
    std::vector<double> m_best;
};

}  // namespace rlflow::rl
