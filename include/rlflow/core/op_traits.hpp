#pragma once
/// \file
/// The one op-traits table: for every op kind its name, ONNX name, arity, attribute
/// schema, attribute normalisation, shape inference, FLOPs and bytes moved. Every other
/// part of rlflow (graph, executor, ONNX, costs, rewriting) reads op properties from here
/// rather than switching on the op kind.

#include <rlflow/core/detail/op_definitions.hpp>
#include <rlflow/core/detail/typed_op_definitions.hpp>
#include <rlflow/core/op_kind.hpp>

#include <array>
#include <optional>
#include <span>
#include <string_view>

namespace rlflow {

/// One attribute an op accepts.
struct AttributeSpec {
    std::string_view name;
    AttributeType type;
    bool required = false;
};

/// Properties of an op kind that are not about one node.
enum OpFlag : std::uint8_t {
    op_flag_none = 0,
    /// Input, Weight, Constant: no inputs, outputs given rather than inferred.
    op_flag_source = 1,
    /// Output aliases the input's memory (no data moved): Reshape, Flatten, Identity.
    op_flag_view = 2,
    /// Output element i depends only on input elements at i (after broadcasting).
    op_flag_elementwise = 4,
    /// Swapping the two inputs gives the same result.
    op_flag_commutative = 8,
    /// Not interpreted: carried with its stored attributes and shapes.
    op_flag_opaque = 16,
    /// A matrix product or convolution whose output a runtime may post-process in the same
    /// kernel (bias, scale, activation, normalisation): ONNX Runtime's MatMul + Add -> Gemm,
    /// Conv + Add/Mul/BatchNormalization, Conv + activation fusions.
    op_flag_fusion_head = 32,
    /// An op a runtime may fold into the kernel of the fusion head before it: the
    /// element-wise ops and BatchNormalization.
    op_flag_fusion_tail = 64,
    /// Computes on int32, int64 and bool tensors as well as float32 (the typed ops, and
    /// the views, which carry any of them): its inference checks the element types, and
    /// the executor runs it on tensors of any executable dtype.
    op_flag_typed = 128,
};

/// The traits of one op kind.
struct OpTraits {
    using NormalizeFn = void (*)(Attributes&, std::span<const TensorType> inputs, std::string_view where);
    using InferFn = std::vector<TensorType> (*)(const OpContext&);
    using FlopsFn = double (*)(const OpContext&);

    OpKind kind;
    std::string_view name;
    /// ONNX op_type in the default domain, or empty if the op has no ONNX counterpart.
    std::string_view onnx_name;
    int min_inputs;
    /// -1: any number.
    int max_inputs;
    std::span<const AttributeSpec> attributes;
    /// Fills defaults and brings attributes to one canonical form.
    NormalizeFn normalize;
    /// Output types from input types and attributes; throws shape_error.
    InferFn infer;
    /// Floating-point operations for one execution.
    FlopsFn flops;
    std::uint8_t flags = op_flag_none;
    /// Bit i set: input i must be strictly positive (e.g. a variance), for random fills.
    std::uint8_t positive_inputs = 0;

    [[nodiscard]] constexpr bool has(OpFlag f) const noexcept { return (flags & f) != 0; }
};

namespace detail {

using A = AttributeSpec;
using T = AttributeType;
inline constexpr A conv_attrs[] = {{"kernel_shape", T::Ints}, {"strides", T::Ints}, {"pads", T::Ints},
                                   {"dilations", T::Ints}, {"group", T::Int}, {"activation", T::Int}};
inline constexpr A gemm_attrs[] = {{"alpha", T::Float}, {"beta", T::Float}, {"transA", T::Int}, {"transB", T::Int}};
inline constexpr A clip_attrs[] = {{"min", T::Float}, {"max", T::Float}};
inline constexpr A axis_attrs[] = {{"axis", T::Int}};
inline constexpr A concat_attrs[] = {{"axis", T::Int, true}};
inline constexpr A maxpool_attrs[] = {{"kernel_shape", T::Ints, true}, {"strides", T::Ints}, {"pads", T::Ints},
                                      {"dilations", T::Ints}, {"ceil_mode", T::Int}};
inline constexpr A avgpool_attrs[] = {{"kernel_shape", T::Ints, true}, {"strides", T::Ints}, {"pads", T::Ints},
                                      {"dilations", T::Ints}, {"ceil_mode", T::Int}, {"count_include_pad", T::Int}};
inline constexpr A epsilon_attrs[] = {{"epsilon", T::Float}};
inline constexpr A layernorm_attrs[] = {{"axis", T::Int}, {"epsilon", T::Float}};
inline constexpr A split_attrs[] = {{"axis", T::Int}, {"split", T::Ints, true}};
inline constexpr A transpose_attrs[] = {{"perm", T::Ints}};
inline constexpr A reshape_attrs[] = {{"shape", T::Ints, true}, {"allowzero", T::Int}};
inline constexpr A pad_attrs[] = {{"pads", T::Ints, true}, {"mode", T::String}, {"value", T::Float}};
inline constexpr A reduce_attrs[] = {{"axes", T::Ints}, {"keepdims", T::Int}};
inline constexpr A enlarge_attrs[] = {{"kernel_shape", T::Ints, true}};
inline constexpr A hard_sigmoid_attrs[] = {{"alpha", T::Float}, {"beta", T::Float}};
inline constexpr A alpha_attrs[] = {{"alpha", T::Float}};
inline constexpr A slice_attrs[] = {{"starts", T::Ints, true}, {"ends", T::Ints, true}, {"steps", T::Ints}};
inline constexpr A conv_transpose_attrs[] = {{"kernel_shape", T::Ints}, {"strides", T::Ints}, {"pads", T::Ints},
                                             {"dilations", T::Ints}, {"group", T::Int}, {"output_padding", T::Ints}};
inline constexpr A gelu_attrs[] = {{"approximate", T::String}};
inline constexpr A resize_attrs[] = {{"mode", T::String}, {"coordinate_transformation_mode", T::String},
                                     {"nearest_mode", T::String}, {"scales", T::Floats}, {"sizes", T::Ints}};
inline constexpr A expand_attrs[] = {{"shape", T::Ints, true}};
inline constexpr A cast_attrs[] = {{"to", T::Int, true}};
inline constexpr A merge_gconv_attrs[] = {{"count", T::Int, true}, {"group", T::Int, true}};
inline constexpr std::span<const A> none{};

constexpr std::uint8_t ew = op_flag_elementwise | op_flag_fusion_tail;
constexpr std::uint8_t ew_comm = op_flag_elementwise | op_flag_commutative | op_flag_fusion_tail;
constexpr std::uint8_t head = op_flag_fusion_head;
constexpr std::uint8_t typed_op = op_flag_typed;
constexpr std::uint8_t typed_view = op_flag_view | op_flag_typed;

// clang-format off
inline constexpr std::array<OpTraits, op_kind_count> op_table{{
 {OpKind::Input, "Input", "", 0, 0, none, no_normalize, keep_outputs, no_flops, op_flag_source},
 {OpKind::Weight, "Weight", "", 0, 0, none, no_normalize, keep_outputs, no_flops, op_flag_source},
 {OpKind::Constant, "Constant", "Constant", 0, 0, none, no_normalize, keep_outputs, no_flops, op_flag_source},
 {OpKind::Conv2D, "Conv2D", "Conv", 2, 3, conv_attrs, ConvOp::normalize, ConvOp::infer, ConvOp::flops, head},
 {OpKind::MatMul, "MatMul", "MatMul", 2, 2, none, no_normalize, MatMulOp::infer, MatMulOp::flops, head},
 {OpKind::Gemm, "Gemm", "Gemm", 2, 3, gemm_attrs, GemmOp::normalize, GemmOp::infer, GemmOp::flops, head},
 {OpKind::Add, "Add", "Add", 2, 2, none, no_normalize, BinaryOp::infer, elementwise_flops, ew_comm},
 {OpKind::Sub, "Sub", "Sub", 2, 2, none, no_normalize, BinaryOp::infer, elementwise_flops, ew},
 {OpKind::Mul, "Mul", "Mul", 2, 2, none, no_normalize, BinaryOp::infer, elementwise_flops, ew_comm},
 {OpKind::Div, "Div", "Div", 2, 2, none, no_normalize, BinaryOp::infer, elementwise_flops, ew},
 {OpKind::Pow, "Pow", "Pow", 2, 2, none, no_normalize, BinaryOp::infer, elementwise_flops, ew},
 {OpKind::Relu, "Relu", "Relu", 1, 1, none, no_normalize, UnaryOp::infer, elementwise_flops, ew},
 {OpKind::Sigmoid, "Sigmoid", "Sigmoid", 1, 1, none, no_normalize, UnaryOp::infer, elementwise_flops, ew},
 {OpKind::Tanh, "Tanh", "Tanh", 1, 1, none, no_normalize, UnaryOp::infer, elementwise_flops, ew},
 {OpKind::Erf, "Erf", "Erf", 1, 1, none, no_normalize, UnaryOp::infer, elementwise_flops, ew},
 {OpKind::Sqrt, "Sqrt", "Sqrt", 1, 1, none, no_normalize, UnaryOp::infer, elementwise_flops, ew},
 {OpKind::Identity, "Identity", "Identity", 1, 1, none, no_normalize, UnaryOp::infer, no_flops, typed_view},
 {OpKind::Clip, "Clip", "Clip", 1, 1, clip_attrs, ClipOp::normalize, UnaryOp::infer, elementwise_flops, ew},
 {OpKind::Softmax, "Softmax", "Softmax", 1, 1, axis_attrs, SoftmaxOp::normalize, SoftmaxOp::infer, SoftmaxOp::flops},
 {OpKind::MaxPool, "MaxPool", "MaxPool", 1, 1, maxpool_attrs, PoolOp::normalize, PoolOp::infer, PoolOp::flops},
 {OpKind::AveragePool, "AveragePool", "AveragePool", 1, 1, avgpool_attrs, PoolOp::normalize_average, PoolOp::infer, PoolOp::flops},
 {OpKind::GlobalAveragePool, "GlobalAveragePool", "GlobalAveragePool", 1, 1, none, no_normalize, GlobalAveragePoolOp::infer, GlobalAveragePoolOp::flops},
 {OpKind::BatchNormalization, "BatchNormalization", "BatchNormalization", 5, 5, epsilon_attrs, BatchNormOp::normalize, BatchNormOp::infer, BatchNormOp::flops, op_flag_fusion_tail, 1u << 4},
 {OpKind::LayerNormalization, "LayerNormalization", "LayerNormalization", 2, 3, layernorm_attrs, LayerNormOp::normalize, LayerNormOp::infer, LayerNormOp::flops},
 {OpKind::Concat, "Concat", "Concat", 1, -1, concat_attrs, ConcatOp::normalize, ConcatOp::infer, no_flops},
 {OpKind::Split, "Split", "Split", 1, 1, split_attrs, SplitOp::normalize, SplitOp::infer, no_flops},
 {OpKind::Transpose, "Transpose", "Transpose", 1, 1, transpose_attrs, TransposeOp::normalize, TransposeOp::infer, no_flops},
 {OpKind::Reshape, "Reshape", "Reshape", 1, 1, reshape_attrs, ReshapeOp::normalize, ReshapeOp::infer, no_flops, typed_view},
 {OpKind::Flatten, "Flatten", "Flatten", 1, 1, axis_attrs, FlattenOp::normalize, FlattenOp::infer, no_flops, typed_view},
 {OpKind::Pad, "Pad", "Pad", 1, 1, pad_attrs, PadOp::normalize, PadOp::infer, no_flops},
 {OpKind::ReduceMean, "ReduceMean", "ReduceMean", 1, 1, reduce_attrs, ReduceOp::normalize, ReduceOp::infer, ReduceOp::flops},
 {OpKind::Enlarge, "Enlarge", "", 1, 1, enlarge_attrs, no_normalize, EnlargeOp::infer, no_flops},
 {OpKind::MergeGConv, "MergeGConv", "", 1, 1, merge_gconv_attrs, no_normalize, MergeGConvOp::infer, no_flops},
 {OpKind::HardSigmoid, "HardSigmoid", "HardSigmoid", 1, 1, hard_sigmoid_attrs, HardSigmoidOp::normalize, UnaryOp::infer, elementwise_flops, ew},
 {OpKind::HardSwish, "HardSwish", "HardSwish", 1, 1, none, no_normalize, UnaryOp::infer, elementwise_flops, ew},
 {OpKind::LeakyRelu, "LeakyRelu", "LeakyRelu", 1, 1, alpha_attrs, LeakyReluOp::normalize, UnaryOp::infer, elementwise_flops, ew},
 {OpKind::Slice, "Slice", "Slice", 1, 1, slice_attrs, SliceOp::normalize, SliceOp::infer, no_flops},
 {OpKind::ReduceSum, "ReduceSum", "ReduceSum", 1, 1, reduce_attrs, ReduceOp::normalize, ReduceOp::infer, ReduceOp::flops},
 {OpKind::ReduceMax, "ReduceMax", "ReduceMax", 1, 1, reduce_attrs, ReduceOp::normalize, ReduceOp::infer, ReduceOp::flops},
 {OpKind::Gelu, "Gelu", "Gelu", 1, 1, gelu_attrs, GeluOp::normalize, UnaryOp::infer, GeluOp::flops, ew},
 {OpKind::Resize, "Resize", "Resize", 1, 1, resize_attrs, ResizeOp::normalize, ResizeOp::infer, ResizeOp::flops},
 {OpKind::InstanceNormalization, "InstanceNormalization", "InstanceNormalization", 3, 3, epsilon_attrs, InstanceNormOp::normalize, InstanceNormOp::infer, InstanceNormOp::flops},
 {OpKind::ConvTranspose, "ConvTranspose", "ConvTranspose", 2, 3, conv_transpose_attrs, ConvTransposeOp::normalize, ConvTransposeOp::infer, ConvTransposeOp::flops},
 {OpKind::Expand, "Expand", "Expand", 1, 1, expand_attrs, no_normalize, ExpandOp::infer, no_flops, typed_op},
 {OpKind::Gather, "Gather", "Gather", 2, 2, axis_attrs, GatherOp::normalize, GatherOp::infer, no_flops, typed_op},
 {OpKind::Where, "Where", "Where", 3, 3, none, no_normalize, WhereOp::infer, elementwise_flops, typed_op},
 {OpKind::Equal, "Equal", "Equal", 2, 2, none, no_normalize, CompareOp<true>::infer, elementwise_flops, typed_op | op_flag_commutative},
 {OpKind::Less, "Less", "Less", 2, 2, none, no_normalize, CompareOp<false>::infer, elementwise_flops, typed_op},
 {OpKind::Greater, "Greater", "Greater", 2, 2, none, no_normalize, CompareOp<false>::infer, elementwise_flops, typed_op},
 {OpKind::Not, "Not", "Not", 1, 1, none, no_normalize, NotOp::infer, elementwise_flops, typed_op},
 {OpKind::And, "And", "And", 2, 2, none, no_normalize, LogicalOp::infer, elementwise_flops, typed_op | op_flag_commutative},
 {OpKind::Or, "Or", "Or", 2, 2, none, no_normalize, LogicalOp::infer, elementwise_flops, typed_op | op_flag_commutative},
 {OpKind::Cast, "Cast", "Cast", 1, 1, cast_attrs, no_normalize, CastOp::infer, elementwise_flops, typed_op},
 {OpKind::Opaque, "Opaque", "", 0, -1, none, no_normalize, keep_outputs, no_flops, op_flag_opaque},
}};
// clang-format on

constexpr bool table_is_indexed_by_kind() {
    for (std::size_t i = 0; i < op_table.size(); ++i)
        if (static_cast<std::size_t>(op_table[i].kind) != i) return false;
    return true;
}
static_assert(table_is_indexed_by_kind(), "op_table rows must be in OpKind order");

}  // namespace detail

/// The traits of `kind`.
[[nodiscard]] constexpr const OpTraits& op_traits(OpKind kind) noexcept {
    return detail::op_table[static_cast<std::size_t>(kind)];
}

/// A typed op that computes (not a view): its kernel takes tensors of any executable dtype.
[[nodiscard]] constexpr bool is_typed_compute(OpKind kind) noexcept {
    const OpTraits& t = op_traits(kind);
    return t.has(op_flag_typed) && !t.has(op_flag_view);
}

/// Whether a node of `kind` may hold (take and give) tensors of `dtype`: float32 always;
/// int32, int64 and bool in sources, typed ops and views.
[[nodiscard]] constexpr bool holds_dtype(OpKind kind, DType dtype) noexcept {
    if (dtype == DType::Float32) return true;
    const OpTraits& t = op_traits(kind);
    return is_executable_dtype(dtype) && (t.has(op_flag_typed) || t.has(op_flag_source));
}

/// Our name of `kind` ("Conv2D").
[[nodiscard]] constexpr std::string_view op_name(OpKind kind) noexcept { return op_traits(kind).name; }

/// The op kind named `name` (our name, e.g. "Conv2D"), if any.
[[nodiscard]] constexpr std::optional<OpKind> op_kind_from_name(std::string_view name) noexcept {
    for (const auto& t : detail::op_table)
        if (t.name == name) return t.kind;
    return std::nullopt;
}

/// The core op kind for an ONNX op_type in the default domain, if it has one.
[[nodiscard]] constexpr std::optional<OpKind> op_kind_from_onnx(std::string_view onnx_name) noexcept {
    if (onnx_name.empty()) return std::nullopt;
    for (const auto& t : detail::op_table)
        if (t.onnx_name == onnx_name) return t.kind;
    return std::nullopt;
}

/// Bytes an op reads and writes: every input and output once, none for views and sources.
[[nodiscard]] inline double op_bytes(const OpTraits& traits, std::span<const TensorType> inputs,
                                     std::span<const TensorType> outputs) noexcept {
    if (traits.has(op_flag_view) || traits.has(op_flag_source)) return 0.0;
    double bytes = 0;
    for (const auto& t : inputs) bytes += static_cast<double>(t.bytes());
    for (const auto& t : outputs) bytes += static_cast<double>(t.bytes());
    return bytes;
}

}  // namespace rlflow
