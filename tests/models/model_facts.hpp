#pragma once
// Counting helpers shared by the model tests: op counts, parameters the way torchvision
// counts them, and name lookups.

#include <rlflow/core/graph.hpp>
#include <rlflow/core/statistics.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace model_facts {

/// Number of op nodes of kind `op`.
inline std::size_t count(const rlflow::Graph& g, rlflow::OpKind op) {
    std::size_t n = 0;
    for (const rlflow::Node& node : g.nodes()) n += node.op == op ? 1 : 0;
    return n;
}

/// BatchNorm running statistics: buffers, which torchvision's parameter count leaves out.
inline bool is_running_statistic(const rlflow::Node& n) {
    return n.name.ends_with(".running_mean") || n.name.ends_with(".running_var");
}

/// Elements of every Weight that torchvision counts as a parameter.
inline std::int64_t trainable_parameters(const rlflow::Graph& g) {
    std::int64_t total = 0;
    for (const rlflow::Node& n : g.nodes())
        if (n.op == rlflow::OpKind::Weight && !is_running_statistic(n)) total += n.output_type().shape.numel();
    return total;
}

/// Elements of the running statistics and of the Constant nodes.
inline std::int64_t buffer_elements(const rlflow::Graph& g) {
    std::int64_t total = 0;
    for (const rlflow::Node& n : g.nodes())
        if ((n.op == rlflow::OpKind::Weight && is_running_statistic(n)) || n.op == rlflow::OpKind::Constant)
            total += n.output_type().shape.numel();
    return total;
}

/// graph_statistics counts every weight and constant element; torchvision counts only
/// trainable parameters. Checks the relation and returns the torchvision count.
inline std::int64_t torchvision_parameters(const rlflow::Graph& g) {
    const std::int64_t trainable = trainable_parameters(g);
    CHECK(rlflow::graph_statistics(g).parameters == trainable + buffer_elements(g));
    return trainable;
}

/// The node named `name`; fails the test if there is none.
inline const rlflow::Node& node_named(const rlflow::Graph& g, std::string_view name) {
    for (const rlflow::Node& n : g.nodes())
        if (n.name == name) return n;
    FAIL("no node named " << std::string(name));
    throw;  // unreachable: FAIL throws
}

/// The shape of the (first) output of the node named `name`.
inline rlflow::Shape shape_of(const rlflow::Graph& g, std::string_view name) {
    return node_named(g, name).output_type().shape;
}

/// The shape of graph output `index`.
inline rlflow::Shape output_shape(const rlflow::Graph& g, std::size_t index = 0) {
    return g.type(g.outputs().at(index).value).shape;
}

/// Ints attribute `key` of the node named `name`.
inline std::vector<std::int64_t> ints_of(const rlflow::Graph& g, std::string_view name, std::string_view key) {
    return node_named(g, name).attributes.get_ints(key);
}

}  // namespace model_facts
