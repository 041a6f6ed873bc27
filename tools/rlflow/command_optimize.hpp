#pragma once
// `rlflow optimize <MODEL> -o <out.onnx> [--target auto|ort-cpu|cuda] [--search greedy|taso|eqsat|mf|mb]
//  [--cost auto|analytic|cpu|ort|cudnn] [--device PRESET] [--guard auto|ort|none] [--ort-level L]
//  [--ort-threads T] [--propose MODELS] [--budget N] [--alpha A] [--rules FILE] [--time-limit S]
//  [--report r.json]`: searches for a cheaper equivalent graph under the target's prices and
// under other price models, times the cheapest few of each in the target runtime against the
// input (the guard), checks the fastest measured one against the original on random inputs,
// and only then writes it (atomically) with a report. A model never runs slower than its
// input: when no candidate is faster beyond the noise, the input is written unchanged.

#include "command_info.hpp"
#include "model_source.hpp"
#include "nchwc_groups.hpp"
#include "optimize_guard.hpp"
#include "output_paths.hpp"
#include "progress.hpp"
#include "target.hpp"

#include <rlflow/core/atomic_file.hpp>
#include <rlflow/core/memory.hpp>
#include <rlflow/core/statistics.hpp>
#include <rlflow/cost.hpp>
#include <rlflow/cost/ort_backend.hpp>
#include <rlflow/exec/fold_weights.hpp>
#include <rlflow/onnx/export.hpp>
#include <rlflow/rewrite.hpp>
#include <rlflow/rewrite/default_rules.hpp>
#include <rlflow/search.hpp>
#include <rlflow/search/ledger.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rl.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <type_traits>

#include <sys/resource.h>

namespace rlflow::cli {

struct OptimizeOptions {
    std::string model;
    std::string output;
    ModelOptions load;
    std::string search = "taso";
    /// Where the model will run and how ops are priced there.
    TargetFlags where;
    /// Price models whose cheapest graphs the guard also times: "auto" (for an ort-cpu
    /// target, the analytic cpu and v100 presets), "none", or names as --cost takes them
    /// with analytic:PRESET for a preset.
    std::vector<std::string> propose{"auto"};
    /// 0: search::default_budget of the graph's size.
    std::size_t budget = 0;
    double alpha = 1.05;
    /// Most megabytes the search may hold beyond its working graph; 0: no limit.
    std::size_t memory_limit_mb = 0;
    double time_limit = 0;
    std::string rules = "default";
    /// Rules given as a set (the Python module's rlflow.rules objects); when set, `rules`
    /// only names them in the report.
    std::shared_ptr<const rewrite::RuleSet> rule_set;
    /// The rule ledger (search/ledger.hpp): "auto" (the one rlflow ships, for the default
    /// rules at an ort-cpu target of its level under the target's own prices: ledger_for),
    /// "none", or a ledger file. Its families that
    /// never paid are left out of the rules, and candidates are timed in the order of what
    /// it expects of them.
    std::string ledger = "auto";
    std::string report;
    std::string cost_cache;
    int verify_trials = 3;
    onnx_io::ExportOptions save;
    std::uint64_t seed = 0;
    std::string guard = "auto";
    /// Levels the guard also times at, where the candidate must not lose; empty: the
    /// target's level alone.
    std::vector<std::string> guard_levels;
    std::size_t guard_candidates = 3;
    int guard_rounds = 21;
    /// --search mf: the trained agent's directory, sampled rollouts after the greedy one, and
    /// where a rollout ends (limit or noop).
    std::string agent;
    std::size_t samples = 0;
    std::string agent_stop = "limit";
    /// --search eqsat: limits, rounds of multi-output rules, and extraction.
    search::EqsatOptions eqsat;
    std::string extract = search::ilp_available ? "ilp" : "greedy";
    std::string ilp_cycles = "filter";
    /// Progress bar and the target line (off: silent, as the Python module runs by default).
    bool progress = true;
    /// Set when the target is resolved: what the prices stand for (cli::priced_target), to
    /// compare with what an agent was trained for.
    std::string priced_for;
    /// Write standard ONNX ops only: no ONNX Runtime contrib op (--fused-conv-ms is
    /// refused, and so is an input that already holds one).
    bool portable = false;
};

/// The searches --search (and Python's search) names.
inline const std::vector<std::string> search_names{"greedy", "taso", "eqsat", "mf", "mb"};
/// How --guard (and Python's guard) may time the candidates.
inline const std::vector<std::string> guard_names{"auto", "ort", "cuda", "none"};

/// The ONNX file a MODEL argument names, if it is one (not zoo:NAME).
inline std::optional<std::filesystem::path> model_file(const OptimizeOptions& o) {
    if (o.model.starts_with(zoo_prefix)) return std::nullopt;
    return std::filesystem::path(o.model);
}

/// ONNX Runtime's contrib-op domain.
inline constexpr std::string_view onnxruntime_domain = "com.microsoft";

/// The ops of `g`, written with `save`, outside ONNX's standard domain, as "domain.op",
/// each once, sorted: what the input held and rlflow passed through unchanged, and
/// com.microsoft.FusedConv where a fused convolution is written as one.
inline std::vector<std::string> nonstandard_ops(const Graph& g, const onnx_io::ExportOptions& save) {
    std::set<std::string> ops;
    for (const Node& n : g.nodes()) {
        if (!n.domain.empty() && n.domain != "ai.onnx") ops.insert(n.domain + "." + n.op_type);
        const bool fused = n.op == OpKind::Conv2D && n.attributes.get_int("activation", 0) != 0;
        if (fused && save.fused_conv_microsoft) ops.insert(std::string(onnxruntime_domain) + ".FusedConv");
    }
    return {ops.begin(), ops.end()};
}

/// Whether any of `ops` (nonstandard_ops) is an ONNX Runtime contrib op.
inline bool needs_onnxruntime(const std::vector<std::string>& ops) {
    return std::any_of(ops.begin(), ops.end(), [](const std::string& op) { return op.starts_with(std::string(onnxruntime_domain) + "."); });
}

/// --portable: refuses an input that holds an ONNX Runtime contrib op, naming the first.
inline void check_portable_input(const Graph& g, const std::string& model) {
    for (const Node& n : g.nodes())
        if (n.domain == onnxruntime_domain)
            throw onnx_error(model + ": node '" + n.name + "' is " + n.domain + "." + n.op_type
                              + ", an ONNX Runtime contrib op, which rlflow passes through unchanged; --portable "
                                "writes standard ONNX ops only");
}

/// The network backend agents train and run with.
using AgentBackend = nn::backend::Eigen;

/// Set by SIGINT: the search stops and the best graph so far is verified and written.
inline std::atomic<bool> interrupted{false};

/// The rules `--rules` names: "default" (built-in + the generated library), "builtin"
/// (the built-in rules alone) or a rules file.
inline std::shared_ptr<const rewrite::RuleSet> load_rule_set(const std::string& which) {
    if (which.empty() || which == "default") return std::make_shared<const rewrite::RuleSet>(rewrite::default_rules());
    if (which == "builtin") return std::make_shared<const rewrite::RuleSet>(rewrite::builtin_rules());
    return std::make_shared<const rewrite::RuleSet>(rewrite::load_rules(which));
}

/// How the agent of `--agent` rolls out (--search mf or mb).
inline rl::AgentSearchOptions agent_rollouts(const OptimizeOptions& o, const rl::EnvOptions& env, const search::SearchOptions& options) {
    rl::AgentSearchOptions agent;
    agent.samples = o.samples;
    agent.until_limit = o.agent_stop == "limit";
    agent.seed = o.seed;
    agent.env = env;
    agent.search = options;
    return agent;
}

/// The target the agent of --agent was trained for ("" for an agent saved before targets).
inline std::string agent_target(const OptimizeOptions& o) {
    return o.search == "mb" ? rl::read_mb_agent_state(o.agent).target : rl::read_agent_state(o.agent).target;
}

/// The agent directory of --agent, after a note when it learned from other costs and a
/// warning when it was trained for another target.
inline std::filesystem::path agent_dir(const OptimizeOptions& o, const std::string& learned_from, const std::string& pricing,
                                       const std::string& trained_for) {
    const std::filesystem::path dir(o.agent);
    if (learned_from != pricing)
        std::fprintf(stderr, "note: the agent in %s learned from %s costs; this search prices with %s\n", dir.c_str(),
                     learned_from.c_str(), pricing.c_str());
    if (!trained_for.empty() && trained_for != o.priced_for)
        std::fprintf(stderr, "warning: the agent in %s was trained for %s; this run optimises for %s\n", dir.c_str(),
                     trained_for.c_str(), o.priced_for.c_str());
    return dir;
}

/// Rolls out the agent in `o.agent` (--search mf or mb) with `library` holding its rules.
template <cost::CostBackend Backend>
search::SearchResult agent_search(const OptimizeOptions& o, const Graph& g, const rewrite::RuleSet& library,
                                  cost::CostModel<Backend>& model, const search::SearchOptions& options) {
    if (o.agent.empty())
        throw precondition_error("--search " + o.search + " needs --agent DIR (a directory `rlflow train --agent " + o.search + "` wrote)");
    if (o.search == "mb") {
        const rl::MbAgentState state = rl::read_mb_agent_state(o.agent);
        const std::filesystem::path dir = agent_dir(o, state.cost_backend, model.name(), state.target);
        rl::AgentState names;
        names.rules = state.rules;
        const auto rules = std::make_shared<const rewrite::RuleSet>(rl::agent_rules(names, library, dir));
        rl::LoadedMbAgent<AgentBackend> loaded(state, dir);
        rl::ModelBasedAgent<AgentBackend> agent(loaded.model, loaded.controller, static_cast<std::uint32_t>(state.env.max_locations));
        return rl::agent_search(g, rules, model, agent, agent_rollouts(o, state.env, options));
    }
    const rl::AgentState state = rl::read_agent_state(o.agent);
    const std::filesystem::path dir = agent_dir(o, state.cost_backend, model.name(), state.target);
    const auto rules = std::make_shared<const rewrite::RuleSet>(rl::agent_rules(state, library, dir));
    rl::ActorCritic<AgentBackend> policy(static_cast<std::uint32_t>(rules->size()),
                                         static_cast<std::uint32_t>(state.env.max_locations), state.policy);
    rl::load_agent_weights(dir, policy.parameters());
    return rl::agent_search(g, rules, model, policy, agent_rollouts(o, state.env, options));
}

/// Runs the chosen search with `model` pricing it.
/// Runs equality saturation for --search eqsat; its statistics go to `stats`.
template <cost::CostBackend Backend>
search::SearchResult eqsat_search(const OptimizeOptions& o, const Graph& g, std::shared_ptr<const rewrite::RuleSet> rules,
                                  cost::CostModel<Backend>& model, const search::SearchOptions& options,
                                  std::optional<search::EqsatStats>& stats) {
    search::EqsatOptions eq = o.eqsat;
    eq.extraction = o.extract == "ilp" ? search::EqsatOptions::Extraction::ilp : search::EqsatOptions::Extraction::greedy;
    eq.ilp_cycles = o.ilp_cycles == "order" ? search::IlpCycles::order : search::IlpCycles::filter;
    if (eq.extraction == search::EqsatOptions::Extraction::ilp && !search::ilp_available)
        throw precondition_error("--extract ilp needs rlflow built with CBC: install coinor-libcbc-dev (bash tools/setup.sh "
                                 "does) and rebuild, or use --extract greedy");
    search::EqsatResult r = search::eqsat(g, std::move(rules), model, options, eq);
    stats = std::move(r.stats);
    return std::move(r.search);
}

template <cost::CostBackend Backend>
search::SearchResult run_search(const OptimizeOptions& o, const Graph& g, std::shared_ptr<const rewrite::RuleSet> rules,
                                cost::CostModel<Backend>& model, std::size_t keep_best,
                                std::optional<search::EqsatStats>& eqsat_stats, const std::string& label = "") {
    search::SearchOptions options;
    options.budget = o.budget > 0 ? o.budget : search::default_budget(g.num_nodes());
    options.alpha = o.alpha;
    constexpr std::size_t megabyte = 1 << 20;
    options.memory_limit_bytes = o.memory_limit_mb * megabyte;
    options.time_limit_seconds = o.time_limit;
    options.stop = &interrupted;
    options.keep_best = keep_best;
    const bool saturating = o.search == "eqsat";
    std::optional<ProgressBar> bar;
    if (o.progress) {
        bar.emplace((saturating ? "saturation" : "search") + label, saturating ? o.eqsat.iteration_limit : options.budget);
        options.on_progress = [&](const search::SearchProgress& p) {
            bar->update(p.expansions, saturating ? "iteration " + std::to_string(p.expansions)
                                                 : "best " + format_ms(p.best_cost_ms) + " (" + format_ratio(p.initial_cost_ms / p.best_cost_ms) + ")");
        };
    }
    // A Ctrl-C of an earlier search in this process (the Python module runs many) is spent.
    interrupted.store(false);
    const auto previous = std::signal(SIGINT, [](int) { interrupted.store(true); });
    const bool agent = o.search == "mf" || o.search == "mb";
    search::SearchResult result = agent                  ? agent_search(o, g, *rules, model, options)
                                  : saturating           ? eqsat_search(o, g, rules, model, options, eqsat_stats)
                                  : o.search == "greedy" ? search::greedy(g, rules, model, options)
                                                         : search::backtracking(g, rules, model, options);
    std::signal(SIGINT, previous);
    if (bar) bar->finish();
    return result;
}

/// How the result was checked against the original, in a form both checks give.
struct Verification {
    /// "whole graph", or "regions" when the graph has ops rlflow cannot execute.
    std::string method;
    bool equal = true;
    double max_abs_diff = 0;
    /// Regions compared (regions method only).
    std::size_t regions = 0;
    std::string detail;
};

/// Runs the whole graph on random inputs when rlflow can execute every op in it;
/// otherwise compares each rewritten region with the one it replaced, on random values at
/// the region's boundary (rewrites never touch ops rlflow cannot execute).
inline Verification verify(const Graph& original, const Graph& result, const OptimizeOptions& o) {
    rewrite::EquivalenceOptions options;
    options.trials = o.verify_trials;
    options.seed = o.seed;
    if (graph_statistics(original).opaque_nodes == 0) {
        const auto check = rewrite::check_equivalence(original, result, options);
        return {"whole graph", check.equal, check.max_abs_diff, 0, check.detail};
    }
    const auto check = rewrite::check_regions(original, result, options);
    return {"regions", check.equal, check.max_abs_diff, check.regions.size(), check.detail};
}

/// A graph that may be written: the search's best, a runner-up, or the input.
struct Outcome {
    Graph graph;
    double cost_ms = 0;
    std::map<std::string, std::size_t> rewrites;
    std::vector<std::string> sequence;
    bool is_input = false;
    /// The price models under which this graph was among the cheapest.
    std::vector<std::string> proposed_by;
};

/// Brings `g` to the form optimize writes: dead nodes removed, weight-only subgraphs of
/// known weights folded into new weights.
inline void settle_as_written(Graph& g) {
    g.remove_dead_nodes();
    (void)exec::fold_weight_only(g);
}

/// The search's best graph and runners-up as they would be written: dead nodes removed,
/// weight-only subgraphs of known weights folded into new weights. Only graphs the cost
/// model prices below the input: one that costs the same (rewrites that cancel, or forms
/// ORT runs alike) is no gain, and timing it against the input would only give the noise
/// a chance to win.
inline std::vector<Outcome> candidate_outcomes(search::SearchResult& r, const std::string& proposer) {
    constexpr double rounding = 1e-9;  // relative: sums of the same prices in another order
    const double below = r.initial_cost_ms * (1 - rounding);
    std::vector<Outcome> out;
    if (r.rewrites.empty()) return out;
    if (r.best_cost_ms < below) out.push_back({std::move(r.graph), r.best_cost_ms, r.rewrites, r.sequence, false, {proposer}});
    for (auto& runner : r.runners_up)
        if (runner.cost_ms < below)
            out.push_back({std::move(runner.graph), runner.cost_ms, runner.rewrites, runner.sequence, false, {proposer}});
    for (Outcome& c : out) settle_as_written(c.graph);
    return out;
}

/// Rewrite counts with the steps that undo each other cancelled: a fusion and the split
/// that reverses it (rewrite::reversible_builtin_rules) count as nothing, so the list
/// says what changed from the input to the written graph.
inline std::map<std::string, std::size_t> net_rewrites(std::map<std::string, std::size_t> counts) {
    for (const auto& [forward, backward] : rewrite::reversible_builtin_rules) {
        const auto f = counts.find(std::string(forward));
        const auto b = counts.find(std::string(backward));
        if (f == counts.end() || b == counts.end()) continue;
        const std::size_t both = std::min(f->second, b->second);
        f->second -= both;
        b->second -= both;
    }
    std::erase_if(counts, [](const auto& entry) { return entry.second == 0; });
    return counts;
}

/// `g` as it is once written as ONNX with the options of `o` and read back as the input
/// was read.
inline Graph written_back(const Graph& g, const OptimizeOptions& o) {
    onnx_io::ExportOptions options = o.save;
    options.check = false;  // the file written is checked; this copy is only looked at
    onnx_io::ImportOptions import;
    import.fold_constants = !o.load.no_fold;
    import.dim_values = o.load.dims;
    import.data_inputs = o.load.data_inputs;
    return onnx_io::import_model(onnx_io::export_model(g, options), import);
}

/// The statistics `rlflow info` gives for `g` once written as ONNX with the options of
/// `o`: exported, imported back as info imports it, then counted.
inline GraphStatistics written_statistics(const Graph& g, const OptimizeOptions& o) { return graph_statistics(written_back(g, o)); }

/// Why the search (`search`, as --search names it) stopped, in words.
inline std::string stop_reason_text(search::StopReason reason, std::string_view search,
                                    const std::optional<search::EqsatStats>& eqsat = std::nullopt) {
    if (eqsat) {
        if (eqsat->stop == "saturated") return "saturated (no rewrite changes the e-graph)";
        if (eqsat->stop == "node_limit") return "stopped at the --node-limit";
        if (eqsat->stop == "iteration_limit") return "stopped at the --iter-limit";
    }
    switch (reason) {
        case search::StopReason::converged:
            return search == "mf" || search == "mb" ? "done (every rollout of the agent ended)" : "converged (no rewrite left to try)";
        case search::StopReason::budget: return "stopped at the --budget";
        case search::StopReason::time_limit: return "stopped at the --time-limit";
        case search::StopReason::interrupted: return "interrupted (Ctrl-C); kept the best graph so far";
        case search::StopReason::memory_limit: return "stopped at the --memory-limit";
    }
    return "stopped";
}

/// The report's "eqsat" object: the e-graph, why exploration stopped, the extraction and
/// the seconds of each phase.
inline nlohmann::json eqsat_json(const search::EqsatStats& s, const search::EqsatOptions& options) {
    nlohmann::json j;
    j["eclasses"] = s.classes;
    j["enodes"] = s.enodes;
    j["iterations"] = s.iterations;
    j["stop"] = s.stop;
    j["node_limit"] = s.node_limit;
    j["iteration_limit"] = options.iteration_limit;
    j["multi_rounds"] = options.multi_rounds;
    j["multi_rounds_run"] = s.multi_rounds;
    j["multi_schedule"] = options.multi_schedule == search::EqsatOptions::MultiSchedule::first ? "first" : "saturated";
    j["extraction"] = s.extraction;
    j["greedy_cost_ms"] = s.greedy_cost_ms;
    j["local_cost_ms"] = s.local_cost_ms;
    j["local_moves"] = s.local.moves;
    j["local_passes"] = s.local.passes;
    j["local_seconds"] = s.local.seconds;
    if (s.ilp) {
        j["ilp_cost_ms"] = s.ilp_cost_ms;
        j["ilp_status"] = s.ilp->status;
        j["ilp_gap"] = s.ilp->gap;
        j["ilp_objective_ms"] = s.ilp->objective;
        j["ilp_bound_ms"] = s.ilp->bound;
        j["ilp_variables"] = s.ilp->variables;
        j["ilp_constraints"] = s.ilp->constraints;
        j["ilp_filtered"] = s.ilp->filtered;
        j["ilp_seconds"] = s.ilp->seconds;
        j["ilp_windows"] = s.ilp->windows;
    }
    j["explore_seconds"] = s.explore_seconds;
    j["price_seconds"] = s.price_seconds;
    j["extract_seconds"] = s.extract_seconds;
    j["rules_applied"] = s.applied;
    return j;
}

inline nlohmann::json optimize_report(const OptimizeOptions& o, const cost::Target& target, const std::string& backend,
                                      const Graph& before, const search::SearchResult& r, const Outcome& written,
                                      const Verification& check, const std::optional<search::EqsatStats>& eqsat) {
    nlohmann::json j;
    j["model"] = o.model;
    j["target"] = target.name();
    j["target_description"] = target.describe();
    j["target_device"] = target_device(target);
    j["search"] = o.search;
    j["cost_backend"] = backend;
    j["cost_before_ms"] = r.initial_cost_ms;
    j["cost_after_ms"] = written.cost_ms;
    j["search_best_cost_ms"] = r.best_cost_ms;
    // The figures `rlflow info` prints, computed by the same code on what it reads: the
    // input as loaded, and the graph written, as ONNX and read back.
    const GraphStatistics stats_before = graph_statistics(before);
    const GraphStatistics stats_after = written.is_input ? stats_before : written_statistics(written.graph, o);
    j["memory_before_bytes"] = stats_before.memory.peak_activation_bytes;
    j["memory_after_bytes"] = stats_after.memory.peak_activation_bytes;
    j["weight_bytes_before"] = stats_before.memory.weight_bytes;
    j["weight_bytes_after"] = stats_after.memory.weight_bytes;
    j["flops_before"] = stats_before.flops;
    j["flops_after"] = stats_after.flops;
    j["written"] = written.is_input ? "input" : "optimised";
    // An input kept as the file it came from is written byte for byte, as it was.
    const bool unchanged_file = written.is_input && model_file(o).has_value();
    const std::vector<std::string> extra_ops = nonstandard_ops(written.graph, unchanged_file ? onnx_io::ExportOptions{} : o.save);
    j["nonstandard_ops"] = extra_ops;
    j["needs_onnxruntime"] = needs_onnxruntime(extra_ops);
    j["portable"] = o.portable;
    j["rewrites"] = net_rewrites(written.rewrites);
    j["rewrites_applied"] = written.rewrites;
    j["rewrite_sequence"] = written.sequence;
    j["search_rewrites"] = r.rewrites;
    j["expansions"] = r.expansions;
    j["budget"] = o.budget > 0 ? o.budget : search::default_budget(before.num_nodes());
    j["peak_search_bytes"] = r.peak_search_bytes;
    j["prices_for"] = o.priced_for;
    if (o.search == "mf" || o.search == "mb") {
        j["agent"] = o.agent;
        j["agent_target"] = agent_target(o);
        j["agent_target_matches"] = j["agent_target"] == o.priced_for;
        j["real_steps"] = r.expansions;  // environment steps of the agent's rollouts
        j["inference_seconds"] = r.seconds;
        j["samples"] = o.samples;
        j["agent_stop"] = o.agent_stop;
    }
    if (eqsat) j["eqsat"] = eqsat_json(*eqsat, o.eqsat);
    j["stop_reason"] = search::stop_reason_name(r.reason);
    j["stop"] = stop_reason_text(r.reason, o.search, eqsat);
    j["seconds"] = r.seconds;
    j["verified"] = check.equal;
    j["verification"] = check.method;
    if (check.method == "regions") j["regions_verified"] = check.regions;
    j["max_abs_diff"] = check.max_abs_diff;
    return j;
}

/// Who proposed each candidate and its price under the target's model, in candidate order.
struct CandidateOrigin {
    std::vector<std::string> proposed_by;
    double cost_ms = 0;
};

inline std::vector<CandidateOrigin> origins(const std::vector<Outcome>& candidates) {
    std::vector<CandidateOrigin> out;
    for (const Outcome& c : candidates) out.push_back({c.proposed_by, c.cost_ms});
    return out;
}

inline void add_guard_report(nlohmann::json& j, const GuardOutcome& g, const GuardSettings& settings,
                             const std::vector<CandidateOrigin>& candidates) {
    j["guard"] = guard_json(g, settings);
    // Each timed candidate with the models that proposed it and its price under the target's.
    if (j["guard"].contains("candidates"))
        for (nlohmann::json& c : j["guard"]["candidates"]) {
            const CandidateOrigin& o = candidates.at(c["candidate"].get<std::size_t>() - 1);
            c["proposed_by"] = o.proposed_by;
            c["cost_ms"] = o.cost_ms;
        }
    const auto measured = [](double ms) { return ms > 0 ? nlohmann::json(ms) : nlohmann::json(); };
    if (settings.mode == "cuda") {
        // Timed whole on the GPU by the CUDA executor: medians of CUDA Graph replays.
        j["gpu_before_ms"] = measured(g.before_ms);
        j["gpu_after_ms"] = measured(g.after_ms);
        return;
    }
    j["ort_level"] = settings.levels.empty() ? nlohmann::json() : nlohmann::json(settings.levels.front());
    j["ort_threads"] = settings.threads;
    j["ort_before_ms"] = measured(g.before_ms);
    j["ort_after_ms"] = measured(g.after_ms);
}

inline void print_summary(const nlohmann::json& j) {
    std::printf("%-22s %14s %14s\n", "", "before", "after");
    std::printf("%-22s %14s %14s  (%s)\n", "cost", format_ms(j["cost_before_ms"].get<double>()).c_str(),
                format_ms(j["cost_after_ms"].get<double>()).c_str(),
                format_ratio(j["cost_before_ms"].get<double>() / j["cost_after_ms"].get<double>()).c_str());
    const auto measured_line = [&](const std::string& label, const char* before, const char* after) {
        if (!j.contains(before) || !j[before].is_number() || !j[after].is_number()) return;
        std::printf("%-22s %14s %14s  (%s)\n", label.c_str(), format_ms(j[before].get<double>()).c_str(),
                    format_ms(j[after].get<double>()).c_str(), format_ratio(j[before].get<double>() / j[after].get<double>()).c_str());
    };
    if (j.contains("ort_level") && j["ort_level"].is_string())
        measured_line("ONNX Runtime " + j["ort_level"].get<std::string>(), "ort_before_ms", "ort_after_ms");
    measured_line("CUDA executor", "gpu_before_ms", "gpu_after_ms");
    std::printf("%-22s %14s %14s\n", "peak activations", human_bytes(j["memory_before_bytes"].get<double>()).c_str(),
                human_bytes(j["memory_after_bytes"].get<double>()).c_str());
    std::printf("%-22s %14s %14s\n", "weights", human_bytes(j["weight_bytes_before"].get<double>()).c_str(),
                human_bytes(j["weight_bytes_after"].get<double>()).c_str());
    constexpr double giga = 1e9;
    std::printf("%-22s %8.3f GFLOP %8.3f GFLOP\n", "FLOPs", j["flops_before"].get<double>() / giga,
                j["flops_after"].get<double>() / giga);
    std::printf("search: %s after %zu expansions, %.2f s\n", j["stop"].get<std::string>().c_str(),
                j["expansions"].get<std::size_t>(), j["seconds"].get<double>());
    if (j.contains("eqsat")) {
        const nlohmann::json& e = j["eqsat"];
        std::printf("e-graph: %zu e-classes, %zu e-nodes after %zu iterations; extraction: %s", e["eclasses"].get<std::size_t>(),
                    e["enodes"].get<std::size_t>(), e["iterations"].get<std::size_t>(), e["extraction"].get<std::string>().c_str());
        if (e.contains("ilp_status"))
            std::printf(" (ILP %s, gap %.3g, %.1f s)", e["ilp_status"].get<std::string>().c_str(), e["ilp_gap"].get<double>(),
                        e["ilp_seconds"].get<double>());
        std::printf("\n");
    }
    if (j["guard"]["decision"] != "off") std::printf("guard: %s\n", j["guard"]["reason"].get<std::string>().c_str());
    if (j["guard"].contains("candidates"))
        for (const nlohmann::json& c : j["guard"]["candidates"])
            std::printf("  candidate %zu at level %s: %.3f of the input's time (%zu/%zu rounds faster), proposed by %s\n",
                        c["candidate"].get<std::size_t>(), c["level"].get<std::string>().c_str(), c["median_ratio"].get<double>(),
                        c["wins"].get<std::size_t>(), c["rounds"].get<std::size_t>(),
                        join(c["proposed_by"].get<std::vector<std::string>>(), ", ").c_str());
    if (j["written"] == "input") {
        std::printf("wrote the input unchanged\n");
        return;
    }
    std::printf("rewrites (net: steps that undo each other are left out; every step, in order, in the report):\n");
    for (const auto& [rule, count] : j["rewrites"].items()) std::printf("  %-34s %6d\n", rule.c_str(), count.get<int>());
    if (j["verification"] == "regions")
        std::printf("verified region by region (%zu regions, random boundary values): max |diff| %.3g\n",
                    j["regions_verified"].get<std::size_t>(), j["max_abs_diff"].get<double>());
    else
        std::printf("verified on random inputs: max |diff| %.3g\n", j["max_abs_diff"].get<double>());
}

/// The cost cache file: --cost-cache, "none" for none, or by default a per-user file for
/// measuring backends (whose prices take time to measure).
inline std::optional<std::filesystem::path> cost_cache_path(const std::string& option, const std::string& backend_name) {
    if (option == "none") return std::nullopt;
    if (!option.empty()) return std::filesystem::path(option);
    // Priced without measuring (a roofline, a recorded table): nothing to keep.
    if (backend_name.starts_with("analytic") || backend_name.starts_with("table:")) return std::nullopt;
    return default_cost_cache(backend_name);
}

template <cost::CostBackend Backend>
void load_cost_cache(cost::CostModel<Backend>& model, const std::optional<std::filesystem::path>& cache) {
    // A cache file of another backend, version or a damaged one is ignored, never trusted.
    if (cache && !model.load_cache(*cache) && std::filesystem::exists(*cache))
        std::fprintf(stderr, "note: cost cache %s is not usable for %s; measuring again\n", cache->c_str(),
                     model.name().c_str());
}

template <cost::CostBackend Backend>
void save_cost_cache(const cost::CostModel<Backend>& model, const std::optional<std::filesystem::path>& cache,
                     bool chosen_by_user) {
    if (!cache) return;
    try {
        if (cache->has_parent_path()) std::filesystem::create_directories(cache->parent_path());
        model.save_cache(*cache);
    } catch (const std::exception& e) {
        if (chosen_by_user) throw;
        std::fprintf(stderr, "note: op costs not cached (%s)\n", e.what());
    }
}

/// The guard's settings for target `t` ("auto": ONNX Runtime for an ort-cpu target when it
/// is installed, the CUDA executor for a cuda target). In ONNX Runtime it times at the
/// target's own level and threads; --guard-levels adds levels where the candidate must not
/// lose.
inline GuardSettings guard_settings(const OptimizeOptions& o, const cost::Target& t) {
    GuardSettings g;
    g.mode = o.guard;
    if (g.mode == "ort") {
        if (const auto why = cost::ort_unavailable_reason()) throw precondition_error("--guard ort: " + *why + "; " + cost::ort_install_hint());
        if (t.kind != cost::TargetKind::ort_cpu)
            throw precondition_error("--guard ort times the model in ONNX Runtime on the CPU; the target is " + t.describe());
    }
    if (g.mode == "cuda" && t.kind != cost::TargetKind::cuda)
        throw precondition_error("--guard cuda times the model on the GPU; the target is " + t.describe() + " (use --target cuda)");
    if (g.mode == "auto")
        g.mode = t.kind == cost::TargetKind::cuda                                      ? "cuda"
                 : t.kind == cost::TargetKind::ort_cpu && !cost::ort_unavailable_reason() ? "ort"
                                                                                          : "none";
    g.gpu = t.gpu;
    if (g.mode == "cuda") {
        g.levels = {"cuda"};
        g.candidates = o.guard_candidates;
        g.decision.rounds = o.guard_rounds;
        g.decision.written_as = o.save;
        g.seed = o.seed;
        return g;
    }
    g.levels = {t.ort.level};
    for (const std::string& level : o.guard_levels)
        if (std::find(g.levels.begin(), g.levels.end(), level) == g.levels.end()) g.levels.push_back(level);
    g.threads = t.ort.threads;
    g.candidates = o.guard_candidates;
    g.decision.rounds = o.guard_rounds;
    g.decision.written_as = o.save;
    g.seed = o.seed;
    return g;
}

/// Times the candidates against the input and says which to write.
template <cost::CostBackend Backend>
GuardOutcome run_guard_for(cost::CostModel<Backend>& model, const Graph& input, const std::vector<Outcome>& candidates,
                           const GuardSettings& settings, const std::optional<std::filesystem::path>& input_file) {
    if (settings.mode == "none") {
        GuardOutcome off;
        off.reason = "off (--guard none, or no ONNX Runtime for this target)";
        return off;
    }
    std::vector<const Graph*> graphs;
    for (const Outcome& c : candidates) graphs.push_back(&c.graph);
    if (settings.mode == "cuda") {
        const LoadedCudaPlugin& plugin = cuda_plugin();
        if (!plugin.api) throw precondition_error("--guard cuda: " + plugin.reason);
        const std::unique_ptr<GpuGraphRunner> runner = plugin.api->make_graph_runner(settings.gpu);
        return guard_on_gpu(*runner, input, graphs, settings, input_file);
    }
    if constexpr (std::is_same_v<Backend, cost::OrtBackend>)
        return guard_in_ort(model.backend().worker(), input, graphs, settings, input_file);
    cost::OrtWorker worker;
    return guard_in_ort(worker, input, graphs, settings, input_file);
}

/// Writes the result; the input, when kept, as the very file it came from (byte for byte),
/// so that what the guard timed as the input is what the user gets back.
inline void write_model(const Outcome& written, const OptimizeOptions& o) {
    const auto file = model_file(o);
    if (!written.is_input || !file) return onnx_io::save_onnx(written.graph, o.output, o.save);
    std::ifstream in(*file, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    RLFLOW_EXPECTS(in.good() || in.eof(), io_error, file->string() + ": cannot read it again to write it unchanged");
    write_file_atomically(o.output, bytes);
}

/// What optimize made of a graph: the graph to write (the input itself when no candidate
/// is faster), the report, and how the written graph was checked against the input.
struct OptimizedModel {
    Outcome written;
    nlohmann::json report;
    Verification check;
};

/// What one price model proposed: its search's statistics and its cheapest graphs.
struct Proposal {
    std::string model;
    std::size_t candidates = 0;
    double best_cost_ms = 0;
    double initial_cost_ms = 0;
    double seconds = 0;
    search::StopReason reason = search::StopReason::converged;
};

/// The price models other than the target's own whose candidates the guard also times
/// (--propose): none without a guard to choose among them by measurement, or for an agent
/// search (an agent is trained on one model's prices).
inline std::vector<CostChoice> other_price_models(const OptimizeOptions& o, const GuardSettings& guard, const CostChoice& primary) {
    std::vector<CostChoice> out;
    bool none = false;
    for (const std::string& name : o.propose) {
        if (name == nchwc_groups_proposer) continue;  // not a price model (propose_nchwc_groups)
        if (name == "none") {
            none = true;
            continue;
        }
        if (name == "auto") {
            // The CPU's roofline and a GPU's: the GPU's finds merges (grouped and enlarged
            // convolutions) a CPU's per-op sum calls dearer but ORT at level all may run faster.
            for (const char* preset : {"cpu", "v100"}) out.push_back({CostKind::analytic, preset, {}});
            continue;
        }
        out.push_back(parse_cost_choice(name));
    }
    // Every name is checked above, whether or not it is used.
    if (none || guard.mode == "none" || o.search == "mf" || o.search == "mb") return {};
    std::erase_if(out, [&](const CostChoice& c) { return c == primary; });
    return out;
}

/// The candidates that write a model other than the input's, each once: a graph whose
/// written form (canonical, after export and import) another has, or the input has (a
/// fusion ONNX has no op for is written as the ops it fused), is dropped, its proposers
/// added to the first. Timing a copy of the input could only let the noise win.
inline std::vector<Outcome> distinct_candidates(const Graph& input, std::vector<Outcome> candidates, const OptimizeOptions& o) {
    std::vector<std::string> forms{canonical_form(written_back(input, o)).bytes};
    std::vector<Outcome> out;
    for (Outcome& c : candidates) {
        std::string form = canonical_form(written_back(c.graph, o)).bytes;
        const auto same = std::find(forms.begin(), forms.end(), form);
        if (same == forms.begin()) continue;
        if (same != forms.end()) {
            std::vector<std::string>& names = out[static_cast<std::size_t>(same - forms.begin()) - 1].proposed_by;
            for (const std::string& p : c.proposed_by)
                if (std::find(names.begin(), names.end(), p) == names.end()) names.push_back(p);
            continue;
        }
        forms.push_back(std::move(form));
        out.push_back(std::move(c));
    }
    return out;
}

/// At most `limit` candidates, taken in turn from each price model's own list (the first
/// model to propose each, in the order the models searched): every model's cheapest
/// first, then every model's second, and so on. Each candidate timed costs a written file
/// and an ONNX Runtime session of the whole model (a BERT-base one writes 325 MB), so the
/// guard's time is bounded by the limit, not by how many models propose.
inline std::vector<Outcome> take_in_turn(std::vector<Outcome> candidates, std::size_t limit) {
    std::vector<std::string> models;
    std::vector<std::vector<std::size_t>> lists;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const std::string& model = candidates[i].proposed_by.empty() ? std::string() : candidates[i].proposed_by.front();
        const auto at = std::find(models.begin(), models.end(), model);
        if (at == models.end()) {
            models.push_back(model);
            lists.push_back({i});
        } else {
            lists[static_cast<std::size_t>(at - models.begin())].push_back(i);
        }
    }
    std::vector<Outcome> out;
    for (std::size_t rank = 0; out.size() < limit; ++rank) {
        bool any = false;
        for (const std::vector<std::size_t>& list : lists) {
            if (rank >= list.size() || out.size() >= limit) continue;
            out.push_back(std::move(candidates[list[rank]]));
            any = true;
        }
        if (!any) break;
    }
    return out;
}

/// Whether the guard also times the input with its grouped convolutions widened to ONNX
/// Runtime's NCHWc block (nchwc_groups.hpp): for an ort-cpu target whose guard times in
/// ONNX Runtime, with --propose auto or nchwc-groups.
inline bool proposes_nchwc_groups(const OptimizeOptions& o, const GuardSettings& guard, const cost::Target& target) {
    const auto named = [&](const char* name) { return std::find(o.propose.begin(), o.propose.end(), name) != o.propose.end(); };
    return target.kind == cost::TargetKind::ort_cpu && guard.mode == "ort" && !named("none")
           && (named("auto") || named(nchwc_groups_proposer)) && o.search != "mf" && o.search != "mb";
}

/// Adds `original` with its grouped convolutions widened to the NCHWc block as a candidate,
/// when there is any to widen; priced by `model` for the report.
template <cost::CostBackend Backend>
void propose_nchwc_groups(const Graph& original, cost::CostModel<Backend>& model, std::vector<Outcome>& candidates,
                          std::vector<Proposal>& proposals) {
    const std::int64_t block = ort_nchwc_block();
    const auto start = std::chrono::steady_clock::now();
    auto [widened, applied] = widen_groups(original, block);
    if (applied.empty()) return;
    settle_as_written(widened);
    const std::string name = std::string(nchwc_groups_proposer) + ":" + std::to_string(block);
    std::vector<std::string> sequence;
    for (const auto& [rule, count] : applied) sequence.insert(sequence.end(), count, rule);
    const double cost = model.graph_cost(widened);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    proposals.push_back({name, 1, cost, model.graph_cost(original), seconds, search::StopReason::converged});
    candidates.push_back({std::move(widened), cost, applied, std::move(sequence), false, {name}});
}

/// Searches under each of `choices` and adds their cheapest graphs to `candidates`, priced
/// by `primary` (the target's model) for the report.
template <cost::CostBackend Primary>
std::vector<Proposal> propose_more(const OptimizeOptions& o, const Graph& original, const cost::Target& target,
                                   const std::shared_ptr<const rewrite::RuleSet>& rules, const std::vector<CostChoice>& choices,
                                   std::size_t keep, cost::CostModel<Primary>& primary, std::vector<Outcome>& candidates) {
    std::vector<Proposal> proposals;
    for (const CostChoice& choice : choices) {
        if (interrupted.load()) break;  // Ctrl-C: the candidates so far are guarded and written
        with_cost_backend(choice, target, {o.seed, o.save.fused_conv_microsoft}, [&](auto backend) {
            cost::CostModel<decltype(backend)> model(std::move(backend));
            const auto cache = cost_cache_path("", model.name());
            load_cost_cache(model, cache);
            std::optional<search::EqsatStats> ignored;
            search::SearchResult r = run_search(o, original, rules, model, keep, ignored, " (" + model.name() + ")");
            if (r.reason == search::StopReason::interrupted) interrupted.store(true);
            save_cost_cache(model, cache, false);
            std::vector<Outcome> more = candidate_outcomes(r, model.name());
            proposals.push_back({model.name(), more.size(), r.best_cost_ms, r.initial_cost_ms, r.seconds, r.reason});
            for (Outcome& c : more) {
                c.cost_ms = primary.graph_cost(c.graph);
                candidates.push_back(std::move(c));
            }
        });
    }
    return proposals;
}

inline nlohmann::json proposals_json(const std::vector<Proposal>& proposals) {
    nlohmann::json j = nlohmann::json::array();
    for (const Proposal& p : proposals)
        j.push_back({{"model", p.model},
                     {"candidates", p.candidates},
                     {"cost_before_ms", p.initial_cost_ms},
                     {"best_cost_ms", p.best_cost_ms},
                     {"seconds", p.seconds},
                     {"stop_reason", search::stop_reason_name(p.reason)}});
    return j;
}

/// What times the candidates, for the console's first line.
inline std::string guard_description(const GuardSettings& guard) {
    if (guard.mode == "ort") return "ONNX Runtime, level " + join(guard.levels, ", ");
    if (guard.mode == "cuda") return "the CUDA executor on GPU " + std::to_string(guard.gpu);
    return "off";
}

/// The ledger `ledger` names, if one applies: a file always; "auto" the shipped one when
/// the search runs as a user's default run for the target it was measured at: the default
/// rules (not a set given in code), the target's own prices (--cost auto, --device auto)
/// and ort-cpu at the ledger's level. A run priced by a chosen model (a GPU preset on the
/// research benchmark, say) keeps every rule.
inline std::optional<search::Ledger> ledger_for(const std::string& ledger, const std::string& rules, bool rules_given,
                                                const TargetFlags& where, const cost::Target& target) {
    if (ledger == "none") return std::nullopt;
    if (ledger != "auto") return search::load_ledger(ledger);
    const std::filesystem::path shipped = search::shipped_ledger_path();
    if (rules_given || (rules != "default" && !rules.empty()) || where.cost != "auto" || where.device != "auto"
        || !std::filesystem::exists(shipped))
        return std::nullopt;
    search::Ledger found = search::load_ledger(shipped);
    if (found.target != target.name() || (target.kind == cost::TargetKind::ort_cpu && found.level != target.ort.level))
        return std::nullopt;
    return found;
}

/// The rules to search with, without the families `ledger` says never pay; `report`
/// gets what was left out.
inline std::shared_ptr<const rewrite::RuleSet> rules_after_ledger(std::shared_ptr<const rewrite::RuleSet> rules,
                                                                  const std::optional<search::Ledger>& ledger, nlohmann::json& report) {
    if (!ledger) {
        report = nullptr;
        return rules;
    }
    search::PrunedRules pruned = search::drop_unpaying(*rules, *ledger);
    report = {{"file", ledger->origin}, {"target", ledger->target}, {"level", ledger->level},
              {"dropped_families", pruned.dropped_families}, {"dropped_rules", pruned.dropped_rules}};
    return std::make_shared<const rewrite::RuleSet>(std::move(pruned.rules));
}

/// `candidates` in the order of what `ledger` expects of them (search::expected_ratio), the
/// likeliest gain first; ties keep their order.
inline void order_by_ledger(std::vector<Outcome>& candidates, const rewrite::RuleSet& rules, const std::optional<search::Ledger>& ledger) {
    if (!ledger) return;
    std::vector<std::pair<double, std::size_t>> keys;
    for (std::size_t i = 0; i < candidates.size(); ++i) keys.emplace_back(search::expected_ratio(candidates[i].rewrites, rules, *ledger), i);
    std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Outcome> ordered;
    ordered.reserve(candidates.size());
    for (const auto& [ratio, i] : keys) ordered.push_back(std::move(candidates[i]));
    candidates = std::move(ordered);
}

/// Searches under the target's prices (and, with a guard, under other price models),
/// guards and verifies; writes nothing. `input_file` is the ONNX file `original` was read
/// from, if any: the guard times that very file as the input.
template <cost::CostBackend Backend>
OptimizedModel optimize_graph(const OptimizeOptions& o, const Graph& original, const std::optional<std::filesystem::path>& input_file,
                              Backend backend, const cost::Target& target, const CostChoice& pricing) {
    const GuardSettings guard = guard_settings(o, target);
    const std::optional<search::Ledger> ledger = ledger_for(o.ledger, o.rules, o.rule_set != nullptr, o.where, target);
    nlohmann::json ledger_report;
    const auto rules = rules_after_ledger(o.rule_set ? o.rule_set : load_rule_set(o.rules), ledger, ledger_report);
    cost::CostModel<Backend> model(std::move(backend));
    const std::vector<CostChoice> others = other_price_models(o, guard, pricing);
    const auto cache = cost_cache_path(o.cost_cache, model.name());
    load_cost_cache(model, cache);
    if (o.progress) {
        std::string models = model.name();
        for (const CostChoice& c : others) models += ", " + c.name();
        std::printf("target: %s on %s; prices: %s; guard: %s\n", target.describe().c_str(), target_device(target).c_str(), models.c_str(),
                    guard_description(guard).c_str());
        std::fflush(stdout);
    }
    std::optional<search::EqsatStats> eqsat;
    const std::size_t keep = guard.mode != "none" ? guard.candidates : 1;
    search::SearchResult result = run_search(o, original, rules, model, keep, eqsat, others.empty() ? "" : " (" + model.name() + ")");
    if (result.reason == search::StopReason::interrupted) interrupted.store(true);  // run_search spent the flag; keep it for the rest
    save_cost_cache(model, cache, !o.cost_cache.empty());
    std::vector<Outcome> candidates = candidate_outcomes(result, model.name());
    std::vector<Proposal> proposals{{model.name(), candidates.size(), result.best_cost_ms, result.initial_cost_ms, result.seconds, result.reason}};
    if (proposes_nchwc_groups(o, guard, target)) propose_nchwc_groups(original, model, candidates, proposals);
    const std::vector<Proposal> more = propose_more(o, original, target, rules, others, keep, model, candidates);
    proposals.insert(proposals.end(), more.begin(), more.end());
    order_by_ledger(candidates, *rules, ledger);
    if (guard.mode != "none") candidates = take_in_turn(distinct_candidates(original, std::move(candidates), o), guard.candidates);
    const GuardOutcome guarded = run_guard_for(model, original, candidates, guard, input_file);
    const std::vector<CandidateOrigin> timed = origins(candidates);
    Outcome written = candidates.empty() || guarded.decision == "input"
                          ? Outcome{original, result.initial_cost_ms, {}, {}, true, {}}
                          : std::move(candidates[guarded.decision == "candidate" ? guarded.chosen : 0]);
    Verification check = written.is_input ? Verification{"none (the input is written)", true, 0, 0, ""}
                                          : verify(original, written.graph, o);
    nlohmann::json report = optimize_report(o, target, model.name(), original, result, written, check, eqsat);
    add_guard_report(report, guarded, guard, timed);
    report["proposers"] = proposals_json(proposals);
    report["ledger"] = std::move(ledger_report);
    // The NCHWc block ONNX Runtime uses here, which decides which grouped convolutions
    // nchwc-groups widens (0: ORT lays nothing out in blocks on this CPU).
    if (target.kind == cost::TargetKind::ort_cpu) report["nchwc_block"] = ort_nchwc_block();
    if constexpr (std::is_same_v<Backend, cost::TableBackend>) {
        // How much of the price was measured: signatures found in the table, and those its
        // fitted roofline estimated.
        report["table"] = {{"target", model.backend().table().origin.target},
                           {"device", model.backend().table().origin.device},
                           {"measured_signatures", model.backend().measured()},
                           {"estimated_signatures", model.backend().estimated()}};
    }
    report["proposed_by"] = written.proposed_by;
    return {std::move(written), std::move(report), std::move(check)};
}

/// Optimises `original` for the target the options name, priced as they say.
inline OptimizedModel optimize_model(const OptimizeOptions& o, const Graph& original,
                                     const std::optional<std::filesystem::path>& input_file) {
    if (o.portable) {
        RLFLOW_EXPECTS(!o.save.fused_conv_microsoft, precondition_error,
                       "portable output writes standard ONNX ops only; it cannot write fused convolutions as com.microsoft.FusedConv");
        check_portable_input(original, o.model);
    }
    const cost::Target target = resolve_target(o.where);
    const CostChoice pricing = resolve_cost(o.where, target);
    OptimizeOptions resolved = o;
    resolved.priced_for = priced_target(pricing, target);
    return with_cost_backend(pricing, target, {o.seed, o.save.fused_conv_microsoft}, [&](auto backend) {
        return optimize_graph(resolved, original, input_file, std::move(backend), target, pricing);
    });
}

/// The most memory this process has held (its peak resident set), in bytes.
inline std::size_t peak_rss_bytes() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    constexpr std::size_t kilobyte = 1024;
    return static_cast<std::size_t>(usage.ru_maxrss) * kilobyte;
}

/// `rlflow optimize`: loads, optimises, and writes the model and report. A failed
/// verification writes nothing and exits 1.
inline void optimize_command(OptimizeOptions o) {
    // Every path written is checked before minutes of search.
    check_output_path(o.output, "--output");
    check_output_path(o.report, "--report");
    if (o.cost_cache != "none") check_output_path(o.cost_cache, "--cost-cache");
    o.load.seed = o.seed;
    const Graph original = load_model(o.model, o.load);
    const OptimizedModel optimized = optimize_model(o, original, model_file(o));
    if (!optimized.check.equal) {
        std::fprintf(stderr, "error: the optimised graph differs from the original (%s); nothing written\n",
                     optimized.check.detail.c_str());
        throw CLI::RuntimeError(1);
    }
    write_model(optimized.written, o);
    nlohmann::json report = optimized.report;
    report["peak_rss_bytes"] = peak_rss_bytes();
    if (!o.report.empty()) write_file_atomically(o.report, report.dump(2) + "\n");
    print_summary(optimized.report);
    std::printf("wrote %s\n", o.output.c_str());
}

inline void add_optimize_command(CLI::App& app) {
    auto o = std::make_shared<OptimizeOptions>();
    CLI::App* cmd = app.add_subcommand("optimize", "Rewrite a model into a cheaper equivalent one and write it as ONNX");
    cmd->add_option("model", o->model, "an .onnx file or zoo:NAME")->required();
    cmd->add_option("-o,--output", o->output, "the .onnx file to write")->required();
    add_model_flags(*cmd, o->load);
    cmd->add_option("--search", o->search,
                    "greedy, taso (cost-ordered backtracking), eqsat (equality saturation, then extraction), mf or mb "
                    "(roll out the model-free or model-based agent --agent names; --budget counts its steps)")
        ->check(CLI::IsMember(search_names))->capture_default_str();
    cmd->add_option("--node-limit", o->eqsat.node_limit,
                    "--search eqsat: stop exploring at this many e-nodes (0: 50,000, or 10 per node on larger graphs)")
        ->check(CLI::Range(std::size_t{0}, std::size_t{100'000'000}))->capture_default_str();
    cmd->add_option("--iter-limit", o->eqsat.iteration_limit, "--search eqsat: stop exploring after this many iterations")
        ->check(CLI::Range(std::size_t{0}, std::size_t{1'000'000}))->capture_default_str();
    cmd->add_option("--multi-rounds", o->eqsat.multi_rounds,
                    "--search eqsat: iterations in which rules with several outputs run (Tensat's k_multi)")
        ->check(CLI::Range(std::size_t{0}, std::size_t{1'000'000}))->capture_default_str();
    cmd->add_option_function<std::string>(
           "--multi-schedule",
           [o](const std::string& v) {
               o->eqsat.multi_schedule = v == "first" ? search::EqsatOptions::MultiSchedule::first
                                                      : search::EqsatOptions::MultiSchedule::saturated;
           },
           "--search eqsat: when the --multi-rounds run: first (the first iterations, as Tensat; default) or "
           "saturated (each after an iteration in which the single-output rules changed nothing)")
        ->check(CLI::IsMember({"first", "saturated"}));
    cmd->add_option("--extract", o->extract, "--search eqsat: greedy (cheapest e-node per class, then the local search) or ilp (also CBC's "
                    "integer program from the local search's choice; the cheapest is written)")
        ->check(CLI::IsMember({"greedy", "ilp"}))->capture_default_str();
    cmd->add_option("--local-search-seconds", o->eqsat.local.seconds,
                    "--search eqsat: a safety limit in seconds on the local search that improves greedy's choice with "
                    "shared subgraphs counted once (its main limit counts cost evaluations, so it is deterministic; 0: off)")
        ->check(CLI::Range(0.0, 1e6))->capture_default_str();
    cmd->add_option("--ilp-time-limit", o->eqsat.ilp_time_limit_seconds, "--search eqsat --extract ilp: the solver's seconds")
        ->check(CLI::PositiveNumber)->capture_default_str();
    cmd->add_option("--ilp-cycles", o->ilp_cycles,
                    "--search eqsat --extract ilp: filter (leave out e-nodes that close cycles and that the start does not "
                    "choose, after Tensat; no order rows) or order (exact: order rows on the cycles)")
        ->check(CLI::IsMember({"filter", "order"}))->capture_default_str();
    cmd->add_option("--agent", o->agent, "--search mf|mb: the agent's directory, as `rlflow train` wrote it");
    cmd->add_option("--samples", o->samples, "--search mf|mb: sampled rollouts after the greedy one")
        ->check(CLI::Range(std::size_t{0}, std::size_t{100'000}))->capture_default_str();
    cmd->add_option("--agent-stop", o->agent_stop,
                    "--search mf|mb: limit (roll on past the agent's NO-OP to the step limit, keeping the cheapest graph "
                    "met) or noop (a rollout ends at the agent's NO-OP, as in training)")
        ->check(CLI::IsMember({"limit", "noop"}))->capture_default_str();
    add_target_flags(*cmd, o->where);
    cmd->add_option("--propose", o->propose,
                    "price models whose cheapest graphs the guard times besides the target's, the fastest measured being "
                    "written: auto (analytic:cpu and analytic:v100, and nchwc-groups, for an ort-cpu target), none, or a list "
                    "of cpu, ort, cudnn, analytic:PRESET and nchwc-groups (grouped convolutions widened to ONNX Runtime's "
                    "NCHWc block)")
        ->delimiter(',')->capture_default_str();
    cmd->add_option("--guard", o->guard,
                    "time the input and the best candidates whole and write a candidate only if it is faster: auto (ONNX "
                    "Runtime for an ort-cpu target when it is installed, the CUDA executor for a cuda target), ort, cuda or none")
        ->check(CLI::IsMember(guard_names))->capture_default_str();
    cmd->add_option("--guard-levels", o->guard_levels,
                    "further ONNX Runtime levels the guard times at, where the written model must not be slower (the "
                    "target's own level, where it must be faster, is always timed first)")
        ->check(CLI::IsMember(ort_level_names));
    cmd->add_option("--guard-candidates", o->guard_candidates,
                    "how many candidates the guard times at most: distinct graphs taken in turn from each price model's "
                    "cheapest (each model searches for this many)")
        ->check(CLI::Range(1, 16))->capture_default_str();
    cmd->add_option("--guard-rounds", o->guard_rounds, "interleaved timed runs of each model")
        ->check(CLI::Range(5, 1000))->capture_default_str();
    constexpr std::size_t largest_budget = 1'000'000'000;
    cmd->add_option("--budget", o->budget,
                    "most expansions (taso) or rewrites (greedy); 0: 1000, or one per 8 nodes on larger graphs")
        ->check(CLI::Range(std::size_t{0}, largest_budget))->capture_default_str();
    cmd->add_option("--memory-limit", o->memory_limit_mb,
                    "megabytes the search may hold beyond its working graph (the report's peak_search_bytes); "
                    "past it the search stops with the best graph so far (0: no limit)")
        ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 30))->capture_default_str();
    cmd->add_option("--alpha", o->alpha, "taso keeps graphs costing below alpha x the best")
        ->check(CLI::PositiveNumber)->capture_default_str();
    cmd->add_option("--time-limit", o->time_limit, "seconds; stop with the best graph so far (0: none)")
        ->check(CLI::Range(0.0, 1e9))->capture_default_str();
    cmd->add_option("--rules", o->rules,
                    "default (built-in + generated library), builtin, or a rules file (text or binary)")
        ->capture_default_str();
    cmd->add_option("--ledger", o->ledger,
                    "the rule ledger: auto (the one shipped for ort-cpu at level all, applied to the default rules there under "
                    "the target's own prices), "
                    "none, or a ledger file from `rules measure`; families that never paid in it are left out and "
                    "candidates are timed in the order it expects")
        ->capture_default_str();
    cmd->add_option("--report", o->report, "write a JSON report here");
    cmd->add_option("--cost-cache", o->cost_cache,
                    "read op costs from, and save them to, this file ('none': no cache; default for measuring backends: "
                    "~/.cache/rlflow)");
    cmd->add_option("--verify-trials", o->verify_trials, "random input sets the result is checked on")
        ->check(CLI::PositiveNumber)->capture_default_str();
    cmd->add_option("--seed", o->seed, "seed of the verification inputs and of a zoo model's weights")
        ->capture_default_str();
    CLI::Option* fused = cmd->add_flag("--fused-conv-ms", o->save.fused_conv_microsoft,
                                       "write fused convolutions as com.microsoft.FusedConv (ONNX Runtime) instead of "
                                       "Conv + activation; the report's needs_onnxruntime says so");
    cmd->add_flag("--portable", o->portable,
                  "write standard ONNX ops only, for any runtime: no ONNX Runtime contrib op (refuses --fused-conv-ms, "
                  "and an input that already holds one)")
        ->excludes(fused);
    cmd->callback([o] { optimize_command(*o); });
}

}  // namespace rlflow::cli
