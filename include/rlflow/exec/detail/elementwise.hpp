#pragma once
/// \file
/// Elementwise kernels: unary activations (also used by Conv2D's fused activation) and
/// the numpy-broadcasting binary ops Add, Sub, Mul, Div and Pow.

#include <rlflow/core/op_kind.hpp>
#include <rlflow/exec/detail/eigen.hpp>
#include <rlflow/exec/detail/view.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace rlflow::detail {

// ---- unary -----------------------------------------------------------------------------

inline void apply_relu(std::span<const float> x, std::span<float> y) { array(y) = array(x).max(0.0f); }
/// 1 / (1 + e^-x); exp overflowing to inf for very negative x still gives the right 0.
inline void apply_sigmoid(std::span<const float> x, std::span<float> y) {
    array(y) = (1.0f + (-array(x)).exp()).inverse();
}
inline void apply_tanh(std::span<const float> x, std::span<float> y) { array(y) = array(x).tanh(); }
inline void apply_sqrt(std::span<const float> x, std::span<float> y) { array(y) = array(x).sqrt(); }
inline void apply_erf(std::span<const float> x, std::span<float> y) {
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = std::erf(x[i]);
}

/// Applies a fused activation in place.
inline void apply_activation(Activation activation, std::span<float> y) {
    switch (activation) {
        case Activation::None: return;
        case Activation::Relu: apply_relu(y, y); return;
        case Activation::Sigmoid: apply_sigmoid(y, y); return;
        case Activation::Tanh: apply_tanh(y, y); return;
    }
}

/// A kernel for a one-input, one-output elementwise function.
template <void (*Function)(std::span<const float>, std::span<float>)>
void unary_kernel(const KernelArgs& args) {
    Function(args.inputs[0].data, args.outputs[0].data);
}

/// Clip(min, max): the bounds default to -inf and +inf.
inline void clip_kernel(const KernelArgs& args) {
    const auto low = static_cast<float>(args.node.attributes.get_float("min", -std::numeric_limits<double>::infinity()));
    const auto high = static_cast<float>(args.node.attributes.get_float("max", std::numeric_limits<double>::infinity()));
    array(args.outputs[0].data) = array(args.inputs[0].data).max(low).min(high);
}

/// max(0, min(1, alpha * x + beta)), in float as ONNX Runtime computes it.
inline void hard_sigmoid(std::span<const float> x, std::span<float> y, float alpha, float beta) {
    array(y) = (array(x) * alpha + beta).max(0.0f).min(1.0f);
}

/// HardSigmoid(alpha, beta).
inline void hard_sigmoid_kernel(const KernelArgs& args) {
    hard_sigmoid(args.inputs[0].data, args.outputs[0].data, static_cast<float>(args.node.attributes.get_float("alpha", 0.2)),
                 static_cast<float>(args.node.attributes.get_float("beta", 0.5)));
}

/// HardSwish: x * HardSigmoid(x) with alpha 1/6 and beta 1/2 (ONNX HardSwish-14).
inline void hard_swish_kernel(const KernelArgs& args) {
    constexpr float alpha = 1.0f / 6.0f;
    hard_sigmoid(args.inputs[0].data, args.outputs[0].data, alpha, 0.5f);
    array(args.outputs[0].data) *= array(args.inputs[0].data);
}

/// LeakyRelu(alpha): x where x >= 0, alpha * x elsewhere.
inline void leaky_relu_kernel(const KernelArgs& args) {
    const auto alpha = static_cast<float>(args.node.attributes.get_float("alpha", 0.01));
    const auto x = args.inputs[0].data;
    const auto y = args.outputs[0].data;
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] >= 0.0f ? x[i] : alpha * x[i];
}

/// Gelu. approximate "none": (x * (erf(x / sqrt 2) + 1)) * 0.5 with sqrt 2 rounded to
/// float32, the very operations (and so the very bits) of the Erf pattern PyTorch exports,
/// which the importer fuses into this op. "tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
inline void gelu_kernel(const KernelArgs& args) {
    const auto x = args.inputs[0].data;
    const auto y = args.outputs[0].data;
    if (args.node.attributes.get<std::string>("approximate") == "tanh") {
        constexpr float root_two_over_pi = 0.7978845608028654f, cubic = 0.044715f;
        for (std::size_t i = 0; i < x.size(); ++i) {
            const float inner = root_two_over_pi * (x[i] + cubic * x[i] * x[i] * x[i]);
            y[i] = 0.5f * x[i] * (1.0f + std::tanh(inner));
        }
        return;
    }
    constexpr auto root_two = static_cast<float>(1.4142135623730951);
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = (x[i] * (std::erf(x[i] / root_two) + 1.0f)) * 0.5f;
}

/// Copies the input: what a view op computes when it is not aliased.
inline void copy_kernel(const KernelArgs& args) {
    std::copy(args.inputs[0].data.begin(), args.inputs[0].data.end(), args.outputs[0].data.begin());
}

// ---- binary ----------------------------------------------------------------------------

struct AddFn {
    static float apply(float a, float b) noexcept { return a + b; }
};
struct SubFn {
    static float apply(float a, float b) noexcept { return a - b; }
};
struct MulFn {
    static float apply(float a, float b) noexcept { return a * b; }
};
struct DivFn {
    static float apply(float a, float b) noexcept { return a / b; }
};
struct PowFn {
    static float apply(float a, float b) noexcept { return std::pow(a, b); }
};

/// y[i] = f(a[i * a_step], b[i * b_step]) for i < n; the unit and zero strides get their
/// own loops so the compiler vectorises them.
template <class Fn>
void binary_row(const float* a, std::int64_t a_step, const float* b, std::int64_t b_step, float* y, std::int64_t n) {
    if (a_step == 1 && b_step == 1) {
        for (std::int64_t i = 0; i < n; ++i) y[i] = Fn::apply(a[i], b[i]);
    } else if (a_step == 1 && b_step == 0) {
        const float scalar = b[0];
        for (std::int64_t i = 0; i < n; ++i) y[i] = Fn::apply(a[i], scalar);
    } else if (a_step == 0 && b_step == 1) {
        const float scalar = a[0];
        for (std::int64_t i = 0; i < n; ++i) y[i] = Fn::apply(scalar, b[i]);
    } else {
        for (std::int64_t i = 0; i < n; ++i) y[i] = Fn::apply(a[i * a_step], b[i * b_step]);
    }
}

/// `operand` without its leading 1s equals the trailing dimensions of `target`: it tiles
/// `target` contiguously (a bias add).
[[nodiscard]] inline bool tiles_as_suffix(const Shape& operand, const Shape& target) noexcept {
    int first = 0;
    while (first < operand.rank() && operand[first] == 1) ++first;
    const int suffix = operand.rank() - first;
    if (suffix > target.rank()) return false;
    for (int i = 0; i < suffix; ++i)
        if (operand[first + i] != target[target.rank() - suffix + i]) return false;
    return true;
}

/// Runs the contiguous fast paths (equal sizes, a single-element operand, suffix tiling)
/// when one applies; returns false otherwise.
template <class Fn>
bool binary_fast_path(const ConstView& a, const ConstView& b, const MutableView& y) {
    const std::int64_t n = y.shape.numel(), na = a.shape.numel(), nb = b.shape.numel();
    if (na == n && nb == n) {
        binary_row<Fn>(a.data.data(), 1, b.data.data(), 1, y.data.data(), n);
    } else if (na == n && nb == 1) {
        // A single-element operand: one zero-stride row over all of y, not n rows of 1.
        binary_row<Fn>(a.data.data(), 1, b.data.data(), 0, y.data.data(), n);
    } else if (na == 1 && nb == n) {
        binary_row<Fn>(a.data.data(), 0, b.data.data(), 1, y.data.data(), n);
    } else if (na == n && tiles_as_suffix(b.shape, y.shape)) {
        for (std::int64_t start = 0; start < n; start += nb)
            binary_row<Fn>(a.data.data() + start, 1, b.data.data(), 1, y.data.data() + start, nb);
    } else if (nb == n && tiles_as_suffix(a.shape, y.shape)) {
        for (std::int64_t start = 0; start < n; start += na)
            binary_row<Fn>(a.data.data(), 1, b.data.data() + start, 1, y.data.data() + start, na);
    } else {
        return false;
    }
    return true;
}

/// A numpy-broadcasting binary op: fast paths first, then a strided walk over rows.
template <class Fn>
void binary_kernel(const KernelArgs& args) {
    const ConstView& a = args.inputs[0];
    const ConstView& b = args.inputs[1];
    const MutableView& y = args.outputs[0];
    if (y.shape.numel() == 0 || binary_fast_path<Fn>(a, b, y)) return;
    const std::array<Strides, 3> strides{contiguous_strides(y.shape), broadcast_strides(a.shape, y.shape),
                                         broadcast_strides(b.shape, y.shape)};
    const std::int64_t a_step = inner_stride(y.shape, strides[1]);
    const std::int64_t b_step = inner_stride(y.shape, strides[2]);
    for_each_row(y.shape, strides, [&](const std::array<std::int64_t, 3>& at, std::int64_t length) {
        binary_row<Fn>(a.data.data() + at[1], a_step, b.data.data() + at[2], b_step, y.data.data() + at[0], length);
    });
}

}  // namespace rlflow::detail
