#include "model_facts.hpp"

#include <rlflow/models/squeezenet.hpp>

#include <doctest/doctest.h>

using namespace rlflow;
using namespace model_facts;

TEST_CASE("squeezenet1_1 has 26 biased convolutions, 8 fire concats and 1,235,496 parameters") {
    const Graph g = models::squeezenet1_1();
    CHECK_NOTHROW(g.validate());
    CHECK(count(g, OpKind::Conv2D) == 26);
    CHECK(count(g, OpKind::Relu) == 26);
    CHECK(count(g, OpKind::Concat) == 8);
    CHECK(count(g, OpKind::BatchNormalization) == 0);
    for (const Node& n : g.nodes())
        if (n.op == OpKind::Conv2D) CHECK(n.inputs.size() == 3);
    CHECK(torchvision_parameters(g) == 1'235'496);
    CHECK(output_shape(g) == Shape{1, 1000});
}

TEST_CASE("squeezenet max pools round up so the map shrinks 111, 55, 27, 13") {
    const Graph g = models::squeezenet1_1();
    std::size_t pools = 0;
    for (const Node& n : g.nodes())
        if (n.op == OpKind::MaxPool) {
            ++pools;
            CHECK(n.attributes.get_int("ceil_mode", 0) == 1);
        }
    CHECK(pools == 3);
    CHECK(shape_of(g, "features.1") == Shape{1, 64, 111, 111});
    CHECK(shape_of(g, "features.2") == Shape{1, 64, 55, 55});
    CHECK(shape_of(g, "features.5") == Shape{1, 128, 27, 27});
    CHECK(shape_of(g, "features.8") == Shape{1, 256, 13, 13});
    CHECK(shape_of(g, "features.12.concat") == Shape{1, 512, 13, 13});
    CHECK(shape_of(g, "classifier.3") == Shape{1, 1000, 1, 1});
}

TEST_CASE("a fire module squeezes then expands by 1x1 and padded 3x3 convolutions") {
    const Graph g = models::squeezenet1_1();
    CHECK(shape_of(g, "features.3.squeeze") == Shape{1, 16, 55, 55});
    CHECK(ints_of(g, "features.3.expand3x3", "pads") == std::vector<std::int64_t>{1, 1, 1, 1});
    const Node& concat = node_named(g, "features.3.concat");
    REQUIRE(concat.inputs.size() == 2);
    CHECK(g.node(concat.inputs[0].node).name == "features.3.expand1x1_activation");
    CHECK(g.node(concat.inputs[1].node).name == "features.3.expand3x3_activation");
    CHECK(concat.output_type().shape == Shape{1, 128, 55, 55});
}
