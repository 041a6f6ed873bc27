#pragma once
/// \file
/// Options of the ONNX importer.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow::onnx_io {

/// The doc_string that marks a graph input as a weight without data: the exporter
/// writes weights that have no data this way, and the importer reads them back as such.
inline constexpr std::string_view weight_marker = "rlflow:weight";

/// How to import a model.
struct ImportOptions {
    /// Fold subgraphs whose inputs are all constant or statically shaped.
    bool fold_constants = true;
    /// Values for symbolic dimensions of graph inputs (dim_param name -> size).
    std::map<std::string, std::int64_t> dim_values;
    /// When not empty, the graph inputs that carry data; every other non-initializer
    /// input is a parameter and becomes a weight without data (PyTorch exports made with
    /// export_params=False).
    std::vector<std::string> data_inputs;
};

}  // namespace rlflow::onnx_io
