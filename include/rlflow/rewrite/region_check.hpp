#pragma once
/// \file
/// Verification region by region, for graphs the reference executor cannot run whole
/// (they contain opaque ops).
///
/// Rewrites never touch opaque nodes and keep the names of the tensors they replace, so a
/// rewritten graph differs from its original in a set of *regions*: connected groups of
/// nodes of the original that are gone (removed) and of the rewritten graph that are new
/// (added), which define the same named tensors (the region's outputs) for the unchanged
/// rest of the graph. A node is unchanged when the other graph has a node defining the
/// same output tensors with the same op, attributes, data and input tensor names.
/// Unchanged nodes compute the same function of the same named tensors, so if every
/// region's added nodes compute its outputs as its removed nodes did, from the tensors at
/// its boundary, the two graphs are equivalent. check_regions checks exactly that, on
/// seeded random values at each region's boundary (weights keep their data, or get the
/// seeded random data check_equivalence gives them).

#include <rlflow/rewrite/soundness.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rlflow::rewrite {

/// One changed part of a rewritten graph; every list is sorted.
struct Region {
    /// Names of the original's nodes that the rewritten graph no longer has.
    std::vector<std::string> removed;
    /// Names of the rewritten graph's nodes that the original does not have.
    std::vector<std::string> added;
    /// Tensors the region reads from the unchanged rest of the graph. Weights and
    /// constants keep their data; the others get random values.
    std::vector<std::string> inputs;
    /// Tensors the region defines for unchanged nodes (both sides name them alike).
    std::vector<std::string> outputs;
    /// Graph outputs (indices) the region defines on at least one side; a rewrite may
    /// make a graph output refer to another tensor.
    std::vector<std::size_t> graph_outputs;
};

/// The verdict on one region.
struct RegionCheck {
    Region region;
    EquivalenceReport report;
};

/// The verdict of check_regions.
struct RegionsReport {
    bool equal = true;
    /// Largest |original - rewritten| over all regions, outputs and trials.
    double max_abs_diff = 0;
    std::vector<RegionCheck> regions;
    /// Why the graphs are unequal (which region, which output), for people.
    std::string detail;
};

namespace detail {

/// One side of the comparison: a graph, with its nodes keyed by the names of the tensors
/// they define.
class RegionSide {
public:
    explicit RegionSide(const Graph& g) : m_graph(g) {
        for (const Node& n : g.nodes())
            for (std::uint32_t i = 0; i < n.outputs.size(); ++i) {
                const auto [it, fresh] = m_producer.emplace(n.outputs[i].name, TensorRef{n.id, i});
                RLFLOW_EXPECTS(fresh, graph_error, "tensor name '" + n.outputs[i].name + "' is defined twice");
            }
    }

    [[nodiscard]] const Graph& graph() const noexcept { return m_graph; }
    [[nodiscard]] const std::string& tensor_name(TensorRef ref) const { return m_graph.output(ref).name; }
    [[nodiscard]] std::optional<TensorRef> producer(const std::string& tensor) const {
        const auto it = m_producer.find(tensor);
        return it == m_producer.end() ? std::nullopt : std::optional(it->second);
    }
    /// The node defining the same tensors in `other` and computing them the same way, if any.
    [[nodiscard]] bool unchanged_in(const Node& n, const RegionSide& other) const {
        const auto ref = other.producer(n.outputs[0].name);
        if (!ref) return false;
        const Node& m = other.graph().node(ref->node);
        if (ref->index != 0 || m.op != n.op || m.op_type != n.op_type || m.domain != n.domain
            || !(m.attributes == n.attributes) || m.inputs.size() != n.inputs.size()
            || m.outputs.size() != n.outputs.size())
            return false;
        for (std::size_t i = 0; i < n.outputs.size(); ++i)
            if (m.outputs[i].name != n.outputs[i].name || !(m.outputs[i].type == n.outputs[i].type)) return false;
        for (std::size_t i = 0; i < n.inputs.size(); ++i) {
            if (n.inputs[i].present() != m.inputs[i].present()) return false;
            if (n.inputs[i].present() && tensor_name(n.inputs[i]) != other.tensor_name(m.inputs[i])) return false;
        }
        if (n.data != m.data && (!n.data || !m.data || !(*n.data == *m.data))) return false;
        return true;
    }

private:
    const Graph& m_graph;
    std::map<std::string, TensorRef> m_producer;
};

/// Union-find over the changed nodes of both sides and the tensors they define.
class RegionSets {
public:
    std::size_t key(const std::string& k) {
        const auto [it, fresh] = m_index.emplace(k, m_parent.size());
        if (fresh) m_parent.push_back(m_parent.size());
        return it->second;
    }
    std::size_t find(std::size_t x) {
        while (m_parent[x] != x) x = m_parent[x] = m_parent[m_parent[x]];
        return x;
    }
    void unite(std::size_t a, std::size_t b) { m_parent[find(a)] = find(b); }

private:
    std::map<std::string, std::size_t> m_index;
    std::vector<std::size_t> m_parent;
};

/// The changed nodes of one side.
[[nodiscard]] inline std::vector<NodeId> changed_nodes(const RegionSide& side, const RegionSide& other) {
    std::vector<NodeId> changed;
    for (const Node& n : side.graph().nodes())
        if (!side.unchanged_in(n, other)) changed.push_back(n.id);
    return changed;
}

/// Groups the changed nodes of both sides: a node joins the tensors it defines and the
/// changed nodes whose tensors it reads; the two sides meet in the tensors both define
/// and in the graph outputs both compute.
/// Returns, per side, the region index of each changed node, and the region count.
struct Grouping {
    std::vector<std::map<NodeId, std::size_t>> region_of{2};
    std::size_t count = 0;
};

[[nodiscard]] inline Grouping group_changes(const RegionSide (&sides)[2], const std::vector<NodeId> (&changed)[2]) {
    RegionSets sets;
    const auto node_key = [](int side, NodeId id) { return std::to_string(side) + "#" + std::to_string(id.value); };
    for (int s = 0; s < 2; ++s) {
        const std::set<NodeId> changed_here(changed[s].begin(), changed[s].end());
        for (const NodeId id : changed[s]) {
            const Node& n = sides[s].graph().node(id);
            const std::size_t me = sets.key(node_key(s, id));
            for (const NodeOutput& out : n.outputs) sets.unite(me, sets.key("t:" + out.name));
            for (const TensorRef in : n.inputs)
                if (in.present() && changed_here.contains(in.node)) sets.unite(me, sets.key(node_key(s, in.node)));
        }
        const auto& outputs = sides[s].graph().outputs();
        for (std::size_t k = 0; k < outputs.size(); ++k)
            if (changed_here.contains(outputs[k].value.node))
                sets.unite(sets.key(node_key(s, outputs[k].value.node)), sets.key("out#" + std::to_string(k)));
    }
    Grouping grouping;
    std::map<std::size_t, std::size_t> numbering;
    for (int s = 0; s < 2; ++s)
        for (const NodeId id : changed[s]) {
            const auto [it, fresh] = numbering.emplace(sets.find(sets.key(node_key(s, id))), numbering.size());
            grouping.region_of[s][id] = it->second;
        }
    grouping.count = numbering.size();
    return grouping;
}

/// The tensors a region of one side reads from outside it and defines for unchanged
/// nodes (graph outputs are handled apart).
inline void boundary(const RegionSide& side, const std::map<NodeId, std::size_t>& region_of, std::size_t region,
                     std::set<std::string>& inputs, std::set<std::string>& outputs) {
    const Graph& g = side.graph();
    const auto inside = [&](NodeId id) {
        const auto it = region_of.find(id);
        return it != region_of.end() && it->second == region;
    };
    for (const auto& [id, r] : region_of) {
        if (r != region) continue;
        const Node& n = g.node(id);
        for (const TensorRef in : n.inputs)
            if (in.present() && !inside(in.node)) inputs.insert(side.tensor_name(in));
        for (const NodeOutput& out : n.outputs)
            if (std::any_of(out.uses.begin(), out.uses.end(), [&](const Use& u) { return !inside(u.node); }))
                outputs.insert(out.name);
    }
}

/// A graph computing one side's region from its inputs: boundary tensors defined by
/// weights or constants keep their node (and data), other boundary tensors become graph
/// inputs; its outputs are the region's output tensors, then its graph outputs. Throws
/// graph_error for an opaque node in the region.
[[nodiscard]] inline Graph region_graph(const RegionSide& side, const std::map<NodeId, std::size_t>& region_of,
                                        std::size_t region, const Region& r,
                                        const std::map<std::string, TensorType>& input_types) {
    const Graph& g = side.graph();
    Graph out;
    std::map<std::string, TensorRef> defined;  // tensor name -> its ref in `out`
    for (const std::string& name : r.inputs) {
        const auto ref = side.producer(name);
        const Node* source = ref ? &g.node(ref->node) : nullptr;
        if (source && source->op == OpKind::Weight)
            defined[name] = {out.add_weight(name, source->outputs[0].type, source->data), 0};
        else if (source && source->op == OpKind::Constant)
            defined[name] = {out.add_constant(name, *source->data), 0};
        else
            defined[name] = {out.add_input(name, input_types.at(name)), 0};
    }
    for (const NodeId id : g.topological_order()) {
        const auto it = region_of.find(id);
        if (it == region_of.end() || it->second != region) continue;
        const Node& n = g.node(id);
        RLFLOW_EXPECTS(!n.traits().has(op_flag_opaque), graph_error,
                       "cannot verify a rewrite of " + n.describe() + ": rlflow cannot execute it");
        NodeId copy;
        if (n.op == OpKind::Weight) copy = out.add_weight(n.name, n.outputs[0].type, n.data);
        else if (n.op == OpKind::Constant) copy = out.add_constant(n.name, *n.data);
        else {
            std::vector<TensorRef> ins;
            for (const TensorRef in : n.inputs) ins.push_back(defined.at(side.tensor_name(in)));
            copy = out.add_node(n.op, std::move(ins), n.attributes, n.name);
        }
        for (std::uint32_t i = 0; i < n.outputs.size(); ++i) {
            out.rename_output({copy, i}, n.outputs[i].name);
            defined[n.outputs[i].name] = {copy, i};
        }
    }
    for (const std::string& name : r.outputs) out.add_output(defined.at(name), name);
    for (const std::size_t k : r.graph_outputs) {
        const GraphOutput& o = g.outputs()[k];
        out.add_output(defined.at(side.tensor_name(o.value)), o.name);
    }
    return out;
}

template <typename Range>
[[nodiscard]] std::vector<std::string> sorted(const Range& r) {
    std::vector<std::string> v(r.begin(), r.end());
    std::sort(v.begin(), v.end());
    return v;
}

/// What changed between two graphs: both sides, the changed nodes' regions, and the
/// regions' boundaries.
struct Changes {
    RegionSide sides[2];
    Grouping grouping;
    std::vector<Region> regions;

    Changes(const Graph& original, const Graph& rewritten) : sides{RegionSide(original), RegionSide(rewritten)} {
        const std::vector<NodeId> changed[2] = {changed_nodes(sides[0], sides[1]), changed_nodes(sides[1], sides[0])};
        grouping = group_changes(sides, changed);
        regions.resize(grouping.count);
        std::vector<std::set<std::string>> inputs(grouping.count), outputs(grouping.count);
        for (int s = 0; s < 2; ++s) {
            for (const auto& [id, r] : grouping.region_of[s])
                (s == 0 ? regions[r].removed : regions[r].added).push_back(sides[s].graph().node(id).name);
            for (std::size_t r = 0; r < grouping.count; ++r)
                boundary(sides[s], grouping.region_of[s], r, inputs[r], outputs[r]);
        }
        // A graph output belongs to the region of whichever side computes it anew; a side
        // where an unchanged node computes it reads that tensor as a boundary input.
        for (std::size_t k = 0; k < sides[0].graph().outputs().size(); ++k) {
            std::optional<std::size_t> region;
            for (int s = 0; s < 2; ++s)
                if (const auto it = grouping.region_of[s].find(sides[s].graph().outputs()[k].value.node);
                    it != grouping.region_of[s].end())
                    region = it->second;
            if (!region) continue;
            regions[*region].graph_outputs.push_back(k);
            for (int s = 0; s < 2; ++s) {
                const TensorRef value = sides[s].graph().outputs()[k].value;
                if (!grouping.region_of[s].contains(value.node)) inputs[*region].insert(sides[s].tensor_name(value));
            }
        }
        for (std::size_t r = 0; r < grouping.count; ++r) {
            std::sort(regions[r].removed.begin(), regions[r].removed.end());
            std::sort(regions[r].added.begin(), regions[r].added.end());
            regions[r].inputs = sorted(inputs[r]);
            regions[r].outputs = sorted(outputs[r]);
        }
    }

    /// Why region `r` cannot be compared (an undefined or doubly typed boundary tensor,
    /// an output one side does not define), or nothing; fills the input types.
    [[nodiscard]] std::optional<std::string> boundary_problem(std::size_t r,
                                                              std::map<std::string, TensorType>& types) const {
        const Region& region = regions[r];
        for (const std::string& name : region.inputs) {
            std::optional<TensorType> type;
            for (const RegionSide& side : sides)
                if (const auto ref = side.producer(name)) {
                    const TensorType& t = side.graph().type(*ref);
                    if (type && !(*type == t)) return "input '" + name + "' has two types";
                    type = t;
                }
            if (!type) return "input '" + name + "' is not defined";
            types.emplace(name, *type);
        }
        for (const std::string& name : region.outputs)
            for (int s = 0; s < 2; ++s) {
                const auto ref = sides[s].producer(name);
                const auto it = ref ? grouping.region_of[s].find(ref->node) : grouping.region_of[s].end();
                if (it == grouping.region_of[s].end() || it->second != r)
                    return "output '" + name + "' is not defined by its " + (s == 0 ? "original" : "rewritten") + " side";
            }
        return std::nullopt;
    }

    /// Region `r` of side `s` as a graph of its own (see region_graph).
    [[nodiscard]] Graph side_graph(int s, std::size_t r, const std::map<std::string, TensorType>& types) const {
        return region_graph(sides[s], grouping.region_of[s], r, regions[r], types);
    }
};

}  // namespace detail

/// The regions in which `rewritten` differs from `original` (see the file comment).
/// Throws graph_error if a tensor name is defined twice in either graph.
[[nodiscard]] inline std::vector<Region> changed_regions(const Graph& original, const Graph& rewritten) {
    return detail::Changes(original, rewritten).regions;
}

/// Checks `rewritten` against `original` region by region (see the file comment): each
/// region's two sides run in the reference executor on the same seeded random boundary
/// values, `options.trials` times. Graph outputs must keep their names and order. A
/// region that contains an op rlflow cannot execute, or whose sides read or define
/// different tensors, makes the graphs unequal (it cannot be verified).
[[nodiscard]] inline RegionsReport check_regions(const Graph& original, const Graph& rewritten,
                                                 const EquivalenceOptions& options = {}) {
    RegionsReport report;
    const auto fail = [&](std::string why) {
        report.equal = false;
        report.max_abs_diff = INFINITY;
        report.detail = std::move(why);
        return report;
    };
    const auto output_names = [](const Graph& g) {
        std::vector<std::string> names;
        for (const GraphOutput& o : g.outputs()) names.push_back(o.name);
        return names;
    };
    if (output_names(original) != output_names(rewritten)) return fail("the graph outputs differ");
    std::optional<detail::Changes> changes;
    try {
        changes.emplace(original, rewritten);
    } catch (const error& e) {
        return fail(e.what());
    }
    // A graph output no region computes must be the same unchanged tensor on both sides.
    std::vector<bool> in_region(original.outputs().size(), false);
    for (const Region& region : changes->regions)
        for (const std::size_t k : region.graph_outputs) in_region[k] = true;
    for (std::size_t k = 0; k < in_region.size(); ++k)
        if (!in_region[k] && original.output(original.outputs()[k].value).name
                                 != rewritten.output(rewritten.outputs()[k].value).name)
            return fail("graph output '" + original.outputs()[k].name + "' refers to another tensor");
    for (std::size_t r = 0; r < changes->regions.size(); ++r) {
        const Region& region = changes->regions[r];
        const std::string where = "region " + std::to_string(r) + " (" + std::to_string(region.removed.size())
                                  + " nodes replaced by " + std::to_string(region.added.size()) + ")";
        std::map<std::string, TensorType> types;
        if (const auto problem = changes->boundary_problem(r, types)) return fail(where + ": " + *problem);
        RegionCheck result{region, {}};
        try {
            result.report = check_equivalence(changes->side_graph(0, r, types), changes->side_graph(1, r, types), options);
        } catch (const error& e) {
            return fail(where + ": " + e.what());
        }
        report.max_abs_diff = std::max(report.max_abs_diff, result.report.max_abs_diff);
        if (!result.report.equal && report.equal) {
            report.equal = false;
            const std::size_t k = result.report.mismatched_output.value_or(0);
            report.detail = where + ", "
                            + (k < region.outputs.size()
                                   ? "tensor '" + region.outputs[k] + "'"
                                   : "graph output '" + original.outputs()[region.graph_outputs.at(k - region.outputs.size())].name + "'")
                            + ": " + result.report.detail;
        }
        report.regions.push_back(std::move(result));
    }
    return report;
}

}  // namespace rlflow::rewrite
