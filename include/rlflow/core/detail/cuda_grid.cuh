#pragma once
/// \file
/// The launch geometry every rlflow CUDA kernel shares: threads per block, the grid of a
/// grid-stride loop, and a thread's place in it. Used by the nn backend's kernels
/// (nn/backend/detail/cublas_kernels.cuh) and the whole-graph executor's
/// (cost/detail/cuda_graph_kernels.cuh). nvcc only.

#if !defined(__CUDACC__)
#error "rlflow/core/detail/cuda_grid.cuh holds CUDA device code: include it only from .cu files compiled by nvcc"
#endif

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace rlflow::detail {

/// Threads per block of the element-wise kernels and of the row reductions (a power of 2,
/// which the reductions' tree needs).
inline constexpr int cuda_block_threads = 256;
/// The most blocks a grid-stride launch asks for; each thread then loops over the rest.
inline constexpr std::int64_t cuda_max_blocks = 65535;

/// A grid for a grid-stride loop over n elements (at least one block).
[[nodiscard]] inline unsigned cuda_blocks(std::int64_t n) {
    return static_cast<unsigned>(std::clamp<std::int64_t>((n + cuda_block_threads - 1) / cuda_block_threads, 1, cuda_max_blocks));
}

/// This thread's index in the grid, and the grid's size: a grid-stride loop runs
/// `for (i = grid_thread(); i < n; i += grid_threads())`.
__device__ inline std::int64_t grid_thread() { return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline std::int64_t grid_threads() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

}  // namespace rlflow::detail
