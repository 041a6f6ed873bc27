#include "../tensor_types.hpp"
#include <rlflow/cost.hpp>
#include <rlflow/exec/random.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/rewrite.hpp>
#include <rlflow/core/random.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

using namespace rlflow;
using cost::AnalyticBackend;
using cost::CostModel;

namespace {


/// The analytic backend, counting how often it is asked.
struct CountingBackend {
    AnalyticBackend inner = AnalyticBackend::preset("v100");
    int calls = 0;
    double op_cost_ms(const cost::OpSignature& op) {
        ++calls;
        return inner.op_cost_ms(op);
    }
    [[nodiscard]] std::string name() const { return "counting:" + inner.name(); }
};
static_assert(cost::is_cost_backend_v<CountingBackend>);
static_assert(!cost::is_cost_backend_v<int>);

double price(const AnalyticBackend& b, OpKind op, std::vector<TensorType> in, std::vector<TensorType> out, const Attributes& a = {}) {
    return b.op_cost_ms(cost::OpSignature{op, a, in, out});
}

std::filesystem::path temp_file(const char* name) { return std::filesystem::temp_directory_path() / name; }

}  // namespace

TEST_CASE("analytic costs follow the roofline with launch overhead") {
    const AnalyticBackend v100 = AnalyticBackend::preset("v100");
    const auto& d = v100.device();
    const double launch_ms = d.launch_us / 1e3;
    // A ReLU over 16 Mi floats is bound by memory: read and write every element once.
    const TensorType big = f32({16, 1024, 1024});
    const double bytes = 2.0 * static_cast<double>(big.bytes());
    CHECK(price(v100, OpKind::Relu, {big}, {big}) == doctest::Approx(bytes / (d.bandwidth_gbs * 1e9) * 1e3 + launch_ms));
    // A 4096^3 MatMul is bound by compute at the efficiency of its GEMM dims.
    const TensorType sq = f32({4096, 4096});
    const double s = 4096.0 / (4096.0 + d.half_saturation);
    const double flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
    CHECK(price(v100, OpKind::MatMul, {sq, sq}, {sq})
          == doctest::Approx(flops / (d.peak_gflops * 1e9 * d.peak_efficiency * s * s * s) * 1e3 + launch_ms));
}

TEST_CASE("views cost nothing, copies cost their bytes, unlike TASO's free transposes") {
    const AnalyticBackend v100 = AnalyticBackend::preset("v100");
    const TensorType x = f32({64, 128, 32});
    const TensorType y = f32({128, 64, 32});
    CHECK(price(v100, OpKind::Reshape, {x}, {y}, {{"shape", std::vector<std::int64_t>{128, 64, 32}}}) == 0.0);
    const double transpose = price(v100, OpKind::Transpose, {x}, {y}, {{"perm", std::vector<std::int64_t>{1, 0, 2}}});
    CHECK(transpose > v100.device().launch_us / 1e3);
    CHECK(price(v100, OpKind::Concat, {x, x}, {f32({128, 128, 32})}, {{"axis", std::int64_t{0}}}) > transpose);
}

TEST_CASE("small grouped convolutions run below peak, so merging groups can pay") {
    const AnalyticBackend v100 = AnalyticBackend::preset("v100");
    const TensorType x = f32({1, 128, 56, 56});
    const TensorType y = x;
    const auto conv = [&](std::int64_t group) {
        const Attributes a{{"kernel_shape", std::vector<std::int64_t>{3, 3}}, {"strides", std::vector<std::int64_t>{1, 1}},
                           {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}, {"dilations", std::vector<std::int64_t>{1, 1}},
                           {"group", group}, {"activation", std::int64_t{0}}};
        return price(v100, OpKind::Conv2D, {x, f32({128, 128 / group, 3, 3})}, {y}, a);
    };
    // ResNeXt's 32 groups of 4 channels: twice the FLOPs at 16 groups still cost less.
    CHECK(conv(16) < conv(32));
}

TEST_CASE("an unknown device preset is an error that lists the presets") {
    CHECK_THROWS_WITH_AS((void)AnalyticBackend::preset("tpu"),
                         "[rlflow.precondition_error] unknown device preset 'tpu' (v100, a100, h100, a100-tf32, h100-tf32, cpu)", precondition_error);
}

TEST_CASE("the cost model caches by signature and does not charge for weight-only ops") {
    const Graph g = models::build_zoo_model("resnet50");
    CostModel<CountingBackend> model;
    const double first = model.graph_cost(g);
    const int calls = model.backend().calls;
    CHECK(calls > 0);
    CHECK(static_cast<std::size_t>(calls) == model.cache_size());
    CHECK(model.cache_size() < g.num_nodes() / 2);  // ResNet repeats its blocks
    CHECK(model.graph_cost(g) == first);
    CHECK(model.backend().calls == calls);

    // a and b have data (initializers), so their Concat is folded before the model runs.
    Graph weights;
    const TensorRef x{weights.add_input("x", f32({4, 8})), 0};
    const TensorRef a{weights.add_weight("a", f32({8, 4}), std::make_shared<const Tensor>(Shape{8, 4})), 0};
    const TensorRef b{weights.add_weight("b", f32({8, 4}), std::make_shared<const Tensor>(Shape{8, 4})), 0};
    const NodeId both = weights.add_node(OpKind::Concat, {a, b}, {{"axis", std::int64_t{1}}});
    weights.add_output({weights.add_node(OpKind::MatMul, {x, {both, 0}}), 0});
    CostModel<AnalyticBackend> analytic;
    const double matmul_only = analytic.node_cost(weights, weights.node(weights.outputs()[0].value.node));
    CHECK(analytic.graph_cost(weights) == doctest::Approx(matmul_only));
}

TEST_CASE("small constant inputs are priced by their values, and the one-node graph holds them") {
    // Pow(x, 2) and Pow(x, 3) differ only in the exponent's value; ONNX Runtime squares the
    // first and calls powf for the second, so they must not share a price.
    const auto pow_graph = [](float exponent) {
        Graph g;
        const NodeId x = g.add_input("x", f32({128, 768}));
        const NodeId e = g.add_constant("e", Tensor::from_floats({}, {exponent}));
        g.add_output({g.add_node(OpKind::Pow, {{x, 0}, {e, 0}}), 0});
        return g;
    };
    /// Records the exponent each one-node graph is built with.
    struct ValueRecorder {
        std::vector<float> exponents;
        double op_cost_ms(const cost::OpSignature& op) {
            const Graph one = cost::detail::single_op_graph(op, 7, cost::detail::FedInputs::runtime);
            for (const Node& n : one.nodes())
                if (n.op == OpKind::Weight) exponents.push_back(n.data->floats()[0]);
            return 1.0;
        }
        [[nodiscard]] std::string name() const { return "value-recorder"; }
    };
    CostModel<ValueRecorder> model;
    const Graph square = pow_graph(2.0f);
    const Graph cube = pow_graph(3.0f);
    CHECK(model.graph_cost(square) == 1.0);
    CHECK(model.graph_cost(cube) == 1.0);
    CHECK(model.graph_cost(pow_graph(2.0f)) == 1.0);
    CHECK(model.cache_size() == 2);  // the second square comes from the cache
    CHECK(model.backend().exponents == std::vector<float>{2.0f, 3.0f});

    // Large constants (weights) are not part of the key: their values do not pick kernels.
    const auto add_graph = [](float value) {
        Graph g;
        const NodeId x = g.add_input("x", f32({4, 32}));
        const NodeId w = g.add_weight("w", f32({32}), std::make_shared<const Tensor>(Tensor::from_floats({32}, std::vector<float>(32, value))));
        g.add_output({g.add_node(OpKind::Add, {{x, 0}, {w, 0}}), 0});
        return g;
    };
    CostModel<CountingBackend> counting;
    (void)counting.graph_cost(add_graph(1.0f));
    (void)counting.graph_cost(add_graph(2.0f));
    CHECK(counting.backend().calls == 1);
}

TEST_CASE("ops computed from a weight without data, a run-time input, are priced in full") {
    // y = x @ (W * s): with W fed at run time, W * s runs on every inference.
    Graph g;
    const NodeId x = g.add_input("x", f32({64, 256}));
    const NodeId w = g.add_weight("W", f32({256, 256}));
    const NodeId s = g.add_constant("s", Tensor::from_floats({1}, {0.5f}));
    const NodeId scaled = g.add_node(OpKind::Mul, {{w, 0}, {s, 0}});
    const NodeId y = g.add_node(OpKind::MatMul, {{x, 0}, {scaled, 0}});
    g.add_output({y, 0});
    CostModel<AnalyticBackend> model;
    const double mul = model.node_cost(g, g.node(scaled));
    const double matmul = model.node_cost(g, g.node(y));
    CHECK(mul > 0);
    CHECK(model.graph_cost(g) == doctest::Approx(mul + matmul));

    // The same graph with W as an initializer: W * s folds and costs nothing per inference.
    g.set_weight_data(w, std::make_shared<const Tensor>(Shape{256, 256}));
    CHECK(model.graph_cost(g) == doctest::Approx(matmul));
}

TEST_CASE("a zero-input opaque op such as RandomNormal and the op reading it are priced") {
    Graph g;
    const Attributes shape{{"shape", std::vector<std::int64_t>{64, 64}}};
    const NodeId noise = g.add_opaque("RandomNormal", "", {}, {f32({64, 64})}, shape, "noise");
    const NodeId w = g.add_weight("W", f32({64, 64}), std::make_shared<const Tensor>(Shape{64, 64}));
    const NodeId sum = g.add_node(OpKind::Add, {{noise, 0}, {w, 0}});
    g.add_output({sum, 0});
    CostModel<AnalyticBackend> model;
    const double add = model.node_cost(g, g.node(sum));
    CHECK(add > 0);
    CHECK(model.graph_cost(g) == doctest::Approx(model.node_cost(g, g.node(noise)) + add));
}

TEST_CASE("the cost cache file round-trips, and a corrupt or foreign one is never trusted") {
    const Graph g = models::build_zoo_model("squeezenet1_1");
    CostModel<CountingBackend> model;
    const double cost = model.graph_cost(g);
    const auto path = temp_file("rlflow_cost_cache_test.bin");
    model.save_cache(path);

    CostModel<CountingBackend> warm;
    CHECK(warm.load_cache(path));
    // Bit for bit: the file keeps each price's 8 bytes, and the same sum adds them up.
    CHECK(warm.graph_cost(g) == cost);
    CHECK(warm.backend().calls == 0);

    std::string bytes;
    {
        std::ifstream in(path, std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    Rng rng(5);
    for (int trial = 0; trial < 20; ++trial) {
        std::string broken = bytes;
        broken[rng.below(broken.size())] ^= static_cast<char>(1 + rng.below(255));
        {
            std::ofstream out(path, std::ios::binary | std::ios::trunc);
            out << broken;
        }
        CostModel<CountingBackend> cold;
        CHECK_FALSE(cold.load_cache(path));
        CHECK(cold.cache_size() == 0);
    }
    CostModel<AnalyticBackend> other;  // another backend name
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << bytes;
    }
    CHECK_FALSE(other.load_cache(path));
    CHECK_FALSE(other.load_cache(temp_file("rlflow_no_such_cache.bin")));
    std::filesystem::remove(path);
}

TEST_CASE("equal caches save to identical files, whatever order their entries were priced in") {
    // The file lists entries in key order, not in the hash map's order (which depends on
    // the standard library's std::hash and on the order of insertion).
    const Graph first = models::build_zoo_model("squeezenet1_1");
    const Graph second = models::build_zoo_model("resnet18");
    CostModel<CountingBackend> forward, backward;
    (void)forward.graph_cost(first);
    (void)forward.graph_cost(second);
    (void)backward.graph_cost(second);
    (void)backward.graph_cost(first);
    REQUIRE(forward.cache_size() == backward.cache_size());
    const auto forward_path = temp_file("rlflow_cost_cache_forward.bin");
    const auto backward_path = temp_file("rlflow_cost_cache_backward.bin");
    forward.save_cache(forward_path);
    backward.save_cache(backward_path);
    const auto read = [](const std::filesystem::path& path) {
        std::ifstream in(path, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    };
    const std::string forward_bytes = read(forward_path);
    CHECK(forward_bytes.size() > 100);
    CHECK(forward_bytes == read(backward_path));
    std::filesystem::remove(forward_path);
    std::filesystem::remove(backward_path);
}

TEST_CASE("the incremental cost tracker equals a full recount over random rewrites and undos") {
    auto rules = std::make_shared<const rewrite::RuleSet>(rewrite::builtin_rules());
    // Zoo graphs have weights without data (run-time inputs, so nothing is weight-only);
    // with data, rewrites such as Conv + BatchNorm folding create weight-only ops.
    struct Case {
        const char* name;
        bool with_data;
    };
    for (const Case& c : {Case{"inception_v3", false}, Case{"bert", false}, Case{"resnext50", false},
                          Case{"bert", true}, Case{"resnext50", true}}) {
        const char* name = c.name;
        CAPTURE(name);
        CAPTURE(c.with_data);
        Graph graph = models::build_zoo_model(name);
        if (c.with_data) exec::fill_random_weights(graph, 1);
        rewrite::Rewriter rw(std::move(graph), rules);
        CostModel<AnalyticBackend> model;
        cost::CostTracker<AnalyticBackend> tracker(model, rw.graph());
        Rng rng(9);
        std::vector<EditJournal> history;
        for (int step = 0; step < 60; ++step) {
            if (!history.empty() && rng.below(4) == 0) {
                const auto touched = history.back().touched_nodes();
                rw.undo(std::move(history.back()));
                history.pop_back();
                tracker.update(rw.graph(), touched);
            } else {
                std::vector<std::size_t> offered;
                for (std::size_t r = 0; r < rules->size(); ++r)
                    if (rw.index().num_choices(r)) offered.push_back(r);
                if (offered.empty()) break;
                const std::size_t r = offered[rng.below(offered.size())];
                history.push_back(rw.apply(r, rng.below(rw.index().num_choices(r))));
                tracker.update(rw.graph(), history.back().touched_nodes());
            }
            REQUIRE(tracker.total() == doctest::Approx(model.graph_cost(rw.graph())).epsilon(1e-9));
        }
    }
}

namespace {

/// x -> Conv2D -> BatchNormalization -> y. The weights named in `with_data` get data
/// (initializers); the others have none (run-time inputs).
Graph conv_batchnorm(const std::vector<std::string>& with_data) {
    constexpr std::int64_t channels = 16;
    const auto weight = [&](Graph& g, const std::string& name, const Shape& shape) -> TensorRef {
        const bool data = std::find(with_data.begin(), with_data.end(), name) != with_data.end();
        return {g.add_weight(name, f32(shape), data ? std::make_shared<const Tensor>(shape) : nullptr), 0};
    };
    Graph g;
    const TensorRef x{g.add_input("x", f32({1, 8, 12, 12})), 0};
    const TensorRef w = weight(g, "conv.w", {channels, 8, 3, 3});
    const NodeId conv = g.add_node(OpKind::Conv2D, {x, w}, {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}, "conv");
    std::vector<TensorRef> inputs{{conv, 0}};
    for (const char* p : {"bn.gamma", "bn.beta", "bn.mean", "bn.variance"}) inputs.push_back(weight(g, p, {channels}));
    g.add_output({g.add_node(OpKind::BatchNormalization, inputs, {{"epsilon", 1e-3}}, "bn"), 0}, "y");
    return g;
}

}  // namespace

TEST_CASE("the cost tracker agrees with a full recount when Conv + BatchNorm folding consumes weights without data") {
    auto rules = std::make_shared<const rewrite::RuleSet>(rewrite::builtin_rules());
    const std::uint32_t fold = rules->at("fold_conv_batchnorm").id;
    const std::vector<std::string> all{"conv.w", "bn.gamma", "bn.beta", "bn.mean", "bn.variance"};
    const std::vector<std::vector<std::string>> data_cases{{}, {"bn.gamma", "bn.beta"}, all};
    for (const auto& with_data : data_cases) {
        CAPTURE(with_data.size());
        rewrite::Rewriter rw(conv_batchnorm(with_data), rules);
        CostModel<AnalyticBackend> model;
        cost::CostTracker<AnalyticBackend> tracker(model, rw.graph());
        const double before = model.graph_cost(rw.graph());
        CHECK(tracker.total() == doctest::Approx(before).epsilon(1e-12));

        REQUIRE(rw.index().num_choices(fold) == 1);
        EditJournal journal = rw.apply(fold, 0);
        tracker.update(rw.graph(), journal.touched_nodes());
        const double after = model.graph_cost(rw.graph());
        CHECK(tracker.total() == doctest::Approx(after).epsilon(1e-12));

        // With the kernel and every BatchNorm weight initializers, only the folded
        // convolution runs. Where the kernel or variance is fed at run time, the rule's
        // 7 weight ops (Add, Sqrt, Div, Reshape, Mul, Mul, Sub) all run and are priced.
        const std::vector<char> marks = weight_only_nodes(rw.graph());
        std::size_t priced = 0;
        double conv = 0;
        for (const Node& n : rw.graph().nodes()) {
            priced += !marks[n.id.value] && !n.traits().has(op_flag_source) ? 1 : 0;
            if (n.op == OpKind::Conv2D) conv = model.node_cost(rw.graph(), n);
        }
        constexpr std::size_t weight_ops = 7;
        CHECK(priced == (with_data == all ? 1 : 1 + weight_ops));
        if (with_data == all) CHECK(after == doctest::Approx(conv));
        else CHECK(after > conv);

        const auto touched = journal.touched_nodes();
        rw.undo(std::move(journal));
        tracker.update(rw.graph(), touched);
        CHECK(tracker.total() == doctest::Approx(before).epsilon(1e-12));
    }
}
