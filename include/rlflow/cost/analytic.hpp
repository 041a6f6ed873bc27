#pragma once
/// \file
/// The analytic backend: a roofline with kernel launch overhead, deterministic and
/// instant, which makes it the backend of tests and the default. For one op,
///   t = max(FLOPs / (peak x efficiency), memory(bytes))
///       + memory(lowering bytes) + lowering rows x row cost + launch,
/// where memory(b) = b / bandwidth on a GPU, and on a CPU moves the first cache_mib of
/// the b bytes at the cache's bandwidth and the rest at memory bandwidth (one op's
/// activations of a few MB stay in L2/L3). The lowering terms are zero on GPUs (cuDNN's
/// implicit-GEMM convolutions); on a CPU they are the passes a runtime makes besides the
/// arithmetic (see Lowering).
///
/// Efficiency models why small matrix products run below peak. An op that is a GEMM
/// with dimensions (M, N, K) per group (a grouped convolution is a GEMM per group, with
/// M = C_out/g, K = C_in/g x kh x kw and N = batch x H_out x W_out, as im2col lowers it)
/// reaches
///   peak_efficiency x s(M) s(N) s(K),  s(d) = d / (d + half_saturation)
/// on a GPU (the effect behind TASO's grouped-convolution merges), but only
///   peak_efficiency x s(M)
/// on a CPU (Lowering::only_rows_saturate). Why the CPU differs: a CPU SGEMM (MLAS in ONNX
/// Runtime, like any GotoBLAS-style kernel, Goto and van de Geijn 2008, "Anatomy of
/// high-performance matrix multiplication") streams a packed K x N panel past M rows
/// held in registers, so a call costs 2 M N K + 2 half_saturation N K FLOP-times:
/// arithmetic plus a term that grows with the panel alone. Short N and K cost through
/// the bytes the op moves, not through a lower rate. Then time is increasing in M, N and
/// K, and merging two groups (M and K doubled, g halved: twice the FLOPs) multiplies the
/// compute term by (2M + h) / (M + h) > 1: a merge that doubles the FLOPs never gets
/// cheaper. (The three-way product makes ResNeXt's 32 groups of 4 channels look dearer
/// than 16 groups of 8; ONNX Runtime runs the merged model 1.27x slower on a CPU.)
///
/// How ONNX Runtime's CPU convolution (MLAS) runs, and the CPU terms that follow from
/// it: a convolution that is not pointwise (1x1, stride 1, no padding) first expands
/// each group's input into a K x N im2col matrix, a gather that writes it and reads it
/// back (Lowering::im2col_passes x 4 bytes per element) and that reads its input at the
/// convolution's stride, wasting cache lines (im2col_stride_passes more per step of
/// stride), with a fixed cost per matrix row (g x K rows: im2col_row_ns). A depthwise
/// convolution (group == C_in == C_out) runs this way too, one GEMM with M = 1 per
/// channel: MLAS's MlasConvPrepare picks a direct depthwise kernel only on WebAssembly,
/// and ORT's NCHWc depthwise kernel needs the layout transformer of level `all`. The
/// calibration agrees: depthwise convolutions cost what C one-row GEMMs and their rows
/// cost, and merging pairs of channels makes them 0-50% slower. im2col elements
/// and rows do not change when groups merge, so merges stay monotone. A 1x1 convolution
/// enlarged to 3x3 pays 9x the FLOPs and the im2col pass it did not have. A fused
/// activation costs activation_passes over the output: at level basic ORT runs it as its
/// own kernel after the convolution.
///
/// Views (Reshape, Flatten, Identity) cost nothing; copies (Transpose, Split, Concat,
/// Pad) cost their bytes; other ops' FLOPs run at Lowering::vector_efficiency of a
/// GEMM's rate (pooling windows and transcendental functions are not FMA loops).

#include <rlflow/core/op_traits.hpp>
#include <rlflow/cost/cost_backend.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow::cost {

/// How a device's runtime lowers ops into kernels, beyond its roofline numbers. The
/// defaults describe a GPU: every GEMM dimension saturates, convolutions need no im2col
/// buffer and fuse their activation, and every op runs at the GEMM's efficiency.
struct Lowering {
    /// Whether only a GEMM's M (rows) saturates, as on a CPU (see the file comment), or
    /// M, N and K do.
    bool only_rows_saturate = false;
    /// The fraction of a GEMM's peak x peak_efficiency that FLOPs outside GEMMs reach.
    double vector_efficiency = 1.0;
    /// The fraction of peak x peak_efficiency that a MatMul or Gemm against a matrix
    /// (a weight, BLAS's GEMM) reaches, relative to a convolution's GEMM.
    double matrix_product_efficiency = 1.0;
    /// Passes over a non-pointwise convolution's im2col matrix, 4 bytes per element each.
    double im2col_passes = 0.0;
    /// Further passes per step of stride beyond 1 (the gather's wasted cache lines).
    double im2col_stride_passes = 0.0;
    /// Nanoseconds per im2col matrix row (g x C_in/g x kh x kw rows per convolution).
    double im2col_row_ns = 0.0;
    /// Passes over a convolution's output that a fused activation costs.
    double activation_passes = 0.0;
    /// The bytes an op moves that stay in cache, in MiB (0: none; all bytes move at
    /// DeviceSpec::bandwidth_gbs), and the bandwidth they move at.
    double cache_mib = 0.0;
    double cache_bandwidth_gbs = 0.0;
};

/// The numbers a roofline needs about one device (fp32).
struct DeviceSpec {
    std::string_view name;
    double peak_gflops;
    double bandwidth_gbs;
    /// Fixed cost of one kernel launch, microseconds.
    double launch_us;
    /// The GEMM dimension at which a device reaches half its per-dimension efficiency.
    double half_saturation;
    /// The fraction of peak a large GEMM reaches.
    double peak_efficiency;
    Lowering lowering = {};
};

/// Presets: datasheet peaks and memory bandwidths. `v100`, `a100` and `h100` are fp32 on
/// CUDA cores, the arithmetic of CudnnProfiler's default MathMode::fp32. `a100-tf32` and
/// `h100-tf32` are the same parts multiplying fp32 data as TF32 on tensor cores
/// (MathMode::tf32), with the dense (no sparsity) TF32 tensor-core peaks of NVIDIA's A100
/// Tensor Core GPU datasheet (156 TFLOP/s) and H100 Tensor Core GPU datasheet (H100 SXM,
/// 494.7 TFLOP/s; the datasheet's 989 is with sparsity); memory, launch and efficiency as
/// their fp32 rows. V100 has no TF32.
///
/// `cpu` is one core of this build machine (a 2-core AMD EPYC VM, AVX-512) as ONNX
/// Runtime 1.30 runs models at level basic with one thread, how the end-to-end guard
/// times them. Every number but peak_efficiency (1: peak_gflops is then the rate of a
/// large GEMM, MLAS's 179 GFLOP/s against the 157 Eigen's sgemm reached in
/// bench/exec_bench) was fitted by rlflow_calibrate_cpu (tools/calibrate_cpu.cpp, the
/// command in its header) to 518 op signatures of ResNet-18, ResNeXt-50, SqueezeNet 1.1,
/// Inception-v3, MobileNet-v2, ShuffleNet-v2, EfficientNet-B0 and a 12-layer transformer
/// and of their rewrites, each the least of 3 medians of the ort backend. The machine was
/// compiling meanwhile (load average 2.3-3.1), so the fit is provisional: median
/// absolute error 7% on dense, 1x1 and depthwise convolutions, 10% on grouped ones, 7-9%
/// on MatMul and Gemm, 10% over all ops; rms log error 0.29, most of it ORT's
/// element-by-element Pad and Pow (5-40x their bytes), which no rewrite makes.
inline constexpr std::array<DeviceSpec, 6> device_presets{{
    {"v100", 15700.0, 900.0, 5.0, 64.0, 0.75},
    {"a100", 19500.0, 1555.0, 4.0, 64.0, 0.75},
    {"h100", 67000.0, 3350.0, 3.0, 96.0, 0.7},
    {"a100-tf32", 156000.0, 1555.0, 4.0, 64.0, 0.75},
    {"h100-tf32", 494700.0, 3350.0, 3.0, 96.0, 0.7},
    {"cpu", 179.1, 47.6, 3.3, 6.17, 1.0, {true, 0.0498, 1.19, 1.64, 2.42, 16.6, 3.24, 6.02, 60.6}},
}};

/// The preset named `name`, if any.
[[nodiscard]] constexpr std::optional<DeviceSpec> device_preset(std::string_view name) noexcept {
    for (const DeviceSpec& d : device_presets)
        if (d.name == name) return d;
    return std::nullopt;
}

/// The presets' names in table order, comma separated, for messages.
[[nodiscard]] inline std::string device_preset_names() {
    std::string names;
    for (const DeviceSpec& d : device_presets) names += (names.empty() ? "" : ", ") + std::string(d.name);
    return names;
}

namespace detail {

/// The matrix products an op runs: `groups` GEMMs of (M, N, K) each (a convolution's
/// batch folds into N), whether they are products against a matrix (MatMul, Gemm) and,
/// for a convolution lowered through im2col, its horizontal stride.
struct GemmShape {
    double m = 1, n = 1, k = 1;
    double groups = 1;
    bool matrix_product = false;
    bool im2col = false;
    double stride = 1;
};

/// Whether a convolution reads its input as the GEMM operand directly: 1x1, stride 1,
/// no padding (MLAS's GemmDirect path; anything else goes through im2col).
[[nodiscard]] inline bool pointwise_conv(const OpSignature& op) {
    const Shape& w = op.inputs[1].shape;
    const auto all_equal = [&](std::string_view name, std::int64_t value) {
        if (!op.attributes.has(name)) return true;
        const auto& values = op.attributes.get_ints(name);
        return std::all_of(values.begin(), values.end(), [&](std::int64_t v) { return v == value; });
    };
    return w[2] == 1 && w[3] == 1 && all_equal("strides", 1) && all_equal("pads", 0);
}

[[nodiscard]] inline GemmShape conv_gemm_shape(const OpSignature& op) {
    const Shape& w = op.inputs[1].shape;
    const Shape& y = op.outputs[0].shape;
    const auto group = static_cast<double>(op.attributes.get_int("group", 1));
    const auto& strides = op.attributes.has("strides") ? op.attributes.get_ints("strides") : std::vector<std::int64_t>{};
    GemmShape shape{static_cast<double>(w[0]) / group, static_cast<double>(y[0] * y[2] * y[3]),
                    static_cast<double>(w[1] * w[2] * w[3]), group};
    shape.im2col = !pointwise_conv(op);
    shape.stride = strides.size() == 2 ? static_cast<double>(strides[1]) : 1.0;
    return shape;
}

[[nodiscard]] inline std::optional<GemmShape> gemm_shape(const OpSignature& op) {
    if (op.inputs.size() < 2 || op.outputs.empty()) return std::nullopt;
    const Shape& a = op.inputs[0].shape;
    const Shape& b = op.inputs[1].shape;
    const Shape& y = op.outputs[0].shape;
    switch (op.op) {
        case OpKind::Conv2D: return conv_gemm_shape(op);
        case OpKind::MatMul: {
            // Against a matrix (rank <= 2 right operand) every leading dim of the left one
            // folds into M, as BLAS runs it; a batched product is a GEMM per batch.
            const double k = static_cast<double>(a[a.rank() - 1]);
            const double m = b.rank() <= 2 ? static_cast<double>(a.numel()) / k
                                           : (a.rank() >= 2 ? static_cast<double>(a[a.rank() - 2]) : 1.0);
            const double n = b.rank() >= 2 ? static_cast<double>(b[b.rank() - 1]) : 1.0;
            const double batches = b.rank() <= 2 ? 1.0 : static_cast<double>(y.numel()) / (m * n);
            return GemmShape{m, n, k, batches, b.rank() <= 2};
        }
        case OpKind::Gemm: {
            const bool ta = op.attributes.get_int("transA", 0) != 0;
            return GemmShape{static_cast<double>(y[0]), static_cast<double>(y[1]), static_cast<double>(ta ? a[0] : a[1]), 1.0,
                             true};
        }
        default: return std::nullopt;
    }
}

}  // namespace detail

/// A roofline cost model of one device.
class AnalyticBackend {
public:
    explicit AnalyticBackend(DeviceSpec device = device_presets[0]) : m_device(device) {}
    /// The backend for preset `name` (a name in device_presets); throws
    /// precondition_error naming the presets otherwise.
    [[nodiscard]] static AnalyticBackend preset(std::string_view name) {
        const auto device = device_preset(name);
        RLFLOW_EXPECTS(device.has_value(), precondition_error,
                       "unknown device preset '" + std::string(name) + "' (" + device_preset_names() + ")");
        return AnalyticBackend(*device);
    }

    [[nodiscard]] std::string name() const { return "analytic:" + std::string(m_device.name); }
    [[nodiscard]] const DeviceSpec& device() const noexcept { return m_device; }

    /// Milliseconds for one execution of `op` (the file comment's equation).
    [[nodiscard]] double op_cost_ms(const OpSignature& op) const {
        const OpTraits& traits = op_traits(op.op);
        if (traits.has(op_flag_source) || traits.has(op_flag_view)) return 0.0;
        const double flops = traits.flops(OpContext{op.attributes, op.inputs, op.outputs, traits.name});
        const auto gemm = detail::gemm_shape(op);
        const double compute_s = flops / (m_device.peak_gflops * giga * efficiency(gemm));
        const double memory_s = memory_seconds(op_bytes(traits, op.inputs, op.outputs));
        const double rows_s = lowering_rows(gemm) * m_device.lowering.im2col_row_ns / giga;
        const double lowering_s = memory_seconds(lowering_bytes(op, gemm)) + rows_s;
        return (std::max(compute_s, memory_s) + lowering_s) * ms_per_s + m_device.launch_us / us_per_ms;
    }

private:
    static constexpr double giga = 1e9, ms_per_s = 1e3, us_per_ms = 1e3;
    /// Bytes of one float32 element.
    static constexpr double element_bytes = 4.0;

    /// Seconds to move `bytes` in one pass: the first Lowering::cache_mib at the cache's
    /// bandwidth, the rest at memory bandwidth.
    [[nodiscard]] double memory_seconds(double bytes) const noexcept {
        constexpr double bytes_per_mib = 1024.0 * 1024.0;
        const Lowering& lowering = m_device.lowering;
        const double cached = lowering.cache_mib > 0 ? std::min(bytes, lowering.cache_mib * bytes_per_mib) : 0.0;
        const double cache_s = cached > 0 ? cached / (lowering.cache_bandwidth_gbs * giga) : 0.0;
        return cache_s + (bytes - cached) / (m_device.bandwidth_gbs * giga);
    }
    [[nodiscard]] double saturation(double d) const noexcept { return d / (d + m_device.half_saturation); }
    [[nodiscard]] double efficiency(const std::optional<detail::GemmShape>& gemm) const {
        const Lowering& lowering = m_device.lowering;
        if (!gemm) return m_device.peak_efficiency * lowering.vector_efficiency;
        const double product = gemm->matrix_product ? lowering.matrix_product_efficiency : 1.0;
        const double rows = saturation(gemm->m);
        if (lowering.only_rows_saturate) return m_device.peak_efficiency * product * rows;
        return m_device.peak_efficiency * product * rows * saturation(gemm->n) * saturation(gemm->k);
    }
    /// Bytes of the passes besides the arithmetic: im2col's gather and a fused
    /// activation's pass over the output.
    [[nodiscard]] double lowering_bytes(const OpSignature& op, const std::optional<detail::GemmShape>& gemm) const {
        const Lowering& lowering = m_device.lowering;
        double bytes = 0;
        if (gemm && gemm->im2col) {
            const double passes = lowering.im2col_passes + lowering.im2col_stride_passes * (gemm->stride - 1.0);
            bytes += passes * element_bytes * gemm->groups * gemm->k * gemm->n;
        }
        if (op.op == OpKind::Conv2D && op.attributes.get_int("activation", 0) != 0)
            bytes += lowering.activation_passes * static_cast<double>(op.outputs[0].bytes());
        return bytes;
    }
    /// im2col matrix rows: g x C_in/g x kh x kw.
    [[nodiscard]] static double lowering_rows(const std::optional<detail::GemmShape>& gemm) {
        return gemm && gemm->im2col ? gemm->groups * gemm->k : 0.0;
    }

    DeviceSpec m_device;
};

static_assert(CostBackend<AnalyticBackend>);

}  // namespace rlflow::cost
