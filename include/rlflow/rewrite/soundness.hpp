#pragma once
/// \file
/// The soundness harness: does a rewritten graph compute what the original computes?
/// Both run in the reference executor on the same seeded random inputs and the same
/// weights, several times; the verdict is a value, with the inputs that told them apart.

#include <rlflow/core/memory.hpp>
#include <rlflow/exec/executor.hpp>
#include <rlflow/exec/random.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rlflow::rewrite {

/// How hard to look for a difference.
struct EquivalenceOptions {
    int trials = 3;
    std::uint64_t seed = 0;
    double rtol = 1e-4;
    double atol = 1e-5;
    /// The most memory the two runs may take together, in bytes; more is a resource_error
    /// before anything is allocated. 0: core/memory.hpp's default_run_memory_limit.
    std::int64_t memory_limit_bytes = 0;
};

/// The verdict of check_equivalence.
struct EquivalenceReport {
    bool equal = true;
    /// Largest |original - rewritten| over all outputs and trials.
    double max_abs_diff = 0;
    /// The graph inputs (by name) of the first trial that told the graphs apart.
    std::optional<std::map<std::string, Tensor>> counterexample;
    /// The index of the first output that differed.
    std::optional<std::size_t> mismatched_output;
    /// Which output and element differed, for people.
    std::string detail;
};

namespace detail {

/// Gives `rewritten`'s weights without data the data of the original's weight of the same
/// name and type, so a rewrite that keeps a weight is compared on the same values; other
/// weights without data (new ones) get random data.
inline void share_weights(const Graph& original, Graph& rewritten, std::uint64_t seed) {
    std::map<std::string, TensorPtr> by_name;
    for (const NodeId id : original.weights())
        if (const Node& n = original.node(id); n.data) by_name[n.name] = n.data;
    for (const NodeId id : rewritten.weights()) {
        const Node& n = rewritten.node(id);
        const auto it = by_name.find(n.name);
        if (!n.data && it != by_name.end() && it->second->type() == n.outputs[0].type) rewritten.set_weight_data(id, it->second);
    }
    exec::fill_random_weights(rewritten, seed);
}

/// Compares one trial's outputs; records the worst difference and the first mismatch.
inline bool outputs_agree(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const EquivalenceOptions& o,
                          EquivalenceReport& report) {
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].type() != b[i].type()) {
            report.mismatched_output = i;
            report.detail = "output " + std::to_string(i) + ": " + a[i].type().to_string() + " vs " + b[i].type().to_string();
            report.max_abs_diff = INFINITY;
            return false;
        }
        if (a[i].dtype() != DType::Float32) {  // integers and bools: exactly equal
            if (!std::ranges::equal(a[i].raw(), b[i].raw())) {
                report.mismatched_output = i;
                report.detail = "output " + std::to_string(i) + ": " + a[i].type().to_string() + " values differ";
                report.max_abs_diff = INFINITY;
                return false;
            }
            continue;
        }
        for (std::size_t j = 0; j < a[i].floats().size(); ++j) {
            const double x = a[i].floats()[j], y = b[i].floats()[j];
            const double diff = std::abs(x - y);
            if (std::isnan(x) && std::isnan(y)) continue;
            report.max_abs_diff = std::isnan(diff) ? INFINITY : std::max(report.max_abs_diff, diff);
            if (!(diff <= o.atol + o.rtol * std::abs(x))) {
                report.mismatched_output = i;
                report.detail = "output " + std::to_string(i) + " element " + std::to_string(j) + ": " + std::to_string(x)
                                + " vs " + std::to_string(y);
                return false;
            }
        }
    }
    return true;
}

/// Refuses (resource_error) graphs whose runs would need more memory than allowed.
inline void check_run_memory(const Graph& a, const Graph& b, const EquivalenceOptions& options) {
    const auto need = [](const Graph& g) {
        const MemoryProfile p = memory_profile(g);
        return p.peak_activation_bytes + p.weight_bytes;
    };
    const std::int64_t limit = options.memory_limit_bytes > 0 ? options.memory_limit_bytes : default_run_memory_limit();
    const std::int64_t bytes = need(a) + need(b);
    if (limit > 0 && bytes > limit)
        throw resource_error("checking graph '" + a.info().graph_name + "' against its rewrite on random inputs needs "
                             + gibibytes(bytes) + " of memory, more than the limit of " + gibibytes(limit)
                             + " (half this machine's)");
}

}  // namespace detail

/// Checks that `rewritten` computes the same outputs as `original` (same graph inputs by
/// name, same number of outputs in order) within rtol/atol, on `trials` seeded random
/// input sets. Weights without data are filled deterministically, shared by name.
[[nodiscard]] inline EquivalenceReport check_equivalence(const Graph& original, const Graph& rewritten,
                                                          const EquivalenceOptions& options = {}) {
    detail::check_run_memory(original, rewritten, options);
    Graph a = original;
    Graph b = rewritten;
    exec::fill_random_weights(a, options.seed);
    detail::share_weights(a, b, options.seed);
    EquivalenceReport report;
    if (a.outputs().size() != b.outputs().size()) {
        report.equal = false;
        report.max_abs_diff = INFINITY;
        report.detail = std::to_string(a.outputs().size()) + " outputs vs " + std::to_string(b.outputs().size());
        return report;
    }
    for (int trial = 0; trial < options.trials; ++trial) {
        const auto values = exec::random_inputs(a, options.seed + static_cast<std::uint64_t>(trial) + 1);
        std::map<std::string, Tensor> inputs;
        for (std::size_t i = 0; i < values.size(); ++i) inputs.emplace(a.node(a.inputs()[i]).name, values[i]);
        const auto out_a = exec::Executor{}.run(a, inputs).outputs;
        const auto out_b = exec::Executor{}.run(b, inputs).outputs;
        if (!detail::outputs_agree(out_a, out_b, options, report)) {
            report.equal = false;
            report.counterexample = std::move(inputs);
            return report;
        }
    }
    return report;
}

}  // namespace rlflow::rewrite
