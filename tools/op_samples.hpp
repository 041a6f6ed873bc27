#pragma once
// Op signatures that own their storage, gathered from graphs, for calibrating cost models
// against measured op times (rlflow_calibrate_cpu). Not part of the library.

#include <rlflow/core/graph.hpp>
#include <rlflow/core/memory.hpp>
#include <rlflow/cost/cost_backend.hpp>

#include <map>
#include <string>
#include <vector>

namespace rlflow::tools {

/// An op signature with its own copies of what cost::OpSignature points into.
using cost::OwnedSignature;

/// One distinct signature, the first graph it was seen in, and its measured time.
struct OpSample {
    OwnedSignature signature;
    std::string source;
    double measured_ms = 0;
};

/// The signature of node `n` of `g`, given which nodes are weight-only (`constant`).
[[nodiscard]] inline OwnedSignature node_signature(const Graph& g, const Node& n, const std::vector<char>& constant) {
    OwnedSignature s{n.op, n.attributes, g.types_of(n.inputs), {}, {}, {}};
    for (const NodeOutput& out : n.outputs) s.outputs.push_back(out.type);
    for (const TensorRef& in : n.inputs) s.constant_inputs.push_back(in.present() && constant[in.node.value] ? 1 : 0);
    return s;
}

/// Adds to `samples` (keyed by cost::signature_key) every signature of `g` that a cost
/// model charges for: op nodes that are neither sources, views nor weight-only.
inline void collect_signatures(const Graph& g, const std::string& source, std::map<std::string, OpSample>& samples) {
    const std::vector<char> constant = weight_only_nodes(g);
    for (const Node& n : g.nodes()) {
        const OpTraits& traits = n.traits();
        if (traits.has(op_flag_source) || traits.has(op_flag_view) || constant[n.id.value]) continue;
        OwnedSignature s = node_signature(g, n, constant);
        std::string key = cost::signature_key(s.view());
        if (!samples.contains(key)) samples.emplace(std::move(key), OpSample{std::move(s), source, 0});
    }
}

}  // namespace rlflow::tools
