#pragma once
/// \file
/// The ONNX column of the op table: for every op kind, how an ONNX node becomes it and
/// how it is written back. Indexed by OpKind like core's op_traits() and the executor's
/// kernel table; source and opaque nodes are handled by the importer and exporter.

#include <rlflow/onnx/detail/export_ops.hpp>
#include <rlflow/onnx/detail/import_ops.hpp>

#include <array>
#include <limits>

namespace rlflow::onnx_io::detail {

struct OnnxMapping {
    OpKind kind;
    ImportFn import;
    ExportFn write;
};

/// The input bound of import_direct for variadic ops (Concat): any input count.
inline constexpr std::size_t variadic_arity = std::numeric_limits<std::size_t>::max();

// clang-format off
inline constexpr std::array<OnnxMapping, op_kind_count> onnx_mapping{{
    {OpKind::Input, nullptr, nullptr},
    {OpKind::Weight, nullptr, nullptr},
    {OpKind::Constant, nullptr, nullptr},
    {OpKind::Conv2D, import_conv, export_conv},
    {OpKind::MatMul, import_direct<OpKind::MatMul, 2>, export_direct},
    {OpKind::Gemm, import_gemm, export_direct},
    {OpKind::Add, import_direct<OpKind::Add, 2>, export_direct},
    {OpKind::Sub, import_direct<OpKind::Sub, 2>, export_direct},
    {OpKind::Mul, import_direct<OpKind::Mul, 2>, export_direct},
    {OpKind::Div, import_direct<OpKind::Div, 2>, export_direct},
    {OpKind::Pow, import_direct<OpKind::Pow, 2>, export_direct},
    {OpKind::Relu, import_direct<OpKind::Relu, 1>, export_direct},
    {OpKind::Sigmoid, import_direct<OpKind::Sigmoid, 1>, export_direct},
    {OpKind::Tanh, import_direct<OpKind::Tanh, 1>, export_direct},
    {OpKind::Erf, import_direct<OpKind::Erf, 1>, export_direct},
    {OpKind::Sqrt, import_direct<OpKind::Sqrt, 1>, export_direct},
    {OpKind::Identity, import_direct<OpKind::Identity, 1>, export_direct},
    {OpKind::Clip, import_clip, export_clip},
    {OpKind::Softmax, import_softmax, export_softmax},
    {OpKind::MaxPool, import_pool<OpKind::MaxPool>, export_pool},
    {OpKind::AveragePool, import_pool<OpKind::AveragePool>, export_pool},
    {OpKind::GlobalAveragePool, import_direct<OpKind::GlobalAveragePool, 1>, export_direct},
    {OpKind::BatchNormalization, import_batch_norm, export_direct},
    {OpKind::LayerNormalization, import_layer_norm, export_layer_norm},
    {OpKind::Concat, import_direct<OpKind::Concat, variadic_arity>, export_direct},
    {OpKind::Split, import_split, export_split},
    {OpKind::Transpose, import_direct<OpKind::Transpose, 1>, export_direct},
    {OpKind::Reshape, import_reshape, export_reshape},
    {OpKind::Flatten, import_direct<OpKind::Flatten, 1>, export_direct},
    {OpKind::Pad, import_pad, export_pad},
    {OpKind::ReduceMean, import_reduce<OpKind::ReduceMean>, export_reduce},
    {OpKind::Enlarge, nullptr, export_enlarge},
    {OpKind::MergeGConv, nullptr, export_merge_gconv},
    {OpKind::HardSigmoid, import_direct<OpKind::HardSigmoid, 1>, export_direct},
    {OpKind::HardSwish, import_hard_swish, export_hard_swish},
    {OpKind::LeakyRelu, import_direct<OpKind::LeakyRelu, 1>, export_direct},
    {OpKind::Slice, import_slice, export_slice},
    {OpKind::ReduceSum, import_reduce<OpKind::ReduceSum>, export_reduce},
    {OpKind::ReduceMax, import_reduce<OpKind::ReduceMax>, export_reduce},
    {OpKind::Gelu, import_gelu, export_gelu},
    {OpKind::Resize, import_resize, export_resize},
    {OpKind::InstanceNormalization, import_instance_norm, export_direct},
    {OpKind::ConvTranspose, import_conv_transpose, export_direct},
    {OpKind::Expand, import_expand, export_expand},
    {OpKind::Gather, import_gather, export_direct},
    {OpKind::Where, import_direct<OpKind::Where, 3>, export_direct},
    {OpKind::Equal, import_direct<OpKind::Equal, 2>, export_direct},
    {OpKind::Less, import_direct<OpKind::Less, 2>, export_direct},
    {OpKind::Greater, import_direct<OpKind::Greater, 2>, export_direct},
    {OpKind::Not, import_direct<OpKind::Not, 1>, export_direct},
    {OpKind::And, import_direct<OpKind::And, 2>, export_direct},
    {OpKind::Or, import_direct<OpKind::Or, 2>, export_direct},
    {OpKind::Cast, import_cast, export_direct},
    {OpKind::Opaque, nullptr, nullptr},
}};
// clang-format on

constexpr bool onnx_mapping_is_indexed_by_kind() {
    for (std::size_t i = 0; i < onnx_mapping.size(); ++i)
        if (static_cast<std::size_t>(onnx_mapping[i].kind) != i) return false;
    return true;
}
static_assert(onnx_mapping_is_indexed_by_kind(), "onnx_mapping rows must be in OpKind order");

[[nodiscard]] constexpr const OnnxMapping& mapping_for(OpKind kind) noexcept {
    return onnx_mapping[static_cast<std::size_t>(kind)];
}

/// ONNX ops with no core kind of their own that a core op expresses exactly on static
/// shapes (they are written back as that core op).
struct OnnxAlias {
    std::string_view onnx_name;
    ImportFn import;
};
inline constexpr std::array<OnnxAlias, 4> onnx_aliases{{
    {"Dropout", import_dropout},
    {"Squeeze", import_squeeze},
    {"Unsqueeze", import_unsqueeze},
    {"Einsum", import_einsum},
}};

/// The import function for an ONNX op_type in the default domain, or nullptr.
[[nodiscard]] constexpr ImportFn import_for(std::string_view onnx_name) noexcept {
    if (const auto kind = op_kind_from_onnx(onnx_name)) return mapping_for(*kind).import;
    for (const auto& alias : onnx_aliases)
        if (alias.onnx_name == onnx_name) return alias.import;
    return nullptr;
}

}  // namespace rlflow::onnx_io::detail
