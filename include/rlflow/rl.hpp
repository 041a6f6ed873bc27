#pragma once
/// \file
/// The learning agents' module: the graph-rewriting environment and its observations, and
/// the action space, and the random agent (the learning agents and training follow).

#include <rlflow/rl/action_space.hpp>
#include <rlflow/rl/env.hpp>
#include <rlflow/rl/observation.hpp>
#include <rlflow/rl/random_agent.hpp>
