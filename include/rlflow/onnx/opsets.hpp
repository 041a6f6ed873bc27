#pragma once
/// \file
/// The default-domain (ai.onnx) opsets rlflow reads and writes: import maps each op by
/// the meaning it has in these opsets (including the attributes that became inputs in
/// 13 and 18), export writes any of them (`ExportOptions::opset`).

#include <cstdint>
#include <string>

namespace rlflow::onnx_io {

inline constexpr std::int64_t min_supported_opset = 11;
inline constexpr std::int64_t max_supported_opset = 18;

[[nodiscard]] constexpr bool supported_opset(std::int64_t opset) noexcept {
    return opset >= min_supported_opset && opset <= max_supported_opset;
}

/// "11-18", for messages.
[[nodiscard]] inline std::string supported_opset_range() {
    return std::to_string(min_supported_opset) + "-" + std::to_string(max_supported_opset);
}

}  // namespace rlflow::onnx_io
