#pragma once
/// \file
/// `LstmCell` (one step) and `Lstm` (a sequence): the memory of the MDN-RNN world model
/// (RLFlow thesis §2.2.2 eq. (1)-(6), §4.3, whose world model, after "World Models", Ha &
/// Schmidhuber 2018, has 256 hidden units). For an input x_t and the previous state
/// (h, c), one fused linear map gives the four gate pre-activations, in the order input,
/// forget, candidate, output:
///
///     [a_i, a_f, a_g, a_o] = [x_t, h] W + b              W: (in + hidden, 4 hidden)
///     i = σ(a_i), f = σ(a_f), g = tanh(a_g), o = σ(a_o)
///     c' = f ⊙ c + i ⊙ g,    h' = o ⊙ tanh(c')
///
/// Everything is composed from recorded ops (concat, matmul, slice, sigmoid, tanh, mul,
/// add), so backpropagation through time is the tape's ordinary backward pass.
///
/// Initialisation: W is orthogonal with gain 1 (a gate pre-activation keeps the scale of
/// [x, h]); b is 0 except the forget-gate block, which is 1 (Gers et al.; Jozefowicz et
/// al. 2015), so that a fresh cell keeps its memory (f ≈ 0.73) rather than halving it and
/// gradients reach back over many steps from the first update on.

#include <rlflow/core/error.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn/layers.hpp>
#include <rlflow/nn/ops.hpp>
#include <rlflow/nn/tape.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace rlflow::nn {

/// The hidden size the world model uses (the RLFlow thesis's MDN-RNN: an LSTM of 256).
inline constexpr std::int64_t default_lstm_hidden = 256;
/// The initial forget-gate bias (see the file comment).
inline constexpr double lstm_forget_bias = 1.0;
/// The gain of the fused gate matrix's orthogonal initialisation.
inline constexpr double lstm_weight_gain = 1.0;

/// The recurrent state of an LSTM: hidden output h and cell memory c, both (batch, hidden).
template <TensorBackend B>
struct LstmState {
    Var<B> h;
    Var<B> c;
};

/// One LSTM step over a batch.
template <TensorBackend B>
class LstmCell {
public:
    LstmCell() = default;
    /// Parameters are named `name + ".gates.weight"` and `name + ".gates.bias"`.
    LstmCell(const std::string& name, std::int64_t input_size, Rng& rng, std::int64_t hidden_size = default_lstm_hidden)
        : m_name(name), m_hidden(hidden_size),
          m_gates(name + ".gates", input_size + hidden_size, 4 * hidden_size, rng, lstm_weight_gain) {
        RLFLOW_EXPECTS(input_size > 0 && hidden_size > 0, precondition_error,
                       "lstm '" + name + "' needs positive sizes, got input " + std::to_string(input_size) + " and hidden "
                           + std::to_string(hidden_size));
        std::vector<typename B::Scalar> bias(static_cast<std::size_t>(4 * hidden_size), typename B::Scalar(0));
        for (std::int64_t j = hidden_size; j < 2 * hidden_size; ++j)
            bias[static_cast<std::size_t>(j)] = static_cast<typename B::Scalar>(lstm_forget_bias);
        m_gates.bias().value = Tensor<B>::from_host(Shape{4 * hidden_size}, bias);
    }

    /// The next state from x (batch, input) and `state`.
    [[nodiscard]] LstmState<B> operator()(Tape<B>& tape, Var<B> x, const LstmState<B>& state) {
        RLFLOW_EXPECTS(x.shape().rank() == 2 && x.dim(1) == input_size(), shape_error,
                       "lstm '" + m_name + "' takes (batch, " + std::to_string(input_size()) + ") inputs, got "
                           + x.shape().to_string());
        const Shape state_shape{x.dim(0), m_hidden};
        RLFLOW_EXPECTS(state.h.shape() == state_shape && state.c.shape() == state_shape, shape_error,
                       "lstm '" + m_name + "' state h " + state.h.shape().to_string() + ", c " + state.c.shape().to_string()
                           + " for a batch of " + std::to_string(x.dim(0)) + " needs " + state_shape.to_string());
        const Var<B> gates = m_gates(tape, concat<B>({x, state.h}, 1));
        const std::int64_t n = m_hidden;
        const Var<B> input_gate = sigmoid(slice(gates, 1, 0, n));
        const Var<B> forget_gate = sigmoid(slice(gates, 1, n, 2 * n));
        const Var<B> candidate = tanh(slice(gates, 1, 2 * n, 3 * n));
        const Var<B> output_gate = sigmoid(slice(gates, 1, 3 * n, 4 * n));
        const Var<B> c = add(mul(forget_gate, state.c), mul(input_gate, candidate));
        return {mul(output_gate, tanh(c)), c};
    }

    /// h = c = 0 for `batch` rows (constants: no gradient flows into an initial state).
    [[nodiscard]] LstmState<B> zero_state(Tape<B>& tape, std::int64_t batch) const {
        return {tape.constant(Tensor<B>(Shape{batch, m_hidden})), tape.constant(Tensor<B>(Shape{batch, m_hidden}))};
    }

    [[nodiscard]] std::int64_t input_size() const { return m_gates.in_features() - m_hidden; }
    [[nodiscard]] std::int64_t hidden_size() const noexcept { return m_hidden; }
    /// The fused gate layer (weight (in + hidden, 4 hidden), bias (4 hidden); gate order i, f, g, o).
    [[nodiscard]] Linear<B>& gates() noexcept { return m_gates; }
    [[nodiscard]] const Linear<B>& gates() const noexcept { return m_gates; }
    [[nodiscard]] std::vector<Parameter<B>*> parameters() { return m_gates.parameters(); }

private:
    std::string m_name;
    std::int64_t m_hidden = 0;
    Linear<B> m_gates;
};

/// What `Lstm` returns: the hidden output of every step, and the state after the last.
template <TensorBackend B>
struct LstmSequence {
    std::vector<Var<B>> hidden;
    LstmState<B> final_state;

    /// The hidden outputs as one (time, batch, hidden) tensor.
    [[nodiscard]] Var<B> stacked() const {
        RLFLOW_EXPECTS(!hidden.empty(), precondition_error, "stacked() of an empty sequence");
        std::vector<Var<B>> steps;
        steps.reserve(hidden.size());
        for (const Var<B>& h : hidden) steps.push_back(reshape(h, Shape{1, h.dim(0), h.dim(1)}));
        return concat<B>(steps, 0);
    }
};

/// An LSTM cell unrolled over a sequence.
template <TensorBackend B>
class Lstm {
public:
    Lstm() = default;
    /// Parameters are named as the cell's: `name + ".gates.weight"`, `name + ".gates.bias"`.
    Lstm(const std::string& name, std::int64_t input_size, Rng& rng, std::int64_t hidden_size = default_lstm_hidden)
        : m_cell(name, input_size, rng, hidden_size) {}

    /// Runs the steps `inputs` (each (batch, input)) from `initial`.
    [[nodiscard]] LstmSequence<B> operator()(Tape<B>& tape, const std::vector<Var<B>>& inputs, const LstmState<B>& initial) {
        LstmSequence<B> out{{}, initial};
        out.hidden.reserve(inputs.size());
        for (const Var<B>& x : inputs) {
            out.final_state = m_cell(tape, x, out.final_state);
            out.hidden.push_back(out.final_state.h);
        }
        return out;
    }
    /// Runs the steps `inputs` from the zero state.
    [[nodiscard]] LstmSequence<B> operator()(Tape<B>& tape, const std::vector<Var<B>>& inputs) {
        RLFLOW_EXPECTS(!inputs.empty(), precondition_error, "an lstm over an empty sequence");
        return (*this)(tape, inputs, zero_state(tape, inputs.front().dim(0)));
    }
    /// Runs a (time, batch, input) tensor from `initial`.
    [[nodiscard]] LstmSequence<B> operator()(Tape<B>& tape, Var<B> sequence, const LstmState<B>& initial) {
        return (*this)(tape, steps(sequence), initial);
    }
    /// Runs a (time, batch, input) tensor from the zero state.
    [[nodiscard]] LstmSequence<B> operator()(Tape<B>& tape, Var<B> sequence) { return (*this)(tape, steps(sequence)); }

    [[nodiscard]] LstmState<B> zero_state(Tape<B>& tape, std::int64_t batch) const { return m_cell.zero_state(tape, batch); }
    [[nodiscard]] LstmCell<B>& cell() noexcept { return m_cell; }
    [[nodiscard]] std::int64_t hidden_size() const noexcept { return m_cell.hidden_size(); }
    [[nodiscard]] std::vector<Parameter<B>*> parameters() { return m_cell.parameters(); }

private:
    /// A (time, batch, input) tensor as `time` (batch, input) steps.
    [[nodiscard]] static std::vector<Var<B>> steps(Var<B> sequence) {
        RLFLOW_EXPECTS(sequence.shape().rank() == 3, shape_error,
                       "an lstm sequence is (time, batch, input), got " + sequence.shape().to_string());
        std::vector<Var<B>> out;
        out.reserve(static_cast<std::size_t>(sequence.dim(0)));
        for (std::int64_t t = 0; t < sequence.dim(0); ++t)
            out.push_back(reshape(slice(sequence, 0, t, t + 1), Shape{sequence.dim(1), sequence.dim(2)}));
        return out;
    }

    LstmCell<B> m_cell;
};

}  // namespace rlflow::nn
