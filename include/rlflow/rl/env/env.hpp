#pragma once
/// \file
/// GraphEnv: the graph-rewriting environment (the RLFlow thesis §3.3),
/// Gym-like. reset(graph) starts an episode on a graph; step(Action{xfer, location})
/// applies rule `xfer` at its location `location` in place, and returns the next
/// observation, the reward and whether the episode ended. The working graph is the
/// searches' own engine (search::SearchState): the location index updates its masks
/// incrementally, the cost tracker re-prices only the touched nodes, and the one-step
/// gains of the observation are the kept action prices, probed again only where the last
/// rewrite touched what they read.
///
/// - NO-OP (xfer = N) terminates the episode and leaves the graph as it is.
/// - After `step_limit` steps the episode is truncated (a learner bootstraps the value
///   there: the episode did not end, it was cut).
/// - Reward = (cost_{t-1} - cost_t) / cost_0 x reward_scale, so the rewards of an episode
///   sum to (cost_0 - cost_T) / cost_0 x reward_scale: the fraction of the input's cost the
///   episode saved. The cost is the cost model's per-op sum, or a GraphMeasure of the whole
///   graph (measure_with: the end-to-end latency in ONNX Runtime, cost/ort_latency.hpp).
/// - undo() steps back over the last step and redo() takes a known step again, when the
///   environment keeps its steps (keep_steps): a planner walks a tree of rewrites in one
///   episode, and the index, prices and observation settle once, where it next looks.
/// - An action the masks forbid is a programming error of the agent: step() throws
///   precondition_error, it does not return a penalty (the thesis's environment rewarded
///   invalid actions with a penalty, which teaches the masks instead of the task).

#include <rlflow/core/error.hpp>
#include <rlflow/cost/cost_tracker.hpp>
#include <rlflow/rewrite/location_index.hpp>
#include <rlflow/rl/env/observation.hpp>
#include <rlflow/search/search_state.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rlflow::rl {

/// An action: rule `xfer` at its location `location`; xfer = N (the number of rules) is
/// NO-OP, whose location is ignored.
struct Action {
    std::uint32_t xfer = 0;
    std::uint32_t location = 0;
    friend bool operator==(const Action&, const Action&) = default;
};

/// How a GraphEnv behaves.
struct EnvOptions {
    /// L: the most locations per xfer an agent chooses from (thesis: 200).
    std::size_t max_locations = 200;
    /// Steps after which an episode is truncated.
    std::size_t step_limit = 100;
    /// Rewards are fractions of the input's cost times this.
    double reward_scale = 100;
    /// Keep every location's one-step gain for Observation::location_gain (each action's
    /// price, probed when it appears and again when a rewrite touches what it read); off,
    /// the gains are all 0 and a step costs apply + masks + cost + features alone.
    bool one_step_gains = true;
    friend bool operator==(const EnvOptions&, const EnvOptions&) = default;
};

/// A measure of a whole graph's cost in ms, taking the place of the cost model's per-op
/// sum in rewards (OrtLatency: its end-to-end latency in ONNX Runtime).
using GraphMeasure = std::function<double(const Graph&)>;

/// What a step did, for logs and reports.
struct StepInfo {
    /// The graph's cost after the step, in ms.
    double cost_ms = 0;
    /// The rule applied ("" for NO-OP).
    std::string rule;
    std::uint32_t location = 0;
    /// Live nodes of the graph after the step.
    std::size_t graph_nodes = 0;
};

/// What step() returns.
struct StepResult {
    Observation observation;
    double reward = 0;
    /// The agent chose NO-OP: the episode is over.
    bool terminated = false;
    /// The step limit cut the episode.
    bool truncated = false;
    StepInfo info;
};

/// The graph-rewriting environment over `rules`, priced by a CostModel that must outlive it.
template <cost::CostBackend Backend>
class GraphEnv {
public:
    /// Environments that share `model` from several threads pass one `pricing` mutex: it
    /// is held while the model prices (its cache is not thread-safe), and only then.
    GraphEnv(std::shared_ptr<const rewrite::RuleSet> rules, cost::CostModel<Backend>& model, EnvOptions options = {},
             std::mutex* pricing = nullptr)
        : m_rules(std::move(rules)), m_model(&model), m_options(options), m_pricing(pricing) {
        RLFLOW_EXPECTS(m_rules != nullptr, precondition_error, "GraphEnv needs a rule set");
        RLFLOW_EXPECTS(m_options.max_locations > 0 && m_options.step_limit > 0 && m_options.reward_scale > 0,
                       precondition_error, "EnvOptions: max_locations, step_limit and reward_scale must be positive");
    }

    /// Rewards and costs from `measure` instead of the cost model's per-op sum (empty: the
    /// sum), from the next reset on. Observations keep the model's per-op costs. A measure
    /// shared by environments on several threads is called under the pricing mutex.
    void measure_with(GraphMeasure measure) { m_measure = std::move(measure); }

    /// Starts an episode on `graph`; returns the first observation.
    Observation reset(Graph graph) {
        m_state.reset();
        m_observed.clear();
        {
            const auto lock = pricing_lock();
            m_state.emplace(std::move(graph), m_rules, *m_model,
                            search::SearchStateOptions{.index = rewrite::IndexOptions{m_options.max_locations},
                                                       .price_actions = m_options.one_step_gains,
                                                       .hash = false});
            m_initial_cost = m_measure ? m_measure(m_state->graph()) : m_state->cost();
        }
        RLFLOW_EXPECTS(m_initial_cost > 0, precondition_error, "GraphEnv: the graph costs nothing, there is nothing to save");
        m_cost = m_initial_cost;
        m_steps = 0;
        m_done = false;
        m_kept.clear();
        return observation();
    }

    /// Whether step() and redo() keep what undo() needs to step back over them (from the
    /// next step on; off by default, since a kept rewrite holds the nodes it replaced).
    void keep_steps(bool keep) {
        m_keep_steps = keep;
        if (!keep) m_kept.clear();
    }

    /// Steps back over the last kept step: the graph, its cost and the step count are as
    /// they were before it, and the episode runs again. Only the graph follows at once; the
    /// location index, the prices and the observation catch up at the next step() or
    /// observe(), so a walk back over many steps settles once. Throws precondition_error
    /// when no step is kept.
    void undo() {
        RLFLOW_EXPECTS(!m_kept.empty(), precondition_error, "GraphEnv::undo: no step is kept (keep_steps, then step)");
        Kept last = std::move(m_kept.back());
        m_kept.pop_back();
        if (last.journal) m_state->revert(std::move(*last.journal));
        m_cost = last.cost_before;
        --m_steps;
        m_done = false;
    }

    /// Takes again a step that was taken before from the same graph, reached by the same
    /// steps (a planner walking down its tree): rule `xfer` at `where` (ids are
    /// reproducible), which led to `cost_after`. As undo(), only the graph follows at once.
    /// Needs keep_steps.
    void redo(std::uint32_t xfer, const rewrite::Location& where, double cost_after) {
        RLFLOW_EXPECTS(m_keep_steps && m_state.has_value() && !m_done, precondition_error,
                       "GraphEnv::redo needs kept steps and a running episode");
        m_kept.push_back({m_state->edit(xfer, where), m_cost});
        m_cost = cost_after;
        ++m_steps;
        m_done = m_steps >= m_options.step_limit;
    }

    /// The observation of the graph now (after undo() or redo(), what step() would have
    /// returned there).
    Observation observe() {
        RLFLOW_EXPECTS(m_state.has_value(), precondition_error, "GraphEnv::observe before reset");
        catch_up();
        return observation();
    }

    /// The location rule `xfer`'s location number `location` names now.
    [[nodiscard]] rewrite::Location location(Action action) {
        catch_up();
        const rewrite::LocationIndex& index = m_state->index();
        RLFLOW_EXPECTS(action.xfer < index.num_rules() && action.location < index.num_choices(action.xfer), precondition_error,
                       "GraphEnv::location: no location " + std::to_string(action.location) + " of xfer " + std::to_string(action.xfer));
        return index.location(action.xfer, action.location);
    }

    /// step() of rule `xfer` at `where`, which the index must list now.
    StepResult step_at(std::uint32_t xfer, const rewrite::Location& where) {
        catch_up();
        const rewrite::LocationIndex& index = m_state->index();
        RLFLOW_EXPECTS(xfer < index.num_rules(), precondition_error, "GraphEnv::step_at: xfer " + std::to_string(xfer) + " is out of range");
        for (std::uint32_t l = 0; l < index.num_choices(xfer); ++l)
            if (index.location(xfer, l) == where) return step({xfer, l});
        throw precondition_error("GraphEnv::step_at: the index does not list that location of '" + (*m_rules)[xfer].name + "'");
    }

    /// Takes `action`; throws precondition_error if the masks forbid it, if no episode is
    /// running, or if the last one ended.
    StepResult step(Action action) {
        RLFLOW_EXPECTS(m_state.has_value(), precondition_error, "GraphEnv::step before reset");
        RLFLOW_EXPECTS(!m_done, precondition_error, "GraphEnv::step after the episode ended; call reset");
        catch_up();
        const rewrite::LocationIndex& index = m_state->index();
        const auto n = static_cast<std::uint32_t>(index.num_rules());
        RLFLOW_EXPECTS(action.xfer <= n, precondition_error,
                       "GraphEnv: xfer " + std::to_string(action.xfer) + " is out of range (N = " + std::to_string(n) + ")");
        StepResult result;
        if (action.xfer == n) {
            result.terminated = true;
        } else {
            RLFLOW_EXPECTS(action.location < index.num_choices(action.xfer), precondition_error,
                           "GraphEnv: the masks forbid location " + std::to_string(action.location) + " of xfer "
                               + std::to_string(action.xfer) + " ('" + (*m_rules)[action.xfer].name + "', "
                               + std::to_string(index.num_choices(action.xfer)) + " locations)");
            const rewrite::Location where = index.location(action.xfer, action.location);
            const auto lock = pricing_lock();
            EditJournal journal = m_state->apply(action.xfer, where);
            if (m_keep_steps) m_kept.push_back({std::move(journal), m_cost});
            m_observed.forget(m_state->graph(), m_state->synced_nodes());
            result.info.rule = (*m_rules)[action.xfer].name;
            result.info.location = action.location;
            m_cost_now = m_measure ? m_measure(m_state->graph()) : m_state->cost();
        }
        if (m_keep_steps && result.terminated) m_kept.push_back({std::nullopt, m_cost});
        ++m_steps;  // a refused action is not a step
        const double cost = result.terminated ? m_cost : m_cost_now;
        result.reward = (m_cost - cost) / m_initial_cost * m_options.reward_scale;
        m_cost = cost;
        result.truncated = !result.terminated && m_steps >= m_options.step_limit;
        m_done = result.terminated || result.truncated;
        result.info.cost_ms = cost;
        result.info.graph_nodes = m_state->graph().num_nodes();
        result.observation = observation();
        return result;
    }

    /// N: the number of xfers; action xfer N is NO-OP.
    [[nodiscard]] std::uint32_t num_xfers() const noexcept { return static_cast<std::uint32_t>(m_rules->size()); }
    [[nodiscard]] const rewrite::RuleSet& rules() const noexcept { return *m_rules; }
    [[nodiscard]] const EnvOptions& options() const noexcept { return m_options; }
    /// The graph as it is now (after reset).
    [[nodiscard]] const Graph& graph() const {
        RLFLOW_EXPECTS(m_state.has_value(), precondition_error, "GraphEnv::graph before reset");
        return m_state->graph();
    }
    [[nodiscard]] double cost_ms() const noexcept { return m_cost; }
    [[nodiscard]] double initial_cost_ms() const noexcept { return m_initial_cost; }
    [[nodiscard]] std::size_t steps() const noexcept { return m_steps; }
    /// Whether the episode has ended (NO-OP or the step limit).
    [[nodiscard]] bool done() const noexcept { return m_done; }

private:
    /// Brings the index, the prices and what the observation knows up to date after undo()
    /// and redo().
    void catch_up() {
        if (!m_state->pending()) return;
        const auto lock = pricing_lock();
        m_state->sync();
        m_observed.forget(m_state->graph(), m_state->synced_nodes());
    }

    /// The observation of the graph now.
    [[nodiscard]] Observation observation() {
        return rl::observe(m_state->graph(), m_state->index(), m_state->tracker(), location_gains(), m_observed);
    }

    /// Every valid location's one-step gain (Observation::location_gain): its kept price
    /// under the cost model, whatever measures the rewards.
    [[nodiscard]] std::vector<float> location_gains() const {
        const rewrite::LocationIndex& index = m_state->index();
        std::vector<float> gains;
        const double now = m_state->cost();
        for (std::uint32_t r = 0; r < index.num_rules(); ++r)
            for (std::size_t l = 0; l < index.num_choices(r); ++l) {
                const std::optional<double> delta = m_options.one_step_gains ? m_state->price_of(r, index.location(r, l)) : std::nullopt;
                gains.push_back(delta ? static_cast<float>(-*delta / now * m_options.reward_scale) : 0.0f);
            }
        return gains;
    }

    /// The pricing mutex held, when there is one.
    [[nodiscard]] std::unique_lock<std::mutex> pricing_lock() const {
        return m_pricing ? std::unique_lock<std::mutex>(*m_pricing) : std::unique_lock<std::mutex>();
    }

    std::shared_ptr<const rewrite::RuleSet> m_rules;
    cost::CostModel<Backend>* m_model;
    EnvOptions m_options;
    std::mutex* m_pricing;
    GraphMeasure m_measure;
    /// The cost after the last rewrite (read outside the pricing lock).
    double m_cost_now = 0;
    std::optional<search::SearchState<Backend>> m_state;
    /// What the episode's last observation knew of the graph.
    ObservationCache m_observed;
    double m_initial_cost = 0;
    double m_cost = 0;
    std::size_t m_steps = 0;
    bool m_done = false;
    /// What undo() needs of a step: its rewrite's record (none for NO-OP) and the cost before it.
    struct Kept {
        std::optional<EditJournal> journal;
        double cost_before = 0;
    };
    bool m_keep_steps = false;
    std::vector<Kept> m_kept;
};

}  // namespace rlflow::rl
