// rlflow_profile_variants: writes graph variants as ONNX and prices each with the
// ort backend, the analytic `cpu` preset and the CPU profiler, for
// tools/rank_correlation.py. Not installed.
//
//   rlflow_profile_variants --out DIR [--onnx FILE...] [--walks N] [--steps N]
//                           [--focused-walks N] [--models NAME...] [--batches N...]
//                           [--rewrite NAME...] [--budgets N...] [--search-seconds S]
//                           [--seed S] [--no-ort]
//                           [--ort-cache FILE] [--profiler-cache FILE]
//
// Variants of each --onnx file (a weight-free export whose data input is `input`): the
// export itself; --walks random walks over the default rules of 1 to --steps rewrites
// each and --focused-walks walks over the rewrites that change a convolution's or
// MatMul's arithmetic (tools/variant_walks.hpp); and the graph after greedy search with
// the default rules under the analytic cpu preset, stopped after each of --budgets
// rewrites or --search-seconds. Variants of each --models zoo graph at each --batches
// size: the graph, and for the --rewrite models the greedy ones under the built-in rules.
// The zoo defaults apply only without --onnx.
//
// Every variant gets seeded random weights. Weight-only ops (computed from weights alone,
// e.g. the concatenated kernel of two merged convolutions) are folded into new weights
// before export (exec::fold_weight_only), because CostModel does not charge for them.
// Variants are written as the end-to-end guard writes candidates (fused activations as
// Conv + activation), since ORT is timed as the guard times them: level basic, one thread.
//
// Prints one tab-separated line per variant: model, variant, ONNX file, then the
// predicted ms of the CPU profiler, the analytic cpu preset and the ort backend (the sum
// of its op prices; nan with --no-ort).

#include "variant_walks.hpp"

#include <rlflow/cost.hpp>
#include <rlflow/exec.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/onnx/export.hpp>
#include <rlflow/rewrite.hpp>
#include <rlflow/search/greedy.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace rlflow;

struct Options {
    std::filesystem::path out;
    std::vector<std::string> onnx;
    std::size_t walks = 8;
    std::size_t focused_walks = 3;
    std::size_t steps = 24;
    std::vector<std::string> models{"squeezenet1_1", "resnet18", "resnet50", "resnext50", "inception_v3",
                                    "nasnet_a",      "nasrnn",   "bert",     "vit_base"};
    std::vector<std::int64_t> batches{1, 2};
    std::vector<std::string> rewrite{"squeezenet1_1", "resnext50", "nasrnn", "bert"};
    std::vector<std::size_t> budgets{3, 1000};
    double search_seconds = 120;
    std::uint64_t seed = 0;
    /// CpuProfilerOptions::cache_flush_bytes, in MiB.
    std::size_t flush_mib = 0;
    bool no_ort = false;
    std::filesystem::path ort_cache;
    std::filesystem::path profiler_cache;
};

/// The three cost models every variant is priced with.
struct Pricers {
    explicit Pricers(const cost::CpuProfilerOptions& profiling) : profiler(cost::CpuProfiler(profiling)) {}
    cost::CostModel<cost::CpuProfiler> profiler;
    cost::CostModel<cost::AnalyticBackend> analytic{cost::AnalyticBackend::preset("cpu")};
    std::optional<cost::CostModel<cost::OrtBackend>> ort;
};

/// Folds `g`'s weight-only ops, writes it, and prints its prices.
void emit(Graph g, const std::string& model, const std::string& variant, const Options& options, Pricers& pricers) {
    exec::fold_weight_only(g);
    const std::filesystem::path file = options.out / (model + "." + variant + ".onnx");
    onnx_io::save_onnx(g, file);
    const double ort = pricers.ort ? pricers.ort->graph_cost(g) : std::nan("");
    std::printf("%s\t%s\t%s\t%.5f\t%.5f\t%.5f\n", model.c_str(), variant.c_str(), file.c_str(), pricers.profiler.graph_cost(g),
                pricers.analytic.graph_cost(g), ort);
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s priced\n", model.c_str(), variant.c_str());
}

/// The greedy variants of `base` under `rules`: the graph after each of
/// `options.budgets` rewrites (or --search-seconds).
void emit_greedy(const Graph& base, const std::string& model, const Options& options, Pricers& pricers,
                 const std::shared_ptr<const rewrite::RuleSet>& rules) {
    std::set<std::size_t> emitted;  // budgets the search converged before give the same graph
    for (const std::size_t budget : options.budgets) {
        cost::CostModel<cost::AnalyticBackend> guide(cost::AnalyticBackend::preset("cpu"));
        search::SearchOptions search;
        search.budget = budget;
        search.time_limit_seconds = options.search_seconds;
        search::SearchResult result = search::greedy(base, rules, guide, search);
        std::fprintf(stderr, "%s: greedy applied %zu rewrites (%s)\n", model.c_str(), result.expansions,
                     std::string(search::stop_reason_name(result.reason)).c_str());
        if (result.expansions == 0 || !emitted.insert(result.expansions).second) continue;
        emit(std::move(result.graph), model, "greedy" + std::to_string(result.expansions), options, pricers);
    }
}

/// A real export, its random and focused walks, and its greedy variants.
void emit_export(const std::string& path, const Options& options, Pricers& pricers,
                 const std::shared_ptr<const rewrite::RuleSet>& rules) {
    const tools::NamedGraph base = tools::load_source(path, options.seed);
    const std::vector<std::size_t> focused = tools::rule_ids(*rules, tools::focused_rule_names());
    std::mt19937_64 rng(options.seed);
    std::uniform_int_distribution<std::size_t> length(1, std::max<std::size_t>(options.steps, 1));
    emit(base.graph, base.name, "original", options, pricers);
    for (std::size_t w = 0; w < options.walks + options.focused_walks; ++w) {
        const bool is_focused = w >= options.walks;
        std::size_t applied = 0;
        Graph g = tools::random_walk(base.graph, rules, is_focused ? focused : std::vector<std::size_t>{}, length(rng), rng,
                                     applied);
        if (applied == 0) continue;
        const std::string variant = (is_focused ? "focused" : "walk") + std::to_string(w) + "_" + std::to_string(applied);
        emit(std::move(g), base.name, variant, options, pricers);
    }
    emit_greedy(base.graph, base.name, options, pricers, rules);
}

void emit_zoo(const Options& options, Pricers& pricers) {
    const auto rules = std::make_shared<const rewrite::RuleSet>(rewrite::builtin_rules());
    for (const std::string& model : options.models)
        for (const std::int64_t batch : options.batches) {
            Graph g = models::build_zoo_model(model, {batch});
            exec::fill_random_weights(g, options.seed);
            const std::string name = model + "_b" + std::to_string(batch);
            emit(g, name, "original", options, pricers);
            if (std::find(options.rewrite.begin(), options.rewrite.end(), model) != options.rewrite.end())
                emit_greedy(g, name, options, pricers, rules);
        }
}

/// Writes the price caches that were asked for (after each export, so a long run that
/// stops keeps what it measured).
void save_caches(const Options& options, const Pricers& pricers) {
    if (pricers.ort && !options.ort_cache.empty()) pricers.ort->save_cache(options.ort_cache);
    if (!options.profiler_cache.empty()) pricers.profiler.save_cache(options.profiler_cache);
}

void run(const Options& options) {
    std::filesystem::create_directories(options.out);
    constexpr int mib_shift = 20;
    cost::CpuProfilerOptions profiling;
    profiling.cache_flush_bytes = options.flush_mib << mib_shift;
    Pricers pricers(profiling);
    cost::OrtBackendOptions ort_options;
    ort_options.settings = {"basic", 1};  // as the end-to-end guard times models
    ort_options.seed = options.seed;
    if (!options.no_ort) pricers.ort.emplace(cost::OrtBackend(ort_options));
    if (pricers.ort && !options.ort_cache.empty()) (void)pricers.ort->load_cache(options.ort_cache);
    if (!options.profiler_cache.empty()) (void)pricers.profiler.load_cache(options.profiler_cache);
    if (options.onnx.empty()) {
        emit_zoo(options, pricers);
    } else {
        const auto rules = std::make_shared<const rewrite::RuleSet>(rewrite::default_rules());
        for (const std::string& path : options.onnx) {
            emit_export(path, options, pricers, rules);
            save_caches(options, pricers);
        }
    }
    save_caches(options, pricers);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Write graph variants as ONNX and price them with the ort backend, the analytic cpu preset and the "
                 "CPU profiler"};
    Options options;
    app.add_option("--out", options.out, "folder for the .onnx files")->required();
    app.add_option("--onnx", options.onnx, "weight-free ONNX exports (data input `input`) to make variants of");
    app.add_option("--walks", options.walks, "random walks over the default rules per export");
    app.add_option("--focused-walks", options.focused_walks, "walks over the arithmetic-changing rules per export");
    app.add_option("--steps", options.steps, "most rewrites per walk (each walk draws 1..steps)");
    app.add_option("--models", options.models, "zoo models (without --onnx)");
    app.add_option("--batches", options.batches, "batch sizes of the zoo models");
    app.add_option("--rewrite", options.rewrite, "zoo models that also get greedy-rewritten variants");
    app.add_option("--budgets", options.budgets, "greedy rewrite budgets, one variant each");
    app.add_option("--search-seconds", options.search_seconds, "time limit of each greedy search")->capture_default_str();
    app.add_option("--seed", options.seed, "seed of walks, weights and inputs");
    app.add_option("--flush-mib", options.flush_mib, "time every op with cold caches, evicted by writing this many MiB");
    app.add_flag("--no-ort", options.no_ort, "do not price with the ort backend (prints nan)");
    app.add_option("--ort-cache", options.ort_cache, "cost cache file of the ort backend, kept between runs");
    app.add_option("--profiler-cache", options.profiler_cache, "cost cache file of the CPU profiler, kept between runs");
    CLI11_PARSE(app, argc, argv);
    try {
        run(options);
    } catch (const rlflow::error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
    } catch (const cost::OrtWorkerError& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
    }
    return 0;
}
