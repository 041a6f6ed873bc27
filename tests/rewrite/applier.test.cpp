#include "support.hpp"

#include <rlflow/core/canonical.hpp>

using namespace rewrite_test;

namespace {

/// x -> conv (bias) -> relu -> y, the fusion's textbook case.
Graph conv_relu() {
    Graph g;
    const TensorRef x{g.add_input("x", f32({1, 3, 8, 8})), 0};
    const NodeId c = conv(g, x, 4, 3, 1, "conv", true);
    g.add_output({g.add_node(OpKind::Relu, {{c, 0}}, {}, "relu"), 0}, "y");
    return g;
}

}  // namespace

TEST_CASE("applying in place fuses, keeps the replaced tensor's name, and undo restores the graph exactly") {
    Graph g = conv_relu();
    const Graph before = g;
    const auto& rule = builtin()->at("fuse_conv_relu_bias");
    const auto found = rewrite::find_locations(*builtin(), rule.id, g);
    REQUIRE(found.size() == 1);

    EditJournal journal = rewrite::apply(g, *builtin(), rule.id, found[0]);
    g.validate();
    CHECK(g.num_nodes() == before.num_nodes() - 1);
    const TensorRef out = g.outputs()[0].value;
    const Node& fused = g.node(out.node);
    CHECK(fused.op == OpKind::Conv2D);
    CHECK(fused.attributes.get_int("activation", 0) == static_cast<std::int64_t>(Activation::Relu));
    // The fused conv produces what the Relu produced, under the Relu's names.
    CHECK(fused.name == "relu");
    CHECK(g.output(out).name == before.output(before.outputs()[0].value).name);
    CHECK(g.outputs()[0].name == "y");
    const auto touched = journal.touched_nodes();
    CHECK(std::find(touched.begin(), touched.end(), found[0].nodes[0]) != touched.end());

    g.undo(std::move(journal));
    g.validate();
    CHECK(canonical_hash(g) == canonical_hash(before));
    CHECK(g.id_bound() == before.id_bound());
    CHECK(g.node(g.outputs()[0].value.node).op == OpKind::Relu);
}

TEST_CASE("applying into a copy leaves the original untouched") {
    const Graph g = conv_relu();
    const auto hash = canonical_hash(g);
    const auto& rule = builtin()->at("fuse_conv_relu_bias");
    const Graph rewritten = rewrite::apply_copy(g, *builtin(), rule.id, rewrite::find_locations(*builtin(), rule.id, g).at(0));
    CHECK(canonical_hash(g) == hash);
    CHECK(canonical_hash(rewritten) != hash);
    CHECK(rewritten.num_nodes() + 1 == g.num_nodes());
}

TEST_CASE("a location that does not fit the rule is refused and the graph is left as it was") {
    Graph g = conv_relu();
    const Graph before = g;
    const auto fuse = rule_id("fuse_conv_relu_bias");
    const Location good = rewrite::find_locations(*builtin(), fuse, g).at(0);
    const auto refused = [&](const Location& l, std::uint32_t rule) {
        CHECK_THROWS_WITH_AS((void)rewrite::apply(g, *builtin(), rule, l), doctest::Contains("does not match"),
                             precondition_error);
        CHECK_THROWS_AS((void)rewrite::apply_copy(g, *builtin(), rule, l), precondition_error);
        CHECK(canonical_hash(g) == canonical_hash(before));
        CHECK(g.id_bound() == before.id_bound());
        CHECK_FALSE(g.recording());
    };
    Location swapped = good;
    std::swap(swapped.nodes[0], swapped.nodes[1]);
    refused(swapped, fuse);
    // The right nodes, but a variable bound to another tensor of the same type.
    Location miswired = good;
    miswired.variables[0] = TensorRef{g.find_input("x").value(), 0};
    miswired.variables[1] = good.variables[2];
    miswired.variables[2] = good.variables[1];
    refused(miswired, fuse);
    // The right nodes for another rule.
    refused(good, rule_id("fuse_conv_sigmoid_bias"));
}

TEST_CASE("a hand-made location that would close a cycle is refused") {
    Graph g;
    const TensorRef x{g.add_input("x", f32({4, 4})), 0};
    const TensorRef w1{g.add_weight("w1", f32({4, 4})), 0};
    const NodeId m1 = g.add_node(OpKind::MatMul, {x, w1}, {}, "m1");
    const TensorRef w2{g.add_node(OpKind::Relu, {{m1, 0}}, {}, "w2"), 0};
    const NodeId m2 = g.add_node(OpKind::MatMul, {x, w2}, {}, "m2");
    g.add_output({m1, 0});
    g.add_output({m2, 0});
    Location l;
    l.nodes[0] = m1;
    l.nodes[1] = m2;
    l.variables[0] = x;
    l.variables[1] = w1;
    l.variables[2] = w2;
    CHECK_THROWS_AS((void)rewrite::apply(g, *builtin(), rule_id("merge_matmul_pair"), l), precondition_error);
    g.validate();
}

TEST_CASE("the rewriter's actions are exactly the index's first L locations") {
    rewrite::Rewriter rw(models::build_zoo_model("squeezenet1_1"), builtin(), {.max_locations = 3});
    const auto fuse = rule_id("fuse_conv_relu_bias");
    REQUIRE(rw.index().locations(fuse).size() > 3);
    CHECK(rw.index().num_choices(fuse) == 3);
    CHECK_THROWS_AS((void)rw.apply(fuse, 3), precondition_error);
    const std::size_t before = rw.index().locations(fuse).size();
    EditJournal j = rw.apply(fuse, 2);
    CHECK(rw.index().locations(fuse).size() == before - 1);
    rw.undo(std::move(j));
    CHECK(rw.index().locations(fuse).size() == before);
}
