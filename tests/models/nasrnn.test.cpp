#include "model_facts.hpp"

#include <rlflow/models/nasrnn.hpp>

#include <doctest/doctest.h>

using namespace rlflow;
using namespace model_facts;

TEST_CASE("nasrnn unrolls 5 steps of 8 combines with 46 ops each") {
    const Graph g = models::nasrnn();
    CHECK_NOTHROW(g.validate());
    CHECK(g.inputs().size() == 5);
    CHECK(count(g, OpKind::MatMul) == 80);
    CHECK(count(g, OpKind::Add) == 55);  // 8 combines + 3 gates per step
    CHECK(count(g, OpKind::Mul) == 20);
    CHECK(count(g, OpKind::Sigmoid) == 25);
    CHECK(count(g, OpKind::Tanh) == 40);
    CHECK(count(g, OpKind::Relu) == 10);
    CHECK(graph_statistics(g).op_nodes == 5 * 46);
    CHECK(torchvision_parameters(g) == 80 * 512 * 512 + 512);
    CHECK(output_shape(g) == Shape{1, 512});
}

TEST_CASE("each nasrnn combine adds a projection of the step input and of the state") {
    const Graph g = models::nasrnn();
    const Node& combine = node_named(g, "step2.combine5");
    CHECK(combine.op == OpKind::Add);
    const Node& x_matmul = g.node(combine.inputs[0].node);
    const Node& h_matmul = g.node(combine.inputs[1].node);
    CHECK(g.node(x_matmul.inputs[0].node).name == "x2");
    CHECK(g.node(h_matmul.inputs[0].node).name == "step1.state");
    CHECK(g.type(h_matmul.inputs[1]).shape == Shape{512, 512});
    // The state feeds the h-projection of each of the next step's 8 combines.
    CHECK(g.output({node_named(g, "step1.state").id, 0}).uses.size() == 8);
}

TEST_CASE("nasrnn broadcasts its learned initial state over the batch") {
    const Graph g = models::nasrnn(8);
    CHECK_NOTHROW(g.validate());
    CHECK(shape_of(g, "state0") == Shape{1, 512});
    CHECK(shape_of(g, "step0.combine0.h_matmul") == Shape{1, 512});
    CHECK(shape_of(g, "step0.combine0") == Shape{8, 512});
    CHECK(output_shape(g) == Shape{8, 512});
}
