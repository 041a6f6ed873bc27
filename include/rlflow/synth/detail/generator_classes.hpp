#pragma once
/// \file
/// Stages 1 to 3 of the generator (synth/generator.hpp): enumerate every graph on the
/// workers (detail/generator_enumerator.hpp), add the graphs of variables alone, and group
/// graphs of equal fingerprints into classes whose outputs are exactly equal on every
/// exact input set.

#include <rlflow/core/communicator.hpp>
#include <rlflow/core/parallel.hpp>
#include <rlflow/synth/detail/generator_enumerator.hpp>
#include <rlflow/synth/detail/generator_exchange.hpp>
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

/// Rank `rank` of `ranks`'s share of the enumeration: every graph reachable from first
/// nodes rank, rank + ranks, ..., with SeenStates of its own (so a graph reachable from
/// first nodes of two ranks is built on both: about 15% more states in all on 2 ranks at
/// 3 ops), on `o.jobs` workers.
[[nodiscard]] inline EnumerationShare enumerate_share(const GeneratorSpace& space, const GeneratorOptions& o,
                                                      std::size_t rank, std::size_t ranks) {
    const EnumerationLimits limits{o.max_ops, o.max_outputs, o.seed, o.value_bound, ranks > 1};
    SeenStates seen;
    const unsigned jobs = std::max(1u, o.jobs);
    std::vector<Enumerator> workers;
    workers.reserve(jobs);
    for (unsigned w = 0; w < jobs; ++w) workers.emplace_back(space, limits, seen);
    std::vector<GenNode> roots;
    const std::vector<GenNode> first = o.max_ops > 0 ? workers[0].first_nodes() : std::vector<GenNode>{};
    for (std::size_t i = rank; i < first.size(); i += ranks) roots.push_back(first[i]);
    parallel_for(
        roots.size(), jobs, [&](std::size_t i, unsigned w) { workers[w].run_from(roots[i]); },
        [&](std::size_t done) {
            if (o.on_progress) o.on_progress({"enumerate", done, roots.size()});
        });
    EnumerationShare share;
    for (Enumerator& w : workers) {
        share.counts += w.counts();
        share.roots_inexact += w.roots_inexact();
        share.states.insert(share.states.end(), w.states().begin(), w.states().end());
        for (const GenGraph& g : w.recorded()) share.graphs.push_back(canonical_order(g, space.variables.size()));
        w.recorded() = {};
    }
    return share;
}

/// Every enumerated graph (canonical node order, sorted by key), then the graphs of
/// variables alone, with the counts in `report`. Over the ranks of `comm`, each enumerates
/// its share (enumerate_share) and every rank merges them all (merge_enumerations): the
/// single process's graphs and counts.
[[nodiscard]] inline std::vector<GenGraph> enumerate_graphs(const GeneratorSpace& space, const GeneratorOptions& o,
                                                           GeneratorReport& report, AnyCommunicator comm = {}) {
    const auto ranks = static_cast<std::size_t>(comm.size());
    EnumerationShare mine = enumerate_share(space, o, static_cast<std::size_t>(comm.rank()), ranks);
    MergedEnumeration merged;
    if (ranks > 1) {
        std::string packed = pack_enumeration(mine);
        mine = {};
        merged = merge_enumerations(all_gather_bytes(comm, std::exchange(packed, {})));
    } else {
        merged.graphs = std::move(mine.graphs);
        merged.counts = mine.counts;
        std::sort(merged.graphs.begin(), merged.graphs.end(), [](const GenGraph& a, const GenGraph& b) { return a.key < b.key; });
    }
    add_variable_graphs(space, o, merged.graphs);
    report.states = merged.counts.states;
    report.graphs = merged.counts.recorded;
    report.redundant_states = merged.counts.redundant;
    report.inexact = merged.counts.inexact;
    return std::move(merged.graphs);
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
