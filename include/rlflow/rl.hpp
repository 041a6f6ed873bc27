#pragma once
/// \file
/// The learning agents' module, in three layers:
/// - `rl/env/`: the graph-rewriting environment, its observations and action space, the
///   random policy, and the directory every agent is saved in;
/// - `rl/model_free/`: the model-free agent: actor-critic, GAE, PPO and rollouts, its
///   trainer and its directory;
/// - `rl/model_based/`: the model-based agent: world model (V, M), dream, controller
///   (trained by the model-free agent's PPO), its trainer and its directory;
/// and on top, `rl/agent_search.hpp`: the `mf` and `mb` searches.

#include <rlflow/rl/agent_search.hpp>
#include <rlflow/rl/env/action_space.hpp>
#include <rlflow/rl/env/agent_dir.hpp>
#include <rlflow/rl/env/env.hpp>
#include <rlflow/rl/env/horizon.hpp>
#include <rlflow/rl/env/observation.hpp>
#include <rlflow/rl/env/random_policy.hpp>
#include <rlflow/rl/model_based/agent_file.hpp>
#include <rlflow/rl/model_based/controller.hpp>
#include <rlflow/rl/model_based/dream.hpp>
#include <rlflow/rl/model_based/policy.hpp>
#include <rlflow/rl/model_based/symlog.hpp>
#include <rlflow/rl/model_based/trainer.hpp>
#include <rlflow/rl/model_based/world_model.hpp>
#include <rlflow/rl/model_free/agent_file.hpp>
#include <rlflow/rl/model_free/gae.hpp>
#include <rlflow/rl/model_free/policy.hpp>
#include <rlflow/rl/model_free/ppo.hpp>
#include <rlflow/rl/model_free/rollout.hpp>
#include <rlflow/rl/model_free/trainer.hpp>
