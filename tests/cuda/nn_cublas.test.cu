// The GPU tensor backend against the CPU one: every nn op body runs forward and backward
// on Tensor<Cublas> and on Tensor<Eigen> (float32) from the same random inputs, and the
// values and parameter gradients agree to float32 rounding. Plus the gemm primitive in all
// four transpose combinations, and an Mlp. Without a GPU each test says "skipped: no GPU".
#include <rlflow/core/random.hpp>
#include <rlflow/nn/backend/cublas.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/nn/layers.hpp>
#include <rlflow/nn/ops.hpp>

#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

using namespace rlflow;
namespace nn = rlflow::nn;
using nn::backend::Cublas;
using Cpu = nn::backend::Eigen;

static_assert(nn::TensorBackend<Cublas>);
static_assert(nn::is_tensor_backend_v<Cublas>);

namespace {

/// Float32 on both sides, summed in different orders: agreement to this relative error
/// (absolute below 1).
constexpr double tolerance = 1e-4;
constexpr std::uint64_t seed = 7;

/// True with a GPU; otherwise the calling test says it is skipped (doctest has no skip).
bool gpu_present() {
    int count = 0;
    if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) return true;
    MESSAGE("skipped: no GPU");
    return false;
}

/// A parameter's shape and the range its values are drawn from.
struct Input {
    Shape shape;
    double lo = -1;
    double hi = 1;
};

/// An op's output and the gradients of its parameters, on the host.
struct Outcome {
    std::vector<float> value;
    std::vector<std::vector<float>> grads;
};

std::vector<float> random_values(std::int64_t n, double lo, double hi, Rng& rng) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& x : v) x = static_cast<float>(rng.uniform(lo, hi));
    return v;
}

/// The loss sum(y * w) with random w, so each output element gets its own gradient;
/// backpropagated on y's tape.
template <class B>
void backward_weighted(nn::Tape<B>& tape, nn::Var<B> y, Rng& rng) {
    const auto weights = random_values(y.value().numel(), -1, 1, rng);
    tape.backward(nn::sum(nn::mul(y, tape.constant(nn::Tensor<B>::from_host(y.shape(), weights)))));
}

/// `body(parameters, indices)` on backend B: parameters from `inputs`, then backward.
/// `indices` keeps the Indices the body makes alive through the backward pass.
template <class B, class Body>
Outcome run_on(const std::vector<Input>& inputs, const Body& body) {
    Rng rng(seed);
    std::deque<nn::Indices<B>> indices;
    std::deque<nn::Parameter<B>> parameters;
    nn::Tape<B> tape;
    std::vector<nn::Var<B>> x;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const Input& in = inputs[i];
        parameters.emplace_back("x" + std::to_string(i),
                                nn::Tensor<B>::from_host(in.shape, random_values(in.shape.numel(), in.lo, in.hi, rng)));
        x.push_back(tape.parameter(parameters.back()));
    }
    const nn::Var<B> y = body(x, indices);
    backward_weighted(tape, y, rng);
    Outcome out{y.value().to_host(), {}};
    for (const nn::Parameter<B>& p : parameters) out.grads.push_back(p.grad.to_host());
    return out;
}

/// Whether `gpu` matches `cpu` element by element; reports the first difference.
void check_close(const std::vector<float>& gpu, const std::vector<float>& cpu, const std::string& what) {
    CAPTURE(what);
    REQUIRE(gpu.size() == cpu.size());
    std::size_t mismatches = 0;
    std::string first;
    for (std::size_t i = 0; i < cpu.size(); ++i) {
        const double c = cpu[i], g = gpu[i];
        if (std::abs(g - c) <= tolerance * std::max(1.0, std::abs(c))) continue;
        if (mismatches++ == 0) first = "at " + std::to_string(i) + ": gpu " + std::to_string(g) + " vs cpu " + std::to_string(c);
    }
    INFO("first difference ", first);
    CHECK(mismatches == 0);
}

void check_outcomes(const Outcome& gpu, const Outcome& cpu) {
    check_close(gpu.value, cpu.value, "value");
    REQUIRE(gpu.grads.size() == cpu.grads.size());
    for (std::size_t i = 0; i < cpu.grads.size(); ++i) check_close(gpu.grads[i], cpu.grads[i], "gradient of x" + std::to_string(i));
}

/// The same op body on the GPU and the CPU agrees in value and gradients.
template <class Body>
void check_backends_agree(const std::vector<Input>& inputs, const Body& body) {
    check_outcomes(run_on<Cublas>(inputs, body), run_on<Cpu>(inputs, body));
}

/// C = alpha op(A) op(B) + beta C through backend B's gemm, `count` products of (m, k) and
/// (k, n) matrices; B shared by every product when `shared_b`.
template <class B>
std::vector<float> gemm_on(nn::Transpose ta, nn::Transpose tb, std::int64_t count, bool shared_b) {
    constexpr std::int64_t m = 3, n = 5, k = 4;
    constexpr float alpha = 1.5f, beta = 0.5f;
    Rng rng(seed);
    const std::int64_t a_rows = ta == nn::Transpose::no ? m : k, a_cols = ta == nn::Transpose::no ? k : m;
    const std::int64_t b_rows = tb == nn::Transpose::no ? k : n, b_cols = tb == nn::Transpose::no ? n : k;
    const std::int64_t b_count = shared_b ? 1 : count;
    const auto a = nn::Tensor<B>::from_host(Shape{count, a_rows, a_cols}, random_values(count * a_rows * a_cols, -1, 1, rng));
    const auto b = nn::Tensor<B>::from_host(Shape{b_count, b_rows, b_cols}, random_values(b_count * b_rows * b_cols, -1, 1, rng));
    auto c = nn::Tensor<B>::from_host(Shape{count, m, n}, random_values(count * m * n, -1, 1, rng));
    B::gemm(ta, tb, m, n, k, alpha, a.data(), a_cols, b.data(), b_cols, beta, c.data(), n, count, a_rows * a_cols,
            shared_b ? 0 : b_rows * b_cols, m * n);
    return c.to_host();
}

template <class B>
Outcome mlp_on() {
    Rng rng(seed);
    nn::MlpOptions options;
    options.sizes = {6, 16, 16, 3};
    options.activation = nn::Activation::tanh;
    options.layer_norm_output = true;
    nn::Mlp<B> mlp("mlp", options, rng);
    nn::Tape<B> tape;
    const nn::Var<B> x = tape.constant(nn::Tensor<B>::from_host(Shape{8, 6}, random_values(8 * 6, -1, 1, rng)));
    const nn::Var<B> y = mlp(tape, x);
    backward_weighted(tape, y, rng);
    Outcome out{y.value().to_host(), {}};
    for (const nn::Parameter<B>* p : mlp.parameters()) out.grads.push_back(p->grad.to_host());
    return out;
}

/// An Mlp's inference pass (gradients off: one tile of every row on the GPU, tiles of 256
/// on the CPU) over a block read whole and two blocks gathered by one index.
template <class B>
std::vector<float> mlp_inference_on() {
    Rng rng(seed);
    nn::Mlp<B> mlp("mlp", {.sizes = {7, 16, 5}, .activate_output = true, .layer_norm_output = true}, rng);
    const nn::Indices<B> index(std::vector<std::int32_t>{2, 0, 1, 1, 3, 2, 0, 3, 3, 1}, 4);
    nn::Tape<B> tape;
    nn::NoGrad<B> no_grad(tape);
    const auto constant = [&](const Shape& shape) {
        return tape.constant(nn::Tensor<B>::from_host(shape, random_values(shape.numel(), -1, 1, rng)));
    };
    const nn::InputBlock<B> blocks[] = {{constant(Shape{10, 3})}, {constant(Shape{4, 2}), &index}, {constant(Shape{4, 2}), &index}};
    return mlp(tape, std::span<const nn::InputBlock<B>>(blocks)).value().to_host();
}

}  // namespace

TEST_CASE("cublas gemm matches the CPU in all four transpose combinations, batched and with a shared rhs") {
    if (!gpu_present()) return;
    for (const nn::Transpose ta : {nn::Transpose::no, nn::Transpose::yes})
        for (const nn::Transpose tb : {nn::Transpose::no, nn::Transpose::yes})
            for (const std::int64_t count : {1, 3})
                for (const bool shared_b : {false, true}) {
                    CAPTURE(ta == nn::Transpose::yes);
                    CAPTURE(tb == nn::Transpose::yes);
                    CAPTURE(count);
                    CAPTURE(shared_b);
                    check_close(gemm_on<Cublas>(ta, tb, count, shared_b), gemm_on<Cpu>(ta, tb, count, shared_b), "C");
                }
}

TEST_CASE("a cublas tensor copy owns its own device memory") {
    if (!gpu_present()) return;
    const auto a = nn::Tensor<Cublas>::from_host(Shape{2, 2}, {1, 2, 3, 4});
    nn::Tensor<Cublas> b = a;
    b.fill(0);
    CHECK(a.to_host() == std::vector<float>{1, 2, 3, 4});
    CHECK(b.to_host() == std::vector<float>{0, 0, 0, 0});
    CHECK(nn::Tensor<Cublas>(Shape{3}).to_host() == std::vector<float>{0, 0, 0});
}

TEST_CASE("cublas matmul agrees with the CPU: plain, batch against one matrix, and batched") {
    if (!gpu_present()) return;
    const auto matmul = [](const auto& x, auto&) { return nn::matmul(x[0], x[1]); };
    check_backends_agree({{{3, 4}}, {{4, 5}}}, matmul);
    check_backends_agree({{{2, 3, 4}}, {{4, 5}}}, matmul);
    check_backends_agree({{{2, 3, 4}}, {{2, 4, 5}}}, matmul);
}

TEST_CASE("cublas add, sub, mul and div agree with the CPU when broadcasting either way") {
    if (!gpu_present()) return;
    const std::vector<std::vector<Input>> cases{
        {{{3, 4}}, {{4}}}, {{{3, 1}}, {{3, 4}}}, {{{2, 3, 4}}, {{1, 4}}}, {{{2, 1, 4}}, {{3, 1}}}, {{{2, 3, 4}}, {{2, 3, 4}}}};
    for (std::size_t i = 0; i < cases.size(); ++i) {
        CAPTURE(i);
        check_backends_agree(cases[i], [](const auto& x, auto&) { return nn::add(x[0], x[1]); });
        check_backends_agree(cases[i], [](const auto& x, auto&) { return nn::sub(x[0], x[1]); });
        check_backends_agree(cases[i], [](const auto& x, auto&) { return nn::mul(x[0], x[1]); });
        std::vector<Input> positive = cases[i];
        for (Input& in : positive) in = {in.shape, 0.5, 2};
        check_backends_agree(positive, [](const auto& x, auto&) { return nn::div(x[0], x[1]); });
    }
    check_backends_agree({{{3, 4}}}, [](const auto& x, auto&) { return nn::scale(x[0], 2.5f); });
}

TEST_CASE("cublas element-wise functions agree with the CPU") {
    if (!gpu_present()) return;
    const Shape shape{2, 3, 4};
    check_backends_agree({{shape, -2, 2}}, [](const auto& x, auto&) { return nn::tanh(x[0]); });
    check_backends_agree({{shape, -2, 2}}, [](const auto& x, auto&) { return nn::relu(x[0]); });
    check_backends_agree({{shape, -4, 4}}, [](const auto& x, auto&) { return nn::sigmoid(x[0]); });
    check_backends_agree({{shape, -2, 2}}, [](const auto& x, auto&) { return nn::exp(x[0]); });
    check_backends_agree({{shape, 0.5, 2}}, [](const auto& x, auto&) { return nn::log(x[0]); });
    check_backends_agree({{shape, -4, 4}}, [](const auto& x, auto&) { return nn::softplus(x[0]); });
    check_backends_agree({{shape, -2, 2}}, [](const auto& x, auto&) { return nn::square(x[0]); });
    check_backends_agree({{shape, 0.5, 2}}, [](const auto& x, auto&) { return nn::sqrt(x[0]); });
    check_backends_agree({{shape, 0.5, 2}}, [](const auto& x, auto&) { return nn::rsqrt(x[0]); });
}

TEST_CASE("cublas log_softmax and softmax agree with the CPU, on short and long rows") {
    if (!gpu_present()) return;
    for (const Shape& shape : {Shape{3, 5}, Shape{2, 3, 7}, Shape{4, 1000}}) {
        CAPTURE(shape.to_string());
        check_backends_agree({{shape, -3, 3}}, [](const auto& x, auto&) { return nn::log_softmax(x[0]); });
        check_backends_agree({{shape, -3, 3}}, [](const auto& x, auto&) { return nn::softmax(x[0]); });
    }
}

TEST_CASE("cublas sum and mean agree with the CPU, over everything and along each axis") {
    if (!gpu_present()) return;
    const std::vector<Input> x{{{2, 3, 4}}};
    check_backends_agree(x, [](const auto& v, auto&) { return nn::sum(v[0]); });
    check_backends_agree(x, [](const auto& v, auto&) { return nn::mean(v[0]); });
    check_backends_agree({{{50, 40}}}, [](const auto& v, auto&) { return nn::sum(v[0]); });
    for (const int axis : {0, 1, 2, -1}) {
        CAPTURE(axis);
        check_backends_agree(x, [axis](const auto& v, auto&) { return nn::sum(v[0], axis); });
        check_backends_agree(x, [axis](const auto& v, auto&) { return nn::mean(v[0], axis); });
    }
}

TEST_CASE("cublas concat and slice agree with the CPU along each axis") {
    if (!gpu_present()) return;
    const std::vector<std::vector<Input>> concat_cases{
        {{{2, 3, 4}}, {{1, 3, 4}}}, {{{2, 3, 4}}, {{2, 2, 4}}}, {{{2, 3, 4}}, {{2, 3, 1}}}};
    for (int axis = 0; axis < 3; ++axis) {
        CAPTURE(axis);
        check_backends_agree(concat_cases[static_cast<std::size_t>(axis)],
                             [axis](const auto& x, auto&) { return nn::concat(std::vector{x[0], x[1]}, axis); });
        check_backends_agree({{{3, 4, 5}}}, [axis](const auto& x, auto&) { return nn::slice(x[0], axis, 1, 3); });
    }
}

TEST_CASE("cublas gather, segment_sum and segment_mean agree with the CPU, repeated indices included") {
    if (!gpu_present()) return;
    const std::vector<std::int32_t> rows{4, 0, 2, 2, 4, 1, 4};
    const std::vector<std::int32_t> segments{0, 2, 2, 0, 3, 2};
    check_backends_agree({{{5, 3}}}, [&](const auto& x, auto& keep) {
        keep.emplace_back(rows, 5);
        return nn::gather(x[0], keep.back());
    });
    // Segment 1 and segment 4 are empty.
    check_backends_agree({{{6, 3}}}, [&](const auto& x, auto& keep) {
        keep.emplace_back(segments, 5);
        return nn::segment_sum(x[0], keep.back());
    });
    check_backends_agree({{{6, 3}}}, [&](const auto& x, auto& keep) {
        keep.emplace_back(segments, 5);
        return nn::segment_mean(x[0], keep.back());
    });
}

TEST_CASE("cublas layer_norm agrees with the CPU in value and in the gradients of x, gamma and beta") {
    if (!gpu_present()) return;
    check_backends_agree({{{2, 3, 8}}, {{8}, 0.5, 2}, {{8}}},
                         [](const auto& x, auto&) { return nn::layer_norm(x[0], x[1], x[2]); });
}

TEST_CASE("cublas sum_rows and bias_relu agree with the CPU, gathered terms with repeated rows included") {
    if (!gpu_present()) return;
    const std::vector<std::int32_t> rows{4, 0, 2, 2, 4, 1, 4};
    // Inputs above 0, so that relu's kink lies away from every sum.
    check_backends_agree({{{7, 3}, 0.1, 1}, {{5, 3}, 0.1, 1}, {{5, 3}, 0.1, 1}, {{3}, 0.1, 1}}, [&](const auto& x, auto& keep) {
        using V = std::decay_t<decltype(x[0])>;
        using I = std::decay_t<decltype(keep.back())>;
        keep.emplace_back(rows, 5);
        const V terms[] = {x[0], x[1], x[2]};
        const I* by[] = {nullptr, &keep.back(), &keep.back()};
        return nn::sum_rows(std::span<const V>(terms), std::span<const I* const>(by), x[3], true);
    });
    check_backends_agree({{{4, 6}}, {{6}, -0.5, 0.5}}, [](const auto& x, auto&) { return nn::bias_relu(x[0], x[1]); });
}

TEST_CASE("an Mlp on cublas computes the CPU's output and parameter gradients") {
    if (!gpu_present()) return;
    check_outcomes(mlp_on<Cublas>(), mlp_on<Cpu>());
}

TEST_CASE("an Mlp's inference pass on cublas computes the CPU's output, gathered blocks sharing an index included") {
    if (!gpu_present()) return;
    check_close(mlp_inference_on<Cublas>(), mlp_inference_on<Cpu>(), "value");
}
