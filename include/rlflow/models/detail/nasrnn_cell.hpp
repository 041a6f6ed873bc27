#pragma once
/// \file
/// One step of TASO's NasRNN benchmark cell (examples/nasrnn.py).

#include <rlflow/models/builder.hpp>

#include <array>
#include <string>
#include <vector>

namespace rlflow::detail {

/// Number of (x W1 + h W2) combines per step.
inline constexpr int nasrnn_combines = 8;

/// One gate: `combine`(left_activation(t[left]), right_activation(t[right])), where t
/// holds the 8 combines followed by the gates computed so far.
struct NasRnnGate {
    OpKind combine;
    OpKind left_activation;
    int left;
    OpKind right_activation;
    int right;
};

/// TASO's gates m0..m6 (t8..t14): the new state is tanh(m6).
// clang-format off
inline constexpr std::array<NasRnnGate, 7> nasrnn_gates{{
    {OpKind::Add, OpKind::Relu, 0, OpKind::Sigmoid, 3},    // m0 = relu(t0) + sigmoid(t3)
    {OpKind::Add, OpKind::Sigmoid, 1, OpKind::Tanh, 2},    // m1 = sigmoid(t1) + tanh(t2)
    {OpKind::Mul, OpKind::Sigmoid, 4, OpKind::Tanh, 5},    // m2 = sigmoid(t4) * tanh(t5)
    {OpKind::Mul, OpKind::Sigmoid, 6, OpKind::Relu, 7},    // m3 = sigmoid(t6) * relu(t7)
    {OpKind::Add, OpKind::Sigmoid, 9, OpKind::Tanh, 10},   // m4 = sigmoid(m1) + tanh(m2)
    {OpKind::Mul, OpKind::Tanh, 8, OpKind::Tanh, 11},      // m5 = tanh(m0) * tanh(m3)
    {OpKind::Mul, OpKind::Tanh, 12, OpKind::Tanh, 13},     // m6 = tanh(m4) * tanh(m5)
}};
// clang-format on

/// (x W1 + h W2) with fresh (in, hidden) weights "<name>.x_weight" and "<name>.h_weight".
inline TensorRef nasrnn_combine(models::Builder& b, const std::string& name, TensorRef x, TensorRef h,
                                std::int64_t hidden) {
    const TensorRef wx = b.weight(name + ".x_weight", {b.shape(x).dim(-1), hidden});
    const TensorRef wh = b.weight(name + ".h_weight", {b.shape(h).dim(-1), hidden});
    // A braced list evaluates left to right: node ids do not depend on the compiler.
    return b.op(OpKind::Add, name, {b.matmul(name + ".x_matmul", x, wx), b.matmul(name + ".h_matmul", h, wh)});
}

/// One step: 8 combines of (x, h), the 7 gates, and tanh: the new state.
inline TensorRef nasrnn_step(models::Builder& b, const std::string& p, TensorRef h, TensorRef x, std::int64_t hidden) {
    std::vector<TensorRef> t;
    for (int i = 0; i < nasrnn_combines; ++i)
        t.push_back(nasrnn_combine(b, p + ".combine" + std::to_string(i), x, h, hidden));
    for (std::size_t i = 0; i < nasrnn_gates.size(); ++i) {
        const NasRnnGate& gate = nasrnn_gates[i];
        const std::string name = p + ".gate" + std::to_string(i);
        const TensorRef left = b.op(gate.left_activation, name + ".left", {t[static_cast<std::size_t>(gate.left)]});
        const TensorRef right = b.op(gate.right_activation, name + ".right", {t[static_cast<std::size_t>(gate.right)]});
        t.push_back(b.op(gate.combine, name, {left, right}));
    }
    return b.op(OpKind::Tanh, p + ".state", {t.back()});
}

}  // namespace rlflow::detail
