#pragma once
// Resolves a MODEL argument of the command line: `zoo:NAME` or a path to an .onnx file.

#include <rlflow/core/graph.hpp>
#include <rlflow/exec/random.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/onnx/import.hpp>
#include <rlflow/onnx/opsets.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace rlflow::cli {

inline constexpr std::string_view zoo_prefix = "zoo:";

/// How a MODEL argument is loaded (shared by every command that takes one).
struct ModelOptions {
    /// Set only by --batch (zoo models); an ONNX file's batch is bound with --dim.
    std::optional<std::int64_t> batch;
    std::map<std::string, std::int64_t> dims;
    std::vector<std::string> data_inputs;
    bool no_fold = false;
    /// Zoo models: weights as graph inputs without data, instead of seeded random weights.
    bool weight_free = false;
    /// Seed of a zoo model's random weights (commands set it from their --seed).
    std::uint64_t seed = 0;
    std::size_t max_nodes = onnx_io::default_max_nodes;
};

/// Adds the flags of ModelOptions to a command.
inline void add_model_flags(CLI::App& cmd, ModelOptions& options) {
    cmd.add_option("--batch", options.batch, "batch size for zoo models (default 1; for an .onnx file use --dim)")
        ->check(CLI::PositiveNumber);
    cmd.add_option("--dim", options.dims, "bind a symbolic ONNX dimension, NAME=SIZE (repeatable)");
    cmd.add_option("--data-inputs", options.data_inputs,
                   "ONNX graph inputs that carry data; every other input is a parameter (weight)");
    cmd.add_flag("--no-fold", options.no_fold, "do not fold static ONNX subgraphs");
    cmd.add_option("--max-nodes", options.max_nodes, "refuse ONNX models with more nodes than this (0: no limit)")
        ->capture_default_str();
    cmd.add_flag("--weight-free", options.weight_free,
                 "zoo models: leave the weights as graph inputs without data (as export_params=False) instead of "
                 "seeded random weights");
}

/// Throws io_error when `model`, a path, is a directory or no file.
inline void check_model_file(const std::string& model) {
    std::error_code ec;
    if (std::filesystem::is_directory(model, ec))
        throw io_error("model '" + model + "' is a directory; give an .onnx file or zoo:NAME");
    if (!std::filesystem::is_regular_file(model, ec))
        throw io_error("model '" + model + "': no such file, and not a zoo:NAME (see `rlflow zoo list`)");
}

/// Loads the graph a MODEL argument names. A zoo model gets seeded random weights (so
/// that what a command writes runs as it is) unless `weight_free`. Throws a rlflow::error
/// (exit code 2) when the zoo name is unknown, the path is not a file, the file cannot be
/// read or imported, or --batch is given for a file.
inline Graph load_model(const std::string& model, const ModelOptions& options) {
    if (model.starts_with(zoo_prefix)) {
        models::ZooOptions zoo;
        zoo.batch = options.batch.value_or(1);
        Graph g = models::build_zoo_model(std::string_view(model).substr(zoo_prefix.size()), zoo);
        if (!options.weight_free) exec::fill_random_weights(g, options.seed);
        return g;
    }
    check_model_file(model);
    const std::filesystem::path path(model);
    if (options.batch)
        throw precondition_error("--batch sets the batch of zoo models; bind a dimension of '" + model
                                 + "' with --dim NAME=SIZE");
    onnx_io::ImportOptions import;
    import.fold_constants = !options.no_fold;
    import.dim_values = options.dims;
    import.data_inputs = options.data_inputs;
    import.max_nodes = options.max_nodes;
    Graph g = onnx_io::load_onnx(path, import);
    for (const auto& [domain, version] : g.info().opset_imports)
        if ((domain.empty() || domain == "ai.onnx") && !onnx_io::supported_opset(version))
            std::fprintf(stderr, "warning: %s uses opset %lld; rlflow reads opsets %s, and an op whose meaning changed "
                         "outside them may be read wrongly\n", model.c_str(), static_cast<long long>(version),
                         onnx_io::supported_opset_range().c_str());
    return g;
}

}  // namespace rlflow::cli
