#pragma once
/// \file
/// Options of the ONNX exporter.

#include <cstdint>

namespace rlflow::onnx_io {

/// How to export a graph.
struct ExportOptions {
    /// Write fused convolutions as ONNX Runtime's com.microsoft.FusedConv instead of
    /// Conv followed by the activation.
    bool fused_conv_microsoft = false;
    /// Check the model with the ONNX checker and strict shape inference before writing.
    bool check = true;
    /// The default-domain opset to write; 0 keeps the graph's own.
    std::int64_t opset = 0;
};

}  // namespace rlflow::onnx_io
