#include "model_facts.hpp"

#include <rlflow/models/nasnet.hpp>

#include <doctest/doctest.h>

using namespace rlflow;
using namespace model_facts;
using Ints = std::vector<std::int64_t>;

TEST_CASE("nasnet_a has 18 cells of 12 convolutions each, 90 of them depthwise") {
    const Graph g = models::nasnet_a();
    CHECK_NOTHROW(g.validate());
    CHECK(count(g, OpKind::Conv2D) == 216);
    std::size_t depthwise = 0;
    for (const Node& n : g.nodes())
        if (n.op == OpKind::Conv2D && n.attributes.get_int("group", 1) > 1) {
            ++depthwise;
            CHECK(n.attributes.get_int("group", 1) == g.type(n.inputs[0]).shape[1]);
        }
    CHECK(depthwise == 90);
    CHECK(count(g, OpKind::Concat) == 18);
    CHECK(count(g, OpKind::Add) == 90);  // 5 per cell
    CHECK(count(g, OpKind::BatchNormalization) == 0);
    CHECK(output_shape(g) == Shape{1, 5120, 7, 7});
}

TEST_CASE("nasnet cells concatenate five sums and reductions halve the map as C doubles") {
    const Graph g = models::nasnet_a();
    CHECK(node_named(g, "stage1.normal0.concat").inputs.size() == 5);
    CHECK(shape_of(g, "stage1.normal4.concat") == Shape{1, 640, 56, 56});
    CHECK(shape_of(g, "stage1.reduction.concat") == Shape{1, 1280, 28, 28});
    CHECK(shape_of(g, "stage2.normal0.concat") == Shape{1, 1280, 28, 28});
    CHECK(shape_of(g, "stage2.reduction.concat") == Shape{1, 2560, 14, 14});
    CHECK(shape_of(g, "stage3.reduction.concat") == Shape{1, 5120, 7, 7});
    CHECK(shape_of(g, "stage2.normal1.squeeze") == Shape{1, 256, 28, 28});
}

TEST_CASE("nasnet SAME padding puts the odd pixel at the bottom right of strided windows") {
    const Graph g = models::nasnet_a();
    CHECK(ints_of(g, "stage1.reduction.comb0.left.depthwise", "kernel_shape") == Ints{7, 7});
    CHECK(ints_of(g, "stage1.reduction.comb0.left.depthwise", "pads") == Ints{2, 2, 3, 3});
    CHECK(ints_of(g, "stage1.reduction.comb0.right.depthwise", "pads") == Ints{1, 1, 2, 2});
    CHECK(ints_of(g, "stage1.reduction.comb1.left", "pads") == Ints{0, 0, 1, 1});
    CHECK(ints_of(g, "stage1.normal0.comb0.left.depthwise", "pads") == Ints{1, 1, 1, 1});
    CHECK(node_named(g, "stage1.normal0.comb2.left").attributes.get_int("count_include_pad", 0) == 1);
}
