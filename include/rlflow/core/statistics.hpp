#pragma once
/// \file
/// Summary statistics of a graph: what `rlflow info` prints.

#include <rlflow/core/graph.hpp>
#include <rlflow/core/memory.hpp>

#include <map>
#include <string>

namespace rlflow {

/// Counts and totals over a graph.
struct GraphStatistics {
    /// Live nodes, source nodes (inputs, weights, constants) excluded.
    std::size_t op_nodes = 0;
    std::size_t inputs = 0;
    std::size_t weights = 0;
    std::size_t opaque_nodes = 0;
    /// Op label → count, over op nodes.
    std::map<std::string, std::size_t> op_histogram;
    /// Elements over all weights and constants.
    std::int64_t parameters = 0;
    double flops = 0;
    /// Bytes read and written by all ops.
    double bytes_moved = 0;
    MemoryProfile memory;
};

/// Computes the statistics of `g`.
[[nodiscard]] inline GraphStatistics graph_statistics(const Graph& g) {
    GraphStatistics s;
    for (const Node& n : g.nodes()) {
        const OpTraits& t = n.traits();
        if (t.has(op_flag_source)) {
            s.inputs += n.op == OpKind::Input ? 1 : 0;
            s.weights += n.op == OpKind::Input ? 0 : 1;
            if (n.op != OpKind::Input) s.parameters += n.outputs[0].type.shape.numel();
            continue;
        }
        ++s.op_nodes;
        s.opaque_nodes += t.has(op_flag_opaque) ? 1 : 0;
        ++s.op_histogram[std::string(n.op_label())];
        const auto in = g.types_of(n.inputs);
        std::vector<TensorType> out;
        for (const auto& o : n.outputs) out.push_back(o.type);
        s.flops += t.flops(OpContext{n.attributes, in, out, {}});
        s.bytes_moved += op_bytes(t, in, out);
    }
    s.memory = memory_profile(g);
    return s;
}

}  // namespace rlflow
