#pragma once
/// \file
/// Eigen map aliases over float spans. Tensors are row-major, so every matrix map is
/// row-major too; maps are unaligned because std::vector only guarantees float alignment.

#include <Eigen/Core>

#include <cstdint>
#include <span>

namespace rlflow::detail {

using RowMajorMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMajorMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMajorMatrix>;
using ArrayMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;
using RowMajorArray = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ArrayMatrixMap = Eigen::Map<RowMajorArray>;
using ConstArrayMatrixMap = Eigen::Map<const RowMajorArray>;

[[nodiscard]] inline MatrixMap matrix(float* data, std::int64_t rows, std::int64_t cols) {
    return MatrixMap(data, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
}
[[nodiscard]] inline ConstMatrixMap matrix(const float* data, std::int64_t rows, std::int64_t cols) {
    return ConstMatrixMap(data, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
}
[[nodiscard]] inline ArrayMap array(std::span<float> data) {
    return ArrayMap(data.data(), static_cast<Eigen::Index>(data.size()));
}
[[nodiscard]] inline ConstArrayMap array(std::span<const float> data) {
    return ConstArrayMap(data.data(), static_cast<Eigen::Index>(data.size()));
}
/// A rows x cols row-major array view (for row- and column-wise reductions).
[[nodiscard]] inline ArrayMatrixMap array(float* data, std::int64_t rows, std::int64_t cols) {
    return ArrayMatrixMap(data, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
}
[[nodiscard]] inline ConstArrayMatrixMap array(const float* data, std::int64_t rows, std::int64_t cols) {
    return ConstArrayMatrixMap(data, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
}

}  // namespace rlflow::detail
