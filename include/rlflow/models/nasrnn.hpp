#pragma once
/// \file
/// NasRNN in the form TASO benchmarks it (TASO examples/nasrnn.py): the RNN cell found by
/// neural architecture search, unrolled over 5 steps with hidden size 512.
///
/// The exact cell, step t (x_t: (batch, 512), h: the state):
///   t_i = x_t W1_i + h W2_i  for i = 0..7 (MatMul, MatMul, Add);
///   m0 = relu(t0) + sigmoid(t3)     m1 = sigmoid(t1) + tanh(t2)
///   m2 = sigmoid(t4) * tanh(t5)     m3 = sigmoid(t6) * relu(t7)
///   m4 = sigmoid(m1) + tanh(m2)     m5 = tanh(m0) * tanh(m3)
///   m6 = tanh(m4) * tanh(m5)        h' = tanh(m6).
/// As in TASO, every step has its own weights (16 matrices of 512 x 512 per step; they
/// are not shared across time), the initial state is a learned (1, 512) weight "state0"
/// (broadcast over the batch in the first step), and the graph output is the final state.
/// 46 ops per step; 20,972,032 parameters.

#include <rlflow/models/builder.hpp>
#include <rlflow/models/detail/nasrnn_cell.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace rlflow::models {

/// NasRNN hyper-parameters (defaults: TASO's benchmark).
struct NasRnnConfig {
    std::int64_t hidden = 512;
    int steps = 5;
};

/// NasRNN on inputs "x0" ... "x4" (batch, 512), returning the final state "hidden"
/// (batch, 512).
[[nodiscard]] inline Graph nasrnn(std::int64_t batch = 1, const NasRnnConfig& config = {}) {
    Builder b;
    std::vector<TensorRef> xs;
    for (int step = 0; step < config.steps; ++step)
        xs.push_back(b.input("x" + std::to_string(step), {batch, config.hidden}));
    TensorRef state = b.weight("state0", {1, config.hidden});
    for (int step = 0; step < config.steps; ++step)
        state = detail::nasrnn_step(b, "step" + std::to_string(step), state, xs[static_cast<std::size_t>(step)],
                                    config.hidden);
    b.output(state, "hidden");
    return std::move(b).finish();
}

}  // namespace rlflow::models
