#pragma once
/// \file
/// A proposer for the ort-cpu target: grouped convolutions widened to ONNX Runtime's NCHWc
/// block. At level all ORT lays convolutions out in blocks of channels (NCHWc: 16 with
/// AVX-512, 8 with AVX2), but a grouped Conv only when each group's input and output
/// channels are whole blocks; any other runs in plain NCHW with the activation reordered
/// out of the blocked layout before it and back after (docs/runtime.md: regnet-y-400mf's 24
/// convolutions of 8 channels a group, resnext50's first two stages). Merging pairs of
/// groups into one group of a block-diagonal kernel (the built-in merge_group_conv rules)
/// until each group is a whole number of blocks costs arithmetic and removes the reorders;
/// the rule ledger (docs/rules.md) measured it paying on every such design and losing on
/// depthwise ones, which ORT already runs blocked. Per-op prices cannot see the reorders a
/// neighbour saves, so the searches rarely propose it; the guard decides by measurement.

#include <rlflow/core/graph.hpp>
#include <rlflow/rewrite/builtin_rules.hpp>
#include <rlflow/rewrite/rewriter.hpp>
#include <rlflow/search/greedy.hpp>

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <string>

namespace rlflow::opt {

/// The proposer's name in --propose and in reports ("nchwc-groups:16").
inline constexpr const char* nchwc_groups_proposer = "nchwc-groups";

/// The channels of an NCHWc block ONNX Runtime's CPU provider uses on this machine (MLAS:
/// 16 with AVX-512F, 8 with AVX2), 0 where it lays nothing out in blocks.
[[nodiscard]] inline std::int64_t ort_nchwc_block() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    bool avx2 = false;
    while (std::getline(cpuinfo, line)) {
        if (!line.starts_with("flags")) continue;
        if (line.find(" avx512f") != std::string::npos) return 16;
        avx2 = avx2 || line.find(" avx2") != std::string::npos;
    }
    return avx2 ? 8 : 0;
}

/// Whether a grouped Conv with weight `w` (M, C / group, kh, kw) runs outside the NCHWc
/// layout: groups of more than one channel (depthwise runs blocked) that are not whole
/// blocks on either side.
[[nodiscard]] inline bool outside_blocks(const Shape& w, std::int64_t group, std::int64_t block) {
    if (group <= 1 || w.rank() != 4) return false;
    const std::int64_t in_per_group = w[1];
    const std::int64_t out_per_group = w[0] / group;
    if (in_per_group == 1 && out_per_group == 1) return false;  // depthwise
    return in_per_group % block != 0 || out_per_group % block != 0;
}

/// Applies, one at a time, the first location in index order that `take(rule, location)`
/// accepts, until it accepts none; how often each rule was applied.
template <class Take>
std::map<std::string, std::size_t> apply_while(rewrite::Rewriter& rw, Take&& take) {
    std::map<std::string, std::size_t> applied;
    for (bool more = true; more;) {
        more = false;
        for (std::size_t r = 0; r < rw.rules().size() && !more; ++r)
            for (std::size_t k = 0; k < rw.index().num_choices(r); ++k) {
                if (!take(r, rw.index().location(r, k))) continue;
                (void)rw.apply(r, k);
                ++applied[rw.rules()[r].name];
                more = true;
                break;
            }
    }
    return applied;
}

/// `graph` with every grouped Conv outside the NCHWc layout merged, pairs of groups at a
/// time, until its groups are whole blocks (or one group); the merges applied.
[[nodiscard]] inline std::pair<Graph, std::map<std::string, std::size_t>> widen_groups(const Graph& graph, std::int64_t block) {
    const rewrite::RuleSet all = rewrite::builtin_rules();
    auto merges = std::make_shared<rewrite::RuleSet>();
    for (const char* name : {"merge_group_conv", "merge_group_conv_bias"}) merges->add(all.at(name));
    rewrite::Rewriter rw(graph, merges, search::every_location);
    if (block <= 0) return {rw.graph(), {}};
    const auto applied = apply_while(rw, [&](std::size_t, const rewrite::Location& at) {
        const Node& conv = rw.graph().node(at.nodes[0]);
        return outside_blocks(rw.graph().type(conv.inputs.at(1)).shape, conv.attributes.get_int("group", 1), block);
    });
    return {rw.graph(), applied};
}

}  // namespace rlflow::opt
