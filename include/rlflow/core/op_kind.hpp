#pragma once
/// \file
/// The closed set of op kinds rlflow understands, plus `Opaque` for everything else.
/// Their properties live in one table, `op_traits()` in op_traits.hpp.

#include <cstddef>
#include <cstdint>

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
    Opaque,
};

/// Number of op kinds (the size of per-kind tables).
inline constexpr std::size_t op_kind_count = static_cast<std::size_t>(OpKind::Opaque) + 1;

/// Fused activation of a Conv2D node (attribute "activation").
enum class Activation : std::int64_t { None = 0, Relu = 1, Sigmoid = 2, Tanh = 3 };

}  // namespace rlflow
