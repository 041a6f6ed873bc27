#pragma once
// `rlflow info <MODEL> [--json]`: node count, op histogram, parameters, FLOPs and memory.

#include "model_source.hpp"

#include <rlflow/core/statistics.hpp>
#include <rlflow/onnx/opaque.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

namespace rlflow::cli {

struct InfoOptions {
    std::string model;
    ModelOptions load;
    bool json = false;
};

inline nlohmann::json info_json(const std::string& model, const Graph& g, const GraphStatistics& s) {
    nlohmann::json j;
    j["model"] = model;
    j["nodes"] = g.num_nodes();
    j["op_nodes"] = s.op_nodes;
    j["inputs"] = s.inputs;
    j["weights"] = s.weights;
    j["opaque_nodes"] = s.opaque_nodes;
    j["op_histogram"] = s.op_histogram;
    j["opaque_ops"] = nlohmann::json::array();
    for (const auto& group : onnx_io::opaque_groups(g))
        j["opaque_ops"].push_back({{"op_type", group.op_type},
                                   {"domain", group.domain},
                                   {"count", group.nodes.size()},
                                   {"reason", group.reason},
                                   {"nodes", group.nodes}});
    j["parameters"] = s.parameters;
    j["flops"] = s.flops;
    j["bytes_moved"] = s.bytes_moved;
    j["activation_peak_bytes"] = s.memory.peak_activation_bytes;
    j["weight_bytes"] = s.memory.weight_bytes;
    return j;
}

inline std::string human_bytes(double bytes) {
    constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    constexpr double step = 1024.0;
    int u = 0;
    while (bytes >= step && u < 4) {
        bytes /= step;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %s", bytes, units[u]);
    return buf;
}

inline void print_info_text(const std::string& model, const Graph& g, const GraphStatistics& s) {
    constexpr double giga = 1e9;
    std::printf("model        %s\n", model.c_str());
    std::printf("nodes        %zu (%zu ops, %zu inputs, %zu weights, %zu opaque)\n", g.num_nodes(), s.op_nodes,
                s.inputs, s.weights, s.opaque_nodes);
    std::printf("parameters   %lld\n", static_cast<long long>(s.parameters));
    std::printf("FLOPs        %.3f GFLOP\n", s.flops / giga);
    std::printf("memory       %s peak activations, %s weights\n",
                human_bytes(static_cast<double>(s.memory.peak_activation_bytes)).c_str(),
                human_bytes(static_cast<double>(s.memory.weight_bytes)).c_str());
    std::printf("ops\n");
    for (const auto& [op, count] : s.op_histogram) std::printf("  %-22s %zu\n", op.c_str(), count);
    const auto opaque = onnx_io::opaque_groups(g);
    if (opaque.empty()) return;
    std::printf("opaque (never rewritten)\n");
    for (const auto& group : opaque) {
        const std::string op = group.domain.empty() ? group.op_type : group.domain + "::" + group.op_type;
        std::printf("  %-22s %-5zu %s (e.g. '%s')\n", op.c_str(), group.nodes.size(), group.reason.c_str(),
                    group.nodes.front().c_str());
    }
}

}  // namespace rlflow::cli
