#pragma once
/// \file
/// What the graph-rewriting environment shows an agent after each step (the RLFlow
/// thesis §3.3): the graph as features for the graph network, which
/// transformations (xfers) apply and where, and for each location the nodes it matched,
/// so that a location head can score a location by the embeddings of its nodes
/// (pointer-style: it works on graphs of any size).
///
/// Locations are a prefix: rule r's valid locations are 0 .. location_count(r) - 1 (at
/// most L = max_locations), in the location index's deterministic order. The masks are
/// derived from the counts; the last xfer, N, is NO-OP and is always allowed.

#include <rlflow/core/error.hpp>
#include <rlflow/cost/cost_tracker.hpp>
#include <rlflow/nn/graph_features.hpp>
#include <rlflow/rewrite/rewriter.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rlflow::rl {

/// Width of an observation's node features: graph_features' columns, then the op's cost.
inline constexpr nn::FeatureSizes observation_feature_sizes{
    .edge = nn::graph_feature_sizes.edge,
    .node = nn::graph_feature_sizes.node + 1,
    .global = nn::graph_feature_sizes.global,
};

/// Microseconds that the node cost feature's log scaling maps near 1 (see nn::log_feature).
inline constexpr double cost_feature_unit_per_ms = 1e3;

/// One observation of the environment.
struct Observation {
    /// nn::graph_features of the graph, each node row followed by log_feature of its cost
    /// in microseconds (0 for sources and weight-only nodes); rows are live nodes in id
    /// order.
    nn::HostGraph graph;
    /// N, the number of xfers (rules); xfer N is NO-OP.
    std::uint32_t num_xfers = 0;
    /// L, the most locations an xfer offers.
    std::uint32_t max_locations = 0;
    /// N + 1 entries: 1 where the xfer has a location; the last (NO-OP) is always 1.
    std::vector<std::uint8_t> xfer_mask;
    /// N + 1 entries: where xfer r's locations start in location_node_begin (prefix sums
    /// of the location counts).
    std::vector<std::int32_t> xfer_location_begin;
    /// One entry per valid location of every xfer, plus one: where its nodes start in
    /// location_nodes.
    std::vector<std::int32_t> location_node_begin;
    /// The graph rows (indices into graph's nodes) each location matched.
    std::vector<std::int32_t> location_nodes;
    /// One entry per valid location of every xfer (as location_node_begin): the one-step
    /// gain of that rewrite under the cost model's prices, the fraction of the current
    /// cost it saves times the reward scale (negative where it costs more). A lookahead of
    /// one step, as greedy search takes: it lets the policy weigh what a rewrite earns now
    /// against where it leads.
    std::vector<float> location_gain;

    /// How many locations xfer `r` offers (0 for NO-OP).
    [[nodiscard]] std::uint32_t location_count(std::uint32_t r) const {
        if (r >= num_xfers) return 0;
        return static_cast<std::uint32_t>(xfer_location_begin[r + 1] - xfer_location_begin[r]);
    }
    /// Location `l` of xfer `r`'s one-step gain.
    [[nodiscard]] float gain(std::uint32_t r, std::uint32_t l) const {
        return location_gain[static_cast<std::size_t>(xfer_location_begin[r]) + l];
    }
    /// L entries: 1 for xfer r's valid locations.
    [[nodiscard]] std::vector<std::uint8_t> location_mask(std::uint32_t r) const {
        std::vector<std::uint8_t> mask(max_locations, 0);
        std::fill_n(mask.begin(), location_count(r), 1);
        return mask;
    }
    /// The graph rows location `l` of xfer `r` matched.
    [[nodiscard]] std::span<const std::int32_t> location(std::uint32_t r, std::uint32_t l) const {
        const auto k = static_cast<std::size_t>(xfer_location_begin[r]) + l;
        return std::span<const std::int32_t>(location_nodes)
            .subspan(static_cast<std::size_t>(location_node_begin[k]),
                     static_cast<std::size_t>(location_node_begin[k + 1] - location_node_begin[k]));
    }
    /// Whether action (xfer, location) is allowed: NO-OP (location ignored), or a valid
    /// location of an xfer.
    [[nodiscard]] bool allows(std::uint32_t xfer, std::uint32_t location) const {
        return xfer == num_xfers || (xfer < num_xfers && location < location_count(xfer));
    }
};

/// A one-step gain (reward units) on the signed log scale the agents' networks read: a
/// gain of gain_unit maps to ln 2, and the range from a hundredth of a percent to tens of
/// percents fits in a few units.
[[nodiscard]] inline float scaled_gain(float gain) {
    constexpr double gain_unit = 0.01;
    const double magnitude = std::log1p(std::abs(static_cast<double>(gain)) / gain_unit);
    return static_cast<float>(gain < 0 ? -magnitude : magnitude);
}

/// The location of xfer `r` (which must have one) with the largest one-step gain, the
/// first in index order among equals.
[[nodiscard]] inline std::uint32_t best_location(const Observation& o, std::uint32_t r) {
    const std::uint32_t count = o.location_count(r);
    RLFLOW_EXPECTS(count > 0, precondition_error, "best_location: xfer " + std::to_string(r) + " has no location");
    std::uint32_t best = 0;
    for (std::uint32_t l = 1; l < count; ++l)
        if (o.gain(r, l) > o.gain(r, best)) best = l;
    return best;
}

/// N entries: each xfer's best one-step gain, scaled (scaled_gain); 0 for an xfer
/// without a location.
[[nodiscard]] inline std::vector<float> xfer_best_gains(const Observation& o) {
    std::vector<float> out(o.num_xfers, 0.0f);
    for (std::uint32_t r = 0; r < o.num_xfers; ++r)
        if (o.location_count(r) > 0) out[r] = scaled_gain(o.gain(r, best_location(o, r)));
    return out;
}

/// What observe() keeps from one observation of a graph to the next: the graph's features
/// (nn::GraphFeatureCache) and each node's cost feature, so that after a rewrite only the
/// nodes it touched are described again. An environment owns one per episode.
class ObservationCache {
public:
    /// Forgets nodes `touched` by an edit of `g` (as it is after the edit).
    void forget(const Graph& g, std::span<const NodeId> touched) { m_features.forget(g, touched); }
    /// Forgets everything (a new episode).
    void clear() noexcept {
        m_features.clear();
        m_costs.clear();
    }

private:
    template <cost::CostBackend Backend>
    friend Observation observe(const Graph&, const rewrite::LocationIndex&, const cost::CostTracker<Backend>&,
                               std::vector<float>, ObservationCache&);

    /// log_feature of a node's cost in microseconds, computed again only when the cost changed.
    [[nodiscard]] double cost_feature(NodeId id, double cost_ms) {
        if (id.value >= m_costs.size()) m_costs.resize(id.value + 1);
        CostFeature& c = m_costs[id.value];
        if (!c.known || c.cost_ms != cost_ms) c = {true, cost_ms, nn::log_feature(cost_ms * cost_feature_unit_per_ms)};
        return c.feature;
    }

    struct CostFeature {
        bool known = false;
        double cost_ms = 0;
        double feature = 0;
    };
    nn::GraphFeatureCache m_features;
    std::vector<CostFeature> m_costs;  // by node id
};

/// The observation of graph `g` with its location `index`, priced by `tracker` (both
/// current), with `gains` (location_gain) of its locations in order; `cache` holds what is
/// known of `g` from earlier observations (forgotten where edits touched it since).
template <cost::CostBackend Backend>
[[nodiscard]] Observation observe(const Graph& g, const rewrite::LocationIndex& index, const cost::CostTracker<Backend>& tracker,
                                  std::vector<float> gains, ObservationCache& cache) {
    Observation o;
    o.num_xfers = static_cast<std::uint32_t>(index.num_rules());
    o.max_locations = static_cast<std::uint32_t>(index.max_locations());

    // The features, with the cost column of every node row filled in.
    o.graph = cache.m_features.features(g, 1);
    const auto width = static_cast<std::size_t>(observation_feature_sizes.node);
    std::size_t next = 0;
    for (const Node& n : g.nodes())
        o.graph.nodes[next++ * width + width - 1] = cache.cost_feature(n.id, tracker.node_cost(n.id));

    // Masks and the nodes of every valid location.
    o.xfer_mask = index.xfer_mask();
    o.xfer_location_begin.reserve(o.num_xfers + 1);
    o.location_node_begin.push_back(0);
    for (std::uint32_t r = 0; r < o.num_xfers; ++r) {
        o.xfer_location_begin.push_back(static_cast<std::int32_t>(o.location_node_begin.size() - 1));
        const std::size_t count = index.num_choices(r);
        const std::span<const rewrite::Location> locations = index.locations(r);
        for (std::size_t l = 0; l < count; ++l) {
            for (const NodeId id : locations[l].nodes)
                if (id.valid()) o.location_nodes.push_back(cache.m_features.row(id));
            o.location_node_begin.push_back(static_cast<std::int32_t>(o.location_nodes.size()));
        }
    }
    o.xfer_location_begin.push_back(static_cast<std::int32_t>(o.location_node_begin.size() - 1));
    RLFLOW_EXPECTS(gains.size() + 1 == o.location_node_begin.size(), precondition_error,
                   "observe: " + std::to_string(gains.size()) + " location gains for "
                       + std::to_string(o.location_node_begin.size() - 1) + " locations");
    o.location_gain = std::move(gains);
    return o;
}

}  // namespace rlflow::rl
