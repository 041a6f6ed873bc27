#pragma once
// Graph variants for measuring cost models, shared by the measurement drivers
// rlflow_calibrate_cpu and rlflow_profile_variants (not part of the library).
//
// A variant is a graph after a seeded sequence of rewrites: a random walk over the
// rewriter's locations (each step picks a rule uniformly among those with a location,
// then one of its locations uniformly, so rare rules such as grouped-convolution merges
// are not drowned by the generated library's many algebraic ones), or a focused walk that
// applies a few named rules only (merge grouped convolutions, enlarge and merge
// convolutions, merge parallel MatMuls), which reaches the signatures a search makes when
// it chases those rewrites: a grouped convolution merged once, twice, ... .

#include <rlflow/exec.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/onnx/import.hpp>
#include <rlflow/rewrite.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace rlflow::tools {

/// A graph to measure, with the name reports give it.
struct NamedGraph {
    std::string name;
    Graph graph;
};

/// A real export or a zoo model: a path ending in .onnx is loaded with `input` as its
/// only data input (a weight-free PyTorch export); any other name is a zoo model at
/// batch 1. Either way the weights get seeded random values, so that weight-only work
/// (a merged kernel) is folded and priced at zero, as it is in a deployed model.
[[nodiscard]] inline NamedGraph load_source(const std::string& source, std::uint64_t seed) {
    const std::filesystem::path path(source);
    NamedGraph named;
    if (path.extension() == ".onnx") {
        onnx_io::ImportOptions options;
        options.data_inputs = {"input"};
        named = {path.stem().string(), onnx_io::load_onnx(path, options)};
    } else {
        named = {source, models::build_zoo_model(source)};
    }
    exec::fill_random_weights(named.graph, seed);
    return named;
}

/// The rules a focused walk applies: the rewrites that change how much arithmetic a
/// convolution or matrix product does, or how its output is finished (fused activations,
/// folded normalisations), which is what a CPU cost model must price right.
inline const std::vector<std::string>& focused_rule_names() {
    static const std::vector<std::string> names{
        "merge_group_conv",          "merge_group_conv_bias",        "merge_conv_pair",      "merge_conv_pair_bias",
        "merge_conv_enlarge_pair",   "merge_conv_enlarge_pair_bias", "merge_matmul_pair",    "merge_matmul_triple",
        "fuse_matmul_add_gemm",      "fuse_batched_matmul_add_gemm", "fold_conv_batchnorm",  "fold_conv_batchnorm_bias",
        "fuse_conv_relu",            "fuse_conv_relu_bias"};
    return names;
}

/// The ids in `rules` of the rules named in `names` (names it lacks are skipped).
[[nodiscard]] inline std::vector<std::size_t> rule_ids(const rewrite::RuleSet& rules, const std::vector<std::string>& names) {
    std::vector<std::size_t> ids;
    for (const std::string& name : names)
        if (const auto id = rules.find(name)) ids.push_back(*id);
    return ids;
}

/// Applies up to `steps` rewrites to `g`, each a uniformly chosen location of a rule
/// chosen uniformly among `allowed` (every rule when empty) that has one; stops early when
/// none has. Returns the rewritten graph and, in `applied`, how many rewrites it made.
[[nodiscard]] inline Graph random_walk(const Graph& g, std::shared_ptr<const rewrite::RuleSet> rules,
                                       const std::vector<std::size_t>& allowed, std::size_t steps, std::mt19937_64& rng,
                                       std::size_t& applied) {
    rewrite::Rewriter rewriter(g, std::move(rules));
    applied = 0;
    for (std::size_t step = 0; step < steps; ++step) {
        std::vector<std::size_t> candidates;
        const std::size_t count = rewriter.index().num_rules();
        if (allowed.empty()) {
            for (std::size_t r = 0; r < count; ++r)
                if (rewriter.index().num_choices(r) > 0) candidates.push_back(r);
        } else {
            for (const std::size_t r : allowed)
                if (rewriter.index().num_choices(r) > 0) candidates.push_back(r);
        }
        if (candidates.empty()) break;
        const std::size_t rule = candidates[std::uniform_int_distribution<std::size_t>(0, candidates.size() - 1)(rng)];
        const std::size_t choices = rewriter.index().num_choices(rule);
        const std::size_t location = std::uniform_int_distribution<std::size_t>(0, choices - 1)(rng);
        (void)rewriter.apply(rule, location);
        ++applied;
    }
    Graph result = rewriter.graph();
    result.remove_dead_nodes();
    return result;
}

}  // namespace rlflow::tools
