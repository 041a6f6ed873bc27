// The whole-graph CUDA executor against the reference executor: every op kind on small
// graphs (broadcasts, groups, asymmetric pads, ceil mode, partly broadcast batches), the
// zoo models end to end, captured replays against launches from the host, and its
// timings. Without a GPU each test says "skipped: no GPU".
#include <rlflow/cost/cuda_executor.hpp>
#include <rlflow/exec/executor.hpp>
#include <rlflow/exec/random.hpp>
#include <rlflow/models/zoo.hpp>

#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace rlflow;
using Ints = std::vector<std::int64_t>;

namespace {

/// Agreement with the reference, as the largest difference over the reference's largest
/// magnitude (at least 1): float32 on both sides, summed in other orders, and cuDNN may
/// pick Winograd or FFT convolutions, which round differently again.
constexpr double op_tolerance = 1e-4;
/// The same for whole models, where the differences of a hundred layers add up.
constexpr double model_tolerance = 2e-3;
constexpr std::uint64_t seed = 11;

bool gpu_present() {
    if (cost::CudaExecutor::device_count() > 0) return true;
    MESSAGE("skipped: no GPU");
    return false;
}

cost::CudaExecutor& executor() {
    static cost::CudaExecutor instance;
    return instance;
}

double relative_error(const Tensor& gpu, const Tensor& reference) {
    const auto a = gpu.floats();
    const auto b = reference.floats();
    double scale = 1.0, worst = 0.0;
    for (const float v : b) scale = std::max(scale, static_cast<double>(std::fabs(v)));
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
        worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
    return worst / scale;
}

void check_agree(const std::vector<Tensor>& gpu, const std::vector<Tensor>& reference, double tolerance) {
    REQUIRE(gpu.size() == reference.size());
    for (std::size_t i = 0; i < gpu.size(); ++i) {
        CAPTURE(i);
        REQUIRE(gpu[i].type() == reference[i].type());
        const double error = relative_error(gpu[i], reference[i]);
        CAPTURE(error);
        CHECK(error <= tolerance);
    }
}

/// Runs `g` on the GPU and in the reference executor on the same inputs and compares.
void check_graph(const Graph& g, const std::vector<Tensor>& inputs, double tolerance) {
    const std::vector<Tensor> reference = exec::Executor{}.run(g, inputs).outputs;
    check_agree(executor().run(g, inputs), reference, tolerance);
}

/// A graph of one `op` node over graph inputs of these shapes, every output a graph output.
Graph one_op(OpKind op, const std::vector<Shape>& shapes, Attributes attributes) {
    Graph g;
    std::vector<TensorRef> refs;
    for (std::size_t i = 0; i < shapes.size(); ++i)
        refs.push_back({g.add_input("in" + std::to_string(i), TensorType{DType::Float32, shapes[i]}), 0});
    const NodeId node = g.add_node(op, refs, std::move(attributes), "op");
    for (std::uint32_t i = 0; i < g.node(node).outputs.size(); ++i) g.add_output({node, i});
    return g;
}

/// One op on random inputs (positive where the op needs them: a variance, a root).
void check_op(OpKind op, const std::vector<Shape>& shapes, Attributes attributes = {}) {
    const Graph g = one_op(op, shapes, std::move(attributes));
    check_graph(g, exec::random_inputs(g, seed), op_tolerance);
}

}  // namespace

TEST_CASE("cuda executor: convolutions with groups, strides, dilations, asymmetric pads, bias and each activation") {
    if (!gpu_present()) return;
    const Ints unit{1, 1}, two{2, 2};
    struct Case {
        Shape x, w;
        Ints strides, pads, dilations;
        std::int64_t group, activation;
        bool bias;
    };
    const std::vector<Case> cases{
        {{2, 4, 9, 9}, {6, 2, 3, 3}, two, {1, 1, 1, 1}, unit, 2, 1, true},     // grouped, ReLU fused with bias
        {{1, 3, 8, 7}, {4, 3, 3, 2}, unit, {0, 1, 2, 0}, {2, 1}, 1, 2, false},  // asymmetric pads, dilated, sigmoid
        {{1, 8, 5, 5}, {16, 8, 1, 1}, unit, {0, 0, 0, 0}, unit, 1, 3, true},    // pointwise, tanh
        {{1, 4, 6, 6}, {4, 1, 3, 3}, unit, {1, 1, 1, 1}, unit, 4, 1, false},    // depthwise, ReLU without bias
        {{2, 3, 7, 7}, {5, 3, 3, 3}, two, {0, 0, 0, 0}, unit, 1, 0, false},     // plain
    };
    for (const Case& c : cases) {
        CAPTURE(c.x.to_string());
        CAPTURE(c.w.to_string());
        std::vector<Shape> shapes{c.x, c.w};
        if (c.bias) shapes.push_back(Shape{c.w[0]});
        check_op(OpKind::Conv2D, shapes,
                 {{"strides", c.strides}, {"pads", c.pads}, {"dilations", c.dilations}, {"group", c.group}, {"activation", c.activation}});
    }
}

TEST_CASE("cuda executor: MatMul with vectors, shared and partly broadcast batches; Gemm with transposes and bias") {
    if (!gpu_present()) return;
    check_op(OpKind::MatMul, {{7, 5}, {5, 3}});
    check_op(OpKind::MatMul, {{7, 5}, {5}});
    check_op(OpKind::MatMul, {{5}, {5, 3}});
    check_op(OpKind::MatMul, {{2, 3, 4, 5}, {5, 6}});        // b shared by every batch
    check_op(OpKind::MatMul, {{2, 3, 4, 5}, {3, 5, 6}});     // b broadcast along the first batch dimension only
    check_op(OpKind::MatMul, {{2, 1, 4, 5}, {1, 3, 5, 6}});  // both partly broadcast
    check_op(OpKind::Gemm, {{6, 4}, {5, 6}, {5}},
             {{"transA", std::int64_t{1}}, {"transB", std::int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}});
    check_op(OpKind::Gemm, {{3, 4}, {4, 5}, {3, 1}});
    check_op(OpKind::Gemm, {{3, 4}, {4, 5}});
}

TEST_CASE("cuda executor: elementwise ops, broadcasting binary ops, Clip and the parameterised activations") {
    if (!gpu_present()) return;
    for (const OpKind op : {OpKind::Relu, OpKind::Sigmoid, OpKind::Tanh, OpKind::Erf, OpKind::Sqrt}) {
        CAPTURE(static_cast<int>(op));
        check_op(op, {{2, 3, 17}});
    }
    check_op(OpKind::Clip, {{4, 9}}, {{"min", -0.3}, {"max", 0.4}});
    check_op(OpKind::HardSigmoid, {{4, 9}}, {{"alpha", 2.0}, {"beta", 0.5}});  // saturates on [-1, 1] inputs
    check_op(OpKind::HardSwish, {{2, 3, 17}});
    check_op(OpKind::LeakyRelu, {{4, 9}}, {{"alpha", 0.2}});
    check_op(OpKind::Gelu, {{2, 3, 17}});
    check_op(OpKind::Gelu, {{2, 3, 17}}, {{"approximate", std::string("tanh")}});
    for (const OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div}) {
        CAPTURE(static_cast<int>(op));
        check_op(op, {{2, 3, 4}, {3, 1}});
        check_op(op, {{4}, {2, 3, 4}});
        check_op(op, {{2, 1, 4}, {1, 3, 1}});
        check_op(op, {{2, 3}, {}});
    }
    // Pow on positive bases, so that fractional exponents stay real.
    const Graph g = one_op(OpKind::Pow, {{3, 4}, {4}}, {});
    check_graph(g, {exec::random_inputs(g, seed)[0], exec::random_inputs(g, seed + 1)[1]}, op_tolerance);
}

TEST_CASE("cuda executor: pooling with pads, strides, dilation, ceil mode and both count_include_pad rules") {
    if (!gpu_present()) return;
    const Attributes base{{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 0, 1, 2}}};
    Attributes ceil = base;
    ceil.set("ceil_mode", std::int64_t{1});
    Attributes dilated{{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 2}}};
    check_op(OpKind::MaxPool, {{2, 3, 9, 8}}, base);
    check_op(OpKind::MaxPool, {{2, 3, 9, 8}}, ceil);
    check_op(OpKind::MaxPool, {{1, 2, 7, 7}}, dilated);
    Attributes included = base;
    included.set("count_include_pad", std::int64_t{1});
    check_op(OpKind::AveragePool, {{2, 3, 9, 8}}, base);
    check_op(OpKind::AveragePool, {{2, 3, 9, 8}}, included);
    check_op(OpKind::AveragePool, {{2, 3, 9, 8}}, ceil);
    check_op(OpKind::GlobalAveragePool, {{2, 5, 7, 3}});
}

TEST_CASE("cuda executor: batch, layer and instance normalisation, softmax and ReduceMean, ReduceSum and ReduceMax over any axes") {
    if (!gpu_present()) return;
    check_op(OpKind::BatchNormalization, {{2, 3, 4, 5}, {3}, {3}, {3}, {3}}, {{"epsilon", 1e-3}});
    check_op(OpKind::LayerNormalization, {{2, 6, 33}, {33}, {33}}, {{"axis", std::int64_t{-1}}, {"epsilon", 1e-5}});
    check_op(OpKind::LayerNormalization, {{2, 3, 4}, {4}}, {{"axis", std::int64_t{1}}});  // scale broadcast over the row
    check_op(OpKind::LayerNormalization, {{3, 700}, {700}}, {});                          // rows longer than a block
    check_op(OpKind::Softmax, {{2, 5, 3}}, {{"axis", std::int64_t{1}}});
    check_op(OpKind::Softmax, {{4, 130}}, {{"axis", std::int64_t{-1}}});
    check_op(OpKind::ReduceMean, {{2, 3, 4, 5}}, {{"axes", Ints{1}}, {"keepdims", std::int64_t{1}}});  // moved last first
    check_op(OpKind::ReduceMean, {{2, 3, 4, 5}}, {{"axes", Ints{2, 3}}, {"keepdims", std::int64_t{0}}});
    check_op(OpKind::ReduceMean, {{2, 3, 4}}, {{"axes", Ints{0, 2}}, {"keepdims", std::int64_t{1}}});
    check_op(OpKind::ReduceSum, {{2, 3, 4, 5}}, {{"axes", Ints{1}}, {"keepdims", std::int64_t{0}}});
    check_op(OpKind::ReduceSum, {{3, 700}}, {});  // every axis, rows longer than a block
    check_op(OpKind::ReduceMax, {{2, 3, 4, 5}}, {{"axes", Ints{0, 3}}, {"keepdims", std::int64_t{1}}});
    check_op(OpKind::InstanceNormalization, {{2, 3, 4, 5}, {3}, {3}}, {{"epsilon", 1e-3}});
    check_op(OpKind::InstanceNormalization, {{1, 2, 700}, {2}, {2}});  // planes longer than a block
}

TEST_CASE("cuda executor: concat, split, transpose, strided slice, resize, pad in every mode, views, and the kernel transforms") {
    if (!gpu_present()) return;
    check_op(OpKind::Concat, {{2, 3, 4}, {2, 5, 4}, {2, 1, 4}}, {{"axis", std::int64_t{1}}});
    check_op(OpKind::Concat, {{2, 3}, {2, 3}}, {{"axis", std::int64_t{-1}}});
    check_op(OpKind::Split, {{2, 3, 10}}, {{"axis", std::int64_t{2}}, {"split", Ints{3, 5, 2}}});
    check_op(OpKind::Transpose, {{2, 3, 4, 5}}, {{"perm", Ints{2, 0, 3, 1}}});
    check_op(OpKind::Pad, {{2, 3, 5}}, {{"pads", Ints{0, 1, 2, 1, -1, 3}}, {"mode", std::string("constant")}, {"value", 0.5}});
    check_op(OpKind::Pad, {{2, 3, 5}}, {{"pads", Ints{0, 2, 4, 0, 1, 6}}, {"mode", std::string("reflect")}});
    check_op(OpKind::Pad, {{2, 3, 5}}, {{"pads", Ints{1, 0, 2, 0, 3, 1}}, {"mode", std::string("edge")}});
    check_op(OpKind::Enlarge, {{2, 3, 3, 3}}, {{"kernel_shape", Ints{5, 7}}});
    check_op(OpKind::Slice, {{2, 8, 6, 5}}, {{"starts", Ints{0, 0, 1, 4}}, {"ends", Ints{2, 8, 6, 0}}, {"steps", Ints{1, 2, 2, -3}}});
    check_op(OpKind::MergeGConv, {{8, 2, 3, 3}}, {{"group", std::int64_t{4}}, {"count", std::int64_t{2}}});
    check_op(OpKind::Resize, {{1, 2, 3, 4}}, {{"mode", std::string("nearest")}, {"sizes", Ints{1, 2, 6, 8}}});
    check_op(OpKind::Resize, {{1, 3, 4, 5}},
             {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("pytorch_half_pixel")},
              {"sizes", Ints{1, 3, 7, 9}}});
    check_op(OpKind::Resize, {{2, 8, 10}}, {{"mode", std::string("linear")}, {"scales", std::vector<double>{1.0, 0.5, 0.6}}});
    // Views alias their input's buffer: a reshape read by an op and itself a graph output.
    Graph g;
    const NodeId x = g.add_input("x", TensorType{DType::Float32, Shape{2, 3, 4}});
    const NodeId r = g.add_node(OpKind::Reshape, {{x, 0}}, {{"shape", Ints{6, -1}}}, "r");
    const NodeId relu = g.add_node(OpKind::Relu, {{r, 0}}, {}, "relu");
    const NodeId flat = g.add_node(OpKind::Flatten, {{relu, 0}}, {{"axis", std::int64_t{0}}}, "flat");
    g.add_output({r, 0});
    g.add_output({flat, 0});
    check_graph(g, exec::random_inputs(g, seed), op_tolerance);
}

TEST_CASE("cuda executor: every zoo model agrees with the reference executor end to end") {
    if (!gpu_present()) return;
    for (const models::ZooEntry& entry : models::zoo_entries()) {
        CAPTURE(entry.name);
        Graph g = models::build_zoo_model(entry.name);
        exec::fill_random_weights(g, seed);
        check_graph(g, exec::random_inputs(g, seed), model_tolerance);
    }
}

TEST_CASE("cuda executor: a captured CUDA Graph replays to the same outputs as launches from the host") {
    if (!gpu_present()) return;
    for (const char* name : {"squeezenet1_1", "encoder_small"}) {
        CAPTURE(name);
        Graph g = models::build_zoo_model(name);
        exec::fill_random_weights(g, seed);
        const std::vector<Tensor> inputs = exec::random_inputs(g, seed);
        const std::vector<Tensor> replayed = executor().run(g, inputs, cost::CudaLaunch::captured);
        const std::vector<Tensor> launched = executor().run(g, inputs, cost::CudaLaunch::from_host);
        // The same kernels and library calls in the same order, with the same algorithms.
        REQUIRE(replayed.size() == launched.size());
        for (std::size_t i = 0; i < replayed.size(); ++i) CHECK(replayed[i] == launched[i]);
        CHECK(executor().latency(g, {.warmup = 1, .replays = 3}, seed).captured);
    }
}

TEST_CASE("cuda executor: timings are positive, one per replay, and interleaved graphs each get every round") {
    if (!gpu_present()) return;
    Graph small = models::build_zoo_model("squeezenet1_1");
    Graph large = models::build_zoo_model("resnet50");
    exec::fill_random_weights(small, seed);
    exec::fill_random_weights(large, seed);
    const std::vector<const Graph*> graphs{&small, &large};
    const std::vector<cost::CudaLatency> timed = executor().time_interleaved(graphs, {.warmup = 3, .replays = 20}, seed);
    REQUIRE(timed.size() == 2);
    for (const cost::CudaLatency& t : timed) {
        CHECK(t.samples_ms.size() == 20);
        CHECK(t.median_ms > 0.0);
        CHECK(std::isfinite(t.median_ms));
    }
    // ResNet-50 does about 11 times SqueezeNet 1.1's work: far beyond any timing noise.
    CHECK(timed[1].median_ms > timed[0].median_ms);
}

TEST_CASE("cuda executor: an opaque op is refused before anything runs, naming the node") {
    if (!gpu_present()) return;
    Graph g;
    const NodeId x = g.add_input("x", TensorType{DType::Float32, Shape{2, 3}});
    const NodeId mystery = g.add_opaque("Mystery", "com.example", {{x, 0}}, {TensorType{DType::Float32, Shape{2, 3}}}, {}, "m");
    g.add_output({mystery, 0});
    CHECK_THROWS_WITH_AS(static_cast<void>(executor().run(g, exec::random_inputs(g, seed))), doctest::Contains("Mystery"),
                         graph_error);
}
