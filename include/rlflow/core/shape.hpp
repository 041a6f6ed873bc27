#pragma once
/// \file
/// Static tensor shapes of rank 0..6, and numpy broadcasting.

#include <rlflow/core/dtype.hpp>
#include <rlflow/core/error.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>

namespace rlflow {

/// A tensor shape. Dimensions are `>= 0`, or `Shape::unknown` for a dimension that only
/// an opaque op's importer could not pin down. Core ops require fully known shapes.
class Shape {
public:
    static constexpr int max_rank = 6;
    static constexpr std::int64_t unknown = -1;

    constexpr Shape() = default;
    constexpr Shape(std::initializer_list<std::int64_t> dims) { assign(std::span(dims.begin(), dims.size())); }
    explicit Shape(std::span<const std::int64_t> dims) { assign(dims); }

    [[nodiscard]] constexpr int rank() const noexcept { return m_rank; }
    [[nodiscard]] constexpr std::int64_t operator[](int i) const noexcept { return m_dims[static_cast<std::size_t>(i)]; }
    [[nodiscard]] constexpr std::int64_t& operator[](int i) noexcept { return m_dims[static_cast<std::size_t>(i)]; }
    /// Dimension with Python-style negative indexing (-1 is the last).
    [[nodiscard]] constexpr std::int64_t dim(int i) const noexcept { return (*this)[i < 0 ? i + m_rank : i]; }
    [[nodiscard]] std::span<const std::int64_t> dims() const noexcept {
        return {m_dims.data(), static_cast<std::size_t>(m_rank)};
    }
    /// True when every dimension is known.
    [[nodiscard]] constexpr bool is_static() const noexcept {
        for (int i = 0; i < m_rank; ++i)
            if (m_dims[static_cast<std::size_t>(i)] < 0) return false;
        return true;
    }
    /// Number of elements (1 for a scalar); 0 if any dimension is unknown.
    [[nodiscard]] constexpr std::int64_t numel() const noexcept {
        std::int64_t n = 1;
        for (int i = 0; i < m_rank; ++i) {
            if (m_dims[static_cast<std::size_t>(i)] < 0) return 0;
            n *= m_dims[static_cast<std::size_t>(i)];
        }
        return n;
    }
    /// Product of dims in [begin, end).
    [[nodiscard]] constexpr std::int64_t product(int begin, int end) const noexcept {
        std::int64_t n = 1;
        for (int i = begin; i < end; ++i) n *= m_dims[static_cast<std::size_t>(i)];
        return n;
    }
    constexpr void push_back(std::int64_t d) {
        if (m_rank >= max_rank) throw shape_error("rank exceeds " + std::to_string(max_rank));
        m_dims[static_cast<std::size_t>(m_rank++)] = d;
    }
    /// Normalises a possibly negative axis into [0, rank); throws on out of range.
    [[nodiscard]] int normalize_axis(std::int64_t axis) const {
        const std::int64_t a = axis < 0 ? axis + m_rank : axis;
        if (a < 0 || a >= m_rank)
            throw shape_error("axis " + std::to_string(axis) + " out of range for shape " + to_string());
        return static_cast<int>(a);
    }

    friend constexpr bool operator==(const Shape& a, const Shape& b) noexcept {
        if (a.m_rank != b.m_rank) return false;
        for (int i = 0; i < a.m_rank; ++i)
            if (a.m_dims[static_cast<std::size_t>(i)] != b.m_dims[static_cast<std::size_t>(i)]) return false;
        return true;
    }

    /// "(1,64,56,56)"; unknown dims print as "?".
    [[nodiscard]] std::string to_string() const {
        std::string s = "(";
        for (int i = 0; i < m_rank; ++i) {
            if (i) s += ',';
            const auto d = m_dims[static_cast<std::size_t>(i)];
            s += d < 0 ? std::string("?") : std::to_string(d);
        }
        if (m_rank == 1) s += ',';
        return s + ")";
    }

private:
    constexpr void assign(std::span<const std::int64_t> dims) {
        if (dims.size() > static_cast<std::size_t>(max_rank))
            throw shape_error("rank " + std::to_string(dims.size()) + " exceeds the maximum of "
                              + std::to_string(max_rank));
        m_rank = static_cast<int>(dims.size());
        std::copy(dims.begin(), dims.end(), m_dims.begin());
    }

    std::array<std::int64_t, max_rank> m_dims{};
    int m_rank = 0;
};

/// The type of a tensor: element type and shape.
struct TensorType {
    DType dtype = DType::Float32;
    Shape shape;
    [[nodiscard]] std::int64_t bytes() const noexcept {
        return shape.numel() * static_cast<std::int64_t>(dtype_size(dtype));
    }
    friend bool operator==(const TensorType&, const TensorType&) = default;
    [[nodiscard]] std::string to_string() const { return std::string(dtype_name(dtype)) + shape.to_string(); }
};

/// Numpy multidirectional broadcast of two shapes, or nullopt if they are incompatible.
[[nodiscard]] inline std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
    const int rank = std::max(a.rank(), b.rank());
    Shape out;
    for (int i = 0; i < rank; ++i) {
        const int ia = i - (rank - a.rank());
        const int ib = i - (rank - b.rank());
        const std::int64_t da = ia >= 0 ? a[ia] : 1;
        const std::int64_t db = ib >= 0 ? b[ib] : 1;
        if (da == db || db == 1) out.push_back(da);
        else if (da == 1) out.push_back(db);
        else return std::nullopt;
    }
    return out;
}

}  // namespace rlflow
