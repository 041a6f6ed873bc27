#pragma once
/// \file
/// How the cuDNN profiler states an op as a cuDNN or cuBLAS problem: int dimensions,
/// convolution and pooling windows, the row-major GEMM an op runs, and which cuDNN call
/// stands in for an op cuDNN has no call for. Shapes only; nothing here touches a device.

#include <rlflow/core/op_kind.hpp>
#include <rlflow/core/shape.hpp>
#include <rlflow/cost/cost_backend.hpp>
#include <rlflow/cost/detail/cuda_resources.hpp>

#include <algorithm>
#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

namespace rlflow::cost::detail {

/// The dimensions of `shape` as ints, with leading ones up to `rank` (numpy alignment).
[[nodiscard]] inline std::vector<int> int_dims(const Shape& shape, int rank = 0) {
    std::vector<int> dims(static_cast<std::size_t>(std::max(0, rank - shape.rank())), 1);
    for (const std::int64_t d : shape.dims()) dims.push_back(to_int(d));
    return dims;
}

/// `x` with the reduced axes set to 1 (the keepdims form of a mean); no axes means all.
[[nodiscard]] inline Shape keepdims_shape(const Shape& x, std::span<const std::int64_t> axes) {
    Shape kept = x;
    for (int i = 0; i < x.rank(); ++i)
        if (axes.empty() || std::find(axes.begin(), axes.end(), i) != axes.end()) kept[i] = 1;
    return kept;
}

/// The axes first, first + 1, ..., rank - 1.
[[nodiscard]] inline std::vector<std::int64_t> trailing_axes(int first, int rank) {
    std::vector<std::int64_t> axes(static_cast<std::size_t>(std::max(0, rank - first)));
    std::iota(axes.begin(), axes.end(), first);
    return axes;
}

/// A convolution or pooling window as cuDNN takes it: (height, width) pairs.
struct Window2d {
    std::array<int, 2> kernel{1, 1}, pads{0, 0}, strides{1, 1}, dilations{1, 1};
    friend auto operator<=>(const Window2d&, const Window2d&) = default;
};

/// The window of a Conv2D or pool node. cuDNN pads both ends of an axis alike, so an
/// asymmetric ONNX pad [top, left, bottom, right] is timed with the rounded-up mean of
/// its two ends; the output then differs by at most one row or column.
[[nodiscard]] inline Window2d window_2d(const Attributes& attributes) {
    const auto& kernel = attributes.get_ints("kernel_shape");
    const auto& pads = attributes.get_ints("pads");
    const auto& strides = attributes.get_ints("strides");
    const auto& dilations = attributes.get_ints("dilations");
    Window2d w;
    for (std::size_t i = 0; i < 2; ++i) {
        w.kernel[i] = to_int(kernel[i]);
        w.pads[i] = to_int((pads[i] + pads[i + 2] + 1) / 2);
        w.strides[i] = to_int(strides[i]);
        w.dilations[i] = to_int(dilations[i]);
    }
    return w;
}

/// One convolution as cuDNN sees it; also the key of the memoised algorithm choice.
struct ConvGeometry {
    /// (N, C, H, W) and (M, C / group, kh, kw).
    std::array<int, 4> input{}, filter{};
    Window2d window;
    int group = 1;
    friend auto operator<=>(const ConvGeometry&, const ConvGeometry&) = default;
};

[[nodiscard]] inline ConvGeometry conv_geometry(const OpSignature& op) {
    ConvGeometry g;
    const std::vector<int> input = int_dims(op.inputs[0].shape), filter = int_dims(op.inputs[1].shape);
    std::copy_n(input.begin(), 4, g.input.begin());
    std::copy_n(filter.begin(), 4, g.filter.begin());
    g.window = window_2d(op.attributes);
    g.group = to_int(op.attributes.get_int("group", 1));
    return g;
}

/// The forward algorithm cudnnFindConvolutionForwardAlgorithmEx chose, with the math type
/// it is timed with (one the profiler's math mode allows) and the workspace it ran with.
struct ConvAlgorithm {
    cudnnConvolutionFwdAlgo_t algorithm = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
    std::size_t workspace_bytes = 0;
};

/// A row-major, possibly batched product C (m, n) = alpha op(A) op(B).
struct GemmCall {
    bool transpose_a = false, transpose_b = false;
    int m = 1, n = 1, k = 1;
    /// Leading dimensions: the column counts of A and B as stored.
    int lda = 1, ldb = 1;
    int batch = 1;
    /// Elements between consecutive matrices of a batch; 0 repeats one (broadcasting).
    long long stride_a = 0, stride_b = 0;
    float alpha = 1.0F;
    /// Bytes of A and B as stored, and of C.
    std::size_t a_bytes = 0, b_bytes = 0, c_bytes = 0;
};

/// MatMul with numpy semantics: a vector operand is a one-row (A) or one-column (B)
/// matrix, and batch dimensions broadcast. An operand holding every batch matrix steps
/// through them; one broadcast over the batch repeats its matrix with stride 0. (An
/// operand broadcast along only some batch dimensions, a (2,1) batch against a (1,3) one,
/// is read with stride 0 too: the same FLOPs, fewer bytes read.)
[[nodiscard]] inline GemmCall matmul_call(const OpSignature& op) {
    Shape a = op.inputs[0].shape, b = op.inputs[1].shape;
    if (a.rank() == 1) a = Shape{1, a[0]};
    if (b.rank() == 1) b = Shape{b[0], 1};
    const auto batch_of = [](const Shape& s) { return Shape(s.dims().first(static_cast<std::size_t>(s.rank() - 2))); };
    const auto batch = broadcast_shapes(batch_of(a), batch_of(b));
    RLFLOW_ASSERT(batch.has_value());
    GemmCall g;
    g.m = to_int(a.dim(-2));
    g.k = to_int(a.dim(-1));
    g.n = to_int(b.dim(-1));
    g.lda = g.k;
    g.ldb = g.n;
    g.batch = to_int(batch->numel());
    g.stride_a = batch_of(a).numel() == batch->numel() ? static_cast<long long>(g.m) * g.k : 0;
    g.stride_b = batch_of(b).numel() == batch->numel() ? static_cast<long long>(g.k) * g.n : 0;
    g.a_bytes = static_cast<std::size_t>(a.numel()) * sizeof(float);
    g.b_bytes = static_cast<std::size_t>(b.numel()) * sizeof(float);
    g.c_bytes = static_cast<std::size_t>(batch->numel() * g.m * g.n) * sizeof(float);
    return g;
}

/// ONNX Gemm without its bias: alpha op(A) op(B) over rank-2 operands.
[[nodiscard]] inline GemmCall gemm_call(const OpSignature& op) {
    const Shape& a = op.inputs[0].shape;
    const Shape& b = op.inputs[1].shape;
    GemmCall g;
    g.transpose_a = op.attributes.get_int("transA", 0) != 0;
    g.transpose_b = op.attributes.get_int("transB", 0) != 0;
    g.m = to_int(g.transpose_a ? a[1] : a[0]);
    g.k = to_int(g.transpose_a ? a[0] : a[1]);
    g.n = to_int(g.transpose_b ? b[0] : b[1]);
    g.lda = to_int(a[1]);
    g.ldb = to_int(b[1]);
    g.alpha = static_cast<float>(op.attributes.get_float("alpha", 1.0));
    g.a_bytes = static_cast<std::size_t>(a.numel()) * sizeof(float);
    g.b_bytes = static_cast<std::size_t>(b.numel()) * sizeof(float);
    g.c_bytes = static_cast<std::size_t>(g.m) * static_cast<std::size_t>(g.n) * sizeof(float);
    return g;
}

/// The cuDNN activation that times a unary op. Erf has none, so tanh stands in: the same
/// bytes and one transcendental per element. Clip is a clipped ReLU, and so are
/// HardSigmoid and HardSwish (a clamp of a linear function); LeakyRelu times as ReLU.
[[nodiscard]] constexpr cudnnActivationMode_t activation_mode(OpKind op) noexcept {
    switch (op) {
        case OpKind::Relu:
        case OpKind::LeakyRelu: return CUDNN_ACTIVATION_RELU;
        case OpKind::HardSigmoid:
        case OpKind::HardSwish: return CUDNN_ACTIVATION_CLIPPED_RELU;
        case OpKind::Sigmoid: return CUDNN_ACTIVATION_SIGMOID;
        case OpKind::Clip: return CUDNN_ACTIVATION_CLIPPED_RELU;
        case OpKind::Identity: return CUDNN_ACTIVATION_IDENTITY;
        default: return CUDNN_ACTIVATION_TANH;
    }
}

/// The cudnnOpTensor operation that times a binary elementwise op. OpTensor adds and
/// multiplies only; Div and Pow are timed as Mul, which moves the same bytes (on a GPU
/// these ops are bound by memory, not by their arithmetic).
[[nodiscard]] constexpr cudnnOpTensorOp_t op_tensor_op(OpKind op) noexcept {
    return op == OpKind::Add || op == OpKind::Sub ? CUDNN_OP_TENSOR_ADD : CUDNN_OP_TENSOR_MUL;
}

}  // namespace rlflow::cost::detail
