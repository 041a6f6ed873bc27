// The memory model: a graph run as it stands, and as deployed with weight-only ops folded.
#include "../tensor_types.hpp"
#include <rlflow/core/memory.hpp>

#include <doctest/doctest.h>

#include <memory>

using namespace rlflow;

namespace {
}  // namespace

TEST_CASE("folding weight-only ops turns their outputs into weights and takes them out of the activations") {
    // y = x @ (W * s): W * s reads weights alone. W has data (an initializer): a weight
    // without it is fed at run time and nothing computed from it folds (weight_only.test.cpp).
    Graph g;
    const NodeId x = g.add_input("x", f32({1, 8}));
    const NodeId w = g.add_weight("W", f32({8, 16}), std::make_shared<const Tensor>(Shape{8, 16}));
    const NodeId s = g.add_constant("s", Tensor::from_floats({1}, {0.5f}));
    const NodeId scaled = g.add_node(OpKind::Mul, {{w, 0}, {s, 0}});
    g.add_output({g.add_node(OpKind::MatMul, {{x, 0}, {scaled, 0}}), 0});
    const std::int64_t x_bytes = 8 * 4, y_bytes = 16 * 4, w_bytes = 8 * 16 * 4, s_bytes = 4;

    const std::vector<char> folded = weight_only_nodes(g);
    CHECK(folded[w.value]);
    CHECK(folded[s.value]);
    CHECK(folded[scaled.value]);
    CHECK_FALSE(folded[x.value]);

    const MemoryProfile run = memory_profile(g);
    CHECK(run.weight_bytes == w_bytes + s_bytes);
    CHECK(run.peak_activation_bytes == x_bytes + w_bytes + y_bytes);  // x, W*s and y live together

    const MemoryProfile deployed = folded_memory_profile(g);
    CHECK(deployed.weight_bytes == w_bytes);  // W*s replaces W and s
    CHECK(deployed.peak_activation_bytes == x_bytes + y_bytes);
}

TEST_CASE("a graph without weight-only ops has the same profile folded or not") {
    Graph g;
    const NodeId x = g.add_input("x", f32({2, 4}));
    const NodeId w = g.add_weight("W", f32({4, 4}));
    const NodeId m = g.add_node(OpKind::MatMul, {{x, 0}, {w, 0}});
    g.add_output({g.add_node(OpKind::Relu, {{m, 0}}), 0});
    const MemoryProfile run = memory_profile(g);
    const MemoryProfile deployed = folded_memory_profile(g);
    CHECK(run.weight_bytes == deployed.weight_bytes);
    CHECK(run.peak_activation_bytes == deployed.peak_activation_bytes);
    CHECK(run.peak_activation_bytes > 0);
}
