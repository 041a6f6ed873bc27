#include <rlflow/cost.hpp>
#include <rlflow/models/zoo.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <vector>

using namespace rlflow;
using cost::CostModel;
using cost::CpuProfiler;
using cost::CpuProfilerOptions;
using Ints = std::vector<std::int64_t>;

namespace {

TensorType f32(const Shape& s) { return {DType::Float32, s}; }

/// Fewer samples than the defaults: these tests check what is priced, not how precisely.
CpuProfilerOptions quick_options() {
    CpuProfilerOptions options;
    options.warmup = 1;
    options.repetitions = 3;
    return options;
}

/// A backend that counts how often it is asked, around another one.
template <class Inner>
struct Counting {
    Inner inner;
    int calls = 0;
    double op_cost_ms(const cost::OpSignature& op) {
        ++calls;
        return inner.op_cost_ms(op);
    }
    [[nodiscard]] std::string name() const { return "counting:" + inner.name(); }
};

double price(CpuProfiler& profiler, OpKind op, std::vector<TensorType> in, std::vector<TensorType> out,
             const Attributes& attributes = {}) {
    return profiler.op_cost_ms(cost::OpSignature{op, attributes, in, out});
}

/// The price of an (m, k) x (k, n) MatMul.
double matmul_ms(CpuProfiler& profiler, std::int64_t m, std::int64_t k, std::int64_t n) {
    return price(profiler, OpKind::MatMul, {f32({m, k}), f32({k, n})}, {f32({m, n})});
}

bool positive_and_finite(double ms) { return ms > 0 && std::isfinite(ms); }

}  // namespace

TEST_CASE("a 256^3 MatMul costs at least 4x a 64^3 one, which does 64x fewer FLOPs") {
    CpuProfiler profiler;
    const double small_ms = matmul_ms(profiler, 64, 64, 64);
    const double large_ms = matmul_ms(profiler, 256, 256, 256);
    CHECK(positive_and_finite(small_ms));
    // 64x the FLOPs; 4x leaves room for a loaded machine and for per-run overhead.
    constexpr double required_ratio = 4.0;
    CHECK(large_ms >= required_ratio * small_ms);
}

TEST_CASE("with cold caches a matrix-vector product pays for reading its weight from memory") {
    CpuProfilerOptions cold = quick_options();
    constexpr std::size_t flush_bytes = std::size_t{64} << 20;  // past any L2 cache
    cold.cache_flush_bytes = flush_bytes;
    CpuProfiler warm_profiler(quick_options());
    CpuProfiler cold_profiler(cold);
    // A 256 KiB weight: in L2 when warm, in a far cache level or memory when cold.
    const double warm_ms = matmul_ms(warm_profiler, 1, 256, 256);
    const double cold_ms = matmul_ms(cold_profiler, 1, 256, 256);
    CHECK(positive_and_finite(warm_ms));
    // Measured 15x apart; 2x leaves room for noise and for machines with small caches.
    constexpr double required_ratio = 2.0;
    CHECK(cold_ms > required_ratio * warm_ms);
    CHECK(cold_profiler.name() == warm_profiler.name() + ":cold");
}

TEST_CASE("views and sources cost exactly 0, since they alias or bind memory") {
    CpuProfiler profiler(quick_options());
    const TensorType x = f32({8, 16, 32});
    CHECK(price(profiler, OpKind::Reshape, {x}, {f32({128, 32})}, {{"shape", Ints{128, 32}}}) == 0.0);
    CHECK(price(profiler, OpKind::Flatten, {x}, {f32({8, 512})}, {{"axis", std::int64_t{1}}}) == 0.0);
    CHECK(price(profiler, OpKind::Identity, {x}, {x}) == 0.0);
    CHECK(price(profiler, OpKind::Input, {}, {x}) == 0.0);
    CHECK(price(profiler, OpKind::Weight, {}, {x}) == 0.0);
}

TEST_CASE("every op of a mixed graph, multi-output and optional-input ones included, gets a positive price") {
    Graph g;
    const TensorRef x{g.add_input("x", f32({1, 8, 16, 16})), 0};
    const auto weight = [&](const char* name, const Shape& s) { return TensorRef{g.add_weight(name, f32(s)), 0}; };
    const Attributes conv{{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}};
    const NodeId c = g.add_node(OpKind::Conv2D, {x, weight("w", {8, 8, 3, 3}), weight("b", {8})}, conv);
    const NodeId bn = g.add_node(OpKind::BatchNormalization, {{c, 0}, weight("scale", {8}), weight("shift", {8}),
                                                              weight("mean", {8}), weight("var", {8})});
    const NodeId split = g.add_node(OpKind::Split, {{bn, 0}}, {{"axis", std::int64_t{1}}, {"split", Ints{3, 5}}});
    const NodeId joined = g.add_node(OpKind::Concat, {{split, 1}, {split, 0}}, {{"axis", std::int64_t{1}}});
    const NodeId norm = g.add_node(OpKind::LayerNormalization, {{joined, 0}, weight("gamma", {16})});
    const NodeId soft = g.add_node(OpKind::Softmax, {{norm, 0}});
    g.add_output({g.add_node(OpKind::Transpose, {{soft, 0}}), 0});

    CostModel<CpuProfiler> model{CpuProfiler(quick_options())};
    for (const NodeId id : {c, bn, split, joined, norm, soft}) {
        CAPTURE(g.node(id).describe());
        CHECK(positive_and_finite(model.node_cost(g, g.node(id))));
    }
}

TEST_CASE("the cost model measures a signature once, so pricing a graph again runs the profiler zero more times") {
    Graph g;
    TensorRef x{g.add_input("x", f32({32, 32})), 0};
    const TensorRef w{g.add_weight("w", f32({32, 32})), 0};
    for (int layer = 0; layer < 3; ++layer) x = {g.add_node(OpKind::Relu, {{g.add_node(OpKind::MatMul, {x, w}), 0}}), 0};
    g.add_output(x);

    CostModel<Counting<CpuProfiler>> model(Counting<CpuProfiler>{CpuProfiler(quick_options())});
    const double first = model.graph_cost(g);
    CHECK(positive_and_finite(first));
    CHECK(model.backend().calls == 2);  // one MatMul and one Relu signature
    CHECK(model.cache_size() == 2);
    CHECK(model.graph_cost(g) == first);
    CHECK(model.backend().calls == 2);
}

TEST_CASE("ops the executor cannot run are priced by their bytes at the measured copy bandwidth") {
    CpuProfiler profiler(quick_options());
    const double bandwidth = profiler.copy_bandwidth_gbs();
    CHECK(positive_and_finite(bandwidth));

    const TensorType block = f32({256, 1024});  // 1 MiB
    const double opaque_ms = price(profiler, OpKind::Opaque, {block}, {block});
    constexpr double bytes_per_gb_ms = 1e9 / 1e3;
    CHECK(opaque_ms == doctest::Approx(2.0 * static_cast<double>(block.bytes()) / (bandwidth * bytes_per_gb_ms)));
    CHECK(price(profiler, OpKind::Opaque, {block, block}, {block, block}) == doctest::Approx(2.0 * opaque_ms));
    // A core op on integers (an ONNX shape computation) cannot run either.
    const TensorType indices{DType::Int64, {4}};
    const double concat_ms = price(profiler, OpKind::Concat, {indices, indices}, {TensorType{DType::Int64, {8}}},
                                   {{"axis", std::int64_t{0}}});
    CHECK(concat_ms == doctest::Approx(opaque_ms * 64.0 / static_cast<double>(block.bytes())));
}

TEST_CASE("a signature the profiler cannot build is rejected with an error naming the op") {
    CpuProfiler profiler(quick_options());
    const TensorType a = f32({4, 8});
    CHECK_THROWS_WITH_AS((void)price(profiler, OpKind::MatMul, {a, f32({8, 2})}, {f32({4, 3})}),
                         "[rlflow.shape_error] MatMul node 'profiled' (#2): the signature says output 0 is "
                         "float(4,3), the op computes float(4,2)",
                         shape_error);
    CHECK_THROWS_WITH_AS((void)price(profiler, OpKind::Relu, {f32({Shape::unknown, 8})}, {f32({Shape::unknown, 8})}),
                         "[rlflow.precondition_error] CpuProfiler: cannot time Relu with input 0 of unknown shape "
                         "float(?,8); bind its symbolic dimensions first",
                         precondition_error);
}

TEST_CASE("the profiler's name keeps its cache files apart from other backends' and other machines'") {
    CpuProfilerOptions labelled = quick_options();
    labelled.machine = "lab-box";
    const CpuProfiler plain(quick_options());
    CHECK(plain.name().starts_with("cpu-profiler:"));
    CHECK(CpuProfiler(labelled).name() == plain.name() + ":lab-box");

    CostModel<cost::AnalyticBackend> analytic(cost::AnalyticBackend::preset("cpu"));
    (void)analytic.graph_cost(models::build_zoo_model("squeezenet1_1"));
    const auto path = std::filesystem::temp_directory_path() / "rlflow_cpu_profiler_foreign_cache.bin";
    analytic.save_cache(path);
    CostModel<CpuProfiler> profiled{CpuProfiler(quick_options())};
    CHECK_FALSE(profiled.load_cache(path));
    CHECK(profiled.cache_size() == 0);
    std::filesystem::remove(path);
}

TEST_CASE("SqueezeNet 1.1 costs a finite time within an order of magnitude of the analytic cpu preset") {
    const Graph g = models::build_zoo_model("squeezenet1_1");
    CostModel<CpuProfiler> profiled;
    const double measured = profiled.graph_cost(g);
    CHECK(positive_and_finite(measured));
    // The cpu preset is a roofline of this executor's own sgemm and memcpy speeds: a lower
    // bound that real kernels (im2col copies, cache misses, small GEMMs, a loaded
    // machine) miss by a few times. A factor of 10 allows that yet catches a wrong unit
    // (seconds or microseconds for milliseconds) or ops left unpriced.
    constexpr double order_of_magnitude = 10.0;
    CostModel<cost::AnalyticBackend> analytic(cost::AnalyticBackend::preset("cpu"));
    const double predicted = analytic.graph_cost(g);
    CHECK(measured < predicted * order_of_magnitude);
    CHECK(measured > predicted / order_of_magnitude);
}
