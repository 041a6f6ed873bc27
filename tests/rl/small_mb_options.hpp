#pragma once
// Settings of a small model-based training run (a few dozen real steps, tiny networks),
// shared by the rl and mpi tests.
#include <rlflow/rl/model_based/trainer.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace rlflow::test {

inline rl::MbOptions small_mb_options(std::uint64_t seed) {
    rl::MbOptions o;
    o.model = {.latent = 4, .encoder_latent = 16, .message_passing_steps = 1, .lstm_hidden = 32, .components = 3,
               .action_embedding = 8, .summary = 4, .head_hidden = 32, .target_rate = 0.05, .spread_floor = 0.2, .spread_weight = 10, .seed = seed};
    o.controller = {.hidden = 32, .gain_hidden = 8, .noop_logit = -4.6, .seed = seed};
    o.env.step_limit = 8;
    o.dream = {.temperature = 1.0, .step_limit = 8, .batch = 8};
    o.dream_horizon = 4;
    o.dream_steps = 64;
    o.ppo.minibatch_size = 16;
    o.real_steps = 37;
    o.random_steps = 20;
    o.collect_steps = 10;
    o.model_updates = 2;
    o.windows = 4;
    o.window_length = 4;
    o.seed = seed;
    return o;
}

/// Iterates `trainer` (made with `o`) until its budget of real steps is spent, checking
/// each iteration's log; returns the iterations.
template <class Trainer>
std::size_t train_to_budget(Trainer& trainer, const rl::MbOptions& o) {
    std::size_t iterations = 0;
    while (!trainer.done()) {
        const rl::MbLog log = trainer.iterate();
        ++iterations;
        CHECK(log.real_steps == trainer.real_steps());
        CHECK(log.dream_steps >= iterations * o.dream_steps);
        CHECK(std::isfinite(log.model.total));
        CHECK(std::isfinite(log.controller.policy_loss));
    }
    return iterations;
}

}  // namespace rlflow::test
