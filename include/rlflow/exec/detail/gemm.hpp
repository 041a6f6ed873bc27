#pragma once
/// \file
/// MatMul (numpy batch broadcasting, 1-D operands) and Gemm kernels over Eigen GEMMs.

#include <rlflow/exec/detail/eigen.hpp>
#include <rlflow/exec/detail/view.hpp>

namespace rlflow::detail {

/// The shapes of a MatMul as a batch of (m x k) @ (k x n) products.
struct MatMulGeometry {
    Shape a_batch, b_batch, out_batch;
    std::int64_t m = 1, k = 1, n = 1;
};

/// Promotes 1-D operands as numpy does: a vector lhs is a row (1, k), a vector rhs a
/// column (k, 1); the inserted dimension is absent from the output shape.
[[nodiscard]] inline MatMulGeometry matmul_geometry(const Shape& a, const Shape& b) {
    const Shape a2 = a.rank() == 1 ? Shape{1, a[0]} : a;
    const Shape b2 = b.rank() == 1 ? Shape{b[0], 1} : b;
    MatMulGeometry geometry;
    geometry.a_batch = Shape(a2.dims().first(static_cast<std::size_t>(a2.rank() - 2)));
    geometry.b_batch = Shape(b2.dims().first(static_cast<std::size_t>(b2.rank() - 2)));
    geometry.out_batch = *broadcast_shapes(geometry.a_batch, geometry.b_batch);
    geometry.m = a2.dim(-2);
    geometry.k = a2.dim(-1);
    geometry.n = b2.dim(-1);
    return geometry;
}

/// y = a @ b for one (m x k) @ (k x n) product; Eigen picks GEMV when m or n is 1.
inline void matrix_product(const float* a, const float* b, float* y, std::int64_t m, std::int64_t k, std::int64_t n) {
    matrix(y, m, n).noalias() = matrix(a, m, k) * matrix(b, k, n);
}

/// MatMul. When b has no batch dimensions, a's batches stack into one tall GEMM;
/// otherwise one GEMM per output batch, operands located by broadcast strides.
inline void matmul_kernel(const KernelArgs& args) {
    const ConstView& a = args.inputs[0];
    const ConstView& b = args.inputs[1];
    float* y = args.outputs[0].data.data();
    const MatMulGeometry g = matmul_geometry(a.shape, b.shape);
    if (g.b_batch.numel() == 1) {
        matrix_product(a.data.data(), b.data.data(), y, g.a_batch.numel() * g.m, g.k, g.n);
        return;
    }
    const std::int64_t a_size = g.m * g.k, b_size = g.k * g.n, y_size = g.m * g.n;
    const std::array<Strides, 3> strides{contiguous_strides(g.out_batch), broadcast_strides(g.a_batch, g.out_batch),
                                         broadcast_strides(g.b_batch, g.out_batch)};
    const std::int64_t a_step = inner_stride(g.out_batch, strides[1]);
    const std::int64_t b_step = inner_stride(g.out_batch, strides[2]);
    for_each_row(g.out_batch, strides, [&](const std::array<std::int64_t, 3>& at, std::int64_t length) {
        for (std::int64_t i = 0; i < length; ++i)
            matrix_product(a.data.data() + (at[1] + i * a_step) * a_size, b.data.data() + (at[2] + i * b_step) * b_size,
                           y + (at[0] + i) * y_size, g.m, g.k, g.n);
    });
}

/// Gemm: Y = alpha * op(A) @ op(B) + beta * C, C broadcast to (M, N). As in onnxruntime,
/// C is not read when beta is 0 (so inf or NaN in C do not leak into Y).
inline void gemm_kernel(const KernelArgs& args) {
    const Attributes& attributes = args.node.attributes;
    const auto alpha = static_cast<float>(attributes.get_float("alpha", 1.0));
    const auto beta = static_cast<float>(attributes.get_float("beta", 1.0));
    const bool transpose_a = attributes.get_int("transA", 0) != 0;
    const bool transpose_b = attributes.get_int("transB", 0) != 0;
    const ConstView& a = args.inputs[0];
    const ConstView& b = args.inputs[1];
    const MutableView& y = args.outputs[0];
    if (args.inputs.size() == 3 && beta != 0.0f) {
        broadcast_to(args.inputs[2], y.shape, y.data);
        array(y.data) *= beta;
    } else {
        array(y.data).setZero();
    }
    auto out = matrix(y.data.data(), y.shape[0], y.shape[1]);
    const auto lhs = matrix(a.data.data(), a.shape[0], a.shape[1]);
    const auto rhs = matrix(b.data.data(), b.shape[0], b.shape[1]);
    auto accumulate = [&](const auto& left, const auto& right) { out.noalias() += alpha * left * right; };
    if (transpose_a && transpose_b) accumulate(lhs.transpose(), rhs.transpose());
    else if (transpose_a) accumulate(lhs.transpose(), rhs);
    else if (transpose_b) accumulate(lhs, rhs.transpose());
    else accumulate(lhs, rhs);
}

}  // namespace rlflow::detail
