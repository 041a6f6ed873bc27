#pragma once
/// \file
/// Host tensor data: a typed, shaped buffer. Float32 data is held as floats and is what
/// the executor computes on; any other dtype is carried as raw little-endian bytes.

#include <rlflow/core/error.hpp>
#include <rlflow/core/shape.hpp>

#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

namespace rlflow {

namespace detail {

/// Float data starts on a cache-line boundary. Vectorised reductions (Eigen's among them)
/// peel elements up to the first aligned address, so with arbitrary alignment their
/// summation order, and the last bits of the result, would change from run to run.
inline constexpr std::size_t tensor_alignment = 64;

template <class T>
struct AlignedAllocator {
    using value_type = T;
    AlignedAllocator() = default;
    template <class U>
    AlignedAllocator(const AlignedAllocator<U>&) noexcept {}
    T* allocate(std::size_t n) {
        return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{tensor_alignment}));
    }
    void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{tensor_alignment}); }
    /// resize() leaves new floats uninitialised: every caller fills them (zero-filling a
    /// tensor is an explicit assign), which saves a pass over large weights.
    template <class U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
    template <class U>
    bool operator==(const AlignedAllocator<U>&) const noexcept { return true; }
};

}  // namespace detail

/// Float storage aligned to detail::tensor_alignment (what Tensor holds float data in).
using FloatBuffer = std::vector<float, detail::AlignedAllocator<float>>;

/// A dense, row-major host tensor.
class Tensor {
public:
    Tensor() = default;
    /// A zero-filled tensor of the given type.
    explicit Tensor(TensorType type) : m_type(type) {
        RLFLOW_EXPECTS(type.shape.is_static(), shape_error,
                       "cannot allocate a tensor of unknown shape " + type.shape.to_string());
        if (type.dtype == DType::Float32) m_floats.assign(static_cast<std::size_t>(type.shape.numel()), 0.0f);
        else m_raw.assign(static_cast<std::size_t>(type.bytes()), std::byte{0});
    }
    /// A zero-filled float32 tensor.
    explicit Tensor(const Shape& shape) : Tensor(TensorType{DType::Float32, shape}) {}

    /// A float32 tensor holding `values` (its size must equal the shape's element count).
    static Tensor from_floats(const Shape& shape, std::vector<float> values) {
        RLFLOW_EXPECTS(static_cast<std::int64_t>(values.size()) == shape.numel(), shape_error,
                       std::to_string(values.size()) + " values do not fill shape " + shape.to_string());
        Tensor t;
        t.m_type = {DType::Float32, shape};
        t.m_floats.assign(values.begin(), values.end());
        return t;
    }
    /// A float32 tensor taking over an aligned buffer (no copy).
    static Tensor from_buffer(const Shape& shape, FloatBuffer values) {
        RLFLOW_EXPECTS(static_cast<std::int64_t>(values.size()) == shape.numel(), shape_error,
                       std::to_string(values.size()) + " values do not fill shape " + shape.to_string());
        Tensor t;
        t.m_type = {DType::Float32, shape};
        t.m_floats = std::move(values);
        return t;
    }
    /// A tensor of any fixed-size dtype from its raw little-endian bytes.
    static Tensor from_raw(DType dtype, const Shape& shape, std::span<const std::byte> bytes) {
        Tensor t;
        t.m_type = {dtype, shape};
        RLFLOW_EXPECTS(static_cast<std::int64_t>(bytes.size()) == t.m_type.bytes(), shape_error,
                       std::to_string(bytes.size()) + " bytes do not fill " + t.m_type.to_string());
        if (dtype == DType::Float32) {
            t.m_floats.resize(bytes.size() / sizeof(float));
            if (!bytes.empty()) std::memcpy(t.m_floats.data(), bytes.data(), bytes.size());
        } else {
            t.m_raw.assign(bytes.begin(), bytes.end());
        }
        return t;
    }
    /// A tensor from a vector of arithmetic values of the matching dtype (e.g. int64 shapes).
    template <class T>
    static Tensor from_values(DType dtype, const Shape& shape, const std::vector<T>& values) {
        RLFLOW_EXPECTS(sizeof(T) == dtype_size(dtype), shape_error,
                       "element size does not match dtype " + std::string(dtype_name(dtype)));
        return from_raw(dtype, shape, std::as_bytes(std::span(values)));
    }

    [[nodiscard]] const TensorType& type() const noexcept { return m_type; }
    [[nodiscard]] const Shape& shape() const noexcept { return m_type.shape; }
    [[nodiscard]] DType dtype() const noexcept { return m_type.dtype; }
    [[nodiscard]] std::int64_t numel() const noexcept { return m_type.shape.numel(); }

    /// Float32 elements; throws if the tensor holds another dtype.
    [[nodiscard]] std::span<float> floats() {
        require_float();
        return m_floats;
    }
    [[nodiscard]] std::span<const float> floats() const {
        require_float();
        return m_floats;
    }
    /// The raw bytes of any dtype.
    [[nodiscard]] std::span<const std::byte> raw() const noexcept {
        if (m_type.dtype == DType::Float32) return std::as_bytes(std::span(m_floats));
        return m_raw;
    }
    /// Copies the elements out as `T` (sizeof(T) must equal the dtype's size).
    template <class T>
    [[nodiscard]] std::vector<T> to_vector() const {
        RLFLOW_EXPECTS(sizeof(T) == dtype_size(m_type.dtype), shape_error,
                       "element size does not match dtype " + std::string(dtype_name(m_type.dtype)));
        std::vector<T> out(static_cast<std::size_t>(numel()));
        const auto bytes = raw();
        if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
        return out;
    }

    friend bool operator==(const Tensor& a, const Tensor& b) {
        return a.m_type == b.m_type && a.m_floats == b.m_floats && a.m_raw == b.m_raw;
    }

private:
    void require_float() const {
        RLFLOW_EXPECTS(m_type.dtype == DType::Float32, precondition_error,
                       "tensor holds " + std::string(dtype_name(m_type.dtype)) + ", not float");
    }

    TensorType m_type;
    FloatBuffer m_floats;
    std::vector<std::byte> m_raw;
};

/// Shared, immutable tensor data (weights are shared between graph copies).
using TensorPtr = std::shared_ptr<const Tensor>;

}  // namespace rlflow
