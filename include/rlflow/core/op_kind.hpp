#pragma once
/// \file
/// The closed set of op kinds rlflow understands, plus `Opaque` for everything else.
/// Their properties live in one table, `op_traits()` in op_traits.hpp.

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace rlflow {

/// Op kinds. `Input`, `Weight` and `Constant` are source nodes; `Opaque` stands for any op
/// outside the core set, carried with its attributes and shapes but never interpreted.
enum class OpKind : std::uint8_t {
    Input,
    Weight,
    Constant,
    Conv2D,
    MatMul,
    Gemm,
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Relu,
    Sigmoid,
    Tanh,
    Erf,
    Sqrt,
    Identity,
    Clip,
    Softmax,
    MaxPool,
    AveragePool,
    GlobalAveragePool,
    BatchNormalization,
    LayerNormalization,
    Concat,
    Split,
    Transpose,
    Reshape,
    Flatten,
    Pad,
    ReduceMean,
    Enlarge,
    MergeGConv,
    HardSigmoid,
    HardSwish,
    LeakyRelu,
    Slice,
    ReduceSum,
    ReduceMax,
    Gelu,
    Resize,
    InstanceNormalization,
    ConvTranspose,
    Expand,
    Gather,
    Where,
    Equal,
    Less,
    Greater,
    Not,
    And,
    Or,
    Cast,
    Opaque,
};

/// Number of op kinds (the size of per-kind tables).
inline constexpr std::size_t op_kind_count = static_cast<std::size_t>(OpKind::Opaque) + 1;

/// Fused activation of a Conv2D node (attribute "activation").
enum class Activation : std::int64_t { None = 0, Relu = 1, Sigmoid = 2, Tanh = 3 };

/// The op a fused activation applies (Identity for None).
[[nodiscard]] constexpr OpKind activation_op(Activation activation) noexcept {
    switch (activation) {
        case Activation::Relu: return OpKind::Relu;
        case Activation::Sigmoid: return OpKind::Sigmoid;
        case Activation::Tanh: return OpKind::Tanh;
        case Activation::None: break;
    }
    return OpKind::Identity;
}

/// The fused activation that applies `op` (None for an op that is not one).
[[nodiscard]] constexpr Activation activation_of(OpKind op) noexcept {
    for (const Activation a : {Activation::Relu, Activation::Sigmoid, Activation::Tanh})
        if (activation_op(a) == op) return a;
    return Activation::None;
}

}  // namespace rlflow
