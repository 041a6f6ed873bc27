#pragma once
/// \file
/// How an agent plans at inference (plan.hpp), apart from the planner, so that requests
/// can name a plan without the agents' headers.

#include <rlflow/core/names.hpp>

#include <cstddef>
#include <cstdint>

namespace rlflow::rl {

/// How an agent plans at inference.
enum class PlanKind : std::uint8_t {
    /// Rollouts only (agent_search.hpp).
    none,
    /// A tree search guided by the agent (plan.hpp), after the rollouts.
    mcts,
    /// The agent proposes, equality saturation disposes: the cheapest graph the rollouts
    /// met seeds an e-graph, whose cheapest extraction is kept if it is cheaper still.
    eqsat,
    /// The agent grows an e-graph from the rollouts' cheapest graph, one rule's matches a
    /// step, and ILP extraction finishes (grow.hpp).
    grow,
};

/// --plan's names, and the report's.
inline constexpr NameTable<PlanKind, 4> plan_kind_names{{{
    {PlanKind::none, "none"},
    {PlanKind::mcts, "mcts"},
    {PlanKind::eqsat, "eqsat"},
    {PlanKind::grow, "grow"},
}}};

/// The tree search's settings, and the e-graph growth's (max_children, grow_steps).
struct PlanOptions {
    PlanKind kind = PlanKind::none;
    /// Simulations before each committed step.
    std::size_t simulations = 32;
    /// PUCT's weight of the prior against the value (AlphaZero's c_puct).
    double exploration = 1.25;
    /// The most probable xfers a node offers as children.
    std::size_t max_children = 12;
    /// PlanKind::grow: growth steps at most (a rule's matches each).
    std::size_t grow_steps = 32;
};

}  // namespace rlflow::rl
