#pragma once
// Helpers shared by the rewrite tests and the synth tests (synth is built on the engine):
// the built-in rule set, small graph builders, and running a graph with its weights
// attached.

#include "../tensor_types.hpp"
#include <rlflow/exec.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/rewrite.hpp>

#include <doctest/doctest.h>

#include <memory>
#include <string_view>
#include <vector>

namespace rewrite_test {

using namespace rlflow;
using rewrite::Location;
using rewrite::RuleSet;

using ::f32;

/// The built-in rules, built once.
inline const std::shared_ptr<const RuleSet>& builtin() {
    static const auto rules = std::make_shared<const RuleSet>(rewrite::builtin_rules());
    return rules;
}

/// The id of built-in rule `name`.
inline std::uint32_t rule_id(std::string_view name) { return builtin()->at(name).id; }

/// Every location of built-in rule `name` in `g`.
inline std::vector<Location> locations_of(std::string_view name, const Graph& g) {
    return rewrite::find_locations(*builtin(), rule_id(name), g);
}

/// A conv node with the given kernel, pads and optional bias on `x`.
inline NodeId conv(Graph& g, TensorRef x, std::int64_t out_channels, std::int64_t kernel, std::int64_t pad,
                   const std::string& name, bool bias = false) {
    const std::int64_t in_channels = g.type(x).shape[1];
    std::vector<TensorRef> inputs{x, {g.add_weight(name + ".w", f32({out_channels, in_channels, kernel, kernel})), 0}};
    if (bias) inputs.push_back({g.add_weight(name + ".b", f32({out_channels})), 0});
    return g.add_node(OpKind::Conv2D, inputs, {{"pads", std::vector<std::int64_t>{pad, pad, pad, pad}}}, name);
}

/// x -> 3x3 average pool (stride 1, pads 1, count_include_pad, PyTorch's) -> y.
inline Graph average_pool_graph(const Shape& x_shape) {
    Graph g;
    const TensorRef x{g.add_input("x", f32(x_shape)), 0};
    Attributes a;
    a.set("kernel_shape", std::vector<std::int64_t>{3, 3});
    a.set("pads", std::vector<std::int64_t>{1, 1, 1, 1});
    a.set("count_include_pad", std::int64_t{1});
    g.add_output({g.add_node(OpKind::AveragePool, {x}, a, "pool"), 0}, "y");
    return g;
}

/// The node of `g` named `name`; fails the test if there is none.
inline NodeId node_named(const Graph& g, std::string_view name) {
    for (const Node& n : g.nodes())
        if (n.name == name) return n.id;
    FAIL("no node named " << name);
    return {};
}

/// The outputs of `g` on seeded inputs, with seeded weights (by name) filled in first.
inline std::vector<Tensor> run_seeded(Graph g, std::uint64_t seed = 7) {
    exec::fill_random_weights(g, seed);
    return exec::Executor{}.run(g, exec::random_inputs(g, seed)).outputs;
}

}  // namespace rewrite_test
