#include "model_facts.hpp"

#include <rlflow/models/vit.hpp>

#include <doctest/doctest.h>

using namespace rlflow;
using namespace model_facts;

TEST_CASE("vit_base matches torchvision vit_b_16: 86,567,656 parameters, 12 pre-norm layers") {
    const Graph g = models::vit_base();
    CHECK_NOTHROW(g.validate());
    CHECK(count(g, OpKind::Conv2D) == 1);
    CHECK(count(g, OpKind::Softmax) == 12);
    CHECK(count(g, OpKind::LayerNormalization) == 25);
    CHECK(count(g, OpKind::MatMul) == 96);
    CHECK(count(g, OpKind::Erf) == 12);
    CHECK(count(g, OpKind::Gemm) == 1);
    CHECK(torchvision_parameters(g) == 86'567'656);
    CHECK(output_shape(g) == Shape{1, 1000});
}

TEST_CASE("vit cuts 224x224 images into 196 patch tokens plus a class token") {
    const Graph g = models::vit_base();
    const Node& conv = node_named(g, "conv_proj");
    CHECK(conv.attributes.get_ints("kernel_shape") == std::vector<std::int64_t>{16, 16});
    CHECK(conv.attributes.get_ints("strides") == std::vector<std::int64_t>{16, 16});
    CHECK(conv.inputs.size() == 3);
    CHECK(shape_of(g, "conv_proj") == Shape{1, 768, 14, 14});
    CHECK(shape_of(g, "conv_proj.permute") == Shape{1, 196, 768});
    CHECK(shape_of(g, "class_token.concat") == Shape{1, 197, 768});
    CHECK(shape_of(g, "encoder.pos_embedding") == Shape{1, 197, 768});
    CHECK(shape_of(g, "heads.head") == Shape{1, 1000});
}

TEST_CASE("vit layers normalise before attention and before the MLP") {
    const Graph g = models::vit_base();
    const std::string p = "encoder.layers.encoder_layer_5";
    const Node& q = node_named(g, p + ".self_attention.q_proj.matmul");
    CHECK(g.node(q.inputs[0].node).name == p + ".ln_1");
    CHECK(g.node(node_named(g, p + ".mlp.0.matmul").inputs[0].node).name == p + ".ln_2");
    CHECK(shape_of(g, p + ".mlp.1") == Shape{1, 197, 3072});
    CHECK(node_named(g, p + ".ln_1").attributes.get_float("epsilon", 0) == doctest::Approx(1e-6));
}

TEST_CASE("vit classifies the class token selected by a split after the final layer norm") {
    const Graph g = models::vit_base(2);
    const Node& split = node_named(g, "class_token.select");
    CHECK(g.node(split.inputs[0].node).name == "encoder.ln");
    REQUIRE(split.outputs.size() == 2);
    CHECK(split.output_type(0).shape == Shape{2, 1, 768});
    CHECK(split.output_type(1).shape == Shape{2, 196, 768});
    CHECK(shape_of(g, "class_token.expand") == Shape{2, 1, 768});
    CHECK(torchvision_parameters(g) == 86'567'656);  // the class token is shared by the batch
    CHECK(output_shape(g) == Shape{2, 1000});
}
