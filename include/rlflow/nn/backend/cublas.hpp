#pragma once
/// \file
/// The GPU tensor backend: float32 buffers in CUDA device memory, gemm through cuBLAS, and
/// small kernels (nn/backend/detail/cublas_kernels.cuh) for the element-wise, reduction and
/// row primitives. Same semantics as the CPU backend (nn/backend/eigen.hpp), primitive by
/// primitive, so the nn ops run unchanged on `Tensor<Cublas>`.
///
/// The kernels are templates compiled by nvcc, so this header must be included from a .cu
/// translation unit (compiled with -std=c++20, linked against rlflow::cuda); a host
/// compiler stops at the #error below.
///
/// Everything runs on the current device's default stream, in order; `download` (a
/// blocking cudaMemcpy) is where the host waits. Scatter-sums (`accumulate`,
/// `scatter_add_rows`) use atomicAdd, so their float rounding may differ from the CPU's
/// sequential order and from run to run. cuBLAS runs in its default math mode: full
/// float32, no TF32.

#if !defined(__CUDACC__)
#error "rlflow/nn/backend/cublas.hpp holds CUDA kernels: include it from a .cu file compiled by nvcc (C++20) and link rlflow::cuda"
#endif

#include <rlflow/core/detail/cuda_check.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/nn/backend/detail/cublas_kernels.cuh>
#include <rlflow/nn/functions.hpp>
#include <rlflow/nn/tensor_backend.hpp>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlflow::nn::detail {

/// Sole owner of `size` elements of T in device memory. Copies copy the data on the device
/// (so `Tensor<Cublas>` keeps value semantics); moves hand the pointer over.
template <class T>
class DeviceBuffer {
public:
    DeviceBuffer() noexcept = default;
    /// `size` uninitialised elements.
    explicit DeviceBuffer(std::size_t size) : m_size(size) {
        if (size != 0) RLFLOW_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&m_data), bytes()));
    }
    DeviceBuffer(const DeviceBuffer& other) : DeviceBuffer(other.m_size) {
        if (m_size != 0) RLFLOW_CUDA_CHECK(cudaMemcpy(m_data, other.m_data, bytes(), cudaMemcpyDeviceToDevice));
    }
    DeviceBuffer(DeviceBuffer&& other) noexcept
        : m_data(std::exchange(other.m_data, nullptr)), m_size(std::exchange(other.m_size, 0)) {}
    DeviceBuffer& operator=(const DeviceBuffer& other) {
        if (this != &other) *this = DeviceBuffer(other);
        return *this;
    }
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
        if (this != &other) {
            release();
            m_data = std::exchange(other.m_data, nullptr);
            m_size = std::exchange(other.m_size, 0);
        }
        return *this;
    }
    ~DeviceBuffer() { release(); }

    [[nodiscard]] T* data() noexcept { return m_data; }
    [[nodiscard]] const T* data() const noexcept { return m_data; }
    [[nodiscard]] std::size_t size() const noexcept { return m_size; }
    [[nodiscard]] std::size_t bytes() const noexcept { return m_size * sizeof(T); }

private:
    void release() noexcept {
        // A free that fails during clean-up has no caller left to report to.
        if (m_data != nullptr) static_cast<void>(cudaFree(m_data));
        m_data = nullptr;
        m_size = 0;
    }

    T* m_data = nullptr;
    std::size_t m_size = 0;
};

/// `host` copied into a new device buffer.
template <class T>
[[nodiscard]] DeviceBuffer<T> upload_to_device(std::span<const T> host) {
    DeviceBuffer<T> buffer(host.size());
    if (!host.empty()) RLFLOW_CUDA_CHECK(cudaMemcpy(buffer.data(), host.data(), buffer.bytes(), cudaMemcpyHostToDevice));
    return buffer;
}

/// The process-wide cuBLAS handle, created on first use (thread-safe) for the device then
/// current, and destroyed at exit.
[[nodiscard]] inline cublasHandle_t cublas_handle() {
    struct Owner {
        cublasHandle_t handle = nullptr;
        Owner() { RLFLOW_CUDA_CHECK(cublasCreate(&handle)); }
        Owner(const Owner&) = delete;
        Owner& operator=(const Owner&) = delete;
        // A destroy that fails at exit has no caller left to report to.
        ~Owner() { static_cast<void>(cublasDestroy(handle)); }
    };
    static const Owner owner;
    return owner.handle;
}

/// `value` as the int cuBLAS takes for a dimension; throws precondition_error when it does not fit.
[[nodiscard]] inline int cublas_int(std::int64_t value, const char* what) {
    RLFLOW_EXPECTS(value >= 0 && value <= std::numeric_limits<int>::max(), precondition_error,
                   std::string("cuBLAS gemm: ") + what + " " + std::to_string(value) + " does not fit cuBLAS's int");
    return static_cast<int>(value);
}

[[nodiscard]] inline DeviceStrided3 device_plan(const Strided3& p) {
    DeviceStrided3 d{};
    for (std::size_t i = 0; i < 3; ++i) {
        d.dims[i] = p.dims[i];
        d.a[i] = p.a[i];
        d.b[i] = p.b[i];
    }
    return d;
}

}  // namespace rlflow::nn::detail

namespace rlflow::nn::backend {

/// The GPU backend in float32.
struct Cublas {
    using Scalar = float;
    using Buffer = nn::detail::DeviceBuffer<float>;
    using IndexBuffer = nn::detail::DeviceBuffer<std::int32_t>;
    static constexpr std::string_view name = "cublas";
    /// One launch per layer over every row.
    static constexpr std::int64_t row_tile = 0;

    /// n zeros (as the CPU backend gives: `Tensor(shape)` is zeros).
    [[nodiscard]] static Buffer allocate(std::size_t n) {
        Buffer buffer(n);
        if (n != 0) RLFLOW_CUDA_CHECK(cudaMemset(buffer.data(), 0, buffer.bytes()));
        return buffer;
    }
    /// n floats whose values are unspecified until written.
    [[nodiscard]] static Buffer allocate_uninitialized(std::size_t n) { return Buffer(n); }
    [[nodiscard]] static Buffer upload(std::span<const float> host) { return nn::detail::upload_to_device(host); }
    [[nodiscard]] static std::vector<float> download(const Buffer& buffer) {
        std::vector<float> host(buffer.size());
        if (!host.empty()) RLFLOW_CUDA_CHECK(cudaMemcpy(host.data(), buffer.data(), buffer.bytes(), cudaMemcpyDeviceToHost));
        return host;
    }
    [[nodiscard]] static float* data(Buffer& buffer) noexcept { return buffer.data(); }
    [[nodiscard]] static const float* data(const Buffer& buffer) noexcept { return buffer.data(); }
    [[nodiscard]] static IndexBuffer upload_indices(std::span<const std::int32_t> host) { return nn::detail::upload_to_device(host); }
    [[nodiscard]] static const std::int32_t* data(const IndexBuffer& buffer) noexcept { return buffer.data(); }

    /// Nothing: device memory is not the host's cache.
    static void prefetch(const float*, std::int64_t) noexcept {}
    static void fill(float* out, std::int64_t n, float value) {
        if (n <= 0) return;
        nn::detail::fill_kernel<float><<<blocks(n), threads>>>(out, n, value);
        RLFLOW_CUDA_CHECK(cudaGetLastError());
    }
    static void copy(float* out, const float* in, std::int64_t n) {
        if (n <= 0) return;
        RLFLOW_CUDA_CHECK(cudaMemcpy(out, in, static_cast<std::size_t>(n) * sizeof(float), cudaMemcpyDeviceToDevice));
    }

    /// C = alpha op(A) op(B) + beta C for `count` row-major matrices (see the CPU backend).
    /// cuBLAS is column-major, and a row-major matrix with leading dimension ld is its
    /// transpose in column-major with the same ld, so this computes
    /// C^T = op(B)^T op(A)^T: cuBLAS's first operand is B with B's transpose flag, its
    /// second is A with A's, and m and n swap. A stride of 0 shares one matrix.
    static void gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                     std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc, std::int64_t count,
                     std::int64_t stride_a, std::int64_t stride_b, std::int64_t stride_c) {
        if (m <= 0 || n <= 0 || count <= 0) return;
        const auto op = [](Transpose t) { return t == Transpose::no ? CUBLAS_OP_N : CUBLAS_OP_T; };
        // cuBLAS checks ld >= max(1, stored rows) even when k = 0 and nothing is read.
        const std::int64_t b_stored_rows = tb == Transpose::no ? n : k, a_stored_rows = ta == Transpose::no ? k : m;
        ldb = std::max({ldb, b_stored_rows, std::int64_t{1}});
        lda = std::max({lda, a_stored_rows, std::int64_t{1}});
        RLFLOW_CUDA_CHECK(cublasSgemmStridedBatched(
            nn::detail::cublas_handle(), op(tb), op(ta), nn::detail::cublas_int(n, "n"), nn::detail::cublas_int(m, "m"),
            nn::detail::cublas_int(k, "k"), &alpha, b, nn::detail::cublas_int(ldb, "ldb"), stride_b, a,
            nn::detail::cublas_int(lda, "lda"), stride_a, &beta, c, nn::detail::cublas_int(ldc, "ldc"), stride_c,
            nn::detail::cublas_int(count, "count")));
    }

    /// out[i] = Fn(a[strided i]).
    template <class Fn>
    static void map(const Strided3& p, float* out, const float* a) {
        const std::int64_t n = p.size();
        if (n <= 0) return;
        nn::detail::map_kernel<Fn, float><<<blocks(n), threads>>>(nn::detail::device_plan(p), n, out, a);
        RLFLOW_CUDA_CHECK(cudaGetLastError());
    }

    /// out[i] = Fn(a[strided i], b[strided i]).
    template <class Fn>
    static void zip(const Strided3& p, float* out, const float* a, const float* b) {
        const std::int64_t n = p.size();
        if (n <= 0) return;
        nn::detail::zip_kernel<Fn, float><<<blocks(n), threads>>>(nn::detail::device_plan(p), n, out, a, b);
        RLFLOW_CUDA_CHECK(cudaGetLastError());
    }

    /// out[strided i] += in[i] over p.dims (p.a: out's strides, 0 along summed axes).
    static void accumulate(const Strided3& p, float* out, const float* in) {
        const std::int64_t n = p.size();
        if (n <= 0) return;
        nn::detail::accumulate_kernel<float><<<blocks(n), threads>>>(nn::detail::device_plan(p), n, out, in);
        RLFLOW_CUDA_CHECK(cudaGetLastError());
    }

    /// Per row: the maximum (-inf for an empty row) and the sum.
    static void row_max(float* out, const float* in, std::int64_t rows, std::int64_t cols) {
        if (rows <= 0) return;
        nn::detail::row_reduce_kernel<nn::detail::MaxReduction, float><<<row_blocks(rows), threads>>>(
            out, in, rows, cols, -std::numeric_limits<float>::infinity());
        RLFLOW_CUDA_CHECK(cudaGetLastError());
    }
    static void row_sum(float* out, const float* in, std::int64_t rows, std::int64_t cols) {
        if (rows <= 0) return;
        nn::detail::row_reduce_kernel<nn::detail::SumReduction, float><<<row_blocks(rows), threads>>>(out, in, rows, cols, 0.0f);
        RLFLOW_CUDA_CHECK(cudaGetLastError());
    }

    /// Rows: out[r] = in[index[r]]; out[index[r]] += in[r].
    static void gather_rows(float* out, const float* in, const std::int32_t* index, std::int64_t rows, std::int64_t cols) {
        const std::int64_t n = rows * cols;
        if (n <= 0) return;
        nn::detail::gather_rows_kernel<float><<<blocks(n), threads>>>(out, in, index, rows, cols);
        RLFLOW_CUDA_CHECK(cudaGetLastError());
    }
    static void gather_add_rows(float* out, const float* in, const std::int32_t* index, std::int64_t rows, std::int64_t cols) {
        const std::int64_t n = rows * cols;
        if (n <= 0) return;
        nn::detail::gather_add_rows_kernel<float><<<blocks(n), threads>>>(out, in, index, rows, cols);
        RLFLOW_CUDA_CHECK(cudaGetLastError());
    }
    static void scatter_add_rows(float* out, const float* in, const std::int32_t* index, std::int64_t rows, std::int64_t cols) {
        const std::int64_t n = rows * cols;
        if (n <= 0) return;
        nn::detail::scatter_add_rows_kernel<float><<<blocks(n), threads>>>(out, in, index, rows, cols);
        RLFLOW_CUDA_CHECK(cudaGetLastError());
    }

    /// A block of rows x cols between matrices of different row lengths (ld): one 2-D copy.
    static void copy_block(float* out, std::int64_t ld_out, const float* in, std::int64_t ld_in, std::int64_t rows, std::int64_t cols) {
        if (rows <= 0 || cols <= 0) return;
        constexpr std::size_t scalar = sizeof(float);
        RLFLOW_CUDA_CHECK(cudaMemcpy2D(out, static_cast<std::size_t>(ld_out) * scalar, in, static_cast<std::size_t>(ld_in) * scalar,
                                       static_cast<std::size_t>(cols) * scalar, static_cast<std::size_t>(rows),
                                       cudaMemcpyDeviceToDevice));
    }

    /// Layer normalisation per row and its input gradient: one block per row.
    static void layer_norm(float* out, float* normalized, float* inv_std, const float* x, const float* gamma, const float* beta,
                           std::int64_t rows, std::int64_t cols, float eps) {
        if (rows <= 0 || cols <= 0) return;
        nn::detail::layer_norm_kernel<float><<<row_blocks(rows), threads>>>(out, normalized, inv_std, x, gamma, beta, rows, cols, eps);
        RLFLOW_CUDA_CHECK(cudaGetLastError());
    }
    static void layer_norm_backward(float* dx, const float* g, const float* normalized, const float* inv_std, const float* gamma,
                                    std::int64_t rows, std::int64_t cols) {
        if (rows <= 0 || cols <= 0) return;
        nn::detail::layer_norm_backward_kernel<float><<<row_blocks(rows), threads>>>(dx, g, normalized, inv_std, gamma, rows, cols);
        RLFLOW_CUDA_CHECK(cudaGetLastError());
    }

private:
    static constexpr int threads = nn::detail::cuda_block_threads;
    [[nodiscard]] static unsigned blocks(std::int64_t n) { return nn::detail::cuda_blocks(n); }
    /// One block per row, up to the grid-stride cap.
    [[nodiscard]] static unsigned row_blocks(std::int64_t rows) {
        return static_cast<unsigned>(std::min(rows, nn::detail::cuda_max_blocks));
    }
};

static_assert(TensorBackend<Cublas> && is_tensor_backend_v<Cublas>);

}  // namespace rlflow::nn::backend
