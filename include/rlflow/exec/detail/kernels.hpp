#pragma once
/// \file
/// The one kernel table of the reference executor: a float32 kernel per op kind, or for
/// the typed ops a kernel on tensors of any executable dtype, indexed by OpKind like
/// core's op table. The executor never switches on the op kind; it looks the kernel up here.

#include <rlflow/core/op_kind.hpp>
#include <rlflow/core/op_traits.hpp>
#include <rlflow/exec/detail/conv.hpp>
#include <rlflow/exec/detail/elementwise.hpp>
#include <rlflow/exec/detail/gemm.hpp>
#include <rlflow/exec/detail/layout.hpp>
#include <rlflow/exec/detail/normalization.hpp>
#include <rlflow/exec/detail/pool.hpp>
#include <rlflow/exec/detail/reduce.hpp>
#include <rlflow/exec/detail/typed.hpp>

#include <array>

namespace rlflow::detail {

/// Computes a node's outputs from its inputs.
using KernelFn = void (*)(const KernelArgs&);

/// One row of the kernel table: a float32 kernel, or (typed ops) a kernel on tensors.
struct KernelEntry {
    OpKind kind;
    KernelFn run;
    TypedKernelFn typed = nullptr;
};

/// Source nodes are bound to their data by the executor and never reach a kernel.
inline void source_kernel(const KernelArgs& args) {
    throw graph_error(args.node.describe() + ": a source node has no kernel");
}

/// The error for running an opaque op: it is carried, never interpreted.
[[nodiscard]] inline graph_error opaque_op_error(const Node& node) {
    return graph_error("cannot execute opaque op '" + std::string(node.op_label()) + "' in node '" + node.name
                       + "' (#" + std::to_string(node.id.value) + ")");
}

inline void opaque_kernel(const KernelArgs& args) { throw opaque_op_error(args.node); }

// clang-format off
/// View ops (Reshape, Flatten, Identity) are aliased by the executor; their entry is the
/// copy that computes the same values when a caller does not alias.
inline constexpr std::array<KernelEntry, op_kind_count> kernel_table{{
    {OpKind::Input, source_kernel},
    {OpKind::Weight, source_kernel},
    {OpKind::Constant, source_kernel},
    {OpKind::Conv2D, conv_kernel},
    {OpKind::MatMul, matmul_kernel},
    {OpKind::Gemm, gemm_kernel},
    {OpKind::Add, binary_kernel<AddFn>},
    {OpKind::Sub, binary_kernel<SubFn>},
    {OpKind::Mul, binary_kernel<MulFn>},
    {OpKind::Div, binary_kernel<DivFn>},
    {OpKind::Pow, binary_kernel<PowFn>},
    {OpKind::Relu, unary_kernel<apply_relu>},
    {OpKind::Sigmoid, unary_kernel<apply_sigmoid>},
    {OpKind::Tanh, unary_kernel<apply_tanh>},
    {OpKind::Erf, unary_kernel<apply_erf>},
    {OpKind::Sqrt, unary_kernel<apply_sqrt>},
    {OpKind::Identity, copy_kernel},
    {OpKind::Clip, clip_kernel},
    {OpKind::Softmax, softmax_kernel},
    {OpKind::MaxPool, max_pool_kernel},
    {OpKind::AveragePool, average_pool_kernel},
    {OpKind::GlobalAveragePool, global_average_pool_kernel},
    {OpKind::BatchNormalization, batch_norm_kernel},
    {OpKind::LayerNormalization, layer_norm_kernel},
    {OpKind::Concat, concat_kernel},
    {OpKind::Split, split_kernel},
    {OpKind::Transpose, transpose_kernel},
    {OpKind::Reshape, copy_kernel},
    {OpKind::Flatten, copy_kernel},
    {OpKind::Pad, pad_kernel},
    {OpKind::ReduceMean, reduce_kernel<MeanReduction>},
    {OpKind::Enlarge, enlarge_kernel},
    {OpKind::MergeGConv, merge_gconv_kernel},
    {OpKind::HardSigmoid, hard_sigmoid_kernel},
    {OpKind::HardSwish, hard_swish_kernel},
    {OpKind::LeakyRelu, leaky_relu_kernel},
    {OpKind::Slice, slice_kernel},
    {OpKind::ReduceSum, reduce_kernel<SumReduction>},
    {OpKind::ReduceMax, reduce_kernel<MaxReduction>},
    {OpKind::Gelu, gelu_kernel},
    {OpKind::Resize, resize_kernel},
    {OpKind::InstanceNormalization, instance_norm_kernel},
    {OpKind::ConvTranspose, conv_transpose_kernel},
    {OpKind::Expand, nullptr, expand_kernel},
    {OpKind::Gather, nullptr, gather_kernel},
    {OpKind::Where, nullptr, where_kernel},
    {OpKind::Equal, nullptr, typed_binary_kernel<typed::EqualOp>},
    {OpKind::Less, nullptr, typed_binary_kernel<typed::LessOp>},
    {OpKind::Greater, nullptr, typed_binary_kernel<typed::GreaterOp>},
    {OpKind::Not, nullptr, not_kernel},
    {OpKind::And, nullptr, typed_binary_kernel<typed::AndOp>},
    {OpKind::Or, nullptr, typed_binary_kernel<typed::OrOp>},
    {OpKind::Cast, nullptr, cast_kernel},
    {OpKind::Opaque, opaque_kernel},
}};
// clang-format on

constexpr bool kernel_table_is_indexed_by_kind() {
    for (std::size_t i = 0; i < kernel_table.size(); ++i)
        if (static_cast<std::size_t>(kernel_table[i].kind) != i) return false;
    return true;
}
static_assert(kernel_table_is_indexed_by_kind(), "kernel_table rows must be in OpKind order");

/// Every row has exactly one kernel, and the typed ones are the typed ops'.
constexpr bool kernel_table_has_one_kernel_per_row() {
    for (const auto& row : kernel_table)
        if ((row.run == nullptr) == (row.typed == nullptr) || (row.typed != nullptr) != is_typed_compute(row.kind))
            return false;
    return true;
}
static_assert(kernel_table_has_one_kernel_per_row(), "kernel_table: one kernel per row, typed for the typed ops");

/// The float32 kernel of `kind` (nullptr for a typed op: see typed_kernel_for).
[[nodiscard]] constexpr KernelFn kernel_for(OpKind kind) noexcept {
    return kernel_table[static_cast<std::size_t>(kind)].run;
}

/// The tensor kernel of a typed op (nullptr for the others).
[[nodiscard]] constexpr TypedKernelFn typed_kernel_for(OpKind kind) noexcept {
    return kernel_table[static_cast<std::size_t>(kind)].typed;
}

}  // namespace rlflow::detail
