#pragma once
/// \file
/// Collecting experience: a set of environments, each restarting on its own graph when an
/// episode ends, stepped together with one batched policy decision per step. What PPO
/// updates from (RolloutSegment, one per environment) and what training logs (finished
/// episodes).

#include <rlflow/core/error.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/rl/env.hpp>
#include <rlflow/rl/policy.hpp>
#include <rlflow/rl/ppo.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rlflow::rl {

/// An episode that ended during a rollout.
struct EpisodeRecord {
    /// Which environment (and so which graph) it ran in.
    std::size_t environment = 0;
    /// Sum of its rewards.
    double episode_return = 0;
    /// Its graph's cost at the end over the cost at the start.
    double cost_ratio = 1;
    std::size_t steps = 0;
};

/// Environments over their start graphs, with the observation each is at.
template <cost::CostBackend C>
class EnvironmentSet {
public:
    /// One environment per graph, all over `rules` and priced by `model`.
    EnvironmentSet(std::vector<Graph> graphs, std::shared_ptr<const rewrite::RuleSet> rules, cost::CostModel<C>& model,
                   EnvOptions options = {})
        : m_graphs(std::move(graphs)) {
        RLFLOW_EXPECTS(!m_graphs.empty(), precondition_error, "EnvironmentSet needs a graph");
        for (const Graph& g : m_graphs) {
            m_envs.emplace_back(rules, model, options);
            m_current.push_back(m_envs.back().reset(g));
            m_returns.push_back(0);
        }
        m_actions.resize(m_graphs.size());
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
            m_current[e] = m_envs[e].reset(m_graphs[e]);
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
    [[nodiscard]] std::size_t size() const noexcept { return m_envs.size(); }
    [[nodiscard]] GraphEnv<C>& env(std::size_t i) { return m_envs.at(i); }
    [[nodiscard]] const Observation& observation(std::size_t i) const { return m_current.at(i); }

    /// Steps every environment `steps_per_env` times with `policy`; returns one segment per
    /// environment and appends the episodes that ended to `episodes`.
    template <nn::TensorBackend B>
    std::vector<RolloutSegment> collect(ActorCritic<B>& policy, std::size_t steps_per_env, Rng& rng,
                                        std::vector<EpisodeRecord>& episodes) {
        const std::size_t n = m_envs.size();
        std::vector<RolloutSegment> segments(n);
        for (std::size_t t = 0; t < steps_per_env; ++t) {
            const Decision d = policy.act(pointers(), rng);
            std::vector<std::size_t> truncated_envs;
            std::vector<Observation> truncated_final;
            for (std::size_t e = 0; e < n; ++e) {
                RolloutSegment& s = segments[e];
                // The value of the observation the previous step reached.
                if (t > 0 && !s.terminated.back() && !s.truncated.back()) s.next_values.back() = d.values[e];
                StepResult r = m_envs[e].step(d.actions[e]);
                s.observations.push_back(std::move(m_current[e]));
                s.actions.push_back(d.actions[e]);
                s.log_probs.push_back(d.log_probs[e]);
                s.values.push_back(d.values[e]);
                s.rewards.push_back(r.reward);
                s.next_values.push_back(0);
                s.terminated.push_back(r.terminated ? 1 : 0);
                s.truncated.push_back(r.truncated ? 1 : 0);
                m_returns[e] += r.reward;
                m_actions[e].push_back(d.actions[e]);
                if (r.terminated || r.truncated) {
                    m_actions[e].clear();
                    episodes.push_back({e, m_returns[e], m_envs[e].cost_ms() / m_envs[e].initial_cost_ms(), m_envs[e].steps()});
                    m_returns[e] = 0;
                    if (r.truncated) {
                        truncated_envs.push_back(e);
                        truncated_final.push_back(std::move(r.observation));
                    }
                    m_current[e] = m_envs[e].reset(m_graphs[e]);
                } else {
                    m_current[e] = std::move(r.observation);
                }
            }
            // A truncated episode is bootstrapped from the value of where it was cut.
            if (!truncated_envs.empty()) {
                std::vector<const Observation*> finals;
                for (const Observation& o : truncated_final) finals.push_back(&o);
                const std::vector<double> v = policy.values(finals);
                for (std::size_t k = 0; k < truncated_envs.size(); ++k) segments[truncated_envs[k]].next_values.back() = v[k];
            }
        }
        // The segments' last steps that did not end are bootstrapped from where they stopped.
        const std::vector<double> v = policy.values(pointers());
        for (std::size_t e = 0; e < n; ++e)
            if (!segments[e].terminated.back() && !segments[e].truncated.back()) segments[e].next_values.back() = v[e];
        return segments;
    }

private:
    [[nodiscard]] std::vector<const Observation*> pointers() const {
        std::vector<const Observation*> out;
        for (const Observation& o : m_current) out.push_back(&o);
        return out;
    }

    std::vector<Graph> m_graphs;
    std::vector<GraphEnv<C>> m_envs;
    std::vector<Observation> m_current;
    std::vector<double> m_returns;
    std::vector<std::vector<Action>> m_actions;
};

}  // namespace rlflow::rl
