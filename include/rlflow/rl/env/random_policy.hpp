#pragma once
/// \file
/// The random policy, the one every agent and test draws random rewrites from: a
/// uniformly random allowed xfer, then a uniformly random location of it or its best
/// one-step-gain location, and NO-OP with a given probability. It drives the
/// environment's tests and benchmarks, the model-based trainer's first rollouts (World
/// Models: random rollouts before the controller exists, NO-OP allowed, best-gain
/// locations as M learns them) and the model-based policy's exploration.

#include <rlflow/core/random.hpp>
#include <rlflow/rl/env/env.hpp>
#include <rlflow/rl/env/observation.hpp>

#include <cstdint>
#include <vector>

namespace rlflow::rl {

/// How the random policy draws.
struct RandomPolicyOptions {
    /// The probability of NO-OP while a rewrite is allowed (NO-OP is taken anyway when
    /// none is).
    double no_op = 0;
    /// Take the chosen xfer's best one-step-gain location (best_location) rather than a
    /// uniformly random one.
    bool best_location = false;
};

/// A uniformly random allowed xfer (NO-OP when none is allowed).
[[nodiscard]] inline std::uint32_t random_xfer(const Observation& o, Rng& rng) {
    std::vector<std::uint32_t> allowed;
    for (std::uint32_t x = 0; x < o.num_xfers; ++x)
        if (o.xfer_mask[x] != 0) allowed.push_back(x);
    if (allowed.empty()) return o.num_xfers;
    return allowed[rng.below(allowed.size())];
}

/// A random action as `options` say.
[[nodiscard]] inline Action random_action(const Observation& o, Rng& rng, const RandomPolicyOptions& options = {}) {
    const std::uint32_t x = random_xfer(o, rng);
    if (x == o.num_xfers || (options.no_op > 0 && rng.uniform() < options.no_op)) return {o.num_xfers, 0};
    return {x, options.best_location ? best_location(o, x) : static_cast<std::uint32_t>(rng.below(o.location_count(x)))};
}

}  // namespace rlflow::rl
