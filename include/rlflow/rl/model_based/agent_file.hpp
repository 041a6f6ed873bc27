#pragma once
/// \file
/// A model-based agent's directory (env/agent_dir.hpp): agent.json holds, after the header
/// every agent has, the world model's, controller's and dream's settings and how much it
/// trained (real and dream steps); weights.ckpt holds V, M, the target encoder and C.
/// Training does not resume from it yet: the episode buffer and the optimisers' moments
/// are not saved.

#include <rlflow/core/error.hpp>
#include <rlflow/nn/serialize.hpp>
#include <rlflow/rl/env/agent_dir.hpp>
#include <rlflow/rl/model_based/controller.hpp>
#include <rlflow/rl/model_based/policy.hpp>
#include <rlflow/rl/model_based/world_model.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace rlflow::rl {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WorldModelOptions, latent, encoder_latent, message_passing_steps, lstm_hidden, components,
                                   action_embedding, summary, head_hidden, target_rate, spread_floor, spread_weight, seed, reward_bins)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ControllerOptions, hidden, gain_hidden, gain_prior, state_logit_bound, noop_logit, seed)

/// Everything a model-based agent's agent.json holds.
struct MbAgentState : AgentHeader {
    WorldModelOptions model;
    ControllerOptions controller;
    /// The dream's temperature it trained at.
    double temperature = 1.0;
    std::size_t real_steps = 0;
    std::size_t dream_steps = 0;
    std::size_t iterations = 0;
    std::size_t episodes = 0;
};

inline void to_json(nlohmann::json& j, const MbAgentState& s) {
    to_json(j, static_cast<const AgentHeader&>(s));
    j["model"] = s.model;
    j["controller"] = s.controller;
    j["temperature"] = s.temperature;
    j["real_steps"] = s.real_steps;
    j["dream_steps"] = s.dream_steps;
    j["iterations"] = s.iterations;
    j["episodes"] = s.episodes;
}
inline void from_json(const nlohmann::json& j, MbAgentState& s) {
    from_json(j, static_cast<AgentHeader&>(s));
    j.at("model").get_to(s.model);
    j.at("controller").get_to(s.controller);
    j.at("temperature").get_to(s.temperature);
    j.at("real_steps").get_to(s.real_steps);
    j.at("dream_steps").get_to(s.dream_steps);
    j.at("iterations").get_to(s.iterations);
    j.at("episodes").get_to(s.episodes);
}

/// Every saved parameter of a model-based agent: V and M, the target encoder, C.
template <nn::TensorBackend B>
[[nodiscard]] std::vector<nn::Parameter<B>*> mb_parameters(WorldModel<B>& model, Controller<B>& controller) {
    std::vector<nn::Parameter<B>*> out = model.parameters();
    for (nn::Parameter<B>* p : model.target_parameters()) out.push_back(p);
    for (nn::Parameter<B>* p : controller.parameters()) out.push_back(p);
    return out;
}

template <nn::TensorBackend B>
void save_mb_agent(const std::filesystem::path& dir, const MbAgentState& s, WorldModel<B>& model, Controller<B>& controller) {
    detail::commit_agent(
        dir, [&](const std::filesystem::path& path) { nn::save_checkpoint<B>(path, mb_parameters(model, controller), nullptr); },
        nlohmann::json(s), AgentKind::model_based);
}

/// Reads agent.json of `dir`; throws checkpoint_error naming the file and what is wrong.
[[nodiscard]] inline MbAgentState read_mb_agent_state(const std::filesystem::path& dir) {
    return detail::agent_json_as<MbAgentState>(dir, detail::read_agent_json(dir, AgentKind::model_based));
}

/// A saved model-based agent: its state, its networks loaded from its directory, and the
/// policy that acts with them.
template <nn::TensorBackend B>
struct MbAgent {
    MbAgentState state;
    WorldModel<B> model;
    Controller<B> controller;
    MbPolicy<B> policy;

    /// Reads the agent in `dir` (checkpoint_error or io_error as read_mb_agent_state says).
    explicit MbAgent(const std::filesystem::path& dir) : MbAgent(read_mb_agent_state(dir), dir) {}
    MbAgent(MbAgentState s, const std::filesystem::path& dir)
        : state(std::move(s)),
          model(static_cast<std::uint32_t>(state.rules.size()), state.model),
          controller(static_cast<std::uint32_t>(state.rules.size()), state.model.latent, state.model.lstm_hidden, state.controller),
          policy(model, controller, static_cast<std::uint32_t>(state.env.max_locations)) {
        nn::load_checkpoint<B>(agent_weights_path(dir), mb_parameters(model, controller), nullptr);
        policy.refresh();  // the policy's frozen copies follow the loaded weights
    }
    MbAgent(const MbAgent&) = delete;
    MbAgent& operator=(const MbAgent&) = delete;
};

}  // namespace rlflow::rl
