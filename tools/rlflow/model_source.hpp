#pragma once
// Resolves a MODEL argument of the command line: `zoo:NAME` or a path to an .onnx file.

#include <rlflow/core/graph.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/onnx/import.hpp>

#include <CLI/CLI.hpp>

#include <filesystem>
#include <map>
#include <string>

namespace rlflow::cli {

inline constexpr std::string_view zoo_prefix = "zoo:";

/// How a MODEL argument is loaded (shared by every command that takes one).
struct ModelOptions {
    std::int64_t batch = 1;
    std::map<std::string, std::int64_t> dims;
    std::vector<std::string> data_inputs;
    bool no_fold = false;
};

/// Adds the flags of ModelOptions to a command.
inline void add_model_flags(CLI::App& cmd, ModelOptions& options) {
    cmd.add_option("--batch", options.batch, "batch size for zoo models")->check(CLI::PositiveNumber);
    cmd.add_option("--dim", options.dims, "bind a symbolic ONNX dimension, NAME=SIZE (repeatable)");
    cmd.add_option("--data-inputs", options.data_inputs,
                   "ONNX graph inputs that carry data; every other input is a parameter (weight)");
    cmd.add_flag("--no-fold", options.no_fold, "do not fold static ONNX subgraphs");
}

/// Loads the graph a MODEL argument names. Throws a rlflow::error (exit code 2) when the
/// zoo name is unknown or the file cannot be read or imported.
inline Graph load_model(const std::string& model, const ModelOptions& options) {
    if (model.starts_with(zoo_prefix)) {
        models::ZooOptions zoo;
        zoo.batch = options.batch;
        return models::build_zoo_model(std::string_view(model).substr(zoo_prefix.size()), zoo);
    }
    const std::filesystem::path path(model);
    if (!std::filesystem::is_regular_file(path))
        throw io_error("model '" + model + "': no such file, and not a zoo:NAME (see `rlflow zoo list`)");
    onnx_io::ImportOptions import;
    import.fold_constants = !options.no_fold;
    import.dim_values = options.dims;
    import.data_inputs = options.data_inputs;
    return onnx_io::load_onnx(path, import);
}

}  // namespace rlflow::cli
