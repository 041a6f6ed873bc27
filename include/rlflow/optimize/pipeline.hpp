#pragma once
/// \file
/// `rlflow::optimize`: searches for a cheaper equivalent graph under the target's prices
/// and under other price models, times the cheapest few of each in the target runtime
/// against the input (the guard), checks the fastest measured one against the original on
/// random inputs, and returns it with a typed report. A model never runs slower than its
/// input: when no candidate is faster beyond the noise, the input itself is the result.
/// `write_result` writes it (atomically; a kept input as the very bytes it was read from).

#include <rlflow/core/atomic_file.hpp>
#include <rlflow/core/canonical.hpp>
#include <rlflow/core/memory.hpp>
#include <rlflow/core/statistics.hpp>
#include <rlflow/cost/cost_model.hpp>
#include <rlflow/cost/ort_backend.hpp>
#include <rlflow/exec/fold_weights.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/onnx/export.hpp>
#include <rlflow/onnx/import.hpp>
#include <rlflow/optimize/guard.hpp>
#include <rlflow/optimize/nchwc_groups.hpp>
#include <rlflow/optimize/report.hpp>
#include <rlflow/optimize/request.hpp>
#include <rlflow/optimize/target.hpp>
#include <rlflow/rewrite/builtin_rules.hpp>
#include <rlflow/rewrite/default_rules.hpp>
#include <rlflow/rewrite/region_check.hpp>
#include <rlflow/rewrite/rule_file.hpp>
#include <rlflow/rewrite/soundness.hpp>
#include <rlflow/rl.hpp>
#include <rlflow/search.hpp>
#include <rlflow/search/ledger.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <sys/resource.h>

namespace rlflow {

namespace opt {

/// ONNX Runtime's contrib-op domain.
inline constexpr std::string_view onnxruntime_domain = "com.microsoft";

/// The ops of `g`, written with `save`, outside ONNX's standard domain, as "domain.op",
/// each once, sorted: what the input held and rlflow passed through unchanged, and
/// com.microsoft.FusedConv where a fused convolution is written as one.
[[nodiscard]] inline std::vector<std::string> nonstandard_ops(const Graph& g, const onnx_io::ExportOptions& save) {
    std::set<std::string> ops;
    for (const Node& n : g.nodes()) {
        if (!n.domain.empty() && n.domain != "ai.onnx") ops.insert(n.domain + "." + n.op_type);
        const bool fused = n.op == OpKind::Conv2D && n.attributes.get_int("activation", 0) != 0;
        if (fused && save.fused_conv_microsoft) ops.insert(std::string(onnxruntime_domain) + ".FusedConv");
    }
    return {ops.begin(), ops.end()};
}

/// Whether any of `ops` (nonstandard_ops) is an ONNX Runtime contrib op.
[[nodiscard]] inline bool needs_onnxruntime(const std::vector<std::string>& ops) {
    return std::any_of(ops.begin(), ops.end(), [](const std::string& op) { return op.starts_with(std::string(onnxruntime_domain) + "."); });
}

/// A portable request refuses an input that holds an ONNX Runtime contrib op, naming the
/// first, and refuses to write fused convolutions as one.
inline void check_portable(const Graph& g, const OptimizeRequest& r) {
    RLFLOW_EXPECTS(!r.save.fused_conv_microsoft, precondition_error,
                   "portable output writes standard ONNX ops only; it cannot write fused convolutions as com.microsoft.FusedConv");
    for (const Node& n : g.nodes())
        if (n.domain == onnxruntime_domain)
            throw onnx_error(r.input.name + ": node '" + n.name + "' is " + n.domain + "." + n.op_type
                             + ", an ONNX Runtime contrib op, which rlflow passes through unchanged; --portable "
                               "writes standard ONNX ops only");
}

/// The network backend agents run with.
using AgentBackend = nn::backend::Eigen;

/// The rules a request names: its own, or the default ones (built-in + generated library).
[[nodiscard]] inline std::shared_ptr<const rewrite::RuleSet> request_rules(const OptimizeRequest& r) {
    return r.rules ? r.rules : std::make_shared<const rewrite::RuleSet>(rewrite::default_rules());
}

/// The stop flag the searches read (the caller's cancel flag, when there is one), and
/// whether a search was interrupted, which cuts the rest of the run short.
class StopFlag {
public:
    explicit StopFlag(const std::atomic<bool>* cancel) : m_cancel(cancel) {}
    /// Whether to stop.
    [[nodiscard]] bool stopped() const { return m_spent.load() || (m_cancel != nullptr && m_cancel->load()); }
    /// Records that a search was interrupted.
    void spend() { m_spent.store(true); }
    /// The flag a search reads.
    [[nodiscard]] const std::atomic<bool>* flag() const { return m_cancel != nullptr ? m_cancel : &m_spent; }

private:
    const std::atomic<bool>* m_cancel;
    std::atomic<bool> m_spent{false};
};

/// The agent state's target and the directory, after a note when it learned from other
/// costs and a warning when it was trained for another target.
inline void note_agent(const OptimizeRequest& r, const std::filesystem::path& dir, const std::string& learned_from,
                       const std::string& pricing, const std::string& trained_for, const std::string& priced_for) {
    if (learned_from != pricing)
        tell(r.hooks.message, MessageKind::note,
             "note: the agent in " + dir.string() + " learned from " + learned_from + " costs; this search prices with " + pricing);
    if (!trained_for.empty() && trained_for != priced_for)
        tell(r.hooks.message, MessageKind::warning,
             "warning: the agent in " + dir.string() + " was trained for " + trained_for + "; this run optimises for " + priced_for);
}

/// Where the rollouts of `a`, whose agent state is `state`, end (AgentStop::automatic:
/// at the NO-OP of an agent that learned from measured latency, else at the step limit).
[[nodiscard]] inline AgentStop agent_stop(const AgentSpec& a, const rl::AgentHeader& state) {
    if (a.stop != AgentStop::automatic) return a.stop;
    return rl::learned_from_latency(state) ? AgentStop::noop : AgentStop::limit;
}

/// Rolls out the agent `a` names with `library` holding its rules.
template <cost::CostBackend Backend>
search::SearchResult agent_search(const OptimizeRequest& r, const AgentSpec& a, const std::string& priced_for, const Graph& g,
                                  const rewrite::RuleSet& library, cost::CostModel<Backend>& model, const search::SearchOptions& options) {
    const std::string name(search_kind_names.name(search_kind(r.search)));
    RLFLOW_EXPECTS(!a.dir.empty(), precondition_error,
                   "--search " + name + " needs --agent DIR (a directory `rlflow train --agent " + name + "` wrote)");
    const auto rollouts = [&](const rl::AgentHeader& state) {
        rl::AgentSearchOptions out;
        out.samples = a.samples;
        out.until_limit = agent_stop(a, state) == AgentStop::limit;
        out.endpoints = !out.until_limit && rl::learned_from_latency(state);
        out.plan = a.plan;
        out.seed = r.seed;
        out.env = state.env;
        out.search = options;
        return out;
    };
    const auto roll_out = [&](const rl::AgentHeader& state, auto& policy) {
        note_agent(r, a.dir, state.cost_backend, model.name(), state.target, priced_for);
        const auto rules = std::make_shared<const rewrite::RuleSet>(rl::agent_rules(state, library, a.dir));
        return rl::agent_search(g, rules, model, policy, rollouts(state));
    };
    if (a.kind == AgentKind::model_based) {
        rl::MbAgent<AgentBackend> agent(a.dir);
        return roll_out(agent.state, agent.policy);
    }
    rl::MfAgent<AgentBackend> agent(a.dir);
    return roll_out(agent.state, agent.policy);
}

/// The search options of a request for graph `g`.
[[nodiscard]] inline search::SearchOptions search_options(const OptimizeRequest& r, const Graph& g, const StopFlag& stop,
                                                          std::size_t keep_best) {
    search::SearchOptions options;
    options.budget = r.limits.budget > 0 ? r.limits.budget : search::default_budget(g.num_nodes());
    if (const auto* b = std::get_if<BacktrackingSpec>(&r.search)) options.alpha = b->alpha;
    constexpr std::size_t megabyte = 1 << 20;
    options.memory_limit_bytes = r.limits.memory_limit_mb * megabyte;
    options.time_limit_seconds = r.limits.time_limit_seconds;
    options.stop = stop.flag();
    options.keep_best = keep_best;
    return options;
}

/// Runs the request's search with `model` pricing it; eqsat's statistics go to `eqsat`.
/// `label` names the price model in the progress phase when several search.
template <cost::CostBackend Backend>
search::SearchResult run_search(const OptimizeRequest& r, const std::string& priced_for, const Graph& g,
                                std::shared_ptr<const rewrite::RuleSet> rules, cost::CostModel<Backend>& model, std::size_t keep_best,
                                StopFlag& stop, std::optional<EqsatUse>& eqsat, const std::string& label = "") {
    search::SearchOptions options = search_options(r, g, stop, keep_best);
    const auto* saturating = std::get_if<EqsatSpec>(&r.search);
    const std::string phase = (saturating ? "saturation" : "search") + label;
    const std::size_t total = saturating ? saturating->options.iteration_limit : options.budget;
    if (r.hooks.progress)
        options.on_progress = [&](const search::SearchProgress& p) {
            r.hooks.progress({phase, p.expansions, total,
                              saturating ? "iteration " + std::to_string(p.expansions)
                                         : "best " + format_ms(p.best_cost_ms) + " (" + format_ratio(p.initial_cost_ms / p.best_cost_ms) + ")",
                              false});
        };
    search::SearchResult result;
    if (const auto* a = std::get_if<AgentSpec>(&r.search)) {
        result = agent_search(r, *a, priced_for, g, *rules, model, options);
    } else if (saturating) {
        RLFLOW_EXPECTS(saturating->options.extraction != search::EqsatOptions::Extraction::ilp || search::ilp_available, precondition_error,
                       "--extract ilp needs rlflow built with CBC: install coinor-libcbc-dev (bash tools/setup.sh does) and rebuild, "
                       "or use --extract greedy");
        search::EqsatResult e = search::eqsat(g, std::move(rules), model, options, saturating->options);
        eqsat = EqsatUse{std::move(e.stats), saturating->options};
        result = std::move(e.search);
    } else if (std::holds_alternative<GreedySpec>(r.search)) {
        result = search::greedy(g, std::move(rules), model, options);
    } else {
        result = search::backtracking(g, std::move(rules), model, options);
    }
    report_progress(r.hooks.progress, {phase, total, total, "", true});
    if (result.reason == search::StopReason::interrupted) stop.spend();
    return result;
}

/// Runs the whole graph on random inputs when rlflow can execute every op in it;
/// otherwise compares each rewritten region with the one it replaced, on random values at
/// the region's boundary (rewrites never touch ops rlflow cannot execute).
[[nodiscard]] inline Verification verify(const Graph& original, const Graph& result, const VerifySpec& spec, std::uint64_t seed) {
    rewrite::EquivalenceOptions options;
    options.trials = spec.trials;
    options.seed = seed;
    if (graph_statistics(original).opaque_nodes == 0) {
        const auto check = rewrite::check_equivalence(original, result, options);
        return {Verification::Method::whole_graph, check.equal, check.max_abs_diff, 0, check.detail};
    }
    const auto check = rewrite::check_regions(original, result, options);
    return {Verification::Method::regions, check.equal, check.max_abs_diff, check.regions.size(), check.detail};
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

/// The search's best graph and runners-up as they would be written, each settled. Only
/// graphs the cost model prices below the input: one that costs the same (rewrites that
/// cancel, or forms ORT runs alike) is no gain, and timing it against the input would only
/// give the noise a chance to win. Graphs an agent chose by what it learned from measured
/// latency (SearchResult::chosen_by_policy) are kept whatever they cost: that is what the
/// cost model does not see. Graphs no rewrite made are never candidates.
[[nodiscard]] inline std::vector<Outcome> candidate_outcomes(search::SearchResult& r, const std::string& proposer) {
    constexpr double rounding = 1e-9;  // relative: sums of the same prices in another order
    const double below = r.initial_cost_ms * (1 - rounding);
    const auto wanted = [&](double cost_ms, const std::map<std::string, std::size_t>& rewrites) {
        return !rewrites.empty() && (r.chosen_by_policy || cost_ms < below);
    };
    std::vector<Outcome> out;
    if (wanted(r.best_cost_ms, r.rewrites)) out.push_back({std::move(r.graph), r.best_cost_ms, r.rewrites, r.sequence, false, {proposer}});
    for (auto& runner : r.runners_up)
        if (wanted(runner.cost_ms, runner.rewrites))
            out.push_back({std::move(runner.graph), runner.cost_ms, runner.rewrites, runner.sequence, false, {proposer}});
    for (Outcome& c : out) settle_as_written(c.graph);
    return out;
}

/// Rewrite counts with the steps that undo each other cancelled: a fusion and the split
/// that reverses it (rewrite::reversible_builtin_rules) count as nothing, so the list says
/// what changed from the input to the written graph.
[[nodiscard]] inline std::map<std::string, std::size_t> net_rewrites(std::map<std::string, std::size_t> counts) {
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

/// `g` as it is once written as ONNX with `save` and read back as the input was read.
[[nodiscard]] inline Graph written_back(const Graph& g, const onnx_io::ExportOptions& save, const onnx_io::ImportOptions& read_as) {
    onnx_io::ExportOptions options = save;
    options.check = false;  // the file written is checked; this copy is only looked at
    return onnx_io::import_model(onnx_io::export_model(g, options), read_as);
}

/// Why a search of `kind` stopped, in words.
[[nodiscard]] inline std::string stop_reason_text(const search::SearchResult& found, SearchKind kind,
                                                  const std::optional<search::EqsatStats>& eqsat = std::nullopt) {
    const search::StopReason reason = found.reason;
    if (eqsat) {
        switch (eqsat->stop) {
            case search::SaturationStop::saturated: return "saturated (no rewrite changes the e-graph)";
            case search::SaturationStop::node_limit: return "stopped at the --node-limit";
            case search::SaturationStop::iteration_limit: return "stopped at the --iter-limit";
            case search::SaturationStop::time_limit:
            case search::SaturationStop::interrupted: break;
        }
    }
    const bool agent = kind == SearchKind::model_free || kind == SearchKind::model_based;
    switch (reason) {
        case search::StopReason::converged: return agent ? "done (every rollout of the agent ended)" : "converged (no rewrite left to try)";
        case search::StopReason::budget:
            // The budget is named as the limit only where more of it could help: greedy was
            // still lowering the cost at every step; taso, when its best came late.
            if (kind == SearchKind::greedy)
                return "stopped at the --budget while every rewrite still lowered the cost: a larger --budget may find more";
            if (kind == SearchKind::backtracking && found.best_found_at == 0)
                return "spent its --budget of " + std::to_string(found.expansions)
                       + " expansions without finding a graph cheaper than the input, so a larger one is unlikely to help";
            if (kind == SearchKind::backtracking && found.best_found_at * 2 <= found.expansions)
                return "spent its --budget of " + std::to_string(found.expansions) + " expansions; nothing cheaper was found after expansion "
                       + std::to_string(found.best_found_at) + ", so a larger one is unlikely to help";
            if (kind == SearchKind::backtracking)
                return "stopped at the --budget while still finding cheaper graphs (the last after expansion " + std::to_string(found.best_found_at)
                       + " of " + std::to_string(found.expansions) + "): a larger --budget may find more";
            return "stopped at the --budget";
        case search::StopReason::time_limit: return "stopped at the --time-limit";
        case search::StopReason::interrupted: return "interrupted (Ctrl-C); kept the best graph so far";
        case search::StopReason::memory_limit: return "stopped at the --memory-limit";
    }
    return "stopped";
}

/// The cost cache file a request names for a backend, if any: measuring backends only
/// (a roofline or a recorded table prices without measuring: nothing to keep).
[[nodiscard]] inline std::optional<std::filesystem::path> cost_cache_path(const CostCacheSpec& spec, const std::string& backend_name) {
    if (spec.mode == CostCacheMode::none) return std::nullopt;
    if (spec.mode == CostCacheMode::file) return spec.file;
    if (backend_name.starts_with("analytic") || backend_name.starts_with("table:")) return std::nullopt;
    return default_cost_cache(backend_name);
}

/// Loads the cache; one of another backend, version, or a damaged one is ignored, never trusted.
template <cost::CostBackend Backend>
void load_cost_cache(cost::CostModel<Backend>& model, const std::optional<std::filesystem::path>& cache, const MessageHook& message) {
    if (cache && !model.load_cache(*cache) && std::filesystem::exists(*cache))
        tell(message, MessageKind::note, "note: cost cache " + cache->string() + " is not usable for " + model.name() + "; measuring again");
}

/// Saves the cache; a failure is an error for a cache the user chose, a note otherwise.
template <cost::CostBackend Backend>
void save_cost_cache(const cost::CostModel<Backend>& model, const std::optional<std::filesystem::path>& cache, bool chosen_by_user,
                     const MessageHook& message) {
    if (!cache) return;
    try {
        if (cache->has_parent_path()) std::filesystem::create_directories(cache->parent_path());
        model.save_cache(*cache);
    } catch (const std::exception& e) {
        if (chosen_by_user) throw;
        tell(message, MessageKind::note, std::string("note: op costs not cached (") + e.what() + ")");
    }
}

/// The guard's settings for target `t` (automatic: ONNX Runtime for an ort-cpu target
/// when it is installed, the CUDA executor for a cuda target). In ONNX Runtime it times at
/// the target's own level and threads, then the request's further levels.
[[nodiscard]] inline GuardSettings guard_settings(const OptimizeRequest& r, const cost::Target& t) {
    GuardSettings g;
    g.mode = r.guard.mode;
    if (g.mode == GuardMode::ort) {
        if (const auto why = cost::ort_unavailable_reason()) throw precondition_error("--guard ort: " + *why + "; " + cost::ort_install_hint());
        if (t.kind != cost::TargetKind::ort_cpu)
            throw precondition_error("--guard ort times the model in ONNX Runtime on the CPU; the target is " + t.describe());
    }
    if (g.mode == GuardMode::cuda && t.kind != cost::TargetKind::cuda)
        throw precondition_error("--guard cuda times the model on the GPU; the target is " + t.describe() + " (use --target cuda)");
    if (g.mode == GuardMode::automatic)
        g.mode = t.kind == cost::TargetKind::cuda                                         ? GuardMode::cuda
                 : t.kind == cost::TargetKind::ort_cpu && !cost::ort_unavailable_reason() ? GuardMode::ort
                                                                                          : GuardMode::none;
    g.gpu = t.gpu;
    g.candidates = r.guard.candidates;
    g.decision.rounds = r.guard.rounds;
    g.decision.written_as = r.save;
    g.seed = r.seed;
    g.progress = r.hooks.progress;
    if (g.mode == GuardMode::cuda) {
        g.levels = {"cuda"};
        return g;
    }
    g.levels = {t.ort.level};
    for (const std::string& level : r.guard.levels)
        if (std::find(g.levels.begin(), g.levels.end(), level) == g.levels.end()) g.levels.push_back(level);
    g.threads = t.ort.threads;
    return g;
}

/// Times the candidates against the input and says which to write.
template <cost::CostBackend Backend>
GuardOutcome run_guard_for(cost::CostModel<Backend>& model, const Graph& input, const std::vector<Outcome>& candidates,
                           const GuardSettings& settings, const std::optional<std::filesystem::path>& input_file) {
    if (settings.mode == GuardMode::none) {
        GuardOutcome off;
        off.reason = "off (--guard none, or no ONNX Runtime for this target)";
        return off;
    }
    std::vector<const Graph*> graphs;
    for (const Outcome& c : candidates) graphs.push_back(&c.graph);
    if (settings.mode == GuardMode::cuda) {
        const cost::LoadedCudaPlugin& plugin = cost::cuda_plugin();
        if (!plugin.api) throw precondition_error("--guard cuda: " + plugin.reason);
        const std::unique_ptr<cost::GpuGraphRunner> runner = plugin.api->make_graph_runner(settings.gpu);
        return guard_on_gpu(*runner, input, graphs, settings, input_file);
    }
    if constexpr (std::is_same_v<Backend, cost::OrtBackend>) return guard_in_ort(model.backend().worker(), input, graphs, settings, input_file);
    cost::OrtWorker worker;
    return guard_in_ort(worker, input, graphs, settings, input_file);
}

/// The price models other than the target's own whose candidates the guard also times:
/// none without a guard to choose among them by measurement, or for an agent search (an
/// agent is trained on one model's prices).
[[nodiscard]] inline std::vector<CostChoice> other_price_models(const OptimizeRequest& r, const GuardSettings& guard, const CostChoice& primary) {
    if (guard.mode == GuardMode::none || is_agent(r.search)) return {};
    std::vector<CostChoice> out;
    for (const CostChoice& c : r.propose.price_models)
        if (c != primary && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    return out;
}

/// The candidates that write a model other than the input's, each once: a graph whose
/// written form (canonical, after export and import) another has, or the input has (a
/// fusion ONNX has no op for is written as the ops it fused), is dropped, its proposers
/// added to the first. Timing a copy of the input could only let the noise win.
[[nodiscard]] inline std::vector<Outcome> distinct_candidates(const Graph& input, std::vector<Outcome> candidates, const OptimizeRequest& r) {
    std::vector<std::string> forms{canonical_form(written_back(input, r.save, r.input.read_as)).bytes};
    std::vector<Outcome> out;
    for (Outcome& c : candidates) {
        std::string form = canonical_form(written_back(c.graph, r.save, r.input.read_as)).bytes;
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
[[nodiscard]] inline std::vector<Outcome> take_in_turn(std::vector<Outcome> candidates, std::size_t limit) {
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
/// Runtime's NCHWc block: for an ort-cpu target whose guard times in ONNX Runtime, when the
/// request proposes it and the search is not an agent's.
[[nodiscard]] inline bool proposes_nchwc_groups(const OptimizeRequest& r, const GuardSettings& guard, const cost::Target& target) {
    return target.kind == cost::TargetKind::ort_cpu && guard.mode == GuardMode::ort && r.propose.nchwc_groups && !is_agent(r.search);
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
std::vector<Proposal> propose_more(const OptimizeRequest& r, const std::string& priced_for, const Graph& original,
                                   const cost::Target& target, const std::shared_ptr<const rewrite::RuleSet>& rules,
                                   const std::vector<CostChoice>& choices, std::size_t keep, cost::CostModel<Primary>& primary,
                                   StopFlag& stop, std::vector<Outcome>& candidates) {
    std::vector<Proposal> proposals;
    for (const CostChoice& choice : choices) {
        if (stop.stopped()) break;  // cancelled: the candidates so far are guarded and written
        with_cost_backend(choice, target, {r.seed, r.save.fused_conv_microsoft}, [&](auto backend) {
            cost::CostModel<decltype(backend)> model(std::move(backend));
            const auto cache = cost_cache_path({}, model.name());
            load_cost_cache(model, cache, r.hooks.message);
            std::optional<EqsatUse> ignored;
            search::SearchResult found = run_search(r, priced_for, original, rules, model, keep, stop, ignored, " (" + model.name() + ")");
            save_cost_cache(model, cache, false, r.hooks.message);
            std::vector<Outcome> more = candidate_outcomes(found, model.name());
            proposals.push_back({model.name(), more.size(), found.best_cost_ms, found.initial_cost_ms, found.seconds, found.reason});
            for (Outcome& c : more) {
                c.cost_ms = primary.graph_cost(c.graph);
                candidates.push_back(std::move(c));
            }
        });
    }
    return proposals;
}

/// What times the candidates, for the plan line.
[[nodiscard]] inline std::string guard_description(const GuardSettings& guard) {
    std::string levels;
    for (const std::string& level : guard.levels) levels += (levels.empty() ? "" : ", ") + level;
    if (guard.mode == GuardMode::ort) return "ONNX Runtime, level " + levels;
    if (guard.mode == GuardMode::cuda) return "the CUDA executor on GPU " + std::to_string(guard.gpu);
    return "off";
}

/// The ledger a request names, if one applies: a file always; automatic the shipped one
/// when the search runs as a user's default run for the target it was measured at: the
/// default rules, the target's own prices and ort-cpu at the ledger's level. A run priced
/// by a chosen model (a GPU preset on the research benchmark, say) keeps every rule.
[[nodiscard]] inline std::optional<search::Ledger> ledger_for(const LedgerSpec& spec, bool default_rules, const TargetSpec& where,
                                                              const cost::Target& target) {
    if (spec.mode == LedgerMode::none) return std::nullopt;
    if (spec.mode == LedgerMode::file) return search::load_ledger(spec.file);
    const std::filesystem::path shipped = search::shipped_ledger_path();
    if (!default_rules || !where.own_prices() || !std::filesystem::exists(shipped)) return std::nullopt;
    search::Ledger found = search::load_ledger(shipped);
    if (found.target != target.name() || (target.kind == cost::TargetKind::ort_cpu && found.level != target.ort.level)) return std::nullopt;
    return found;
}

/// The rules to search with, without the families `ledger` says never pay; `use` gets
/// what was left out.
[[nodiscard]] inline std::shared_ptr<const rewrite::RuleSet> rules_after_ledger(std::shared_ptr<const rewrite::RuleSet> rules,
                                                                                const std::optional<search::Ledger>& ledger,
                                                                                std::optional<LedgerUse>& use) {
    if (!ledger) return rules;
    search::PrunedRules pruned = search::drop_unpaying(*rules, *ledger);
    use = LedgerUse{ledger->origin, ledger->target, ledger->level, std::move(pruned.dropped_families), pruned.dropped_rules};
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

/// The most memory this process has held (its peak resident set), in bytes.
[[nodiscard]] inline std::size_t peak_rss_bytes() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    constexpr std::size_t kilobyte = 1024;
    return static_cast<std::size_t>(usage.ru_maxrss) * kilobyte;
}

/// The report's fields that describe the written graph and the search.
inline void describe(OptimizeReport& report, const OptimizeRequest& r, const Graph& before, const search::SearchResult& found,
                     const Outcome& written) {
    report.cost_before_ms = found.initial_cost_ms;
    report.cost_after_ms = written.cost_ms;
    report.search_best_cost_ms = found.best_cost_ms;
    // The figures `rlflow info` prints, computed by the same code on what it reads: the
    // input as loaded, and the graph written, as ONNX and read back.
    report.before = graph_statistics(before);
    report.after = written.is_input ? report.before : graph_statistics(written_back(written.graph, r.save, r.input.read_as));
    report.written_is_input = written.is_input;
    // An input kept as the file it came from is written byte for byte, as it was.
    const bool unchanged_file = written.is_input && r.input.file.has_value();
    report.nonstandard_ops = nonstandard_ops(written.graph, unchanged_file ? onnx_io::ExportOptions{} : r.save);
    report.needs_onnxruntime = needs_onnxruntime(report.nonstandard_ops);
    report.portable = r.portable;
    report.rewrites = net_rewrites(written.rewrites);
    report.rewrites_applied = written.rewrites;
    report.rewrite_sequence = written.sequence;
    report.search_rewrites = found.rewrites;
    report.expansions = found.expansions;
    report.budget = r.limits.budget > 0 ? r.limits.budget : search::default_budget(before.num_nodes());
    report.peak_search_bytes = found.peak_search_bytes;
    report.stop_reason = found.reason;
    // Only greedy and taso count the expansion their best came at.
    const bool counts_expansions = report.search == SearchKind::greedy || report.search == SearchKind::backtracking;
    report.best_found_at = counts_expansions ? std::optional(found.best_found_at) : std::nullopt;
    report.stop = stop_reason_text(found, report.search, report.eqsat ? std::optional(report.eqsat->stats) : std::nullopt);
    report.seconds = found.seconds;
    report.proposed_by = written.proposed_by;
    if (const auto* a = std::get_if<AgentSpec>(&r.search)) {
        const rl::AgentHeader state = rl::read_agent_header(a->dir);
        report.agent = AgentUse{a->dir.string(), state.target, state.target == report.prices_for, found.expansions, found.seconds,
                                a->samples, agent_stop(*a, state), a->plan};
    }
}

/// Why the input is written unchanged, and what would pay where the guard saw it, in a
/// sentence or two for the console and the report; empty when a candidate is written.
[[nodiscard]] inline std::string kept_input_reason(const OptimizeReport& r) {
    if (!r.written_is_input) return "";
    const GuardOutcome& g = r.guard;
    if (g.decision == GuardVerdict::unavailable) return g.reason;
    if (r.timed.empty()) {
        std::string models;
        bool cheaper = false;
        for (const Proposal& p : r.proposers) {
            models += (models.empty() ? "" : ", ") + p.model;
            cheaper = cheaper || p.best_cost_ms < p.initial_cost_ms;
        }
        if (cheaper)  // every cheaper graph was dropped as a copy of the input once written
            return "the cheaper graphs the search found are the input once written as ONNX (fusions are written back as the ops "
                   "they fused), so there was nothing to time";
        return "no rewrite the search found lowers the price of this model (priced by " + (models.empty() ? r.cost_backend : models)
               + "), so there was nothing to time; another --search or more rules (rlflow rules generate) may find some";
    }
    const std::string runtime = r.guard_settings.mode == GuardMode::cuda ? "the CUDA executor" : "ONNX Runtime";
    const std::vector<search::CandidateVerdict>& verdicts = g.detail.verdicts;
    const std::size_t per = std::max<std::size_t>(r.guard_settings.levels.size(), 1);
    const std::string level = r.guard_settings.levels.empty() ? std::string("its level") : r.guard_settings.levels.front();
    const double min_gain = r.guard_settings.decision.min_gain;
    // What would pay: a level that vetoed a gain, or another level at which a candidate was
    // faster in the one comparison made there.
    if (!g.detail.vetoed_at.empty())
        return "the best candidate was faster at level " + level + ", but the --guard-levels also require level " + g.detail.vetoed_at
               + " not to lose; without that requirement the guard would time it again at level " + level;
    if (g.detail.confirmation)
        return "the candidate that gained in the first comparison did not when timed again: its gain is within this machine's noise";
    if (!g.detail.best || verdicts.size() < (*g.detail.best + 1) * per) return g.reason;
    const search::CandidateVerdict& b = verdicts[*g.detail.best * per];
    if (b.rounds == 0) return runtime + " gave the candidates no timed runs: it could not run them";
    for (const search::CandidateVerdict& v : verdicts)
        if (v.level != b.level && v.faster)
            return "no candidate was faster at level " + level + ", but candidate " + std::to_string(v.candidate + 1) + " was "
                   + search::detail::change_in_words(v.median_ratio) + " at level " + v.level + " in one comparison: --ort-level "
                   + v.level + " targets that level";
    if (b.median_ratio < 1 && b.median_ratio >= 1 - min_gain)
        return "the best candidate was " + search::detail::change_in_words(b.median_ratio) + ", less than the "
               + search::detail::share(min_gain) + " a written model must gain";
    if (b.median_ratio < 1 - min_gain && !b.faster)
        return "the best candidate's gain (" + search::detail::change_in_words(b.median_ratio) + ") is within the noise of "
               + std::to_string(b.rounds) + " rounds; more --guard-rounds may tell it apart";
    return "the rewrites found do not pay at this target: " + runtime + " at level " + level
           + " already does what they save, or runs their result slower";
}

/// Searches under the target's prices (and, with a guard, under other price models),
/// guards and verifies; writes nothing.
template <cost::CostBackend Backend>
OptimizeResult optimize_with(const OptimizeRequest& r, const Graph& original, Backend backend, const cost::Target& target,
                             const CostChoice& pricing) {
    OptimizeReport report;
    report.model = r.input.name;
    report.target = target.name();
    report.target_description = target.describe();
    report.target_device = target_device(target);
    report.search = search_kind(r.search);
    report.prices_for = priced_target(pricing, target);
    const GuardSettings guard = guard_settings(r, target);
    const std::optional<search::Ledger> ledger = ledger_for(r.ledger, r.rules == nullptr, r.target, target);
    const auto rules = rules_after_ledger(request_rules(r), ledger, report.ledger);
    cost::CostModel<Backend> model(std::move(backend));
    report.cost_backend = model.name();
    const std::vector<CostChoice> others = other_price_models(r, guard, pricing);
    const auto cache = cost_cache_path(r.cost_cache, model.name());
    load_cost_cache(model, cache, r.hooks.message);
    std::string models = model.name();
    for (const CostChoice& c : others) models += ", " + c.name();
    tell(r.hooks.message, MessageKind::plan,
         "target: " + target.describe() + " on " + report.target_device + "; prices: " + models + "; guard: " + guard_description(guard));
    StopFlag stop(r.hooks.cancel);
    const std::size_t keep = guard.mode != GuardMode::none ? guard.candidates : 1;
    search::SearchResult found = run_search(r, report.prices_for, original, rules, model, keep, stop, report.eqsat,
                                            others.empty() ? "" : " (" + model.name() + ")");
    save_cost_cache(model, cache, r.cost_cache.mode == CostCacheMode::file, r.hooks.message);
    std::vector<Outcome> candidates = candidate_outcomes(found, model.name());
    report.proposers.push_back({model.name(), candidates.size(), found.best_cost_ms, found.initial_cost_ms, found.seconds, found.reason});
    if (proposes_nchwc_groups(r, guard, target)) propose_nchwc_groups(original, model, candidates, report.proposers);
    const std::vector<Proposal> more = propose_more(r, report.prices_for, original, target, rules, others, keep, model, stop, candidates);
    report.proposers.insert(report.proposers.end(), more.begin(), more.end());
    order_by_ledger(candidates, *rules, ledger);
    if (guard.mode != GuardMode::none) candidates = take_in_turn(distinct_candidates(original, std::move(candidates), r), guard.candidates);
    report.guard = run_guard_for(model, original, candidates, guard, r.input.file);
    report.guard_settings = guard;
    for (const Outcome& c : candidates) report.timed.push_back({c.proposed_by, c.cost_ms});
    const bool keep_input = candidates.empty() || report.guard.decision == GuardVerdict::input;
    Outcome written = keep_input ? Outcome{original, found.initial_cost_ms, {}, {}, true, {}}
                                 : std::move(candidates[report.guard.decision == GuardVerdict::candidate ? report.guard.chosen : 0]);
    report.verification = written.is_input ? Verification{} : verify(original, written.graph, r.verify, r.seed);
    describe(report, r, original, found, written);
    report.kept_because = kept_input_reason(report);
    // The NCHWc block ONNX Runtime uses here, which decides which grouped convolutions
    // nchwc-groups widens (0: ORT lays nothing out in blocks on this CPU).
    if (target.kind == cost::TargetKind::ort_cpu) report.nchwc_block = ort_nchwc_block();
    if constexpr (std::is_same_v<Backend, cost::TableBackend>) {
        // How much of the price was measured: signatures found in the table, and those its
        // fitted roofline estimated.
        const auto& origin = model.backend().table().origin;
        report.table = TableUse{origin.target, origin.device, model.backend().measured(), model.backend().estimated()};
    }
    report.peak_rss_bytes = peak_rss_bytes();
    return {std::move(written.graph), std::move(report)};
}

}  // namespace opt

/// Optimises `original` for the target `request` names, priced as it says: the library's
/// front door, which `rlflow optimize` and Python's `rlflow.optimize` call. The result is
/// the input itself unless a candidate was measured faster; a result that differs from
/// the input on random inputs has `verified()` false and must not be written
/// (write_result refuses it).
///
/// A template only so that a program that includes this header without calling it (the
/// umbrella rlflow.hpp, the header check) does not instantiate the pipeline for every
/// cost backend: `Request` is always OptimizeRequest.
template <std::same_as<OptimizeRequest> Request = OptimizeRequest>
[[nodiscard]] OptimizeResult optimize(const Graph& original, const Request& request) {
    if (request.portable) opt::check_portable(original, request);
    const cost::Target target = opt::resolve_target(request.target, request.hooks.message);
    const opt::CostChoice pricing = opt::resolve_cost(request.target, target);
    return opt::with_cost_backend(pricing, target, {request.seed, request.save.fused_conv_microsoft}, [&](auto backend) {
        return opt::optimize_with(request, original, std::move(backend), target, pricing);
    });
}

#ifdef RLFLOW_OPTIMIZE_COMPILED
// A program that links the build's compiled front door (the rlflow_optimize library of the
// command line's build: the program, the Python module and the examples) takes optimize
// from it instead of compiling the pipeline for every cost backend once more.
extern template OptimizeResult optimize<OptimizeRequest>(const Graph&, const OptimizeRequest&);
#endif

/// Writes `result` to `output` atomically: a kept input as the very file it was read from
/// (byte for byte, so that what the guard timed as the input is what the user gets back),
/// anything else as ONNX with the request's export options. A result that failed its
/// verification is never written (verification_error).
inline void write_result(const OptimizeResult& result, const OptimizeRequest& request, const std::filesystem::path& output) {
    if (!result.verified())
        throw verification_error("the optimised graph differs from the original (" + result.report.verification.detail + "); nothing written");
    if (!result.is_input() || !request.input.file) return onnx_io::save_onnx(result.graph, output, request.save);
    std::ifstream in(*request.input.file, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    RLFLOW_EXPECTS(in.good() || in.eof(), io_error, request.input.file->string() + ": cannot read it again to write it unchanged");
    write_file_atomically(output, bytes);
}

}  // namespace rlflow
