#pragma once
/// \file
/// RAII owners of CUDA, cuDNN and cuBLAS handles, descriptors and device memory, and the
/// growing device scratch the cuDNN profiler carves its buffers from. Everything created
/// is owned before the next call that can throw, so nothing leaks when one does.

#include <rlflow/core/detail/cuda_check.hpp>
#include <rlflow/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rlflow::cost::detail {

/// Sole owner of one handle released by `destroy`. Create into it with
/// `RLFLOW_CUDA_CHECK(cudnnCreateTensorDescriptor(owner.out()))`.
template <class Handle, auto destroy>
class CudaOwned {
public:
    CudaOwned() noexcept = default;
    CudaOwned(const CudaOwned&) = delete;
    CudaOwned& operator=(const CudaOwned&) = delete;
    CudaOwned(CudaOwned&& other) noexcept : m_handle(std::exchange(other.m_handle, Handle{})) {}
    CudaOwned& operator=(CudaOwned&& other) noexcept {
        if (this != &other) {
            reset();
            m_handle = std::exchange(other.m_handle, Handle{});
        }
        return *this;
    }
    ~CudaOwned() { reset(); }

    [[nodiscard]] Handle get() const noexcept { return m_handle; }
    /// Where a create call writes the new handle; releases the current one first.
    [[nodiscard]] Handle* out() noexcept {
        reset();
        return &m_handle;
    }
    void reset() noexcept {
        // A release that fails during clean-up has no caller left to report to.
        if (m_handle) static_cast<void>(destroy(m_handle));
        m_handle = Handle{};
    }

private:
    Handle m_handle{};
};

using CudaStream = CudaOwned<cudaStream_t, cudaStreamDestroy>;
using CudaEvent = CudaOwned<cudaEvent_t, cudaEventDestroy>;
using DeviceMemory = CudaOwned<void*, cudaFree>;
using CudnnHandle = CudaOwned<cudnnHandle_t, cudnnDestroy>;
using CublasHandle = CudaOwned<cublasHandle_t, cublasDestroy>;
using TensorDescriptor = CudaOwned<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using FilterDescriptor = CudaOwned<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor = CudaOwned<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;
using ActivationDescriptor = CudaOwned<cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor>;
using PoolingDescriptor = CudaOwned<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor>;
using OpTensorDescriptor = CudaOwned<cudnnOpTensorDescriptor_t, cudnnDestroyOpTensorDescriptor>;
using ReduceTensorDescriptor = CudaOwned<cudnnReduceTensorDescriptor_t, cudnnDestroyReduceTensorDescriptor>;

/// One non-blocking stream on the current device, with cuDNN and cuBLAS bound to it (cuBLAS
/// in `math`), and two events to time work on it between.
struct CudaSession {
    CudaStream stream;
    CudaEvent start, stop;
    CudnnHandle cudnn;
    CublasHandle cublas;

    explicit CudaSession(cublasMath_t math) {
        RLFLOW_CUDA_CHECK(cudaStreamCreateWithFlags(stream.out(), cudaStreamNonBlocking));
        RLFLOW_CUDA_CHECK(cudaEventCreate(start.out()));
        RLFLOW_CUDA_CHECK(cudaEventCreate(stop.out()));
        RLFLOW_CUDA_CHECK(cudnnCreate(cudnn.out()));
        RLFLOW_CUDA_CHECK(cudnnSetStream(cudnn.get(), stream.get()));
        RLFLOW_CUDA_CHECK(cublasCreate(cublas.out()));
        RLFLOW_CUDA_CHECK(cublasSetStream(cublas.get(), stream.get()));
        RLFLOW_CUDA_CHECK(cublasSetMathMode(cublas.get(), math));
    }
};

/// `value` as the int cuDNN and cuBLAS take for a dimension; throws precondition_error
/// when it does not fit.
[[nodiscard]] inline int to_int(std::int64_t value) {
    RLFLOW_EXPECTS(value >= 0 && value <= std::numeric_limits<int>::max(), precondition_error,
                   "cuDNN profiler: dimension " + std::to_string(value) + " does not fit cuDNN's int");
    return static_cast<int>(value);
}

/// Bytes of a packed fp32 tensor with these dimensions.
[[nodiscard]] inline std::size_t float_bytes(std::span<const int> dims) noexcept {
    std::size_t n = sizeof(float);
    for (const int d : dims) n *= static_cast<std::size_t>(d);
    return n;
}

/// A packed fp32 tensor descriptor. cuDNN wants at least 4 dimensions: pad with leading
/// ones (which numpy broadcasting, aligned on the right, leaves unchanged).
[[nodiscard]] inline TensorDescriptor tensor_descriptor(std::span<const int> dims) {
    constexpr std::size_t min_rank = 4;
    std::vector<int> padded(dims.size() < min_rank ? min_rank - dims.size() : 0, 1);
    padded.insert(padded.end(), dims.begin(), dims.end());
    std::vector<int> strides(padded.size(), 1);
    for (std::size_t i = padded.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * padded[i];
    TensorDescriptor descriptor;
    RLFLOW_CUDA_CHECK(cudnnCreateTensorDescriptor(descriptor.out()));
    RLFLOW_CUDA_CHECK(cudnnSetTensorNdDescriptor(descriptor.get(), CUDNN_DATA_FLOAT, static_cast<int>(padded.size()),
                                                 padded.data(), strides.data()));
    return descriptor;
}

/// An activation descriptor; a clipped ReLU clips at ReLU6's ceiling (any finite ceiling
/// takes the same time).
[[nodiscard]] inline ActivationDescriptor activation_descriptor(cudnnActivationMode_t mode) {
    constexpr double clip_ceiling = 6.0;
    ActivationDescriptor descriptor;
    RLFLOW_CUDA_CHECK(cudnnCreateActivationDescriptor(descriptor.out()));
    RLFLOW_CUDA_CHECK(cudnnSetActivationDescriptor(descriptor.get(), mode, CUDNN_PROPAGATE_NAN, clip_ceiling));
    return descriptor;
}

/// One device allocation, carved into the buffers of one measurement. It only grows, so
/// once the largest op has been priced nothing more is allocated.
class DeviceScratch {
public:
    /// Every buffer starts at this alignment (cudaMalloc's own).
    static constexpr std::size_t alignment = 256;
    /// Buffers are filled with this byte: as fp32 every element reads 0x3F3F3F3F = 0.747,
    /// finite and positive, so divisions, square roots and variances stay finite.
    static constexpr int fill_byte = 0x3F;

    DeviceScratch() = default;
    DeviceScratch(DeviceScratch&& other) noexcept
        : m_memory(std::move(other.m_memory)), m_capacity(std::exchange(other.m_capacity, 0)) {}
    DeviceScratch& operator=(DeviceScratch&& other) noexcept {
        m_memory = std::move(other.m_memory);
        m_capacity = std::exchange(other.m_capacity, 0);
        return *this;
    }

    /// Buffers of the given sizes in bytes, filled with `fill_byte` on `stream`.
    [[nodiscard]] std::vector<float*> carve(std::initializer_list<std::size_t> sizes, cudaStream_t stream) {
        std::vector<std::size_t> offsets;
        std::size_t total = 0;
        for (const std::size_t bytes : sizes) {
            offsets.push_back(total);
            total += (bytes + alignment - 1) / alignment * alignment;
        }
        if (total > m_capacity) grow(total);
        if (total > 0) RLFLOW_CUDA_CHECK(cudaMemsetAsync(m_memory.get(), fill_byte, total, stream));
        std::vector<float*> buffers;
        for (const std::size_t offset : offsets)
            buffers.push_back(reinterpret_cast<float*>(static_cast<std::byte*>(m_memory.get()) + offset));
        return buffers;
    }

private:
    void grow(std::size_t bytes) {
        // Free first, so that the device never holds the old and the new scratch at once.
        m_memory.reset();
        m_capacity = 0;
        RLFLOW_CUDA_CHECK(cudaMalloc(m_memory.out(), bytes));
        m_capacity = bytes;
    }

    DeviceMemory m_memory;
    std::size_t m_capacity = 0;
};

}  // namespace rlflow::cost::detail
