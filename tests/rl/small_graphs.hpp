#pragma once
// Small graphs and the built-in rules, shared by the rl tests.
#include <rlflow/cost/analytic.hpp>
#include <rlflow/cost/cost_model.hpp>
#include <rlflow/exec/random.hpp>
#include <rlflow/rewrite/builtin_rules.hpp>

#include <memory>
#include <string>
#include <vector>

namespace rlflow::test {

inline std::shared_ptr<const rewrite::RuleSet> builtin() {
    static const auto rules = std::make_shared<const rewrite::RuleSet>(rewrite::builtin_rules());
    return rules;
}

/// The analytic price model of the cpu preset, which the environment tests price by.
inline cost::CostModel<cost::AnalyticBackend> analytic_cpu() {
    return cost::CostModel<cost::AnalyticBackend>{cost::AnalyticBackend::preset("cpu")};
}

/// Two 3x3 convolutions of one input, each followed by Relu, added: rewrites fuse the
/// activations, merge the convolutions, or do both.
inline Graph two_branches() {
    Graph g;
    const auto f32 = [](Shape s) { return TensorType{DType::Float32, std::move(s)}; };
    const NodeId x = g.add_input("x", f32({1, 8, 8, 8}));
    const Attributes conv{{"kernel_shape", std::vector<std::int64_t>{3, 3}}, {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}};
    std::vector<NodeId> branches;
    for (const char* name : {"w1", "w2"}) {
        const NodeId w = g.add_weight(name, f32({8, 8, 3, 3}));
        branches.push_back(g.add_node(OpKind::Relu, {{g.add_node(OpKind::Conv2D, {{x, 0}, {w, 0}}, conv), 0}}));
    }
    g.add_output({g.add_node(OpKind::Add, {{branches[0], 0}, {branches[1], 0}}), 0});
    exec::fill_random_weights(g, 3);
    return g;
}

/// A chain of `depth` 3x3 convolutions, each followed by Relu: rewrites fuse the activations.
inline Graph conv_chain(int depth) {
    Graph g;
    const auto f32 = [](Shape s) { return TensorType{DType::Float32, std::move(s)}; };
    NodeId x = g.add_input("x", f32({1, 8, 8, 8}));
    const Attributes conv{{"kernel_shape", std::vector<std::int64_t>{3, 3}}, {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}};
    for (int i = 0; i < depth; ++i) {
        const NodeId w = g.add_weight("w" + std::to_string(i), f32({8, 8, 3, 3}));
        x = g.add_node(OpKind::Relu, {{g.add_node(OpKind::Conv2D, {{x, 0}, {w, 0}}, conv), 0}});
    }
    g.add_output({x, 0});
    exec::fill_random_weights(g, 4);
    return g;
}

}  // namespace rlflow::test
