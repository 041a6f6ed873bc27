#pragma once
/// \file
/// What kernels see of tensors: float spans with a shape, and the strided row walker
/// that every broadcasting, permuting or padding kernel is written over.

#include <rlflow/core/node.hpp>
#include <rlflow/core/shape.hpp>

#include <array>
#include <cstdint>
#include <span>

namespace rlflow::detail {

/// A read-only float32 tensor: row-major data and its shape.
struct ConstView {
    std::span<const float> data;
    Shape shape;
};

/// A writable float32 tensor: row-major data and its shape.
struct MutableView {
    std::span<float> data;
    Shape shape;
};

/// Everything a kernel needs for one node: attributes from the node, inputs in slot
/// order, and outputs already allocated with their inferred shapes.
struct KernelArgs {
    const Node& node;
    std::span<const ConstView> inputs;
    std::span<const MutableView> outputs;
};

/// Element strides of an operand, one per dimension of an iteration shape; a stride of 0
/// repeats the operand along that dimension (numpy broadcasting).
using Strides = std::array<std::int64_t, Shape::max_rank>;

/// Row-major strides of `shape`.
[[nodiscard]] inline Strides contiguous_strides(const Shape& shape) noexcept {
    Strides strides{};
    std::int64_t step = 1;
    for (int i = shape.rank() - 1; i >= 0; --i) {
        strides[static_cast<std::size_t>(i)] = step;
        step *= shape[i];
    }
    return strides;
}

/// Strides that read `operand` broadcast to `target` (operand right-aligned, size-1 and
/// missing dimensions repeated).
[[nodiscard]] inline Strides broadcast_strides(const Shape& operand, const Shape& target) noexcept {
    const Strides own = contiguous_strides(operand);
    Strides strides{};
    const int offset = target.rank() - operand.rank();
    for (int i = 0; i < operand.rank(); ++i)
        if (operand[i] != 1) strides[static_cast<std::size_t>(i + offset)] = own[static_cast<std::size_t>(i)];
    return strides;
}

/// Calls `fn(offsets, length)` once per row of `shape` (a row runs along the last
/// dimension), where offsets[k] is the element offset of the row's start in operand k
/// under `strides[k]`. An odometer over the outer dimensions keeps this O(1) per row.
template <std::size_t N, class Fn>
void for_each_row(const Shape& shape, const std::array<Strides, N>& strides, Fn&& fn) {
    if (shape.numel() == 0) return;
    const int outer_rank = shape.rank() > 0 ? shape.rank() - 1 : 0;
    const std::int64_t length = shape.rank() > 0 ? shape[shape.rank() - 1] : 1;
    std::array<std::int64_t, Shape::max_rank> counter{};
    std::array<std::int64_t, N> offsets{};
    const std::int64_t rows = shape.product(0, outer_rank);
    for (std::int64_t row = 0; row < rows; ++row) {
        fn(offsets, length);
        for (int d = outer_rank - 1; d >= 0; --d) {
            const auto du = static_cast<std::size_t>(d);
            for (std::size_t k = 0; k < N; ++k) offsets[k] += strides[k][du];
            if (++counter[du] < shape[d]) break;
            for (std::size_t k = 0; k < N; ++k) offsets[k] -= strides[k][du] * shape[d];
            counter[du] = 0;
        }
    }
}

/// The stride of the last dimension of `shape` under `strides` (0 for a scalar).
[[nodiscard]] inline std::int64_t inner_stride(const Shape& shape, const Strides& strides) noexcept {
    return shape.rank() > 0 ? strides[static_cast<std::size_t>(shape.rank() - 1)] : 0;
}

/// Copies `source` broadcast to `target` into `out` (numel(target) elements).
inline void broadcast_to(const ConstView& source, const Shape& target, std::span<float> out) {
    const std::array<Strides, 2> strides{contiguous_strides(target), broadcast_strides(source.shape, target)};
    const std::int64_t step = inner_stride(target, strides[1]);
    for_each_row(target, strides, [&](const std::array<std::int64_t, 2>& at, std::int64_t length) {
        for (std::int64_t i = 0; i < length; ++i)
            out[static_cast<std::size_t>(at[0] + i)] = source.data[static_cast<std::size_t>(at[1] + i * step)];
    });
}

/// Product of the dimensions of `shape` in [begin, end) as a size_t, for loop bounds.
[[nodiscard]] inline std::size_t extent(const Shape& shape, int begin, int end) noexcept {
    return static_cast<std::size_t>(shape.product(begin, end));
}

}  // namespace rlflow::detail
