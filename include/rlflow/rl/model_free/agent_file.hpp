#pragma once
/// \file
/// A model-free agent's directory (env/agent_dir.hpp): agent.json holds, after the header
/// every agent has, its network and PPO settings and where training stands: updates,
/// steps, the random generator's state and the episodes in progress, so that `--resume`
/// continues exactly; weights.ckpt holds the parameters and Adam's state.

#include <rlflow/core/error.hpp>
#include <rlflow/nn/serialize.hpp>
#include <rlflow/rl/env/agent_dir.hpp>
#include <rlflow/rl/env/env.hpp>
#include <rlflow/rl/model_free/policy.hpp>
#include <rlflow/rl/model_free/ppo.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <charconv>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace rlflow::rl {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PolicyOptions, latent, message_passing_steps, hidden, seed, gain_hidden, noop_logit)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PpoOptions, gamma, lambda, clip, epochs, minibatch_size, normalize_advantages,
                                   entropy_coefficient, final_entropy_coefficient, value_coefficient, max_grad_norm, target_kl,
                                   learning_rate, rollout_steps, environments_per_graph, gradient_shards)

/// Everything a model-free agent's agent.json holds.
struct MfAgentState : AgentHeader {
    PolicyOptions policy;
    PpoOptions ppo;
    /// Training progress.
    std::size_t updates = 0;
    std::size_t env_steps = 0;
    std::size_t episodes = 0;
    std::array<std::uint64_t, 4> rng{};
    /// Per environment: the actions of its episode in progress, and their return.
    std::vector<std::vector<Action>> episode_actions;
    std::vector<double> episode_returns;
    /// Per graph: the cost ratio of its last finished episode and the best one (NaN: none
    /// yet), which the training log reports; kept so a resumed run logs what an
    /// uninterrupted one does.
    std::vector<double> final_cost_ratio;
    std::vector<double> best_cost_ratio;
};

/// The state's fields, and back; the cost ratios may be missing (agents saved before the
/// log's ratios were kept resume without them). The random generator's words are strings:
/// JSON numbers lose 64-bit words.
inline void to_json(nlohmann::json& j, const MfAgentState& s) {
    to_json(j, static_cast<const AgentHeader&>(s));
    j["policy"] = s.policy;
    j["ppo"] = s.ppo;
    j["updates"] = s.updates;
    j["env_steps"] = s.env_steps;
    j["episodes"] = s.episodes;
    std::vector<std::string> rng;
    for (const std::uint64_t w : s.rng) rng.push_back(std::to_string(w));
    j["rng"] = rng;
    j["episode_actions"] = s.episode_actions;
    j["episode_returns"] = s.episode_returns;
    j["final_cost_ratio"] = detail::ratios_json(s.final_cost_ratio);
    j["best_cost_ratio"] = detail::ratios_json(s.best_cost_ratio);
}
inline void from_json(const nlohmann::json& j, MfAgentState& s) {
    from_json(j, static_cast<AgentHeader&>(s));
    j.at("policy").get_to(s.policy);
    j.at("ppo").get_to(s.ppo);
    j.at("updates").get_to(s.updates);
    j.at("env_steps").get_to(s.env_steps);
    j.at("episodes").get_to(s.episodes);
    const auto rng = j.at("rng").get<std::vector<std::string>>();
    if (rng.size() != s.rng.size())
        throw std::invalid_argument("the random generator's state has " + std::to_string(rng.size()) + " words, not 4");
    for (std::size_t i = 0; i < rng.size(); ++i) {
        const char* end = rng[i].data() + rng[i].size();
        const auto [stop, error] = std::from_chars(rng[i].data(), end, s.rng[i]);
        if (error != std::errc() || stop != end)
            throw std::invalid_argument("the random generator's state is not 64-bit numbers ('" + rng[i] + "')");
    }
    j.at("episode_actions").get_to(s.episode_actions);
    j.at("episode_returns").get_to(s.episode_returns);
    s.final_cost_ratio = detail::ratios_from_json(j.value("final_cost_ratio", nlohmann::json::array()));
    s.best_cost_ratio = detail::ratios_from_json(j.value("best_cost_ratio", nlohmann::json::array()));
}

/// Writes `state`, `params` and `adam` (if given) into `dir` (created if missing).
template <nn::TensorBackend B>
void save_mf_agent(const std::filesystem::path& dir, const MfAgentState& state, const std::vector<nn::Parameter<B>*>& params,
                   const std::type_identity_t<nn::Adam<B>>* adam) {
    detail::commit_agent(
        dir, [&](const std::filesystem::path& path) { nn::save_checkpoint(path, params, adam); }, nlohmann::json(state),
        AgentKind::model_free);
}

/// Reads agent.json of `dir`; throws checkpoint_error naming the file and what is wrong
/// (not an agent, the other kind, another format version, a missing or mistyped field,
/// weights that are not the ones it was saved with), io_error if it cannot be read.
[[nodiscard]] inline MfAgentState read_mf_agent_state(const std::filesystem::path& dir) {
    return detail::agent_json_as<MfAgentState>(dir, detail::read_agent_json(dir, AgentKind::model_free));
}

/// Loads the weights (and Adam's state, if given) of `dir` into `params`.
template <nn::TensorBackend B>
void load_agent_weights(const std::filesystem::path& dir, const std::vector<nn::Parameter<B>*>& params,
                        std::type_identity_t<nn::Adam<B>>* adam = nullptr) {
    nn::load_checkpoint(agent_weights_path(dir), params, adam);
}

/// A saved model-free agent: its state and its network, loaded from its directory.
template <nn::TensorBackend B>
struct MfAgent {
    MfAgentState state;
    ActorCritic<B> policy;

    /// Reads the agent in `dir` (checkpoint_error or io_error as read_mf_agent_state says).
    explicit MfAgent(const std::filesystem::path& dir) : MfAgent(read_mf_agent_state(dir), dir) {}
    MfAgent(MfAgentState s, const std::filesystem::path& dir)
        : state(std::move(s)),
          policy(static_cast<std::uint32_t>(state.rules.size()), static_cast<std::uint32_t>(state.env.max_locations), state.policy) {
        load_agent_weights<B>(dir, policy.parameters());
    }
};

}  // namespace rlflow::rl
