#pragma once
/// \file
/// The element-wise functions the nn ops use, as functor types a backend instantiates its
/// element-wise primitives with (`map<Fn>`, `zip<Fn>`). Each is a pure function of its
/// operands, usable on the host and, under nvcc, on the device. Derivative functors take
/// the upstream gradient first.

#include <cmath>

#if defined(__CUDACC__)
#define RLFLOW_HOST_DEVICE __host__ __device__
#else
#define RLFLOW_HOST_DEVICE
#endif

namespace rlflow::nn::fn {

// Binary.
struct Add {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T a, T b) { return a + b; }
};
/// relu(a + b): a layer's bias and activation in one pass.
struct AddRelu {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T a, T b) { return a + b > T(0) ? a + b : T(0); }
};
struct Sub {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T a, T b) { return a - b; }
};
struct Mul {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T a, T b) { return a * b; }
};
struct Div {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T a, T b) { return a / b; }
};
/// The second operand (a broadcast copy).
struct Second {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T, T b) { return b; }
};

// Unary.
struct Identity {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T x) { return x; }
};
struct Negate {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T x) { return -x; }
};
struct Tanh {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T x) { return std::tanh(x); }
};
struct Relu {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T x) { return x > T(0) ? x : T(0); }
};
/// 1 / (1 + e^-x), without overflow for large |x|.
struct Sigmoid {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T x) {
        if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
        const T e = std::exp(x);
        return e / (T(1) + e);
    }
};
struct Exp {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T x) { return std::exp(x); }
};
struct Log {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T x) { return std::log(x); }
};
/// log(1 + e^x), stable for large |x|.
struct Softplus {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T x) {
        return (x > T(0) ? x : T(0)) + std::log1p(std::exp(x > T(0) ? -x : x));
    }
};
struct Square {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T x) { return x * x; }
};
struct Sqrt {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T x) { return std::sqrt(x); }
};
/// 1 / sqrt(x).
struct Rsqrt {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T x) { return T(1) / std::sqrt(x); }
};

// Derivatives: (upstream gradient g, saved value) -> gradient of the input.
/// tanh: g (1 - y^2) from the output y.
struct TanhBackward {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T g, T y) { return g * (T(1) - y * y); }
};
/// relu: g where the input x > 0.
struct ReluBackward {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T g, T x) { return x > T(0) ? g : T(0); }
};
/// sigmoid: g y (1 - y) from the output y.
struct SigmoidBackward {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T g, T y) { return g * y * (T(1) - y); }
};
/// square: 2 g x from the input x.
struct SquareBackward {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T g, T x) { return T(2) * g * x; }
};
/// sqrt: g / (2 y) from the output y.
struct SqrtBackward {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T g, T y) { return g / (T(2) * y); }
};
/// 1 / sqrt(x): -g y^3 / 2 from the output y.
struct RsqrtBackward {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T g, T y) { return -g * y * y * y / T(2); }
};
/// softplus: g sigmoid(x) from the input x.
struct SoftplusBackward {
    template <class T> RLFLOW_HOST_DEVICE static T apply(T g, T x) { return g * Sigmoid::apply(x); }
};

}  // namespace rlflow::nn::fn
