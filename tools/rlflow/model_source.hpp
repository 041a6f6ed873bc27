#pragma once
// Resolves a MODEL argument of the command line: `zoo:NAME` or a path to an .onnx file.

#include <rlflow/core/graph.hpp>
#include <rlflow/models/zoo.hpp>

#include <filesystem>
#include <string>

namespace rlflow::cli {

inline constexpr std::string_view zoo_prefix = "zoo:";

/// Loads the graph a MODEL argument names. Throws a rlflow::error (exit code 2) when the
/// zoo name is unknown or the file cannot be read.
inline Graph load_model(const std::string& model, std::int64_t batch) {
    if (model.starts_with(zoo_prefix)) {
        models::ZooOptions options;
        options.batch = batch;
        return models::build_zoo_model(std::string_view(model).substr(zoo_prefix.size()), options);
    }
    const std::filesystem::path path(model);
    if (!std::filesystem::exists(path))
        throw precondition_error("model '" + model + "': no such file, and not a zoo:NAME (see `rlflow zoo list`)");
    throw onnx_error(model + ": ONNX import is not available in this build yet");
}

}  // namespace rlflow::cli
