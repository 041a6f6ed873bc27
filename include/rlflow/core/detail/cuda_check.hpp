#pragma once
/// \file
/// `RLFLOW_CUDA_CHECK(call)`: runs a CUDA runtime, cuDNN or cuBLAS call and throws
/// `cuda_error` naming the call, the library's name for the failed status and file:line.
/// Private, so that CUDA stays reachable only through the CUDA headers
/// (cost/cudnn_profiler.hpp), never from the umbrella headers.

#include <rlflow/core/error.hpp>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>

namespace rlflow::detail {

[[nodiscard]] inline bool cuda_succeeded(cudaError_t status) noexcept { return status == cudaSuccess; }
[[nodiscard]] inline bool cuda_succeeded(cudnnStatus_t status) noexcept { return status == CUDNN_STATUS_SUCCESS; }
[[nodiscard]] inline bool cuda_succeeded(cublasStatus_t status) noexcept { return status == CUBLAS_STATUS_SUCCESS; }

/// "cudaErrorMemoryAllocation (out of memory)" and the like: each library's own name.
[[nodiscard]] inline std::string cuda_status_name(cudaError_t status) {
    return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}
[[nodiscard]] inline std::string cuda_status_name(cudnnStatus_t status) { return cudnnGetErrorString(status); }
[[nodiscard]] inline std::string cuda_status_name(cublasStatus_t status) {
    return std::string(cublasGetStatusName(status)) + " (" + cublasGetStatusString(status) + ")";
}

/// Throws cuda_error unless `status` is its library's success value.
template <class Status>
inline void cuda_check(Status status, const char* call, const char* file, int line) {
    if (cuda_succeeded(status)) return;
    throw cuda_error(std::string(call) + " failed: " + cuda_status_name(status) + " at " + file + ":"
                     + std::to_string(line));
}

}  // namespace rlflow::detail

/// Runs a CUDA runtime, cuDNN or cuBLAS call; throws `rlflow::cuda_error` if it fails.
#define RLFLOW_CUDA_CHECK(call) ::rlflow::detail::cuda_check((call), #call, __FILE__, __LINE__)
