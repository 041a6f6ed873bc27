#pragma once
/// \file
/// Stages 1 to 3 of the generator (synth/generator.hpp): enumerate every graph on the
/// workers (detail/generator_enumerator.hpp), add the graphs of variables alone, and group
/// graphs of equal fingerprints into classes whose outputs are exactly equal on every
/// exact input set.

#include <rlflow/core/communicator.hpp>
#include <rlflow/core/parallel.hpp>
#include <rlflow/synth/detail/generator_enumerator.hpp>
#include <rlflow/synth/detail/generator_graph.hpp>
#include <rlflow/synth/detail/generator_pairs.hpp>
#include <rlflow/synth/generator_options.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace rlflow::synth::detail {

using Clock = std::chrono::steady_clock;

[[nodiscard]] inline double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Graphs of no nodes whose outputs are one variable, or two (up to max_outputs): the
/// targets of rules that cancel ops. Constants are left out.
inline void add_variable_graphs(const GeneratorSpace& space, const GeneratorOptions& o, std::vector<GenGraph>& graphs) {
    Fingerprinter fingerprint(o.seed);
    const auto values = variable_values(space, o.seed, 0, o.value_bound);
    std::vector<std::uint64_t> fps;
    for (const ExactTensor& v : values) fps.push_back(fingerprint(v));
    const auto variables = static_cast<std::uint16_t>(space.variables.size());
    for (std::uint16_t v = 0; v < variables; ++v) {
        if (space.variables[v].is_constant()) continue;  // a rule's target cannot be a bare constant
        GenGraph one;
        one.outputs = {v};
        one.key = {0, v};
        one.fingerprint = graph_fingerprint(std::array{fps[v]});
        graphs.push_back(std::move(one));
        for (std::uint16_t u = 0; u < variables && o.max_outputs >= 2; ++u) {
            if (u == v || fps[u] >= fps[v] || space.variables[u].is_constant()) continue;  // each pair once, in fingerprint order
            GenGraph two;
            two.outputs = {u, v};
            two.key = {1, (std::uint64_t{u} << 16) | v};
            two.fingerprint = graph_fingerprint(std::array{fps[u], fps[v]});
            graphs.push_back(std::move(two));
        }
    }
}

/// Every enumerated graph (canonical node order, sorted by key), then the graphs of
/// variables alone.
[[nodiscard]] inline std::vector<GenGraph> enumerate_graphs(const GeneratorSpace& space, const GeneratorOptions& o,
                                                           GeneratorReport& report) {
    const EnumerationLimits limits{o.max_ops, o.max_outputs, o.seed, o.value_bound};
    SeenStates seen;
    const unsigned jobs = std::max(1u, o.jobs);
    std::vector<Enumerator> workers;
    workers.reserve(jobs);
    for (unsigned w = 0; w < jobs; ++w) workers.emplace_back(space, limits, seen);
    const std::vector<GenNode> roots = o.max_ops > 0 ? workers[0].first_nodes() : std::vector<GenNode>{};
    parallel_for(
        roots.size(), jobs, [&](std::size_t i, unsigned w) { workers[w].run_from(roots[i]); },
        [&](std::size_t done) {
            if (o.on_progress) o.on_progress({"enumerate", done, roots.size()});
        });
    std::vector<GenGraph> graphs;
    EnumerationCounts counts;
    for (Enumerator& w : workers) {
        counts += w.counts();
        for (const GenGraph& g : w.recorded()) graphs.push_back(canonical_order(g, space.variables.size()));
    }
    std::sort(graphs.begin(), graphs.end(), [](const GenGraph& a, const GenGraph& b) { return a.key < b.key; });
    add_variable_graphs(space, o, graphs);
    report.states = counts.states;
    report.graphs = counts.recorded;
    report.redundant_states = counts.redundant;
    report.inexact = counts.inexact;
    return graphs;
}

/// The outputs of graph `g` on every exact input set, and their types.
struct Evaluated {
    std::vector<std::vector<ExactTensor>> outputs;  // [set][output]
    std::vector<std::uint32_t> types;
};

[[nodiscard]] inline Evaluated evaluate_outputs(const GenGraph& g, OpApplier& applier,
                                                const std::vector<std::vector<ExactTensor>>& sets) {
    Evaluated e;
    const std::vector<std::uint32_t> ids = tensor_type_ids(g, applier);
    for (const std::uint16_t t : g.outputs) e.types.push_back(ids[t]);
    for (const auto& variables : sets) {
        std::vector<ExactTensor> all = evaluate(g, applier, variables);
        std::vector<ExactTensor> outs;
        for (const std::uint16_t t : g.outputs) outs.push_back(std::move(all[t]));
        e.outputs.push_back(std::move(outs));
    }
    return e;
}

/// Every rank's classes of the buckets it compared (per_bucket[b] filled where it did),
/// into every rank's `per_bucket`: per bucket, its index, its class count, then each
/// class's size and members.
inline void share_buckets(AnyCommunicator& comm, std::vector<std::vector<std::vector<std::size_t>>>& per_bucket) {
    std::vector<std::uint64_t> packed;
    for (std::size_t b = 0; b < per_bucket.size(); ++b) {
        if (per_bucket[b].empty()) continue;
        packed.insert(packed.end(), {b, per_bucket[b].size()});
        for (const std::vector<std::size_t>& c : per_bucket[b]) {
            packed.push_back(c.size());
            packed.insert(packed.end(), c.begin(), c.end());
        }
    }
    for (const std::string& part : all_gather_bytes(comm, to_bytes(std::span<const std::uint64_t>(packed)))) {
        const std::vector<std::uint64_t> values = from_bytes<std::uint64_t>(part);
        for (std::size_t i = 0; i < values.size();) {
            std::vector<std::vector<std::size_t>>& classes = per_bucket.at(values[i]);
            const std::size_t count = values[i + 1];
            i += 2;
            classes.clear();
            for (std::size_t k = 0; k < count; ++k) {
                const std::size_t size = values[i++];
                classes.emplace_back(values.begin() + static_cast<std::ptrdiff_t>(i), values.begin() + static_cast<std::ptrdiff_t>(i + size));
                i += size;
            }
        }
    }
}

/// Groups graphs with equal fingerprints into classes of exactly equal outputs (on every
/// input set, output by output in fingerprint order). Classes of one are dropped.
[[nodiscard]] inline std::vector<std::vector<std::size_t>> equal_classes(const std::vector<GenGraph>& graphs,
                                                                         const GeneratorSpace& space,
                                                                         const GeneratorOptions& o, AnyCommunicator comm = {}) {
    std::unordered_map<std::uint64_t, std::vector<std::size_t>> buckets;
    for (std::size_t i = 0; i < graphs.size(); ++i) buckets[graphs[i].fingerprint].push_back(i);
    std::vector<std::vector<std::size_t>> candidates;
    for (auto& [fp, members] : buckets)
        if (members.size() > 1) candidates.push_back(std::move(members));
    std::sort(candidates.begin(), candidates.end());
    std::vector<std::vector<ExactTensor>> sets;
    for (std::size_t s = 0; s < std::max<std::size_t>(1, o.exact_trials); ++s)
        sets.push_back(variable_values(space, o.seed, s, o.value_bound));
    const unsigned jobs = std::max(1u, o.jobs);
    std::vector<OpApplier> appliers(jobs, OpApplier(space));
    std::vector<std::vector<std::vector<std::size_t>>> per_bucket(candidates.size());
    // Over the ranks, rank r compares the members of buckets r, r + K, ...
    const auto rank = static_cast<std::size_t>(comm.rank()), ranks = static_cast<std::size_t>(comm.size());
    parallel_for(
        candidates.size(), jobs,
        [&](std::size_t b, unsigned w) {
            if (b % ranks != rank) return;
            std::vector<std::pair<Evaluated, std::vector<std::size_t>>> groups;
            for (const std::size_t i : candidates[b]) {
                Evaluated e;
                try {
                    e = evaluate_outputs(graphs[i], appliers[w], sets);
                } catch (const exact_error&) {
                    continue;  // overflows on another input set: it cannot be compared exactly
                }
                const auto same = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
                    return g.first.types == e.types && g.first.outputs == e.outputs;
                });
                if (same != groups.end()) same->second.push_back(i);
                else groups.emplace_back(std::move(e), std::vector<std::size_t>{i});
            }
            for (auto& [e, members] : groups)
                if (members.size() > 1) per_bucket[b].push_back(std::move(members));
        },
        [&](std::size_t done) {
            if (o.on_progress) o.on_progress({"classes", done, candidates.size()});
        });
    if (ranks > 1) share_buckets(comm, per_bucket);
    std::vector<std::vector<std::size_t>> classes;
    for (auto& bucket : per_bucket)
        for (auto& c : bucket) classes.push_back(std::move(c));
    return classes;
}

}  // namespace rlflow::synth::detail
