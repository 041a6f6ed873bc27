#pragma once
/// \file
/// The CUDA kernels behind `nn::backend::Cublas` (nn/backend/cublas.hpp): element-wise maps
/// over broadcast operands, scatter-sums, row reductions, layer normalisation, row gather and scatter-add, fill.
/// Every kernel is a template, so including this from several .cu files defines nothing
/// twice. Indices are 64-bit: a tensor may hold more than 2^31 elements. nvcc only.

#if !defined(__CUDACC__)
#error "rlflow/nn/backend/detail/cublas_kernels.cuh holds CUDA kernels: include it only from .cu files compiled by nvcc"
#endif

#include <rlflow/core/detail/cuda_grid.cuh>

#include <cuda_runtime.h>

#include <cstdint>

namespace rlflow::nn::detail {

using rlflow::detail::cuda_block_threads;
using rlflow::detail::cuda_blocks;
using rlflow::detail::cuda_max_blocks;
using rlflow::detail::grid_thread;
using rlflow::detail::grid_threads;

/// Strided3 (tensor_backend.hpp) as plain arrays, which device code reads without
/// std::array's host-only accessors.
struct DeviceStrided3 {
    std::int64_t dims[3];
    std::int64_t a[3];
    std::int64_t b[3];
};

/// The offset of flat output element i (row-major over dims) in an operand with `strides`.
__device__ inline std::int64_t strided_offset(const DeviceStrided3& p, const std::int64_t* strides, std::int64_t i) {
    const std::int64_t k = i % p.dims[2];
    const std::int64_t rest = i / p.dims[2];
    const std::int64_t j = rest % p.dims[1];
    const std::int64_t h = rest / p.dims[1];
    return h * strides[0] + j * strides[1] + k * strides[2];
}

template <class T>
__global__ void fill_kernel(T* out, std::int64_t n, T value) {
    for (std::int64_t i = grid_thread(); i < n; i += grid_threads()) out[i] = value;
}

/// out[i] = Fn(a[strided i]).
template <class Fn, class T>
__global__ void map_kernel(DeviceStrided3 p, std::int64_t n, T* out, const T* a) {
    for (std::int64_t i = grid_thread(); i < n; i += grid_threads()) out[i] = Fn::apply(a[strided_offset(p, p.a, i)]);
}

/// out[i] = Fn(a[strided i], b[strided i]). `out` may alias `a` or `b` when that operand
/// is read at i itself (unit strides), as Tape::accumulate does.
template <class Fn, class T>
__global__ void zip_kernel(DeviceStrided3 p, std::int64_t n, T* out, const T* a, const T* b) {
    for (std::int64_t i = grid_thread(); i < n; i += grid_threads())
        out[i] = Fn::apply(a[strided_offset(p, p.a, i)], b[strided_offset(p, p.b, i)]);
}

/// out[strided i] += in[i]; several i may share one output (0 strides), hence atomicAdd.
template <class T>
__global__ void accumulate_kernel(DeviceStrided3 p, std::int64_t n, T* out, const T* in) {
    for (std::int64_t i = grid_thread(); i < n; i += grid_threads()) atomicAdd(out + strided_offset(p, p.a, i), in[i]);
}

struct MaxReduction {
    template <class T> __device__ static T combine(T a, T b) { return a < b ? b : a; }
};
struct SumReduction {
    template <class T> __device__ static T combine(T a, T b) { return a + b; }
};

/// out[r] = the Reduction of row r of a (rows, cols) matrix, starting from `identity`: one
/// block per row, each thread folding a strided share of the columns, then a tree in
/// shared memory.
template <class Reduction, class T>
__global__ void row_reduce_kernel(T* out, const T* in, std::int64_t rows, std::int64_t cols, T identity) {
    __shared__ T partial[cuda_block_threads];
    for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        T value = identity;
        for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) value = Reduction::combine(value, in[r * cols + c]);
        partial[threadIdx.x] = value;
        __syncthreads();
        for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
            if (threadIdx.x < half) partial[threadIdx.x] = Reduction::combine(partial[threadIdx.x], partial[threadIdx.x + half]);
            __syncthreads();
        }
        if (threadIdx.x == 0) out[r] = partial[0];
        // The next row reuses `partial`.
        __syncthreads();
    }
}

/// The sum of `value` over the block's threads, through `partial` (one slot per thread),
/// returned to every thread; the block may reuse `partial` afterwards.
template <class T>
__device__ T block_sum(T value, T* partial) {
    partial[threadIdx.x] = value;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    const T total = partial[0];
    __syncthreads();
    return total;
}

/// Layer normalisation of each row of a (rows, cols) matrix (TensorBackend's layer_norm):
/// one block per row; the mean, then the variance of the centred row, by block sums.
template <class T>
__global__ void layer_norm_kernel(T* out, T* normalized, T* inv_std, const T* x, const T* gamma, const T* beta, std::int64_t rows,
                                  std::int64_t cols, T eps) {
    __shared__ T partial[cuda_block_threads];
    for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * cols;
        T sum = T(0);
        for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += xr[c];
        const T mean = block_sum(sum, partial) / static_cast<T>(cols);
        T squares = T(0);
        for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) squares += (xr[c] - mean) * (xr[c] - mean);
        const T scale = T(1) / sqrt(block_sum(squares, partial) / static_cast<T>(cols) + eps);
        for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
            const T h = (xr[c] - mean) * scale;
            if (normalized) normalized[r * cols + c] = h;
            out[r * cols + c] = h * gamma[c] + beta[c];
        }
        if (inv_std && threadIdx.x == 0) inv_std[r] = scale;
    }
}

/// Its input gradient per row: dx = inv_std (g gamma - mean(g gamma) - xhat mean(g gamma xhat)).
template <class T>
__global__ void layer_norm_backward_kernel(T* dx, const T* g, const T* normalized, const T* inv_std, const T* gamma,
                                           std::int64_t rows, std::int64_t cols) {
    __shared__ T partial[cuda_block_threads];
    for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* gr = g + r * cols;
        const T* h = normalized + r * cols;
        T sum = T(0), dot = T(0);
        for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
            sum += gr[c] * gamma[c];
            dot += gr[c] * gamma[c] * h[c];
        }
        const T mean = block_sum(sum, partial) / static_cast<T>(cols);
        const T mean_dot = block_sum(dot, partial) / static_cast<T>(cols);
        for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x)
            dx[r * cols + c] = inv_std[r] * (gr[c] * gamma[c] - mean - h[c] * mean_dot);
    }
}

/// out[r] = in[index[r]] for rows of `cols` scalars.
template <class T>
__global__ void gather_rows_kernel(T* out, const T* in, const std::int32_t* index, std::int64_t rows, std::int64_t cols) {
    const std::int64_t n = rows * cols;
    for (std::int64_t i = grid_thread(); i < n; i += grid_threads()) {
        const std::int64_t r = i / cols, c = i % cols;
        out[i] = in[static_cast<std::int64_t>(index[r]) * cols + c];
    }
}

/// out[r] += in[index[r]]: each output element has one thread, so no atomics.
template <class T>
__global__ void gather_add_rows_kernel(T* out, const T* in, const std::int32_t* index, std::int64_t rows, std::int64_t cols) {
    const std::int64_t n = rows * cols;
    for (std::int64_t i = grid_thread(); i < n; i += grid_threads()) {
        const std::int64_t r = i / cols, c = i % cols;
        out[i] += in[static_cast<std::int64_t>(index[r]) * cols + c];
    }
}

/// out[index[r]] += in[r]; rows may share an index, hence atomicAdd.
template <class T>
__global__ void scatter_add_rows_kernel(T* out, const T* in, const std::int32_t* index, std::int64_t rows, std::int64_t cols) {
    const std::int64_t n = rows * cols;
    for (std::int64_t i = grid_thread(); i < n; i += grid_threads()) {
        const std::int64_t r = i / cols, c = i % cols;
        atomicAdd(out + static_cast<std::int64_t>(index[r]) * cols + c, in[i]);
    }
}

}  // namespace rlflow::nn::detail
