#pragma once
// What rlflow_calibrate_cpu prints and writes about a fit: op classes, per-class errors
// and ranks, the fitted preset row, and one TSV line of features per signature. Not part
// of the library.

#include "op_samples.hpp"
#include "preset_fit.hpp"
#include "rank_statistics.hpp"

#include <rlflow/cost/analytic.hpp>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace rlflow::tools {

/// The class an op is reported under: its kind, with convolutions split the way a CPU
/// runtime runs them differently (depthwise, grouped, pointwise, other) and MatMuls into
/// batched and not.
[[nodiscard]] inline std::string op_class(const cost::OpSignature& op) {
    const std::string kind(op_name(op.op));
    if (op.op == OpKind::Conv2D) {
        const std::int64_t group = op.attributes.get_int("group", 1);
        const Shape& w = op.inputs[1].shape;
        if (group > 1 && w[1] == 1 && w[0] == group) return "Conv2D depthwise";
        if (group > 1) return "Conv2D grouped";
        return cost::detail::pointwise_conv(op) ? "Conv2D 1x1" : "Conv2D dense";
    }
    if (op.op == OpKind::MatMul) return op.inputs[1].shape.rank() > 2 ? "MatMul batched" : "MatMul";
    return kind;
}

[[nodiscard]] inline std::string feature_header() {
    return "source\tclass\tsignature\tflops\tbytes\tgemm_m\tgemm_n\tgemm_k\tgemm_groups\tim2col\tconstant_inputs";
}

/// The signature as "float(1,64,56,56), float(64,64,3,3) -> float(1,64,56,56) group=1 ...".
[[nodiscard]] inline std::string signature_text(const cost::OpSignature& op) {
    std::ostringstream text;
    for (std::size_t i = 0; i < op.inputs.size(); ++i) text << (i ? ", " : "") << op.inputs[i].to_string();
    text << " ->";
    for (const TensorType& t : op.outputs) text << ' ' << t.to_string();
    for (const auto& [name, value] : op.attributes)
        if (const auto* i = std::get_if<std::int64_t>(&value)) text << ' ' << name << '=' << *i;
        else if (const auto* v = std::get_if<std::vector<std::int64_t>>(&value)) {
            text << ' ' << name << '=';
            for (std::size_t k = 0; k < v->size(); ++k) text << (k ? "," : "") << (*v)[k];
        }
    return text.str();
}

[[nodiscard]] inline std::string feature_row(const OpSample& s) {
    const cost::OpSignature op = s.signature.view();
    const OpTraits& traits = op_traits(op.op);
    const auto gemm = cost::detail::gemm_shape(op);
    std::ostringstream row;
    row << s.source << '\t' << op_class(op) << '\t' << signature_text(op) << '\t'
        << traits.flops(OpContext{op.attributes, op.inputs, op.outputs, traits.name}) << '\t'
        << op_bytes(traits, op.inputs, op.outputs) << '\t';
    if (gemm) row << gemm->m << '\t' << gemm->n << '\t' << gemm->k << '\t' << gemm->groups << '\t' << (gemm->im2col ? 1 : 0);
    else row << "\t\t\t\t";
    row << '\t';
    for (const char c : s.signature.constant_inputs) row << (c ? '1' : '0');
    return row.str();
}

/// Prints the fitted row and, per op class and overall, the signature count, the median
/// absolute percentage error and Spearman's rho of the shipped and the fitted preset.
inline void print_fit(const PresetFit& fit, const cost::DeviceSpec& shipped, const std::vector<OpSample>& samples) {
    const cost::DeviceSpec& d = fit.device;
    const cost::Lowering& l = d.lowering;
    std::printf("fitted cpu preset (rms log error %.3f, %d iterations):\n", fit.rms_log_error, fit.iterations);
    std::printf("    {\"cpu\", %.4g, %.3g, %.3g, %.3g, %.3g,\n     {%s, %.3g, %.3g, %.3g, %.3g, %.3g, %.3g, %.3g, %.3g}},\n\n",
                d.peak_gflops, d.bandwidth_gbs, d.launch_us, d.half_saturation, d.peak_efficiency,
                l.only_rows_saturate ? "true" : "false", l.vector_efficiency, l.matrix_product_efficiency, l.im2col_passes,
                l.im2col_stride_passes, l.im2col_row_ns, l.activation_passes, l.cache_mib, l.cache_bandwidth_gbs);
    struct Column {
        std::vector<double> measured, shipped, fitted;
    };
    std::map<std::string, Column> classes;
    const cost::AnalyticBackend before(shipped), after(d);
    for (const OpSample& s : samples)
        for (const std::string& name : {op_class(s.signature.view()), std::string("all")}) {
            Column& c = classes[name];
            c.measured.push_back(s.measured_ms);
            c.shipped.push_back(before.op_cost_ms(s.signature.view()));
            c.fitted.push_back(after.op_cost_ms(s.signature.view()));
        }
    std::printf("%-20s %6s %14s %14s %10s %10s\n", "op class", "ops", "MdAPE shipped", "MdAPE fitted", "rho shipped",
                "rho fitted");
    for (const auto& [name, c] : classes)
        std::printf("%-20s %6zu %13.1f%% %13.1f%% %10.3f %10.3f\n", name.c_str(), c.measured.size(),
                    median_abs_percentage_error(c.shipped, c.measured), median_abs_percentage_error(c.fitted, c.measured),
                    spearman(c.shipped, c.measured), spearman(c.fitted, c.measured));
}

}  // namespace rlflow::tools
