#pragma once
// The tests' spellings of a float32 tensor type and an int64 tensor, shared by every area
// (each area's test files are compiled as one unity unit, so a helper is defined once).

#include <rlflow/core/shape.hpp>
#include <rlflow/core/tensor.hpp>

#include <cstdint>
#include <optional>
#include <vector>

inline rlflow::TensorType f32(const rlflow::Shape& s) { return {rlflow::DType::Float32, s}; }

/// An int64 tensor of `values`, one-dimensional unless `shape` is given.
inline rlflow::Tensor ints(const std::vector<std::int64_t>& values, std::optional<rlflow::Shape> shape = std::nullopt) {
    return rlflow::Tensor::from_values(rlflow::DType::Int64, shape.value_or(rlflow::Shape{static_cast<std::int64_t>(values.size())}),
                                       values);
}
