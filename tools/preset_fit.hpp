#pragma once
// Fitting an analytic device preset to measured op times, and reporting the fit
// (rlflow_calibrate_cpu). Not part of the library.
//
// The fit minimises sum_i huber(ln predicted_i - ln measured_i) over the chosen DeviceSpec
// fields: relative errors, so a 5 us ReLU and a 5 ms convolution count alike, and a
// factor of 2 too high weighs as much as a factor of 2 too low. Huber's loss (Huber 1964,
// "Robust estimation of a location parameter") is quadratic up to a log error of
// huber_delta and linear beyond: the few ops a roofline cannot describe (ONNX Runtime's
// element-by-element Pad and Pow run 5-40x slower than their bytes) then do not drag
// every constant towards them. It is minimised as least squares of the residuals
// sign(r) sqrt(2 huber(r)). The fields are fitted as
// logarithms (they are positive rates, sizes and times) by Levenberg-Marquardt with a
// forward-difference Jacobian (Marquardt 1963, "An algorithm for least-squares estimation
// of nonlinear parameters"), through AnalyticBackend::op_cost_ms itself, so what is fitted
// is exactly the equation the backend ships.

#include "op_samples.hpp"

#include <rlflow/cost/analytic.hpp>

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace rlflow::tools {

/// A DeviceSpec field the fit may change.
struct FittedField {
    const char* name;
    double& (*field)(cost::DeviceSpec&);
};

/// The cpu preset's fitted fields: all but peak_efficiency, which stays 1 (only the
/// product peak x peak_efficiency matters, so peak_gflops is the rate of a large GEMM),
/// and the switch that only rows saturate, which is the model's design (see
/// cost/analytic.hpp).
inline std::vector<FittedField> cpu_fitted_fields() {
    using cost::DeviceSpec;
    return {{"peak_gflops", [](DeviceSpec& d) -> double& { return d.peak_gflops; }},
            {"half_saturation", [](DeviceSpec& d) -> double& { return d.half_saturation; }},
            {"bandwidth_gbs", [](DeviceSpec& d) -> double& { return d.bandwidth_gbs; }},
            {"launch_us", [](DeviceSpec& d) -> double& { return d.launch_us; }},
            {"vector_efficiency", [](DeviceSpec& d) -> double& { return d.lowering.vector_efficiency; }},
            {"matrix_product_efficiency", [](DeviceSpec& d) -> double& { return d.lowering.matrix_product_efficiency; }},
            {"im2col_passes", [](DeviceSpec& d) -> double& { return d.lowering.im2col_passes; }},
            {"im2col_stride_passes", [](DeviceSpec& d) -> double& { return d.lowering.im2col_stride_passes; }},
            {"im2col_row_ns", [](DeviceSpec& d) -> double& { return d.lowering.im2col_row_ns; }},
            {"activation_passes", [](DeviceSpec& d) -> double& { return d.lowering.activation_passes; }},
            {"cache_mib", [](DeviceSpec& d) -> double& { return d.lowering.cache_mib; }},
            {"cache_bandwidth_gbs", [](DeviceSpec& d) -> double& { return d.lowering.cache_bandwidth_gbs; }}};
}

/// The outcome of a fit.
struct PresetFit {
    cost::DeviceSpec device;
    double rms_log_error = 0;
    int iterations = 0;
};

namespace detail {

/// Fitted fields are kept above this, so their logarithms stay finite.
inline constexpr double smallest_field = 1e-6;

inline cost::DeviceSpec with_fields(cost::DeviceSpec d, const std::vector<FittedField>& fields,
                                    const Eigen::VectorXd& log_values) {
    for (std::size_t i = 0; i < fields.size(); ++i)
        fields[i].field(d) = std::exp(log_values[static_cast<Eigen::Index>(i)]);
    return d;
}

/// The log error beyond which Huber's loss grows linearly: a factor of e^0.5 = 1.65.
inline constexpr double huber_delta = 0.5;

/// ln(predicted / measured) per sample.
inline Eigen::VectorXd log_errors(const cost::DeviceSpec& d, const std::vector<OpSample>& samples) {
    const cost::AnalyticBackend backend(d);
    Eigen::VectorXd r(static_cast<Eigen::Index>(samples.size()));
    for (std::size_t i = 0; i < samples.size(); ++i)
        r[static_cast<Eigen::Index>(i)] = std::log(backend.op_cost_ms(samples[i].signature.view()) / samples[i].measured_ms);
    return r;
}

/// The residuals whose squares sum to twice Huber's loss of the log errors.
inline Eigen::VectorXd log_residuals(const cost::DeviceSpec& d, const std::vector<OpSample>& samples) {
    Eigen::VectorXd r = log_errors(d, samples);
    for (double& e : r)
        if (std::abs(e) > huber_delta)
            e = std::copysign(std::sqrt(2.0 * huber_delta * std::abs(e) - huber_delta * huber_delta), e);
    return r;
}


}  // namespace detail

/// Fits `fields` of `start` to `samples` (see the file comment). With `prior` > 0 each
/// field's log also pays prior x (its distance from `start`'s), a ridge towards the preset:
/// a field the samples say little about (few samples, none of the ops it prices) then
/// stays near the preset instead of drifting without bound.
inline PresetFit fit_preset(const cost::DeviceSpec& start, const std::vector<FittedField>& fields,
                            const std::vector<OpSample>& samples, double prior = 0) {
    constexpr int max_iterations = 500;
    constexpr double initial_damping = 1e-3, damping_factor = 4.0, converged = 1e-12, hopeless_damping = 1e12;
    cost::DeviceSpec base = start;
    const auto n = static_cast<Eigen::Index>(fields.size());
    Eigen::VectorXd x(n);
    for (std::size_t i = 0; i < fields.size(); ++i)
        x[static_cast<Eigen::Index>(i)] = std::log(std::max(fields[i].field(base), detail::smallest_field));
    const Eigen::VectorXd x0 = x;
    const Eigen::Index rows = static_cast<Eigen::Index>(samples.size()) + (prior > 0 ? n : 0);
    const auto residuals = [&](const Eigen::VectorXd& at) {
        Eigen::VectorXd r(rows);
        r.head(static_cast<Eigen::Index>(samples.size())) = detail::log_residuals(detail::with_fields(base, fields, at), samples);
        if (prior > 0) r.tail(n) = prior * (at - x0);
        return r;
    };
    Eigen::VectorXd r = residuals(x);
    double cost = r.squaredNorm(), damping = initial_damping;
    int iteration = 0;
    for (; iteration < max_iterations; ++iteration) {
        constexpr double step = 1e-5;  // forward differences
        Eigen::MatrixXd j(rows, n);
        for (Eigen::Index p = 0; p < n; ++p) {
            Eigen::VectorXd moved = x;
            moved[p] += step;
            j.col(p) = (residuals(moved) - r) / step;
        }
        const Eigen::MatrixXd normal = j.transpose() * j;
        Eigen::MatrixXd damped = normal;
        damped.diagonal() += damping * normal.diagonal().cwiseMax(converged);
        Eigen::VectorXd candidate = x - damped.ldlt().solve(j.transpose() * r);
        candidate = candidate.cwiseMax(std::log(detail::smallest_field));
        const Eigen::VectorXd r_candidate = residuals(candidate);
        const double candidate_cost = r_candidate.squaredNorm();
        if (candidate_cost < cost) {
            const bool done = cost - candidate_cost < converged * cost;
            x = candidate, r = r_candidate, cost = candidate_cost, damping /= damping_factor;
            if (done) break;
        } else if ((damping *= damping_factor) > hopeless_damping) {
            break;  // no step downhill however short: a minimum
        }
    }
    const cost::DeviceSpec fitted = detail::with_fields(base, fields, x);
    const double count = static_cast<double>(std::max<std::size_t>(samples.size(), 1));
    return {fitted, std::sqrt(detail::log_errors(fitted, samples).squaredNorm() / count), iteration};
}

}  // namespace rlflow::tools
