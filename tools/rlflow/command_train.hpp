#pragma once
// `rlflow train --agent mf --graph MODEL... --checkpoint DIR`: trains the model-free agent
// (rl/model_free/trainer.hpp) with a progress bar, a JSON line per update in DIR/train.jsonl, and
// atomic checkpoints (rl/model_free/agent_file.hpp) every few updates, on Ctrl-C and at the end;
// `--resume` continues a run exactly where its last checkpoint left it.
// `rlflow train --agent mb ... [--real-steps N] [--dream-steps N] [--temperature T]`: the
// model-based agent (rl/model_based/trainer.hpp), a JSON line per iteration (real and dream steps,
// the world model's losses, the controller's PPO statistics), checkpoints as above
// (rl/model_based/agent_file.hpp); it does not resume yet.

#include "command_optimize.hpp"
#include "model_source.hpp"
#include "progress.hpp"
#include "ranks.hpp"

#include <rlflow/core/canonical.hpp>
#include <rlflow/core/parallel.hpp>
#include <rlflow/cost.hpp>
#include <rlflow/cost/ort_backend.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/optimize.hpp>
#include <rlflow/rl.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cmath>
#include <concepts>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rlflow::cli {

/// The network backend agents train with, the one they run with in optimize.
using AgentBackend = opt::AgentBackend;

struct TrainOptions {
    std::string agent = "mf";
    std::vector<std::string> graphs;
    std::string checkpoint;
    std::uint64_t seed = 0;
    std::size_t episodes = 0;
    std::size_t updates = 0;
    double time_limit = 0;
    bool resume = false;
    /// --agent mf: start from this trained agent's weights and action space (fine-tuning,
    /// e.g. on graphs it never saw), with a fresh optimiser and progress.
    std::string init_from;
    /// Where the trained agent's graphs will run and how ops are priced there.
    TargetFlags where;
    std::string reward = "cost";
    /// --reward ort-latency: timed runs per session, and sessions per graph.
    int latency_runs = cost::OrtLatencyOptions{}.runs;
    int latency_sessions = cost::OrtLatencyOptions{}.sessions;
    int latency_max_sessions = 4;
    /// Resolved from `where` before training: the target, and what the agent records of it.
    cost::Target target;
    std::string trained_for;
    std::string rules = "default";
    /// The rule ledger, as optimize reads it (auto, none or a file): the families it says
    /// never pay at the target are not in a new agent's action space.
    std::string ledger = "auto";
    std::size_t rollout_steps = rl::PpoOptions{}.rollout_steps;
    /// 0: by the graphs (rl::episode_step_limit of greedy search's rewrites).
    std::size_t step_limit = 0;
    bool no_gains = false;
    std::size_t checkpoint_every = 5;
    double entropy_coefficient = rl::PpoOptions{}.entropy_coefficient;
    std::optional<double> final_entropy_coefficient;
    double learning_rate = rl::PpoOptions{}.learning_rate;
    std::size_t environments_per_graph = rl::PpoOptions{}.environments_per_graph;
    unsigned jobs = default_jobs();
    std::string cost_cache;
    ModelOptions load;
    /// --agent mb: the dream's temperature, the budget of real steps and the dream steps per iteration.
    double temperature = rl::DreamOptions{}.temperature;
    std::size_t real_steps = rl::MbOptions{}.real_steps;
    std::size_t dream_steps = rl::MbOptions{}.dream_steps;
    std::int64_t reward_bins = rl::WorldModelOptions{}.reward_bins;
};

/// Updates run when no limit is given.
inline constexpr std::size_t default_updates = 50;

/// NaN as JSON null.
inline nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

/// Per training graph, the cost ratio of its last finished episode and the best one any reached.
inline void add_cost_ratios(nlohmann::json& j, const std::vector<double>& final_ratio, const std::vector<double>& best_ratio,
                            const std::vector<std::string>& graphs) {
    for (std::size_t g = 0; g < graphs.size(); ++g) {
        j["final_cost_ratio"][graphs[g]] = number_or_null(final_ratio[g]);
        j["best_cost_ratio"][graphs[g]] = number_or_null(best_ratio[g]);
    }
}

inline nlohmann::json update_json(const rl::UpdateLog& log, const std::vector<std::string>& graphs) {
    nlohmann::json j;
    j["update"] = log.update;
    j["env_steps"] = log.env_steps;
    j["episodes"] = log.episodes;
    j["episodes_ended"] = log.episodes_ended;
    j["mean_return"] = number_or_null(log.mean_return);
    add_cost_ratios(j, log.final_cost_ratio, log.best_cost_ratio, graphs);
    j["entropy"] = log.stats.entropy;
    j["approx_kl"] = log.stats.approx_kl;
    j["clip_fraction"] = log.stats.clip_fraction;
    j["policy_loss"] = log.stats.policy_loss;
    j["value_loss"] = log.stats.value_loss;
    j["explained_variance"] = log.stats.explained_variance;
    j["epochs"] = log.stats.epochs;
    j["seconds"] = log.seconds;
    j["rollout_seconds"] = log.rollout_seconds;
    j["update_seconds"] = log.update_seconds;
    return j;
}

/// The agent to train: read from --checkpoint to resume (on the same graphs and rewards),
/// or made from the options.
inline rl::MfAgentState agent_state_for(const TrainOptions& o, const std::string& rewards_from) {
    const std::filesystem::path dir(o.checkpoint);
    rl::MfAgentState state;
    if (o.resume) {
        state = rl::read_mf_agent_state(dir);
        if (!o.graphs.empty() && o.graphs != state.graphs)
            throw precondition_error(dir.string() + ": trained on " + join(state.graphs, ", ") + "; resume it on those graphs");
        if (state.cost_backend != rewards_from)
            throw precondition_error(dir.string() + ": trained with costs from " + state.cost_backend + ", not " + rewards_from
                                     + "; resume it with the same --cost and --reward");
        return state;
    }
    if (o.graphs.empty()) throw precondition_error("--graph: name at least one model to train on");
    if (std::filesystem::exists(rl::agent_json_path(dir)))
        throw precondition_error(dir.string() + " already holds an agent; --resume to continue it, or choose another --checkpoint");
    state.graphs = o.graphs;
    state.seed = o.seed;
    state.policy.seed = o.seed;
    state.ppo.rollout_steps = o.rollout_steps;
    state.ppo.entropy_coefficient = o.entropy_coefficient;
    // Without --entropy-final the weight decays as the defaults do, from wherever it starts.
    state.ppo.final_entropy_coefficient = o.final_entropy_coefficient.value_or(
        o.entropy_coefficient * rl::PpoOptions{}.final_entropy_coefficient / rl::PpoOptions{}.entropy_coefficient);
    state.ppo.learning_rate = o.learning_rate;
    state.ppo.environments_per_graph = o.environments_per_graph;
    state.env.one_step_gains = !o.no_gains;
    state.cost_backend = rewards_from;
    state.target = o.trained_for;
    if (!o.init_from.empty()) {
        // The network and its action space are the trained agent's; the rest is this run's.
        const rl::MfAgentState from = rl::read_mf_agent_state(o.init_from);
        state.rules = from.rules;
        state.policy = from.policy;
        state.policy.seed = o.seed;
        state.env.max_locations = from.env.max_locations;
        state.env.one_step_gains = from.env.one_step_gains;
    }
    return state;
}

/// With --reward gpu-latency: whole graphs timed on the GPU by the CUDA plugin's executor,
/// each new graph (by canonical form) once: the median of `runs` CUDA Graph replays after
/// warm-ups. A GPU's replays of one graph differ by a few microseconds, so unlike ORT's no
/// reference is timed beside each graph.
class GpuLatency {
public:
    GpuLatency(std::unique_ptr<cost::GpuGraphRunner> runner, int runs, std::uint64_t seed)
        : m_runner(std::move(runner)), m_runs(runs), m_seed(seed) {}

    [[nodiscard]] double operator()(const Graph& g) {
        const std::uint64_t key = canonical_hash(g);
        const std::lock_guard lock(m_mutex);
        if (const auto it = m_cache.find(key); it != m_cache.end()) return it->second;
        constexpr int warmup = 3;
        const std::vector<std::vector<double>> runs = m_runner->time_interleaved({&g}, warmup, m_runs, m_seed);
        const double ms = cost::detail::median(runs.at(0));
        m_cache.emplace(key, ms);
        return ms;
    }
    /// What rewards come from: the executor and its device.
    [[nodiscard]] std::string name() const { return m_runner->name() + ":latency"; }
    [[nodiscard]] std::size_t measured() const {
        const std::lock_guard lock(m_mutex);
        return m_cache.size();
    }

private:
    std::unique_ptr<cost::GpuGraphRunner> m_runner;
    int m_runs;
    std::uint64_t m_seed;
    mutable std::mutex m_mutex;
    std::unordered_map<std::uint64_t, double> m_cache;
};

/// With --reward ort-latency: whole graphs timed in ORT (as X-RLflow), on the cost
/// backend's worker when it has one, else on a worker of its own; with --reward
/// gpu-latency (a cuda target): timed on the GPU; otherwise none.
template <cost::CostBackend Backend>
struct LatencyReward {
    std::unique_ptr<cost::OrtWorker> own_worker;
    std::unique_ptr<cost::OrtLatency> latency;
    std::unique_ptr<GpuLatency> gpu;

    LatencyReward(const TrainOptions& o, cost::CostModel<Backend>& model) {
        if (o.reward == "gpu-latency") {
            if (o.target.kind != cost::TargetKind::cuda)
                throw precondition_error("--reward gpu-latency times whole graphs on the GPU; the target is " + o.target.describe()
                                         + " (use --target cuda)");
            const cost::LoadedCudaPlugin& plugin = cost::cuda_plugin();
            if (!plugin.api) throw precondition_error("--reward gpu-latency: " + plugin.reason);
            gpu = std::make_unique<GpuLatency>(plugin.api->make_graph_runner(o.target.gpu), o.latency_runs, o.seed);
            return;
        }
        if (o.reward != "ort-latency") return;
        cost::OrtWorker* worker = nullptr;
        if constexpr (std::same_as<Backend, cost::OrtBackend>) {
            worker = &model.backend().worker();
        } else {
            own_worker = std::make_unique<cost::OrtWorker>();
            worker = own_worker.get();
        }
        cost::OrtLatencyOptions measuring;
        measuring.seed = o.seed;
        measuring.runs = o.latency_runs;
        measuring.sessions = o.latency_sessions;
        measuring.max_sessions = o.latency_max_sessions;
        measuring.settings = o.target.ort;
        latency = std::make_unique<cost::OrtLatency>(*worker, measuring);
    }
    /// The measure rewards come from (empty: the cost model's per-op sum).
    [[nodiscard]] rl::GraphMeasure measure() const {
        if (gpu) return [l = gpu.get()](const Graph& g) { return (*l)(g); };
        if (!latency) return {};
        return [l = latency.get()](const Graph& g) { return (*l)(g); };
    }
    /// The name of what rewards come from, as agents record it.
    [[nodiscard]] std::string source(const std::string& cost_model) const {
        return gpu ? gpu->name() : latency ? latency->name() : cost_model;
    }
};

/// The interface keys of `graphs`, in order (cost::OrtLatency::interface_key).
inline std::vector<std::string> interface_keys(const std::vector<Graph>& graphs) {
    std::vector<std::string> keys;
    for (const Graph& g : graphs) keys.push_back(cost::OrtLatency::interface_key(g));
    return keys;
}

/// Paired runs and sessions that time the fastest graph again before it is reported.
inline constexpr int confirm_runs = 21;
inline constexpr int confirm_sessions = 3;

/// On --resume, DIR/train.jsonl keeps only the lines of the `key`s (updates) up to `last`,
/// the checkpoint's: a run killed between logging an update and saving it logged lines that
/// the resumed run writes again, and the kill may have cut the last line short.
inline void trim_training_log(const std::filesystem::path& file, const char* key, std::size_t last) {
    std::ifstream in(file);
    if (!in) return;
    std::string kept;
    for (std::string line; std::getline(in, line);) {
        const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object() || !j.contains(key) || !j[key].is_number_unsigned() || j[key].get<std::size_t>() > last)
            continue;
        kept += line + "\n";
    }
    in.close();
    write_file_atomically(file, kept);
}

/// A model hash (onnx_io::model_structure_hash) as 16 hexadecimal digits, as fastest.json and timed.jsonl write it.
inline std::string hash_hex(std::uint64_t hash) {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
    return text;
}

/// --reward ort-latency: DIR/timed.jsonl, a line per graph the environment timed, in order:
/// the training graph it was reached from, the hash of the model written, latency, ratio to the start,
/// and the seconds since training began. Two runs on one graph find there when each first
/// reached the graph the other ended with.
inline void write_timeline(const cost::OrtLatency& latency, const std::vector<std::string>& keys, const std::vector<std::string>& names,
                           const std::filesystem::path& dir) {
    std::vector<std::string> by_interface(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i)
        if (const cost::OrtLatency::Fastest* f = latency.fastest(keys[i]); f && f->index < by_interface.size()) by_interface[f->index] = names[i];
    std::string lines;
    for (const cost::OrtLatency::Timed& t : latency.timeline())
        lines += nlohmann::json{{"graph", t.interface < by_interface.size() ? by_interface[t.interface] : std::string()},
                                {"hash", hash_hex(t.hash)}, {"ms", t.ms}, {"ratio", t.ms / t.reference_ms}, {"seconds", t.seconds}}
                     .dump() + "\n";
    write_file_atomically(dir / "timed.jsonl", lines);
}

/// --reward ort-latency: writes, for each training graph, the fastest graph its episodes
/// reached as the environment measured it (DIR/fastest_<i>.onnx, and DIR/fastest.json with
/// both latencies, its hash and when it was first timed), and the timeline
/// (write_timeline). That graph is timed again against the start first
/// (`confirmed_ratio`): the fastest of many measured ratios is biased low, a new
/// measurement of one is not.
inline void write_fastest(cost::OrtLatency& latency, const std::vector<std::string>& keys, const std::vector<std::string>& names,
                          const std::filesystem::path& dir) {
    std::printf("ORT latency: %zu graphs timed in %zu sessions, %zu answers from the cache\n", latency.measured(), latency.sessions_run(),
                latency.cache_hits());
    write_timeline(latency, keys, names, dir);
    nlohmann::json all = nlohmann::json::array();
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const cost::OrtLatency::Fastest* f = latency.fastest(keys[i]);
        if (!f) continue;
        const double confirmed = latency.confirm(keys[i], confirm_runs, confirm_sessions);
        const std::filesystem::path file = dir / ("fastest_" + std::to_string(i) + ".onnx");
        onnx_io::save_onnx(f->graph, file);
        all.push_back({{"graph", names[i]}, {"file", file.string()}, {"start_ms", f->first_ms}, {"fastest_ms", f->ms},
                       {"ratio", f->ms / f->first_ms}, {"confirmed_ratio", confirmed}, {"hash", hash_hex(f->timed.hash)},
                       {"found_seconds", f->timed.seconds}});
        std::printf("fastest graph measured from %s: %s against %s at the start (%.3f); timed again: %.3f; wrote %s\n",
                    names[i].c_str(), format_ms(f->ms).c_str(), format_ms(f->first_ms).c_str(), f->ms / f->first_ms, confirmed,
                    file.c_str());
    }
    write_file_atomically(dir / "fastest.json", all.dump(2) + "\n");
}

/// A new agent's action space: the rules of --rules that match the training graphs (the
/// built-in rules of the default set always), without the families the target's ledger
/// says never pay, as optimize leaves them out of its search.
inline std::shared_ptr<const rewrite::RuleSet> new_action_space(const TrainOptions& o, const std::vector<Graph>& graphs, bool root) {
    std::optional<opt::LedgerUse> left_out;
    const auto ledger = opt::ledger_for(ledger_spec(o.ledger), o.rules.empty() || o.rules == "default", target_spec(o.where), o.target);
    const auto library = opt::rules_after_ledger(load_rule_set(o.rules), ledger, left_out);
    std::size_t builtins = 0;
    if (o.rules == "default") {
        const std::set<std::string> names = search::builtin_rule_names();
        while (builtins < library->size() && names.contains((*library)[builtins].name)) ++builtins;
    }
    if (root && left_out && left_out->dropped_rules > 0)
        std::printf("ledger %s: %zu rules of families that never paid at the target left out of the action space\n",
                    left_out->file.c_str(), left_out->dropped_rules);
    return std::make_shared<const rewrite::RuleSet>(rl::rules_matching(*library, builtins, graphs));
}

/// The step limit of a new agent's episodes: --step-limit, or by the graphs (twice the
/// rewrites greedy search takes on the one that takes the most, at least 100), said once.
template <cost::CostBackend Backend>
std::size_t episode_steps(const TrainOptions& o, const std::vector<Graph>& graphs, const std::shared_ptr<const rewrite::RuleSet>& rules,
                          cost::CostModel<Backend>& model, bool root) {
    if (o.step_limit > 0) return o.step_limit;
    const std::size_t rewrites = rl::greedy_rewrites(std::span<const Graph>(graphs), rules, model);
    const std::size_t limit = rl::episode_step_limit(rewrites);
    if (root) std::printf("episodes of %zu steps (greedy search takes %zu rewrites)\n", limit, rewrites);
    return limit;
}

/// The model-free agent's action space: its own rules when it resumes or starts from
/// another agent (--init-from), else a new one (then written into `state`).
inline std::shared_ptr<const rewrite::RuleSet> mf_action_space(const TrainOptions& o, rl::MfAgentState& state, const std::vector<Graph>& graphs,
                                                               bool root) {
    if (o.resume || !o.init_from.empty())
        return std::make_shared<const rewrite::RuleSet>(
            rl::agent_rules(state, *load_rule_set(o.rules), std::filesystem::path(o.resume ? o.checkpoint : o.init_from)));
    auto rules = new_action_space(o, graphs, root);
    state.rules = rl::rule_names(*rules);
    return rules;
}

/// Why training stops now, the same answer on every rank: Ctrl-C on any, or a limit.
enum class Stop { no, by_user, at_limit };

/// Whether Ctrl-C reached any rank, the same answer on every rank; `seconds` becomes rank
/// 0's, which time limits and progress bars count.
inline bool interrupted_on_any_rank(AnyCommunicator& comm, double& seconds) {
    std::array<double, 1> clock{seconds};
    comm.broadcast(std::span<double>(clock), 0);
    seconds = clock[0];
    return on_any_rank(comm, interrupted.load());
}

/// What one step of training (a model-free update, a model-based iteration) reports to
/// the loop.
struct TrainingStep {
    /// The update's or iteration's number (checkpoints are taken every checkpoint_every).
    std::size_t index = 0;
    double seconds = 0;
    /// Its line of train.jsonl; the loop adds the ranks.
    nlohmann::json line;
    /// The progress bar's words and count (unless the bar counts seconds).
    std::string text;
    std::size_t progress = 0;
};

/// How the training loop runs.
struct TrainingLoop {
    std::filesystem::path dir;
    bool root = true;
    int ranks = 1;
    std::size_t checkpoint_every = 1;
    /// The bar's label and total; `by_seconds`: it counts rank 0's seconds instead of the
    /// steps' progress.
    std::string label;
    std::size_t total = 0;
    bool by_seconds = false;
};

/// The loop both agents' training runs, step after step until Ctrl-C on any rank or
/// `limit_reached(seconds)` (the same answer on every rank): a line of DIR/train.jsonl per
/// step (rank 0), the progress bar, `save(seconds)` every checkpoint_every steps and at
/// the end. SIGINT ends it after the step in flight, which is saved.
template <class Step, class LimitReached, class Save>
Stop run_training_loop(const TrainingLoop& loop, AnyCommunicator& comm, Step&& step, LimitReached&& limit_reached, Save&& save) {
    std::ofstream log;
    if (loop.root) log.open(loop.dir / "train.jsonl", std::ios::app);
    RLFLOW_EXPECTS(!loop.root || log.good(), io_error, (loop.dir / "train.jsonl").string() + ": cannot write the training log");
    ProgressBar bar(loop.label, loop.total, loop.root);
    interrupted.store(false);
    const auto previous = std::signal(SIGINT, [](int) { interrupted.store(true); });
    double seconds = 0;
    Stop stop = Stop::no;
    while (stop == Stop::no) {
        if (interrupted_on_any_rank(comm, seconds)) {
            stop = Stop::by_user;
        } else if (limit_reached(seconds)) {
            stop = Stop::at_limit;
        } else {
            TrainingStep done = step();
            seconds += done.seconds;
            done.line["ranks"] = loop.ranks;
            if (loop.root) log << done.line.dump() << "\n" << std::flush;
            bar.update(loop.by_seconds ? static_cast<std::size_t>(seconds) : done.progress, done.text);
            if (done.index % loop.checkpoint_every == 0) save(seconds);
        }
    }
    std::signal(SIGINT, previous);
    bar.finish();
    save(seconds);
    return stop;
}

/// Every rank loads the graphs, the rules and, on --resume or --init-from, the agent's
/// files itself (on several machines: at the same paths); rank 0's weights and optimiser
/// state then go to all (MfTrainer::synchronise). Rank 0 alone prints, logs and saves.
template <cost::CostBackend Backend>
void train_with(const TrainOptions& o, Backend backend, Ranks& ranks) {
    const std::filesystem::path dir(o.checkpoint);
    cost::CostModel<Backend> model(std::move(backend));
    const LatencyReward<Backend> reward(o, model);
    const std::string rewards_from = reward.source(model.name());
    rl::MfAgentState state = agent_state_for(o, rewards_from);
    // Measured op prices are shared with optimize through the same cache file.
    const std::optional<std::filesystem::path> cache = opt::cost_cache_path(cost_cache_spec(o.cost_cache), model.name());
    opt::load_cost_cache(model, cache, opt::print_message);
    std::vector<Graph> graphs;
    for (const std::string& g : state.graphs) graphs.push_back(load_model(g, o.load));
    const auto rules = mf_action_space(o, state, graphs, ranks.root());
    if (!o.resume) state.env.step_limit = episode_steps(o, graphs, rules, model, ranks.root());
    const std::vector<std::string> keys = interface_keys(graphs);
    rl::MfTrainer<AgentBackend, Backend> trainer(std::move(graphs), rules, model, state, o.jobs, reward.measure(), ranks.comm());
    if (o.resume) rl::load_agent_weights(dir, trainer.policy().parameters(), &trainer.adam());
    if (!o.init_from.empty()) rl::load_agent_weights(o.init_from, trainer.policy().parameters());
    trainer.synchronise();
    const bool root = ranks.root();
    if (root) std::filesystem::create_directories(dir);
    const std::string start = o.resume ? ", resuming at update " + std::to_string(state.updates)
                              : o.init_from.empty() ? std::string() : ", starting from the agent in " + o.init_from;
    const std::string spread = ranks.size() == 1 ? std::string()
                                                 : "; " + std::to_string(ranks.size()) + " ranks, " + std::to_string(trainer.local_environments())
                                                       + " of " + std::to_string(trainer.environments()) + " environments each";
    if (root)
        std::printf("training the model-free agent for %s on %s: %zu xfers, rewards from %s%s%s\n", state.target.c_str(),
                    join(state.graphs, ", ").c_str(), rules->size(), rewards_from.c_str(), start.c_str(), spread.c_str());
    std::fflush(stdout);

    const std::size_t updates = o.updates == 0 && o.episodes == 0 && o.time_limit == 0 ? default_updates : o.updates;
    const std::size_t first = trainer.state().updates;
    const auto save = [&] {
        const rl::MfAgentState snapshot = trainer.snapshot();  // every rank: it gathers the episodes in progress
        if (!root) return;
        rl::save_mf_agent(dir, snapshot, trainer.policy().parameters(), &trainer.adam());
        opt::save_cost_cache(model, cache, !o.cost_cache.empty() && o.cost_cache != "none", opt::print_message);
    };
    if (o.resume && root) trim_training_log(dir / "train.jsonl", "update", first);
    // The bar runs to the limit that will stop training: updates, episodes or seconds.
    enum class Limit { by_updates, by_episodes, by_seconds };
    const Limit limit = updates > 0 ? Limit::by_updates : o.episodes > 0 ? Limit::by_episodes : Limit::by_seconds;
    const TrainingLoop loop{.dir = dir, .root = root, .ranks = ranks.size(), .checkpoint_every = o.checkpoint_every,
                            .label = limit == Limit::by_seconds ? "train (s)" : limit == Limit::by_episodes ? "train (episodes)" : "train",
                            .total = limit == Limit::by_updates    ? first + updates
                                     : limit == Limit::by_episodes ? o.episodes
                                                                   : static_cast<std::size_t>(std::ceil(o.time_limit)),
                            .by_seconds = limit == Limit::by_seconds};
    const auto update = [&] {
        const rl::UpdateLog u = trainer.update();
        char text[160];
        // Rewards are reward_scale (100) x the share of the input's cost a step saves: an
        // episode's return is the percent of the input's cost (or measured latency) it saved.
        std::snprintf(text, sizeof text, "update %zu, steps %zu, episodes %zu, mean return %.3g (%% of the input's %s saved)", u.update,
                      u.env_steps, u.episodes, u.mean_return, reward.latency || reward.gpu ? "measured latency" : "cost");
        return TrainingStep{.index = u.update, .seconds = u.seconds, .line = update_json(u, state.graphs), .text = text,
                            .progress = limit == Limit::by_updates ? u.update : u.episodes};
    };
    const auto limit_reached = [&](double seconds) {
        const rl::MfAgentState& now = trainer.state();
        return (updates > 0 && now.updates >= first + updates) || (o.episodes > 0 && now.episodes >= o.episodes)
               || (o.time_limit > 0 && seconds >= o.time_limit);
    };
    const Stop stop = run_training_loop(loop, ranks.comm(), update, limit_reached, [&](double) { save(); });
    if (root)
        std::printf("%s after %zu updates, %zu environment steps, %zu episodes; agent saved in %s\n",
                    stop == Stop::by_user ? "interrupted" : "done", trainer.state().updates, trainer.state().env_steps,
                    trainer.state().episodes, dir.c_str());
    if (reward.latency) write_fastest(*reward.latency, keys, state.graphs, dir);
    if (reward.gpu) std::printf("GPU latency: %zu graphs timed\n", reward.gpu->measured());
}

/// One iteration of model-based training as a line of train.jsonl.
inline nlohmann::json iteration_json(const rl::MbLog& log, const std::vector<std::string>& graphs) {
    nlohmann::json j;
    j["iteration"] = log.iteration;
    j["real_steps"] = log.real_steps;
    j["dream_steps"] = log.dream_steps;
    j["episodes"] = log.episodes;
    add_cost_ratios(j, log.final_cost_ratio, log.best_cost_ratio, graphs);
    const rl::WorldModelLosses& m = log.model;
    j["model"] = {{"nll_per_dim", m.nll_per_dim}, {"reward", m.reward}, {"done", m.done}, {"mask", m.mask}, {"gains", m.gains},
                  {"summary", m.summary}, {"spread", m.spread}, {"total", m.total}, {"reward_error", m.reward_error},
                  {"transitions", m.steps}};
    const rl::UpdateStats& c = log.controller;
    j["controller"] = {{"entropy", c.entropy}, {"approx_kl", c.approx_kl}, {"policy_loss", c.policy_loss}, {"value_loss", c.value_loss},
                       {"explained_variance", c.explained_variance}, {"clip_fraction", c.clip_fraction}};
    j["dream"] = {{"mean_return", log.dream.mean_return}, {"mean_length", log.dream.mean_length}, {"episodes_ended", log.dream.episodes_ended}};
    j["seconds"] = {{"model", log.model_seconds}, {"dream", log.dream_seconds}, {"real", log.real_seconds},
                    {"total", log.model_seconds + log.dream_seconds + log.real_seconds}};
    return j;
}

/// --agent mb: trains the model-based agent until --real-steps (or --time-limit, or Ctrl-C).
template <cost::CostBackend Backend>
void train_mb_with(const TrainOptions& o, Backend backend, Ranks& ranks) {
    const std::filesystem::path dir(o.checkpoint);
    if (o.resume) throw precondition_error("--resume: a model-based agent cannot resume yet (its episode buffer is not saved); train a new one");
    if (!o.init_from.empty()) throw precondition_error("--init-from: only a model-free agent (--agent mf) starts from another yet");
    if (o.graphs.empty()) throw precondition_error("--graph: name at least one model to train on");
    if (std::filesystem::exists(rl::agent_json_path(dir)))
        throw precondition_error(dir.string() + " already holds an agent; choose another --checkpoint");
    cost::CostModel<Backend> model(std::move(backend));
    const LatencyReward<Backend> reward(o, model);
    const std::optional<std::filesystem::path> cache = opt::cost_cache_path(cost_cache_spec(o.cost_cache), model.name());
    opt::load_cost_cache(model, cache, opt::print_message);
    std::vector<Graph> graphs;
    for (const std::string& g : o.graphs) graphs.push_back(load_model(g, o.load));
    const auto rules = new_action_space(o, graphs, ranks.root());
    rl::MbOptions options;
    options.env.step_limit = episode_steps(o, graphs, rules, model, ranks.root());
    options.env.one_step_gains = !o.no_gains;
    options.dream.temperature = o.temperature;
    options.real_steps = o.real_steps;
    // The random agent takes at most a quarter of a small budget.
    options.random_steps = std::min(options.random_steps, std::max<std::size_t>(1, o.real_steps / 4));
    options.dream_steps = o.dream_steps;
    options.model.reward_bins = o.reward_bins;
    options.seed = options.model.seed = options.controller.seed = o.seed;
    if (rl::learned_from_latency(reward.source(model.name()))) options.controller.gain_prior = rl::measured_reward_gain_prior;
    rl::MbAgentState state;
    state.rules = rl::rule_names(*rules);
    state.model = options.model;
    state.controller = options.controller;
    state.env = options.env;
    state.temperature = o.temperature;
    state.cost_backend = reward.source(model.name());
    state.target = o.trained_for;
    state.graphs = o.graphs;
    state.seed = o.seed;
    const std::vector<std::string> keys = interface_keys(graphs);
    rl::MbTrainer<AgentBackend, Backend> trainer(std::move(graphs), rules, model, options, o.jobs, reward.measure(), ranks.comm());
    trainer.synchronise();
    const bool root = ranks.root();
    if (root) std::filesystem::create_directories(dir);
    const std::string spread = ranks.size() == 1 ? std::string() : "; " + std::to_string(ranks.size()) + " ranks";
    if (root)
        std::printf("training the model-based agent for %s on %s: %zu xfers, rewards from %s, %zu real steps, %zu dream steps per "
                    "iteration, temperature %g%s\n",
                    state.target.c_str(), join(state.graphs, ", ").c_str(), rules->size(), state.cost_backend.c_str(), o.real_steps, o.dream_steps, o.temperature,
                    spread.c_str());
    std::fflush(stdout);
    const auto save = [&](double seconds) {
        if (!root) return;
        state.real_steps = trainer.real_steps();
        state.dream_steps = trainer.dream_steps();
        state.episodes = trainer.episodes();
        state.seconds = seconds;
        rl::save_mb_agent(dir, state, trainer.model(), trainer.controller());
        opt::save_cost_cache(model, cache, !o.cost_cache.empty() && o.cost_cache != "none", opt::print_message);
    };
    const bool by_seconds = o.time_limit > 0;
    const TrainingLoop loop{.dir = dir, .root = root, .ranks = ranks.size(), .checkpoint_every = o.checkpoint_every,
                            .label = by_seconds ? "train (s)" : "train (real steps)",
                            .total = by_seconds ? static_cast<std::size_t>(std::ceil(o.time_limit)) : o.real_steps,
                            .by_seconds = by_seconds};
    double elapsed = 0;
    const auto iterate = [&] {
        const rl::MbLog u = trainer.iterate();
        ++state.iterations;
        char text[112];
        std::snprintf(text, sizeof text, "iteration %zu, real steps %zu, dream steps %zu, M loss %.3g", u.iteration, u.real_steps,
                      u.dream_steps, u.model.total);
        elapsed += u.model_seconds + u.dream_seconds + u.real_seconds;
        nlohmann::json line = iteration_json(u, state.graphs);
        line["elapsed_seconds"] = elapsed;
        return TrainingStep{.index = u.iteration, .seconds = u.model_seconds + u.dream_seconds + u.real_seconds,
                            .line = std::move(line), .text = text, .progress = u.real_steps};
    };
    // Every rank decides alike: the real-step budget (counted over all), rank 0's clock.
    const auto limit_reached = [&](double seconds) { return trainer.done() || (by_seconds && seconds >= o.time_limit); };
    // One process also ends a collection at the clock or Ctrl-C (a latency reward's can
    // outlast the limit many times over); ranks cut at iterations only.
    const auto started = std::chrono::steady_clock::now();
    if (ranks.size() == 1)
        trainer.set_cut([&] {
            return interrupted.load() ||
                   (by_seconds && std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() >= o.time_limit);
        });
    const Stop stop = run_training_loop(loop, ranks.comm(), iterate, limit_reached, save);
    if (root)
        std::printf("%s after %zu iterations, %zu real steps, %zu dream steps, %zu episodes; agent saved in %s\n",
                    stop == Stop::by_user ? "interrupted" : "done", state.iterations, trainer.real_steps(), trainer.dream_steps(),
                    trainer.episodes(), dir.c_str());
    if (reward.latency) write_fastest(*reward.latency, keys, o.graphs, dir);
}

inline void dispatch_train(TrainOptions o) {
    Ranks ranks;
    if (ranks.size() > 1 && o.reward != "cost")
        throw precondition_error("--reward " + o.reward + " times whole graphs, and ranks sharing a machine would disturb each "
                                 "other's timings; run it without mpirun");
    ranks.warn_if_bound(o.jobs);
    const auto run = [&](auto backend) {
        if (o.agent == "mb") return train_mb_with(o, std::move(backend), ranks);
        train_with(o, std::move(backend), ranks);
    };
    o.target = resolve_target(o.where);
    const opt::CostChoice pricing = resolve_cost(o.where, o.target);
    o.trained_for = opt::priced_target(pricing, o.target);
    opt::with_cost_backend(pricing, o.target, {o.seed, false}, run);
}

}  // namespace rlflow::cli
