#pragma once
/// \file
/// Options of the ONNX importer.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow::onnx_io {

/// The doc_string that marks a graph input as a weight without data: the exporter
/// writes weights that have no data this way, and the importer reads them back as such.
inline constexpr std::string_view weight_marker = "rlflow:weight";

/// The node limit of an import (ImportOptions::max_nodes): ten times the largest graphs
/// rlflow is built to optimise (100,000 nodes).
inline constexpr std::size_t default_max_nodes = 1'000'000;

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
    /// Models with more nodes than this are refused before anything is built, so that a
    /// file cannot make rlflow spend unbounded time and memory (0: no limit).
    std::size_t max_nodes = default_max_nodes;
};

}  // namespace rlflow::onnx_io
