#pragma once
/// \file
/// CudaExecutor: runs a whole graph on one GPU and times it end to end, the GPU's own
/// measurement of a graph as TASO's `Graph::run` is (Jia et al., "TASO", SOSP 2019): the
/// per-op prices of CudnnProfiler add up ops timed alone, this runs them together, with
/// the caches, launch gaps and memory traffic between them.
///
/// A graph is planned once (CudaProgram): a device buffer for every tensor an op writes,
/// weights and constants uploaded, in `Graph::topological_order()`; then its launches are
/// captured in a CUDA Graph and replayed. Latency is the median of replays, each timed
/// between two CUDA events after warm-up replays. Should capture fail (a library that
/// will not be captured), the launches are replayed from the host instead, and
/// `CudaLatency::captured` says so.
///
/// What runs each op (fp32 throughout; convolutions and products in the math mode of
/// CudnnProfilerOptions, fp32 by default):
/// | op | how |
/// | --- | --- |
/// | Conv2D | cudnnConvolutionForward with the algorithm CudnnProfiler finds (cudnnFindConvolutionForwardAlgorithmEx), groups and dilations; ReLU fused by cudnnConvolutionBiasActivationForward where cuDNN takes it; else bias and activation in one kernel of ours. Asymmetric pads: the input is zero-padded into a buffer first (cuDNN pads both ends alike). |
/// | ConvTranspose | a gather kernel, one thread per output (any pads, output padding and groups) |
/// | MatMul | cublasGemmEx, or cublasGemmStridedBatchedEx for a batch (stride 0 for an operand shared by every batch; an operand broadcast along only some batch dimensions is expanded first) |
/// | Gemm | C broadcast into the output by a copy kernel, then cublasGemmEx with beta |
/// | Add, Sub, Mul, Div, Pow | a broadcasting kernel |
/// | Relu, Sigmoid, Tanh, Erf, Sqrt, Clip, HardSigmoid, HardSwish, LeakyRelu, Gelu | an elementwise kernel |
/// | MaxPool, AveragePool | a kernel, one thread per output (ceil mode, dilation and both count_include_pad rules, which cuDNN's pooling lacks) |
/// | GlobalAveragePool, ReduceMean, ReduceSum, ReduceMax | a row-reduction kernel (reductions move the reduced axes last first, unless they are) |
/// | BatchNormalization | a kernel (ONNX's epsilon exactly; cuDNN's inference call clamps it to 1e-5) |
/// | LayerNormalization, InstanceNormalization, Softmax | a kernel (two-pass variance; max-shifted exponent) |
/// | Resize | a kernel, one thread per output, through per-axis tap tables made when the graph is planned |
/// | Transpose, Concat, Split, Slice, Enlarge | strided copy kernels |
/// | Pad, MergeGConv | a gather through an index table made when the graph is planned |
/// | Reshape, Flatten, Identity | nothing: views alias their input's buffer |
///
/// Outputs agree with the reference executor (exec/executor.hpp) to float32 rounding:
/// sums run in another order, and cuDNN may choose Winograd or FFT algorithms, which
/// round differently again (tests/cuda/cuda_executor.test.cu states the tolerance).
///
/// nvcc only (the kernels are in cost/detail/cuda_graph_kernels.cuh): include it from a
/// .cu file compiled as C++20 and link rlflow::cuda. The CLI reaches it through its CUDA
/// plugin.

#if !defined(__CUDACC__)
#error "rlflow/cost/cuda_executor.hpp holds CUDA kernels: include it from a .cu file compiled by nvcc (C++20) and link rlflow::cuda"
#endif

#include <rlflow/core/detail/cuda_check.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/core/graph.hpp>
#include <rlflow/cost/cudnn_profiler.hpp>
#include <rlflow/cost/detail/cuda_graph_kernels.cuh>
#include <rlflow/cost/detail/cuda_resources.hpp>
#include <rlflow/cost/detail/timing.hpp>
#include <rlflow/exec/detail/layout.hpp>
#include <rlflow/exec/detail/view.hpp>
#include <rlflow/exec/detail/window.hpp>
#include <rlflow/exec/random.hpp>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rlflow::cost {

/// How CudaExecutor times a graph.
struct CudaTimingOptions {
    /// Untimed replays first (clocks, caches, lazily loaded kernels).
    int warmup = 10;
    /// Timed replays; the latency is their median.
    int replays = 50;
};

/// How CudaExecutor::run launches a graph.
enum class CudaLaunch {
    /// Launched once from the host, captured in a CUDA Graph, and the capture replayed: the
    /// outputs are those of the graph as latency() times it (launched from the host where
    /// capture fails, as latency() then does too).
    captured,
    /// Every step launched from the host, nothing captured.
    from_host,
};

/// One graph's measured latency.
struct CudaLatency {
    double median_ms = 0;
    /// Every timed replay, in order.
    std::vector<double> samples_ms;
    /// Whether the replays ran a captured CUDA Graph (else launches from the host).
    bool captured = false;
};

namespace detail {

using CudaGraph = CudaOwned<cudaGraph_t, cudaGraphDestroy>;
using CudaGraphExec = CudaOwned<cudaGraphExec_t, cudaGraphExecDestroy>;

/// A tensor on the device: its buffer (owned elsewhere) and shape.
struct DeviceTensor {
    float* data = nullptr;
    Shape shape;
};

/// The walk over `shape` with the given operand strides (exec's Strides, by dimension).
[[nodiscard]] inline StridedWalk strided_walk(const Shape& shape, const rlflow::detail::Strides& a,
                                              const rlflow::detail::Strides& b, const rlflow::detail::Strides& out) {
    StridedWalk w;
    w.rank = shape.rank();
    for (int d = 0; d < shape.rank(); ++d) {
        const auto du = static_cast<std::size_t>(d);
        w.dims[d] = shape[d];
        w.a[d] = a[du];
        w.b[d] = b[du];
        w.out[d] = out[du];
    }
    return w;
}

/// Checks the launch that was just made.
inline void check_launch() { RLFLOW_CUDA_CHECK(cudaPeekAtLastError()); }

/// The handles a program launches with: one stream, and cuDNN and cuBLAS bound to it.
struct CudaLaunchContext {
    cudaStream_t stream = nullptr;
    cudnnHandle_t cudnn = nullptr;
    cublasHandle_t cublas = nullptr;
    CudnnProfiler* profiler = nullptr;
};

/// One graph planned for the device: buffers, uploaded weights, and the launches that
/// run it, in order. Built by the step table below, one builder per op kind.
class CudaProgram {
public:
    /// A launch of the program, on the context's stream.
    using Step = std::function<void()>;

    CudaProgram(const Graph& g, const CudaLaunchContext& context) : m_graph(g), m_context(context), m_values(g.id_bound()) {
        const std::vector<NodeId> order = g.topological_order();
        for (const NodeId id : order) check_runnable(g.node(id));
        for (const NodeId id : order) plan(g.node(id));
    }

    CudaProgram(const CudaProgram&) = delete;
    CudaProgram& operator=(const CudaProgram&) = delete;

    /// Copies `inputs` (one per graph input, in order, of the declared types) to the device.
    void upload_inputs(std::span<const Tensor> inputs) {
        RLFLOW_EXPECTS(inputs.size() == m_graph.inputs().size(), precondition_error,
                       "CudaExecutor: the graph has " + std::to_string(m_graph.inputs().size()) + " inputs, got "
                           + std::to_string(inputs.size()) + " tensors");
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            const Node& input = m_graph.node(m_graph.inputs()[i]);
            const TensorType& expected = input.outputs[0].type;
            RLFLOW_EXPECTS(inputs[i].type() == expected, shape_error,
                           "graph input '" + input.name + "': expected " + expected.to_string() + ", got "
                               + inputs[i].type().to_string());
            upload(value({input.id, 0}).data, inputs[i].floats());
        }
    }

    /// Runs the graph once: the captured CUDA Graph when there is one, else every step.
    void launch() {
        if (m_exec.get() != nullptr) {
            RLFLOW_CUDA_CHECK(cudaGraphLaunch(m_exec.get(), m_context.stream));
            return;
        }
        for (const Step& step : m_steps) step();
    }

    /// Captures the steps in a CUDA Graph; false (and steps replayed from the host) when
    /// the capture or its instantiation fails.
    bool capture() {
        if (cudaStreamBeginCapture(m_context.stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
            static_cast<void>(cudaGetLastError());
            return false;
        }
        bool launched = true;
        try {
            for (const Step& step : m_steps) step();
        } catch (const cuda_error&) {
            launched = false;
        }
        CudaGraph graph;
        const cudaError_t ended = cudaStreamEndCapture(m_context.stream, graph.out());
        if (!launched || ended != cudaSuccess
            || cudaGraphInstantiate(m_exec.out(), graph.get(), 0) != cudaSuccess) {
            m_exec.reset();
            static_cast<void>(cudaGetLastError());
            return false;
        }
        return true;
    }

    [[nodiscard]] bool captured() const noexcept { return m_exec.get() != nullptr; }

    /// The graph outputs, copied back, in `Graph::outputs()` order.
    [[nodiscard]] std::vector<Tensor> download_outputs() {
        RLFLOW_CUDA_CHECK(cudaStreamSynchronize(m_context.stream));
        std::vector<Tensor> outputs;
        for (const GraphOutput& o : m_graph.outputs()) {
            const DeviceTensor& t = value(o.value);
            Tensor host(TensorType{DType::Float32, t.shape});
            if (t.shape.numel() > 0)
                RLFLOW_CUDA_CHECK(cudaMemcpy(host.floats().data(), t.data, host.floats().size_bytes(), cudaMemcpyDeviceToHost));
            outputs.push_back(std::move(host));
        }
        return outputs;
    }

    /// Device bytes the program holds (buffers, tables, workspaces).
    [[nodiscard]] std::size_t device_bytes() const noexcept { return m_device_bytes; }

    // ---- what the step builders use -------------------------------------------------------

    [[nodiscard]] const CudaLaunchContext& context() const noexcept { return m_context; }
    [[nodiscard]] DeviceTensor& value(TensorRef ref) { return m_values[ref.node.value][ref.index]; }
    /// Input `i` of `n`.
    [[nodiscard]] const DeviceTensor& in(const Node& n, std::size_t i) { return value(n.inputs[i]); }
    /// Output `i` of `n`.
    [[nodiscard]] const DeviceTensor& out(const Node& n, std::size_t i = 0) { return value({n.id, static_cast<std::uint32_t>(i)}); }

    /// A fresh device buffer of `bytes` (at least one element), freed with the program.
    [[nodiscard]] void* allocate(std::size_t bytes) {
        bytes = std::max<std::size_t>(bytes, sizeof(float));
        DeviceMemory memory;
        RLFLOW_CUDA_CHECK(cudaMalloc(memory.out(), bytes));
        m_device_bytes += bytes;
        m_memory.push_back(std::move(memory));
        return m_memory.back().get();
    }
    [[nodiscard]] float* allocate_floats(std::int64_t count) {
        return static_cast<float*>(allocate(static_cast<std::size_t>(count) * sizeof(float)));
    }
    /// A device copy of `values`, made now.
    template <class T>
    [[nodiscard]] T* upload_table(std::span<const T> values) {
        T* device = static_cast<T*>(allocate(values.size_bytes()));
        upload(device, values);
        return device;
    }

    /// Appends a launch.
    void add(Step step) { m_steps.push_back(std::move(step)); }

    /// Appends a grid-stride launch of `kernel` over n elements.
    template <class Kernel, class... Args>
    void add_kernel(std::int64_t n, Kernel kernel, Args... args) {
        const cudaStream_t stream = m_context.stream;
        add([=] {
            kernel<<<cuda_blocks(n), cuda_block_threads, 0, stream>>>(args...);
            check_launch();
        });
    }

    /// Appends a launch of a per-row kernel: one block of cuda_block_threads per row.
    template <class Kernel, class... Args>
    void add_row_kernel(std::int64_t rows, Kernel kernel, Args... args) {
        const cudaStream_t stream = m_context.stream;
        const auto blocks = static_cast<unsigned>(std::clamp<std::int64_t>(rows, 1, cuda_max_blocks));
        add([=] {
            kernel<<<blocks, cuda_block_threads, 0, stream>>>(args...);
            check_launch();
        });
    }

    /// Appends a copy of `source` broadcast to `target` (numpy alignment) into `out`.
    void add_broadcast(const DeviceTensor& source, const Shape& target, float* out) {
        if (target.numel() == 0) return;
        const rlflow::detail::Strides contiguous = rlflow::detail::contiguous_strides(target);
        const StridedWalk w = strided_walk(target, rlflow::detail::broadcast_strides(source.shape, target), {}, contiguous);
        add_kernel(target.numel(), graph_copy_kernel<float>, w, target.numel(), out, std::int64_t{0},
                   static_cast<const float*>(source.data), std::int64_t{0});
    }

    /// Appends a fill of n floats with `value`.
    void add_fill(float* out, std::int64_t n, float value) {
        if (n > 0) add_kernel(n, graph_fill_kernel<float>, out, n, value);
    }

private:
    /// Rejects, before anything is allocated, a node the executor cannot run: what the
    /// reference executor rejects.
    void check_runnable(const Node& n) const {
        if (n.traits().has(op_flag_opaque))
            throw graph_error("CudaExecutor: cannot execute opaque op '" + std::string(n.op_label()) + "' in " + n.describe());
        RLFLOW_EXPECTS((n.op != OpKind::Weight && n.op != OpKind::Constant) || n.data, precondition_error,
                       "CudaExecutor: " + n.describe() + " has no data (give it some with exec::fill_random_weights)");
        for (std::size_t i = 0; i < n.outputs.size(); ++i)
            RLFLOW_EXPECTS(n.outputs[i].type.dtype == DType::Float32, precondition_error,
                           "CudaExecutor: " + n.describe() + ": output " + std::to_string(i) + " is "
                               + n.outputs[i].type.to_string() + "; the executor runs float tensors only");
    }

    void plan(const Node& n);

    template <class T>
    void upload(T* device, std::span<const T> values) {
        if (!values.empty())
            RLFLOW_CUDA_CHECK(cudaMemcpy(device, values.data(), values.size_bytes(), cudaMemcpyHostToDevice));
    }

    const Graph& m_graph;
    CudaLaunchContext m_context;
    std::vector<std::vector<DeviceTensor>> m_values;
    std::vector<DeviceMemory> m_memory;
    std::vector<Step> m_steps;
    CudaGraphExec m_exec;
    std::size_t m_device_bytes = 0;
};

// ---- step builders, one per op kind ------------------------------------------------------

/// Plans the launches of one node into the program; its outputs are already allocated.
using StepBuilder = void (*)(CudaProgram&, const Node&);

inline void no_step(CudaProgram&, const Node&) {}

/// The two parameters of an elementwise op's kernel: Clip's bounds, HardSigmoid's alpha
/// and beta, LeakyRelu's alpha; zeros for the ops without any.
[[nodiscard]] inline std::pair<float, float> unary_parameters(const Node& n) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    const Attributes& a = n.attributes;
    switch (n.op) {
        case OpKind::Clip: return {static_cast<float>(a.get_float("min", -inf)), static_cast<float>(a.get_float("max", inf))};
        case OpKind::HardSigmoid:
            return {static_cast<float>(a.get_float("alpha", 0.2)), static_cast<float>(a.get_float("beta", 0.5))};
        case OpKind::LeakyRelu: return {static_cast<float>(a.get_float("alpha", 0.01)), 0.0f};
        case OpKind::Gelu: return {a.get<std::string>("approximate") == "tanh" ? 1.0f : 0.0f, 0.0f};
        default: return {0.0f, 0.0f};
    }
}

template <class Fn>
void unary_step(CudaProgram& p, const Node& n) {
    const std::int64_t count = p.out(n).shape.numel();
    const auto [first, second] = unary_parameters(n);
    p.add_kernel(count, graph_unary_kernel<Fn>, count, p.out(n).data, static_cast<const float*>(p.in(n, 0).data), first,
                 second);
}

template <class Fn>
void binary_step(CudaProgram& p, const Node& n) {
    const DeviceTensor& y = p.out(n);
    const DeviceTensor& a = p.in(n, 0);
    const DeviceTensor& b = p.in(n, 1);
    const StridedWalk w = strided_walk(y.shape, rlflow::detail::broadcast_strides(a.shape, y.shape),
                                       rlflow::detail::broadcast_strides(b.shape, y.shape),
                                       rlflow::detail::contiguous_strides(y.shape));
    const std::int64_t count = y.shape.numel();
    p.add_kernel(count, graph_binary_kernel<Fn>, w, count, y.data, static_cast<const float*>(a.data),
                 static_cast<const float*>(b.data));
}

/// cuDNN's forward convolution, with the bias and activation after it.
inline void conv_step(CudaProgram& p, const Node& n) {
    const CudaLaunchContext& c = p.context();
    const DeviceTensor& y = p.out(n);
    const Shape& w_shape = p.in(n, 1).shape;
    const auto& pads = n.attributes.get_ints("pads");
    const bool symmetric = pads[0] == pads[2] && pads[1] == pads[3];
    DeviceTensor x = p.in(n, 0);
    if (!symmetric) {
        // The input copied into the interior of a buffer whose border was zeroed once, then
        // convolved without padding.
        const Shape padded{x.shape[0], x.shape[1], x.shape[2] + pads[0] + pads[2], x.shape[3] + pads[1] + pads[3]};
        float* buffer = p.allocate_floats(padded.numel());
        RLFLOW_CUDA_CHECK(cudaMemset(buffer, 0, static_cast<std::size_t>(padded.numel()) * sizeof(float)));
        const rlflow::detail::Strides out_strides = rlflow::detail::contiguous_strides(padded);
        const StridedWalk walk = strided_walk(x.shape, rlflow::detail::contiguous_strides(x.shape), {}, out_strides);
        const std::int64_t base = pads[0] * out_strides[2] + pads[1];
        p.add_kernel(x.shape.numel(), graph_copy_kernel<float>, walk, x.shape.numel(), buffer, base,
                     static_cast<const float*>(x.data), std::int64_t{0});
        x = {buffer, padded};
    }
    ConvGeometry g;
    const std::vector<int> input_dims = int_dims(x.shape), filter_dims = int_dims(w_shape);
    std::copy_n(input_dims.begin(), 4, g.input.begin());
    std::copy_n(filter_dims.begin(), 4, g.filter.begin());
    g.window = window_2d(n.attributes);
    if (!symmetric) g.window.pads = {0, 0};
    g.group = to_int(n.attributes.get_int("group", 1));
    auto setup = std::make_shared<CudnnProfiler::ConvSetup>(CudnnProfiler::conv_setup(g, c.profiler->settings().convolution));
    RLFLOW_EXPECTS(int_dims(y.shape) == std::vector<int>(setup->output_dims.begin(), setup->output_dims.end()),
                   graph_error, "CudaExecutor: cuDNN gives " + n.describe() + " another output shape than " + y.shape.to_string());
    const ConvAlgorithm algorithm = c.profiler->convolution_algorithm(g);
    RLFLOW_CUDA_CHECK(cudnnSetConvolutionMathType(setup->convolution.get(), algorithm.math));
    void* workspace = algorithm.workspace_bytes > 0 ? p.allocate(algorithm.workspace_bytes) : nullptr;
    const auto activation = static_cast<Activation>(n.attributes.get_int("activation", 0));
    const float* bias = n.inputs.size() == 3 ? static_cast<const float*>(p.in(n, 2).data) : nullptr;
    const float* w = p.in(n, 1).data;
    const float* input = x.data;
    float* output = y.data;
    static constexpr float one = 1.0f, zero = 0.0f;
    if (activation == Activation::Relu) {
        const float* relu_bias = bias;
        if (relu_bias == nullptr) {
            float* zeros = p.allocate_floats(y.shape[1]);
            RLFLOW_CUDA_CHECK(cudaMemset(zeros, 0, static_cast<std::size_t>(y.shape[1]) * sizeof(float)));
            relu_bias = zeros;
        }
        auto relu = std::make_shared<ActivationDescriptor>(activation_descriptor(CUDNN_ACTIVATION_RELU));
        const auto fused = [=] {
            return cudnnConvolutionBiasActivationForward(c.cudnn, &one, setup->input.get(), input, setup->filter.get(), w,
                                                         setup->convolution.get(), algorithm.algorithm, workspace,
                                                         algorithm.workspace_bytes, &zero, setup->output.get(), output,
                                                         setup->bias.get(), relu_bias, relu->get(), setup->output.get(), output);
        };
        // Probed now, outside any capture: cuDNN fuses ReLU with some algorithms only.
        const cudnnStatus_t probe = fused();
        if (probe != CUDNN_STATUS_NOT_SUPPORTED) {
            rlflow::detail::cuda_check(probe, "cudnnConvolutionBiasActivationForward", __FILE__, __LINE__);
            p.add([=] { RLFLOW_CUDA_CHECK(fused()); });
            return;
        }
    }
    p.add([=] {
        RLFLOW_CUDA_CHECK(cudnnConvolutionForward(c.cudnn, &one, setup->input.get(), input, setup->filter.get(), w,
                                                  setup->convolution.get(), algorithm.algorithm, workspace,
                                                  algorithm.workspace_bytes, &zero, setup->output.get(), output));
    });
    if (bias == nullptr && activation == Activation::None) return;
    const std::int64_t count = y.shape.numel();
    p.add_kernel(count, graph_bias_activation_kernel, count, y.shape[1], y.shape.product(2, y.shape.rank()), output, bias,
                 static_cast<int>(activation));
}

/// Row-major C (m, n) = alpha op(A) op(B) + beta C as cuBLAS's column-major
/// C^T = op(B)^T op(A)^T: B is handed first (as CudnnProfiler::run_gemm does).
inline void add_gemm(CudaProgram& p, const GemmCall& g, const float* a, const float* b, float* c, float beta) {
    const CudaLaunchContext& context = p.context();
    const cublasComputeType_t compute = context.profiler->settings().gemm_compute;
    p.add([=] {
        const cublasOperation_t op_a = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
        const cublasOperation_t op_b = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
        if (g.batch == 1) {
            RLFLOW_CUDA_CHECK(cublasGemmEx(context.cublas, op_b, op_a, g.n, g.m, g.k, &g.alpha, b, CUDA_R_32F, g.ldb, a,
                                           CUDA_R_32F, g.lda, &beta, c, CUDA_R_32F, g.n, compute, CUBLAS_GEMM_DEFAULT));
            return;
        }
        RLFLOW_CUDA_CHECK(cublasGemmStridedBatchedEx(context.cublas, op_b, op_a, g.n, g.m, g.k, &g.alpha, b, CUDA_R_32F,
                                                     g.ldb, g.stride_b, a, CUDA_R_32F, g.lda, g.stride_a, &beta, c,
                                                     CUDA_R_32F, g.n, static_cast<long long>(g.m) * g.n, g.batch, compute,
                                                     CUBLAS_GEMM_DEFAULT));
    });
}

/// The batch dimensions of a MatMul operand (1-D operands have none).
[[nodiscard]] inline Shape matmul_batch(const Shape& s) {
    return s.rank() <= 2 ? Shape{} : Shape(s.dims().first(static_cast<std::size_t>(s.rank() - 2)));
}

/// MatMul: one strided-batched product; an operand that neither holds every batch matrix
/// nor one shared by all is first expanded to every batch.
inline void matmul_step(CudaProgram& p, const Node& n) {
    const std::array<TensorType, 2> inputs{TensorType{DType::Float32, p.in(n, 0).shape}, TensorType{DType::Float32, p.in(n, 1).shape}};
    const std::array<TensorType, 1> outputs{TensorType{DType::Float32, p.out(n).shape}};
    const OpSignature signature{n.op, n.attributes, inputs, outputs};
    GemmCall g = matmul_call(signature);
    const float* operands[2] = {p.in(n, 0).data, p.in(n, 1).data};
    long long* strides[2] = {&g.stride_a, &g.stride_b};
    const std::int64_t rows[2] = {g.m, g.k}, cols[2] = {g.k, g.n};
    for (std::size_t i = 0; i < 2; ++i) {
        const DeviceTensor& operand = p.in(n, i);
        const std::int64_t batch = matmul_batch(operand.shape).numel();
        if (batch == 1 || batch == g.batch) continue;
        // Partly broadcast: expand to (batch..., rows, cols).
        Shape full = matmul_batch(p.out(n).shape);
        full.push_back(rows[i]);
        full.push_back(cols[i]);
        float* expanded = p.allocate_floats(full.numel());
        p.add_broadcast(operand, full, expanded);
        operands[i] = expanded;
        *strides[i] = static_cast<long long>(rows[i] * cols[i]);
    }
    add_gemm(p, g, operands[0], operands[1], p.out(n).data, 0.0f);
}

/// Gemm: beta C broadcast into Y first (C unread when beta is 0), then Y += alpha op(A) op(B).
inline void gemm_step(CudaProgram& p, const Node& n) {
    const std::array<TensorType, 2> inputs{TensorType{DType::Float32, p.in(n, 0).shape}, TensorType{DType::Float32, p.in(n, 1).shape}};
    const std::array<TensorType, 1> outputs{TensorType{DType::Float32, p.out(n).shape}};
    const GemmCall g = gemm_call(OpSignature{n.op, n.attributes, inputs, outputs});
    const auto beta = static_cast<float>(n.attributes.get_float("beta", 1.0));
    const bool with_c = n.inputs.size() == 3 && beta != 0.0f;
    if (with_c) p.add_broadcast(p.in(n, 2), p.out(n).shape, p.out(n).data);
    add_gemm(p, g, p.in(n, 0).data, p.in(n, 1).data, p.out(n).data, with_c ? beta : 0.0f);
}

/// The pooling problem of a MaxPool or AveragePool node.
[[nodiscard]] inline PoolProblem pool_problem(const Node& n, const Shape& x, const Shape& y) {
    const auto axes = rlflow::detail::window_axes(n.attributes, x, y);
    PoolProblem p;
    p.planes = x[0] * x[1];
    for (std::size_t i = 0; i < 2; ++i) {
        const rlflow::detail::WindowAxis& a = axes[i];
        p.axes[i] = {a.input, a.output, a.kernel, a.stride, a.pad_begin, a.pad_end, a.dilation};
    }
    p.kind = n.op == OpKind::MaxPool ? 0 : (n.attributes.get_int("count_include_pad", 0) != 0 ? 2 : 1);
    return p;
}

inline void pool_step(CudaProgram& p, const Node& n) {
    const DeviceTensor& y = p.out(n);
    p.add_kernel(y.shape.numel(), graph_pool_kernel, pool_problem(n, p.in(n, 0).shape, y.shape), y.data,
                 static_cast<const float*>(p.in(n, 0).data));
}

inline void global_average_pool_step(CudaProgram& p, const Node& n) {
    const Shape& x = p.in(n, 0).shape;
    const std::int64_t rows = x[0] * x[1], cols = x.product(2, x.rank());
    p.add_row_kernel(rows, graph_row_reduce_kernel<RowMean>, rows, cols, p.out(n).data,
                     static_cast<const float*>(p.in(n, 0).data));
}

/// ReduceMean, ReduceSum, ReduceMax: the kept axes first and the reduced ones last (a
/// transpose, unless they already are), then each row of reduced elements reduced.
template <class Reduction>
void reduce_step(CudaProgram& p, const Node& n) {
    const DeviceTensor& x = p.in(n, 0);
    const auto& axes = n.attributes.get_ints("axes");
    std::vector<int> kept, reduced;
    for (int i = 0; i < x.shape.rank(); ++i)
        (axes.empty() || std::find(axes.begin(), axes.end(), i) != axes.end() ? reduced : kept).push_back(i);
    std::vector<int> order = kept;
    order.insert(order.end(), reduced.begin(), reduced.end());
    std::int64_t rows = 1;
    for (const int d : kept) rows *= x.shape[d];
    const std::int64_t cols = rows > 0 ? x.shape.numel() / rows : 0;
    const float* source = x.data;
    if (!std::is_sorted(order.begin(), order.end())) {
        Shape permuted;
        rlflow::detail::Strides read{};
        const rlflow::detail::Strides own = rlflow::detail::contiguous_strides(x.shape);
        for (std::size_t i = 0; i < order.size(); ++i) {
            permuted.push_back(x.shape[order[i]]);
            read[i] = own[static_cast<std::size_t>(order[i])];
        }
        float* buffer = p.allocate_floats(permuted.numel());
        const StridedWalk w = strided_walk(permuted, read, {}, rlflow::detail::contiguous_strides(permuted));
        p.add_kernel(permuted.numel(), graph_copy_kernel<float>, w, permuted.numel(), buffer, std::int64_t{0}, source,
                     std::int64_t{0});
        source = buffer;
    }
    p.add_row_kernel(rows, graph_row_reduce_kernel<Reduction>, rows, cols, p.out(n).data, source);
}

inline void batch_norm_step(CudaProgram& p, const Node& n) {
    const DeviceTensor& y = p.out(n);
    const std::int64_t count = y.shape.numel();
    const auto epsilon = static_cast<float>(n.attributes.get_float("epsilon", 1e-5));
    p.add_kernel(count, graph_batch_norm_kernel, count, y.shape[1], y.shape.product(2, y.shape.rank()), y.data,
                 static_cast<const float*>(p.in(n, 0).data), static_cast<const float*>(p.in(n, 1).data),
                 static_cast<const float*>(p.in(n, 2).data), static_cast<const float*>(p.in(n, 3).data),
                 static_cast<const float*>(p.in(n, 4).data), epsilon);
}

/// `operand` as a contiguous row of `row_shape`: itself when it already is one, else
/// broadcast into a buffer at every run (it may be computed by the graph).
[[nodiscard]] inline const float* as_row(CudaProgram& p, const DeviceTensor& operand, const Shape& row_shape) {
    if (operand.shape.numel() == row_shape.numel()) return operand.data;
    float* row = p.allocate_floats(row_shape.numel());
    p.add_broadcast(operand, row_shape, row);
    return row;
}

inline void layer_norm_step(CudaProgram& p, const Node& n) {
    const Shape& x = p.in(n, 0).shape;
    const int axis = x.normalize_axis(n.attributes.get_int("axis", -1));
    const Shape row_shape(x.dims().subspan(static_cast<std::size_t>(axis)));
    const std::int64_t rows = x.product(0, axis), cols = row_shape.numel();
    const float* scale = as_row(p, p.in(n, 1), row_shape);
    const float* shift = n.inputs.size() == 3 ? as_row(p, p.in(n, 2), row_shape) : nullptr;
    const auto epsilon = static_cast<float>(n.attributes.get_float("epsilon", 1e-5));
    p.add_row_kernel(rows, graph_layer_norm_kernel, rows, cols, p.out(n).data, static_cast<const float*>(p.in(n, 0).data),
                     scale, shift, epsilon, std::int64_t{0});
}

/// InstanceNormalization: LayerNormalization's kernel over the (n, c) planes, with a scale
/// and shift per channel.
inline void instance_norm_step(CudaProgram& p, const Node& n) {
    const Shape& x = p.in(n, 0).shape;
    const std::int64_t rows = x[0] * x[1], cols = x.product(2, x.rank());
    const auto epsilon = static_cast<float>(n.attributes.get_float("epsilon", 1e-5));
    p.add_row_kernel(rows, graph_layer_norm_kernel, rows, cols, p.out(n).data, static_cast<const float*>(p.in(n, 0).data),
                     static_cast<const float*>(p.in(n, 1).data), static_cast<const float*>(p.in(n, 2).data), epsilon,
                     x[1]);
}

inline void softmax_step(CudaProgram& p, const Node& n) {
    const Shape& x = p.in(n, 0).shape;
    const int axis = x.normalize_axis(n.attributes.get_int("axis", -1));
    const std::int64_t outer = x.product(0, axis), inner = x.product(axis + 1, x.rank());
    p.add_kernel(outer * inner, graph_softmax_kernel, outer, x[axis], inner, p.out(n).data,
                 static_cast<const float*>(p.in(n, 0).data));
}

/// Concat and Split: part by part, a strided copy between the part and its slab of the
/// whole along the axis.
template <bool IntoWhole>
void axis_parts_step(CudaProgram& p, const Node& n) {
    const DeviceTensor& whole = IntoWhole ? p.out(n) : p.in(n, 0);
    const int axis = whole.shape.normalize_axis(n.attributes.get_int("axis", 0));
    const rlflow::detail::Strides whole_strides = rlflow::detail::contiguous_strides(whole.shape);
    const std::int64_t slab = whole.shape.product(axis + 1, whole.shape.rank());
    const std::size_t parts = IntoWhole ? n.inputs.size() : n.outputs.size();
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < parts; ++i) {
        const DeviceTensor& part = IntoWhole ? p.in(n, i) : p.out(n, i);
        const std::int64_t count = part.shape.numel();
        const rlflow::detail::Strides part_strides = rlflow::detail::contiguous_strides(part.shape);
        if (count > 0) {
            if constexpr (IntoWhole) {
                const StridedWalk w = strided_walk(part.shape, part_strides, {}, whole_strides);
                p.add_kernel(count, graph_copy_kernel<float>, w, count, whole.data, offset * slab,
                             static_cast<const float*>(part.data), std::int64_t{0});
            } else {
                const StridedWalk w = strided_walk(part.shape, whole_strides, {}, part_strides);
                p.add_kernel(count, graph_copy_kernel<float>, w, count, part.data, std::int64_t{0},
                             static_cast<const float*>(whole.data), offset * slab);
            }
        }
        offset += part.shape[axis];
    }
}

inline void transpose_step(CudaProgram& p, const Node& n) {
    const DeviceTensor& x = p.in(n, 0);
    const DeviceTensor& y = p.out(n);
    const auto& perm = n.attributes.get_ints("perm");
    const rlflow::detail::Strides source = rlflow::detail::contiguous_strides(x.shape);
    rlflow::detail::Strides read{};
    for (std::size_t i = 0; i < perm.size(); ++i) read[i] = source[static_cast<std::size_t>(perm[i])];
    const StridedWalk w = strided_walk(y.shape, read, {}, rlflow::detail::contiguous_strides(y.shape));
    p.add_kernel(y.shape.numel(), graph_copy_kernel<float>, w, y.shape.numel(), y.data, std::int64_t{0},
                 static_cast<const float*>(x.data), std::int64_t{0});
}

/// Slice with steps: a strided copy from the first element read, each axis walked `step`
/// input elements at a time (negative steps walk backwards).
inline void slice_step(CudaProgram& p, const Node& n) {
    const DeviceTensor& x = p.in(n, 0);
    const DeviceTensor& y = p.out(n);
    const rlflow::detail::SliceSource source = rlflow::detail::slice_source(n.attributes, x.shape);
    const StridedWalk w = strided_walk(y.shape, source.strides, {}, rlflow::detail::contiguous_strides(y.shape));
    p.add_kernel(y.shape.numel(), graph_copy_kernel<float>, w, y.shape.numel(), y.data, std::int64_t{0},
                 static_cast<const float*>(x.data), source.base);
}

/// ConvTranspose: a gather kernel of ours, one thread per output (cuDNN's backward-data
/// convolution pads both ends alike and has no output padding).
inline void conv_transpose_step(CudaProgram& p, const Node& n) {
    const Shape& x = p.in(n, 0).shape;
    const DeviceTensor& y = p.out(n);
    const Attributes& a = n.attributes;
    ConvTransposeProblem problem;
    problem.batch = x[0];
    problem.channels = x[1];
    problem.height = x[2];
    problem.width = x[3];
    problem.filters = y.shape[1];
    problem.out_height = y.shape[2];
    problem.out_width = y.shape[3];
    problem.group = a.get_int("group", 1);
    problem.kernel_h = a.get_ints("kernel_shape")[0];
    problem.kernel_w = a.get_ints("kernel_shape")[1];
    problem.stride_h = a.get_ints("strides")[0];
    problem.stride_w = a.get_ints("strides")[1];
    problem.pad_top = a.get_ints("pads")[0];
    problem.pad_left = a.get_ints("pads")[1];
    problem.dilation_h = a.get_ints("dilations")[0];
    problem.dilation_w = a.get_ints("dilations")[1];
    const float* bias = n.inputs.size() == 3 ? static_cast<const float*>(p.in(n, 2).data) : nullptr;
    const std::int64_t count = y.shape.numel();
    p.add_kernel(count, graph_conv_transpose_kernel, problem, count, y.data, static_cast<const float*>(p.in(n, 0).data),
                 static_cast<const float*>(p.in(n, 1).data), bias);
}

/// Resize: exec's plan (the taps of every axis) uploaded as tables, one thread per output
/// element.
inline void resize_step(CudaProgram& p, const Node& n) {
    const DeviceTensor& x = p.in(n, 0);
    const DeviceTensor& y = p.out(n);
    if (y.shape.numel() == 0) return;
    const rlflow::detail::ResizePlan plan = rlflow::detail::resize_plan(n.attributes, x.shape, y.shape);
    ResizeProblem problem;
    problem.rank = plan.rank;
    problem.blended = plan.blended;
    for (int d = 0; d < plan.rank; ++d) {
        problem.out_dims[d] = plan.out_dims[static_cast<std::size_t>(d)];
        problem.first_tap[d] = plan.first_tap[static_cast<std::size_t>(d)];
    }
    const std::int64_t count = y.shape.numel();
    p.add_kernel(count, graph_resize_kernel, problem, count, y.data, static_cast<const float*>(x.data),
                 p.upload_table<std::int64_t>(plan.low), p.upload_table<std::int64_t>(plan.high),
                 p.upload_table<float>(plan.low_weight), p.upload_table<float>(plan.high_weight));
}

/// Pad: every output element's source index (or -1 for the constant), as exec computes
/// them per axis, gathered.
inline void pad_step(CudaProgram& p, const Node& n) {
    const DeviceTensor& x = p.in(n, 0);
    const DeviceTensor& y = p.out(n);
    const int rank = x.shape.rank();
    std::vector<std::int64_t> index(static_cast<std::size_t>(y.shape.numel()), 0);
    if (rank > 0) {
        const auto& pads = n.attributes.get_ints("pads");
        const auto& mode = n.attributes.get<std::string>("mode");
        std::vector<std::vector<std::int64_t>> tables;
        for (int d = 0; d < rank; ++d)
            tables.push_back(rlflow::detail::pad_source_indices(x.shape[d], pads[static_cast<std::size_t>(d)],
                                                                pads[static_cast<std::size_t>(d + rank)], y.shape[d], mode, n));
        const rlflow::detail::Strides in_strides = rlflow::detail::contiguous_strides(x.shape);
        for (std::size_t i = 0; i < index.size(); ++i) {
            auto rest = static_cast<std::int64_t>(i);
            std::int64_t at = 0;
            for (int d = rank - 1; d >= 0 && at >= 0; --d) {
                const std::int64_t source = tables[static_cast<std::size_t>(d)][static_cast<std::size_t>(rest % y.shape[d])];
                rest /= y.shape[d];
                at = source == rlflow::detail::pad_constant ? -1 : at + source * in_strides[static_cast<std::size_t>(d)];
            }
            index[i] = at;
        }
    }
    const std::int64_t* table = p.upload_table<std::int64_t>(index);
    const auto value = static_cast<float>(n.attributes.get_float("value", 0.0));
    p.add_kernel(y.shape.numel(), graph_gather_kernel<float>, y.shape.numel(), y.data, static_cast<const float*>(x.data),
                 table, value);
}

/// Enlarge: zeros, then the kernel copied into the centre of the larger one.
inline void enlarge_step(CudaProgram& p, const Node& n) {
    const DeviceTensor& w = p.in(n, 0);
    const DeviceTensor& y = p.out(n);
    const rlflow::detail::Strides big = rlflow::detail::contiguous_strides(y.shape);
    const std::int64_t top = (y.shape[2] - w.shape[2]) / 2, left = (y.shape[3] - w.shape[3]) / 2;
    p.add_fill(y.data, y.shape.numel(), 0.0f);
    const StridedWalk walk = strided_walk(w.shape, rlflow::detail::contiguous_strides(w.shape), {}, big);
    p.add_kernel(w.shape.numel(), graph_copy_kernel<float>, walk, w.shape.numel(), y.data, top * big[2] + left,
                 static_cast<const float*>(w.data), std::int64_t{0});
}

/// MergeGConv: out[o, b*n + j] = W[o, j] for b = the block of output channel o, zero
/// elsewhere, as a gather.
inline void merge_gconv_step(CudaProgram& p, const Node& n) {
    const DeviceTensor& w = p.in(n, 0);
    const DeviceTensor& y = p.out(n);
    const std::int64_t filters = w.shape[0];
    const rlflow::detail::MergeGConvOp::Layout layout = rlflow::detail::MergeGConvOp::layout(n.attributes, filters);
    const std::int64_t filter_size = w.shape.product(1, w.shape.rank());
    std::vector<std::int64_t> index(static_cast<std::size_t>(y.shape.numel()), -1);
    for (std::int64_t o = 0; o < filters; ++o)
        for (std::int64_t j = 0; j < filter_size; ++j)
            index[static_cast<std::size_t>((o * layout.count + layout.block(o)) * filter_size + j)] = o * filter_size + j;
    const std::int64_t* table = p.upload_table<std::int64_t>(index);
    p.add_kernel(y.shape.numel(), graph_gather_kernel<float>, y.shape.numel(), y.data, static_cast<const float*>(w.data),
                 table, 0.0f);
}

inline void unrunnable_step(CudaProgram&, const Node& n) {
    throw graph_error("CudaExecutor: cannot execute " + n.describe());
}

/// The typed ops (Where, the comparisons, Cast, Gather, Expand, ...) hold int and bool
/// tensors, which the GPU program does not: the reference executor runs them.
inline void typed_step(CudaProgram&, const Node& n) {
    throw graph_error("CudaExecutor: " + n.describe() + " is a typed op (int and bool tensors); the CUDA executor "
                      "runs float ops only, the reference executor runs it");
}

/// One row of the step table.
struct StepEntry {
    OpKind kind;
    StepBuilder build;
};

// clang-format off
/// The one table of how each op kind runs on the GPU, indexed by OpKind like core's op
/// table. Sources are bound by the program; views alias and launch nothing.
inline constexpr std::array<StepEntry, op_kind_count> step_table{{
    {OpKind::Input, no_step},
    {OpKind::Weight, no_step},
    {OpKind::Constant, no_step},
    {OpKind::Conv2D, conv_step},
    {OpKind::MatMul, matmul_step},
    {OpKind::Gemm, gemm_step},
    {OpKind::Add, binary_step<AddFn>},
    {OpKind::Sub, binary_step<SubFn>},
    {OpKind::Mul, binary_step<MulFn>},
    {OpKind::Div, binary_step<DivFn>},
    {OpKind::Pow, binary_step<PowFn>},
    {OpKind::Relu, unary_step<ReluFn>},
    {OpKind::Sigmoid, unary_step<SigmoidFn>},
    {OpKind::Tanh, unary_step<TanhFn>},
    {OpKind::Erf, unary_step<ErfFn>},
    {OpKind::Sqrt, unary_step<SqrtFn>},
    {OpKind::Identity, no_step},
    {OpKind::Clip, unary_step<ClipFn>},
    {OpKind::Softmax, softmax_step},
    {OpKind::MaxPool, pool_step},
    {OpKind::AveragePool, pool_step},
    {OpKind::GlobalAveragePool, global_average_pool_step},
    {OpKind::BatchNormalization, batch_norm_step},
    {OpKind::LayerNormalization, layer_norm_step},
    {OpKind::Concat, axis_parts_step<true>},
    {OpKind::Split, axis_parts_step<false>},
    {OpKind::Transpose, transpose_step},
    {OpKind::Reshape, no_step},
    {OpKind::Flatten, no_step},
    {OpKind::Pad, pad_step},
    {OpKind::ReduceMean, reduce_step<RowMean>},
    {OpKind::Enlarge, enlarge_step},
    {OpKind::MergeGConv, merge_gconv_step},
    {OpKind::HardSigmoid, unary_step<HardSigmoidFn>},
    {OpKind::HardSwish, unary_step<HardSwishFn>},
    {OpKind::LeakyRelu, unary_step<LeakyReluFn>},
    {OpKind::Slice, slice_step},
    {OpKind::ReduceSum, reduce_step<RowSum>},
    {OpKind::ReduceMax, reduce_step<RowMax>},
    {OpKind::Gelu, unary_step<GeluFn>},
    {OpKind::Resize, resize_step},
    {OpKind::InstanceNormalization, instance_norm_step},
    {OpKind::ConvTranspose, conv_transpose_step},
    {OpKind::Expand, typed_step},
    {OpKind::Gather, typed_step},
    {OpKind::Where, typed_step},
    {OpKind::Equal, typed_step},
    {OpKind::Less, typed_step},
    {OpKind::Greater, typed_step},
    {OpKind::Not, typed_step},
    {OpKind::And, typed_step},
    {OpKind::Or, typed_step},
    {OpKind::Cast, typed_step},
    {OpKind::Opaque, unrunnable_step},
}};
// clang-format on

constexpr bool step_table_is_indexed_by_kind() {
    for (std::size_t i = 0; i < step_table.size(); ++i)
        if (static_cast<std::size_t>(step_table[i].kind) != i) return false;
    return true;
}
static_assert(step_table_is_indexed_by_kind(), "step_table rows must be in OpKind order");

/// Gives the node's outputs their buffers (views alias their input's; weights and
/// constants are uploaded, graph inputs get a buffer the caller fills), then its steps.
inline void CudaProgram::plan(const Node& n) {
    std::vector<DeviceTensor>& values = m_values[n.id.value];
    values.resize(n.outputs.size());
    for (std::size_t i = 0; i < n.outputs.size(); ++i) {
        const Shape& shape = n.outputs[i].type.shape;
        if (n.traits().has(op_flag_view)) {
            values[i] = {value(n.inputs[0]).data, shape};
            continue;
        }
        values[i] = {allocate_floats(shape.numel()), shape};
        if (n.op == OpKind::Weight || n.op == OpKind::Constant) upload(values[i].data, n.data->floats());
    }
    const bool empty = std::all_of(values.begin(), values.end(), [](const DeviceTensor& t) { return t.shape.numel() == 0; });
    if (!empty) step_table[static_cast<std::size_t>(n.op)].build(*this, n);
}

}  // namespace detail

/// The settings of a CudaExecutor.
struct CudaExecutorOptions {
    /// The CUDA device index.
    int device = 0;
    /// How convolutions and products multiply (fp32 by default; see CudnnProfiler).
    MathMode math = MathMode::fp32;
};

/// Runs and times whole graphs on one GPU.
class CudaExecutor {
public:
    /// cuBLAS's workspace: set explicitly, so that a captured product never allocates
    /// (NVIDIA's cuBLAS documentation recommends 32 MiB on Hopper).
    static constexpr std::size_t cublas_workspace_bytes = std::size_t{32} << 20;

    /// An executor on CUDA device `options.device`. Throws cuda_error when there is no such
    /// device or setting up the libraries fails.
    explicit CudaExecutor(CudaExecutorOptions options = {})
        : m_profiler(CudnnProfilerOptions{.device = options.device, .math = options.math}),
          m_session(m_profiler.settings().cublas) {
        RLFLOW_CUDA_CHECK(cudaMalloc(m_cublas_workspace.out(), cublas_workspace_bytes));
        RLFLOW_CUDA_CHECK(cublasSetWorkspace(m_session.cublas.get(), m_cublas_workspace.get(), cublas_workspace_bytes));
    }

    /// The number of CUDA devices; 0 without a GPU or a usable driver.
    [[nodiscard]] static int device_count() noexcept { return CudnnProfiler::device_count(); }

    /// "cuda:<device name>:<math mode>".
    [[nodiscard]] std::string name() const {
        const std::string profiler = m_profiler.name();  // "cudnn:<device>:<math>"
        return "cuda" + profiler.substr(profiler.find(':'));
    }

    /// Runs `g` on `inputs` (one float32 tensor per graph input, in order) and returns its
    /// outputs; by default those of the captured replay that latency() times. Throws
    /// graph_error for an op it cannot run (opaque), precondition_error for a weight
    /// without data, shape_error for a mistyped input.
    [[nodiscard]] std::vector<Tensor> run(const Graph& g, std::span<const Tensor> inputs,
                                          CudaLaunch how = CudaLaunch::captured) {
        detail::CudaProgram program(g, context());
        program.upload_inputs(inputs);
        program.launch();
        if (how == CudaLaunch::captured) {
            // Where capture fails, latency() replays from the host too: those outputs stand.
            RLFLOW_CUDA_CHECK(cudaStreamSynchronize(m_session.stream.get()));
            if (program.capture()) program.launch();
        }
        return program.download_outputs();
    }

    /// The latency of `g` on random inputs (exec::random_inputs under `seed`).
    [[nodiscard]] CudaLatency latency(const Graph& g, const CudaTimingOptions& options = {}, std::uint64_t seed = 0) {
        const std::vector<const Graph*> graphs{&g};
        std::vector<CudaLatency> timed = time_interleaved(graphs, options, seed);
        return std::move(timed.front());
    }

    /// Times several graphs round by round: in each round every graph replays once, back
    /// to back (two graphs alternate; three or more rotate, so none runs twice in a row),
    /// so that drift in clocks and temperature hits all alike. samples_ms[k] of each is
    /// its replay in round k.
    [[nodiscard]] std::vector<CudaLatency> time_interleaved(std::span<const Graph* const> graphs,
                                                            const CudaTimingOptions& options = {}, std::uint64_t seed = 0) {
        std::vector<std::unique_ptr<detail::CudaProgram>> programs;
        std::vector<CudaLatency> result(graphs.size());
        for (std::size_t i = 0; i < graphs.size(); ++i) {
            programs.push_back(std::make_unique<detail::CudaProgram>(*graphs[i], context()));
            programs.back()->upload_inputs(exec::random_inputs(*graphs[i], seed));
            programs.back()->launch();  // once from the host: lazy library set-up happens outside the capture
            RLFLOW_CUDA_CHECK(cudaStreamSynchronize(m_session.stream.get()));
            result[i].captured = programs.back()->capture();
        }
        for (int r = 0; r < options.warmup; ++r)
            for (auto& p : programs) p->launch();
        RLFLOW_CUDA_CHECK(cudaStreamSynchronize(m_session.stream.get()));
        const std::size_t n = programs.size();
        for (int r = 0; r < options.replays; ++r) {
            for (std::size_t k = 0; k < n; ++k) {
                const std::size_t i = n >= 3 ? (k + static_cast<std::size_t>(r)) % n : k;
                RLFLOW_CUDA_CHECK(cudaEventRecord(m_session.start.get(), m_session.stream.get()));
                programs[i]->launch();
                RLFLOW_CUDA_CHECK(cudaEventRecord(m_session.stop.get(), m_session.stream.get()));
                RLFLOW_CUDA_CHECK(cudaEventSynchronize(m_session.stop.get()));
                float ms = 0.0f;
                RLFLOW_CUDA_CHECK(cudaEventElapsedTime(&ms, m_session.start.get(), m_session.stop.get()));
                result[i].samples_ms.push_back(static_cast<double>(ms));
            }
        }
        for (CudaLatency& l : result) l.median_ms = detail::median(l.samples_ms);
        return result;
    }

private:
    [[nodiscard]] detail::CudaLaunchContext context() {
        return {m_session.stream.get(), m_session.cudnn.get(), m_session.cublas.get(), &m_profiler};
    }

    /// Finds the convolution algorithms; constructing it checks the device and makes it current.
    CudnnProfiler m_profiler;
    detail::CudaSession m_session;
    detail::DeviceMemory m_cublas_workspace;
};

}  // namespace rlflow::cost
