#pragma once
/// \file
/// The CUDA kernels of the whole-graph executor (cost/cuda_executor.hpp), for what cuDNN
/// and cuBLAS have no call for, or none with ONNX's exact semantics: elementwise maps and
/// numpy-broadcasting binary ops, strided copies (transpose, concat, split, broadcast,
/// kernel enlarging), index gathers (pad, grouped-kernel merging), bias plus activation
/// after a convolution, inference batch normalisation, pooling (with ceil mode, dilation
/// and both count_include_pad rules), row means, softmax and layer normalisation.
///
/// Every kernel is a template or an inline __global__, so including this from several .cu
/// files defines nothing twice. Indices are 64-bit. nvcc only.

#if !defined(__CUDACC__)
#error "rlflow/cost/detail/cuda_graph_kernels.cuh holds CUDA kernels: include it only from .cu files compiled by nvcc"
#endif

#include <rlflow/core/detail/cuda_grid.cuh>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace rlflow::cost::detail {

using rlflow::detail::cuda_block_threads;
using rlflow::detail::cuda_blocks;
using rlflow::detail::cuda_max_blocks;
using rlflow::detail::grid_thread;
using rlflow::detail::grid_threads;

/// The most dimensions a kernel walks (Shape::max_rank).
inline constexpr int walk_rank = 6;

/// An iteration shape, row-major, and the element strides of up to three operands over
/// it (0 repeats an operand along a dimension: numpy broadcasting).
struct StridedWalk {
    int rank = 0;
    std::int64_t dims[walk_rank] = {};
    std::int64_t a[walk_rank] = {};
    std::int64_t b[walk_rank] = {};
    std::int64_t out[walk_rank] = {};
};

/// The offsets of flat element i of the walk's shape in the operands a, b and out.
struct WalkOffsets {
    std::int64_t a = 0, b = 0, out = 0;
};

__device__ inline WalkOffsets walk_offsets(const StridedWalk& w, std::int64_t i) {
    WalkOffsets o;
    for (int d = w.rank - 1; d >= 0; --d) {
        const std::int64_t index = i % w.dims[d];
        i /= w.dims[d];
        o.a += index * w.a[d];
        o.b += index * w.b[d];
        o.out += index * w.out[d];
    }
    return o;
}

// ---- element functions ------------------------------------------------------------------

struct ReluFn {
    __device__ static float apply(float x, float, float) { return x > 0.0f ? x : 0.0f; }
};
struct SigmoidFn {
    __device__ static float apply(float x, float, float) { return 1.0f / (1.0f + expf(-x)); }
};
struct TanhFn {
    __device__ static float apply(float x, float, float) { return tanhf(x); }
};
struct ErfFn {
    __device__ static float apply(float x, float, float) { return erff(x); }
};
struct SqrtFn {
    __device__ static float apply(float x, float, float) { return sqrtf(x); }
};
/// Clip to [low, high]: fminf/fmaxf would turn a NaN into a bound, ONNX keeps it.
struct ClipFn {
    __device__ static float apply(float x, float low, float high) { return x < low ? low : (x > high ? high : x); }
};

/// max(0, min(1, alpha x + beta)); `alpha` and `beta` come as the two parameters.
struct HardSigmoidFn {
    __device__ static float apply(float x, float alpha, float beta) {
        const float y = alpha * x + beta;
        return y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y);
    }
};
struct HardSwishFn {
    __device__ static float apply(float x, float, float) { return x * HardSigmoidFn::apply(x, 1.0f / 6.0f, 0.5f); }
};
/// Gelu: the first parameter is 1 for the tanh approximation, 0 for the exact form
/// (exec's gelu_kernel has the same operations).
struct GeluFn {
    static constexpr float root_two = 1.41421356f, root_two_over_pi = 0.7978845608028654f, cubic = 0.044715f;
    __device__ static float apply(float x, float tanh_form, float) {
        if (tanh_form != 0.0f) return 0.5f * x * (1.0f + tanhf(root_two_over_pi * (x + cubic * x * x * x)));
        return (x * (erff(x / root_two) + 1.0f)) * 0.5f;
    }
};
struct LeakyReluFn {
    __device__ static float apply(float x, float alpha, float) { return x >= 0.0f ? x : alpha * x; }
};

struct AddFn {
    __device__ static float apply(float a, float b) { return a + b; }
};
struct SubFn {
    __device__ static float apply(float a, float b) { return a - b; }
};
struct MulFn {
    __device__ static float apply(float a, float b) { return a * b; }
};
struct DivFn {
    __device__ static float apply(float a, float b) { return a / b; }
};
struct PowFn {
    __device__ static float apply(float a, float b) { return powf(a, b); }
};

// ---- elementwise --------------------------------------------------------------------------

template <class T>
__global__ void graph_fill_kernel(T* out, std::int64_t n, T value) {
    for (std::int64_t i = grid_thread(); i < n; i += grid_threads()) out[i] = value;
}

/// out[i] = Fn(in[i]) over n contiguous elements; `low` and `high` are the op's two
/// parameters (Clip's bounds, HardSigmoid's alpha and beta, LeakyRelu's alpha).
template <class Fn>
__global__ void graph_unary_kernel(std::int64_t n, float* out, const float* in, float low, float high) {
    for (std::int64_t i = grid_thread(); i < n; i += grid_threads()) out[i] = Fn::apply(in[i], low, high);
}

/// out[i] = Fn(a[walk a], b[walk b]) over the walk's shape, out contiguous.
template <class Fn>
__global__ void graph_binary_kernel(StridedWalk w, std::int64_t n, float* out, const float* a, const float* b) {
    for (std::int64_t i = grid_thread(); i < n; i += grid_threads()) {
        const WalkOffsets o = walk_offsets(w, i);
        out[i] = Fn::apply(a[o.a], b[o.b]);
    }
}

/// out[out_base + walk out] = in[in_base + walk a] over the walk's shape: a transpose, a
/// broadcast, one part of a concat or a split, a kernel placed inside a larger one.
template <class T>
__global__ void graph_copy_kernel(StridedWalk w, std::int64_t n, T* out, std::int64_t out_base, const T* in,
                                  std::int64_t in_base) {
    for (std::int64_t i = grid_thread(); i < n; i += grid_threads()) {
        const WalkOffsets o = walk_offsets(w, i);
        out[out_base + o.out] = in[in_base + o.a];
    }
}

/// out[i] = in[index[i]], or `value` where index[i] < 0.
template <class T>
__global__ void graph_gather_kernel(std::int64_t n, T* out, const T* in, const std::int64_t* index, T value) {
    for (std::int64_t i = grid_thread(); i < n; i += grid_threads()) out[i] = index[i] < 0 ? value : in[index[i]];
}

/// The fused activation of a Conv2D (Activation's values: 0 none, 1 ReLU, 2 sigmoid, 3 tanh).
__device__ inline float graph_activation(int activation, float x) {
    switch (activation) {
        case 1: return ReluFn::apply(x, 0.0f, 0.0f);
        case 2: return SigmoidFn::apply(x, 0.0f, 0.0f);
        case 3: return TanhFn::apply(x, 0.0f, 0.0f);
        default: return x;
    }
}

/// In place over an (N, C, inner) tensor: y = activation(y + bias[c]); bias may be null.
__global__ inline void graph_bias_activation_kernel(std::int64_t n, std::int64_t channels, std::int64_t inner, float* y,
                                                    const float* bias, int activation) {
    for (std::int64_t i = grid_thread(); i < n; i += grid_threads()) {
        const float shifted = bias != nullptr ? y[i] + bias[(i / inner) % channels] : y[i];
        y[i] = graph_activation(activation, shifted);
    }
}

/// The sizes of one ConvTranspose (NCHW): input (batch, channels, height, width), output
/// (batch, filters, out_height, out_width), weight (channels, filters / group, kernel_h,
/// kernel_w).
struct ConvTransposeProblem {
    std::int64_t batch = 1, channels = 1, height = 1, width = 1, filters = 1, out_height = 1, out_width = 1;
    std::int64_t group = 1, kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0,
                 dilation_h = 1, dilation_w = 1;
};

/// ConvTranspose as a gather: one thread per output element sums the input elements whose
/// taps land on it (position h * stride - pad + k * dilation), then adds the bias (may be
/// null). Any pads, output padding and groups.
__global__ inline void graph_conv_transpose_kernel(ConvTransposeProblem p, std::int64_t n, float* out, const float* x,
                                                   const float* w, const float* bias) {
    const std::int64_t per_group_in = p.channels / p.group, per_group_out = p.filters / p.group;
    for (std::int64_t i = grid_thread(); i < n; i += grid_threads()) {
        const std::int64_t ow = i % p.out_width, oh = (i / p.out_width) % p.out_height;
        const std::int64_t m = (i / (p.out_width * p.out_height)) % p.filters, b = i / (p.out_width * p.out_height * p.filters);
        const std::int64_t g = m / per_group_out, local = m % per_group_out;
        float sum = bias != nullptr ? bias[m] : 0.0f;
        for (std::int64_t c = g * per_group_in; c < (g + 1) * per_group_in; ++c)
            for (std::int64_t kh = 0; kh < p.kernel_h; ++kh) {
                const std::int64_t th = oh + p.pad_top - kh * p.dilation_h;
                if (th < 0 || th % p.stride_h != 0 || th / p.stride_h >= p.height) continue;
                for (std::int64_t kw = 0; kw < p.kernel_w; ++kw) {
                    const std::int64_t tw = ow + p.pad_left - kw * p.dilation_w;
                    if (tw < 0 || tw % p.stride_w != 0 || tw / p.stride_w >= p.width) continue;
                    sum += x[((b * p.channels + c) * p.height + th / p.stride_h) * p.width + tw / p.stride_w]
                           * w[((c * per_group_out + local) * p.kernel_h + kh) * p.kernel_w + kw];
                }
            }
        out[i] = sum;
    }
}

/// BatchNormalization in inference mode over (N, C, inner):
/// y = (x - mean[c]) * scale[c] / sqrt(var[c] + epsilon) + shift[c].
__global__ inline void graph_batch_norm_kernel(std::int64_t n, std::int64_t channels, std::int64_t inner, float* y,
                                               const float* x, const float* scale, const float* shift,
                                               const float* mean, const float* variance, float epsilon) {
    for (std::int64_t i = grid_thread(); i < n; i += grid_threads()) {
        const std::int64_t c = (i / inner) % channels;
        const float a = scale[c] / sqrtf(variance[c] + epsilon);
        y[i] = (x[i] - mean[c]) * a + shift[c];
    }
}

// ---- pooling --------------------------------------------------------------------------------

/// One spatial axis of a pooling window (as exec's WindowAxis).
struct PoolAxis {
    std::int64_t input = 1, output = 1, kernel = 1, stride = 1, pad_begin = 0, pad_end = 0, dilation = 1;
};

/// A pooling op over `planes` (N * C) planes; kind 0 max, 1 average over the input taps,
/// 2 average over the taps inside the padded extent (count_include_pad).
struct PoolProblem {
    std::int64_t planes = 1;
    PoolAxis axes[2];
    int kind = 0;
};

/// The taps [begin, end) of output `o` along `axis` whose input position lies in [lo, hi).
__device__ inline void pool_taps(const PoolAxis& axis, std::int64_t o, std::int64_t lo, std::int64_t hi,
                                 std::int64_t& begin, std::int64_t& end) {
    const std::int64_t start = o * axis.stride - axis.pad_begin;
    begin = 0;
    while (begin < axis.kernel && start + begin * axis.dilation < lo) ++begin;
    end = begin;
    while (end < axis.kernel && start + end * axis.dilation < hi) ++end;
}

/// One thread per output element. Max over the input taps (padding never wins; a window
/// with none gives the lowest float, as ONNX Runtime does); the average divides by the
/// input taps or, with count_include_pad, the taps inside the padded extent, and a window
/// with nothing to divide by gives 0.
__global__ inline void graph_pool_kernel(PoolProblem p, float* out, const float* in) {
    const PoolAxis& h = p.axes[0];
    const PoolAxis& w = p.axes[1];
    const std::int64_t n = p.planes * h.output * w.output;
    for (std::int64_t i = grid_thread(); i < n; i += grid_threads()) {
        const std::int64_t ow = i % w.output;
        const std::int64_t oh = (i / w.output) % h.output;
        const std::int64_t plane = i / (w.output * h.output);
        std::int64_t h0, h1, w0, w1;
        pool_taps(h, oh, 0, h.input, h0, h1);
        pool_taps(w, ow, 0, w.input, w0, w1);
        const float* x = in + plane * h.input * w.input;
        float acc = p.kind == 0 ? -3.402823466e38f : 0.0f;
        for (std::int64_t kh = h0; kh < h1; ++kh) {
            const float* line = x + (oh * h.stride - h.pad_begin + kh * h.dilation) * w.input;
            for (std::int64_t kw = w0; kw < w1; ++kw) {
                const float v = line[ow * w.stride - w.pad_begin + kw * w.dilation];
                acc = p.kind == 0 ? (v > acc ? v : acc) : acc + v;
            }
        }
        if (p.kind != 0) {
            std::int64_t divisor = (h1 - h0) * (w1 - w0);
            if (p.kind == 2) {
                std::int64_t ph0, ph1, pw0, pw1;
                pool_taps(h, oh, -h.pad_begin, h.input + h.pad_end, ph0, ph1);
                pool_taps(w, ow, -w.pad_begin, w.input + w.pad_end, pw0, pw1);
                divisor = (ph1 - ph0) * (pw1 - pw0);
            }
            acc = divisor > 0 ? acc / static_cast<float>(divisor) : 0.0f;
        }
        out[i] = acc;
    }
}

// ---- row reductions -------------------------------------------------------------------------

/// The row reductions: a start, how two partial results combine, the value for `cols`.
struct RowMean {
    __device__ static float start() { return 0.0f; }
    __device__ static float combine(float a, float b) { return a + b; }
    __device__ static float finish(float total, std::int64_t cols) { return total / static_cast<float>(cols); }
};
struct RowSum {
    __device__ static float start() { return 0.0f; }
    __device__ static float combine(float a, float b) { return a + b; }
    __device__ static float finish(float total, std::int64_t) { return total; }
};
/// Max that keeps a NaN, as the reference executor does.
struct RowMax {
    __device__ static float start() { return -INFINITY; }
    __device__ static float combine(float a, float b) { return a != a || a > b ? a : b; }
    __device__ static float finish(float total, std::int64_t) { return total; }
};

/// `value` combined over the block's threads by `Reduction`, in every thread (a tree in
/// shared memory; blockDim.x is cuda_block_threads).
template <class Reduction>
__device__ float block_reduce(float value, float* shared) {
    shared[threadIdx.x] = value;
    __syncthreads();
    for (int half = cuda_block_threads / 2; half > 0; half /= 2) {
        if (static_cast<int>(threadIdx.x) < half)
            shared[threadIdx.x] = Reduction::combine(shared[threadIdx.x], shared[threadIdx.x + half]);
        __syncthreads();
    }
    const float total = shared[0];
    __syncthreads();
    return total;
}

/// out[r] = the reduction of row r of a (rows, cols) matrix: one block per row (grid-strided).
template <class Reduction>
__global__ void graph_row_reduce_kernel(std::int64_t rows, std::int64_t cols, float* out, const float* in) {
    __shared__ float shared[cuda_block_threads];
    for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        float partial = Reduction::start();
        for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) partial = Reduction::combine(partial, in[r * cols + c]);
        const float total = block_reduce<Reduction>(partial, shared);
        if (threadIdx.x == 0) out[r] = Reduction::finish(total, cols);
    }
}

/// LayerNormalization over rows of `cols`: (x - mean) / sqrt(biased variance + epsilon),
/// times scale[c] plus shift[c] (both already broadcast to the row; shift may be null).
/// InstanceNormalization is the same over (n, c) planes with one scale and shift per
/// channel: `channels` > 0 takes them from scale[r % channels] and shift[r % channels].
/// One block per row; the variance is taken around the mean (two passes), not as
/// E[x^2] - mean^2, which cancels catastrophically.
__global__ inline void graph_layer_norm_kernel(std::int64_t rows, std::int64_t cols, float* out, const float* in,
                                               const float* scale, const float* shift, float epsilon,
                                               std::int64_t channels) {
    __shared__ float shared[cuda_block_threads];
    for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* x = in + r * cols;
        float sum = 0.0f;
        for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += x[c];
        const float mean = block_reduce<RowSum>(sum, shared) / static_cast<float>(cols);
        float squares = 0.0f;
        for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) squares += (x[c] - mean) * (x[c] - mean);
        const float variance = block_reduce<RowSum>(squares, shared) / static_cast<float>(cols);
        const float inverse = rsqrtf(variance + epsilon);
        for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
            const std::int64_t k = channels > 0 ? r % channels : c;
            out[r * cols + c] = (x[c] - mean) * inverse * scale[k] + (shift != nullptr ? shift[k] : 0.0f);
        }
    }
}

/// What a Resize launch needs of exec's ResizePlan: the output shape and where each axis's
/// taps start in the tables (indices already times the input's strides).
struct ResizeProblem {
    int rank = 0;
    std::uint32_t blended = 0;
    std::int64_t out_dims[walk_rank] = {};
    std::int64_t first_tap[walk_rank] = {};
};

/// Resize: one thread per output element, the weighted sum over the corners of its taps on
/// the blended axes (nearest blends none: a gather).
__global__ inline void graph_resize_kernel(ResizeProblem p, std::int64_t n, float* out, const float* in,
                                           const std::int64_t* low, const std::int64_t* high, const float* low_weight,
                                           const float* high_weight) {
    for (std::int64_t i = grid_thread(); i < n; i += grid_threads()) {
        std::int64_t tap[walk_rank];
        std::int64_t rest = i, base = 0;
        int blended = 0;
        for (int d = p.rank - 1; d >= 0; --d) {
            tap[d] = p.first_tap[d] + rest % p.out_dims[d];
            rest /= p.out_dims[d];
            if ((p.blended >> d) & 1u) ++blended;
            else base += low[tap[d]];
        }
        if (blended == 0) {
            out[i] = in[base];
            continue;
        }
        float sum = 0.0f;
        for (int corner = 0; corner < (1 << blended); ++corner) {
            std::int64_t offset = base;
            float weight = 1.0f;
            int k = 0;
            for (int d = 0; d < p.rank; ++d) {
                if (!((p.blended >> d) & 1u)) continue;
                const bool up = ((corner >> k++) & 1) != 0;
                offset += up ? high[tap[d]] : low[tap[d]];
                weight *= up ? high_weight[tap[d]] : low_weight[tap[d]];
            }
            sum += weight * in[offset];
        }
        out[i] = sum;
    }
}

/// Softmax along the middle axis of (outer, length, inner): one thread per (outer, inner)
/// column, shifted by the column's maximum so that no exponent overflows.
__global__ inline void graph_softmax_kernel(std::int64_t outer, std::int64_t length, std::int64_t inner, float* out,
                                            const float* in) {
    const std::int64_t columns = outer * inner;
    for (std::int64_t i = grid_thread(); i < columns; i += grid_threads()) {
        const std::int64_t base = (i / inner) * length * inner + i % inner;
        float maximum = -3.402823466e38f;
        for (std::int64_t k = 0; k < length; ++k) maximum = fmaxf(maximum, in[base + k * inner]);
        float sum = 0.0f;
        for (std::int64_t k = 0; k < length; ++k) {
            const float e = expf(in[base + k * inner] - maximum);
            out[base + k * inner] = e;
            sum += e;
        }
        for (std::int64_t k = 0; k < length; ++k) out[base + k * inner] /= sum;
    }
}

}  // namespace rlflow::cost::detail
