#pragma once
/// \file
/// Generalised advantage estimation (Schulman et al. 2016, "High-dimensional continuous
/// control using generalized advantage estimation"), with truncation handled as PPO
/// implementations that bootstrap do: an episode that the step limit cut did not end,
/// so its last step is bootstrapped from the value of the observation it reached; an
/// episode that terminated (NO-OP) has no future.
///
///   delta_t = r_t + gamma * (terminated_t ? 0 : V(s_{t+1})) - V(s_t)
///   A_t     = delta_t + gamma * lambda * (ended_t ? 0 : A_{t+1})
///   R_t     = A_t + V(s_t)                          (the value target)
///
/// where ended_t is terminated_t or truncated_t, and the step after the last of a
/// rollout segment that did not end is bootstrapped the same way (its A_{t+1} is 0 and
/// V(s_{t+1}) is the value of the observation the segment stopped at).

#include <rlflow/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rlflow::rl {

/// One environment's consecutive steps, in order. Step t led from s_t to s_{t+1}.
struct GaeSteps {
    std::span<const double> rewards;
    /// V(s_t).
    std::span<const double> values;
    /// V(s_{t+1}): the value of the observation step t reached (read only where the
    /// episode did not terminate at t).
    std::span<const double> next_values;
    /// The episode ended at step t because the agent chose NO-OP.
    std::span<const std::uint8_t> terminated;
    /// The episode was cut by the step limit at step t.
    std::span<const std::uint8_t> truncated;
};

/// Advantages and value targets of GAE.
struct GaeResult {
    std::vector<double> advantages;
    std::vector<double> returns;
};

[[nodiscard]] inline GaeResult generalized_advantages(const GaeSteps& s, double gamma, double lambda) {
    const std::size_t n = s.rewards.size();
    RLFLOW_EXPECTS(s.values.size() == n && s.next_values.size() == n && s.terminated.size() == n && s.truncated.size() == n,
                   precondition_error, "generalized_advantages: " + std::to_string(n) + " rewards but other lengths differ");
    RLFLOW_EXPECTS(gamma >= 0 && gamma <= 1 && lambda >= 0 && lambda <= 1, precondition_error,
                   "generalized_advantages: gamma and lambda must be in [0, 1]");
    GaeResult out;
    out.advantages.assign(n, 0.0);
    out.returns.assign(n, 0.0);
    double next_advantage = 0;
    for (std::size_t t = n; t-- > 0;) {
        const bool ended = s.terminated[t] || s.truncated[t];
        const double future = s.terminated[t] ? 0.0 : s.next_values[t];
        const double delta = s.rewards[t] + gamma * future - s.values[t];
        const double advantage = delta + gamma * lambda * (ended ? 0.0 : next_advantage);
        out.advantages[t] = advantage;
        out.returns[t] = advantage + s.values[t];
        next_advantage = advantage;
    }
    return out;
}

}  // namespace rlflow::rl
