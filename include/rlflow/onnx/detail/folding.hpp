#pragma once
/// \file
/// The static constant folder of the ONNX importer: evaluates a default-domain node whose
/// inputs are constants (or, for Shape and Size, merely statically typed) with exact ONNX
/// semantics for opsets 11 to 17, so that shape subgraphs of exported models collapse into
/// initializers. One table maps op names to evaluators; they live in fold_shape_ops.hpp and
/// fold_elementwise.hpp.

#include <rlflow/onnx/detail/fold_context.hpp>
#include <rlflow/onnx/detail/fold_elementwise.hpp>
#include <rlflow/onnx/detail/fold_math_ops.hpp>
#include <rlflow/onnx/detail/fold_shape_ops.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow::onnx_io::detail {

namespace folding {

using FoldFunction = FoldResult (*)(const FoldContext&);

/// One foldable op. `type_only` ops need their inputs' static types, not their values.
struct FoldOp {
    std::string_view op_type;
    FoldFunction evaluate;
    bool type_only = false;
};

/// Every op the folder evaluates.
inline constexpr FoldOp fold_ops[] = {
    {"Shape", &fold_shape_of, true},
    {"Size", &fold_size, true},
    {"Identity", &fold_identity},
    {"Constant", &fold_constant},
    {"ConstantOfShape", &fold_constant_of_shape},
    {"Gather", &fold_gather},
    {"GatherElements", &fold_gather_elements},
    {"Slice", &fold_slice},
    {"Unsqueeze", &fold_unsqueeze},
    {"Squeeze", &fold_squeeze},
    {"Concat", &fold_concat},
    {"Reshape", &fold_reshape},
    {"Transpose", &fold_transpose},
    {"Flatten", &fold_flatten},
    {"Expand", &fold_expand},
    {"Tile", &fold_tile},
    {"ScatterND", &fold_scatter_nd},
    {"Split", &fold_split},
    {"Cast", &fold_cast},
    {"CastLike", &fold_cast_like},
    {"Range", &fold_range},
    {"Where", &fold_where},
    {"Add", &fold_binary<AddOp>},
    {"Sub", &fold_binary<SubOp>},
    {"Mul", &fold_binary<MulOp>},
    {"Div", &fold_binary<DivOp>},
    {"Mod", &fold_mod},
    {"Pow", &fold_pow},
    {"Equal", &fold_binary<EqualOp>},
    {"Less", &fold_binary<LessOp>},
    {"Greater", &fold_binary<GreaterOp>},
    {"LessOrEqual", &fold_binary<LessOrEqualOp>},
    {"GreaterOrEqual", &fold_binary<GreaterOrEqualOp>},
    {"And", &fold_binary<AndOp>},
    {"Or", &fold_binary<OrOp>},
    {"Xor", &fold_binary<XorOp>},
    {"Min", &fold_variadic<MinOp>},
    {"Max", &fold_variadic<MaxOp>},
    {"Sum", &fold_variadic<AddOp>},
    {"Neg", &fold_unary<NegOp>},
    {"Abs", &fold_unary<AbsOp>},
    {"Sign", &fold_unary<SignOp>},
    {"Not", &fold_unary<NotOp>},
    {"Sqrt", &fold_unary<SqrtOp>},
    {"Reciprocal", &fold_unary<ReciprocalOp>},
    {"Floor", &fold_unary<FloorOp>},
    {"Ceil", &fold_unary<CeilOp>},
    {"Round", &fold_unary<RoundOp>},
    {"Erf", &fold_unary<ErfOp>},
    {"Exp", &fold_unary<ExpOp>},
    {"Log", &fold_unary<LogOp>},
    {"ReduceSum", &fold_reduce<ReduceSumOp>},
    {"ReduceProd", &fold_reduce<ReduceProdOp>},
    {"ReduceMean", &fold_reduce<ReduceMeanOp>},
    {"ReduceMax", &fold_reduce<ReduceMaxOp>},
    {"ReduceMin", &fold_reduce<ReduceMinOp>},
};

[[nodiscard]] inline const FoldOp* find_fold_op(std::string_view op_type) noexcept {
    const auto* found = std::find_if(std::begin(fold_ops), std::end(fold_ops),
                                     [op_type](const FoldOp& op) { return op.op_type == op_type; });
    return found == std::end(fold_ops) ? nullptr : found;
}

/// True when every present input is known well enough: constant, or typed with a static
/// shape for type-only ops.
[[nodiscard]] inline bool inputs_known(const pb::NodeProto& node, std::span<const FoldInput> inputs, bool type_only) {
    for (int i = 0; i < node.input_size(); ++i) {
        if (node.input(i).empty()) continue;
        const auto index = static_cast<std::size_t>(i);
        if (index >= inputs.size()) return false;
        if (inputs[index].value == nullptr && !(type_only && inputs[index].type)) return false;
    }
    return true;
}

}  // namespace folding

/// True if `op_type` (default ONNX domain) is one the folder can evaluate.
[[nodiscard]] inline bool is_foldable(std::string_view op_type) { return folding::find_fold_op(op_type) != nullptr; }

/// Evaluates `node` (default domain, opset `opset`) on constant inputs. Returns the output
/// tensors (one per node output, in order), or std::nullopt when it cannot fold (an input is
/// not constant — except Shape/Size which only need a static type —, an unsupported dtype or
/// attribute combination, or an output larger than max_fold_elements). Throws onnx_error
/// (message starting with `where` and naming node and op) for genuinely invalid nodes.
[[nodiscard]] inline std::optional<std::vector<Tensor>> fold_node(const pb::NodeProto& node,
                                                                  std::span<const FoldInput> inputs,
                                                                  std::int64_t opset, const std::string& where) {
    if (!node.domain().empty() && node.domain() != "ai.onnx") return std::nullopt;
    const folding::FoldOp* op = folding::find_fold_op(node.op_type());
    if (op == nullptr || !folding::inputs_known(node, inputs, op->type_only)) return std::nullopt;
    const folding::FoldContext context(node, inputs, opset, where);
    auto outputs = op->evaluate(context);
    if (outputs && outputs->size() != context.output_count())
        context.fail("has " + std::to_string(context.output_count()) + " outputs, expected "
                     + std::to_string(outputs->size()));
    return outputs;
}

}  // namespace rlflow::onnx_io::detail
