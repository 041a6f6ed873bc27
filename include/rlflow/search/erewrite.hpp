#pragma once
/// \file
/// Applying a rule at an e-match. The matched e-nodes are written out as a small graph,
/// the witness: one graph input per variable class (with the class's type), then the
/// matched nodes over them. The graph matcher must accept the match in the witness
/// (is_location: symbols, derived attributes, shape constraints, a target that fits),
/// and the applier's own code instantiates the target there. The new nodes go into the
/// e-graph, and each replaced output's class is united with its replacement's. So a rule
/// means the same in the e-graph as in the rewriter, by construction.
///
/// A rule with several outputs is not applied where it would close a cycle through
/// classes (Tensat's cycle filtering, done here as each match is applied): when one
/// replaced class is reachable from a class the new nodes read. Merging two convolutions
/// where one's input depends on the other's output is such a match. A cycle of that kind
/// holds no graph, but it makes extraction's ILP search for an acyclic choice, which is
/// what kept CBC from any solution within a minute on inception-v3. Rules with one
/// output are not checked, and they do close cycles: a collapse (x = Transpose(
/// Transpose(x))), or a target that already exists above the replaced class. On
/// inception-v3 with two multi-output rounds, Concat(conv(x, w1), conv(x, w2)) =
/// conv(x, Concat(w1, w2)) unites the concatenation with the merged convolution, whose
/// Split already stands in conv(x, w1)'s class. Extraction deals with those
/// (extract_ilp.hpp).

#include <rlflow/rewrite/applier.hpp>
#include <rlflow/search/egraph_convert.hpp>
#include <rlflow/search/ematch.hpp>

#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>
#include <vector>

namespace rlflow::search {

namespace detail {

/// The witness of an e-match: the graph, the location in it, and the class of each of
/// its tensors.
struct Witness {
    Graph graph;
    rewrite::Location location;
    std::map<TensorRef, ClassId> class_of;
};

/// The class -> witness tensor lookup for `e`'s children; nullopt when a child is not
/// among the match's tensors.
[[nodiscard]] inline std::optional<std::vector<TensorRef>> witness_inputs(const EGraph& eg, const ENode& e,
                                                                          const std::map<ClassId, TensorRef>& tensor) {
    std::vector<TensorRef> inputs;
    for (const ClassId c : e.children) {
        const auto it = tensor.find(eg.find(c));
        if (it == tensor.end()) return std::nullopt;
        inputs.push_back(it->second);
    }
    return inputs;
}

/// Writes the witness of `m`; nullopt when the matched nodes cannot be written as a graph.
[[nodiscard]] inline std::optional<Witness> make_witness(const EGraph& eg, const rewrite::Rule& rule, const EMatch& m) {
    Witness w;
    std::map<ClassId, TensorRef> tensor;
    for (std::uint32_t v = 0; v < rule.variables.size(); ++v) {
        const ClassId c = eg.find(m.variables[v]);
        if (!tensor.contains(c)) tensor[c] = {w.graph.add_input("v" + std::to_string(v), eg.data(c).types.at(0)), 0};
        w.location.variables[v] = tensor[c];
    }
    for (std::uint32_t q = 0; q < rule.source.size(); ++q) {
        const ENode& e = eg.node(m.nodes[q]);
        const auto inputs = witness_inputs(eg, e, tensor);
        if (!inputs) return std::nullopt;
        const NodeId id = e.payload.op == OpKind::Constant ? w.graph.add_constant({}, *e.payload.data)
                                                            : w.graph.add_node(e.payload.op, *inputs, e.payload.attributes);
        w.location.nodes[q] = id;
        for (std::uint32_t k = 0; k < e.num_outputs; ++k) {
            const ClassId out = output_class(eg, m.nodes[q], k);
            if (out != no_class) tensor.emplace(out, TensorRef{id, k});
        }
    }
    for (const auto& [cls, ref] : tensor) w.class_of[ref] = cls;
    return w;
}

/// The class of witness tensor `t`, adding the created node that makes it (and the nodes
/// it reads) to the e-graph first.
inline ClassId class_of_tensor(EGraph& eg, Witness& w, TensorRef t, std::uint32_t rule) {
    if (const auto it = w.class_of.find(t); it != w.class_of.end()) return it->second;
    const Node& n = w.graph.node(t.node);
    std::vector<ClassId> children;
    for (const TensorRef& in : n.inputs) children.push_back(in.present() ? class_of_tensor(eg, w, in, rule) : no_class);
    ENode e = enode_of(n, std::move(children));
    e.origin = NodeId{};
    e.payload.name.clear();
    e.made_by = rule;
    std::vector<TensorType> types;
    for (const NodeOutput& o : n.outputs) types.push_back(o.type);
    const std::vector<ClassId> outs = add_outputs(eg, std::move(e), types);
    for (std::uint32_t k = 0; k < outs.size(); ++k) w.class_of[{t.node, k}] = outs[k];
    return w.class_of.at(t);
}

/// Whether a class in `targets` is reachable from `from` along e-node children. The
/// search leaves out classes below the lowest target's level, which reach none of them
/// (egraph.hpp), so it costs in proportion to the classes between, not to the e-graph.
[[nodiscard]] inline bool reaches(const EGraph& eg, const std::vector<ClassId>& from, const std::set<ClassId>& targets) {
    if (targets.empty()) return false;
    std::uint64_t floor = std::numeric_limits<std::uint64_t>::max();
    for (const ClassId t : targets) floor = std::min(floor, eg.level(t));
    std::unordered_set<ClassId> seen;
    std::vector<ClassId> stack;
    // Marks a class when it is first met, so that each is expanded once (pushing every
    // child of every member before checking made the stack grow with duplicates: most of
    // NasNet-A's exploring time went here).
    const auto meet = [&](ClassId c) {
        c = eg.find(c);
        if (eg.level(c) < floor || !seen.insert(c).second) return false;
        stack.push_back(c);
        return targets.contains(c);
    };
    for (const ClassId c : from)
        if (c != no_class && meet(c)) return true;
    while (!stack.empty()) {
        const ClassId c = stack.back();
        stack.pop_back();
        for (const ENodeId n : eg.members(c))
            for (const ClassId child : eg.node(n).children)
                if (child != no_class && meet(child)) return true;
    }
    return false;
}

}  // namespace detail

/// A match the graph matcher accepted: its witness, with the target's nodes added.
struct AcceptedMatch {
    detail::Witness witness;
    std::vector<NodeId> created;
};

/// The witness of `m` with the target instantiated, if the graph matcher accepts the
/// match there (see the file comment); nullopt otherwise.
[[nodiscard]] inline std::optional<AcceptedMatch> accept_ematch(const EGraph& eg, const rewrite::RuleSet& rules, const EMatch& m) {
    const rewrite::Rule& rule = rules[m.rule];
    try {
        std::optional<detail::Witness> w = detail::make_witness(eg, rule, m);
        if (!w) return std::nullopt;
        const rewrite::GraphIndex index(w->graph);
        rewrite::Matcher matcher(rules, w->graph, index);
        if (!matcher.is_location(m.rule, w->location)) return std::nullopt;
        rewrite::detail::SymbolTable symbols;
        rewrite::detail::bind_symbols(rule, w->graph, w->location, symbols);
        rewrite::detail::TargetInstance instance;
        if (!rewrite::detail::instantiate_target(rule, rewrite::detail::EvalContext{w->graph, w->location, symbols}, instance))
            return std::nullopt;
        std::vector<NodeId> created = rewrite::detail::add_target(w->graph, rule, w->location, instance);
        return AcceptedMatch{std::move(*w), std::move(created)};
    } catch (const shape_error&) {
        return std::nullopt;  // the target's ops do not fit these shapes (Tensat checks this too)
    } catch (const graph_error&) {
        return std::nullopt;  // nor their attributes
    }
}

namespace detail {

/// Whether applying accepted match `a` of `rule` would make one of its replaced classes
/// reachable from itself (see the file comment): whether a replaced class is reachable
/// from the existing classes that the target's new nodes read, or that replace one.
[[nodiscard]] inline bool closes_cycle(const EGraph& eg, const rewrite::Rule& rule, const AcceptedMatch& a) {
    const Witness& w = a.witness;
    const std::set<NodeId> created(a.created.begin(), a.created.end());
    std::vector<ClassId> read;
    const auto existing = [&](TensorRef t) {
        if (const auto it = w.class_of.find(t); it != w.class_of.end()) read.push_back(it->second);
    };
    for (const NodeId n : a.created)
        for (const TensorRef& in : w.graph.node(n).inputs)
            if (in.present() && !created.contains(in.node)) existing(in);
    std::set<ClassId> replaced;
    for (const rewrite::OutputMapping& o : rule.outputs) {
        // A source output with no class yet (an unused output of a tuple) is new: unreachable.
        if (const auto it = w.class_of.find(w.location.tensor(o.source)); it != w.class_of.end()) replaced.insert(eg.find(it->second));
        const TensorRef by = rewrite::detail::resolve(o.target, w.location, a.created);
        if (!created.contains(by.node)) existing(by);
    }
    return reaches(eg, read, replaced);
}

}  // namespace detail

/// Applies rule `m.rule` at `m` if the graph matcher accepts it: adds the target's
/// e-nodes and unites each replaced class with its replacement. Returns whether it was
/// applied (the e-graph may not have changed: its nodes may all exist already).
inline bool apply_ematch(EGraph& eg, const rewrite::RuleSet& rules, const EMatch& m) {
    std::optional<AcceptedMatch> a = accept_ematch(eg, rules, m);
    if (!a) return false;
    detail::Witness& w = a->witness;
    if (rules[m.rule].outputs.size() > 1 && detail::closes_cycle(eg, rules[m.rule], *a)) return false;
    std::vector<std::pair<ClassId, ClassId>> unions;  // (replaced, replacement)
    for (const rewrite::OutputMapping& o : rules[m.rule].outputs)
        unions.emplace_back(detail::class_of_tensor(eg, w, w.location.tensor(o.source), m.rule),
                            detail::class_of_tensor(eg, w, rewrite::detail::resolve(o.target, w.location, a->created), m.rule));
    for (const auto& [replaced, by] : unions) eg.merge(replaced, by);
    return true;
}

}  // namespace rlflow::search
