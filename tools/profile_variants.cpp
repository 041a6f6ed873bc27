// rlflow_profile_variants: writes graph variants as ONNX and prices each with the CPU
// profiler and the analytic `cpu` preset, for tools/rank_correlation.py. Not installed.
//
//   rlflow_profile_variants --out DIR [--models NAME...] [--batches N...]
//                           [--rewrite NAME...] [--budgets N...] [--seed S]
//
// Variants: every --models zoo graph at every --batches size, and for every --rewrite
// model and batch, the graph after greedy search with the built-in rules under the
// analytic cpu preset, stopped after each of --budgets rewrites (0 would be the original).
// Every variant gets seeded random weights. Weight-only ops (computed from weights alone,
// e.g. the concatenated kernel of two merged convolutions) are folded into new weights
// before export: CostModel does not charge for them, and ONNX Runtime with its graph
// optimisations disabled would run them on every inference. Convolutions with a fused
// activation are written as com.microsoft.FusedConv, so that ORT runs them fused as the
// executor does.
//
// Prints one tab-separated line per variant: name, ONNX file, profiler ms, analytic ms.

#include <rlflow/cost.hpp>
#include <rlflow/exec.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/onnx/export.hpp>
#include <rlflow/rewrite.hpp>
#include <rlflow/search/greedy.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace rlflow;

struct Options {
    std::filesystem::path out;
    std::vector<std::string> models{"squeezenet1_1", "resnet18", "resnet50", "resnext50", "inception_v3",
                                    "nasnet_a",      "nasrnn",   "bert",     "vit_base"};
    std::vector<std::int64_t> batches{1, 2};
    std::vector<std::string> rewrite{"squeezenet1_1", "resnext50", "nasrnn", "bert"};
    std::vector<std::size_t> budgets{3, 1000};
    std::uint64_t seed = 0;
    /// CpuProfilerOptions::cache_flush_bytes, in MiB.
    std::size_t flush_mib = 0;
};

/// Replaces every weight-only tensor that a computed op or a graph output reads by a
/// new weight holding its value, then drops the nodes nothing reads any more.
void fold_weight_only(Graph& g, std::uint64_t seed) {
    const std::vector<char> constant = weight_only_nodes(g);
    std::vector<TensorRef> boundary;
    for (const Node& n : g.nodes()) {
        if (!constant[n.id.value] || n.traits().has(op_flag_source)) continue;
        for (std::uint32_t i = 0; i < n.outputs.size(); ++i) {
            const TensorRef ref{n.id, i};
            bool read_by_computed = g.is_graph_output(ref);
            for (const Use& use : n.outputs[i].uses) read_by_computed = read_by_computed || !constant[use.node.value];
            if (read_by_computed) boundary.push_back(ref);
        }
    }
    if (boundary.empty()) return;
    Graph probe = g;
    for (const TensorRef ref : boundary) probe.add_output(ref, "folded_" + std::to_string(ref.node.value));
    exec::RunResult run = exec::Executor{}.run(probe, exec::random_inputs(probe, seed));
    const std::size_t first = g.outputs().size();
    for (std::size_t k = 0; k < boundary.size(); ++k) {
        const TensorRef ref = boundary[k];
        const std::string name = g.node(ref.node).name + "_folded_" + std::to_string(ref.index);
        const TensorType type = g.type(ref);
        const NodeId weight = g.add_weight(name, type, std::make_shared<const Tensor>(std::move(run.outputs[first + k])));
        g.replace_all_uses(ref, {weight, 0});
    }
    g.remove_dead_nodes();
}

/// Gives `g` weights, folds its weight-only ops, writes it, and prints its costs.
void emit(Graph g, const std::string& name, const Options& options, cost::CostModel<cost::CpuProfiler>& profiler) {
    exec::fill_random_weights(g, options.seed);
    fold_weight_only(g, options.seed);
    const std::filesystem::path file = options.out / (name + ".onnx");
    onnx_io::ExportOptions save;
    save.fused_conv_microsoft = true;
    onnx_io::save_onnx(g, file, save);
    cost::CostModel<cost::AnalyticBackend> analytic(cost::AnalyticBackend::preset("cpu"));
    const double measured = profiler.graph_cost(g);
    std::printf("%s\t%s\t%.4f\t%.4f\n", name.c_str(), file.c_str(), measured, analytic.graph_cost(g));
    std::fflush(stdout);
}

/// The greedy variants of `base`: the graph after each of `options.budgets` rewrites.
void emit_rewritten(const Graph& base, const std::string& name, const Options& options,
                    cost::CostModel<cost::CpuProfiler>& profiler) {
    const auto rules = std::make_shared<const rewrite::RuleSet>(rewrite::builtin_rules());
    for (const std::size_t budget : options.budgets) {
        cost::CostModel<cost::AnalyticBackend> guide(cost::AnalyticBackend::preset("cpu"));
        search::SearchOptions search;
        search.budget = budget;
        search::SearchResult result = search::greedy(base, rules, guide, search);
        std::fprintf(stderr, "%s: greedy applied %zu rewrites (%s)\n", name.c_str(), result.expansions,
                     std::string(search::stop_reason_name(result.reason)).c_str());
        if (result.expansions == 0) continue;
        emit(std::move(result.graph), name + "_greedy" + std::to_string(result.expansions), options, profiler);
    }
}

void run(const Options& options) {
    std::filesystem::create_directories(options.out);
    constexpr int mib_shift = 20;
    cost::CpuProfilerOptions profiling;
    profiling.cache_flush_bytes = options.flush_mib << mib_shift;
    cost::CostModel<cost::CpuProfiler> profiler{cost::CpuProfiler(profiling)};
    for (const std::string& model : options.models)
        for (const std::int64_t batch : options.batches) {
            const Graph g = models::build_zoo_model(model, {batch});
            const std::string name = model + "_b" + std::to_string(batch);
            emit(g, name, options, profiler);
            if (std::find(options.rewrite.begin(), options.rewrite.end(), model) != options.rewrite.end())
                emit_rewritten(g, name, options, profiler);
        }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Write zoo graph variants as ONNX and price them with the CPU profiler"};
    Options options;
    app.add_option("--out", options.out, "folder for the .onnx files")->required();
    app.add_option("--models", options.models, "zoo models");
    app.add_option("--batches", options.batches, "batch sizes");
    app.add_option("--rewrite", options.rewrite, "models that also get greedy-rewritten variants");
    app.add_option("--budgets", options.budgets, "greedy rewrite budgets, one variant each");
    app.add_option("--seed", options.seed, "seed of weights and inputs");
    app.add_option("--flush-mib", options.flush_mib, "time every op with cold caches, evicted by writing this many MiB");
    CLI11_PARSE(app, argc, argv);
    try {
        run(options);
    } catch (const rlflow::error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
    }
    return 0;
}
