#include "model_facts.hpp"

#include <rlflow/models/bert.hpp>

#include <doctest/doctest.h>

#include <algorithm>

using namespace rlflow;
using namespace model_facts;

TEST_CASE("bert is a 12-layer BERT-base encoder: 12 softmaxes, 24 layer norms, 96 matmuls") {
    const Graph g = models::bert();
    CHECK_NOTHROW(g.validate());
    CHECK(count(g, OpKind::Softmax) == 12);
    CHECK(count(g, OpKind::LayerNormalization) == 24);
    CHECK(count(g, OpKind::MatMul) == 96);  // Q, K, V, scores, context, output, 2 FFN
    CHECK(count(g, OpKind::Erf) == 12);
    CHECK(count(g, OpKind::Div) == 24);  // attention scale + GELU
    CHECK(count(g, OpKind::Transpose) == 48);
    CHECK(count(g, OpKind::Reshape) == 48);
    CHECK(torchvision_parameters(g) == 85'054'464);
    CHECK(g.type({g.inputs()[0], 0}).shape == Shape{1, 128, 768});
    CHECK(output_shape(g) == Shape{1, 128, 768});
}

TEST_CASE("every bert layer projects Q, K and V with three matmuls on the same input") {
    const Graph g = models::bert();
    for (int layer = 0; layer < 12; ++layer) {
        const std::string p = "encoder.layer." + std::to_string(layer) + ".attention.self.";
        CAPTURE(p);
        const Node& q = node_named(g, p + "query.matmul");
        const Node& k = node_named(g, p + "key.matmul");
        const Node& v = node_named(g, p + "value.matmul");
        CHECK(q.inputs[0] == k.inputs[0]);
        CHECK(q.inputs[0] == v.inputs[0]);
        CHECK(g.type(q.inputs[1]).shape == Shape{768, 768});
        const auto& uses = g.output(q.inputs[0]).uses;
        const auto matmuls = std::count_if(uses.begin(), uses.end(),
                                           [&](const Use& u) { return g.node(u.node).op == OpKind::MatMul; });
        CHECK(matmuls == 3);
    }
}

TEST_CASE("bert attention scales scores by sqrt(64) and softmaxes over keys") {
    const Graph g = models::bert();
    const std::string p = "encoder.layer.3.attention.self";
    CHECK(shape_of(g, p + ".query.transpose") == Shape{1, 12, 128, 64});
    CHECK(shape_of(g, p + ".key.transpose") == Shape{1, 12, 64, 128});
    CHECK(shape_of(g, p + ".scores") == Shape{1, 12, 128, 128});
    const Node& div = node_named(g, p + ".scaled_scores");
    REQUIRE(div.op == OpKind::Div);
    const Node& scale = g.node(div.inputs[1].node);
    REQUIRE(scale.op == OpKind::Constant);
    CHECK(scale.data->shape().rank() == 0);
    CHECK(scale.data->floats()[0] == doctest::Approx(8.0));
    CHECK(node_named(g, p + ".softmax").attributes.get_int("axis", -1) == 3);
    CHECK(shape_of(g, p + ".context.reshape") == Shape{1, 128, 768});
}

TEST_CASE("bert GELU is exported as Div, Erf, Add, Mul, Mul") {
    const Graph g = models::bert();
    const std::string p = "encoder.layer.0.intermediate.gelu";
    const Node& out = node_named(g, p);
    CHECK(out.op == OpKind::Mul);
    const Node& product = g.node(out.inputs[0].node);
    CHECK(product.op == OpKind::Mul);
    CHECK(g.node(out.inputs[1].node).data->floats()[0] == doctest::Approx(0.5));
    const Node& shifted = g.node(product.inputs[1].node);
    CHECK(shifted.op == OpKind::Add);
    const Node& erf = g.node(shifted.inputs[0].node);
    CHECK(erf.op == OpKind::Erf);
    const Node& div = g.node(erf.inputs[0].node);
    CHECK(div.op == OpKind::Div);
    CHECK(g.node(div.inputs[1].node).data->floats()[0] == doctest::Approx(1.41421356));
    CHECK(div.inputs[0] == product.inputs[0]);  // x feeds both the Div and the Mul
    CHECK(shape_of(g, p) == Shape{1, 128, 3072});
}

TEST_CASE("bert layers close with residual adds into layer norms of epsilon 1e-12") {
    const Graph g = models::bert();
    const Node& norm = node_named(g, "encoder.layer.11.output.LayerNorm");
    CHECK(g.node(norm.inputs[0].node).name == "encoder.layer.11.output.residual");
    CHECK(norm.attributes.get_float("epsilon", 0) == doctest::Approx(1e-12));
    CHECK(g.outputs()[0].value.node == norm.id);
}
