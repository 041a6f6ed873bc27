#include "support.hpp"

#include <rlflow/rewrite/soundness.hpp>

using namespace rewrite_test;

namespace {

/// y = relu(x @ w + b)
Graph dense(bool fused_as_gemm) {
    Graph g;
    const auto x = g.add_input("x", f32({3, 4}));
    const auto w = g.add_weight("w", f32({4, 5}));
    const auto b = g.add_weight("b", f32({5}));
    NodeId pre;
    if (fused_as_gemm) {
        pre = g.add_node(OpKind::Gemm, {{x, 0}, {w, 0}, {b, 0}});
    } else {
        const auto m = g.add_node(OpKind::MatMul, {{x, 0}, {w, 0}});
        pre = g.add_node(OpKind::Add, {{m, 0}, {b, 0}});
    }
    g.add_output({g.add_node(OpKind::Relu, {{pre, 0}}), 0}, "y");
    return g;
}
}  // namespace

TEST_CASE("an equivalent rewrite is reported equal, sharing weights by name") {
    const auto report = rewrite::check_equivalence(dense(false), dense(true));
    CHECK(report.equal);
    CHECK(report.max_abs_diff < 1e-5);
    CHECK_FALSE(report.counterexample.has_value());
}

TEST_CASE("graphs whose runs would need more memory than the limit are refused before anything is allocated") {
    rewrite::EquivalenceOptions options;
    // Each of the two runs holds x (48 B), the weights (100 B) and two activations of 60 B.
    options.memory_limit_bytes = 64;
    CHECK_THROWS_WITH_AS((void)rewrite::check_equivalence(dense(false), dense(true), options), doctest::Contains("of memory, more than the limit"),
                         resource_error);
    options.memory_limit_bytes = 1 << 20;
    CHECK(rewrite::check_equivalence(dense(false), dense(true), options).equal);
    // By default the limit is half this machine's memory: a 10^6 x 10^6 input is refused.
    Graph huge;
    const auto x = huge.add_input("x", f32({1000000, 1000000}));
    huge.add_output({huge.add_node(OpKind::Relu, {{x, 0}}), 0}, "y");
    CHECK_THROWS_AS((void)rewrite::check_equivalence(huge, huge), resource_error);
}

TEST_CASE("an unsound rewrite is caught with a counterexample naming the inputs") {
    Graph wrong = dense(true);
    // Replace the Relu by a Sigmoid: same shapes, different function.
    const NodeId relu = wrong.outputs()[0].value.node;
    const NodeId gemm = wrong.node(relu).inputs[0].node;
    (void)wrong.replace_node(relu, OpKind::Sigmoid, {{gemm, 0}});
    const auto report = rewrite::check_equivalence(dense(false), wrong);
    CHECK_FALSE(report.equal);
    REQUIRE(report.counterexample.has_value());
    CHECK(report.counterexample->count("x") == 1);
    CHECK(report.counterexample->at("x").shape() == Shape{3, 4});
    CHECK(report.max_abs_diff > 1e-3);
    CHECK(report.detail.find("output 0") != std::string::npos);
}

TEST_CASE("a different output count or type is unequal without running") {
    Graph two = dense(false);
    two.add_output(two.outputs()[0].value, "y2");
    const auto report = rewrite::check_equivalence(dense(false), two);
    CHECK_FALSE(report.equal);
    CHECK(report.detail == "1 outputs vs 2");
}

TEST_CASE("a zoo model is equivalent to itself on every trial") {
    const Graph g = models::build_zoo_model("squeezenet1_1");
    rewrite::EquivalenceOptions options;
    options.trials = 2;
    const auto report = rewrite::check_equivalence(g, g, options);
    CHECK(report.equal);
    CHECK(report.max_abs_diff == 0.0);
}
