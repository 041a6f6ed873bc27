#pragma once
// `rlflow optimize <MODEL> -o <out.onnx> [--search greedy|taso] [--cost analytic|cpu|cudnn]
//  [--device PRESET] [--budget N] [--alpha A] [--rules FILE] [--time-limit S] [--report r.json]`:
// searches for a cheaper equivalent graph, checks it against the original on random
// inputs, and only then writes it (atomically) with a report.

#include "command_info.hpp"
#include "model_source.hpp"
#include "progress.hpp"

#include <rlflow/core/atomic_file.hpp>
#include <rlflow/core/memory.hpp>
#include <rlflow/cost.hpp>
#if defined(RLFLOW_HAS_CUDA)
#include <rlflow/cost/cudnn_profiler.hpp>
#endif
#include <rlflow/onnx/export.hpp>
#include <rlflow/rewrite.hpp>
#include <rlflow/rewrite/default_rules.hpp>
#include <rlflow/search.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>

namespace rlflow::cli {

struct OptimizeOptions {
    std::string model;
    std::string output;
    ModelOptions load;
    std::string search = "taso";
    std::string cost = "analytic";
    std::string device = "v100";
    std::size_t budget = 1000;
    double alpha = 1.05;
    double time_limit = 0;
    std::string rules;
    std::string report;
    std::string cost_cache;
    int verify_trials = 3;
    onnx_io::ExportOptions save;
    std::uint64_t seed = 0;
};

/// Set by SIGINT: the search stops and the best graph so far is verified and written.
inline std::atomic<bool> interrupted{false};

/// The rules `--rules` names: "default" (built-in + the generated library), "builtin"
/// (the built-in rules alone) or a rules file.
inline std::shared_ptr<const rewrite::RuleSet> load_rule_set(const std::string& which) {
    if (which.empty() || which == "default") return std::make_shared<const rewrite::RuleSet>(rewrite::default_rules());
    if (which == "builtin") return std::make_shared<const rewrite::RuleSet>(rewrite::builtin_rules());
    return std::make_shared<const rewrite::RuleSet>(rewrite::load_rules(which));
}

/// Runs the chosen search with `model` pricing it.
template <cost::CostBackend Backend>
search::SearchResult run_search(const OptimizeOptions& o, const Graph& g, std::shared_ptr<const rewrite::RuleSet> rules,
                                cost::CostModel<Backend>& model) {
    search::SearchOptions options;
    options.budget = o.budget;
    options.alpha = o.alpha;
    options.time_limit_seconds = o.time_limit;
    options.stop = &interrupted;
    ProgressBar bar("search", o.budget);
    options.on_progress = [&](const search::SearchProgress& p) {
        bar.update(p.expansions, "best " + format_ms(p.best_cost_ms) + " (" + format_ratio(p.initial_cost_ms / p.best_cost_ms) + ")");
    };
    const auto previous = std::signal(SIGINT, [](int) { interrupted.store(true); });
    search::SearchResult result = o.search == "greedy" ? search::greedy(g, rules, model, options)
                                                       : search::backtracking(g, rules, model, options);
    std::signal(SIGINT, previous);
    bar.finish();
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

inline nlohmann::json optimize_report(const OptimizeOptions& o, const std::string& backend, const Graph& before,
                                      const search::SearchResult& r, const Verification& check) {
    nlohmann::json j;
    j["model"] = o.model;
    j["search"] = o.search;
    j["cost_backend"] = backend;
    j["cost_before_ms"] = r.initial_cost_ms;
    j["cost_after_ms"] = r.best_cost_ms;
    // As deployed: ops on weights alone are folded ahead of time, as the cost model prices them.
    const MemoryProfile memory_before = folded_memory_profile(before);
    const MemoryProfile memory_after = folded_memory_profile(r.graph);
    j["memory_before_bytes"] = memory_before.peak_activation_bytes;
    j["memory_after_bytes"] = memory_after.peak_activation_bytes;
    j["weight_bytes_before"] = memory_before.weight_bytes;
    j["weight_bytes_after"] = memory_after.weight_bytes;
    j["rewrites"] = r.rewrites;
    j["expansions"] = r.expansions;
    j["stop_reason"] = search::stop_reason_name(r.reason);
    j["seconds"] = r.seconds;
    j["verified"] = check.equal;
    j["verification"] = check.method;
    if (check.method == "regions") j["regions_verified"] = check.regions;
    j["max_abs_diff"] = check.max_abs_diff;
    return j;
}

inline void print_summary(const nlohmann::json& j) {
    std::printf("%-22s %14s %14s\n", "", "before", "after");
    std::printf("%-22s %14s %14s  (%s)\n", "cost", format_ms(j["cost_before_ms"].get<double>()).c_str(),
                format_ms(j["cost_after_ms"].get<double>()).c_str(),
                format_ratio(j["cost_before_ms"].get<double>() / j["cost_after_ms"].get<double>()).c_str());
    std::printf("%-22s %14s %14s\n", "peak activations", human_bytes(j["memory_before_bytes"].get<double>()).c_str(),
                human_bytes(j["memory_after_bytes"].get<double>()).c_str());
    std::printf("%-22s %14s %14s\n", "weights", human_bytes(j["weight_bytes_before"].get<double>()).c_str(),
                human_bytes(j["weight_bytes_after"].get<double>()).c_str());
    std::printf("rewrites (%s after %zu expansions, %.2f s):\n", j["stop_reason"].get<std::string>().c_str(),
                j["expansions"].get<std::size_t>(), j["seconds"].get<double>());
    for (const auto& [rule, count] : j["rewrites"].items()) std::printf("  %-34s %6d\n", rule.c_str(), count.get<int>());
    if (j["verification"] == "regions")
        std::printf("verified region by region (%zu regions, random boundary values): max |diff| %.3g\n",
                    j["regions_verified"].get<std::size_t>(), j["max_abs_diff"].get<double>());
    else
        std::printf("verified on random inputs: max |diff| %.3g\n", j["max_abs_diff"].get<double>());
}

/// Optimises, verifies, writes. A failed verification writes nothing and exits 1.
template <cost::CostBackend Backend>
void optimize_with(const OptimizeOptions& o, Backend backend) {
    const Graph original = load_model(o.model, o.load);
    const auto rules = load_rule_set(o.rules);
    cost::CostModel<Backend> model(std::move(backend));
    // A cache file of another backend, version or a damaged one is ignored, never trusted.
    if (!o.cost_cache.empty() && !model.load_cache(o.cost_cache) && std::filesystem::exists(o.cost_cache))
        std::fprintf(stderr, "note: cost cache %s is not usable for %s; measuring again\n", o.cost_cache.c_str(),
                     model.name().c_str());
    search::SearchResult result = run_search(o, original, rules, model);
    if (!o.cost_cache.empty()) model.save_cache(o.cost_cache);
    result.graph.remove_dead_nodes();
    const Verification check = verify(original, result.graph, o);
    const nlohmann::json report = optimize_report(o, model.name(), original, result, check);
    if (!check.equal) {
        std::fprintf(stderr, "error: the optimised graph differs from the original (%s); nothing written\n",
                     check.detail.c_str());
        throw CLI::RuntimeError(1);
    }
    onnx_io::save_onnx(result.graph, o.output, o.save);
    if (!o.report.empty()) write_file_atomically(o.report, report.dump(2) + "\n");
    print_summary(report);
    std::printf("wrote %s\n", o.output.c_str());
}

inline void add_optimize_command(CLI::App& app) {
    auto o = std::make_shared<OptimizeOptions>();
    CLI::App* cmd = app.add_subcommand("optimize", "Rewrite a model into a cheaper equivalent one and write it as ONNX");
    cmd->add_option("model", o->model, "an .onnx file or zoo:NAME")->required();
    cmd->add_option("-o,--output", o->output, "the .onnx file to write")->required();
    add_model_flags(*cmd, o->load);
    cmd->add_option("--search", o->search, "greedy or taso (cost-ordered backtracking)")->check(CLI::IsMember({"greedy", "taso"}));
    cmd->add_option("--cost", o->cost,
                    "analytic (a roofline, see --device), cpu (ops timed in the reference executor) or cudnn "
                    "(ops timed with cuDNN/cuBLAS; needs a CUDA build and a GPU)")
        ->check(CLI::IsMember({"analytic", "cpu", "cudnn"}));
    cmd->add_option("--device", o->device, "analytic device preset: v100, a100, h100 or cpu");
    cmd->add_option("--budget", o->budget, "most expansions (taso) or rewrites (greedy)");
    cmd->add_option("--alpha", o->alpha, "taso keeps graphs costing below alpha x the best")->check(CLI::PositiveNumber);
    cmd->add_option("--time-limit", o->time_limit, "seconds; stop with the best graph so far");
    cmd->add_option("--rules", o->rules,
                    "default (built-in + generated library), builtin, or a rules file (text or binary)");
    cmd->add_option("--report", o->report, "write a JSON report here");
    cmd->add_option("--cost-cache", o->cost_cache, "read op costs from, and save them to, this file");
    cmd->add_option("--verify-trials", o->verify_trials, "random input sets the result is checked on")->check(CLI::PositiveNumber);
    cmd->add_option("--seed", o->seed, "seed of the verification inputs and weights");
    cmd->add_flag("--fused-conv-ms", o->save.fused_conv_microsoft,
                  "write fused convolutions as com.microsoft.FusedConv (ONNX Runtime) instead of Conv + activation");
    cmd->callback([o] {
        if (o->cost == "cpu") return optimize_with(*o, cost::CpuProfiler{});
        if (o->cost == "cudnn") {
#if defined(RLFLOW_HAS_CUDA)
            return optimize_with(*o, cost::CudnnProfiler{0});
#else
            throw precondition_error("--cost cudnn needs rlflow built with CUDA (RLFLOW_ENABLE_CUDA) and a GPU");
#endif
        }
        optimize_with(*o, cost::AnalyticBackend::preset(o->device));
    });
}

}  // namespace rlflow::cli
