#pragma once
/// \file
/// Orders the nodes of an ONNX graph so that every tensor is produced before it is read,
/// counting tensors that subgraphs (If/Loop/Scan bodies) capture from the outer scope.

#include <rlflow/core/error.hpp>

#include <onnx/onnx_pb.h>

#include <queue>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace rlflow::onnx_io::detail {

/// Adds every tensor name read inside `graph` (recursively) to `names`.
inline void collect_subgraph_reads(const ::onnx::GraphProto& graph, std::unordered_set<std::string>& names) {
    for (const auto& n : graph.node()) {
        for (const auto& in : n.input()) names.insert(in);
        for (const auto& a : n.attribute()) {
            if (a.has_g()) collect_subgraph_reads(a.g(), names);
            for (const auto& g : a.graphs()) collect_subgraph_reads(g, names);
        }
    }
}

/// The tensors node `n` reads: its inputs and its subgraphs' captures.
[[nodiscard]] inline std::vector<std::string> node_reads(const ::onnx::NodeProto& n) {
    std::unordered_set<std::string> names(n.input().begin(), n.input().end());
    for (const auto& a : n.attribute()) {
        if (a.has_g()) collect_subgraph_reads(a.g(), names);
        for (const auto& g : a.graphs()) collect_subgraph_reads(g, names);
    }
    names.erase("");
    return {names.begin(), names.end()};
}

/// Node indices in a dependency order (the file's order where it already is one).
/// Throws onnx_error naming a node on a cycle or a tensor produced twice.
[[nodiscard]] inline std::vector<int> dependency_order(const ::onnx::GraphProto& graph, const std::string& source) {
    std::unordered_map<std::string, int> producer;
    for (int i = 0; i < graph.node_size(); ++i)
        for (const auto& out : graph.node(i).output()) {
            if (out.empty()) continue;
            if (!producer.emplace(out, i).second)
                throw onnx_error(source + ": node '" + graph.node(i).name() + "' (" + graph.node(i).op_type()
                                 + "): tensor '" + out + "' is produced twice");
        }
    std::vector<std::vector<int>> dependents(static_cast<std::size_t>(graph.node_size()));
    std::vector<int> pending(static_cast<std::size_t>(graph.node_size()), 0);
    for (int i = 0; i < graph.node_size(); ++i)
        for (const auto& name : node_reads(graph.node(i))) {
            const auto it = producer.find(name);
            if (it == producer.end()) continue;
            if (it->second == i)
                throw onnx_error(source + ": node '" + graph.node(i).name() + "' (" + graph.node(i).op_type()
                                 + ") reads its own output '" + name + "' (a cycle)");
            dependents[static_cast<std::size_t>(it->second)].push_back(i);
            ++pending[static_cast<std::size_t>(i)];
        }
    std::priority_queue<int, std::vector<int>, std::greater<>> ready;
    for (int i = 0; i < graph.node_size(); ++i)
        if (pending[static_cast<std::size_t>(i)] == 0) ready.push(i);
    std::vector<int> order;
    while (!ready.empty()) {
        const int i = ready.top();
        ready.pop();
        order.push_back(i);
        for (const int d : dependents[static_cast<std::size_t>(i)])
            if (--pending[static_cast<std::size_t>(d)] == 0) ready.push(d);
    }
    for (int i = 0; i < graph.node_size() && order.size() != static_cast<std::size_t>(graph.node_size()); ++i)
        if (pending[static_cast<std::size_t>(i)] != 0)
            throw onnx_error(source + ": node '" + graph.node(i).name() + "' (" + graph.node(i).op_type()
                             + ") lies on a cycle");
    return order;
}

}  // namespace rlflow::onnx_io::detail
