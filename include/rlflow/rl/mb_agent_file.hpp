#pragma once
/// \file
/// A model-based agent's directory: `agent.json` (format "rlflow-mb-agent": the action
/// space by rule name, the world model's, controller's, environment's and dream's
/// settings, the cost backend it learned from, and how much it trained: real and dream
/// steps) and `weights.ckpt` (V, M, the target encoder and C, nn's checkpoint format).
/// Written atomically, weights first, agent.json holding their checksum, as the model-free
/// agent's (agent_file.hpp). Training does not resume from it yet: the episode buffer and
/// the optimisers' moments are not saved.

#include <rlflow/core/atomic_file.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/nn/serialize.hpp>
#include <rlflow/rl/agent_file.hpp>
#include <rlflow/rl/controller.hpp>
#include <rlflow/rl/mb_trainer.hpp>
#include <rlflow/rl/world_model.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace rlflow::rl {

/// agent.json's version (its format name, mb_agent_format, is in agent_file.hpp).
inline constexpr int mb_agent_format_version = 2;

/// Everything a model-based agent's agent.json holds.
struct MbAgentState {
    std::vector<std::string> rules;
    std::int64_t node_features = observation_feature_sizes.node;
    WorldModelOptions model;
    ControllerOptions controller;
    EnvOptions env;
    /// The dream's temperature it trained at.
    double temperature = 1.0;
    std::string cost_backend;
    /// The target it was trained for, in words (empty for agents saved before targets).
    std::string target;
    std::vector<std::string> graphs;
    std::uint64_t seed = 0;
    std::size_t real_steps = 0;
    std::size_t dream_steps = 0;
    std::size_t iterations = 0;
    std::size_t episodes = 0;
    double seconds = 0;
};

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
    nlohmann::json j;
    j["rules"] = s.rules;
    j["node_features"] = s.node_features;
    const WorldModelOptions& m = s.model;
    j["model"] = {{"latent", m.latent}, {"encoder_latent", m.encoder_latent}, {"message_passing_steps", m.message_passing_steps},
                  {"lstm_hidden", m.lstm_hidden}, {"components", m.components}, {"action_embedding", m.action_embedding},
                  {"summary", m.summary}, {"head_hidden", m.head_hidden}, {"target_rate", m.target_rate}, {"spread_floor", m.spread_floor}, {"spread_weight", m.spread_weight}, {"seed", m.seed}, {"reward_bins", m.reward_bins}};
    j["controller"] = {{"hidden", s.controller.hidden}, {"gain_hidden", s.controller.gain_hidden}, {"gain_prior", s.controller.gain_prior},
                       {"state_logit_bound", s.controller.state_logit_bound},
                       {"noop_logit", s.controller.noop_logit}, {"seed", s.controller.seed}};
    j["env"] = detail::env_json(s.env);
    j["temperature"] = s.temperature;
    j["cost_backend"] = s.cost_backend;
    j["target"] = s.target;
    j["graphs"] = s.graphs;
    j["seed"] = s.seed;
    j["real_steps"] = s.real_steps;
    j["dream_steps"] = s.dream_steps;
    j["iterations"] = s.iterations;
    j["episodes"] = s.episodes;
    j["seconds"] = s.seconds;
    detail::commit_agent(
        dir, [&](const std::filesystem::path& path) { nn::save_checkpoint<B>(path, mb_parameters(model, controller), nullptr); },
        std::move(j), mb_agent_format, mb_agent_format_version);
}

/// Reads agent.json of `dir`; throws checkpoint_error naming the file and what is wrong.
[[nodiscard]] inline MbAgentState read_mb_agent_state(const std::filesystem::path& dir) {
    const auto fail = [&](const std::string& what) -> void { detail::agent_json_error(dir, what); };
    const nlohmann::json j = detail::read_agent_json(
        dir, {mb_agent_format, mb_agent_format_version, "an rlflow model-based agent", agent_format, "a model-free agent; use --search mf"});
    MbAgentState s;
    try {
        s.rules = j.at("rules").get<std::vector<std::string>>();
        s.node_features = j.at("node_features").get<std::int64_t>();
        const auto& m = j.at("model");
        s.model = {m.at("latent").get<std::int64_t>(), m.at("encoder_latent").get<std::int64_t>(), m.at("message_passing_steps").get<int>(),
                   m.at("lstm_hidden").get<std::int64_t>(), m.at("components").get<std::int64_t>(), m.at("action_embedding").get<std::int64_t>(),
                   m.at("summary").get<std::int64_t>(), m.at("head_hidden").get<std::int64_t>(), m.at("target_rate").get<double>(),
                   m.at("spread_floor").get<double>(), m.at("spread_weight").get<double>(), m.at("seed").get<std::uint64_t>(),
                   m.at("reward_bins").get<std::int64_t>()};
        const auto& c = j.at("controller");
        s.controller = {c.at("hidden").get<std::int64_t>(), c.at("gain_hidden").get<std::int64_t>(), c.at("gain_prior").get<double>(),
                        c.at("state_logit_bound").get<double>(), c.at("noop_logit").get<double>(), c.at("seed").get<std::uint64_t>()};
        s.env = detail::env_from_json(j.at("env"));
        s.temperature = j.at("temperature").get<double>();
        s.cost_backend = j.at("cost_backend").get<std::string>();
        s.target = j.value("target", std::string());
        s.graphs = j.at("graphs").get<std::vector<std::string>>();
        s.seed = j.at("seed").get<std::uint64_t>();
        s.real_steps = j.at("real_steps").get<std::size_t>();
        s.dream_steps = j.at("dream_steps").get<std::size_t>();
        s.iterations = j.at("iterations").get<std::size_t>();
        s.episodes = j.at("episodes").get<std::size_t>();
        s.seconds = j.at("seconds").get<double>();
    } catch (const nlohmann::json::exception& e) {
        fail(std::string("a field is missing or has the wrong type: ") + e.what());
    }
    detail::check_node_features(dir, s.node_features);
    return s;
}

/// A saved agent's networks: built from `state` and loaded from `dir`.
template <nn::TensorBackend B>
struct LoadedMbAgent {
    WorldModel<B> model;
    Controller<B> controller;
    LoadedMbAgent(const MbAgentState& state, const std::filesystem::path& dir)
        : model(static_cast<std::uint32_t>(state.rules.size()), state.model),
          controller(static_cast<std::uint32_t>(state.rules.size()), state.model.latent, state.model.lstm_hidden, state.controller) {
        nn::load_checkpoint<B>(agent_weights_path(dir), mb_parameters(model, controller), nullptr);
    }
};

}  // namespace rlflow::rl
