#pragma once
/// \file
/// Planning at inference: the trained agent proposes and a tree search disposes. A Monte
/// Carlo tree search over rewrites (PUCT, as AlphaZero's: Silver et al., 2018) in which a
/// node's children are the xfers the agent finds most probable, each at its best one-step
/// gain location, its prior is the agent's probability, and a new node is judged by the
/// agent's value estimate. Values are compared on the min-max normalised scale of MuZero
/// (Schrittwieser et al., 2020), since rewards are fractions of the input's cost and have
/// no fixed range.
///
/// The search walks one environment: a simulation takes again the steps it knows down the
/// tree (GraphEnv::redo, the graph alone following), steps into the environment where it
/// leaves the tree, and undoes its steps on the way back (GraphEnv::undo), so the index,
/// the prices and the observation settle once a simulation, and a graph is never copied
/// but to keep the cheapest one met. After `simulations` simulations the root commits to its most
/// visited child and the subtree below it is kept; this repeats to the step limit, the
/// budget or a root without rewrites. The result is the cheapest graph met anywhere in
/// the tree, as for a rollout (agent_search.hpp).

#include <rlflow/core/error.hpp>
#include <rlflow/rl/env/env.hpp>
#include <rlflow/rl/model_free/policy.hpp>
#include <rlflow/rl/plan_options.hpp>
#include <rlflow/search/search.hpp>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

namespace rlflow::rl {

/// What the tree search found: the cheapest graph met, the rules that led to it from the
/// input and the tree's size.
struct PlanResult {
    Graph graph;
    double cost_ms = 0;
    std::vector<std::uint32_t> path;
    /// Nodes evaluated by the agent (one policy pass each).
    std::size_t evaluations = 0;
    /// Steps committed at the root.
    std::size_t committed = 0;
    std::optional<search::StopReason> stopped;
};

/// What a planner needs of an agent: guide() of one observation (ActorCritic, MbPolicy).
template <class P>
concept PlanningPolicy = requires(P& p, const Observation& o) {
    { p.guide(o) } -> std::same_as<Guidance>;
};

namespace detail {

/// The tree: nodes own their outgoing edges; an edge's child is a node index, -1 until
/// the edge is first taken.
struct PlanEdge {
    Action action;
    double prior = 0;
    /// The one-step reward of the action as the observation priced it: the edge's value
    /// until it is visited.
    double gain = 0;
    std::uint32_t visits = 0;
    double return_sum = 0;
    std::int32_t child = -1;
    /// Once taken (child >= 0): where it rewrote, its reward and the cost it led to.
    rewrite::Location where{};
    double reward = 0;
    double cost_after = 0;
};

struct PlanNode {
    std::vector<PlanEdge> edges;
    std::uint32_t visits = 0;
};

/// The running min and max of the returns the tree has seen.
struct ReturnBounds {
    double low = std::numeric_limits<double>::infinity();
    double high = -std::numeric_limits<double>::infinity();
    void see(double g) {
        low = std::min(low, g);
        high = std::max(high, g);
    }
    /// `g` on [0, 1] between the bounds (0.5 before two distinct returns are seen).
    [[nodiscard]] double normalise(double g) const {
        if (!(high > low)) return 0.5;
        return std::clamp((g - low) / (high - low), 0.0, 1.0);
    }
};

}  // namespace detail

/// The children of a node at observation `o` as `guidance` ranks them: the most probable
/// xfers but NO-OP (at most `max_children`, the most probable first, index order among
/// equals), each at its best one-step-gain location, priors renormalised over them.
[[nodiscard]] inline std::vector<detail::PlanEdge> plan_children(const Observation& o, const Guidance& guidance, std::size_t max_children) {
    std::vector<std::uint32_t> xfers;
    for (std::uint32_t x = 0; x < o.num_xfers; ++x)
        if (o.location_count(x) > 0) xfers.push_back(x);
    std::stable_sort(xfers.begin(), xfers.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return guidance.xfer_probs[a] > guidance.xfer_probs[b]; });
    if (xfers.size() > max_children) xfers.resize(max_children);
    double total = 0;
    for (const std::uint32_t x : xfers) total += guidance.xfer_probs[x];
    std::vector<detail::PlanEdge> edges;
    for (const std::uint32_t x : xfers) {
        const std::uint32_t l = best_location(o, x);
        const double prior = total > 0 ? guidance.xfer_probs[x] / total : 1.0 / static_cast<double>(xfers.size());
        edges.push_back({Action{x, l}, prior, static_cast<double>(o.gain(x, l))});
    }
    return edges;
}

/// Plans from `graph` in `env` (reset here; its steps are kept while planning) with the
/// agent `policy`. Every evaluation counts as an expansion against `stop`, from
/// `expansions` on (which it advances). `on_best` is called with each cheaper graph's cost.
/// `expected_steps`: how many steps the caller expects a good path to take (the budget is
/// spread over them; 0: the environment's step limit).
template <PlanningPolicy Policy, cost::CostBackend C>
[[nodiscard]] PlanResult plan(GraphEnv<C>& env, const Graph& graph, Policy& policy, const PlanOptions& options,
                              const search::StopRules& stop, std::size_t& expansions,
                              const std::function<void(double)>& on_best = {}, std::size_t expected_steps = 0) {
    RLFLOW_EXPECTS(options.simulations > 0 && options.max_children > 0 && options.exploration > 0, precondition_error,
                   "plan: simulations, max_children and exploration must be positive");
    if constexpr (requires { policy.begin_episode(); }) policy.begin_episode();
    env.keep_steps(true);
    Observation root_observation = env.reset(graph);
    PlanResult result{env.graph(), env.cost_ms(), {}, 0, 0, std::nullopt};
    std::vector<detail::PlanNode> nodes;
    detail::ReturnBounds bounds;
    std::vector<std::uint32_t> committed_path;

    // A new node at observation `o` (the environment's state); returns its value estimate
    // (0 where the episode ended).
    const auto expand = [&](const Observation& o, bool done) {
        nodes.emplace_back();
        ++result.evaluations;
        ++expansions;
        if (done) return 0.0;
        const Guidance g = policy.guide(o);
        nodes.back().edges = plan_children(o, g, options.max_children);
        for (detail::PlanEdge& e : nodes.back().edges) e.where = env.location(e.action);
        return g.value;
    };
    const auto score = [&](const detail::PlanNode& n, const detail::PlanEdge& e) {
        const double q = e.visits > 0 ? e.return_sum / e.visits : e.gain;
        return bounds.normalise(q) + options.exploration * e.prior * std::sqrt(static_cast<double>(n.visits) + 1) / (1.0 + e.visits);
    };
    const auto keep_if_cheaper = [&](const std::vector<std::uint32_t>& tail) {
        if (!(env.cost_ms() < result.cost_ms)) return;
        result.graph = env.graph();
        result.cost_ms = env.cost_ms();
        result.path = committed_path;
        result.path.insert(result.path.end(), tail.begin(), tail.end());
        if (on_best) on_best(result.cost_ms);
    };

    (void)expand(root_observation, false);
    std::size_t root = 0;
    std::vector<std::pair<std::size_t, std::size_t>> edge_path;  // (node, edge) from the root down
    std::vector<std::uint32_t> tail;
    while (!nodes[root].edges.empty()) {
        // The budget spread over the steps a good path is expected to take still.
        const std::size_t horizon = std::min(expected_steps > 0 ? expected_steps : env.options().step_limit, env.options().step_limit);
        const std::size_t steps_left = horizon > env.steps() ? horizon - env.steps() : 1;
        const std::size_t budget_left = stop.budget() > expansions ? stop.budget() - expansions : 0;
        const std::size_t simulations = std::clamp<std::size_t>(budget_left / steps_left, 1, options.simulations);
        for (std::size_t sim = 0; sim < simulations; ++sim) {
            if (const auto why = stop.check(expansions)) {
                result.stopped = why;
                break;
            }
            // Down the known edges, then one new step: a new node, judged by the agent.
            edge_path.clear();
            tail.clear();
            std::size_t at = root;
            double leaf_value = 0;
            while (!nodes[at].edges.empty()) {  // an ended episode, or no rewrite applies
                const detail::PlanNode& n = nodes[at];
                std::size_t pick = 0;
                for (std::size_t e = 1; e < n.edges.size(); ++e)
                    if (score(n, n.edges[e]) > score(n, n.edges[pick])) pick = e;
                edge_path.emplace_back(at, pick);
                tail.push_back(n.edges[pick].action.xfer);
                if (n.edges[pick].child >= 0) {
                    env.redo(n.edges[pick].action.xfer, n.edges[pick].where, n.edges[pick].cost_after);
                    at = static_cast<std::size_t>(n.edges[pick].child);
                    continue;
                }
                const StepResult s = env.step_at(n.edges[pick].action.xfer, n.edges[pick].where);
                keep_if_cheaper(tail);
                const auto child = static_cast<std::int32_t>(nodes.size());
                leaf_value = expand(s.observation, s.truncated || s.terminated);
                detail::PlanEdge& taken = nodes[at].edges[pick];
                taken.child = child;
                taken.reward = s.reward;
                taken.cost_after = s.info.cost_ms;
                break;
            }
            // Back up the returns, and back to the root.
            double g = leaf_value;
            for (auto k = edge_path.rbegin(); k != edge_path.rend(); ++k) {
                detail::PlanNode& n = nodes[k->first];
                detail::PlanEdge& e = n.edges[k->second];
                g += e.reward;
                ++n.visits;
                ++e.visits;
                e.return_sum += g;
                bounds.see(g);
                env.undo();
            }
        }
        if (result.stopped || env.steps() + 1 >= env.options().step_limit) break;
        // Commit to the most visited child (the larger prior among equals).
        const detail::PlanNode& r = nodes[root];
        const auto best = std::max_element(r.edges.begin(), r.edges.end(), [](const detail::PlanEdge& a, const detail::PlanEdge& b) {
            return a.visits != b.visits ? a.visits < b.visits : a.prior < b.prior;
        });
        if (best->child < 0) break;
        env.redo(best->action.xfer, best->where, best->cost_after);
        committed_path.push_back(best->action.xfer);
        ++result.committed;
        root = static_cast<std::size_t>(best->child);
    }
    env.keep_steps(false);
    return result;
}

}  // namespace rlflow::rl
