#pragma once
/// \file
/// `Tensor<B>`: a row-major, contiguous tensor of rank 0 to 3 (scalars, vectors,
/// matrices, batches of matrices) whose scalars live in backend B's memory. A value type:
/// copies copy the data, moves are cheap. Host access goes through `from_host` and
/// `to_host`, so code above the backend never touches device memory.

#include <rlflow/core/error.hpp>
#include <rlflow/core/shape.hpp>
#include <rlflow/nn/tensor_backend.hpp>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rlflow::nn {

/// The largest rank a tensor has.
inline constexpr int max_tensor_rank = 3;

template <TensorBackend B>
class Tensor {
public:
    using Scalar = typename B::Scalar;

    Tensor() = default;
    /// Zeros of `shape`.
    explicit Tensor(Shape shape) : m_shape(checked(std::move(shape))), m_data(B::allocate(static_cast<std::size_t>(m_shape.numel()))) {}
    /// `shape` filled with `value`.
    Tensor(Shape shape, Scalar value) : Tensor(uninitialized(std::move(shape))) { B::fill(data(), numel(), value); }
    /// A tensor of `shape` whose values are unspecified: for outputs that an op writes whole.
    [[nodiscard]] static Tensor uninitialized(Shape shape) {
        Tensor t;
        t.m_shape = checked(std::move(shape));
        t.m_data = B::allocate_uninitialized(static_cast<std::size_t>(t.m_shape.numel()));
        return t;
    }

    /// A tensor of `shape` holding `values` (row-major); throws shape_error if the counts differ.
    [[nodiscard]] static Tensor from_host(Shape shape, std::span<const Scalar> values) {
        Tensor t;
        t.m_shape = checked(std::move(shape));
        RLFLOW_EXPECTS(static_cast<std::int64_t>(values.size()) == t.m_shape.numel(), shape_error,
                       "tensor of shape " + t.m_shape.to_string() + " needs " + std::to_string(t.m_shape.numel())
                           + " values, got " + std::to_string(values.size()));
        t.m_data = B::upload(values);
        return t;
    }
    [[nodiscard]] static Tensor from_host(Shape shape, std::initializer_list<Scalar> values) {
        return from_host(std::move(shape), std::span<const Scalar>(values.begin(), values.size()));
    }
    /// A one-element tensor of shape {1}.
    [[nodiscard]] static Tensor scalar(Scalar value) { return Tensor(Shape{1}, value); }

    [[nodiscard]] std::vector<Scalar> to_host() const { return B::download(m_data); }
    /// The only element of a one-element tensor.
    [[nodiscard]] Scalar item() const {
        RLFLOW_EXPECTS(numel() == 1, shape_error, "item() of a tensor of shape " + m_shape.to_string());
        return to_host()[0];
    }

    [[nodiscard]] const Shape& shape() const noexcept { return m_shape; }
    [[nodiscard]] int rank() const noexcept { return m_shape.rank(); }
    [[nodiscard]] std::int64_t numel() const noexcept { return m_shape.numel(); }
    [[nodiscard]] std::int64_t dim(int axis) const noexcept { return m_shape.dim(axis); }
    /// False for a default-constructed tensor (no shape yet).
    [[nodiscard]] bool defined() const noexcept { return m_shape.rank() != 0; }

    [[nodiscard]] Scalar* data() noexcept { return B::data(m_data); }
    [[nodiscard]] const Scalar* data() const noexcept { return B::data(m_data); }

    /// The same data under another shape of as many elements.
    [[nodiscard]] Tensor reshaped(Shape shape) && {
        shape = checked(std::move(shape));
        RLFLOW_EXPECTS(shape.numel() == numel(), shape_error,
                       "cannot reshape " + m_shape.to_string() + " to " + shape.to_string());
        m_shape = std::move(shape);
        return std::move(*this);
    }

    void fill(Scalar value) { B::fill(data(), numel(), value); }

private:
    [[nodiscard]] static Shape checked(Shape shape) {
        RLFLOW_EXPECTS(shape.rank() >= 1 && shape.rank() <= max_tensor_rank, shape_error,
                       "nn tensors have rank 1 to 3, not " + shape.to_string());
        for (const std::int64_t d : shape.dims())
            RLFLOW_EXPECTS(d >= 0, shape_error, "negative dimension in " + shape.to_string());
        return shape;
    }

    Shape m_shape;
    typename B::Buffer m_data{};
};

namespace detail {

/// `shape` padded with leading 1s to rank 3.
[[nodiscard]] inline std::array<std::int64_t, 3> padded3(const Shape& shape) {
    std::array<std::int64_t, 3> dims{1, 1, 1};
    for (int i = 0; i < shape.rank(); ++i) dims[static_cast<std::size_t>(3 - shape.rank() + i)] = shape[i];
    return dims;
}

/// Row-major strides of `shape` padded to rank 3, with 0 along axes where it has size 1
/// and `out` does not (where it is broadcast).
[[nodiscard]] inline std::array<std::int64_t, 3> broadcast_strides(const Shape& shape, const std::array<std::int64_t, 3>& out) {
    const auto dims = padded3(shape);
    std::array<std::int64_t, 3> strides{dims[1] * dims[2], dims[2], 1};
    for (std::size_t i = 0; i < 3; ++i)
        if (dims[i] == 1 && out[i] != 1) strides[i] = 0;
    return strides;
}

}  // namespace detail

}  // namespace rlflow::nn
