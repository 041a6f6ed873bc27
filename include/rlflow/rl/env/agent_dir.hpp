#pragma once
/// \file
/// The directory every agent is saved in, whatever its kind: `agent.json` (its format
/// name and version, what it is and where its training stands) and `weights.ckpt` (its
/// parameters, nn's checkpoint format). The model-free agent's (model_free/agent_file.hpp)
/// and the model-based agent's (model_based/agent_file.hpp) differ only in what else
/// agent.json holds and which parameters the weights are; both begin with AgentHeader,
/// which read_agent_header reads from either.
///
/// A save survives being killed at any point (detail::commit_agent): the new weights go to
/// `weights.ckpt.next`, then agent.json (naming the new weights by checksum) replaces the
/// old one, then the weights are renamed into place, each step atomic. A reader that finds
/// agent.json naming `weights.ckpt.next` finishes the interrupted save; any other pair that
/// does not match is refused rather than mixed.

#include <rlflow/core/atomic_file.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/core/names.hpp>
#include <rlflow/nn/serialize.hpp>
#include <rlflow/rewrite/rule_set.hpp>
#include <rlflow/rl/env/env.hpp>
#include <rlflow/rl/env/observation.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow::rl {

/// The two kinds of agent.
enum class AgentKind : std::uint8_t { model_free, model_based };

/// The kinds' names where users meet them (--search, --agent, eval's methods).
inline constexpr NameTable<AgentKind, 2> agent_kind_names{{{
    {AgentKind::model_free, "mf"},
    {AgentKind::model_based, "mb"},
}}};

/// agent.json's format name and version for a kind.
struct AgentFormat {
    std::string_view format;
    int version = 0;
    /// The kind in words, for messages.
    std::string_view described;
};

/// Version 2 of the model-free format: the heads read one-step gains (policy.gain), and
/// the NO-OP prior is recorded. Version 2 of the model-based format: the controller adds
/// a learned multiple of each xfer's gain to its logit and bounds its state term.
[[nodiscard]] constexpr AgentFormat agent_format(AgentKind kind) noexcept {
    return kind == AgentKind::model_free ? AgentFormat{"rlflow-mf-agent", 2, "an rlflow model-free agent"}
                                         : AgentFormat{"rlflow-mb-agent", 2, "an rlflow model-based agent"};
}

/// The action (xfer, location) as a JSON pair, and back.
inline void to_json(nlohmann::json& j, const Action& a) { j = nlohmann::json::array({a.xfer, a.location}); }
inline void from_json(const nlohmann::json& j, Action& a) {
    a.xfer = j.at(0).get<std::uint32_t>();
    a.location = j.at(1).get<std::uint32_t>();
}

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(EnvOptions, max_locations, step_limit, reward_scale, one_step_gains)

/// What agent.json holds for every kind: what the agent acts on and where it learned.
struct AgentHeader {
    /// The action space: rule names in xfer order.
    std::vector<std::string> rules;
    /// observation_feature_sizes when it was trained (a change of features is refused).
    std::int64_t node_features = observation_feature_sizes.node;
    EnvOptions env;
    /// The cost backend's name (CostModel::name) it learned from.
    std::string cost_backend;
    /// The target it was trained for, in words (empty for agents saved before targets).
    std::string target;
    /// The training graphs as given (zoo:NAME or a file).
    std::vector<std::string> graphs;
    std::uint64_t seed = 0;
    /// Seconds of training.
    double seconds = 0;
};

/// Whether rewards from `cost_backend` (an agent's `cost_backend`) are whole graphs timed
/// at the target (`rlflow train --reward ort-latency`, "ort-latency:..."; `--reward
/// gpu-latency`, "...:latency"), not a cost model's prices.
[[nodiscard]] inline bool learned_from_latency(std::string_view cost_backend) {
    constexpr std::string_view ort = "ort-latency:";
    constexpr std::string_view gpu = ":latency";
    return cost_backend.starts_with(ort) || cost_backend.ends_with(gpu);
}
/// Whether the agent of `h` learned from whole graphs timed at its target.
[[nodiscard]] inline bool learned_from_latency(const AgentHeader& h) { return learned_from_latency(std::string_view(h.cost_backend)); }

/// The header's fields, and back; `target` may be missing (agents saved before targets).
inline void to_json(nlohmann::json& j, const AgentHeader& h) {
    j["rules"] = h.rules;
    j["node_features"] = h.node_features;
    j["env"] = h.env;
    j["cost_backend"] = h.cost_backend;
    j["target"] = h.target;
    j["graphs"] = h.graphs;
    j["seed"] = h.seed;
    j["seconds"] = h.seconds;
}
inline void from_json(const nlohmann::json& j, AgentHeader& h) {
    j.at("rules").get_to(h.rules);
    j.at("node_features").get_to(h.node_features);
    j.at("env").get_to(h.env);
    j.at("cost_backend").get_to(h.cost_backend);
    h.target = j.value("target", std::string());
    j.at("graphs").get_to(h.graphs);
    j.at("seed").get_to(h.seed);
    j.at("seconds").get_to(h.seconds);
}

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

/// dir's agent.json, parsed (checkpoint_error if it is not JSON, io_error if unreadable).
[[nodiscard]] inline nlohmann::json parse_agent_json(const std::filesystem::path& dir) {
    const std::string text = read_bytes(agent_json_path(dir));
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        agent_json_error(dir, std::string("damaged (not JSON): ") + e.what());
    }
}

/// The kind whose format agent.json `j` names; checkpoint_error if neither.
[[nodiscard]] inline AgentKind kind_of(const std::filesystem::path& dir, const nlohmann::json& j) {
    const std::string found = j.is_object() ? j.value("format", std::string()) : std::string();
    for (const AgentKind kind : {AgentKind::model_free, AgentKind::model_based})
        if (found == agent_format(kind).format) return kind;
    agent_json_error(dir, "not an rlflow agent (its format is '" + found + "'; `rlflow train` writes " +
                              std::string(agent_format(AgentKind::model_free).format) + " or " +
                              std::string(agent_format(AgentKind::model_based).format) + ")");
}

/// dir's agent.json, parsed, of `kind`'s format (or either kind's, when none is given) and
/// version, its weights the ones it was saved with; throws checkpoint_error naming what is
/// wrong (the other kind names the search that reads it), io_error if unreadable.
[[nodiscard]] inline nlohmann::json read_agent_json(const std::filesystem::path& dir, std::optional<AgentKind> kind) {
    const nlohmann::json j = parse_agent_json(dir);
    const AgentKind found = kind_of(dir, j);
    const AgentFormat expected = agent_format(kind.value_or(found));
    if (found != kind.value_or(found))
        agent_json_error(dir, std::string(agent_format(found).described) + ", not " + std::string(expected.described) +
                                  "; use --search " + std::string(agent_kind_names.name(found)));
    try {
        if (j.at("version").get<int>() != expected.version)
            agent_json_error(dir, "agent format version " + std::to_string(j.at("version").get<int>()) + ", this rlflow reads "
                                      + std::to_string(expected.version));
        finish_interrupted_save(dir, j.at("weights_checksum").get<std::string>());
    } catch (const nlohmann::json::exception& e) {
        agent_json_error(dir, std::string("a field is missing or has the wrong type: ") + e.what());
    }
    return j;
}

/// `j` as T, and T's own checks; checkpoint_error naming dir's agent.json and what is
/// wrong with it.
template <class T>
[[nodiscard]] T agent_json_as(const std::filesystem::path& dir, const nlohmann::json& j) {
    T out;
    try {
        j.get_to(out);
    } catch (const nlohmann::json::exception& e) {
        agent_json_error(dir, std::string("a field is missing or has the wrong type: ") + e.what());
    } catch (const std::invalid_argument& e) {  // what T's from_json found wrong beyond types
        agent_json_error(dir, e.what());
    }
    const AgentHeader& header = out;
    if (header.node_features != observation_feature_sizes.node)
        agent_json_error(dir, "made for observations of " + std::to_string(header.node_features) + " node features; this rlflow makes "
                                  + std::to_string(observation_feature_sizes.node));
    return out;
}

/// Saves an agent into `dir` so that a kill at any point leaves either the previous agent
/// or the new one (see the file's comment): `write_weights(path)` writes the weights to
/// `path` atomically; `j` becomes agent.json with kind's format, version and the weights'
/// checksum.
template <class WriteWeights>
void commit_agent(const std::filesystem::path& dir, WriteWeights&& write_weights, nlohmann::json j, AgentKind kind) {
    std::filesystem::create_directories(dir);
    const std::filesystem::path next = agent_next_weights_path(dir);
    write_weights(next);
    j["format"] = agent_format(kind).format;
    j["version"] = agent_format(kind).version;
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

/// The kind of the agent in `dir` (checkpoint_error if it holds none, io_error if unreadable).
[[nodiscard]] inline AgentKind agent_kind(const std::filesystem::path& dir) {
    return detail::kind_of(dir, detail::parse_agent_json(dir));
}

/// What the agent in `dir` acts on and where it learned, whatever its kind; its format,
/// version and weights checked as a load checks them.
[[nodiscard]] inline AgentHeader read_agent_header(const std::filesystem::path& dir) {
    return detail::agent_json_as<AgentHeader>(dir, detail::read_agent_json(dir, std::nullopt));
}

/// The rules of `library` named in `header`, in the agent's order: its action space.
/// Throws checkpoint_error naming the first rule the library lacks.
[[nodiscard]] inline rewrite::RuleSet agent_rules(const AgentHeader& header, const rewrite::RuleSet& library,
                                                  const std::filesystem::path& dir) {
    rewrite::RuleSet rules;
    for (const std::string& name : header.rules) {
        const auto id = library.find(name);
        if (!id)
            throw checkpoint_error(agent_json_path(dir).string() + ": made for another rule set: rule '" + name
                                   + "' is not in the rules given");
        rules.add(library[*id]);
    }
    return rules;
}

}  // namespace rlflow::rl
