#pragma once
// `rlflow optimize <MODEL> -o <out.onnx> [--target auto|ort-cpu|cuda] [--search greedy|taso|eqsat|mf|mb]
//  [--cost auto|analytic|cpu|ort|cudnn] [--device PRESET] [--guard auto|ort|cuda|none] [--ort-level L]
//  [--ort-threads T] [--propose MODELS] [--budget N] [--alpha A] [--rules FILE] [--time-limit S]
//  [--report r.json]`: the command line's adapter over the library's front door
// (rlflow/optimize.hpp). Its flags are read once into an OptimizeRequest; the model is
// loaded, rlflow::optimize searches, guards and verifies, and the result is written
// (atomically) with its report. rlflow::optimize is called in one place,
// command_optimize.cpp (run_optimize), which the program and the Python module compile. A model never runs slower than its input: when no
// candidate is faster beyond the noise, the input is written unchanged.

#include "command_info.hpp"
#include "model_source.hpp"
#include "output_paths.hpp"
#include "progress.hpp"
#include "target.hpp"

#include <rlflow/core/atomic_file.hpp>
#include <rlflow/optimize/nchwc_groups.hpp>
#include <rlflow/optimize/report.hpp>
#include <rlflow/optimize/request.hpp>
#include <rlflow/rewrite/builtin_rules.hpp>
#include <rlflow/rewrite/default_rules.hpp>
#include <rlflow/rewrite/rule_file.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rlflow::cli {

/// The guard's ranges, as --guard-candidates and --guard-rounds check them (and Python's
/// keywords of the same names).
inline constexpr std::size_t most_guard_candidates = 16;
inline constexpr int fewest_guard_rounds = 5;
inline constexpr int most_guard_rounds = 1000;

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
    /// only names them.
    std::shared_ptr<const rewrite::RuleSet> rule_set;
    /// The rule ledger (search/ledger.hpp): "auto" (the one rlflow ships, for the default
    /// rules at an ort-cpu target of its level under the target's own prices:
    /// opt::ledger_for), "none", or a ledger file. Its families that never paid are left
    /// out of the rules, and candidates are timed in the order of what it expects of them.
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
    std::string agent_stop = "auto";
    /// --search mf|mb: the tree search the agent guides after its rollouts.
    std::string plan{rl::plan_kind_names.name(rl::PlanOptions{}.kind)};
    std::size_t simulations = rl::PlanOptions{}.simulations;
    std::size_t grow_steps = rl::PlanOptions{}.grow_steps;
    /// --search eqsat: limits, rounds of multi-output rules, and extraction.
    search::EqsatOptions eqsat;
    std::string extract{search::extraction_names.name(search::EqsatOptions{}.extraction)};
    std::string ilp_cycles = "filter";
    /// Progress bar and the target line (off: silent, as the Python module runs by default).
    bool progress = true;
    /// Write standard ONNX ops only: no ONNX Runtime contrib op (--fused-conv-ms is
    /// refused, and so is an input that already holds one).
    bool portable = false;
};

/// The ONNX file a MODEL argument names, if it is one (not zoo:NAME).
inline std::optional<std::filesystem::path> model_file(const std::string& model) {
    if (model.starts_with(zoo_prefix)) return std::nullopt;
    return std::filesystem::path(model);
}

/// Set by SIGINT while a SigintStop is alive: the search stops and the best graph so far
/// is verified and written.
inline std::atomic<bool> interrupted{false};

/// SIGINT sets `interrupted` for as long as this lives (a Ctrl-C of an earlier run in this
/// process, as the Python module runs many, is spent when it starts); the previous
/// handler comes back after.
class SigintStop {
public:
    SigintStop() : m_previous((interrupted.store(false), std::signal(SIGINT, [](int) { interrupted.store(true); }))) {}
    SigintStop(const SigintStop&) = delete;
    SigintStop& operator=(const SigintStop&) = delete;
    ~SigintStop() { std::signal(SIGINT, m_previous); }

private:
    void (*m_previous)(int);
};

/// The rules `--rules` names: "default" (built-in + the generated library), "builtin"
/// (the built-in rules alone) or a rules file.
inline std::shared_ptr<const rewrite::RuleSet> load_rule_set(const std::string& which) {
    if (which.empty() || which == "default") return std::make_shared<const rewrite::RuleSet>(rewrite::default_rules());
    if (which == "builtin") return std::make_shared<const rewrite::RuleSet>(rewrite::builtin_rules());
    return std::make_shared<const rewrite::RuleSet>(rewrite::load_rules(which));
}

/// How the model of `load` is read, for what it is compared with once written.
inline onnx_io::ImportOptions import_options(const ModelOptions& load) {
    onnx_io::ImportOptions import;
    import.fold_constants = !load.no_fold;
    import.dim_values = load.dims;
    import.data_inputs = load.data_inputs;
    return import;
}

/// --ledger: auto, none or a file.
inline LedgerSpec ledger_spec(const std::string& ledger) {
    if (ledger == "auto") return {};
    if (ledger == "none") return {LedgerMode::none, {}};
    return {LedgerMode::file, ledger};
}

/// --propose: auto (the analytic cpu and v100 presets, and nchwc-groups), none, or a list
/// of price models and nchwc-groups; none anywhere means none.
inline ProposeSpec propose_spec(const std::vector<std::string>& names) {
    ProposeSpec spec = ProposeSpec::none();
    bool none = false;
    for (const std::string& name : names) {
        if (name == "none") {
            none = true;
        } else if (name == "auto") {
            const ProposeSpec automatic;
            spec.price_models.insert(spec.price_models.end(), automatic.price_models.begin(), automatic.price_models.end());
            spec.nchwc_groups = true;
        } else if (name == opt::nchwc_groups_proposer) {
            spec.nchwc_groups = true;
        } else {
            spec.price_models.push_back(opt::parse_cost_choice(name));  // each name is checked, used or not
        }
    }
    return none ? ProposeSpec::none() : spec;
}

/// --cost-cache: a file, none, or empty for the per-user cache of a measuring backend.
inline CostCacheSpec cost_cache_spec(const std::string& option) {
    if (option == "none") return {CostCacheMode::none, {}};
    if (option.empty()) return {};
    return {CostCacheMode::file, option};
}

/// --search and its options.
inline SearchSpec search_spec(const OptimizeOptions& o) {
    SearchSpec spec = default_search(search_kind_names.parse(o.search, "search"));
    if (auto* b = std::get_if<BacktrackingSpec>(&spec)) b->alpha = o.alpha;
    if (auto* e = std::get_if<EqsatSpec>(&spec)) {
        e->options = o.eqsat;
        e->options.extraction = search::extraction_names.parse(o.extract, "--extract");
        e->options.ilp_cycles = search::ilp_cycles_names.parse(o.ilp_cycles, "--ilp-cycles");
    }
    if (auto* a = std::get_if<AgentSpec>(&spec)) {
        a->dir = o.agent;
        a->samples = o.samples;
        a->stop = agent_stop_names.parse(o.agent_stop, "--agent-stop");
        a->plan.kind = rl::plan_kind_names.parse(o.plan, "--plan");
        a->plan.simulations = o.simulations;
        a->plan.grow_steps = o.grow_steps;
    }
    return spec;
}

/// The progress hook of a console: a bar per phase on stderr (progress.hpp).
inline opt::ProgressHook progress_bars() {
    auto bars = std::make_shared<std::map<std::string, ProgressBar>>();
    return [bars](const opt::ProgressUpdate& u) {
        auto at = bars->find(u.phase);
        if (at == bars->end()) at = bars->try_emplace(u.phase, u.phase, u.total).first;
        if (u.finished) {
            at->second.finish();
            bars->erase(at);
            return;
        }
        at->second.update(u.done, u.text);
    };
}

/// The messages of a console: the plan on stdout (with progress on), the rest on stderr.
inline opt::MessageHook console_messages(bool progress) {
    return [progress](opt::MessageKind kind, const std::string& text) {
        if (kind != opt::MessageKind::plan) return opt::print_message(kind, text);
        if (!progress) return;
        std::printf("%s\n", text.c_str());
        std::fflush(stdout);
    };
}

/// The request the flags name, read once; `cancel` is the flag that stops the search.
inline OptimizeRequest optimize_request(const OptimizeOptions& o, const std::atomic<bool>* cancel) {
    OptimizeRequest r;
    r.target = target_spec(o.where);
    r.search = search_spec(o);
    r.guard.mode = opt::guard_mode_names.parse(o.guard, "guard");
    r.guard.levels = o.guard_levels;
    r.guard.candidates = o.guard_candidates;
    r.guard.rounds = o.guard_rounds;
    r.verify.trials = o.verify_trials;
    r.limits = {o.budget, o.memory_limit_mb, o.time_limit};
    r.propose = propose_spec(o.propose);
    r.rules = o.rule_set ? o.rule_set : o.rules.empty() || o.rules == "default" ? nullptr : load_rule_set(o.rules);
    r.ledger = ledger_spec(o.ledger);
    r.cost_cache = cost_cache_spec(o.cost_cache);
    r.save = o.save;
    r.portable = o.portable;
    r.seed = o.seed;
    r.input = {o.model, model_file(o.model), import_options(o.load)};
    if (o.progress) r.hooks.progress = progress_bars();
    r.hooks.message = console_messages(o.progress);
    r.hooks.cancel = cancel;
    return r;
}

/// The console's summary of a report.
inline void print_summary(const OptimizeReport& r) {
    std::printf("%-22s %14s %14s\n", "", "before", "after");
    const auto line = [](const std::string& label, double before, double after) {
        std::printf("%-22s %14s %14s  (%s)\n", label.c_str(), format_ms(before).c_str(), format_ms(after).c_str(),
                    format_ratio(before / after).c_str());
    };
    line("cost", r.cost_before_ms, r.cost_after_ms);
    if (r.guard.before_ms > 0 && r.guard.after_ms > 0) {
        if (r.guard_settings.mode == opt::GuardMode::cuda) line("CUDA executor", r.guard.before_ms, r.guard.after_ms);
        else if (!r.guard_settings.levels.empty()) line("ONNX Runtime " + r.guard_settings.levels.front(), r.guard.before_ms, r.guard.after_ms);
    }
    std::printf("%-22s %14s %14s\n", "peak activations", human_bytes(static_cast<double>(r.before.memory.peak_activation_bytes)).c_str(),
                human_bytes(static_cast<double>(r.after.memory.peak_activation_bytes)).c_str());
    std::printf("%-22s %14s %14s\n", "weights", human_bytes(static_cast<double>(r.before.memory.weight_bytes)).c_str(),
                human_bytes(static_cast<double>(r.after.memory.weight_bytes)).c_str());
    constexpr double giga = 1e9;
    std::printf("%-22s %8.3f GFLOP %8.3f GFLOP\n", "FLOPs", r.before.flops / giga, r.after.flops / giga);
    std::printf("search: %s (%zu expansions, %.2f s)\n", r.stop.c_str(), r.expansions, r.seconds);
    if (r.eqsat) {
        const search::EqsatStats& e = r.eqsat->stats;
        std::printf("e-graph: %zu e-classes, %zu e-nodes after %zu iterations; extraction: %s", e.classes, e.enodes, e.iterations,
                    std::string(search::extracted_by_names.name(e.extraction)).c_str());
        if (e.ilp) std::printf(" (ILP %s, gap %.3g, %.1f s)", e.ilp->status.c_str(), e.ilp->gap, e.ilp->seconds);
        std::printf("\n");
    }
    if (r.guard.decision != opt::GuardVerdict::off) std::printf("guard: %s\n", r.guard.reason.c_str());
    if (r.guard.decision != opt::GuardVerdict::off)
        for (const search::CandidateVerdict& v : r.guard.detail.verdicts)
            std::printf("  candidate %zu at level %s: %s (%s), proposed by %s\n", v.candidate + 1, v.level.c_str(),
                        search::detail::change_in_words(v.median_ratio).c_str(), search::detail::tally(v, v.median_ratio > 1).c_str(),
                        join(r.timed.at(v.candidate).proposed_by, ", ").c_str());
    if (r.written_is_input) {
        std::printf("kept the input: %s\n", r.kept_because.c_str());
        return;
    }
    std::printf("rewrites (net: steps that undo each other are left out; every step, in order, in the report):\n");
    for (const auto& [rule, count] : r.rewrites) std::printf("  %-34s %6zu\n", rule.c_str(), count);
    if (r.verification.method == opt::Verification::Method::regions)
        std::printf("verified region by region (%zu regions, random boundary values): max |diff| %.3g\n", r.verification.regions,
                    r.verification.max_abs_diff);
    else
        std::printf("verified on random inputs: max |diff| %.3g\n", r.verification.max_abs_diff);
}

/// rlflow::optimize, as the program and the Python module call it (command_optimize.cpp).
OptimizeResult run_optimize(const Graph& original, const OptimizeRequest& request);

/// `rlflow optimize`: loads, optimises, and writes the model and report. A failed
/// verification writes nothing and exits 1.
void optimize_command(OptimizeOptions o);

}  // namespace rlflow::cli
