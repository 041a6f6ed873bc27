#include "support.hpp"

#include <algorithm>
#include <set>

using namespace rewrite_test;

namespace {

NodeId unary(Graph& g, OpKind op, NodeId in, const std::string& name) { return g.add_node(op, {{in, 0}}, {}, name); }

/// Three conv+relu shapes: a clean chain; one whose conv output is also a graph output;
/// one whose conv output feeds a second consumer.
Graph conv_relu_cases() {
    Graph g;
    const TensorRef x{g.add_input("x", f32({1, 4, 8, 8})), 0};
    const NodeId c1 = conv(g, x, 4, 3, 1, "c1");
    g.add_output({unary(g, OpKind::Relu, c1, "r1"), 0});
    const NodeId c2 = conv(g, x, 4, 3, 1, "c2");
    g.add_output({unary(g, OpKind::Relu, c2, "r2"), 0});
    g.add_output({c2, 0});
    const NodeId c3 = conv(g, x, 4, 3, 1, "c3");
    g.add_output({unary(g, OpKind::Relu, c3, "r3"), 0});
    g.add_output({unary(g, OpKind::Sigmoid, c3, "s3"), 0});
    return g;
}

}  // namespace

TEST_CASE("matcher offers a fusion only where no internal tensor escapes") {
    const Graph g = conv_relu_cases();
    const auto found = locations_of("fuse_conv_relu", g);
    REQUIRE(found.size() == 1);
    CHECK(found[0].nodes[0] == node_named(g, "c1"));
    CHECK(found[0].nodes[1] == node_named(g, "r1"));
    CHECK(found[0].variables[0] == TensorRef{g.find_input("x").value(), 0});
}

TEST_CASE("matcher finds every QKV location in BERT") {
    const Graph g = models::build_zoo_model("bert");
    constexpr std::size_t layers = 12;
    // Q, K and V read the same input in every layer: one triple and three ordered pairs.
    CHECK(locations_of("merge_matmul_triple", g).size() == layers);
    CHECK(locations_of("merge_matmul_pair", g).size() == 3 * layers);
    // Each of the 6 projections of a layer (Q, K, V, attention output, FFN in, FFN out)
    // is a rank-3 MatMul + bias Add.
    CHECK(locations_of("fuse_batched_matmul_add_gemm", g).size() == 6 * layers);
    for (const Location& l : locations_of("merge_matmul_triple", g)) {
        CHECK(l.nodes[0] < l.nodes[1]);
        CHECK(l.nodes[1] < l.nodes[2]);
        const TensorRef x = g.node(l.nodes[0]).inputs[0];
        CHECK(g.node(l.nodes[1]).inputs[0] == x);
        CHECK(g.node(l.nodes[2]).inputs[0] == x);
    }
}

TEST_CASE("matcher respects kernel sizes and pads, unlike TASO's 3x3 rules") {
    Graph g;
    const TensorRef x{g.add_input("x", f32({1, 4, 8, 8})), 0};
    const NodeId a = conv(g, x, 2, 1, 0, "a");   // 1x1, pad 0
    const NodeId b = conv(g, x, 3, 3, 1, "b");   // 3x3, pad 1
    const NodeId c = conv(g, x, 5, 3, 0, "c");   // 3x3, pad 0: a cannot be enlarged to it
    const NodeId d = conv(g, x, 6, 3, 1, "d");   // 3x3, pad 1, like b
    for (const NodeId n : {a, b, c, d}) g.add_output({n, 0});

    const auto same = locations_of("merge_conv_pair", g);
    REQUIRE(same.size() == 1);
    CHECK(same[0].nodes[0] == b);
    CHECK(same[0].nodes[1] == d);

    const auto enlarge = locations_of("merge_conv_enlarge_pair", g);
    REQUIRE(enlarge.size() == 2);
    std::set<std::pair<NodeId, NodeId>> pairs;
    for (const Location& l : enlarge) pairs.emplace(l.nodes[0], l.nodes[1]);
    CHECK(pairs == std::set<std::pair<NodeId, NodeId>>{{a, b}, {a, d}});
}

TEST_CASE("matcher refuses a merge that would close a cycle") {
    for (const bool dependent : {true, false}) {
        Graph g;
        const TensorRef x{g.add_input("x", f32({4, 4})), 0};
        const NodeId m1 = g.add_node(OpKind::MatMul, {x, {g.add_weight("w1", f32({4, 4})), 0}}, {}, "m1");
        // The second MatMul's weight is computed from the first MatMul's output.
        const TensorRef w2 = dependent ? TensorRef{unary(g, OpKind::Relu, m1, "w2"), 0}
                                       : TensorRef{g.add_weight("w2", f32({4, 4})), 0};
        const NodeId m2 = g.add_node(OpKind::MatMul, {x, w2}, {}, "m2");
        g.add_output({m1, 0});
        g.add_output({m2, 0});
        CAPTURE(dependent);
        CHECK(locations_of("merge_matmul_pair", g).size() == (dependent ? 0u : 1u));
    }
}

TEST_CASE("matcher tries both operand orders of a commutative op") {
    for (const bool bias_first : {true, false}) {
        Graph g;
        const TensorRef x{g.add_input("x", f32({3, 4})), 0};
        const NodeId m = g.add_node(OpKind::MatMul, {x, {g.add_weight("w", f32({4, 5})), 0}});
        const TensorRef b{g.add_weight("b", f32({5})), 0};
        const NodeId s = g.add_node(OpKind::Add, bias_first ? std::vector<TensorRef>{b, {m, 0}}
                                                            : std::vector<TensorRef>{{m, 0}, b});
        g.add_output({s, 0});
        const auto found = locations_of("fuse_matmul_add_gemm", g);
        REQUIRE(found.size() == 1);
        CHECK(found[0].variables[2] == b);
    }
}

TEST_CASE("matcher rejects a location whose rewrite would change an output's type") {
    Graph g;
    const TensorRef x{g.add_input("x", f32({3, 4})), 0};
    const NodeId m = g.add_node(OpKind::MatMul, {x, {g.add_weight("w", f32({4, 5})), 0}});
    // A rank-3 addend broadcasts the sum to (2, 3, 5); a Gemm would give (3, 5).
    const NodeId s = g.add_node(OpKind::Add, {{m, 0}, {g.add_weight("b", f32({2, 3, 5})), 0}});
    g.add_output({s, 0});
    CHECK(locations_of("fuse_matmul_add_gemm", g).empty());
}

TEST_CASE("matcher finds the same locations from every anchor, sorted and without duplicates") {
    const auto& rules = *builtin();
    for (const char* model : {"inception_v3", "bert", "squeezenet1_1", "resnext50"}) {
        const Graph g = models::build_zoo_model(model);
        const rewrite::GraphIndex index(g);
        rewrite::Matcher matcher(rules, g, index);
        for (const auto& rule : rules) {
            std::vector<Location> full;
            matcher.find_all(rule.id, full);
            CHECK(std::is_sorted(full.begin(), full.end()));
            CHECK(std::adjacent_find(full.begin(), full.end()) == full.end());
            for (std::uint32_t anchor = 0; anchor < rule.source.size(); ++anchor) {
                std::vector<Location> anchored;
                for (const NodeId id : index.nodes_of(rule.source[anchor].op)) matcher.find_anchored(rule.id, anchor, id, anchored);
                std::sort(anchored.begin(), anchored.end());
                anchored.erase(std::unique(anchored.begin(), anchored.end()), anchored.end());
                CAPTURE(model);
                CAPTURE(rule.name);
                CAPTURE(anchor);
                CHECK(anchored == full);
            }
        }
    }
}

TEST_CASE("a Concat of Split parts in another order is not a cancellation") {
    for (const bool in_order : {true, false}) {
        Graph g;
        const NodeId x = g.add_input("x", f32({2, 6}));
        const NodeId s = g.add_node(OpKind::Split, {{x, 0}}, {{"axis", std::int64_t{1}}, {"split", std::vector<std::int64_t>{3, 3}}});
        const std::vector<TensorRef> parts = in_order ? std::vector<TensorRef>{{s, 0}, {s, 1}} : std::vector<TensorRef>{{s, 1}, {s, 0}};
        g.add_output({g.add_node(OpKind::Concat, parts, {{"axis", std::int64_t{1}}}), 0});
        CAPTURE(in_order);
        CHECK(locations_of("cancel_split_concat_pair", g).size() == (in_order ? 1u : 0u));
    }
}

TEST_CASE("dilated convolutions are not merged by enlarging a kernel") {
    Graph g;
    const TensorRef x{g.add_input("x", f32({1, 4, 12, 12})), 0};
    const auto dilated = [&](std::int64_t kernel, std::int64_t pad, const std::string& name) {
        const TensorRef w{g.add_weight(name + ".w", f32({2, 4, kernel, kernel})), 0};
        return g.add_node(OpKind::Conv2D, {x, w},
                          {{"pads", std::vector<std::int64_t>(4, pad)}, {"dilations", std::vector<std::int64_t>{2, 2}}}, name);
    };
    g.add_output({dilated(1, 0, "a"), 0});
    g.add_output({dilated(3, 2, "b"), 0});
    CHECK(locations_of("merge_conv_enlarge_pair", g).empty());
}
