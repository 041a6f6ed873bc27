// Reference executor throughput: a 3x3 convolution and a transformer-sized MatMul run
// through the executor, next to the raw Eigen GEMMs of the same shapes (the conv's is
// its im2col GEMM), all reporting GFLOP/s.

#include "eigen_baseline.hpp"

#include <rlflow/exec.hpp>

#include <Eigen/Core>
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

namespace {

using rlflow::DType;
using rlflow::Graph;
using rlflow::OpKind;
using Ints = std::vector<std::int64_t>;

constexpr std::uint64_t seed = 1;
constexpr double giga = 1e9;

// Conv 3x3, 64 -> 64 channels, 56x56, batch 1, pad 1 (a ResNet stage-1 layer).
constexpr std::int64_t conv_channels = 64;
constexpr std::int64_t conv_size = 56;
constexpr std::int64_t conv_kernel = 3;
constexpr std::int64_t conv_patch = conv_channels * conv_kernel * conv_kernel;  // 576
constexpr std::int64_t conv_pixels = conv_size * conv_size;                    // 3136

// MatMul (128 x 768) @ (768 x 768): a BERT-base projection over 128 tokens.
constexpr std::int64_t tokens = 128;
constexpr std::int64_t hidden = 768;

/// 2 m k n floating-point operations per GEMM.
constexpr double gemm_flops(std::int64_t m, std::int64_t k, std::int64_t n) {
    return 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
}

void set_rate(benchmark::State& state, double flops_per_iteration) {
    state.counters["GFLOP/s"] =
        benchmark::Counter(flops_per_iteration / giga, benchmark::Counter::kIsIterationInvariantRate);
}

void run_graph(benchmark::State& state, const Graph& g, double flops) {
    const rlflow::exec::Executor executor;
    const auto inputs = rlflow::exec::random_inputs(g, seed);
    for (auto _ : state) {
        auto result = executor.run(g, inputs);
        benchmark::DoNotOptimize(result.outputs.data());
    }
    set_rate(state, flops);
}

void raw_gemm(benchmark::State& state, std::int64_t m, std::int64_t k, std::int64_t n) {
    bench_support::time_eigen_product(state, m, k, n);
    set_rate(state, gemm_flops(m, k, n));
}

void executor_conv3x3(benchmark::State& state) {
    Graph g;
    const auto x = g.add_input("x", {DType::Float32, {1, conv_channels, conv_size, conv_size}});
    const auto w = g.add_weight("w", {DType::Float32, {conv_channels, conv_channels, conv_kernel, conv_kernel}});
    g.add_output({g.add_node(OpKind::Conv2D, {{x, 0}, {w, 0}}, {{"pads", Ints{1, 1, 1, 1}}}), 0});
    rlflow::exec::fill_random_weights(g, seed);
    run_graph(state, g, gemm_flops(conv_channels, conv_patch, conv_pixels));
}

void executor_matmul(benchmark::State& state) {
    Graph g;
    const auto x = g.add_input("x", {DType::Float32, {tokens, hidden}});
    const auto w = g.add_weight("w", {DType::Float32, {hidden, hidden}});
    g.add_output({g.add_node(OpKind::MatMul, {{x, 0}, {w, 0}}), 0});
    rlflow::exec::fill_random_weights(g, seed);
    run_graph(state, g, gemm_flops(tokens, hidden, hidden));
}

void eigen_gemm_conv_shape(benchmark::State& state) { raw_gemm(state, conv_channels, conv_patch, conv_pixels); }
void eigen_gemm_matmul_shape(benchmark::State& state) { raw_gemm(state, tokens, hidden, hidden); }

}  // namespace

BENCHMARK(executor_conv3x3)->Unit(benchmark::kMillisecond);
BENCHMARK(eigen_gemm_conv_shape)->Unit(benchmark::kMillisecond);
BENCHMARK(executor_matmul)->Unit(benchmark::kMillisecond);
BENCHMARK(eigen_gemm_matmul_shape)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
