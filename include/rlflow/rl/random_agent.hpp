#pragma once
/// \file
/// The random agent: a uniformly random allowed xfer, then a uniformly random location of
/// it. It drives the environment's tests and benchmarks and Python's random-agent example;
/// the model-based trainer's first rollouts (World Models: random rollouts before the
/// controller exists) use its own masked random agent, which may choose NO-OP and takes an
/// xfer's best-gain location (MbTrainer::random_action).

#include <rlflow/rl/env.hpp>
#include <rlflow/rl/observation.hpp>

#include <cstdint>
#include <random>
#include <vector>

namespace rlflow::rl {

/// A uniformly random allowed rewrite (never NO-OP), or NO-OP when no rewrite is allowed.
template <class Generator>
[[nodiscard]] Action random_rewrite(const Observation& o, Generator& rng) {
    std::vector<std::uint32_t> xfers;
    for (std::uint32_t r = 0; r < o.num_xfers; ++r)
        if (o.xfer_mask[r]) xfers.push_back(r);
    if (xfers.empty()) return {o.num_xfers, 0};
    const std::uint32_t r = xfers[std::uniform_int_distribution<std::size_t>(0, xfers.size() - 1)(rng)];
    return {r, std::uniform_int_distribution<std::uint32_t>(0, o.location_count(r) - 1)(rng)};
}

}  // namespace rlflow::rl
