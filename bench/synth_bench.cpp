// Rule synthesis (synth/): the exact evaluator as the substitution generator uses it, on
// graphs of its size.
// - conv3x3: one exact Conv2D, (2,4,5,5) input, (4,4,3,3) weights, unpadded and padded,
//   on small integers and on halves (both take the int64 path over a common denominator)
//   and on integers times 2^40 (too large for it: checked 128-bit multiply-adds); items are
//   multiply-adds. float_conv3x3 runs the same conv in the float executor.
// - small_graph: exact_run of Conv-Relu, AveragePool, Add, Reshape, MatMul; items are graphs.
// - multiply_add: one Exact a * b + c; items are multiply-adds. residue: items are values.

#include <rlflow/exec.hpp>
#include <rlflow/synth/exact.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace rlflow;
using synth::Exact;
using synth::ExactTensor;
using Ints = std::vector<std::int64_t>;

constexpr std::uint64_t seed = 1;
constexpr std::int64_t value_bound = 3;
const Shape conv_input{2, 4, 5, 5};
const Shape conv_weight{4, 4, 3, 3};

TensorType f32(const Shape& s) { return {DType::Float32, s}; }

/// What the random integers are scaled by.
enum class Values { integers, halves, large };

/// Random integers in [-3, 3], halved or multiplied by 2^40 as `kind` says.
ExactTensor random_values(const Shape& shape, Rng& rng, Values kind) {
    ExactTensor t = synth::random_exact_tensor(shape, rng, value_bound);
    const Exact large_scale = Exact::from_double(0x1p40);
    for (Exact& v : t.values) {
        if (kind == Values::halves) v = v.divided_by(2);
        if (kind == Values::large) v = v * large_scale;
    }
    return t;
}

/// A graph of one 3x3 Conv2D with `pad` on every side.
Graph conv_graph(std::int64_t pad) {
    Graph g;
    const TensorRef x{g.add_input("x", f32(conv_input)), 0};
    const TensorRef w{g.add_weight("w", f32(conv_weight)), 0};
    g.add_output({g.add_node(OpKind::Conv2D, {x, w}, {{"pads", Ints{pad, pad, pad, pad}}}, "conv"), 0});
    return g;
}

void conv3x3(benchmark::State& state, std::int64_t pad, Values kind) {
    const Graph g = conv_graph(pad);
    const Node& conv = g.node(g.outputs()[0].value.node);
    Rng rng(seed);
    const ExactTensor x = random_values(conv_input, rng, kind);
    const ExactTensor w = random_values(conv_weight, rng, kind == Values::large ? Values::integers : kind);
    const std::vector<const ExactTensor*> inputs{&x, &w};
    const std::vector<TensorType> outputs{conv.outputs[0].type};
    for (auto _ : state) {
        auto y = synth::exact_op(OpKind::Conv2D, conv.attributes, inputs, outputs);
        benchmark::DoNotOptimize(y.data());
    }
    const std::int64_t multiply_adds = outputs[0].shape.numel() * conv_weight.product(1, 4);
    state.SetItemsProcessed(state.iterations() * multiply_adds);
    state.counters["multiply_adds"] = static_cast<double>(multiply_adds);
}

void float_conv3x3(benchmark::State& state, std::int64_t pad) {
    Graph g = conv_graph(pad);
    exec::fill_random_weights(g, seed);
    const auto inputs = exec::random_inputs(g, seed);
    const exec::Executor executor;
    for (auto _ : state) {
        auto result = executor.run(g, inputs);
        benchmark::DoNotOptimize(result.outputs.data());
    }
    state.SetItemsProcessed(state.iterations() * g.type(g.outputs()[0].value).shape.numel()
                            * conv_weight.product(1, 4));
}

/// Conv-Relu (pad 1), 2x2 AveragePool, Add of a second input, Reshape, MatMul.
Graph small_graph() {
    Graph g;
    const TensorRef x{g.add_input("x", f32(conv_input)), 0};
    const TensorRef w{g.add_weight("w", f32(conv_weight)), 0};
    const TensorRef conv{
        g.add_node(OpKind::Conv2D, {x, w}, {{"pads", Ints{1, 1, 1, 1}}, {"activation", std::int64_t{1}}}), 0};
    const TensorRef pool{
        g.add_node(OpKind::AveragePool, {conv}, {{"kernel_shape", Ints{2, 2}}, {"pads", Ints{0, 0, 1, 1}}}), 0};
    const TensorRef skip{g.add_input("skip", f32({2, 4, 5, 5})), 0};
    const TensorRef sum{g.add_node(OpKind::Add, {pool, skip}), 0};
    const TensorRef rows{g.add_node(OpKind::Reshape, {sum}, {{"shape", Ints{8, 25}}}), 0};
    const TensorRef head{g.add_weight("head", f32({25, 4})), 0};
    g.add_output({g.add_node(OpKind::MatMul, {rows, head}), 0});
    return g;
}

void small_graph_run(benchmark::State& state) {
    const Graph g = small_graph();
    Rng rng(seed);
    std::map<std::string, ExactTensor> values;
    for (const NodeId id : g.inputs())
        values[g.node(id).name] = random_values(g.node(id).outputs[0].type.shape, rng, Values::integers);
    for (const NodeId id : g.weights())
        values[g.node(id).name] = random_values(g.node(id).outputs[0].type.shape, rng, Values::integers);
    for (auto _ : state) {
        auto outputs = synth::exact_run(g, values);
        benchmark::DoNotOptimize(outputs.data());
    }
    state.SetItemsProcessed(state.iterations());
}

constexpr std::size_t operand_count = 1024;

std::vector<Exact> operands(Rng& rng, bool fractions) {
    const Shape shape{static_cast<std::int64_t>(operand_count)};
    const ExactTensor t = random_values(shape, rng, fractions ? Values::halves : Values::integers);
    return t.values;
}

void multiply_add(benchmark::State& state, bool fractions) {
    Rng rng(seed);
    const std::vector<Exact> a = operands(rng, fractions), b = operands(rng, fractions);
    for (auto _ : state) {
        Exact acc;
        for (std::size_t i = 0; i < operand_count; ++i) acc = acc + a[i] * b[i];
        benchmark::DoNotOptimize(acc);
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(operand_count));
}

void residue(benchmark::State& state, bool fractions) {
    Rng rng(seed);
    const std::vector<Exact> values = operands(rng, fractions);
    for (auto _ : state) {
        std::uint64_t hash = 0;
        for (const Exact& v : values) hash ^= v.residue();
        benchmark::DoNotOptimize(hash);
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(operand_count));
}

}  // namespace

BENCHMARK_CAPTURE(conv3x3, integers, 0, Values::integers)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(conv3x3, halves, 0, Values::halves)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(conv3x3, large, 0, Values::large)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(conv3x3, integers_pad1, 1, Values::integers)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(conv3x3, halves_pad1, 1, Values::halves)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(float_conv3x3, pad0, 0)->Unit(benchmark::kMicrosecond);
BENCHMARK(small_graph_run)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(multiply_add, integers, false);
BENCHMARK_CAPTURE(multiply_add, halves, true);
BENCHMARK_CAPTURE(residue, integers, false);
BENCHMARK_CAPTURE(residue, halves, true);

BENCHMARK_MAIN();
