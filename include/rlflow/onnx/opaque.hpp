#pragma once
/// \file
/// Why an imported node stayed opaque. Opaque nodes are never rewritten, so a user needs to
/// see at once what rlflow cannot touch and why: `rlflow info` lists them by op and reason.
/// The reason is found by asking the importer's own mapping again, with the node's inputs as
/// the graph now has them.

#include <rlflow/core/graph.hpp>
#include <rlflow/onnx/detail/folding.hpp>
#include <rlflow/onnx/detail/op_mapping.hpp>

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace rlflow::onnx_io {

/// The opaque nodes of one op type that stay opaque for one reason.
struct OpaqueGroup {
    std::string op_type;
    std::string domain;
    std::string reason;
    /// Names of the nodes, in graph order.
    std::vector<std::string> nodes;
};

namespace detail {

/// A node proto with the opaque node's op, name, input names and attributes.
[[nodiscard]] inline pb::NodeProto opaque_node_proto(const Graph& g, const Node& n) {
    pb::NodeProto proto;
    proto.set_op_type(n.op_type);
    proto.set_domain(n.domain);
    proto.set_name(n.name);
    for (const TensorRef& in : n.inputs)
        proto.add_input(in.present() ? g.node(in.node).outputs[in.index].name : std::string());
    for (const auto& out : n.outputs) proto.add_output(out.name);
    for (const auto& [name, value] : n.attributes) attribute_to_proto(name, value, *proto.add_attribute());
    return proto;
}

/// Why a foldable node whose inputs are all constant was not folded: its value was too
/// large to write out, or the folder does not evaluate this form.
[[nodiscard]] inline std::string unfolded_reason(const pb::NodeProto& proto, std::span<const ImportOperand> operands,
                                                 std::int64_t opset, const std::string& where) {
    std::vector<FoldInput> inputs;
    for (const auto& o : operands) inputs.push_back({o.constant, o.type});
    try {
        if (fold_node(proto, inputs, opset, where))
            return "left unfolded: its value would take more than " + std::to_string(fold_bytes_limit >> 20)
                   + " MiB (kept as the op, not written out as a constant)";
    } catch (const onnx_error& e) {
        return std::string("cannot be evaluated: ") + e.what();
    }
    return "its inputs are constant, but the folder does not evaluate this form of " + proto.op_type()
           + " (a dtype or attribute it lacks)";
}

/// Why `n`, an opaque node of `g` (opset `opset`), is not a core node.
[[nodiscard]] inline std::string opaque_reason(const Graph& g, const Node& n, std::int64_t opset) {
    if (!n.domain.empty() && n.domain != "ai.onnx") return "custom domain '" + n.domain + "'";
    std::vector<ImportOperand> operands;
    bool constants_only = true;
    for (const TensorRef& in : n.inputs) {
        if (!in.present()) {
            operands.push_back({});
            continue;
        }
        const Node& source = g.node(in.node);
        const TensorType& type = source.outputs[in.index].type;
        ImportOperand o{source.outputs[in.index].name, std::nullopt, nullptr};
        if (type.dtype != DType::Undefined) o.type = type;
        if (source.op == OpKind::Weight || source.op == OpKind::Constant) o.constant = source.data.get();
        constants_only = constants_only && o.constant != nullptr;
        operands.push_back(std::move(o));
    }
    const pb::NodeProto proto = opaque_node_proto(g, n);
    if (constants_only && is_foldable(n.op_type)) return unfolded_reason(proto, operands, opset, n.describe());
    const ImportFn import = import_for(n.op_type);
    if (import == nullptr) {
        if (is_foldable(n.op_type)) return "computes on data; folded only when its inputs are constant";
        return "no core op for " + n.op_type;
    }
    const auto spec = import(ImportContext{proto, opset, operands, n.describe()});
    if (!spec) return "attributes or constant inputs outside what rlflow implements for " + n.op_type;
    if (auto problem = operand_problem(*spec, operands, n.describe())) return std::move(*problem);
    return "an output the core op lacks is read";
}

}  // namespace detail

/// The default-domain opset of a graph's model (1 when it names none).
[[nodiscard]] inline std::int64_t default_opset(const ModelInfo& info) {
    for (const auto& [domain, version] : info.opset_imports)
        if (domain.empty() || domain == "ai.onnx") return version;
    return 1;
}

/// The opaque nodes of `g`, grouped by op type, domain and reason, largest group first
/// (ties by op type).
[[nodiscard]] inline std::vector<OpaqueGroup> opaque_groups(const Graph& g) {
    const std::int64_t opset = default_opset(g.info());
    std::map<std::tuple<std::string, std::string, std::string>, std::vector<std::string>> groups;
    for (const Node& n : g.nodes())
        if (n.op == OpKind::Opaque) groups[{n.op_type, n.domain, detail::opaque_reason(g, n, opset)}].push_back(n.name);
    std::vector<OpaqueGroup> out;
    for (auto& [key, nodes] : groups)
        out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), std::move(nodes)});
    std::stable_sort(out.begin(), out.end(),
                     [](const OpaqueGroup& a, const OpaqueGroup& b) { return a.nodes.size() > b.nodes.size(); });
    return out;
}

}  // namespace rlflow::onnx_io
