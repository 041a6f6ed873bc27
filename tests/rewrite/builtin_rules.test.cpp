#include "support.hpp"

#include <functional>
#include <set>
#include <string>

using namespace rewrite_test;

namespace {

/// Applies built-in rule `name` at its first location until it has none left (at most
/// `limit` times); returns how many times it applied.
int apply_everywhere(Graph& g, std::string_view name, int limit = 1000) {
    const auto& rule = builtin()->at(name);
    int applied = 0;
    for (; applied < limit; ++applied) {
        const auto found = rewrite::find_locations(*builtin(), rule.id, g);
        if (found.empty()) break;
        g = rewrite::apply_copy(g, *builtin(), rule.id, found.front());
    }
    return applied;
}

// ---- small graphs for patterns no zoo model contains -----------------------------------

Graph conv_then(OpKind activation, bool bias) {
    Graph g;
    const TensorRef x{g.add_input("x", f32({1, 8, 12, 12})), 0};
    const NodeId c = conv(g, x, 16, 3, 1, "conv", bias);
    g.add_output({g.add_node(activation, {{c, 0}}, {}, "act"), 0}, "y");
    return g;
}

Graph conv_batchnorm(bool bias) {
    Graph g;
    const TensorRef x{g.add_input("x", f32({1, 8, 12, 12})), 0};
    const NodeId c = conv(g, x, 16, 3, 1, "conv", bias);
    std::vector<TensorRef> inputs{{c, 0}};
    for (const char* p : {"gamma", "beta", "mean", "var"}) inputs.push_back({g.add_weight(std::string("bn.") + p, f32({16})), 0});
    g.add_output({g.add_node(OpKind::BatchNormalization, inputs, {{"epsilon", 1e-3}}, "bn"), 0}, "y");
    return g;
}

Graph conv_1x1_and_3x3(bool bias) {
    Graph g;
    const TensorRef x{g.add_input("x", f32({1, 8, 12, 12})), 0};
    g.add_output({conv(g, x, 4, 1, 0, "a", bias), 0}, "a");
    g.add_output({conv(g, x, 6, 3, 1, "b", bias), 0}, "b");
    return g;
}

Graph transposes(std::vector<std::int64_t> first, std::vector<std::int64_t> second) {
    Graph g;
    const NodeId x = g.add_input("x", f32({2, 3, 4, 5}));
    const NodeId t1 = g.add_node(OpKind::Transpose, {{x, 0}}, {{"perm", first}});
    const NodeId t2 = g.add_node(OpKind::Transpose, {{t1, 0}}, {{"perm", second}});
    g.add_output({g.add_node(OpKind::Relu, {{t2, 0}}), 0}, "y");
    return g;
}

Graph reshapes() {
    Graph g;
    const NodeId x = g.add_input("x", f32({2, 3, 4, 5}));
    const NodeId r1 = g.add_node(OpKind::Reshape, {{x, 0}}, {{"shape", std::vector<std::int64_t>{6, 20}}});
    const NodeId r2 = g.add_node(OpKind::Reshape, {{r1, 0}}, {{"shape", std::vector<std::int64_t>{2, 60}}});
    const NodeId r3 = g.add_node(OpKind::Reshape, {{r2, 0}}, {{"shape", std::vector<std::int64_t>{2, 60}}});
    const NodeId i = g.add_node(OpKind::Identity, {{r3, 0}});
    g.add_output({g.add_node(OpKind::Tanh, {{i, 0}}), 0}, "y");
    return g;
}

Graph concat_split(std::size_t parts) {
    Graph g;
    std::vector<TensorRef> xs;
    std::vector<std::int64_t> sizes;
    for (std::size_t i = 0; i < parts; ++i) {
        sizes.push_back(static_cast<std::int64_t>(i) + 2);
        xs.push_back({g.add_input("x" + std::to_string(i), f32({2, sizes.back(), 3})), 0});
    }
    const NodeId c = g.add_node(OpKind::Concat, xs, {{"axis", std::int64_t{1}}});
    const NodeId s = g.add_node(OpKind::Split, {{c, 0}}, {{"axis", std::int64_t{1}}, {"split", sizes}});
    for (std::uint32_t i = 0; i < parts; ++i) g.add_output({g.add_node(OpKind::Sigmoid, {{s, i}}), 0});
    return g;
}

Graph split_concat(std::size_t parts) {
    Graph g;
    const NodeId x = g.add_input("x", f32({2, 3 * static_cast<std::int64_t>(parts), 3}));
    const NodeId s = g.add_node(OpKind::Split, {{x, 0}},
                                {{"axis", std::int64_t{1}}, {"split", std::vector<std::int64_t>(parts, 3)}});
    std::vector<TensorRef> pieces;
    for (std::uint32_t i = 0; i < parts; ++i) pieces.push_back({s, i});
    const NodeId c = g.add_node(OpKind::Concat, pieces, {{"axis", std::int64_t{1}}});
    g.add_output({g.add_node(OpKind::Relu, {{c, 0}}), 0}, "y");
    return g;
}

/// A case: the graph, the rules applied everywhere first (to create the pattern), and the
/// rule under test.
struct Case {
    std::string rule;
    std::function<Graph()> graph;
    std::vector<std::string> preparation;
};

Graph zoo(const char* name) { return models::build_zoo_model(name); }

std::vector<Case> cases() {
    return {
        {"fuse_conv_relu", [] { return conv_then(OpKind::Relu, false); }, {}},
        {"fuse_conv_relu_bias", [] { return zoo("squeezenet1_1"); }, {}},
        {"fuse_conv_sigmoid", [] { return conv_then(OpKind::Sigmoid, false); }, {}},
        {"fuse_conv_sigmoid_bias", [] { return conv_then(OpKind::Sigmoid, true); }, {}},
        {"fuse_conv_tanh", [] { return conv_then(OpKind::Tanh, false); }, {}},
        {"fuse_conv_tanh_bias", [] { return conv_then(OpKind::Tanh, true); }, {}},
        {"unfuse_conv_relu", [] { return conv_then(OpKind::Relu, false); }, {"fuse_conv_relu"}},
        {"unfuse_conv_relu_bias", [] { return zoo("squeezenet1_1"); }, {"fuse_conv_relu_bias"}},
        {"unfuse_conv_sigmoid", [] { return conv_then(OpKind::Sigmoid, false); }, {"fuse_conv_sigmoid"}},
        {"unfuse_conv_sigmoid_bias", [] { return conv_then(OpKind::Sigmoid, true); }, {"fuse_conv_sigmoid_bias"}},
        {"unfuse_conv_tanh", [] { return conv_then(OpKind::Tanh, false); }, {"fuse_conv_tanh"}},
        {"unfuse_conv_tanh_bias", [] { return conv_then(OpKind::Tanh, true); }, {"fuse_conv_tanh_bias"}},
        {"fold_conv_batchnorm", [] { return zoo("resnet18"); }, {}},
        {"fold_conv_batchnorm_bias", [] { return conv_batchnorm(true); }, {}},
        {"merge_conv_pair", [] { return zoo("inception_v3"); }, {}},
        {"merge_conv_pair_bias", [] { return zoo("inception_v3"); }, {"fold_conv_batchnorm"}},
        {"merge_conv_enlarge_pair", [] { return conv_1x1_and_3x3(false); }, {}},
        {"merge_conv_enlarge_pair_bias", [] { return zoo("squeezenet1_1"); }, {"fuse_conv_relu_bias"}},
        {"merge_group_conv", [] { return zoo("resnext50"); }, {}},
        {"merge_group_conv_bias", [] { return zoo("resnext50"); }, {"fold_conv_batchnorm"}},
        {"split_group_conv", [] { return zoo("resnext50"); }, {"merge_group_conv"}},
        {"split_group_conv_bias", [] { return zoo("resnext50"); }, {"fold_conv_batchnorm", "merge_group_conv_bias"}},
        {"merge_matmul_pair", [] { return zoo("bert"); }, {}},
        {"merge_matmul_triple", [] { return zoo("bert"); }, {}},
        {"split_matmul_pair", [] { return zoo("bert"); }, {"merge_matmul_pair"}},
        {"split_matmul_triple", [] { return zoo("bert"); }, {"merge_matmul_triple"}},
        {"merge_split_bias_pair", [] { return zoo("bert"); }, {"merge_matmul_pair"}},
        {"merge_split_bias_triple", [] { return zoo("bert"); }, {"merge_matmul_triple"}},
        {"split_bias_pair", [] { return zoo("bert"); }, {"merge_matmul_pair", "merge_split_bias_pair"}},
        {"split_bias_triple", [] { return zoo("bert"); }, {"merge_matmul_triple", "merge_split_bias_triple"}},
        {"fuse_matmul_add_gemm", [] { return zoo("nasrnn"); }, {}},
        {"unfuse_gemm", [] { return zoo("nasrnn"); }, {"fuse_matmul_add_gemm"}},
        {"fuse_batched_matmul_add_gemm", [] { return zoo("bert"); }, {}},
        {"eliminate_identity", reshapes, {}},
        {"cancel_transpose_pair", [] { return transposes({0, 2, 3, 1}, {0, 3, 1, 2}); }, {}},
        {"fuse_transpose_pair", [] { return transposes({0, 2, 3, 1}, {1, 0, 3, 2}); }, {}},
        {"collapse_reshape_pair", reshapes, {}},
        {"eliminate_noop_reshape", reshapes, {}},
        {"cancel_concat_split_pair", [] { return concat_split(2); }, {}},
        {"cancel_concat_split_triple", [] { return concat_split(3); }, {}},
        {"cancel_split_concat_pair", [] { return zoo("squeezenet1_1"); }, {"fuse_conv_relu_bias", "merge_conv_enlarge_pair_bias"}},
        {"cancel_split_concat_triple", [] { return split_concat(3); }, {}},
    };
}

}  // namespace

TEST_CASE("every built-in rule has a case below") {
    std::set<std::string> covered;
    for (const Case& c : cases()) covered.insert(c.rule);
    for (const auto& rule : *builtin()) {
        CAPTURE(rule.name);
        CHECK(covered.count(rule.name) == 1);
    }
}

TEST_CASE("every built-in rule rewrites a real graph into one computing the same function") {
    for (const Case& c : cases()) {
        CAPTURE(c.rule);
        Graph original = c.graph();
        exec::fill_random_weights(original, 11);
        Graph g = original;
        for (const auto& step : c.preparation) REQUIRE(apply_everywhere(g, step) > 0);
        const int applied = apply_everywhere(g, c.rule);
        CHECK(applied > 0);
        g.validate();
        const auto report = rewrite::check_equivalence(original, g, {.trials = 1, .seed = 5, .rtol = 1e-3, .atol = 1e-4});
        CHECK_MESSAGE(report.equal, report.detail);
    }
}
