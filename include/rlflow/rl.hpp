#pragma once
/// \file
/// The learning agents' module: the graph-rewriting environment and its observations, and
/// the action space, the random agent, and the model-free agent: actor-critic, GAE, PPO and
/// rollouts, its trainer, agent directories and the `mf` search; and the model-based agent:
/// world model (V, M), dream, controller, its trainer and the `mb` search.

#include <rlflow/rl/action_space.hpp>
#include <rlflow/rl/agent_file.hpp>
#include <rlflow/rl/agent_search.hpp>
#include <rlflow/rl/controller.hpp>
#include <rlflow/rl/dream.hpp>
#include <rlflow/rl/env.hpp>
#include <rlflow/rl/gae.hpp>
#include <rlflow/rl/mb_agent.hpp>
#include <rlflow/rl/mb_agent_file.hpp>
#include <rlflow/rl/mb_trainer.hpp>
#include <rlflow/rl/observation.hpp>
#include <rlflow/rl/policy.hpp>
#include <rlflow/rl/ppo.hpp>
#include <rlflow/rl/random_agent.hpp>
#include <rlflow/rl/rollout.hpp>
#include <rlflow/rl/symlog.hpp>
#include <rlflow/rl/trainer.hpp>
#include <rlflow/rl/world_model.hpp>
