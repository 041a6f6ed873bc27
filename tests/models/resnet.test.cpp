#include "model_facts.hpp"

#include <rlflow/models/resnet.hpp>

#include <doctest/doctest.h>

using namespace rlflow;
using namespace model_facts;
using Ints = std::vector<std::int64_t>;

TEST_CASE("resnet50 matches torchvision: 53 convolutions, 53 batch norms and 25,557,032 parameters") {
    const Graph g = models::resnet50();
    CHECK_NOTHROW(g.validate());
    CHECK(count(g, OpKind::Conv2D) == 53);
    CHECK(count(g, OpKind::BatchNormalization) == 53);
    CHECK(count(g, OpKind::Add) == 16);
    CHECK(count(g, OpKind::Relu) == 49);
    CHECK(count(g, OpKind::Gemm) == 1);
    CHECK(torchvision_parameters(g) == 25'557'032);
    CHECK(output_shape(g) == Shape{1, 1000});
}

TEST_CASE("resnet50 stages end at 56, 28, 14 and 7 pixels with 256 to 2048 channels") {
    const Graph g = models::resnet50();
    CHECK(shape_of(g, "maxpool") == Shape{1, 64, 56, 56});
    CHECK(shape_of(g, "layer1.2.relu_2") == Shape{1, 256, 56, 56});
    CHECK(shape_of(g, "layer2.3.relu_2") == Shape{1, 512, 28, 28});
    CHECK(shape_of(g, "layer3.5.relu_2") == Shape{1, 1024, 14, 14});
    CHECK(shape_of(g, "layer4.2.relu_2") == Shape{1, 2048, 7, 7});
    // torchvision v1.5: the stride sits on the 3x3 convolution, not the first 1x1.
    CHECK(ints_of(g, "layer2.0.conv1", "strides") == Ints{1, 1});
    CHECK(ints_of(g, "layer2.0.conv2", "strides") == Ints{2, 2});
    CHECK(ints_of(g, "layer2.0.downsample.0", "strides") == Ints{2, 2});
}

TEST_CASE("resnet stem is a 7x7 stride-2 convolution and a padded 3x3 stride-2 max pool") {
    const Graph g = models::resnet18();
    CHECK(ints_of(g, "conv1", "kernel_shape") == Ints{7, 7});
    CHECK(ints_of(g, "conv1", "pads") == Ints{3, 3, 3, 3});
    CHECK(ints_of(g, "maxpool", "pads") == Ints{1, 1, 1, 1});
    CHECK(node_named(g, "conv1").inputs.size() == 2);  // no bias
    CHECK(node_named(g, "bn1").attributes.get_float("epsilon", 0) == doctest::Approx(1e-5));
}

TEST_CASE("resnet18 has 20 convolutions, 8 residual adds and 11,689,512 parameters") {
    const Graph g = models::resnet18();
    CHECK_NOTHROW(g.validate());
    CHECK(count(g, OpKind::Conv2D) == 20);
    CHECK(count(g, OpKind::BatchNormalization) == 20);
    CHECK(count(g, OpKind::Add) == 8);
    CHECK(torchvision_parameters(g) == 11'689'512);
    CHECK(shape_of(g, "layer4.1.relu_1") == Shape{1, 512, 7, 7});
    CHECK(output_shape(g) == Shape{1, 1000});
}

TEST_CASE("resnext50 uses 32-group 3x3 convolutions of widths 128 to 1024") {
    const Graph g = models::resnext50();
    CHECK_NOTHROW(g.validate());
    CHECK(count(g, OpKind::Conv2D) == 53);
    CHECK(torchvision_parameters(g) == 25'028'904);
    const std::pair<const char*, std::int64_t> widths[]
        = {{"layer1.0.conv2", 128}, {"layer2.0.conv2", 256}, {"layer3.0.conv2", 512}, {"layer4.0.conv2", 1024}};
    for (const auto& [name, width] : widths) {
        CAPTURE(name);
        const Node& conv = node_named(g, name);
        CHECK(conv.attributes.get_int("group", 0) == 32);
        CHECK(g.type(conv.inputs[1]).shape == Shape{width, width / 32, 3, 3});
    }
    CHECK(output_shape(g) == Shape{1, 1000});
}

TEST_CASE("resnet classifier is a Gemm with transB over the pooled 2048 features") {
    const Graph g = models::resnet50(4);
    const Node& fc = node_named(g, "fc");
    CHECK(fc.op == OpKind::Gemm);
    CHECK(fc.attributes.get_int("transB", 0) == 1);
    CHECK(g.type(fc.inputs[0]).shape == Shape{4, 2048});
    CHECK(g.type(fc.inputs[1]).shape == Shape{1000, 2048});
    CHECK(g.node(fc.inputs[1].node).name == "fc.weight");
    CHECK(g.node(fc.inputs[2].node).name == "fc.bias");
    CHECK(output_shape(g) == Shape{4, 1000});
}

TEST_CASE("resnet weights carry torchvision's parameter names") {
    const Graph g = models::resnet50();
    const Node& bn = node_named(g, "layer1.0.bn1");
    REQUIRE(bn.inputs.size() == 5);
    CHECK(g.node(bn.inputs[1].node).name == "layer1.0.bn1.weight");
    CHECK(g.node(bn.inputs[2].node).name == "layer1.0.bn1.bias");
    CHECK(g.node(bn.inputs[3].node).name == "layer1.0.bn1.running_mean");
    CHECK(g.node(bn.inputs[4].node).name == "layer1.0.bn1.running_var");
    CHECK(g.node(node_named(g, "layer1.0.downsample.0").inputs[1].node).name == "layer1.0.downsample.0.weight");
}
