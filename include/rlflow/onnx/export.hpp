#pragma once
/// \file
/// ONNX export: the graph IR as a standard ONNX model that keeps the original input and
/// output names, opset imports and model fields, checked by the ONNX checker and strict
/// shape inference, and written atomically.

#include <rlflow/core/atomic_file.hpp>
#include <rlflow/onnx/detail/exporter.hpp>
#include <rlflow/onnx/detail/inference.hpp>
#include <rlflow/onnx/export_options.hpp>

#include <onnx/checker.h>

#include <filesystem>
#include <google/protobuf/io/zero_copy_stream_impl.h>

namespace rlflow::onnx_io {

/// Runs the ONNX checker and strict shape inference (what Python's
/// `check_model(full_check=True)` does); throws onnx_error naming `source` on failure.
inline void check_model(const pb::ModelProto& model, const std::string& source) {
    try {
        ::onnx::checker::check_model(model);
    } catch (const std::exception& e) {
        throw onnx_error(source + ": the model fails the ONNX checker: " + e.what());
    }
    const detail::InferenceOutcome inferred = detail::infer_shapes(structure_only(model), true);
    if (!inferred.ok) throw onnx_error(source + ": the model fails the ONNX checker: " + inferred.error);
}

/// Converts `g` into a ModelProto (checked when options.check is set).
[[nodiscard]] inline pb::ModelProto export_model(const Graph& g, const ExportOptions& options = {}) {
    pb::ModelProto model = detail::Exporter(g, options).run();
    if (options.check) check_model(model, "exported model '" + g.info().graph_name + "'");
    return model;
}

/// Writes `model` to `path` through a temporary file and a rename, so a failure never
/// leaves a partial file.
inline void save_model(const pb::ModelProto& model, const std::filesystem::path& path) {
    write_file_atomically_with(path, [&](int fd) {
        google::protobuf::io::FileOutputStream stream(fd);
        return model.SerializeToZeroCopyStream(&stream) && stream.Flush();
    });
}

/// Exports `g` and writes it to `path` atomically (save_model).
inline void save_onnx(const Graph& g, const std::filesystem::path& path, const ExportOptions& options = {}) {
    save_model(export_model(g, options), path);
}

}  // namespace rlflow::onnx_io
