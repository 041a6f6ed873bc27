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
};

/// --plan's names, and the report's.
inline constexpr NameTable<PlanKind, 3> plan_kind_names{{{
    {PlanKind::none, "none"},
    {PlanKind::mcts, "mcts"},
    {PlanKind::eqsat, "eqsat"},
}}};

/// The tree search's settings.
struct PlanOptions {
    PlanKind kind = PlanKind::none;
    /// Simulations before each committed step.
    std::size_t simulations = 32;
    /// PUCT's weight of the prior against the value (AlphaZero's c_puct).
    double exploration = 1.25;
    /// The most probable xfers a node offers as children.
    std::size_t max_children = 12;
};

}  // namespace rlflow::rl
