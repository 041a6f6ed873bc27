#include "../tensor_types.hpp"
#include <rlflow/core/canonical.hpp>
#include <rlflow/core/graph.hpp>
#include <rlflow/core/memory.hpp>

#include <doctest/doctest.h>

#include <utility>

using namespace rlflow;

namespace {

/// x -> Conv(3x3, pad 1) -> Relu -> output, with a weight.
struct SmallConvNet {
    Graph g;
    NodeId x, w, conv, relu;
    SmallConvNet() {
        x = g.add_input("x", f32({1, 3, 8, 8}));
        w = g.add_weight("w", f32({4, 3, 3, 3}));
        conv = g.add_node(OpKind::Conv2D, {{x, 0}, {w, 0}}, {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}, "conv");
        relu = g.add_node(OpKind::Relu, {{conv, 0}}, {}, "relu");
        g.add_output({relu, 0}, "y");
    }
};
}  // namespace

TEST_CASE("add_node infers shapes and fills default attributes") {
    SmallConvNet net;
    CHECK(net.g.type({net.conv, 0}).shape == Shape{1, 4, 8, 8});
    const auto& a = net.g.node(net.conv).attributes;
    CHECK(a.get_ints("kernel_shape") == std::vector<std::int64_t>{3, 3});
    CHECK(a.get_ints("strides") == std::vector<std::int64_t>{1, 1});
    CHECK(a.get_int("group", -1) == 1);
    CHECK(net.g.num_nodes() == 4);
    CHECK_NOTHROW(net.g.validate());
}

TEST_CASE("shape errors name the node and op and show both shapes") {
    Graph g;
    const auto a = g.add_input("a", f32({32, 64}));
    const auto b = g.add_input("b", f32({32, 10}));
    CHECK_THROWS_WITH_AS(g.add_node(OpKind::MatMul, {{a, 0}, {b, 0}}, {}, "fc1"),
                         "[rlflow.shape_error] MatMul node 'fc1' (#2): inner dimensions differ: (32,64) x (32,10)",
                         shape_error);
}

TEST_CASE("matmul broadcasts batch dimensions and handles vectors like numpy") {
    Graph g;
    const auto a = g.add_input("a", f32({2, 1, 5, 3}));
    const auto b = g.add_input("b", f32({4, 3, 7}));
    const auto v = g.add_input("v", f32({3}));
    CHECK(g.type({g.add_node(OpKind::MatMul, {{a, 0}, {b, 0}}), 0}).shape == Shape{2, 4, 5, 7});
    CHECK(g.type({g.add_node(OpKind::MatMul, {{a, 0}, {v, 0}}), 0}).shape == Shape{2, 1, 5});
    CHECK(g.type({g.add_node(OpKind::MatMul, {{v, 0}, {b, 0}}), 0}).shape == Shape{4, 7});
}

TEST_CASE("reshape resolves 0 and -1 into its normalised target") {
    Graph g;
    const auto x = g.add_input("x", f32({2, 3, 4}));
    const auto r = g.add_node(OpKind::Reshape, {{x, 0}}, {{"shape", std::vector<std::int64_t>{0, -1}}});
    CHECK(g.node(r).attributes.get_ints("shape") == std::vector<std::int64_t>{2, 12});
    CHECK(g.type({r, 0}).shape == Shape{2, 12});
    CHECK_THROWS_AS(g.add_node(OpKind::Reshape, {{x, 0}}, {{"shape", std::vector<std::int64_t>{5, -1}}}), shape_error);
}

TEST_CASE("pool and conv follow ONNX window arithmetic including ceil mode") {
    Graph g;
    const auto x = g.add_input("x", f32({1, 1, 4, 4}));
    Attributes pool{{"kernel_shape", std::vector<std::int64_t>{3, 3}}, {"strides", std::vector<std::int64_t>{2, 2}}};
    CHECK(g.type({g.add_node(OpKind::MaxPool, {{x, 0}}, pool), 0}).shape == Shape{1, 1, 1, 1});
    pool.set("ceil_mode", std::int64_t{1});
    CHECK(g.type({g.add_node(OpKind::MaxPool, {{x, 0}}, pool), 0}).shape == Shape{1, 1, 2, 2});
    const auto w = g.add_weight("w", f32({2, 1, 2, 2}));
    Attributes conv{{"strides", std::vector<std::int64_t>{2, 2}}, {"dilations", std::vector<std::int64_t>{2, 2}},
                    {"pads", std::vector<std::int64_t>{1, 0, 1, 0}}};
    // H: (4 + 2 - 3) / 2 + 1 = 2; W: (4 - 3) / 2 + 1 = 1
    CHECK(g.type({g.add_node(OpKind::Conv2D, {{x, 0}, {w, 0}}, conv), 0}).shape == Shape{1, 2, 2, 1});
}

TEST_CASE("split, concat and transpose infer their shapes and reject misfits") {
    Graph g;
    const auto x = g.add_input("x", f32({2, 6}));
    const auto s = g.add_node(OpKind::Split, {{x, 0}}, {{"axis", std::int64_t{1}}, {"split", std::vector<std::int64_t>{2, 4}}});
    REQUIRE(g.node(s).outputs.size() == 2);
    CHECK(g.type({s, 1}).shape == Shape{2, 4});
    const auto c = g.add_node(OpKind::Concat, {{s, 1}, {s, 0}}, {{"axis", std::int64_t{-1}}});
    CHECK(g.type({c, 0}).shape == Shape{2, 6});
    const auto t = g.add_node(OpKind::Transpose, {{c, 0}});
    CHECK(g.node(t).attributes.get_ints("perm") == std::vector<std::int64_t>{1, 0});
    CHECK(g.type({t, 0}).shape == Shape{6, 2});
    CHECK_THROWS_AS(g.add_node(OpKind::Concat, {{x, 0}, {t, 0}}, {{"axis", std::int64_t{0}}}), shape_error);
    CHECK_THROWS_WITH_AS(g.add_node(OpKind::Concat, {{x, 0}}), doctest::Contains("missing required attribute 'axis'"),
                         graph_error);
}

TEST_CASE("arity and unknown attributes are graph errors") {
    Graph g;
    const auto x = g.add_input("x", f32({2, 2}));
    CHECK_THROWS_WITH_AS(g.add_node(OpKind::Add, {{x, 0}}, {}, "add"), doctest::Contains("Add node 'add'"), graph_error);
    CHECK_THROWS_WITH_AS(g.add_node(OpKind::Relu, {{x, 0}}, {{"alpha", 1.0}}), doctest::Contains("unknown attribute 'alpha'"),
                         graph_error);
    CHECK_THROWS_AS(g.add_node(OpKind::Relu, {{NodeId{99}, 0}}), graph_error);
}

TEST_CASE("rewiring consumers keeps use lists consistent and re-infers downstream") {
    SmallConvNet net;
    Graph& g = net.g;
    const auto sig = g.add_node(OpKind::Sigmoid, {{net.conv, 0}}, {}, "sig");
    g.replace_all_uses({net.relu, 0}, {sig, 0});
    CHECK(g.outputs()[0].value == TensorRef{sig, 0});
    CHECK(g.output({net.relu, 0}).uses.empty());
    g.remove_node(net.relu);
    CHECK_FALSE(g.contains(net.relu));
    CHECK_NOTHROW(g.validate());
    // Changing the input shape through set_input propagates to the output.
    const auto x2 = g.add_input("x2", f32({1, 3, 16, 16}));
    g.set_input(net.conv, 0, {x2, 0});
    CHECK(g.type({sig, 0}).shape == Shape{1, 4, 16, 16});
    CHECK_NOTHROW(g.validate());
}

TEST_CASE("a node that is still used cannot be removed") {
    SmallConvNet net;
    CHECK_THROWS_WITH_AS(net.g.remove_node(net.conv), doctest::Contains("Conv2D node 'conv'"), graph_error);
    CHECK_THROWS_AS(net.g.remove_node(net.relu), graph_error);  // a graph output
}

TEST_CASE("replace_node takes over name, uses and outputs") {
    SmallConvNet net;
    const auto fresh = net.g.replace_node(net.relu, OpKind::Tanh, {{net.conv, 0}});
    CHECK(net.g.node(fresh).name == "relu");
    CHECK(net.g.outputs()[0].value.node == fresh);
    CHECK_NOTHROW(net.g.validate());
}

TEST_CASE("topological order is deterministic and cycles are reported by node") {
    SmallConvNet net;
    const auto order = net.g.topological_order();
    REQUIRE(order.size() == 4);
    CHECK(order.back() == net.relu);
    Graph g;
    const auto x = g.add_input("x", f32({2}));
    const auto a = g.add_node(OpKind::Relu, {{x, 0}}, {}, "a");
    const auto b = g.add_node(OpKind::Tanh, {{a, 0}}, {}, "b");
    g.set_input(a, 0, {b, 0});
    CHECK_THROWS_WITH_AS(g.validate(), doctest::Contains("lies on a cycle"), graph_error);
}

TEST_CASE("remove_dead_nodes drops unreachable computation but keeps inputs") {
    SmallConvNet net;
    net.g.add_node(OpKind::Tanh, {{net.conv, 0}}, {}, "dead1");
    const auto unused_input = net.g.add_input("unused", f32({1}));
    CHECK(net.g.remove_dead_nodes() == 1);
    CHECK(net.g.contains(unused_input));
    CHECK(net.g.num_nodes() == 5);
}

TEST_CASE("canonical form ignores node ids and insertion order") {
    Graph a;
    {
        const auto x = a.add_input("x", f32({4, 4}));
        const auto w1 = a.add_weight("w1", f32({4, 4}));
        const auto w2 = a.add_weight("w2", f32({4, 4}));
        const auto m1 = a.add_node(OpKind::MatMul, {{x, 0}, {w1, 0}});
        const auto m2 = a.add_node(OpKind::MatMul, {{x, 0}, {w2, 0}});
        a.add_output({a.add_node(OpKind::Add, {{m1, 0}, {m2, 0}}), 0}, "y");
    }
    Graph b;  // same graph, built in another order with other node names
    {
        const auto w2 = b.add_weight("w2", f32({4, 4}));
        const auto x = b.add_input("x", f32({4, 4}));
        const auto m2 = b.add_node(OpKind::MatMul, {{x, 0}, {w2, 0}}, {}, "second");
        const auto w1 = b.add_weight("w1", f32({4, 4}));
        const auto m1 = b.add_node(OpKind::MatMul, {{x, 0}, {w1, 0}}, {}, "first");
        b.add_output({b.add_node(OpKind::Add, {{m1, 0}, {m2, 0}}), 0}, "y");
    }
    CHECK(canonical_form(a) == canonical_form(b));
    CHECK(canonical_hash(a) == canonical_hash(b));
    Graph c;  // operands of the Add swapped: a different graph structurally
    {
        const auto x = c.add_input("x", f32({4, 4}));
        const auto w1 = c.add_weight("w1", f32({4, 4}));
        const auto w2 = c.add_weight("w2", f32({4, 4}));
        const auto m1 = c.add_node(OpKind::MatMul, {{x, 0}, {w1, 0}});
        const auto m2 = c.add_node(OpKind::MatMul, {{w2, 0}, {x, 0}});
        c.add_output({c.add_node(OpKind::Add, {{m1, 0}, {m2, 0}}), 0}, "y");
    }
    CHECK_FALSE(canonical_form(a) == canonical_form(c));
}

TEST_CASE("canonical form treats duplicated computations interchangeably") {
    auto build = [](bool swap) {
        Graph g;
        const auto x = g.add_input("x", f32({3}));
        const auto r1 = g.add_node(OpKind::Relu, {{x, 0}});
        const auto r2 = g.add_node(OpKind::Relu, {{x, 0}});
        const auto t = g.add_node(OpKind::Tanh, {{swap ? r2 : r1, 0}});
        const auto s = g.add_node(OpKind::Sigmoid, {{swap ? r1 : r2, 0}});
        g.add_output({t, 0}, "t");
        g.add_output({s, 0}, "s");
        return g;
    };
    CHECK(canonical_form(build(false)) == canonical_form(build(true)));
}

TEST_CASE("canonical form knows constants by their value, not their name") {
    // Rewrites name the constants they add after node ids; one graph reached by two rewrite
    // orders must have one form, as the latency cache and deduplication rely on.
    auto build = [](const char* name, float value) {
        Graph g;
        const auto x = g.add_input("x", f32({2}));
        const auto c = g.add_constant(name, Tensor::from_floats(Shape{2}, {value, value}));
        g.add_output({g.add_node(OpKind::Mul, {{x, 0}, {c, 0}}), 0}, "y");
        return g;
    };
    CHECK(canonical_form(build("Constant_3", 2.0F)) == canonical_form(build("Constant_17", 2.0F)));
    CHECK_FALSE(canonical_form(build("Constant_3", 2.0F)) == canonical_form(build("Constant_3", 3.0F)));
    // Weights and inputs are still known by name: their values are the model's, not the rule's.
    Graph a, b;
    for (auto [g, name] : {std::pair{&a, "w1"}, std::pair{&b, "w2"}}) {
        const auto x = g->add_input("x", f32({2}));
        const auto w = g->add_weight(name, f32({2}));
        g->add_output({g->add_node(OpKind::Mul, {{x, 0}, {w, 0}}), 0}, "y");
    }
    CHECK_FALSE(canonical_form(a) == canonical_form(b));
}

TEST_CASE("canonical form distinguishes attributes and input names") {
    auto build = [](std::int64_t axis, const char* input) {
        Graph g;
        const auto x = g.add_input(input, f32({2, 3}));
        g.add_output({g.add_node(OpKind::Softmax, {{x, 0}}, {{"axis", axis}}), 0}, "y");
        return g;
    };
    CHECK_FALSE(canonical_form(build(1, "x")) == canonical_form(build(0, "x")));
    CHECK_FALSE(canonical_form(build(1, "x")) == canonical_form(build(1, "z")));
    CHECK(canonical_form(build(1, "x")) == canonical_form(build(-1, "x")));  // axes are normalised
}

TEST_CASE("memory profile frees tensors after their last use and aliases views") {
    Graph g;
    const auto x = g.add_input("x", f32({256}));                             // 1 KiB
    const auto a = g.add_node(OpKind::Relu, {{x, 0}});                        // +1 KiB
    const auto r = g.add_node(OpKind::Reshape, {{a, 0}}, {{"shape", std::vector<std::int64_t>{16, 16}}});  // view
    const auto b = g.add_node(OpKind::Tanh, {{r, 0}});                        // +1 KiB, frees a
    const auto c = g.add_node(OpKind::Sigmoid, {{b, 0}});                     // +1 KiB, frees b
    g.add_output({c, 0}, "y");
    const auto w = g.add_weight("w", f32({10}));
    (void)w;
    const MemoryProfile m = memory_profile(g);
    // x and a are live while Relu runs (2 KiB); x is freed, then a + b (2 KiB), then b + c.
    CHECK(m.peak_activation_bytes == 2048);
    CHECK(m.weight_bytes == 40);
}

TEST_CASE("ceil-mode pooling drops a last window that would start in the end padding") {
    Graph g;
    const auto x = g.add_input("x", f32({1, 1, 5, 5}));
    // span = 5 + 1 + 1 - 2 = 5; ceil(5/2) + 1 = 4 windows, but the 4th starts at 6 >= 5 + 1.
    Attributes pool{{"kernel_shape", std::vector<std::int64_t>{2, 2}}, {"strides", std::vector<std::int64_t>{2, 2}},
                    {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}, {"ceil_mode", std::int64_t{1}}};
    CHECK(g.type({g.add_node(OpKind::MaxPool, {{x, 0}}, pool), 0}).shape == Shape{1, 1, 3, 3});
}

TEST_CASE("memory profile frees outputs nobody reads as soon as they exist") {
    Graph g;
    const auto x = g.add_input("x", f32({64}));  // 256 B
    const auto s = g.add_node(OpKind::Split, {{x, 0}}, {{"split", std::vector<std::int64_t>{32, 32}}});  // 2 x 128 B
    const auto r = g.add_node(OpKind::Relu, {{s, 0}});  // 128 B
    g.add_output({r, 0}, "y");
    // Split runs with x live: 256 + 256 = 512; the unread half and x are then freed.
    CHECK(memory_profile(g).peak_activation_bytes == 512);
}
