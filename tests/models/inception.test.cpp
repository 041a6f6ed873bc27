#include "model_facts.hpp"

#include <rlflow/models/inception.hpp>

#include <doctest/doctest.h>

using namespace rlflow;
using namespace model_facts;
using Ints = std::vector<std::int64_t>;

TEST_CASE("inception_v3 has torchvision's 94 convolutions and 23,834,568 parameters without aux logits") {
    const Graph g = models::inception_v3();
    CHECK_NOTHROW(g.validate());
    CHECK(count(g, OpKind::Conv2D) == 94);
    CHECK(count(g, OpKind::BatchNormalization) == 94);
    CHECK(count(g, OpKind::Relu) == 94);
    CHECK(count(g, OpKind::Concat) == 15);  // 11 modules + 2 inner concats in each InceptionE
    CHECK(count(g, OpKind::MaxPool) == 4);
    CHECK(torchvision_parameters(g) == 23'834'568);
    CHECK(output_shape(g) == Shape{1, 1000});
}

TEST_CASE("inception_v3 modules produce torchvision's channel counts and resolutions") {
    const Graph g = models::inception_v3();
    CHECK(g.type({g.inputs()[0], 0}).shape == Shape{1, 3, 299, 299});
    CHECK(shape_of(g, "maxpool2") == Shape{1, 192, 35, 35});
    CHECK(shape_of(g, "Mixed_5b.concat") == Shape{1, 256, 35, 35});
    CHECK(shape_of(g, "Mixed_5d.concat") == Shape{1, 288, 35, 35});
    CHECK(shape_of(g, "Mixed_6a.concat") == Shape{1, 768, 17, 17});
    CHECK(shape_of(g, "Mixed_6e.concat") == Shape{1, 768, 17, 17});
    CHECK(shape_of(g, "Mixed_7a.concat") == Shape{1, 1280, 8, 8});
    CHECK(shape_of(g, "Mixed_7c.concat") == Shape{1, 2048, 8, 8});
}

TEST_CASE("inception asymmetric kernels carry matching asymmetric pads") {
    const Graph g = models::inception_v3();
    CHECK(ints_of(g, "Mixed_6b.branch7x7_2.conv", "kernel_shape") == Ints{1, 7});
    CHECK(ints_of(g, "Mixed_6b.branch7x7_2.conv", "pads") == Ints{0, 3, 0, 3});
    CHECK(ints_of(g, "Mixed_6b.branch7x7_3.conv", "kernel_shape") == Ints{7, 1});
    CHECK(ints_of(g, "Mixed_6b.branch7x7_3.conv", "pads") == Ints{3, 0, 3, 0});
    CHECK(ints_of(g, "Mixed_7b.branch3x3_2a.conv", "kernel_shape") == Ints{1, 3});
    CHECK(ints_of(g, "Mixed_7b.branch3x3_2a.conv", "pads") == Ints{0, 1, 0, 1});
    CHECK(ints_of(g, "Mixed_7c.branch3x3dbl_3b.conv", "kernel_shape") == Ints{3, 1});
    CHECK(ints_of(g, "Mixed_7c.branch3x3dbl_3b.conv", "pads") == Ints{1, 0, 1, 0});
}

TEST_CASE("inception average pools are 3x3 stride 1 pad 1 and count the padding like PyTorch") {
    const Graph g = models::inception_v3();
    std::size_t pools = 0;
    for (const Node& n : g.nodes()) {
        if (n.op != OpKind::AveragePool) continue;
        ++pools;
        CAPTURE(n.name);
        CHECK(n.attributes.get_ints("kernel_shape") == Ints{3, 3});
        CHECK(n.attributes.get_ints("strides") == Ints{1, 1});
        CHECK(n.attributes.get_ints("pads") == Ints{1, 1, 1, 1});
        CHECK(n.attributes.get_int("count_include_pad", 0) == 1);
    }
    CHECK(pools == 9);  // 3 InceptionA + 4 InceptionC + 2 InceptionE
}

TEST_CASE("inception basic convolutions have no bias and batch norm epsilon 0.001") {
    const Graph g = models::inception_v3();
    for (const Node& n : g.nodes()) {
        if (n.op == OpKind::Conv2D) CHECK(n.inputs.size() == 2);
        if (n.op == OpKind::BatchNormalization) CHECK(n.attributes.get_float("epsilon", 0) == doctest::Approx(1e-3));
    }
}
