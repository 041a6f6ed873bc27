#pragma once
/// \file
/// Collecting experience: a set of environments (a few per training graph), each
/// restarting on its graph when an episode ends, stepped in parallel. What PPO updates
/// from (RolloutSegment, one per environment) and what training logs (finished episodes).
///
/// Each environment decides and steps on its own (a batch of one), with a random stream
/// seeded for it from the trainer's generator at every step, and writes only its own
/// segment: a rollout is the same for any number of threads. They share the cost model
/// under one mutex (GraphEnv's `pricing`).

#include <rlflow/core/error.hpp>
#include <rlflow/core/parallel.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/rl/env/env.hpp>
#include <rlflow/rl/model_free/policy.hpp>
#include <rlflow/rl/model_free/ppo.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace rlflow::rl {

/// An episode that ended during a rollout.
struct EpisodeRecord {
    /// Which environment it ran in (its global index), and on which graph.
    std::size_t environment = 0;
    std::size_t graph = 0;
    /// Sum of its rewards.
    double episode_return = 0;
    /// Its graph's cost at the end over the cost at the start.
    double cost_ratio = 1;
    std::size_t steps = 0;
};

/// Environments over their start graphs, with the observation each is at: all of a run's
/// environments, or one share of them (the others held by other ranks), named by their
/// global indices. Indices are local to the share unless named global.
template <cost::CostBackend C>
class EnvironmentSet {
public:
    /// `copies` environments per graph (graph-major: those of graph 0 first), all over
    /// `rules` and priced by `model`, rewarded by `measure` when given (GraphEnv::measure_with);
    /// of those, the ones whose global indices `share` lists (empty: all).
    EnvironmentSet(std::vector<Graph> graphs, std::shared_ptr<const rewrite::RuleSet> rules, cost::CostModel<C>& model,
                   EnvOptions options = {}, std::size_t copies = 1, const GraphMeasure& measure = {},
                   std::vector<std::size_t> share = {})
        : m_graphs(std::move(graphs)), m_copies(copies), m_total(m_graphs.size() * copies), m_global(std::move(share)) {
        RLFLOW_EXPECTS(!m_graphs.empty() && copies >= 1, precondition_error,
                       "EnvironmentSet needs a graph and at least one environment per graph");
        if (m_global.empty())
            for (std::size_t e = 0; e < m_total; ++e) m_global.push_back(e);
        for (std::size_t e = 0; e < m_global.size(); ++e)
            RLFLOW_EXPECTS(m_global[e] < m_total && (e == 0 || m_global[e - 1] < m_global[e]), precondition_error,
                           "EnvironmentSet: a share lists environments of the " + std::to_string(m_total)
                               + " in increasing order, each once");
        m_envs.reserve(m_global.size());
        for (std::size_t e = 0; e < m_global.size(); ++e) {
            m_envs.emplace_back(rules, model, options, m_pricing.get());
            m_envs.back().measure_with(measure);
            m_current.push_back(m_envs.back().reset(m_graphs[graph_of(e)]));
            m_returns.push_back(0);
        }
        m_actions.resize(m_envs.size());
    }

    /// The actions of each environment's episode in progress, and their returns: with the
    /// start graphs, all it takes to rebuild the environments exactly (restore()).
    [[nodiscard]] const std::vector<std::vector<Action>>& episode_actions() const noexcept { return m_actions; }
    [[nodiscard]] const std::vector<double>& episode_returns() const noexcept { return m_returns; }
    /// Puts every environment where `actions` (one list per environment) lead from its
    /// start graph; throws precondition_error if a list does not fit its graph.
    void restore(const std::vector<std::vector<Action>>& actions, const std::vector<double>& returns) {
        RLFLOW_EXPECTS(actions.size() == m_envs.size() && returns.size() == m_envs.size(), precondition_error,
                       "EnvironmentSet::restore: " + std::to_string(actions.size()) + " episodes for "
                           + std::to_string(m_envs.size()) + " environments");
        for (std::size_t e = 0; e < m_envs.size(); ++e) {
            m_current[e] = m_envs[e].reset(m_graphs[graph_of(e)]);
            for (const Action& a : actions[e]) {
                StepResult r = m_envs[e].step(a);
                RLFLOW_EXPECTS(!r.terminated && !r.truncated, precondition_error,
                               "EnvironmentSet::restore: an episode in progress cannot have ended");
                m_current[e] = std::move(r.observation);
            }
        }
        m_actions = actions;
        m_returns = returns;
    }
    /// The environments here, and in the whole run.
    [[nodiscard]] std::size_t size() const noexcept { return m_envs.size(); }
    [[nodiscard]] std::size_t total() const noexcept { return m_total; }
    /// The global index of each environment here, in order.
    [[nodiscard]] const std::vector<std::size_t>& global_indices() const noexcept { return m_global; }
    [[nodiscard]] std::size_t num_graphs() const noexcept { return m_graphs.size(); }
    /// The graph environment `e` runs on.
    [[nodiscard]] std::size_t graph_of(std::size_t e) const noexcept { return m_global[e] / m_copies; }
    [[nodiscard]] GraphEnv<C>& env(std::size_t i) { return m_envs.at(i); }
    [[nodiscard]] const Observation& observation(std::size_t i) const { return m_current.at(i); }

    /// Steps every environment `steps_per_env` times with `policy`, on `pool`'s threads
    /// (none: in turn on this one); returns one segment per environment and appends the episodes that ended
    /// to `episodes` (environment by environment, each in the order they ended).
    /// `rng` seeds the steps of all the run's environments, whichever this set holds: the
    /// environments a share holds step as they do in the whole set.
    template <nn::TensorBackend B>
    std::vector<RolloutSegment> collect(ActorCritic<B>& policy, std::size_t steps_per_env, Rng& rng,
                                        std::vector<EpisodeRecord>& episodes, ThreadPool* pool = nullptr) {
        const std::size_t n = m_envs.size();
        std::vector<RolloutSegment> segments(n);
        std::vector<std::vector<EpisodeRecord>> ended(n);
        std::vector<std::uint64_t> seeds(m_total);
        for (std::size_t t = 0; t < steps_per_env; ++t) {
            for (std::uint64_t& seed : seeds) seed = rng.next();
            run_items(pool, n, [&](std::size_t e, unsigned) { step(policy, e, seeds[m_global[e]], segments[e], ended[e]); });
        }
        // The segments' last steps that did not end are bootstrapped from where they stopped.
        run_items(pool, n, [&](std::size_t e, unsigned) {
            RolloutSegment& s = segments[e];
            if (!s.terminated.back() && !s.truncated.back()) s.next_values.back() = value(policy, m_current[e]);
        });
        for (std::vector<EpisodeRecord>& list : ended) episodes.insert(episodes.end(), list.begin(), list.end());
        return segments;
    }

private:
    template <nn::TensorBackend B>
    [[nodiscard]] static double value(ActorCritic<B>& policy, const Observation& o) {
        const Observation* one = &o;
        return policy.values(std::span<const Observation* const>(&one, 1))[0];
    }

    /// One step of environment `e`: decide with a stream seeded by `seed`, step, record.
    template <nn::TensorBackend B>
    void step(ActorCritic<B>& policy, std::size_t e, std::uint64_t seed, RolloutSegment& s,
              std::vector<EpisodeRecord>& ended) {
        Rng rng(seed);
        const Observation* current = &m_current[e];
        const Decision d = policy.act(std::span<const Observation* const>(&current, 1), rng);
        const Action action = d.actions[0];
        // The value of the observation the previous step reached.
        if (!s.terminated.empty() && !s.terminated.back() && !s.truncated.back()) s.next_values.back() = d.values[0];
        StepResult r = m_envs[e].step(action);
        s.observations.push_back(std::move(m_current[e]));
        s.actions.push_back(action);
        s.log_probs.push_back(d.log_probs[0]);
        s.values.push_back(d.values[0]);
        s.rewards.push_back(r.reward);
        s.next_values.push_back(0);
        s.terminated.push_back(r.terminated ? 1 : 0);
        s.truncated.push_back(r.truncated ? 1 : 0);
        m_returns[e] += r.reward;
        m_actions[e].push_back(action);
        if (!r.terminated && !r.truncated) {
            m_current[e] = std::move(r.observation);
            return;
        }
        // A truncated episode is bootstrapped from the value of where it was cut.
        if (r.truncated) s.next_values.back() = value(policy, r.observation);
        ended.push_back({m_global[e], graph_of(e), m_returns[e], m_envs[e].cost_ms() / m_envs[e].initial_cost_ms(), m_envs[e].steps()});
        m_actions[e].clear();
        m_returns[e] = 0;
        m_current[e] = m_envs[e].reset(m_graphs[graph_of(e)]);
    }

    std::vector<Graph> m_graphs;
    std::size_t m_copies;
    std::size_t m_total;
    std::vector<std::size_t> m_global;
    /// Held while an environment prices (declared before the environments that use it).
    std::unique_ptr<std::mutex> m_pricing = std::make_unique<std::mutex>();
    std::vector<GraphEnv<C>> m_envs;
    std::vector<Observation> m_current;
    std::vector<double> m_returns;
    std::vector<std::vector<Action>> m_actions;
};

}  // namespace rlflow::rl
