#pragma once
/// \file
/// A model-free agent's directory: `agent.json` (what the agent is: its action space by
/// rule name, its network and environment settings, the cost backend it learned from;
/// and where training stands: updates, steps, the random generator's state and the
/// episodes in progress, so that `--resume` continues exactly) and `weights.ckpt` (the
/// parameters and Adam's state, nn's checkpoint format).
///
/// A save survives being killed at any point (detail::commit_agent): the new weights go to
/// `weights.ckpt.next`, then agent.json (naming the new weights by checksum) replaces the
/// old one, then the weights are renamed into place, each step atomic. A reader that finds
/// agent.json naming `weights.ckpt.next` finishes the interrupted save; any other pair that
/// does not match is refused rather than mixed.

#include <rlflow/core/atomic_file.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/nn/serialize.hpp>
#include <rlflow/rl/env.hpp>
#include <rlflow/rl/policy.hpp>
#include <rlflow/rl/ppo.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <limits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow::rl {

/// agent.json's format name and version.
inline constexpr const char* agent_format = "rlflow-mf-agent";
/// 2: the heads read one-step gains (policy.gain), and the NO-OP prior is recorded.
inline constexpr int agent_format_version = 2;

/// Everything agent.json holds.
struct AgentState {
    /// The action space: rule names in xfer order.
    std::vector<std::string> rules;
    /// observation_feature_sizes when it was trained (a change of features is refused).
    std::int64_t node_features = observation_feature_sizes.node;
    PolicyOptions policy;
    EnvOptions env;
    PpoOptions ppo;
    /// The cost backend's name (CostModel::name) it learned from.
    std::string cost_backend;
    /// The target it was trained for, in words (empty for agents saved before targets).
    std::string target;
    /// The training graphs as given (zoo:NAME or a file).
    std::vector<std::string> graphs;
    std::uint64_t seed = 0;
    /// Training progress.
    std::size_t updates = 0;
    std::size_t env_steps = 0;
    std::size_t episodes = 0;
    double seconds = 0;
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

[[nodiscard]] inline std::filesystem::path agent_json_path(const std::filesystem::path& dir) { return dir / "agent.json"; }
[[nodiscard]] inline std::filesystem::path agent_weights_path(const std::filesystem::path& dir) { return dir / "weights.ckpt"; }
/// The weights of a save under way (see the file's comment).
[[nodiscard]] inline std::filesystem::path agent_next_weights_path(const std::filesystem::path& dir) {
    return dir / "weights.ckpt.next";
}

namespace detail {

[[nodiscard]] inline std::string read_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw io_error(path.string() + ": cannot open it (is this an agent directory made by `rlflow train`?)");
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Throws checkpoint_error naming dir's agent.json and `what` is wrong with it.
[[noreturn]] inline void agent_json_error(const std::filesystem::path& dir, const std::string& what) {
    throw checkpoint_error(agent_json_path(dir).string() + ": " + what);
}

/// What read_agent_json expects: a format name and version, the kind in words, and the
/// other agent kind's format with what to say when it is found instead.
struct AgentFormat {
    std::string_view format;
    int version = 0;
    std::string_view kind;
    std::string_view other;
    std::string_view other_hint;
};

[[nodiscard]] inline std::string weights_checksum(const std::filesystem::path& path) {
    return std::to_string(nn::detail::fnv1a64(read_bytes(path)));
}

/// Makes weights.ckpt the file agent.json names by `checksum`: it is already, or a save
/// killed after writing agent.json left it as weights.ckpt.next, which is renamed into
/// place. Otherwise the pair is torn or replaced: checkpoint_error.
inline void finish_interrupted_save(const std::filesystem::path& dir, const std::string& checksum) {
    std::error_code ec;
    if (std::filesystem::exists(agent_weights_path(dir), ec) && weights_checksum(agent_weights_path(dir)) == checksum) return;
    const std::filesystem::path next = agent_next_weights_path(dir);
    if (std::filesystem::exists(next, ec) && weights_checksum(next) == checksum) {
        std::filesystem::rename(next, agent_weights_path(dir), ec);
        // Another reader (or the writer) may have finished it first: what counts is the result.
        if (!ec || weights_checksum(agent_weights_path(dir)) == checksum) return;
        throw io_error(agent_weights_path(dir).string() + ": cannot finish the interrupted save: " + ec.message());
    }
    agent_json_error(dir, "weights.ckpt is not the file this agent was saved with (torn or replaced)");
}

/// dir's agent.json, parsed, of the expected format and version, its weights the ones it
/// was saved with; throws checkpoint_error naming what is wrong, io_error if unreadable.
[[nodiscard]] inline nlohmann::json read_agent_json(const std::filesystem::path& dir, const AgentFormat& expected) {
    const std::string text = read_bytes(agent_json_path(dir));
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        agent_json_error(dir, std::string("damaged (not JSON): ") + e.what());
    }
    try {
        const std::string found = j.value("format", "");
        if (found != expected.format)
            agent_json_error(dir, found == expected.other ? std::string(expected.other_hint) : "not " + std::string(expected.kind));
        if (j.at("version").get<int>() != expected.version)
            agent_json_error(dir, "agent format version " + std::to_string(j.at("version").get<int>()) + ", this rlflow reads "
                                      + std::to_string(expected.version));
        finish_interrupted_save(dir, j.at("weights_checksum").get<std::string>());
    } catch (const nlohmann::json::exception& e) {
        agent_json_error(dir, std::string("a field is missing or has the wrong type: ") + e.what());
    }
    return j;
}

/// Throws checkpoint_error unless an agent's `node_features` are this rlflow's observations'.
inline void check_node_features(const std::filesystem::path& dir, std::int64_t node_features) {
    if (node_features != observation_feature_sizes.node)
        agent_json_error(dir, "made for observations of " + std::to_string(node_features) + " node features; this rlflow makes "
                                  + std::to_string(observation_feature_sizes.node));
}

/// The environment's settings as agent.json holds them, and back.
[[nodiscard]] inline nlohmann::json env_json(const EnvOptions& e) {
    return {{"max_locations", e.max_locations}, {"step_limit", e.step_limit}, {"reward_scale", e.reward_scale},
            {"one_step_gains", e.one_step_gains}};
}
[[nodiscard]] inline EnvOptions env_from_json(const nlohmann::json& env) {
    return {env.at("max_locations").get<std::size_t>(), env.at("step_limit").get<std::size_t>(), env.at("reward_scale").get<double>(),
            env.at("one_step_gains").get<bool>()};
}

/// Saves an agent into `dir` so that a kill at any point leaves either the previous agent
/// or the new one (see the file's comment): `write_weights(path)` writes the weights to
/// `path` atomically; `j` becomes agent.json with its format, version and the weights'
/// checksum.
template <class WriteWeights>
void commit_agent(const std::filesystem::path& dir, WriteWeights&& write_weights, nlohmann::json j, std::string_view format,
                  int version) {
    std::filesystem::create_directories(dir);
    const std::filesystem::path next = agent_next_weights_path(dir);
    write_weights(next);
    j["format"] = format;
    j["version"] = version;
    j["weights_checksum"] = weights_checksum(next);
    write_file_atomically(agent_json_path(dir), j.dump(1) + "\n");
    std::error_code ec;
    std::filesystem::rename(next, agent_weights_path(dir), ec);
    if (ec && weights_checksum(agent_weights_path(dir)) != j["weights_checksum"].get<std::string>())
        throw io_error(agent_weights_path(dir).string() + ": cannot rename the new weights into place: " + ec.message());
}

/// Cost ratios as JSON, NaN (none yet) as null; and back.
[[nodiscard]] inline nlohmann::json ratios_json(const std::vector<double>& ratios) {
    nlohmann::json out = nlohmann::json::array();
    for (const double r : ratios) out.push_back(std::isnan(r) ? nlohmann::json(nullptr) : nlohmann::json(r));
    return out;
}
[[nodiscard]] inline std::vector<double> ratios_from_json(const nlohmann::json& list) {
    std::vector<double> out;
    for (const auto& r : list) out.push_back(r.is_null() ? std::numeric_limits<double>::quiet_NaN() : r.get<double>());
    return out;
}

}  // namespace detail

/// The model-based agent's format name (mb_agent_file.hpp), named here so that each
/// reader can tell a user which search reads the other kind.
inline constexpr const char* mb_agent_format = "rlflow-mb-agent";

/// Writes `state`, `params` and `adam` (if given) into `dir` (created if missing).
template <nn::TensorBackend B>
void save_agent(const std::filesystem::path& dir, const AgentState& state, const std::vector<nn::Parameter<B>*>& params,
                const std::type_identity_t<nn::Adam<B>>* adam) {
    nlohmann::json j;
    j["rules"] = state.rules;
    j["node_features"] = state.node_features;
    j["policy"] = {{"latent", state.policy.latent}, {"message_passing_steps", state.policy.message_passing_steps},
                   {"hidden", state.policy.hidden}, {"seed", state.policy.seed},
                   {"gain_hidden", state.policy.gain_hidden}, {"noop_logit", state.policy.noop_logit}};
    j["env"] = detail::env_json(state.env);
    const PpoOptions& p = state.ppo;
    j["ppo"] = {{"gamma", p.gamma}, {"lambda", p.lambda}, {"clip", p.clip}, {"epochs", p.epochs},
                {"minibatch_size", p.minibatch_size}, {"normalize_advantages", p.normalize_advantages},
                {"entropy_coefficient", p.entropy_coefficient}, {"value_coefficient", p.value_coefficient},
                {"max_grad_norm", p.max_grad_norm}, {"target_kl", p.target_kl}, {"learning_rate", p.learning_rate},
                {"rollout_steps", p.rollout_steps}, {"environments_per_graph", p.environments_per_graph},
                {"gradient_shards", p.gradient_shards}, {"final_entropy_coefficient", p.final_entropy_coefficient}};
    j["cost_backend"] = state.cost_backend;
    j["target"] = state.target;
    j["graphs"] = state.graphs;
    j["seed"] = state.seed;
    j["updates"] = state.updates;
    j["env_steps"] = state.env_steps;
    j["episodes"] = state.episodes;
    j["seconds"] = state.seconds;
    std::vector<std::string> rng;
    for (const std::uint64_t w : state.rng) rng.push_back(std::to_string(w));  // JSON numbers lose 64-bit words
    j["rng"] = rng;
    nlohmann::json episodes = nlohmann::json::array();
    for (const auto& actions : state.episode_actions) {
        nlohmann::json list = nlohmann::json::array();
        for (const Action& a : actions) list.push_back({a.xfer, a.location});
        episodes.push_back(list);
    }
    j["episode_actions"] = episodes;
    j["episode_returns"] = state.episode_returns;
    j["final_cost_ratio"] = detail::ratios_json(state.final_cost_ratio);
    j["best_cost_ratio"] = detail::ratios_json(state.best_cost_ratio);
    detail::commit_agent(
        dir, [&](const std::filesystem::path& path) { nn::save_checkpoint(path, params, adam); }, std::move(j), agent_format,
        agent_format_version);
}

/// Reads agent.json of `dir`; throws checkpoint_error naming the file and what is wrong
/// (not an agent, another format version, a missing or mistyped field, weights that are
/// not the ones it was saved with), io_error if it cannot be read.
[[nodiscard]] inline AgentState read_agent_state(const std::filesystem::path& dir) {
    const auto fail = [&](const std::string& what) -> void { detail::agent_json_error(dir, what); };
    const nlohmann::json j = detail::read_agent_json(
        dir, {agent_format, agent_format_version, "an rlflow model-free agent", mb_agent_format, "a model-based agent; use --search mb"});
    AgentState s;
    try {
        s.rules = j.at("rules").get<std::vector<std::string>>();
        s.node_features = j.at("node_features").get<std::int64_t>();
        const auto& policy = j.at("policy");
        s.policy = {policy.at("latent").get<std::int64_t>(), policy.at("message_passing_steps").get<int>(),
                    policy.at("hidden").get<std::int64_t>(), policy.at("seed").get<std::uint64_t>(),
                    policy.at("gain_hidden").get<std::int64_t>(), policy.at("noop_logit").get<double>()};
        s.env = detail::env_from_json(j.at("env"));
        const auto& p = j.at("ppo");
        PpoOptions& o = s.ppo;
        o.gamma = p.at("gamma").get<double>();
        o.lambda = p.at("lambda").get<double>();
        o.clip = p.at("clip").get<double>();
        o.epochs = p.at("epochs").get<int>();
        o.minibatch_size = p.at("minibatch_size").get<std::size_t>();
        o.normalize_advantages = p.at("normalize_advantages").get<bool>();
        o.entropy_coefficient = p.at("entropy_coefficient").get<double>();
        o.value_coefficient = p.at("value_coefficient").get<double>();
        o.max_grad_norm = p.at("max_grad_norm").get<double>();
        o.target_kl = p.at("target_kl").get<double>();
        o.learning_rate = p.at("learning_rate").get<double>();
        o.rollout_steps = p.at("rollout_steps").get<std::size_t>();
        // Agents saved before rollouts and gradients ran in parallel had one of each, and
        // a constant entropy weight.
        o.environments_per_graph = p.value("environments_per_graph", std::size_t{1});
        o.gradient_shards = p.value("gradient_shards", std::size_t{1});
        o.final_entropy_coefficient = p.value("final_entropy_coefficient", o.entropy_coefficient);
        s.cost_backend = j.at("cost_backend").get<std::string>();
        s.target = j.value("target", std::string());
        s.graphs = j.at("graphs").get<std::vector<std::string>>();
        s.seed = j.at("seed").get<std::uint64_t>();
        s.updates = j.at("updates").get<std::size_t>();
        s.env_steps = j.at("env_steps").get<std::size_t>();
        s.episodes = j.at("episodes").get<std::size_t>();
        s.seconds = j.at("seconds").get<double>();
        const auto rng = j.at("rng").get<std::vector<std::string>>();
        if (rng.size() != s.rng.size()) fail("the random generator's state has " + std::to_string(rng.size()) + " words, not 4");
        for (std::size_t i = 0; i < rng.size(); ++i) s.rng[i] = std::stoull(rng[i]);
        for (const auto& list : j.at("episode_actions")) {
            std::vector<Action> actions;
            for (const auto& a : list) actions.push_back({a.at(0).get<std::uint32_t>(), a.at(1).get<std::uint32_t>()});
            s.episode_actions.push_back(std::move(actions));
        }
        s.episode_returns = j.at("episode_returns").get<std::vector<double>>();
        // Agents saved before the log's ratios were kept resume without them.
        s.final_cost_ratio = detail::ratios_from_json(j.value("final_cost_ratio", nlohmann::json::array()));
        s.best_cost_ratio = detail::ratios_from_json(j.value("best_cost_ratio", nlohmann::json::array()));
    } catch (const nlohmann::json::exception& e) {
        fail(std::string("a field is missing or has the wrong type: ") + e.what());
    } catch (const std::invalid_argument&) {
        fail("the random generator's state is not a number");
    } catch (const std::out_of_range&) {
        fail("the random generator's state is out of range");
    }
    detail::check_node_features(dir, s.node_features);
    return s;
}

/// Loads the weights (and Adam's state, if given) of `dir` into `params`.
template <nn::TensorBackend B>
void load_agent_weights(const std::filesystem::path& dir, const std::vector<nn::Parameter<B>*>& params,
                        std::type_identity_t<nn::Adam<B>>* adam = nullptr) {
    nn::load_checkpoint(agent_weights_path(dir), params, adam);
}

/// The rules of `library` named in `state`, in the agent's order: its action space. Throws
/// checkpoint_error naming the first rule the library lacks.
[[nodiscard]] inline rewrite::RuleSet agent_rules(const AgentState& state, const rewrite::RuleSet& library,
                                                  const std::filesystem::path& dir) {
    rewrite::RuleSet rules;
    for (const std::string& name : state.rules) {
        const auto id = library.find(name);
        if (!id)
            throw checkpoint_error(agent_json_path(dir).string() + ": made for another rule set: rule '" + name
                                   + "' is not in the rules given");
        rules.add(library[*id]);
    }
    return rules;
}

}  // namespace rlflow::rl
