#pragma once
/// \file
/// From a graph to an e-graph, and from a choice of one e-node per class back to a graph.
///
/// A graph's nodes enter in topological order: inputs, weights and Opaque nodes as fixed
/// e-nodes, every other node (Constants too) as an op e-node that remembers the node it
/// came from, so that nodes no rewrite touched keep their names when extracted. Equal
/// nodes of the input become one e-node.
///
/// Back to a graph: the classes the roots reach through the chosen e-nodes are emitted in
/// post order (a cycle among the choices throws, so no extraction can write one); the
/// input's graph inputs and weights come first, in their order, and nodes nothing reads
/// are removed at the end, graph inputs excepted. Nodes taken from the input keep their
/// names; a new node's output is named after an input tensor of its class.

#include <rlflow/rewrite/rule_set.hpp>
#include <rlflow/search/egraph.hpp>

#include <map>

#include <string>
#include <vector>

namespace rlflow::search {

/// An e-graph seeded with a graph, and the classes of the graph's outputs.
struct SeededEGraph {
    EGraph egraph;
    std::vector<ClassId> roots;
    /// By graph node id: the class of each output (as added; canonicalise with find).
    std::vector<std::vector<ClassId>> tensor_class;
};

namespace detail {

/// The e-node of graph node `n` with its children's classes.
[[nodiscard]] inline ENode enode_of(const Node& n, std::vector<ClassId> children) {
    ENode e;
    const bool fixed = n.traits().has(op_flag_opaque) || (n.traits().has(op_flag_source) && n.op != OpKind::Constant);
    e.kind = fixed ? ENode::Kind::fixed : ENode::Kind::op;
    e.payload = n;
    e.payload.inputs.clear();
    e.payload.outputs.clear();
    e.children = std::move(children);
    e.origin = n.id;
    e.num_outputs = static_cast<std::uint32_t>(n.outputs.size());
    return e;
}

/// Adds `node` with its output `types`; returns the tensor class of each output (through
/// `output` e-nodes over a tuple class when there are several).
inline std::vector<ClassId> add_outputs(EGraph& eg, ENode node, const std::vector<TensorType>& types) {
    if (types.size() == 1) return {eg.add(std::move(node), types)};
    const ClassId tuple = eg.add(std::move(node), types);
    std::vector<ClassId> out;
    for (std::uint32_t k = 0; k < types.size(); ++k) {
        ENode pick;
        pick.kind = ENode::Kind::output;
        pick.children = {tuple};
        pick.output = k;
        out.push_back(eg.add(std::move(pick), {types[k]}));
    }
    return out;
}

}  // namespace detail

/// The e-graph of `g`.
[[nodiscard]] inline SeededEGraph seed_egraph(const Graph& g) {
    SeededEGraph s;
    std::vector<std::vector<ClassId>>& tensor = s.tensor_class;
    tensor.resize(g.id_bound());
    for (const NodeId id : g.topological_order()) {
        const Node& n = g.node(id);
        std::vector<ClassId> children;
        for (const TensorRef& in : n.inputs) children.push_back(in.present() ? tensor[in.node.value][in.index] : no_class);
        std::vector<TensorType> types;
        for (const NodeOutput& o : n.outputs) types.push_back(o.type);
        tensor[id.value] = detail::add_outputs(s.egraph, detail::enode_of(n, std::move(children)), types);
    }
    for (const GraphOutput& o : g.outputs()) s.roots.push_back(tensor[o.value.node.value][o.value.index]);
    s.egraph.rebuild();
    return s;
}

namespace detail {

/// A walk of the classes `roots` reach through `choice` (class id -> e-node): their
/// post order (children first), or, where the chosen e-nodes form a cycle, the classes
/// of the first cycle found, in order along it (the order is then incomplete).
struct ChoiceWalk {
    std::vector<ClassId> order;
    std::vector<ClassId> cycle;
};

/// Walks `choice` from `roots` (see ChoiceWalk). Throws graph_error on a class without a
/// choice.
[[nodiscard]] inline ChoiceWalk walk_choice(const EGraph& eg, const std::vector<ClassId>& roots, const std::vector<ENodeId>& choice) {
    enum : char { unseen, open, done };
    std::vector<char> state(eg.class_bound(), unseen);
    ChoiceWalk walk;
    std::vector<std::pair<ClassId, std::size_t>> stack;  // (class, next child)
    for (const ClassId r : roots) {
        stack.emplace_back(eg.find(r), 0);
        while (!stack.empty()) {
            auto& [c, next] = stack.back();
            if (next == 0 && state[c] != open) {
                if (state[c] == done) {
                    stack.pop_back();
                    continue;
                }
                RLFLOW_EXPECTS(choice[c] != std::numeric_limits<ENodeId>::max(), graph_error,
                               "extraction: e-class " + std::to_string(c) + " has no chosen e-node");
                state[c] = open;
            }
            const std::vector<ClassId>& kids = eg.node(choice[c]).children;
            if (next < kids.size()) {
                const ClassId kid = kids[next] == no_class ? no_class : eg.find(kids[next]);
                ++next;
                if (kid == no_class || state[kid] == done) continue;
                if (state[kid] == open) {
                    auto from = stack.end();
                    while (from != stack.begin() && (from - 1)->first != kid) --from;
                    for (auto it = from - 1; it != stack.end(); ++it) walk.cycle.push_back(it->first);
                    return walk;
                }
                stack.emplace_back(kid, 0);
                continue;
            }
            state[c] = done;
            walk.order.push_back(c);
            stack.pop_back();
        }
    }
    return walk;
}

/// The DAG cost of an acyclic walk of `choice`: each class it reaches, its chosen
/// e-node's price once (`cost` per e-node), summed children first.
[[nodiscard]] inline double walk_cost(const ChoiceWalk& walk, const std::vector<ENodeId>& choice, const std::vector<double>& cost) {
    double total = 0;
    for (const ClassId c : walk.order) total += cost[choice[c]];
    return total;
}

/// The classes `roots` reach through `choice`, children first. Throws graph_error on a
/// cycle or a class without a choice.
[[nodiscard]] inline std::vector<ClassId> post_order(const EGraph& eg, const std::vector<ClassId>& roots,
                                                     const std::vector<ENodeId>& choice) {
    ChoiceWalk walk = walk_choice(eg, roots, choice);
    RLFLOW_EXPECTS(walk.cycle.empty(), graph_error, "extraction: the chosen e-nodes form a cycle");
    return std::move(walk.order);
}

/// Adds the chosen e-node of class `c` to `out`; `ref` holds the tensor of every class
/// emitted so far, `fixed` the new id of each input graph source.
inline void emit(Graph& out, const Graph& input, const EGraph& eg, ClassId c, const ENode& e, std::vector<TensorRef>& ref,
                 const std::vector<NodeId>& fixed) {
    std::vector<TensorRef> inputs;
    for (const ClassId k : e.children) inputs.push_back(k == no_class ? TensorRef{} : ref[eg.find(k)]);
    const Node& p = e.payload;
    if (e.kind == ENode::Kind::output) {
        ref[c] = {inputs.at(0).node, e.output};
        return;
    }
    if (e.kind == ENode::Kind::fixed && p.op != OpKind::Opaque) {
        ref[c] = {fixed[e.origin.value], 0};
        return;
    }
    const std::string name = e.origin.valid() ? p.name : std::string();
    NodeId id;
    if (p.op == OpKind::Opaque) id = out.add_opaque(p.op_type, p.domain, std::move(inputs), eg.data(c).types, p.attributes, name);
    else if (p.op == OpKind::Constant) id = out.add_constant(name, *p.data);
    else id = out.add_node(p.op, std::move(inputs), p.attributes, name);
    if (e.origin.valid())
        for (std::uint32_t k = 0; k < e.num_outputs; ++k) out.rename_output({id, k}, input.node(e.origin).outputs[k].name);
    ref[c] = {id, 0};
}

}  // namespace detail

/// Rule name -> e-nodes of the extraction for `roots` that the rule's rewrites made:
/// what the rules contributed to that graph (eqsat's counterpart of a rewrite sequence).
[[nodiscard]] inline std::map<std::string, std::size_t> rules_used(const EGraph& eg, const std::vector<ClassId>& roots,
                                                                   const std::vector<ENodeId>& choice, const rewrite::RuleSet& rules) {
    std::map<std::string, std::size_t> used;
    for (const ClassId c : detail::post_order(eg, roots, choice))
        if (const std::uint32_t r = eg.node(choice[c]).made_by; r != no_rule) ++used[rules[r].name];
    return used;
}

/// The graph that `choice` (class id -> e-node) extracts for `input`'s outputs from `seeded`.
[[nodiscard]] inline Graph extract_graph(const Graph& input, const SeededEGraph& seeded, const std::vector<ENodeId>& choice) {
    const EGraph& eg = seeded.egraph;
    const std::vector<ClassId> order = detail::post_order(eg, seeded.roots, choice);
    Graph out;
    out.info() = input.info();
    std::vector<NodeId> fixed(input.id_bound());
    for (const NodeId id : input.inputs()) fixed[id.value] = out.add_input(input.node(id).name, input.node(id).output_type());
    for (const NodeId id : input.weights()) {
        const Node& w = input.node(id);
        fixed[id.value] = out.add_weight(w.name, w.output_type(), w.data);
    }
    // A new node's output takes the name of an input tensor of its class, as the applier
    // gives a replacement the replaced tensor's name: unchanged consumers keep reading
    // the names they read, which region-by-region verification relies on.
    std::vector<const std::string*> original_name(eg.class_bound(), nullptr);
    for (const Node& n : input.nodes())
        for (std::uint32_t k = 0; k < n.outputs.size(); ++k)
            if (const ClassId c = eg.find(seeded.tensor_class[n.id.value][k]); !original_name[c]) original_name[c] = &n.outputs[k].name;
    std::vector<TensorRef> ref(eg.class_bound());
    for (const ClassId c : order) {
        const ENode& e = eg.node(choice[c]);
        detail::emit(out, input, eg, c, e, ref, fixed);
        const ENode& maker = e.kind == ENode::Kind::output ? eg.node(choice[eg.find(e.children[0])]) : e;
        if (maker.kind == ENode::Kind::op && !maker.origin.valid() && original_name[c]) out.rename_output(ref[c], *original_name[c]);
    }
    for (std::size_t i = 0; i < seeded.roots.size(); ++i) out.add_output(ref[eg.find(seeded.roots[i])], input.outputs()[i].name);
    out.remove_dead_nodes();
    return out;
}

}  // namespace rlflow::search
