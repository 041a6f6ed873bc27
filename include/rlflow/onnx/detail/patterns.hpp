#pragma once
/// \file
/// Multi-node ONNX patterns the importer turns into one core op, where the op computes
/// the very same values (bit for bit, in rlflow's executor). Today: the Erf form of GELU
/// that exporters before ONNX opset 20 write (PyTorch: x * (erf(x / sqrt 2) + 1) * 0.5),
/// which becomes a Gelu node.

#include <rlflow/core/graph.hpp>

#include <cmath>
#include <optional>
#include <unordered_map>
#include <vector>

namespace rlflow::onnx_io::detail {

/// The value of a scalar float32 Constant or Weight with data at `ref`, if it is one.
[[nodiscard]] inline std::optional<float> scalar_value(const Graph& g, TensorRef ref) {
    const Node& n = g.node(ref.node);
    if ((n.op != OpKind::Constant && n.op != OpKind::Weight) || !n.data || n.data->dtype() != DType::Float32
        || n.data->numel() != 1)
        return std::nullopt;
    return n.data->floats()[0];
}

/// The one node that reads `ref`, if exactly one does and the tensor is not a graph output.
[[nodiscard]] inline const Node* sole_reader(const Graph& g, TensorRef ref) {
    const auto& uses = g.output(ref).uses;
    if (uses.size() != 1 || g.is_graph_output(ref)) return nullptr;
    return &g.node(uses[0].node);
}

/// For a binary node with `known` as one operand, the other operand.
[[nodiscard]] inline std::optional<TensorRef> other_operand(const Node& n, OpKind op, TensorRef known) {
    if (n.op != op || n.inputs.size() != 2) return std::nullopt;
    if (n.inputs[0] == known) return n.inputs[1];
    if (n.inputs[1] == known) return n.inputs[0];
    return std::nullopt;
}

/// Whether the binary node `n` of kind `op` reads `known` and a scalar constant equal to `value`.
[[nodiscard]] inline bool with_scalar(const Graph& g, const Node& n, OpKind op, TensorRef known, float value) {
    const auto other = other_operand(n, op, known);
    const auto scalar = other ? scalar_value(g, *other) : std::nullopt;
    return scalar && *scalar == value;
}

/// Replaces every Div(x, sqrt 2) -> Erf -> Add(1) -> Mul(x) -> Mul(0.5) chain (operands of
/// Add and Mul in either order; each intermediate read once) by Gelu(x), exact form. The
/// constant nodes left unread are removed; weights stay (the file's initializers are kept).
/// Returns how many were fused.
inline std::size_t fuse_erf_gelu(Graph& g) {
    const auto root_two = static_cast<float>(std::sqrt(2.0));
    struct Match {
        NodeId div, erf, add, mul, last;
        TensorRef x;
    };
    std::vector<Match> matches;
    for (const Node& erf : g.nodes()) {
        if (erf.op != OpKind::Erf) continue;
        const Node& div = g.node(erf.inputs[0].node);
        if (div.op != OpKind::Div || div.inputs.size() != 2 || sole_reader(g, erf.inputs[0]) != &erf) continue;
        const TensorRef x = div.inputs[0];
        const auto divisor = scalar_value(g, div.inputs[1]);
        if (!divisor || *divisor != root_two) continue;
        const Node* add = sole_reader(g, {erf.id, 0});
        if (!add || !with_scalar(g, *add, OpKind::Add, {erf.id, 0}, 1.0f)) continue;
        const Node* mul = sole_reader(g, {add->id, 0});
        if (!mul || other_operand(*mul, OpKind::Mul, {add->id, 0}) != x) continue;
        const Node* last = sole_reader(g, {mul->id, 0});
        if (!last || !with_scalar(g, *last, OpKind::Mul, {mul->id, 0}, 0.5f)) continue;
        if (!(g.type({last->id, 0}) == g.type(x))) continue;  // a constant of higher rank broadcasts
        matches.push_back({div.id, erf.id, add->id, mul->id, last->id, x});
    }
    std::unordered_map<NodeId, NodeId> fused;  // a match's x may be an earlier match's result
    for (const Match& m : matches) {
        const auto earlier = fused.find(m.x.node);
        const TensorRef x = earlier == fused.end() ? m.x : TensorRef{earlier->second, 0};
        std::vector<TensorRef> constants;
        for (const NodeId id : {m.div, m.add, m.last})
            for (const TensorRef& in : g.node(id).inputs)
                if (g.node(in.node).op == OpKind::Constant) constants.push_back(in);
        fused[m.last] = g.replace_node(m.last, OpKind::Gelu, {x}, Attributes{{"approximate", std::string("none")}});
        for (const NodeId id : {m.mul, m.add, m.erf, m.div}) g.remove_node(id);
        for (const TensorRef& c : constants)
            if (g.contains(c.node) && g.output(c).uses.empty() && !g.is_graph_output(c)) g.remove_node(c.node);
    }
    return matches.size();
}

}  // namespace rlflow::onnx_io::detail
