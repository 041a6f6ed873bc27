#pragma once
/// \file
/// ONNX import: a ModelProto (opsets 11-18, onnx/opsets.hpp) into the graph IR. Initializers become
/// weights with data, Constant nodes constants; static subgraphs (Shape, Gather, Slice,
/// Unsqueeze, Concat, ...) are folded; default-domain ops become core ops where that is
/// exact; everything else is carried as opaque nodes with its attributes and types.
/// Nothing is dropped, except constants that folding absorbed into attributes.

#include <rlflow/onnx/detail/importer.hpp>
#include <rlflow/onnx/import_options.hpp>

#include <fcntl.h>
#include <filesystem>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <unistd.h>
#include <limits>

namespace rlflow::onnx_io {

/// Parses serialised ModelProto bytes; throws onnx_error naming `source` if they are not
/// a model (garbage, truncated, or a model without a graph).
[[nodiscard]] inline pb::ModelProto parse_model(const std::string& bytes, const std::string& source) {
    pb::ModelProto model;
    if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
        throw onnx_error(source + ": larger than 2 GiB, which protobuf cannot parse");
    if (!model.ParseFromString(bytes)) throw onnx_error(source + ": not a valid ONNX model (protobuf parse failed)");
    if (!model.has_graph()) throw onnx_error(source + ": the model has no graph");
    return model;
}

/// Imports a parsed model; `source` names it in errors.
[[nodiscard]] inline Graph import_model(const pb::ModelProto& model, const ImportOptions& options = {},
                                        const std::string& source = "<model>") {
    return detail::Importer(model, options, source).run();
}

/// Reads and parses an .onnx file straight from disk (no intermediate copy of its bytes).
[[nodiscard]] inline pb::ModelProto read_model(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) throw onnx_error(path.string() + ": cannot open file");
    pb::ModelProto model;
    bool parsed = false;
    {
        google::protobuf::io::FileInputStream stream(fd);
        parsed = model.ParseFromZeroCopyStream(&stream);
    }
    ::close(fd);
    if (!parsed) throw onnx_error(path.string() + ": not a valid ONNX model (protobuf parse failed)");
    if (!model.has_graph()) throw onnx_error(path.string() + ": the model has no graph");
    return model;
}

/// Reads and imports an .onnx file.
[[nodiscard]] inline Graph load_onnx(const std::filesystem::path& path, const ImportOptions& options = {}) {
    pb::ModelProto model = read_model(path);
    return detail::Importer(model, options, path.string()).run();  // frees weight bytes as it reads them
}

}  // namespace rlflow::onnx_io
