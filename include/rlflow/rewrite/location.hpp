#pragma once
/// \file
/// A location: where a rule matches in a graph, as the graph nodes bound to the source
/// pattern's nodes and the tensors bound to its variables.

#include <rlflow/core/node.hpp>
#include <rlflow/rewrite/rule.hpp>

#include <array>
#include <compare>

namespace rlflow::rewrite {

/// One match of a rule. Entries past the rule's node and variable counts stay default.
/// Ordered lexicographically by nodes then variables: the deterministic order in which
/// locations are listed (node ids are stable, so the order survives unrelated edits).
struct Location {
    std::array<NodeId, max_pattern_nodes> nodes{};
    std::array<TensorRef, max_pattern_variables> variables{};

    /// The graph tensor a pattern reference stands for.
    [[nodiscard]] constexpr TensorRef tensor(PatternRef ref) const noexcept {
        return ref.is_variable() ? variables[ref.index] : TensorRef{nodes[ref.index], ref.output};
    }
    /// Whether graph node `id` is one of the matched nodes.
    [[nodiscard]] constexpr bool contains(NodeId id) const noexcept {
        for (const NodeId n : nodes)
            if (n == id) return true;
        return false;
    }
    friend constexpr auto operator<=>(const Location&, const Location&) = default;
};

}  // namespace rlflow::rewrite
