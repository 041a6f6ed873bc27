#include <rlflow/cost/cost_model.hpp>
#include <rlflow/cost/cudnn_profiler.hpp>
#include <rlflow/models/zoo.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace rlflow;
using cost::CostModel;
using cost::CudnnProfiler;
using cost::CudnnProfilerOptions;
using cost::MathMode;

static_assert(cost::CostBackend<CudnnProfiler>);
static_assert(cost::is_cost_backend_v<CudnnProfiler>);

namespace {

using Ints = std::vector<std::int64_t>;

/// True with a GPU; otherwise the calling test says it is skipped (doctest has no skip).
bool gpu_present() {
    if (CudnnProfiler::device_count() > 0) return true;
    MESSAGE("skipped: no GPU");
    return false;
}

/// The cost of one `op` node over graph inputs of these shapes, with its attributes
/// normalised and its outputs inferred as a graph does.
double price(CostModel<CudnnProfiler>& model, OpKind op, const std::vector<Shape>& inputs, Attributes attributes = {}) {
    Graph g;
    std::vector<TensorRef> refs;
    for (std::size_t i = 0; i < inputs.size(); ++i)
        refs.push_back({g.add_input("x" + std::to_string(i), {DType::Float32, inputs[i]}), 0});
    const NodeId node = g.add_node(op, refs, std::move(attributes));
    return model.node_cost(g, g.node(node));
}

Attributes conv_attributes(std::int64_t activation) {
    return {{"pads", Ints{1, 1, 1, 1}}, {"activation", activation}};
}

/// A fresh measurement of one `op` node over inputs of these shapes (a CostModel would
/// answer a second time from its cache).
double measure(CudnnProfiler& profiler, OpKind op, const std::vector<Shape>& inputs, Attributes attributes = {}) {
    Graph g;
    std::vector<TensorRef> refs;
    for (std::size_t i = 0; i < inputs.size(); ++i)
        refs.push_back({g.add_input("x" + std::to_string(i), {DType::Float32, inputs[i]}), 0});
    const Node& n = g.node(g.add_node(op, refs, std::move(attributes)));
    const std::vector<TensorType> in = g.types_of(n.inputs);
    std::vector<TensorType> out;
    for (const NodeOutput& o : n.outputs) out.push_back(o.type);
    return profiler.op_cost_ms(cost::OpSignature{n.op, n.attributes, in, out});
}

/// Rounds of interleaved measurements behind each timing comparison below.
constexpr int timing_rounds = 9;

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

/// The median over `timing_rounds` rounds of each of `measurements`, taken in turn within
/// every round, so that a change of clocks or a neighbour's load during the test reaches
/// every side alike; a median ignores the rounds such a burst spoils.
std::vector<double> interleaved_medians(const std::vector<std::function<double()>>& measurements) {
    std::vector<std::vector<double>> samples(measurements.size());
    for (int round = 0; round < timing_rounds; ++round)
        for (std::size_t i = 0; i < measurements.size(); ++i) samples[i].push_back(measurements[i]());
    std::vector<double> medians;
    for (auto& s : samples) medians.push_back(median(std::move(s)));
    return medians;
}

}  // namespace

TEST_CASE("a profiler for a missing device throws cuda_error naming the device") {
    // Without a GPU device 0 is missing; with one, the first index past the last is.
    const int missing = CudnnProfiler::device_count();
    const std::string message = "CUDA device " + std::to_string(missing) + " is not available";
    CHECK_THROWS_WITH_AS(CudnnProfiler{missing}, doctest::Contains(message.c_str()), cuda_error);
    CHECK_THROWS_WITH_AS(CudnnProfiler{-1}, doctest::Contains("CUDA device -1 is not available"), cuda_error);
}

TEST_CASE("the profiler's name starts with cudnn: and names the device") {
    if (!gpu_present()) return;
    const CudnnProfiler profiler;
    CHECK(profiler.name().starts_with("cudnn:"));
    CHECK(profiler.name().size() > std::string("cudnn:").size());
}

TEST_CASE("the math mode is named fp32 or tf32, and fp32 is the default") {
    CHECK(cost::math_mode_name(MathMode::fp32) == "fp32");
    CHECK(cost::math_mode_name(MathMode::tf32) == "tf32");
    CHECK(CudnnProfilerOptions{}.math == MathMode::fp32);
}

TEST_CASE("the profiler's name ends with its math mode, so fp32 and tf32 costs are cached apart") {
    const std::string fp32 = CudnnProfiler::profiler_name("NVIDIA A100-SXM4-40GB", MathMode::fp32);
    const std::string tf32 = CudnnProfiler::profiler_name("NVIDIA A100-SXM4-40GB", MathMode::tf32);
    CHECK(fp32 == "cudnn:NVIDIA A100-SXM4-40GB:fp32");
    CHECK(tf32 == "cudnn:NVIDIA A100-SXM4-40GB:tf32");
    CHECK(fp32 != tf32);
    if (!gpu_present()) return;
    const CudnnProfiler profiler;
    CHECK(profiler.math_mode() == MathMode::fp32);
    CHECK(profiler.name().ends_with(":fp32"));
    if (!CudnnProfiler::supports(MathMode::tf32)) {
        MESSAGE("tf32 part skipped: device 0 cannot run tf32");
        return;
    }
    const CudnnProfiler tf32_profiler(CudnnProfilerOptions{.math = MathMode::tf32});
    CHECK(tf32_profiler.math_mode() == MathMode::tf32);
    CHECK(tf32_profiler.name().ends_with(":tf32"));
    CHECK(tf32_profiler.name() != profiler.name());
}

TEST_CASE("tf32 is refused, naming the device, on a GPU without TF32 tensor cores") {
    cudaDeviceProp volta{};
    std::snprintf(volta.name, sizeof(volta.name), "%s", "Tesla V100-SXM2-16GB");
    volta.major = 7;
    volta.minor = 0;
    const std::string reason = CudnnProfiler::math_mode_unavailable_reason(MathMode::tf32, 3, volta);
    CHECK(reason
          == "math mode tf32 needs TF32 tensor cores (compute capability 8.0 or newer), but CUDA device 3 "
             "'Tesla V100-SXM2-16GB' has compute capability 7.0; use fp32");
    CHECK(CudnnProfiler::math_mode_unavailable_reason(MathMode::fp32, 3, volta).empty());
}

TEST_CASE("tf32 is refused while NVIDIA_TF32_OVERRIDE=0 turns TF32 off in the libraries") {
    cudaDeviceProp ampere{};
    std::snprintf(ampere.name, sizeof(ampere.name), "%s", "NVIDIA A100-SXM4-40GB");
    ampere.major = 8;
    const char* previous = std::getenv("NVIDIA_TF32_OVERRIDE");
    const std::optional<std::string> saved = previous ? std::optional<std::string>(previous) : std::nullopt;
    ::setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
    const std::string overridden = CudnnProfiler::math_mode_unavailable_reason(MathMode::tf32, 0, ampere);
    const std::string fp32_overridden = CudnnProfiler::math_mode_unavailable_reason(MathMode::fp32, 0, ampere);
    ::unsetenv("NVIDIA_TF32_OVERRIDE");
    const std::string unset = CudnnProfiler::math_mode_unavailable_reason(MathMode::tf32, 0, ampere);
    if (saved) ::setenv("NVIDIA_TF32_OVERRIDE", saved->c_str(), 1);
    CHECK(overridden.find("NVIDIA_TF32_OVERRIDE=0") != std::string::npos);
    CHECK(overridden.find("CUDA device 0 'NVIDIA A100-SXM4-40GB'") != std::string::npos);
    CHECK(fp32_overridden.empty());
    CHECK(unset.empty());
}

TEST_CASE("a tf32 profiler on a device that cannot run tf32 throws precondition_error") {
    if (!gpu_present()) return;
    if (CudnnProfiler::supports(MathMode::tf32)) {
        MESSAGE("skipped: device 0 runs tf32");
        return;
    }
    CHECK_THROWS_WITH_AS(CudnnProfiler(CudnnProfilerOptions{.math = MathMode::tf32}),
                         doctest::Contains("cuDNN profiler: math mode tf32"), precondition_error);
}

TEST_CASE("both math modes price a large fp32 convolution and matrix product at a finite positive time") {
    if (!gpu_present()) return;
    for (const MathMode mode : {MathMode::fp32, MathMode::tf32}) {
        CAPTURE(cost::math_mode_name(mode));
        if (!CudnnProfiler::supports(mode)) {
            MESSAGE("skipped ", cost::math_mode_name(mode), ": device 0 cannot run it");
            continue;
        }
        // Costs are compared with nothing but zero: two timings vary from run to run.
        CostModel<CudnnProfiler> model(CudnnProfiler(CudnnProfilerOptions{.math = mode}));
        const double conv = price(model, OpKind::Conv2D, {{8, 256, 56, 56}, {256, 256, 3, 3}}, conv_attributes(0));
        const double matmul = price(model, OpKind::MatMul, {{4096, 4096}, {4096, 4096}});
        const double batched = price(model, OpKind::MatMul, {{16, 512, 512}, {16, 512, 512}});
        for (const double ms : {conv, matmul, batched}) {
            CHECK(std::isfinite(ms));
            CHECK(ms > 0.0);
        }
    }
}

TEST_CASE("a bigger convolution costs more than a smaller one on the GPU") {
    if (!gpu_present()) return;
    // Why this does not flake: the big one does 16x the FLOPs over 4x the bytes, which a
    // launch cost of microseconds cannot make up for, and each side is the median of 9
    // interleaved prices, each the mean of 32 runs.
    CudnnProfiler profiler;
    const std::vector<double> medians = interleaved_medians(
        {[&] { return measure(profiler, OpKind::Conv2D, {{1, 64, 56, 56}, {64, 64, 3, 3}}, conv_attributes(0)); },
         [&] { return measure(profiler, OpKind::Conv2D, {{1, 256, 56, 56}, {256, 256, 3, 3}}, conv_attributes(0)); }});
    const double small = medians[0], big = medians[1];
    CHECK(small > 0.0);
    CHECK(big > small);
}

TEST_CASE("a convolution with fused ReLU costs no more than the convolution then a ReLU") {
    if (!gpu_present()) return;
    // The fused call (cudnnConvolutionBiasActivationForward, with the algorithm the plain
    // convolution chose) saves the separate ReLU's launch and its pass over the output.
    // Why 10% does not flake: each price is the mean of 32 runs, the sides are medians of
    // 9 rounds that measure all three ops in turn, so clock changes and load reach them
    // alike, and what is left is the run-to-run spread of a mean of 32 launches, a few
    // percent. A fused call that is really slower fails, as it should.
    CudnnProfiler profiler;
    const std::vector<Shape> conv_inputs{{1, 128, 28, 28}, {128, 128, 3, 3}, {128}};
    const std::vector<double> medians = interleaved_medians(
        {[&] { return measure(profiler, OpKind::Conv2D, conv_inputs, conv_attributes(1)); },
         [&] { return measure(profiler, OpKind::Conv2D, conv_inputs, conv_attributes(0)); },
         [&] { return measure(profiler, OpKind::Relu, {{1, 128, 28, 28}}); }});
    const double fused = medians[0], separate = medians[1] + medians[2];
    CAPTURE(fused);
    CAPTURE(separate);
    constexpr double timing_noise = 1.1;
    CHECK(fused <= separate * timing_noise);
}

TEST_CASE("views and sources cost nothing on the GPU") {
    if (!gpu_present()) return;
    CostModel<CudnnProfiler> model;
    const Shape x{8, 64, 32};
    CHECK(price(model, OpKind::Reshape, {x}, {{"shape", Ints{8, 2048}}}) == 0.0);
    CHECK(price(model, OpKind::Flatten, {x}) == 0.0);
    CHECK(price(model, OpKind::Identity, {x}) == 0.0);
    const TensorType type{DType::Float32, x};
    const Attributes none;
    CHECK(model.backend().op_cost_ms(cost::OpSignature{OpKind::Input, none, {}, {&type, 1}}) == 0.0);
}

TEST_CASE("every core op that moves data gets a positive finite time on the GPU") {
    if (!gpu_present()) return;
    struct Case {
        OpKind op;
        std::vector<Shape> inputs;
        Attributes attributes;
    };
    const Shape image{2, 32, 28, 28};
    const std::vector<Case> cases{
        {OpKind::Conv2D,
         {image, {64, 8, 3, 3}, {64}},
         {{"pads", Ints{0, 0, 1, 1}}, {"group", std::int64_t{4}}, {"activation", std::int64_t{2}}}},
        {OpKind::Conv2D, {image, {32, 32, 1, 7}}, {{"pads", Ints{0, 3, 0, 3}}, {"activation", std::int64_t{3}}}},
        {OpKind::MatMul, {{4, 1, 64, 32}, {3, 32, 16}}, {}},
        {OpKind::MatMul, {{32}, {32, 16}}, {}},
        {OpKind::Gemm, {{32, 64}, {16, 32}, {16}}, {{"transA", std::int64_t{1}}, {"transB", std::int64_t{1}}}},
        {OpKind::Add, {image, {32, 1, 1}}, {}},
        {OpKind::Sub, {{32, 1, 1}, image}, {}},
        {OpKind::Mul, {{2, 1, 28, 28}, {1, 32, 1, 1}}, {}},
        {OpKind::Div, {image, image}, {}},
        {OpKind::Pow, {image, {1}}, {}},
        {OpKind::Relu, {image}, {}},
        {OpKind::Sigmoid, {image}, {}},
        {OpKind::Tanh, {image}, {}},
        {OpKind::Erf, {image}, {}},
        {OpKind::Sqrt, {image}, {}},
        {OpKind::Clip, {image}, {{"min", 0.0}, {"max", 6.0}}},
        {OpKind::Softmax, {{2, 12, 128, 128}}, {{"axis", std::int64_t{-1}}}},
        {OpKind::MaxPool, {image}, {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}},
        {OpKind::AveragePool, {image}, {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}}},
        {OpKind::GlobalAveragePool, {image}, {}},
        {OpKind::BatchNormalization, {image, {32}, {32}, {32}, {32}}, {}},
        {OpKind::LayerNormalization, {{2, 128, 768}, {768}, {768}}, {}},
        {OpKind::ReduceMean, {{2, 128, 768}}, {{"axes", Ints{-1}}}},
        {OpKind::Concat, {image, image}, {{"axis", std::int64_t{1}}}},
        {OpKind::Split, {image}, {{"axis", std::int64_t{1}}, {"split", Ints{16, 16}}}},
        {OpKind::Transpose, {image}, {{"perm", Ints{0, 2, 3, 1}}}},
        {OpKind::Pad, {image}, {{"pads", Ints{0, 0, 1, 1, 0, 0, 1, 1}}}},
        {OpKind::Enlarge, {{64, 32, 1, 1}}, {{"kernel_shape", Ints{3, 3}}}},
        {OpKind::MergeGConv, {{64, 8, 3, 3}}, {{"count", std::int64_t{2}}, {"group", std::int64_t{4}}}},
    };
    CostModel<CudnnProfiler> model;
    for (const Case& c : cases) {
        CAPTURE(op_name(c.op));
        const double ms = price(model, c.op, c.inputs, c.attributes);
        CHECK(std::isfinite(ms));
        CHECK(ms > 0.0);
    }
}

TEST_CASE("a cost model over the profiler prices whole zoo models") {
    if (!gpu_present()) return;
    CostModel<CudnnProfiler> model;
    for (const char* name : {"inception_v3", "bert"}) {
        CAPTURE(name);
        const double ms = model.graph_cost(models::build_zoo_model(name));
        CHECK(std::isfinite(ms));
        CHECK(ms > 0.0);
    }
}
