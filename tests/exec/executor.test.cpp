#include "support.hpp"

#include <rlflow/core/memory.hpp>

#include <map>

using namespace exec_test;
using rlflow::exec::Executor;

namespace {

/// x -> Conv(3x3, pad 1, bias, relu) -> MaxPool(2) -> Flatten -> Gemm -> Softmax,
/// with a residual Add on the conv output.
struct SmallNet {
    Graph g;
    NodeId x, conv, add, pool, flat, fc, softmax;
    SmallNet() {
        x = g.add_input("x", f32({2, 3, 6, 6}));
        const auto w = g.add_weight("w", f32({3, 3, 3, 3}));
        const auto b = g.add_weight("b", f32({3}));
        const auto fc_w = g.add_weight("fc_w", f32({27, 5}));
        conv = g.add_node(OpKind::Conv2D, {{x, 0}, {w, 0}, {b, 0}},
                          {{"pads", Ints{1, 1, 1, 1}}, {"activation", std::int64_t{1}}}, "conv");
        add = g.add_node(OpKind::Add, {{conv, 0}, {x, 0}}, {}, "residual");
        pool = g.add_node(OpKind::MaxPool, {{add, 0}}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}, "pool");
        flat = g.add_node(OpKind::Flatten, {{pool, 0}}, {}, "flat");
        fc = g.add_node(OpKind::Gemm, {{flat, 0}, {fc_w, 0}}, {}, "fc");
        softmax = g.add_node(OpKind::Softmax, {{fc, 0}}, {}, "softmax");
        g.add_output({softmax, 0}, "probabilities");
        g.add_output({conv, 0}, "features");
        rlflow::exec::fill_random_weights(g, 7);
    }
};

}  // namespace

TEST_CASE("executor runs a small net and returns outputs in graph output order") {
    SmallNet net;
    const auto inputs = rlflow::exec::random_inputs(net.g, 1);
    const auto result = Executor{}.run(net.g, inputs);
    REQUIRE(result.outputs.size() == 2);
    CHECK(result.outputs[0].shape() == Shape{2, 5});
    CHECK(result.outputs[1].shape() == Shape{2, 3, 6, 6});
    for (std::int64_t row = 0; row < 2; ++row) {
        double sum = 0;
        for (std::int64_t i = 0; i < 5; ++i) sum += at(result.outputs[0], row * 5 + i);
        CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
    }
    for (const float v : result.outputs[1].floats()) CHECK(v >= 0.0f);  // fused relu
}

TEST_CASE("executor results equal the kernels run one node at a time") {
    // Bit for bit, on any CPU: a graph run and a one-node run call the same kernel on the
    // same values, and tensors start 64-byte aligned in both, so even vectorised sums add
    // in the same order.
    SmallNet net;
    const auto inputs = rlflow::exec::random_inputs(net.g, 2);
    const auto result = Executor{}.run(net.g, inputs);
    const auto data = [&](const char* name) {
        for (const NodeId id : net.g.weights())
            if (net.g.node(id).name == name) return *net.g.node(id).data;
        FAIL("no weight " << name);
        return Tensor{};
    };
    const Tensor conv = run_op(OpKind::Conv2D, {inputs[0], data("w"), data("b")},
                               {{"pads", Ints{1, 1, 1, 1}}, {"activation", std::int64_t{1}}}).at(0);
    CHECK(conv == result.outputs[1]);
    const Tensor add = run_op(OpKind::Add, {conv, inputs[0]}).at(0);
    const Tensor pool = run_op(OpKind::MaxPool, {add}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}).at(0);
    const Tensor flat = run_op(OpKind::Flatten, {pool}).at(0);
    const Tensor fc = run_op(OpKind::Gemm, {flat, data("fc_w")}).at(0);
    CHECK(run_op(OpKind::Softmax, {fc}).at(0) == result.outputs[0]);
}

TEST_CASE("executor reads weights and constants from node data and accepts inputs by name") {
    Graph g;
    const auto x = g.add_input("x", f32({3}));
    const auto c = g.add_constant("c", Tensor::from_floats({3}, {1.0f, 2.0f, 3.0f}));
    const auto w = g.add_weight("w", f32({3}), std::make_shared<const Tensor>(Tensor::from_floats({3}, {10.0f, 20.0f, 30.0f})));
    const auto sum = g.add_node(OpKind::Add, {{x, 0}, {c, 0}});
    const auto product = g.add_node(OpKind::Mul, {{sum, 0}, {w, 0}});
    g.add_output({product, 0});
    const std::map<std::string, Tensor> named{{"x", Tensor::from_floats({3}, {0.5f, -1.0f, 0.0f})}};
    const auto result = Executor{}.run(g, named);
    CHECK(result.outputs.at(0) == Tensor::from_floats({3}, {15.0f, 20.0f, 90.0f}));
    CHECK_THROWS_WITH_AS(Executor{}.run(g, std::map<std::string, Tensor>{}),
                         "[rlflow.precondition_error] Executor::run: no tensor for graph input 'x'",
                         rlflow::precondition_error);
    std::map<std::string, Tensor> extra = named;
    extra.emplace("y", Tensor::from_floats({1}, {0.0f}));
    CHECK_THROWS_WITH_AS(Executor{}.run(g, extra), doctest::Contains("the graph has no input named 'y'"),
                         rlflow::precondition_error);
}

TEST_CASE("executor refuses an opaque node, naming the node and its op") {
    Graph g;
    const auto x = g.add_input("x", f32({2, 2}));
    const auto op = g.add_opaque("Foo", "com.example", {{x, 0}}, {f32({2, 2})}, {}, "mystery");
    g.add_output({op, 0});
    CHECK_THROWS_WITH_AS(Executor{}.run(g, rlflow::exec::random_inputs(g, 0)),
                         "[rlflow.graph_error] cannot execute opaque op 'Foo' in node 'mystery' (#1)",
                         rlflow::graph_error);
}

TEST_CASE("executor refuses a weight without data, naming the weight") {
    Graph g;
    const auto x = g.add_input("x", f32({2}));
    const auto w = g.add_weight("scale", f32({2}));
    g.add_output({g.add_node(OpKind::Mul, {{x, 0}, {w, 0}}), 0});
    CHECK_THROWS_WITH_AS(Executor{}.run(g, rlflow::exec::random_inputs(g, 0)),
                         doctest::Contains("Weight node 'scale' (#1): weight has no data"), rlflow::precondition_error);
}

TEST_CASE("executor refuses inputs of the wrong shape or count, naming the input") {
    SmallNet net;
    const std::vector<Tensor> wrong{random_tensor({2, 3, 6, 5}, 3)};
    CHECK_THROWS_WITH_AS(Executor{}.run(net.g, wrong),
                         "[rlflow.shape_error] graph input 'x': expected float(2,3,6,6), got float(2,3,6,5)",
                         rlflow::shape_error);
    CHECK_THROWS_WITH_AS(Executor{}.run(net.g, std::vector<Tensor>{}),
                         doctest::Contains("the graph has 1 inputs, got 0 tensors"), rlflow::precondition_error);
}

TEST_CASE("executor refuses float ops on int tensors, and dtypes it does not hold, before anything runs") {
    Graph g;
    const auto x = g.add_input("ids", {DType::Int64, {4}});
    g.add_output({g.add_node(OpKind::Relu, {{x, 0}}, {}, "relu"), 0});
    const std::vector<Tensor> inputs{Tensor(TensorType{DType::Int64, {4}})};
    CHECK_THROWS_WITH_AS(Executor{}.run(g, inputs), doctest::Contains("Relu node 'relu' (#1): output 0 is int64(4,)"),
                         rlflow::precondition_error);
    Graph half;
    const auto h = half.add_input("h", {DType::Float16, {4}});
    half.add_output({h, 0});
    CHECK_THROWS_WITH_AS(Executor{}.run(half, std::vector<Tensor>{Tensor(TensorType{DType::Float16, {4}})}),
                         doctest::Contains("Input node 'h' (#0): output 0 is float16(4,)"), rlflow::precondition_error);
}

TEST_CASE("a tensor listed as several graph outputs, or a graph input as output, comes back each time") {
    Graph g;
    const auto x = g.add_input("x", f32({2, 3}));
    const auto r = g.add_node(OpKind::Relu, {{x, 0}});
    const auto view = g.add_node(OpKind::Reshape, {{r, 0}}, {{"shape", Ints{3, 2}}});
    g.add_output({r, 0}, "a");
    g.add_output({view, 0}, "b");
    g.add_output({x, 0}, "c");
    const auto inputs = rlflow::exec::random_inputs(g, 4);
    const auto result = Executor{}.run(g, inputs);
    REQUIRE(result.outputs.size() == 3);
    CHECK(result.outputs[0].shape() == Shape{2, 3});
    CHECK(result.outputs[1].shape() == Shape{3, 2});
    CHECK(std::equal(result.outputs[0].floats().begin(), result.outputs[0].floats().end(), result.outputs[1].floats().begin()));
    CHECK(result.outputs[2] == inputs[0]);
}

namespace {

void check_peak_matches_profile(const Graph& g) {
    const auto result = Executor{}.run(g, rlflow::exec::random_inputs(g, 5));
    CHECK(result.peak_activation_bytes == rlflow::memory_profile(g).peak_activation_bytes);
    CHECK(result.peak_activation_bytes > 0);
}

}  // namespace

TEST_CASE("peak activation bytes agree with memory_profile") {
    SUBCASE("a conv net with weights, a residual branch and a view") {
        SmallNet net;
        check_peak_matches_profile(net.g);
    }
    SUBCASE("a chain through views: the documented 2 KiB example") {
        Graph g;
        const auto x = g.add_input("x", f32({256}));
        const auto a = g.add_node(OpKind::Relu, {{x, 0}});
        const auto r = g.add_node(OpKind::Reshape, {{a, 0}}, {{"shape", Ints{16, 16}}});
        const auto b = g.add_node(OpKind::Tanh, {{r, 0}});
        const auto c = g.add_node(OpKind::Sigmoid, {{b, 0}});
        g.add_output({c, 0});
        const auto result = Executor{}.run(g, rlflow::exec::random_inputs(g, 6));
        CHECK(result.peak_activation_bytes == 2048);
        CHECK(rlflow::memory_profile(g).peak_activation_bytes == 2048);
    }
    SUBCASE("split parts nobody reads and an unused input are freed at once") {
        Graph g;
        const auto x = g.add_input("x", f32({4, 64}));
        const auto unused = g.add_input("unused", f32({16}));
        (void)unused;
        const auto parts = g.add_node(OpKind::Split, {{x, 0}}, {{"split", Ints{1, 3}}});
        const auto y = g.add_node(OpKind::Relu, {{parts, 0}});
        const auto z = g.add_node(OpKind::Tanh, {{y, 0}});
        const auto v = g.add_node(OpKind::Sigmoid, {{z, 0}});
        g.add_output({v, 0});
        check_peak_matches_profile(g);
        // While Split runs, x and both parts are live (2 KiB); the unused input is gone.
        // Had it or the unread part been kept, Split's step would need 2112 bytes.
        CHECK(rlflow::memory_profile(g).peak_activation_bytes == 2048);
    }
    SUBCASE("views of views, of weights and of graph inputs") {
        Graph g;
        const auto x = g.add_input("x", f32({6, 4}));
        const auto w = g.add_weight("w", f32({24}));
        const auto wr = g.add_node(OpKind::Reshape, {{w, 0}}, {{"shape", Ints{4, 6}}});
        const auto xi = g.add_node(OpKind::Identity, {{x, 0}});
        const auto xf = g.add_node(OpKind::Flatten, {{xi, 0}});
        const auto m = g.add_node(OpKind::MatMul, {{xf, 0}, {wr, 0}});
        const auto t = g.add_node(OpKind::Transpose, {{m, 0}});
        const auto s = g.add_node(OpKind::Add, {{t, 0}, {t, 0}});
        g.add_output({s, 0});
        g.add_output({xi, 0});
        rlflow::exec::fill_random_weights(g, 8);
        check_peak_matches_profile(g);
    }
}

TEST_CASE("zero-size tensors flow through reductions without being read") {
    Graph g;
    const auto x = g.add_input("x", f32({2, 0}));
    const auto softmax = g.add_node(OpKind::Softmax, {{x, 0}});
    const auto pooled = g.add_node(OpKind::ReduceMean, {{softmax, 0}}, {{"axes", Ints{0}}});
    g.add_output({pooled, 0});
    const std::vector<Tensor> inputs{Tensor(f32({2, 0}))};
    const auto result = Executor{}.run(g, inputs);
    CHECK(result.outputs.at(0).shape() == Shape{1, 0});
    CHECK(result.outputs.at(0).floats().empty());
}
