#pragma once
// Rank statistics for comparing predicted with measured times (measurement drivers, not
// part of the library): Spearman's rho and the median absolute percentage error.

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace rlflow::tools {

/// Ranks from 1, ties sharing the mean of the ranks they span.
[[nodiscard]] inline std::vector<double> ranks(const std::vector<double>& values) {
    std::vector<std::size_t> order(values.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
    std::vector<double> result(values.size());
    for (std::size_t start = 0; start < order.size();) {
        std::size_t end = start;
        while (end + 1 < order.size() && values[order[end + 1]] == values[order[start]]) ++end;
        for (std::size_t k = start; k <= end; ++k) result[order[k]] = static_cast<double>(start + end) / 2.0 + 1.0;
        start = end + 1;
    }
    return result;
}

/// Spearman's rho: Pearson's correlation of the ranks (ties averaged); NaN when either
/// side has a single distinct value.
[[nodiscard]] inline double spearman(const std::vector<double>& xs, const std::vector<double>& ys) {
    const std::vector<double> rx = ranks(xs), ry = ranks(ys);
    const double n = static_cast<double>(xs.size());
    const double mx = std::accumulate(rx.begin(), rx.end(), 0.0) / n, my = std::accumulate(ry.begin(), ry.end(), 0.0) / n;
    double covariance = 0, vx = 0, vy = 0;
    for (std::size_t i = 0; i < rx.size(); ++i) {
        covariance += (rx[i] - mx) * (ry[i] - my);
        vx += (rx[i] - mx) * (rx[i] - mx);
        vy += (ry[i] - my) * (ry[i] - my);
    }
    return vx > 0 && vy > 0 ? covariance / std::sqrt(vx * vy) : std::numeric_limits<double>::quiet_NaN();
}

/// The median of `values` (the mean of the middle two for an even count); NaN if empty.
[[nodiscard]] inline double median(std::vector<double> values) {
    if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
    std::sort(values.begin(), values.end());
    const std::size_t mid = values.size() / 2;
    return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2.0;
}

/// The median over i of |predicted_i / measured_i - 1|, in percent.
[[nodiscard]] inline double median_abs_percentage_error(const std::vector<double>& predicted,
                                                       const std::vector<double>& measured) {
    constexpr double percent = 100.0;
    std::vector<double> errors;
    for (std::size_t i = 0; i < predicted.size(); ++i) errors.push_back(std::abs(predicted[i] / measured[i] - 1.0) * percent);
    return median(std::move(errors));
}

}  // namespace rlflow::tools
