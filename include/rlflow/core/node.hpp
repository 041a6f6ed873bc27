#pragma once
/// \file
/// Node, tensor reference, use and graph output: the vocabulary of the graph IR.

#include <rlflow/core/attributes.hpp>
#include <rlflow/core/op_traits.hpp>
#include <rlflow/core/tensor.hpp>

#include <compare>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace rlflow {

/// A stable node id. Ids are never reused within one graph, so they survive edits.
struct NodeId {
    static constexpr std::uint32_t invalid = std::numeric_limits<std::uint32_t>::max();
    std::uint32_t value = invalid;

    [[nodiscard]] constexpr bool valid() const noexcept { return value != invalid; }
    friend constexpr auto operator<=>(NodeId, NodeId) = default;
    // Declared too, not only implied by <=>: nvcc (13.0) emits no body for an implied ==.
    friend constexpr bool operator==(NodeId, NodeId) = default;
};

/// An edge source: output `index` of node `node`. A default-constructed ref is an absent
/// optional input (only opaque nodes carry those, in the middle of their input list).
struct TensorRef {
    NodeId node;
    std::uint32_t index = 0;

    [[nodiscard]] constexpr bool present() const noexcept { return node.valid(); }
    friend constexpr auto operator<=>(TensorRef, TensorRef) = default;
    friend constexpr bool operator==(TensorRef, TensorRef) = default;
};

/// An edge target: input slot `input` of node `node`.
struct Use {
    NodeId node;
    std::uint32_t input = 0;
    friend constexpr auto operator<=>(Use, Use) = default;
    friend constexpr bool operator==(Use, Use) = default;
};

/// One output tensor of a node, with its consumers.
struct NodeOutput {
    TensorType type;
    /// The tensor's name (ONNX value name), unique within the graph.
    std::string name;
    /// Consumer slots, kept sorted so iteration order is deterministic.
    std::vector<Use> uses;
};

/// A named graph output.
struct GraphOutput {
    TensorRef value;
    std::string name;
};

/// A node of the graph. Fields are read-only from outside; edit through Graph.
struct Node {
    NodeId id;
    OpKind op = OpKind::Opaque;
    std::string name;
    /// ONNX op_type and domain of an opaque node; empty for core ops.
    std::string op_type;
    std::string domain;
    Attributes attributes;
    std::vector<TensorRef> inputs;
    std::vector<NodeOutput> outputs;
    /// Data of a Weight (optional) or Constant (required) node.
    TensorPtr data;

    [[nodiscard]] const OpTraits& traits() const noexcept { return op_traits(op); }
    /// The op as a user would name it: the ONNX op_type for opaque nodes.
    [[nodiscard]] std::string_view op_label() const noexcept {
        return op == OpKind::Opaque ? std::string_view(op_type) : op_name(op);
    }
    /// "Conv2D node 'conv1' (#17)": how errors name a node.
    [[nodiscard]] std::string describe() const {
        return std::string(op_label()) + " node '" + name + "' (#" + std::to_string(id.value) + ")";
    }
    [[nodiscard]] const TensorType& output_type(std::size_t i = 0) const { return outputs.at(i).type; }
};

}  // namespace rlflow

template <>
struct std::hash<rlflow::NodeId> {
    std::size_t operator()(rlflow::NodeId id) const noexcept { return std::hash<std::uint32_t>{}(id.value); }
};
