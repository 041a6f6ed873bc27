// Which nodes are weight-only: known before the model runs, so folded ahead of time and
// priced at zero. A weight without data is a run-time input; an opaque op never folds.
#include "../tensor_types.hpp"
#include <rlflow/core/memory.hpp>

#include <doctest/doctest.h>

#include <memory>

using namespace rlflow;

namespace {


TensorPtr zeros(const Shape& s) { return std::make_shared<const Tensor>(s); }

}  // namespace

TEST_CASE("constants, weights with data and core ops computed from them alone are weight-only") {
    Graph g;
    const NodeId x = g.add_input("x", f32({1, 4}));
    const NodeId w = g.add_weight("W", f32({4, 4}), zeros({4, 4}));
    const NodeId c = g.add_constant("c", Tensor::from_floats({1}, {2.0f}));
    const NodeId scaled = g.add_node(OpKind::Mul, {{w, 0}, {c, 0}}, {}, "scaled");
    const NodeId y = g.add_node(OpKind::MatMul, {{x, 0}, {scaled, 0}}, {}, "y");
    g.add_output({y, 0});

    const std::vector<char> marks = weight_only_nodes(g);
    CHECK(marks[w.value]);
    CHECK(marks[c.value]);
    CHECK(marks[scaled.value]);
    CHECK_FALSE(marks[x.value]);
    CHECK_FALSE(marks[y.value]);

    // The rule reads its inputs' status only through the callable it is given.
    const Node& mul = g.node(scaled);
    CHECK(is_weight_only(mul, [](NodeId) { return true; }));
    CHECK_FALSE(is_weight_only(mul, [](NodeId) { return false; }));
    CHECK_FALSE(is_weight_only(mul, [&](NodeId producer) { return producer == w; }));
}

TEST_CASE("a weight without data is a run-time input, so nothing computed from it is weight-only") {
    Graph g;
    const NodeId w = g.add_weight("W", f32({4, 4}));
    const NodeId c = g.add_constant("c", Tensor::from_floats({1}, {2.0f}));
    const NodeId scaled = g.add_node(OpKind::Mul, {{w, 0}, {c, 0}}, {}, "scaled");
    const NodeId rectified = g.add_node(OpKind::Relu, {{scaled, 0}}, {}, "rectified");
    g.add_output({rectified, 0});

    const std::vector<char> marks = weight_only_nodes(g);
    CHECK_FALSE(marks[w.value]);
    CHECK(marks[c.value]);
    CHECK_FALSE(marks[scaled.value]);
    CHECK_FALSE(marks[rectified.value]);

    g.set_weight_data(w, zeros({4, 4}));
    const std::vector<char> with_data = weight_only_nodes(g);
    CHECK(with_data[w.value]);
    CHECK(with_data[scaled.value]);
    CHECK(with_data[rectified.value]);
}

TEST_CASE("a zero-input opaque op such as RandomNormal is not weight-only, nor is what reads it") {
    Graph g;
    const Attributes shape{{"shape", std::vector<std::int64_t>{2, 2}}};
    const NodeId noise = g.add_opaque("RandomNormal", "", {}, {f32({2, 2})}, shape, "noise");
    const NodeId w = g.add_weight("W", f32({2, 2}), zeros({2, 2}));
    const NodeId sum = g.add_node(OpKind::Add, {{noise, 0}, {w, 0}}, {}, "sum");
    g.add_output({sum, 0});

    const std::vector<char> marks = weight_only_nodes(g);
    CHECK_FALSE(marks[noise.value]);
    CHECK(marks[w.value]);
    CHECK_FALSE(marks[sum.value]);
}

TEST_CASE("an opaque op is not weight-only even when it reads weights alone") {
    Graph g;
    const NodeId w = g.add_weight("W", f32({2, 2}), zeros({2, 2}));
    const NodeId custom = g.add_opaque("Custom", "com.example", {{w, 0}, {}}, {f32({2, 2})}, {}, "custom");
    const NodeId rectified = g.add_node(OpKind::Relu, {{custom, 0}}, {}, "rectified");
    g.add_output({rectified, 0});

    const std::vector<char> marks = weight_only_nodes(g);
    CHECK(marks[w.value]);
    CHECK_FALSE(marks[custom.value]);
    CHECK_FALSE(marks[rectified.value]);
}

TEST_CASE("deployed memory counts a weight without data as weights and what it computes as activations") {
    // y = x @ (W * s) with W fed at run time: W * s is computed on every inference.
    Graph g;
    const NodeId x = g.add_input("x", f32({1, 8}));
    const NodeId w = g.add_weight("W", f32({8, 16}));
    const NodeId s = g.add_constant("s", Tensor::from_floats({1}, {0.5f}));
    const NodeId scaled = g.add_node(OpKind::Mul, {{w, 0}, {s, 0}});
    g.add_output({g.add_node(OpKind::MatMul, {{x, 0}, {scaled, 0}}), 0});
    constexpr std::int64_t float_bytes = 4;
    const std::int64_t x_bytes = 8 * float_bytes, y_bytes = 16 * float_bytes;
    const std::int64_t w_bytes = 8 * 16 * float_bytes, s_bytes = float_bytes, scaled_bytes = w_bytes;

    const MemoryProfile deployed = folded_memory_profile(g);
    CHECK(deployed.weight_bytes == w_bytes + s_bytes);  // nothing folds: W and s stay
    CHECK(deployed.peak_activation_bytes == x_bytes + scaled_bytes + y_bytes);  // x, W*s and y live together
    const MemoryProfile run = memory_profile(g);
    CHECK(deployed.weight_bytes == run.weight_bytes);
    CHECK(deployed.peak_activation_bytes == run.peak_activation_bytes);
}
