#pragma once
/// \file
/// Constant tensors in rules (TASO's generator constants; the TASO paper, Jia et al.,
/// SOSP 2019): a pattern Constant is a scalar `value`, or, with a `shape`, a tensor of that
/// shape filled one of two ways:
/// - `fill="uniform"`: every element is `value` (all-ones, a 3x3 average-pool kernel
///   1/9 with one input channel per group);
/// - `fill="identity"`: `value` where the tensor maps a channel to itself and 0 elsewhere.
///   A matrix (n, m): element [i][i]. A conv kernel (O, I, kh, kw), kh and kw odd:
///   element [o][o mod I][kh/2][kw/2], which is the identity convolution for I = O
///   (group 1) and for every group count g with O = I * g (depthwise when I = 1).
///
/// This one table serves every place that meets a constant: the applier builds it, the
/// matcher recognises it in a graph, the numeric checker and the generator evaluate it.

#include <rlflow/core/error.hpp>
#include <rlflow/core/shape.hpp>
#include <rlflow/core/tensor.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow::rewrite {

/// How a constant tensor is filled.
enum class ConstantFill : std::uint8_t { uniform, identity };

/// The text of a fill, as a rule's `fill` attribute holds it.
[[nodiscard]] constexpr std::string_view constant_fill_name(ConstantFill f) noexcept {
    return f == ConstantFill::uniform ? "uniform" : "identity";
}

[[nodiscard]] inline std::optional<ConstantFill> parse_constant_fill(std::string_view name) noexcept {
    if (name == "uniform") return ConstantFill::uniform;
    if (name == "identity") return ConstantFill::identity;
    return std::nullopt;
}

/// The most elements a rule's constant may have (1 GiB of float32): rules apply to real
/// graphs, whose identities and fills are far smaller; a rule file asking for more is
/// refused rather than allowed to exhaust memory.
inline constexpr std::int64_t max_constant_elements = std::int64_t{1} << 28;

/// Whether a constant of `dims` has more than max_constant_elements elements.
[[nodiscard]] inline bool constant_too_large(std::span<const std::int64_t> dims) noexcept {
    std::int64_t elements = 1;
    for (const std::int64_t d : dims)
        if (d > 0 && (__builtin_mul_overflow(elements, d, &elements) || elements > max_constant_elements)) return true;
    return false;
}

/// Why `fill` cannot fill `shape` ("" if it can): an identity needs a matrix or a conv
/// kernel with odd spatial dims; every dim must be known and positive, and the constant
/// no larger than max_constant_elements.
[[nodiscard]] inline std::string constant_fill_problem(const Shape& shape, ConstantFill fill) {
    if (!shape.is_static()) return "shape " + shape.to_string() + " is not static";
    for (const std::int64_t d : shape.dims())
        if (d <= 0) return "shape " + shape.to_string() + " has an empty dim";
    if (constant_too_large(shape.dims()))
        return "shape " + shape.to_string() + " has more than " + std::to_string(max_constant_elements) + " elements";
    if (fill == ConstantFill::uniform) return {};
    if (shape.rank() == 2) return {};
    if (shape.rank() == 4 && shape[2] % 2 == 1 && shape[3] % 2 == 1) return {};
    return "an identity constant needs a matrix or a conv kernel with odd spatial dims, not " + shape.to_string();
}

/// Whether element `flat` (row-major) of an identity-filled `shape` is on its diagonal.
[[nodiscard]] inline bool on_identity_diagonal(const Shape& shape, std::int64_t flat) noexcept {
    if (shape.rank() == 2) {
        const std::int64_t i = flat / shape[1], j = flat % shape[1];
        return i == j;
    }
    const std::int64_t kw = shape[3], kh = shape[2], in = shape[1];
    const std::int64_t w = flat % kw, h = (flat / kw) % kh, c = (flat / (kw * kh)) % in, o = flat / (kw * kh * in);
    return h == kh / 2 && w == kw / 2 && c == o % in;
}

/// The element values of a `fill` constant of `shape`, row-major, as `T` (float for graph
/// tensors, an exact type for the generator); `value` and `zero` are the two values it holds.
template <class T>
[[nodiscard]] std::vector<T> constant_fill_values(const Shape& shape, ConstantFill fill, const T& value, const T& zero) {
    const std::string problem = constant_fill_problem(shape, fill);
    RLFLOW_EXPECTS(problem.empty(), shape_error, "constant tensor: " + problem);
    std::vector<T> values(static_cast<std::size_t>(shape.numel()), fill == ConstantFill::uniform ? value : zero);
    if (fill == ConstantFill::identity)
        for (std::int64_t i = 0; i < shape.numel(); ++i)
            if (on_identity_diagonal(shape, i)) values[static_cast<std::size_t>(i)] = value;
    return values;
}

/// The float32 constant of `shape` filled with `value` by `fill`; throws shape_error if
/// the fill does not fit the shape.
[[nodiscard]] inline Tensor constant_tensor(const Shape& shape, double value, ConstantFill fill) {
    return Tensor::from_floats(shape, constant_fill_values(shape, fill, static_cast<float>(value), 0.0f));
}

/// What a graph constant is as a pattern sees it: its value and fill.
struct ConstantForm {
    double value = 0;
    ConstantFill fill = ConstantFill::uniform;
};

/// The form of float32 tensor `t`: uniform when every element is equal, identity when it
/// is `value` (nonzero) exactly on the identity diagonal and 0 elsewhere; nullopt for any
/// other tensor. A tensor that is both (one element) reads as uniform.
[[nodiscard]] inline std::optional<ConstantForm> constant_form(const Tensor& t) {
    if (t.dtype() != DType::Float32 || t.numel() == 0) return std::nullopt;
    const std::span<const float> v = t.floats();
    if (std::all_of(v.begin(), v.end(), [&](float x) { return x == v[0]; })) return ConstantForm{v[0], ConstantFill::uniform};
    if (!constant_fill_problem(t.shape(), ConstantFill::identity).empty()) return std::nullopt;
    std::optional<float> diagonal;
    for (std::int64_t i = 0; i < t.numel(); ++i) {
        const float x = v[static_cast<std::size_t>(i)];
        if (!on_identity_diagonal(t.shape(), i)) {
            if (x != 0.0f) return std::nullopt;
        } else if (!diagonal) {
            diagonal = x;
        } else if (x != *diagonal) {
            return std::nullopt;
        }
    }
    if (!diagonal || *diagonal == 0.0f) return std::nullopt;
    return ConstantForm{*diagonal, ConstantFill::identity};
}

}  // namespace rlflow::rewrite
