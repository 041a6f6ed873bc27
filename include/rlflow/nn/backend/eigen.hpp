#pragma once
/// \file
/// The CPU tensor backend: buffers in host memory, gemm through Eigen's blocked kernels,
/// and plain loops for the element-wise, reduction and row primitives (which the compiler
/// vectorises). `EigenBackend<double>` runs the same op bodies in float64, which is what
/// the finite-difference gradient checks use.

#include <rlflow/nn/backend/host_pool.hpp>
#include <rlflow/nn/tensor_backend.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

namespace rlflow::nn::backend {

template <class T>
struct EigenBackend {
    using Scalar = T;
    /// Host memory from `HostBlockPool`, so a training step reuses the last step's blocks.
    using Buffer = std::vector<T, PooledAllocator<T>>;
    using IndexBuffer = std::vector<std::int32_t>;
    static constexpr std::string_view name = sizeof(T) == 4 ? "eigen" : "eigen-float64";
    /// A tile of 256 rows of 64 or 128 features (64 to 128 KB) stays in a core's L2.
    static constexpr std::int64_t row_tile = 256;

    [[nodiscard]] static Buffer allocate(std::size_t n) { return Buffer(n, T(0)); }
    /// The allocator default-initialises, so these n values are unspecified until written.
    [[nodiscard]] static Buffer allocate_uninitialized(std::size_t n) { return Buffer(n); }
    [[nodiscard]] static Buffer upload(std::span<const T> host) { return Buffer(host.begin(), host.end()); }
    [[nodiscard]] static std::vector<T> download(const Buffer& buffer) { return std::vector<T>(buffer.begin(), buffer.end()); }
    [[nodiscard]] static T* data(Buffer& buffer) noexcept { return buffer.data(); }
    [[nodiscard]] static const T* data(const Buffer& buffer) noexcept { return buffer.data(); }
    [[nodiscard]] static IndexBuffer upload_indices(std::span<const std::int32_t> host) {
        return IndexBuffer(host.begin(), host.end());
    }
    [[nodiscard]] static const std::int32_t* data(const IndexBuffer& buffer) noexcept { return buffer.data(); }

    static void fill(T* out, std::int64_t n, T value) { std::fill(out, out + n, value); }
    /// Asks for every cache line of the n values, so that main memory streams them in
    /// while the current tile computes (at 50,000 nodes, a tenth off a product's time).
    static void prefetch(const T* in, std::int64_t n) {
        const auto* bytes = reinterpret_cast<const char*>(in);
        const auto size = static_cast<std::size_t>(std::max<std::int64_t>(n, 0)) * sizeof(T);
        for (std::size_t b = 0; b < size; b += 64) __builtin_prefetch(bytes + b, 0, 3);
    }
    static void copy(T* out, const T* in, std::int64_t n) { std::copy(in, in + n, out); }

    /// C = alpha op(A) op(B) + beta C for `count` matrices, row-major with leading
    /// dimensions lda, ldb, ldc; matrix i starts i * stride after the first.
    ///
    /// A tall product by a small op(B) (A read as stored, more than two tiles of rows, B a
    /// layer's weight of at most 64K values) runs tile by tile of row_tile rows of A and C:
    /// Eigen clears C before it accumulates the product into it, and over a whole
    /// (50,000, 64) C that is one more trip through main memory; over a tile, C stays in
    /// cache between the two. Eigen repacks op(B) per tile, small next to the tile's product.
    static void gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
                     std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc, std::int64_t count,
                     std::int64_t stride_a, std::int64_t stride_b, std::int64_t stride_c) {
        if (ta == Transpose::no && m > 2 * row_tile && k * n <= std::int64_t{1} << 16) {
            for (std::int64_t i = 0; i < count; ++i)
                for (std::int64_t r = 0; r < m; r += row_tile) {
                    const std::int64_t rows = std::min(row_tile, m - r), next = std::min(row_tile, m - r - rows);
                    if (lda == k) prefetch(a + i * stride_a + (r + rows) * lda, next * lda);
                    gemm_one(ta, tb, rows, n, k, alpha, a + i * stride_a + r * lda, lda, b + i * stride_b, ldb, beta, c + i * stride_c + r * ldc,
                             ldc);
                }
            return;
        }
        for (std::int64_t i = 0; i < count; ++i)
            gemm_one(ta, tb, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb, beta, c + i * stride_c, ldc);
    }
    /// One matrix of gemm.
    static void gemm_one(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
                         std::int64_t lda, const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc) {
        using Matrix = ::Eigen::Matrix<T, ::Eigen::Dynamic, ::Eigen::Dynamic, ::Eigen::RowMajor>;
        using ConstMap = ::Eigen::Map<const Matrix, 0, ::Eigen::OuterStride<>>;
        using Map = ::Eigen::Map<Matrix, 0, ::Eigen::OuterStride<>>;
        const ConstMap A(a, ta == Transpose::no ? m : k, ta == Transpose::no ? k : m, ::Eigen::OuterStride<>(lda));
        const ConstMap B(b, tb == Transpose::no ? k : n, tb == Transpose::no ? n : k, ::Eigen::OuterStride<>(ldb));
        Map C(c, m, n, ::Eigen::OuterStride<>(ldc));
        if (beta == T(0)) C.setZero();
        else if (beta != T(1)) C *= beta;
        if (ta == Transpose::no && tb == Transpose::no) C.noalias() += alpha * A * B;
        else if (ta == Transpose::no) C.noalias() += alpha * A * B.transpose();
        else if (tb == Transpose::no) C.noalias() += alpha * A.transpose() * B;
        else C.noalias() += alpha * A.transpose() * B.transpose();
    }

    /// out[i] = Fn(a[strided i]).
    template <class Fn>
    static void map(const Strided3& p, T* out, const T* a) {
        if (in_order(p, p.a)) {  // one flat loop: a (rows, 64) tensor's rows are short
            const std::int64_t n = p.size();
            if (out == a) {
                for (std::int64_t k = 0; k < n; ++k) out[k] = Fn::apply(out[k]);  // in place: nothing to alias
            } else {
                for (std::int64_t k = 0; k < n; ++k) out[k] = Fn::apply(a[k]);
            }
            return;
        }
        for (std::int64_t i = 0; i < p.dims[0]; ++i)
            for (std::int64_t j = 0; j < p.dims[1]; ++j) {
                const T* ra = a + i * p.a[0] + j * p.a[1];
                T* o = out + (i * p.dims[1] + j) * p.dims[2];
                if (p.a[2] == 1) {
                    for (std::int64_t k = 0; k < p.dims[2]; ++k) o[k] = Fn::apply(ra[k]);
                } else {
                    for (std::int64_t k = 0; k < p.dims[2]; ++k) o[k] = Fn::apply(ra[k * p.a[2]]);
                }
            }
    }

    /// out[i] = Fn(a[strided i], b[strided i]).
    template <class Fn>
    static void zip(const Strided3& p, T* out, const T* a, const T* b) {
        if (in_order(p, p.a) && in_order(p, p.b)) {
            const std::int64_t n = p.size();
            if (out == a) {
                for (std::int64_t k = 0; k < n; ++k) out[k] = Fn::apply(out[k], b[k]);
            } else {
                for (std::int64_t k = 0; k < n; ++k) out[k] = Fn::apply(a[k], b[k]);
            }
            return;
        }
        for (std::int64_t i = 0; i < p.dims[0]; ++i)
            for (std::int64_t j = 0; j < p.dims[1]; ++j) {
                const T* ra = a + i * p.a[0] + j * p.a[1];
                const T* rb = b + i * p.b[0] + j * p.b[1];
                T* o = out + (i * p.dims[1] + j) * p.dims[2];
                if (p.a[2] == 1 && p.b[2] == 1) {
                    if (o == ra) {  // in place, as Tape::accumulate and sum_rows add
                        for (std::int64_t k = 0; k < p.dims[2]; ++k) o[k] = Fn::apply(o[k], rb[k]);
                    } else {
                        for (std::int64_t k = 0; k < p.dims[2]; ++k) o[k] = Fn::apply(ra[k], rb[k]);
                    }
                } else {
                    for (std::int64_t k = 0; k < p.dims[2]; ++k) o[k] = Fn::apply(ra[k * p.a[2]], rb[k * p.b[2]]);
                }
            }
    }

    /// out[strided i] += in[i] over p.dims (p.a: out's strides, 0 along summed axes).
    static void accumulate(const Strided3& p, T* out, const T* in) {
        for (std::int64_t i = 0; i < p.dims[0]; ++i)
            for (std::int64_t j = 0; j < p.dims[1]; ++j) {
                T* o = out + i * p.a[0] + j * p.a[1];
                const T* r = in + (i * p.dims[1] + j) * p.dims[2];
                if (p.a[2] == 0) {
                    T sum = T(0);
                    for (std::int64_t k = 0; k < p.dims[2]; ++k) sum += r[k];
                    *o += sum;
                } else {
                    for (std::int64_t k = 0; k < p.dims[2]; ++k) o[k * p.a[2]] += r[k];
                }
            }
    }

    /// Whether an operand with `strides` is read in output order, element after element
    /// (so map and zip may run one flat loop; axes of size 1 have any stride).
    [[nodiscard]] static bool in_order(const Strided3& p, const std::array<std::int64_t, 3>& strides) noexcept {
        std::int64_t step = 1;
        for (int d = 2; d >= 0; --d) {
            if (p.dims[static_cast<std::size_t>(d)] > 1 && strides[static_cast<std::size_t>(d)] != step) return false;
            step *= p.dims[static_cast<std::size_t>(d)];
        }
        return true;
    }

    static void row_max(T* out, const T* in, std::int64_t rows, std::int64_t cols) {
        for (std::int64_t r = 0; r < rows; ++r) {
            T best = -std::numeric_limits<T>::infinity();
            for (std::int64_t c = 0; c < cols; ++c) best = std::max(best, in[r * cols + c]);
            out[r] = best;
        }
    }
    static void row_sum(T* out, const T* in, std::int64_t rows, std::int64_t cols) {
        for (std::int64_t r = 0; r < rows; ++r) {
            T sum = T(0);
            for (std::int64_t c = 0; c < cols; ++c) sum += in[r * cols + c];
            out[r] = sum;
        }
    }

    /// Row r + ahead of a gather or scatter is asked for while row r is copied: on a large
    /// graph the rows are scattered over main memory.
    static constexpr std::int64_t ahead = 8;
    static void prefetch_row(const T* base, const std::int32_t* index, std::int64_t r, std::int64_t rows, std::int64_t cols) {
        if (r + ahead < rows) prefetch(base + static_cast<std::int64_t>(index[r + ahead]) * cols, cols);
    }
    static void gather_rows(T* out, const T* in, const std::int32_t* index, std::int64_t rows, std::int64_t cols) {
        for (std::int64_t r = 0; r < rows; ++r) {
            prefetch_row(in, index, r, rows, cols);
            std::copy_n(in + static_cast<std::int64_t>(index[r]) * cols, cols, out + r * cols);
        }
    }
    static void gather_add_rows(T* out, const T* in, const std::int32_t* index, std::int64_t rows, std::int64_t cols) {
        for (std::int64_t r = 0; r < rows; ++r) {
            prefetch_row(in, index, r, rows, cols);
            T* o = out + r * cols;
            const T* i = in + static_cast<std::int64_t>(index[r]) * cols;
            for (std::int64_t c = 0; c < cols; ++c) o[c] += i[c];
        }
    }
    static void scatter_add_rows(T* out, const T* in, const std::int32_t* index, std::int64_t rows, std::int64_t cols) {
        for (std::int64_t r = 0; r < rows; ++r) {
            prefetch_row(out, index, r, rows, cols);
            T* o = out + static_cast<std::int64_t>(index[r]) * cols;
            const T* i = in + r * cols;
            for (std::int64_t c = 0; c < cols; ++c) o[c] += i[c];
        }
    }
    static void copy_block(T* out, std::int64_t ld_out, const T* in, std::int64_t ld_in, std::int64_t rows, std::int64_t cols) {
        for (std::int64_t r = 0; r < rows; ++r) std::copy_n(in + r * ld_in, cols, out + r * ld_out);
    }

    static void layer_norm(T* out, T* normalized, T* inv_std, const T* x, const T* gamma, const T* beta, std::int64_t rows,
                           std::int64_t cols, T eps) {
        const T per_col = T(1) / static_cast<T>(cols);
        for (std::int64_t r = 0; r < rows; ++r) {
            const T* xr = x + r * cols;
            T sum = T(0);
            for (std::int64_t c = 0; c < cols; ++c) sum += xr[c];
            const T mean = sum * per_col;
            T squares = T(0);
            for (std::int64_t c = 0; c < cols; ++c) squares += (xr[c] - mean) * (xr[c] - mean);
            const T scale = T(1) / std::sqrt(squares * per_col + eps);
            T* o = out + r * cols;
            for (std::int64_t c = 0; c < cols; ++c) {
                const T h = (xr[c] - mean) * scale;
                if (normalized) normalized[r * cols + c] = h;
                o[c] = h * gamma[c] + beta[c];
            }
            if (inv_std) inv_std[r] = scale;
        }
    }
    static void layer_norm_backward(T* dx, const T* g, const T* normalized, const T* inv_std, const T* gamma, std::int64_t rows,
                                    std::int64_t cols) {
        const T per_col = T(1) / static_cast<T>(cols);
        for (std::int64_t r = 0; r < rows; ++r) {
            const T* gr = g + r * cols;
            const T* h = normalized + r * cols;
            T sum = T(0), dot = T(0);
            for (std::int64_t c = 0; c < cols; ++c) {
                sum += gr[c] * gamma[c];
                dot += gr[c] * gamma[c] * h[c];
            }
            const T mean = sum * per_col, mean_dot = dot * per_col;
            for (std::int64_t c = 0; c < cols; ++c) dx[r * cols + c] = inv_std[r] * (gr[c] * gamma[c] - mean - h[c] * mean_dot);
        }
    }
};

/// The CPU backend in float32: what agents train with.
using Eigen = EigenBackend<float>;
/// The CPU backend in float64: gradient checks.
using EigenDouble = EigenBackend<double>;

static_assert(TensorBackend<Eigen> && TensorBackend<EigenDouble>);

}  // namespace rlflow::nn::backend
