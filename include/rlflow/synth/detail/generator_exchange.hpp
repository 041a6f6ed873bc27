#pragma once
/// \file
/// What the generator's ranks exchange (synth/generator.hpp): each rank's share of the
/// enumeration (its graphs and the states it expanded), merged into the single process's
/// graphs and counts; and the classes of the fingerprint buckets each rank compared.

#include <rlflow/core/communicator.hpp>
#include <rlflow/core/detail/byte_writer.hpp>
#include <rlflow/synth/detail/generator_enumerator.hpp>
#include <rlflow/synth/detail/generator_graph.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rlflow::synth::detail {

/// A graph's fixed-size fields on the wire; its nodes and outputs follow in their own
/// arrays. 32 bytes, no padding.
struct PackedGraphHead {
    GraphKey key;
    std::uint64_t fingerprint = 0;
    std::uint32_t nodes = 0;
    std::uint16_t outputs = 0;
    std::uint16_t redundant = 0;
};
static_assert(sizeof(PackedGraphHead) == 32 && sizeof(StateLog) == 24, "the exchanged records have no padding");

/// A node as words: op, output count, then its inputs.
inline constexpr std::size_t node_words = 2 + max_generator_arity;

/// One rank's share of an enumeration (detail::enumerate_share).
struct EnumerationShare {
    /// Its graphs, in canonical node order.
    std::vector<GenGraph> graphs;
    /// Its own counts: summed over ranks, states reached on several ranks count again.
    EnumerationCounts counts;
    /// The states it expanded (when the ranks are several).
    std::vector<StateLog> states;
    /// Its first nodes that were not exact.
    std::size_t roots_inexact = 0;
};

/// A share as bytes: the first nodes that were not exact, the states, then the graphs.
[[nodiscard]] inline std::string pack_enumeration(const EnumerationShare& share) {
    std::vector<PackedGraphHead> heads;
    std::vector<std::uint16_t> nodes, outputs;
    heads.reserve(share.graphs.size());
    for (const GenGraph& g : share.graphs) {
        heads.push_back({g.key, g.fingerprint, static_cast<std::uint32_t>(g.nodes.size()),
                         static_cast<std::uint16_t>(g.outputs.size()), static_cast<std::uint16_t>(g.redundant ? 1 : 0)});
        for (const GenNode& n : g.nodes) {
            nodes.insert(nodes.end(), {n.op, n.num_outputs});
            nodes.insert(nodes.end(), n.inputs.begin(), n.inputs.end());
        }
        outputs.insert(outputs.end(), g.outputs.begin(), g.outputs.end());
    }
    rlflow::detail::ByteWriter out;
    out.u64(share.roots_inexact);
    out.str(to_bytes(std::span<const StateLog>(share.states)));
    out.str(to_bytes(std::span<const PackedGraphHead>(heads)));
    out.str(to_bytes(std::span<const std::uint16_t>(nodes)));
    out.str(to_bytes(std::span<const std::uint16_t>(outputs)));
    return out.take();
}

/// The graphs and counts of ranks' shares of one enumeration, as one process counts them:
/// a graph or state reached on several ranks counts once.
struct MergedEnumeration {
    std::vector<GenGraph> graphs;  // sorted by key
    EnumerationCounts counts;
};

/// Appends the graphs of one packed share to `into`.
inline void unpack_graphs(rlflow::detail::ByteReader& in, std::vector<GenGraph>& into) {
    const auto heads = from_bytes<PackedGraphHead>(in.str());
    const auto nodes = from_bytes<std::uint16_t>(in.str());
    const auto outputs = from_bytes<std::uint16_t>(in.str());
    std::size_t node_at = 0, output_at = 0;
    for (const PackedGraphHead& h : heads) {
        GenGraph g;
        g.key = h.key;
        g.fingerprint = h.fingerprint;
        g.redundant = h.redundant != 0;
        RLFLOW_EXPECTS(node_at + h.nodes * node_words <= nodes.size() && output_at + h.outputs <= outputs.size(),
                       precondition_error, "a rank's enumerated graphs are truncated");
        for (std::uint32_t k = 0; k < h.nodes; ++k, node_at += node_words) {
            GenNode n;
            n.op = nodes[node_at];
            n.num_outputs = static_cast<std::uint8_t>(nodes[node_at + 1]);
            std::copy_n(nodes.begin() + static_cast<std::ptrdiff_t>(node_at + 2), max_generator_arity, n.inputs.begin());
            g.nodes.push_back(n);
        }
        g.outputs.assign(outputs.begin() + static_cast<std::ptrdiff_t>(output_at),
                         outputs.begin() + static_cast<std::ptrdiff_t>(output_at + h.outputs));
        output_at += h.outputs;
        into.push_back(std::move(g));
    }
}

/// Merges the packed shares of every rank (pack_enumeration) by key, graphs and states.
/// Each part is freed once read.
[[nodiscard]] inline MergedEnumeration merge_enumerations(std::vector<std::string> parts) {
    MergedEnumeration merged;
    std::vector<StateLog> states;
    for (std::string& part : parts) {
        const std::string bytes = std::exchange(part, {});
        rlflow::detail::ByteReader in(bytes);
        merged.counts.inexact += in.u64();
        const auto mine = from_bytes<StateLog>(in.str());
        states.insert(states.end(), mine.begin(), mine.end());
        unpack_graphs(in, merged.graphs);
        RLFLOW_EXPECTS(in.ok() && in.at_end(), precondition_error, "a rank's enumeration share is malformed");
    }
    const auto by_key = [](const auto& a, const auto& b) { return a.key < b.key; };
    const auto same_key = [](const auto& a, const auto& b) { return a.key == b.key; };
    std::sort(states.begin(), states.end(), by_key);
    states.erase(std::unique(states.begin(), states.end(), same_key), states.end());
    for (const StateLog& s : states) {
        merged.counts.inexact += s.inexact_children;
        merged.counts.redundant += s.redundant;
    }
    merged.counts.states = states.size();
    std::sort(merged.graphs.begin(), merged.graphs.end(), by_key);
    merged.graphs.erase(std::unique(merged.graphs.begin(), merged.graphs.end(), same_key), merged.graphs.end());
    merged.counts.recorded = merged.graphs.size();
    return merged;
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

}  // namespace rlflow::synth::detail
