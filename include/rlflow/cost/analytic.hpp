#pragma once
/// \file
/// The analytic backend: a roofline with kernel launch overhead,
///   t = max(FLOPs / (peak x efficiency), bytes / bandwidth) + launch,
/// deterministic and instant, which makes it the backend of tests and the default.
///
/// Efficiency models why small matrix products run far below peak (the effect behind
/// TASO's grouped-convolution merges): a GEMM with dimensions (M, N, K) reaches
///   peak_efficiency x s(M) s(N) s(K),  s(d) = d / (d + half_saturation),
/// where a grouped convolution is a GEMM per group with M = C_out/g,
/// K = C_in/g x kh x kw and N = batch x H_out x W_out. Views (Reshape, Flatten,
/// Identity) cost nothing; copies (Transpose, Split, Concat, Pad) cost their bytes.

#include <rlflow/core/op_traits.hpp>
#include <rlflow/cost/cost_backend.hpp>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace rlflow::cost {

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
};

/// Presets: datasheet fp32 peaks and memory bandwidths. `cpu` is this build machine's one
/// core: Eigen sgemm reached 157 GFLOP/s (bench/exec_bench) and memcpy 14.3 GB/s (read
/// plus write) when measured.
inline constexpr std::array<DeviceSpec, 4> device_presets{{
    {"v100", 15700.0, 900.0, 5.0, 64.0, 0.75},
    {"a100", 19500.0, 1555.0, 4.0, 64.0, 0.75},
    {"h100", 67000.0, 3350.0, 3.0, 96.0, 0.7},
    {"cpu", 157.0, 14.3, 0.5, 8.0, 0.9},
}};

/// The preset named `name`, if any.
[[nodiscard]] constexpr std::optional<DeviceSpec> device_preset(std::string_view name) noexcept {
    for (const DeviceSpec& d : device_presets)
        if (d.name == name) return d;
    return std::nullopt;
}

namespace detail {

/// The (M, N, K) of the matrix products an op runs, per group, if it is one.
struct GemmShape {
    double m = 1, n = 1, k = 1;
};

[[nodiscard]] inline std::optional<GemmShape> gemm_shape(const OpSignature& op) {
    if (op.inputs.size() < 2 || op.outputs.empty()) return std::nullopt;
    const Shape& a = op.inputs[0].shape;
    const Shape& b = op.inputs[1].shape;
    const Shape& y = op.outputs[0].shape;
    switch (op.op) {
        case OpKind::Conv2D: {
            const auto group = static_cast<double>(op.attributes.get_int("group", 1));
            return GemmShape{static_cast<double>(b[0]) / group, static_cast<double>(y[0] * y[2] * y[3]),
                             static_cast<double>(b[1] * b[2] * b[3])};
        }
        case OpKind::MatMul: {
            // Against a matrix (rank <= 2 right operand) every leading dim of the left one
            // folds into M, as BLAS runs it; a batched product is a GEMM per batch.
            const double k = static_cast<double>(a[a.rank() - 1]);
            const double m = b.rank() <= 2 ? static_cast<double>(a.numel()) / k
                                           : (a.rank() >= 2 ? static_cast<double>(a[a.rank() - 2]) : 1.0);
            return GemmShape{m, b.rank() >= 2 ? static_cast<double>(b[b.rank() - 1]) : 1.0, k};
        }
        case OpKind::Gemm: {
            const bool ta = op.attributes.get_int("transA", 0) != 0;
            return GemmShape{static_cast<double>(y[0]), static_cast<double>(y[1]), static_cast<double>(ta ? a[0] : a[1])};
        }
        default: return std::nullopt;
    }
}

}  // namespace detail

/// A roofline cost model of one device.
class AnalyticBackend {
public:
    explicit AnalyticBackend(DeviceSpec device = device_presets[0]) : m_device(device) {}
    /// The backend for preset `name` ("v100", "a100", "h100", "cpu"); throws
    /// precondition_error naming the presets otherwise.
    [[nodiscard]] static AnalyticBackend preset(std::string_view name) {
        const auto device = device_preset(name);
        RLFLOW_EXPECTS(device.has_value(), precondition_error,
                       "unknown device preset '" + std::string(name) + "' (v100, a100, h100, cpu)");
        return AnalyticBackend(*device);
    }

    [[nodiscard]] std::string name() const { return "analytic:" + std::string(m_device.name); }
    [[nodiscard]] const DeviceSpec& device() const noexcept { return m_device; }

    /// Milliseconds for one execution of `op`.
    [[nodiscard]] double op_cost_ms(const OpSignature& op) const {
        const OpTraits& traits = op_traits(op.op);
        if (traits.has(op_flag_source) || traits.has(op_flag_view)) return 0.0;
        constexpr double giga = 1e9, ms_per_s = 1e3, us_per_ms = 1e3;
        const double flops = traits.flops(OpContext{op.attributes, op.inputs, op.outputs, traits.name});
        const double bytes = op_bytes(traits, op.inputs, op.outputs);
        const double compute_s = flops / (m_device.peak_gflops * giga * efficiency(op));
        const double memory_s = bytes / (m_device.bandwidth_gbs * giga);
        return std::max(compute_s, memory_s) * ms_per_s + m_device.launch_us / us_per_ms;
    }

private:
    [[nodiscard]] double saturation(double d) const noexcept { return d / (d + m_device.half_saturation); }
    [[nodiscard]] double efficiency(const OpSignature& op) const {
        const auto gemm = detail::gemm_shape(op);
        if (!gemm) return m_device.peak_efficiency;
        return m_device.peak_efficiency * saturation(gemm->m) * saturation(gemm->n) * saturation(gemm->k);
    }

    DeviceSpec m_device;
};

static_assert(CostBackend<AnalyticBackend>);

}  // namespace rlflow::cost
