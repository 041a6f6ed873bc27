#pragma once
/// \file
/// The forms ONNX Runtime runs some matrix products in (CanonicalCostBackend), so that
/// the ort backend prices every way of writing one kernel by one measurement:
/// - MatMul(A [d..., K], B [K, N]) runs as one GEMM over A's rows: the 2-D MatMul
///   [M, K] x [K, N], M the product of A's leading dimensions;
/// - MatMul + Add of a constant bias row, B a constant matrix, runs as one Gemm (ORT's
///   MatMulAddFusion, a basic-level fusion that reshapes a 3-D activation to its rows):
///   Gemm([M, K], B, bias [N]);
/// - Conv + Relu (Sigmoid, Tanh) is the fused convolution rlflow writes as that very pair
///   (unless fused convolutions are written as com.microsoft.FusedConv).
/// Measured in ORT 1.30 at level basic: the 12-layer transformer export and its variant
/// with every MatMul + Add written as Reshape + Gemm + Reshape profile the same GEMM
/// kernels (120 ms in both), while one-node prices of the two forms, measured minutes
/// apart, differed by 15% and made a search take the rewrite for an 18% gain.

#include <rlflow/core/op_traits.hpp>
#include <rlflow/cost/cost_backend.hpp>

#include <optional>

namespace rlflow::cost::detail {

/// A of MatMul(A, B) as its rows [M, K], when B is a matrix and A has rank 2 or more.
[[nodiscard]] inline std::optional<TensorType> matmul_rows(const OpSignature& matmul) {
    if (matmul.op != OpKind::MatMul || matmul.inputs.size() != 2) return std::nullopt;
    const TensorType& a = matmul.inputs[0];
    const TensorType& b = matmul.inputs[1];
    if (a.dtype != DType::Float32 || a.shape.rank() < 2 || b.shape.rank() != 2) return std::nullopt;
    const std::int64_t k = a.shape[a.shape.rank() - 1];
    if (k != b.shape[0] || k <= 0) return std::nullopt;
    return TensorType{a.dtype, Shape{a.shape.numel() / k, k}};
}

/// MatMul of a rank > 2 activation by a matrix, as the 2-D MatMul of its rows.
[[nodiscard]] inline std::optional<OwnedSignature> ort_matmul_as_rows(const OpSignature& op) {
    if (op.producer || op.inputs.empty() || op.inputs[0].shape.rank() <= 2) return std::nullopt;
    const std::optional<TensorType> rows = matmul_rows(op);
    if (!rows) return std::nullopt;
    OwnedSignature form{OpKind::MatMul, op.attributes, {*rows, op.inputs[1]}, {}, {}, {}};
    form.outputs.push_back(TensorType{rows->dtype, Shape{rows->shape[0], op.inputs[1].shape[1]}});
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
        form.constant_inputs.push_back(op.constant_input(i) ? 1 : 0);
        form.constant_values.push_back(i == 0 ? nullptr : op.constant_value(i));
    }
    return form;
}

/// Add(MatMul(A, B), bias), B a constant matrix [K, N] and bias a constant row of N that
/// does not widen the product, as the Gemm ORT fuses it into.
[[nodiscard]] inline std::optional<OwnedSignature> ort_matmul_bias_as_gemm(const OpSignature& op) {
    if (op.op != OpKind::Add || !op.producer || op.inputs.size() != 2 || op.producer_slot > 1) return std::nullopt;
    const OpSignature& matmul = *op.producer;
    const std::optional<TensorType> rows = matmul_rows(matmul);
    if (!rows || matmul.constant_input(0) || !matmul.constant_input(1)) return std::nullopt;
    const std::size_t bias_slot = 1 - op.producer_slot;
    const TensorType& bias = op.inputs[bias_slot];
    const std::int64_t n = matmul.inputs[1].shape[1];
    const bool row = bias.shape.rank() >= 1 && bias.shape.numel() == n && bias.shape[bias.shape.rank() - 1] == n;
    if (!op.constant_input(bias_slot) || !row || bias.dtype != rows->dtype || op.outputs.size() != 1
        || op.outputs[0] != matmul.outputs[0])
        return std::nullopt;
    const TensorType row_bias{bias.dtype, Shape{n}};
    const Tensor* bias_value = op.constant_value(bias_slot);
    OwnedSignature form{OpKind::Gemm, {}, {*rows, matmul.inputs[1], row_bias}, {}, {0, 1, 1}, {}};
    form.outputs.push_back(TensorType{rows->dtype, Shape{rows->shape[0], n}});
    form.constant_values = {nullptr, matmul.constant_value(1),
                            bias_value && bias_value->shape() == row_bias.shape ? bias_value : nullptr};
    op_traits(OpKind::Gemm).normalize(form.attributes, form.inputs, "Gemm (the form ORT runs MatMul + Add in)");
    return form;
}

/// Relu, Sigmoid or Tanh of a convolution's only output, as the fused convolution, which
/// the exporter writes as that same Conv + activation.
[[nodiscard]] inline std::optional<OwnedSignature> ort_conv_activation_as_fused(const OpSignature& op) {
    if (!op.producer || op.producer_slot != 0 || op.producer->op != OpKind::Conv2D || op.inputs.size() != 1)
        return std::nullopt;
    const Activation activation = activation_of(op.op);
    const OpSignature& conv = *op.producer;
    if (activation == Activation::None || conv.attributes.get_int("activation", 0) != 0) return std::nullopt;
    OwnedSignature form{OpKind::Conv2D,
                        conv.attributes,
                        {conv.inputs.begin(), conv.inputs.end()},
                        {op.outputs.begin(), op.outputs.end()},
                        {conv.constant_inputs.begin(), conv.constant_inputs.end()},
                        {conv.constant_values.begin(), conv.constant_values.end()}};
    form.attributes.set("activation", static_cast<std::int64_t>(activation));
    return form;
}

/// Which of the forms above hold for how a model is run and written.
struct OrtForms {
    /// MatMul + bias Add runs as Gemm (ORT fuses it at every level but disabled).
    bool matmul_bias_as_gemm = true;
    /// A fused convolution is written as Conv + activation (not com.microsoft.FusedConv),
    /// so it and the unfused pair are one model.
    bool conv_activation_apart = true;
};

/// The form ORT runs `op` in, or nullopt when it runs as it is.
[[nodiscard]] inline std::optional<OwnedSignature> ort_canonical(const OpSignature& op, const OrtForms& forms = {}) {
    if (forms.matmul_bias_as_gemm)
        if (auto gemm = ort_matmul_bias_as_gemm(op)) return gemm;
    if (forms.conv_activation_apart)
        if (auto fused = ort_conv_activation_as_fused(op)) return fused;
    return ort_matmul_as_rows(op);
}

}  // namespace rlflow::cost::detail
