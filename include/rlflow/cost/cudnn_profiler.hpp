#pragma once
/// \file
/// CudnnProfiler: a cost backend that runs each op on a GPU with cuDNN and cuBLAS and
/// times it, as TASO measures operator costs (Jia et al., "TASO: Optimizing Deep Learning
/// Computation with Automatic Generation of Graph Substitutions", SOSP 2019, and its cuDNN
/// backend's measure_*_cost functions): each op is run `warmup_runs` times, then
/// `timed_runs` times between two CUDA events, and costs the mean. CostModel caches the costs; the profiler itself memoises the convolution
/// algorithm it chose per convolution geometry.
///
/// The only header through which rlflow reaches CUDA; link `rlflow::cuda`. Every tensor is
/// fp32, whatever the graph's element types. Buffers are carved from one growing scratch
/// allocation filled with a finite positive value (0.747).
///
/// How convolutions and matrix products multiply is a setting, CudnnProfilerOptions::math,
/// named in `name()` (so persistent cost caches and reports keep the two apart):
/// | MathMode | cuDNN convolutions | cuBLAS products | roofline to compare with |
/// | --- | --- | --- | --- |
/// | fp32 (default) | CUDNN_FMA_MATH: CUDA-core FMA kernels only, no tensor cores | cublasSetMathMode CUBLAS_DEFAULT_MATH, cublasGemmEx compute type CUBLAS_COMPUTE_32F: no TF32 | the analytic v100, a100, h100 presets (datasheet fp32 peaks) |
/// | tf32 | CUDNN_DEFAULT_MATH, which lets fp32 data run as TF32 on tensor cores (FP16 down-conversion, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, is never allowed) | CUBLAS_TF32_TENSOR_OP_MATH and CUBLAS_COMPUTE_32F_FAST_TF32 | the analytic a100-tf32, h100-tf32 presets (datasheet dense TF32 peaks) |
///
/// tf32 needs TF32 tensor cores (compute capability 8.0, Ampere, or newer) and libraries
/// allowed to use them: NVIDIA_TF32_OVERRIDE=0 silently turns TF32 off in cuDNN and cuBLAS,
/// so a tf32 profiler refuses to start under it rather than time fp32 under a tf32 name.
/// Other ops (elementwise, pooling, normalisation, reductions, copies) have no tensor-core
/// path and run the same in both modes.
///
/// What times each op (this is a header-only library built without nvcc, so where cuDNN
/// and cuBLAS have no call for an op, a library call moving the same bytes stands in):
/// | op | timed with |
/// | --- | --- |
/// | Conv2D | the fastest of up to 8 algorithms from cudnnFindConvolutionForwardAlgorithmEx under the math mode's math type, groups via cudnnSetConvolutionGroupCount. Fused ReLU (with or without bias): cudnnConvolutionBiasActivationForward. Bias alone: cudnnConvolutionForward + cudnnAddTensor. Sigmoid, tanh: the convolution, the bias, then cudnnActivationForward (cuDNN fuses only ReLU). |
/// | MatMul, Gemm | cublasGemmEx on fp32 matrices with the math mode's compute type, or cublasGemmStridedBatchedEx for a batch (a broadcast operand has stride 0); Gemm's bias: cudnnAddTensor |
/// | Add, Sub, Mul, Div, Pow | cudnnOpTensor ADD or MUL with the op's broadcast shapes (Div and Pow as MUL) |
/// | Relu, Sigmoid, Tanh, Clip, Erf | cudnnActivationForward (Clip as clipped ReLU, Erf as tanh) |
/// | Sqrt | cudnnOpTensor SQRT |
/// | MaxPool, AveragePool | cudnnPoolingForward (no dilation in cuDNN's pooling: ignored) |
/// | Softmax | cudnnSoftmaxForward over the axis |
/// | BatchNormalization | cudnnBatchNormalizationForwardInference |
/// | ReduceMean, GlobalAveragePool | cudnnReduceTensor AVG |
/// | LayerNormalization | cudnnReduceTensor AVG over the normalised axes (the statistics pass), plus cudnnOpTensor MUL by the scale (the normalising pass) |
/// | Transpose, Concat, Split, Pad, Enlarge, MergeGConv, Opaque | cudaMemcpyAsync device to device of (input bytes + output bytes) / 2, which reads and writes what the op reads and writes |
/// | Reshape, Flatten, Identity, sources | 0 (no data moves) |
///
/// Broadcasts cudnnOpTensor cannot express (neither operand has the output's shape, or a
/// rank above 5) fall back to the copy of the same bytes.

#include <rlflow/core/detail/cuda_check.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/core/op_traits.hpp>
#include <rlflow/cost/cost_backend.hpp>
#include <rlflow/cost/detail/cuda_resources.hpp>
#include <rlflow/cost/detail/cudnn_problems.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow::cost {

/// The arithmetic cuDNN and cuBLAS may use to multiply fp32 tensors in convolutions and
/// matrix products.
enum class MathMode {
    /// IEEE fp32 fused multiply-adds on CUDA cores; no tensor cores.
    fp32,
    /// TF32 on tensor cores: inputs rounded to a 10-bit mantissa, fp32 accumulation.
    tf32,
};

/// "fp32" or "tf32", as the mode reads in a profiler's name.
[[nodiscard]] constexpr std::string_view math_mode_name(MathMode mode) noexcept {
    return mode == MathMode::tf32 ? "tf32" : "fp32";
}

/// The settings of a CudnnProfiler.
struct CudnnProfilerOptions {
    /// The CUDA device index to measure on.
    int device = 0;
    /// fp32 by default: the arithmetic the graph's fp32 tensors ask for, and the one the
    /// analytic presets without a suffix model.
    MathMode math = MathMode::fp32;
};

/// Prices ops by running them on one GPU with cuDNN and cuBLAS.
class CudnnProfiler {
public:
    /// Runs before timing, to warm caches, clocks and lazily loaded kernels.
    static constexpr int warmup_runs = 8;
    /// Runs timed between the two events; an op costs their mean.
    static constexpr int timed_runs = 32;
    /// How many convolution algorithms cudnnFindConvolutionForwardAlgorithmEx tries.
    static constexpr int conv_algorithms_requested = 8;
    /// The most workspace a convolution algorithm may use (TASO allowed 1 GiB too).
    static constexpr std::size_t max_workspace_bytes = std::size_t{1} << 30;

    /// An fp32 profiler on CUDA device `device`; see the constructor from options.
    explicit CudnnProfiler(int device = 0) : CudnnProfiler(CudnnProfilerOptions{.device = device}) {}

    /// A profiler on CUDA device `options.device` multiplying in `options.math`. Throws
    /// cuda_error when there is no such device (or no CUDA device at all) or when setting
    /// up cuDNN or cuBLAS fails; precondition_error when the device or the environment
    /// cannot run the math mode (see math_mode_unavailable_reason).
    explicit CudnnProfiler(CudnnProfilerOptions options)
        : m_device(options.device), m_math(options.math), m_math_settings(math_settings(options.math)) {
        const cudaDeviceProp properties = device_properties(m_device);
        const std::string unavailable = math_mode_unavailable_reason(m_math, m_device, properties);
        RLFLOW_EXPECTS(unavailable.empty(), precondition_error, "cuDNN profiler: " + unavailable);
        m_name = profiler_name(properties.name, m_math);
        RLFLOW_CUDA_CHECK(cudaSetDevice(m_device));
        // The handle's math mode governs cuBLAS calls that take no compute type; the GEMMs
        // timed here pass the matching compute type too, so both say the same thing.
        m_session.emplace(m_math_settings.cublas);
    }

    /// The number of CUDA devices; 0 when there is none or no usable driver.
    [[nodiscard]] static int device_count() noexcept {
        int count = 0;
        return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
    }

    /// Why a profiler on CUDA device `device` (with these properties) cannot multiply in
    /// `mode` as its name would claim; empty when it can. fp32 runs everywhere; tf32 needs
    /// compute capability 8.0 or newer and NVIDIA_TF32_OVERRIDE not set to 0.
    [[nodiscard]] static std::string math_mode_unavailable_reason(MathMode mode, int device,
                                                                  const cudaDeviceProp& properties) {
        constexpr int first_tf32_major = 8;  // Ampere
        if (mode != MathMode::tf32) return {};
        const std::string device_text = "CUDA device " + std::to_string(device) + " '" + properties.name + "'";
        if (properties.major < first_tf32_major)
            return "math mode tf32 needs TF32 tensor cores (compute capability 8.0 or newer), but " + device_text
                   + " has compute capability " + std::to_string(properties.major) + "."
                   + std::to_string(properties.minor) + "; use fp32";
        const char* override_tf32 = std::getenv("NVIDIA_TF32_OVERRIDE");
        if (override_tf32 != nullptr && std::string_view(override_tf32) == "0")
            return "math mode tf32 on " + device_text
                   + ": NVIDIA_TF32_OVERRIDE=0 turns TF32 off in cuDNN and cuBLAS; unset it or use fp32";
        return {};
    }

    /// Whether a profiler can run on CUDA device `device` in `mode`: the device exists and
    /// math_mode_unavailable_reason has nothing to say.
    [[nodiscard]] static bool supports(MathMode mode, int device = 0) {
        cudaDeviceProp properties{};
        if (device < 0 || device >= device_count()) return false;
        if (cudaGetDeviceProperties(&properties, device) != cudaSuccess) return false;
        return math_mode_unavailable_reason(mode, device, properties).empty();
    }

    /// The name of a profiler on a device called `device_name` multiplying in `mode`:
    /// "cudnn:<device name>:<mode>", for instance "cudnn:NVIDIA H100 80GB HBM3:fp32".
    [[nodiscard]] static std::string profiler_name(std::string_view device_name, MathMode mode) {
        return "cudnn:" + std::string(device_name) + ":" + std::string(math_mode_name(mode));
    }

    /// profiler_name of its device and math mode: it keys persistent cost caches and is
    /// printed in reports, so costs are kept per device and per math mode.
    [[nodiscard]] std::string name() const { return m_name; }
    /// The CUDA device index it measures on.
    [[nodiscard]] int device() const noexcept { return m_device; }
    /// The arithmetic its convolutions and matrix products use.
    [[nodiscard]] MathMode math_mode() const noexcept { return m_math; }

    /// What a MathMode sets in each library (the table in the file's comment).
    struct MathSettings {
        /// Set on every convolution descriptor before FindEx searches it.
        cudnnMathType_t convolution;
        /// cublasSetMathMode on the handle.
        cublasMath_t cublas;
        /// The compute type of cublasGemmEx and cublasGemmStridedBatchedEx.
        cublasComputeType_t gemm_compute;
    };

    [[nodiscard]] static constexpr MathSettings math_settings(MathMode mode) noexcept {
        // fp32 keeps cuBLAS's default math rather than CUBLAS_PEDANTIC_MATH: with
        // COMPUTE_32F neither uses TF32, and the default is what fp32 frameworks run with
        // TF32 off, while cuBLAS documents pedantic as a debugging mode that may be slower.
        if (mode == MathMode::tf32)
            return {.convolution = CUDNN_DEFAULT_MATH,
                    .cublas = CUBLAS_TF32_TENSOR_OP_MATH,
                    .gemm_compute = CUBLAS_COMPUTE_32F_FAST_TF32};
        return {.convolution = CUDNN_FMA_MATH, .cublas = CUBLAS_DEFAULT_MATH, .gemm_compute = CUBLAS_COMPUTE_32F};
    }

    /// What this profiler's math mode sets in cuDNN and cuBLAS.
    [[nodiscard]] MathSettings settings() const noexcept { return m_math_settings; }

    /// The convolution descriptors of one geometry, the output's dims with them.
    struct ConvSetup {
        detail::TensorDescriptor input, output, bias;
        detail::FilterDescriptor filter;
        detail::ConvolutionDescriptor convolution;
        std::array<int, 4> output_dims{};
    };

    /// The descriptors of convolution `g` (cuDNN pads both ends of an axis alike), the
    /// convolution descriptor set to `math`.
    [[nodiscard]] static ConvSetup conv_setup(const detail::ConvGeometry& g, cudnnMathType_t math) {
        ConvSetup s;
        s.input = detail::tensor_descriptor(g.input);
        RLFLOW_CUDA_CHECK(cudnnCreateFilterDescriptor(s.filter.out()));
        RLFLOW_CUDA_CHECK(cudnnSetFilter4dDescriptor(s.filter.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, g.filter[0],
                                                     g.filter[1], g.filter[2], g.filter[3]));
        const detail::Window2d& w = g.window;
        RLFLOW_CUDA_CHECK(cudnnCreateConvolutionDescriptor(s.convolution.out()));
        RLFLOW_CUDA_CHECK(cudnnSetConvolution2dDescriptor(s.convolution.get(), w.pads[0], w.pads[1], w.strides[0],
                                                          w.strides[1], w.dilations[0], w.dilations[1],
                                                          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
        RLFLOW_CUDA_CHECK(cudnnSetConvolutionGroupCount(s.convolution.get(), g.group));
        RLFLOW_CUDA_CHECK(cudnnSetConvolutionMathType(s.convolution.get(), math));
        auto& o = s.output_dims;
        RLFLOW_CUDA_CHECK(cudnnGetConvolution2dForwardOutputDim(s.convolution.get(), s.input.get(), s.filter.get(),
                                                                &o[0], &o[1], &o[2], &o[3]));
        s.output = detail::tensor_descriptor(o);
        s.bias = detail::tensor_descriptor(std::array{1, g.filter[0], 1, 1});
        return s;
    }

    /// The fastest algorithm for convolution `g` that the math mode allows, found once per
    /// geometry (cost/cuda_executor.hpp runs its convolutions with it too). The heuristic
    /// lists every algorithm with the workspace it needs; FindEx then runs each within the
    /// largest such workspace (at most max_workspace_bytes), under the descriptor's math
    /// type, and returns them fastest first.
    [[nodiscard]] detail::ConvAlgorithm convolution_algorithm(const detail::ConvGeometry& g) {
        if (const auto it = m_conv_algorithms.find(g); it != m_conv_algorithms.end()) return it->second;
        const ConvSetup s = conv_setup(g, m_math_settings.convolution);
        std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> results{};
        int count = 0;
        RLFLOW_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
            m_session->cudnn.get(), s.input.get(), s.filter.get(), s.convolution.get(), s.output.get(),
            static_cast<int>(results.size()), &count, results.data()));
        std::size_t workspace = 0;
        for (int i = 0; i < count; ++i)
            if (results[i].status == CUDNN_STATUS_SUCCESS)
                workspace = std::max(workspace, std::min(results[i].memory, max_workspace_bytes));
        const auto buffers = carve({detail::float_bytes(g.input), detail::float_bytes(g.filter),
                                    detail::float_bytes(s.output_dims), workspace});
        RLFLOW_CUDA_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
            m_session->cudnn.get(), s.input.get(), buffers[0], s.filter.get(), buffers[1], s.convolution.get(), s.output.get(),
            buffers[2], conv_algorithms_requested, &count, results.data(), buffers[3], workspace));
        for (int i = 0; i < count; ++i) {
            const std::optional<cudnnMathType_t> math = conv_math(results[i].mathType);
            if (results[i].status != CUDNN_STATUS_SUCCESS || results[i].memory > workspace || !math) continue;
            const detail::ConvAlgorithm found{results[i].algo, *math, results[i].memory};
            m_conv_algorithms.emplace(g, found);
            return found;
        }
        throw cuda_error("cudnnFindConvolutionForwardAlgorithmEx found no " + std::string(math_mode_name(m_math))
                         + " algorithm for a convolution of input "
                         + Shape{g.input[0], g.input[1], g.input[2], g.input[3]}.to_string() + " with filter "
                         + Shape{g.filter[0], g.filter[1], g.filter[2], g.filter[3]}.to_string());
    }

    /// Milliseconds for one execution of `op` on the device. Throws cuda_error when a
    /// CUDA, cuDNN or cuBLAS call fails.
    [[nodiscard]] double op_cost_ms(const OpSignature& op) {
        const OpTraits& traits = op_traits(op.op);
        if (traits.has(op_flag_source) || traits.has(op_flag_view)) return 0.0;
        // An op without output elements does no work (and cuDNN rejects empty tensors).
        const bool empty =
            std::all_of(op.outputs.begin(), op.outputs.end(), [](const TensorType& t) { return t.shape.numel() == 0; });
        if (empty) return 0.0;
        RLFLOW_CUDA_CHECK(cudaSetDevice(m_device));
        switch (op.op) {
            case OpKind::Conv2D: return conv_ms(op);
            case OpKind::ConvTranspose: {
                // Priced as the Conv2D it is the adjoint of (the same products, from the
                // output's shape to the input's), what cuDNN's backward-data pass costs.
                const std::array<TensorType, 2> forward_inputs{op.outputs[0], op.inputs[1]};
                return conv_ms(OpSignature{OpKind::Conv2D, op.attributes, forward_inputs, op.inputs.first(1)});
            }
            case OpKind::MatMul: return product_ms(detail::matmul_call(op), op);
            case OpKind::Gemm: return product_ms(detail::gemm_call(op), op);
            case OpKind::MaxPool:
            case OpKind::AveragePool: return pool_ms(op);
            case OpKind::Softmax: return softmax_ms(op);
            case OpKind::BatchNormalization: return batch_norm_ms(op);
            case OpKind::LayerNormalization: return layer_norm_ms(op);
            case OpKind::InstanceNormalization: return instance_norm_ms(op);
            // ReduceSum and ReduceMax read and write what ReduceMean does.
            case OpKind::ReduceMean:
            case OpKind::ReduceSum:
            case OpKind::ReduceMax: return mean_ms(op.inputs[0].shape, op.attributes.get_ints("axes"));
            case OpKind::GlobalAveragePool: {
                const Shape& x = op.inputs[0].shape;
                return mean_ms(x, detail::trailing_axes(2, x.rank()));
            }
            default: break;
        }
        if (traits.has(op_flag_elementwise)) return elementwise_ms(op);
        return copy_ms(op_bytes(traits, op.inputs, op.outputs));
    }

private:
    using TensorDescriptor = detail::TensorDescriptor;

    /// The math type to time a convolution algorithm with that FindEx reported running
    /// with `reported`, or nullopt where the mode forbids what it reported. FP16
    /// down-conversion is never allowed. fp32 times with CUDNN_FMA_MATH whatever was
    /// reported, since that is the type the search ran under; tf32 keeps what was reported
    /// (DEFAULT or TENSOR_OP), as FindEx measured that variant.
    [[nodiscard]] std::optional<cudnnMathType_t> conv_math(cudnnMathType_t reported) const noexcept {
        if (reported == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return std::nullopt;
        if (m_math == MathMode::tf32) return reported;
        if (reported == CUDNN_TENSOR_OP_MATH) return std::nullopt;
        return m_math_settings.convolution;
    }

    /// The properties of CUDA device `device`; throws cuda_error naming it when there is
    /// no such device (or no CUDA device at all).
    [[nodiscard]] static cudaDeviceProp device_properties(int device) {
        int count = 0;
        const cudaError_t status = cudaGetDeviceCount(&count);
        if (status != cudaSuccess || count == 0 || device < 0 || device >= count) {
            const std::string found = status != cudaSuccess
                                          ? "no CUDA device found, " + rlflow::detail::cuda_status_name(status)
                                      : count == 0 ? "no CUDA device found"
                                                   : std::to_string(count) + " CUDA device(s) found";
            throw cuda_error("CUDA device " + std::to_string(device) + " is not available: " + found);
        }
        cudaDeviceProp properties{};
        RLFLOW_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
        return properties;
    }

    static constexpr float one = 1.0F;
    static constexpr float zero = 0.0F;

    /// The mean time of `launch` over `timed_runs`, after `warmup_runs`.
    template <class Launch>
    [[nodiscard]] double time_ms(Launch&& launch) {
        for (int i = 0; i < warmup_runs; ++i) launch();
        RLFLOW_CUDA_CHECK(cudaEventRecord(m_session->start.get(), m_session->stream.get()));
        for (int i = 0; i < timed_runs; ++i) launch();
        RLFLOW_CUDA_CHECK(cudaEventRecord(m_session->stop.get(), m_session->stream.get()));
        RLFLOW_CUDA_CHECK(cudaEventSynchronize(m_session->stop.get()));
        float total_ms = 0.0F;
        RLFLOW_CUDA_CHECK(cudaEventElapsedTime(&total_ms, m_session->start.get(), m_session->stop.get()));
        return static_cast<double>(total_ms) / timed_runs;
    }

    [[nodiscard]] std::vector<float*> carve(std::initializer_list<std::size_t> bytes) {
        return m_scratch.carve(bytes, m_session->stream.get());
    }

    // ---- convolution ----------------------------------------------------------------------

    /// A convolution with its bias and fused activation. cuDNN fuses ReLU (and identity,
    /// with one algorithm only) into cudnnConvolutionBiasActivationForward; should it
    /// refuse the chosen algorithm, the unfused sequence is timed instead.
    [[nodiscard]] double conv_ms(const OpSignature& op) {
        const detail::ConvGeometry g = detail::conv_geometry(op);
        const ConvSetup s = conv_setup(g, m_math_settings.convolution);
        const detail::ConvAlgorithm a = convolution_algorithm(g);
        RLFLOW_CUDA_CHECK(cudnnSetConvolutionMathType(s.convolution.get(), a.math));
        const auto activation = static_cast<Activation>(op.attributes.get_int("activation", 0));
        const bool has_bias = op.inputs.size() == 3;
        const detail::ActivationDescriptor act =
            detail::activation_descriptor(detail::activation_mode(activation_op(activation)));
        const auto buffers =
            carve({detail::float_bytes(g.input), detail::float_bytes(g.filter), detail::float_bytes(s.output_dims),
                   detail::float_bytes(std::array{g.filter[0]}), a.workspace_bytes});
        float *x = buffers[0], *w = buffers[1], *y = buffers[2], *bias = buffers[3], *workspace = buffers[4];
        const auto convolve_bias_relu = [&] {
            return cudnnConvolutionBiasActivationForward(
                m_session->cudnn.get(), &one, s.input.get(), x, s.filter.get(), w, s.convolution.get(), a.algorithm, workspace,
                a.workspace_bytes, &zero, s.output.get(), y, s.bias.get(), bias, act.get(), s.output.get(), y);
        };
        if (activation == Activation::Relu) {
            const cudnnStatus_t probe = convolve_bias_relu();
            if (probe != CUDNN_STATUS_NOT_SUPPORTED) {
                rlflow::detail::cuda_check(probe, "cudnnConvolutionBiasActivationForward", __FILE__, __LINE__);
                return time_ms([&] { RLFLOW_CUDA_CHECK(convolve_bias_relu()); });
            }
        }
        return time_ms([&] {
            RLFLOW_CUDA_CHECK(cudnnConvolutionForward(m_session->cudnn.get(), &one, s.input.get(), x, s.filter.get(), w,
                                                      s.convolution.get(), a.algorithm, workspace, a.workspace_bytes,
                                                      &zero, s.output.get(), y));
            if (has_bias)
                RLFLOW_CUDA_CHECK(cudnnAddTensor(m_session->cudnn.get(), &one, s.bias.get(), bias, &one, s.output.get(), y));
            if (activation != Activation::None)
                RLFLOW_CUDA_CHECK(cudnnActivationForward(m_session->cudnn.get(), act.get(), &one, s.output.get(), y, &zero,
                                                         s.output.get(), y));
        });
    }

    // ---- matrix products ------------------------------------------------------------------

    /// Row-major C (m, n) = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so cuBLAS
    /// is handed B first, and the stored shapes' column counts are the leading dimensions.
    /// Every matrix is fp32 (CUDA_R_32F); the compute type is the math mode's, and alpha
    /// and beta are floats as every COMPUTE_32F type wants.
    void run_gemm(const detail::GemmCall& g, const float* a, const float* b, float* c) {
        const cublasOperation_t op_a = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
        const cublasOperation_t op_b = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
        const cublasComputeType_t compute = m_math_settings.gemm_compute;
        if (g.batch == 1) {
            RLFLOW_CUDA_CHECK(cublasGemmEx(m_session->cublas.get(), op_b, op_a, g.n, g.m, g.k, &g.alpha, b, CUDA_R_32F, g.ldb, a,
                                           CUDA_R_32F, g.lda, &zero, c, CUDA_R_32F, g.n, compute, CUBLAS_GEMM_DEFAULT));
            return;
        }
        RLFLOW_CUDA_CHECK(cublasGemmStridedBatchedEx(m_session->cublas.get(), op_b, op_a, g.n, g.m, g.k, &g.alpha, b, CUDA_R_32F,
                                                     g.ldb, g.stride_b, a, CUDA_R_32F, g.lda, g.stride_a, &zero, c,
                                                     CUDA_R_32F, g.n, static_cast<long long>(g.m) * g.n, g.batch,
                                                     compute, CUBLAS_GEMM_DEFAULT));
    }

    /// A MatMul or a Gemm; Gemm's bias C is added as beta C by cudnnAddTensor, which
    /// broadcasts it as ONNX does.
    [[nodiscard]] double product_ms(const detail::GemmCall& g, const OpSignature& op) {
        const bool has_bias = op.op == OpKind::Gemm && op.inputs.size() == 3;
        const std::vector<int> output_dims{g.m, g.n};
        const std::vector<int> bias_dims = has_bias ? detail::int_dims(op.inputs[2].shape, 2) : output_dims;
        const TensorDescriptor output = detail::tensor_descriptor(output_dims);
        const TensorDescriptor bias = detail::tensor_descriptor(bias_dims);
        const auto beta = static_cast<float>(op.attributes.get_float("beta", 1.0));
        const auto buffers = carve({g.a_bytes, g.b_bytes, g.c_bytes, has_bias ? detail::float_bytes(bias_dims) : 0});
        return time_ms([&] {
            run_gemm(g, buffers[0], buffers[1], buffers[2]);
            if (has_bias)
                RLFLOW_CUDA_CHECK(
                    cudnnAddTensor(m_session->cudnn.get(), &beta, bias.get(), buffers[3], &one, output.get(), buffers[2]));
        });
    }

    // ---- elementwise ----------------------------------------------------------------------

    /// Unary ops see their tensor as flat (every element is independent); Sqrt is the one
    /// unary OpTensor operation, the rest are activations.
    [[nodiscard]] double elementwise_ms(const OpSignature& op) {
        const bool unary = op.inputs.size() == 1;
        const Shape flat{op.inputs[0].shape.numel()};
        if (unary && op.op != OpKind::Sqrt) return activation_ms(detail::activation_mode(op.op), flat);
        const std::optional<double> ms = unary ? op_tensor_ms(CUDNN_OP_TENSOR_SQRT, flat, flat, flat)
                                               : op_tensor_ms(detail::op_tensor_op(op.op), op.inputs[0].shape,
                                                              op.inputs[1].shape, op.outputs[0].shape);
        return ms ? *ms : copy_ms(op_bytes(op_traits(op.op), op.inputs, op.outputs));
    }

    /// C = A op B by cudnnOpTensor, which reads A in C's shape and broadcasts B. The
    /// operands are swapped if only B has C's shape (the stand-ins ADD and MUL commute);
    /// nullopt where OpTensor cannot broadcast this way or the rank exceeds its 5.
    [[nodiscard]] std::optional<double> op_tensor_ms(cudnnOpTensorOp_t operation, const Shape& a_shape,
                                                     const Shape& b_shape, const Shape& c_shape) {
        constexpr int max_op_tensor_rank = 5;
        const int rank = c_shape.rank();
        std::vector<int> a = detail::int_dims(a_shape, rank), b = detail::int_dims(b_shape, rank);
        const std::vector<int> c = detail::int_dims(c_shape, rank);
        if (a != c) std::swap(a, b);
        if (a != c || rank > max_op_tensor_rank) return std::nullopt;
        detail::OpTensorDescriptor descriptor;
        RLFLOW_CUDA_CHECK(cudnnCreateOpTensorDescriptor(descriptor.out()));
        RLFLOW_CUDA_CHECK(
            cudnnSetOpTensorDescriptor(descriptor.get(), operation, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
        const TensorDescriptor ad = detail::tensor_descriptor(a), bd = detail::tensor_descriptor(b),
                               cd = detail::tensor_descriptor(c);
        const auto buffers = carve({detail::float_bytes(a), detail::float_bytes(b), detail::float_bytes(c)});
        return time_ms([&] {
            RLFLOW_CUDA_CHECK(cudnnOpTensor(m_session->cudnn.get(), descriptor.get(), &one, ad.get(), buffers[0], &one, bd.get(),
                                            buffers[1], &zero, cd.get(), buffers[2]));
        });
    }

    [[nodiscard]] double activation_ms(cudnnActivationMode_t mode, const Shape& shape) {
        const detail::ActivationDescriptor activation = detail::activation_descriptor(mode);
        const std::vector<int> dims = detail::int_dims(shape);
        const TensorDescriptor descriptor = detail::tensor_descriptor(dims);
        const auto buffers = carve({detail::float_bytes(dims), detail::float_bytes(dims)});
        return time_ms([&] {
            RLFLOW_CUDA_CHECK(cudnnActivationForward(m_session->cudnn.get(), activation.get(), &one, descriptor.get(),
                                                     buffers[0], &zero, descriptor.get(), buffers[1]));
        });
    }

    // ---- pooling, normalisation, reduction ------------------------------------------------

    [[nodiscard]] double pool_ms(const OpSignature& op) {
        const detail::Window2d w = detail::window_2d(op.attributes);
        const bool include_pad = op.attributes.get_int("count_include_pad", 0) != 0;
        const cudnnPoolingMode_t mode = op.op == OpKind::MaxPool ? CUDNN_POOLING_MAX
                                        : include_pad            ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                                 : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
        detail::PoolingDescriptor pooling;
        RLFLOW_CUDA_CHECK(cudnnCreatePoolingDescriptor(pooling.out()));
        RLFLOW_CUDA_CHECK(cudnnSetPooling2dDescriptor(pooling.get(), mode, CUDNN_PROPAGATE_NAN, w.kernel[0],
                                                      w.kernel[1], w.pads[0], w.pads[1], w.strides[0], w.strides[1]));
        const std::vector<int> x = detail::int_dims(op.inputs[0].shape);
        const TensorDescriptor input = detail::tensor_descriptor(x);
        std::array<int, 4> y{};
        RLFLOW_CUDA_CHECK(cudnnGetPooling2dForwardOutputDim(pooling.get(), input.get(), &y[0], &y[1], &y[2], &y[3]));
        const TensorDescriptor output = detail::tensor_descriptor(y);
        const auto buffers = carve({detail::float_bytes(x), detail::float_bytes(y)});
        return time_ms([&] {
            RLFLOW_CUDA_CHECK(cudnnPoolingForward(m_session->cudnn.get(), pooling.get(), &one, input.get(), buffers[0], &zero,
                                                  output.get(), buffers[1]));
        });
    }

    /// CHANNEL mode normalises over dimension 1 of (outer, axis, inner, 1).
    [[nodiscard]] double softmax_ms(const OpSignature& op) {
        const Shape& x = op.inputs[0].shape;
        const int axis = x.normalize_axis(op.attributes.get_int("axis", -1));
        const std::array dims{detail::to_int(x.product(0, axis)), detail::to_int(x[axis]),
                              detail::to_int(x.product(axis + 1, x.rank())), 1};
        const TensorDescriptor descriptor = detail::tensor_descriptor(dims);
        const auto buffers = carve({detail::float_bytes(dims), detail::float_bytes(dims)});
        return time_ms([&] {
            RLFLOW_CUDA_CHECK(cudnnSoftmaxForward(m_session->cudnn.get(), CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL,
                                                  &one, descriptor.get(), buffers[0], &zero, descriptor.get(),
                                                  buffers[1]));
        });
    }

    /// SPATIAL mode normalises per channel of (N, C, rest, 1).
    [[nodiscard]] double batch_norm_ms(const OpSignature& op) {
        const Shape& x = op.inputs[0].shape;
        const std::array dims{detail::to_int(x[0]), detail::to_int(x[1]), detail::to_int(x.product(2, x.rank())), 1};
        const std::array parameter_dims{1, dims[1], 1, 1};
        const TensorDescriptor data = detail::tensor_descriptor(dims);
        const TensorDescriptor parameters = detail::tensor_descriptor(parameter_dims);
        const double epsilon = std::max(op.attributes.get_float("epsilon", 1e-5), CUDNN_BN_MIN_EPSILON);
        const std::size_t data_bytes = detail::float_bytes(dims), parameter_bytes = detail::float_bytes(parameter_dims);
        const auto buffers =
            carve({data_bytes, data_bytes, parameter_bytes, parameter_bytes, parameter_bytes, parameter_bytes});
        return time_ms([&] {
            RLFLOW_CUDA_CHECK(cudnnBatchNormalizationForwardInference(
                m_session->cudnn.get(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, data.get(), buffers[0], data.get(), buffers[1],
                parameters.get(), buffers[2], buffers[3], buffers[4], buffers[5], epsilon));
        });
    }

    /// Legacy cuDNN has no layer normalisation: time its two passes, the statistics (a
    /// mean over the normalised axes) and the normalisation (x times the broadcast scale).
    [[nodiscard]] double layer_norm_ms(const OpSignature& op) {
        const Shape& x = op.inputs[0].shape;
        const int axis = x.normalize_axis(op.attributes.get_int("axis", -1));
        const double statistics = mean_ms(x, detail::trailing_axes(axis, x.rank()));
        if (const auto normalise = op_tensor_ms(CUDNN_OP_TENSOR_MUL, x, op.inputs[1].shape, x))
            return statistics + *normalise;
        return statistics + copy_ms(2.0 * static_cast<double>(op.inputs[0].bytes()));
    }

    /// InstanceNormalization: LayerNormalization's two passes over the (n, c) planes, the
    /// scale broadcast per channel.
    [[nodiscard]] double instance_norm_ms(const OpSignature& op) {
        const Shape& x = op.inputs[0].shape;
        const double statistics = mean_ms(x, detail::trailing_axes(2, x.rank()));
        Shape per_channel;
        for (int d = 0; d < x.rank(); ++d) per_channel.push_back(d == 1 ? x[1] : 1);
        if (const auto normalise = op_tensor_ms(CUDNN_OP_TENSOR_MUL, x, per_channel, x)) return statistics + *normalise;
        return statistics + copy_ms(2.0 * static_cast<double>(op.inputs[0].bytes()));
    }

    /// cudnnReduceTensor AVG of `x` over `axes` (none: all), into the keepdims shape. A
    /// mean over axes of size 1 only is a copy.
    [[nodiscard]] double mean_ms(const Shape& x, std::span<const std::int64_t> axes) {
        const Shape kept = detail::keepdims_shape(x, axes);
        if (kept == x) return copy_ms(2.0 * static_cast<double>(x.numel()) * sizeof(float));
        const std::vector<int> input_dims = detail::int_dims(x);
        const std::vector<int> output_dims = detail::int_dims(kept);
        const TensorDescriptor input = detail::tensor_descriptor(input_dims);
        const TensorDescriptor output = detail::tensor_descriptor(output_dims);
        detail::ReduceTensorDescriptor reduce;
        RLFLOW_CUDA_CHECK(cudnnCreateReduceTensorDescriptor(reduce.out()));
        RLFLOW_CUDA_CHECK(cudnnSetReduceTensorDescriptor(reduce.get(), CUDNN_REDUCE_TENSOR_AVG, CUDNN_DATA_FLOAT,
                                                         CUDNN_PROPAGATE_NAN, CUDNN_REDUCE_TENSOR_NO_INDICES,
                                                         CUDNN_32BIT_INDICES));
        std::size_t workspace_bytes = 0;
        RLFLOW_CUDA_CHECK(
            cudnnGetReductionWorkspaceSize(m_session->cudnn.get(), reduce.get(), input.get(), output.get(), &workspace_bytes));
        const auto buffers =
            carve({detail::float_bytes(input_dims), detail::float_bytes(output_dims), workspace_bytes});
        return time_ms([&] {
            RLFLOW_CUDA_CHECK(cudnnReduceTensor(m_session->cudnn.get(), reduce.get(), nullptr, 0, buffers[2], workspace_bytes,
                                                &one, input.get(), buffers[0], &zero, output.get(), buffers[1]));
        });
    }

    // ---- copies ---------------------------------------------------------------------------

    /// A device-to-device copy of n bytes reads n and writes n, so n = op_bytes / 2 moves
    /// what the op reads plus what it writes. (A tiled transpose, a concatenation or a pad
    /// runs close to copy bandwidth.)
    [[nodiscard]] double copy_ms(double op_bytes) {
        const auto bytes = static_cast<std::size_t>(std::ceil(op_bytes / 2.0));
        if (bytes == 0) return 0.0;
        const auto buffers = carve({bytes, bytes});
        return time_ms([&] {
            RLFLOW_CUDA_CHECK(cudaMemcpyAsync(buffers[1], buffers[0], bytes, cudaMemcpyDeviceToDevice, m_session->stream.get()));
        });
    }

    int m_device = 0;
    MathMode m_math = MathMode::fp32;
    MathSettings m_math_settings = math_settings(MathMode::fp32);
    std::string m_name;
    /// Set in the constructor, once the device is checked and current.
    std::optional<detail::CudaSession> m_session;
    detail::DeviceScratch m_scratch;
    std::map<detail::ConvGeometry, detail::ConvAlgorithm> m_conv_algorithms;
};

static_assert(CostBackend<CudnnProfiler>);

}  // namespace rlflow::cost
