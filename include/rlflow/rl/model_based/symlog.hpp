#pragma once
/// \file
/// The symlog scale and its two-hot encoding (DreamerV3, Hafner et al. 2023), for
/// regressing rewards whose sizes span orders of magnitude.
///
/// symlog(x) = sign(x) ln(1 + |x|) squashes large values and leaves small ones almost as
/// they are. A two-hot target spreads a symlog value over the two nearest of `count`
/// evenly spaced bins in [-bound, bound], weighted by closeness, so that the expectation
/// of the bins under the target is the value itself; a head predicting logits over the
/// bins is trained by cross-entropy, and read back as that expectation.

#include <rlflow/core/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rlflow::rl {

/// sign(x) ln(1 + |x|) and its inverse.
[[nodiscard]] inline double symlog(double x) { return x < 0 ? -std::log1p(-x) : std::log1p(x); }
[[nodiscard]] inline double symexp(double y) { return y < 0 ? -std::expm1(-y) : std::expm1(y); }

/// `count` bins evenly spaced over [-bound, bound] of the symlog scale.
class SymlogBins {
public:
    SymlogBins(std::int64_t count, double bound) : m_count(count), m_bound(bound) {
        RLFLOW_EXPECTS(count >= 2 && bound > 0 && std::isfinite(bound), precondition_error,
                       "SymlogBins needs at least 2 bins and a positive bound, not " + std::to_string(count) + " over "
                           + std::to_string(bound));
    }

    [[nodiscard]] std::int64_t count() const noexcept { return m_count; }
    /// The symlog value of bin `i`.
    [[nodiscard]] double value(std::int64_t i) const { return -m_bound + 2 * m_bound * static_cast<double>(i) / static_cast<double>(m_count - 1); }

    /// Appends the two-hot weights (count of them) of symlog value `y`, clamped to the range.
    void append_two_hot(double y, std::vector<float>& out) const {
        const double step = 2 * m_bound / static_cast<double>(m_count - 1);
        const double position = (std::clamp(y, -m_bound, m_bound) + m_bound) / step;
        const auto below = std::min<std::int64_t>(static_cast<std::int64_t>(std::floor(position)), m_count - 2);
        const double upper = position - static_cast<double>(below);
        const std::size_t at = out.size();
        out.resize(at + static_cast<std::size_t>(m_count), 0.0f);
        out[at + static_cast<std::size_t>(below)] = static_cast<float>(1 - upper);
        out[at + static_cast<std::size_t>(below) + 1] = static_cast<float>(upper);
    }

    /// The expected symlog value of the bins under softmax(logits) (count of them).
    [[nodiscard]] double expectation(std::span<const float> logits) const {
        RLFLOW_EXPECTS(std::ssize(logits) == m_count, precondition_error, "SymlogBins: logits of another bin count");
        const float top = *std::max_element(logits.begin(), logits.end());
        double total = 0, weighted = 0;
        for (std::int64_t i = 0; i < m_count; ++i) {
            const double w = std::exp(double(logits[static_cast<std::size_t>(i)]) - top);
            total += w;
            weighted += w * value(i);
        }
        return weighted / total;
    }

private:
    std::int64_t m_count;
    double m_bound;
};

}  // namespace rlflow::rl
