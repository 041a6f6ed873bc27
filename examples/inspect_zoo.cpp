// Shows how to enumerate the model zoo and read a graph's statistics and canonical hash.

#include <rlflow/core/canonical.hpp>
#include <rlflow/core/statistics.hpp>
#include <rlflow/models/zoo.hpp>

#include <cstdio>
#include <string>

/// FLOPs per GFLOP, for the printed column.
constexpr double flops_per_gflop = 1e9;

int main() {
    using namespace rlflow;
    for (const auto& entry : models::zoo_entries()) {
        const Graph g = models::build_zoo_model(entry.name);
        const GraphStatistics s = graph_statistics(g);
        std::printf("%-14s %5zu ops %11lld params %8.2f GFLOP  hash %016llx\n", std::string(entry.name).c_str(),
                    s.op_nodes, static_cast<long long>(s.parameters), s.flops / flops_per_gflop,
                    static_cast<unsigned long long>(canonical_hash(g)));
    }
    return 0;
}
