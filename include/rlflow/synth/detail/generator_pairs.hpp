#pragma once
/// \file
/// From enumerated graphs to candidate rules: canonical node order, buckets by
/// fingerprint, classes of graphs whose outputs agree exactly on every input set, and
/// the pruning of candidate pairs (TASO's pruning, Jia et al., SOSP 2019):
/// - common subgraph: both sides hold the same op on the same variables (a smaller rule,
///   with that op's output as a variable, says the same);
/// - common supergraph: single-output sides whose last ops are the same and differ in at
///   most one input (the rule relating those inputs, under that op, says the same);
/// - renaming: rules equal up to the names of their variables (rule variables are
///   untyped, so a rule found on matrices and on square weights is one rule).

#include <rlflow/synth/detail/generator_graph.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

namespace rlflow::synth::detail {

/// `g` with its nodes in post-order of a depth-first walk from its outputs (inputs in
/// slot order), so that equal DAGs get equal node orders whatever path built them.
[[nodiscard]] inline GenGraph canonical_order(const GenGraph& g, std::size_t variables) {
    std::vector<std::size_t> producer;  // tensor - variables -> node index
    for (std::size_t i = 0; i < g.nodes.size(); ++i)
        for (std::size_t k = 0; k < g.nodes[i].num_outputs; ++k) producer.push_back(i);
    std::vector<std::size_t> first_output(g.nodes.size());
    for (std::size_t i = 0, t = 0; i < g.nodes.size(); t += g.nodes[i].num_outputs, ++i) first_output[i] = t;
    std::vector<int> new_index(g.nodes.size(), -1);
    std::vector<std::size_t> order;
    const std::function<void(std::size_t)> walk = [&](std::size_t node) {
        if (new_index[node] >= 0) return;
        for (const std::uint16_t t : g.nodes[node].inputs)
            if (t != no_tensor && t >= variables) walk(producer[t - variables]);
        new_index[node] = static_cast<int>(order.size());
        order.push_back(node);
    };
    for (const std::uint16_t t : g.outputs)
        if (t >= variables) walk(producer[t - variables]);
    GenGraph out;
    out.key = g.key;
    out.fingerprint = g.fingerprint;
    out.redundant = g.redundant;
    std::vector<std::uint16_t> renumber(variables + producer.size());
    for (std::size_t v = 0; v < variables; ++v) renumber[v] = static_cast<std::uint16_t>(v);
    std::size_t next = variables;
    for (const std::size_t node : order) {
        GenNode n = g.nodes[node];
        for (std::uint16_t& t : n.inputs)
            if (t != no_tensor) t = renumber[t];
        for (std::size_t k = 0; k < n.num_outputs; ++k)
            renumber[first_output[node] + variables + k] = static_cast<std::uint16_t>(next++);
        out.nodes.push_back(n);
    }
    for (const std::uint16_t t : g.outputs) out.outputs.push_back(renumber[t]);
    return out;
}

/// The tensor -> (node, output) map of a graph in tensor numbering.
struct Producers {
    std::vector<std::pair<std::size_t, std::size_t>> of;  // indexed by tensor - variables
    explicit Producers(const GenGraph& g) {
        for (std::size_t i = 0; i < g.nodes.size(); ++i)
            for (std::size_t k = 0; k < g.nodes[i].num_outputs; ++k) of.emplace_back(i, k);
    }
};

/// Whether tensor `t` of a graph over `space` is one of its constants.
[[nodiscard]] inline bool is_constant_leaf(const GeneratorSpace& space, std::uint16_t t) {
    return t != no_tensor && t < space.variables.size() && space.variables[t].is_constant();
}

/// Whether tensor `t` of a graph over `space` is one of its variables (not a constant).
[[nodiscard]] inline bool is_variable_leaf(const GeneratorSpace& space, std::uint16_t t) {
    return t != no_tensor && t < space.variables.size() && !space.variables[t].is_constant();
}

/// Writes the expression of tensor `t` of `g` (variables renamed in order of first use
/// through `names`): "concat1(v0,matmul(v1,v2))", ":k" after a node's output k > 0.
inline void write_expression(const GenGraph& g, const Producers& p, std::uint16_t t, std::size_t variables,
                             const GeneratorSpace& space, std::map<std::uint16_t, std::size_t>& names,
                             std::string& out) {
    if (t < variables && space.variables[t].is_constant()) {
        out += space.variables[t].name;  // a constant is itself, never renamed
        return;
    }
    if (t < variables) {
        const auto [it, fresh] = names.emplace(t, names.size());
        out += "v" + std::to_string(it->second);
        return;
    }
    const auto [node, k] = p.of[t - variables];
    const GenNode& n = g.nodes[node];
    out += space.ops[n.op].name + "(";
    for (std::size_t i = 0; i < max_generator_arity && n.inputs[i] != no_tensor; ++i) {
        if (i > 0) out += ",";
        write_expression(g, p, n.inputs[i], variables, space, names, out);
    }
    out += ")";
    if (k > 0) out += ":" + std::to_string(k);
}

/// The canonical text of the rule a -> b with outputs paired in order `order` (a
/// permutation of output positions applied to both sides): variables are named by first
/// use, source first.
[[nodiscard]] inline std::string rule_text_in_order(const GenGraph& a, const GenGraph& b,
                                                    const std::vector<std::size_t>& order, std::size_t variables,
                                                    const GeneratorSpace& space) {
    std::map<std::uint16_t, std::size_t> names;
    std::string out;
    const Producers pa(a), pb(b);
    for (const std::size_t i : order) {
        write_expression(a, pa, a.outputs[i], variables, space, names, out);
        out += ";";
    }
    out += "=>";
    for (const std::size_t i : order) {
        write_expression(b, pb, b.outputs[i], variables, space, names, out);
        out += ";";
    }
    return out;
}

/// The canonical text of the rule a -> b: the least over output orders.
[[nodiscard]] inline std::string canonical_rule_text(const GenGraph& a, const GenGraph& b, std::size_t variables,
                                                     const GeneratorSpace& space) {
    std::vector<std::size_t> order(a.outputs.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::string best;
    do {
        std::string text = rule_text_in_order(a, b, order, variables, space);
        if (best.empty() || text < best) best = std::move(text);
    } while (std::next_permutation(order.begin(), order.end()));
    return best;
}

/// The variables `g` reads (constants are not variables).
[[nodiscard]] inline std::set<std::uint16_t> variables_used(const GenGraph& g, const GeneratorSpace& space) {
    std::set<std::uint16_t> used;
    for (const GenNode& n : g.nodes)
        for (const std::uint16_t t : n.inputs)
            if (is_variable_leaf(space, t)) used.insert(t);
    for (const std::uint16_t t : g.outputs)
        if (is_variable_leaf(space, t)) used.insert(t);
    return used;
}

/// The constants `g`'s nodes read.
[[nodiscard]] inline std::set<std::uint16_t> constants_used(const GenGraph& g, const GeneratorSpace& space) {
    std::set<std::uint16_t> used;
    for (const GenNode& n : g.nodes)
        for (const std::uint16_t t : n.inputs)
            if (is_constant_leaf(space, t)) used.insert(t);
    return used;
}

/// Whether the nodes of `g` form one component, joined through the tensors they share
/// (variables included). A rule must be matched from one anchor, so its source must be;
/// a disconnected side is two independent rewrites, each a smaller rule.
[[nodiscard]] inline bool connected(const GenGraph& g, std::size_t variables) {
    if (g.nodes.size() <= 1) return true;
    std::vector<std::size_t> parent(g.nodes.size());
    std::iota(parent.begin(), parent.end(), std::size_t{0});
    const auto find = [&](std::size_t x) {
        while (parent[x] != x) x = parent[x] = parent[parent[x]];
        return x;
    };
    const Producers p(g);
    std::map<std::uint16_t, std::size_t> reader;  // tensor -> the first node reading it
    for (std::size_t i = 0; i < g.nodes.size(); ++i)
        for (const std::uint16_t t : g.nodes[i].inputs) {
            if (t == no_tensor) continue;
            if (t >= variables) parent[find(i)] = find(p.of[t - variables].first);
            const auto [it, fresh] = reader.emplace(t, i);
            if (!fresh) parent[find(i)] = find(it->second);
        }
    for (std::size_t i = 1; i < g.nodes.size(); ++i)
        if (find(i) != find(0)) return false;
    return true;
}

/// `g` with variable `from` read as variable `to`.
[[nodiscard]] inline GenGraph substitute(const GenGraph& g, std::uint16_t from, std::uint16_t to) {
    GenGraph out = g;
    for (GenNode& n : out.nodes)
        for (std::uint16_t& t : n.inputs)
            if (t == from) t = to;
    for (std::uint16_t& t : out.outputs)
        if (t == from) t = to;
    return out;
}

/// The canonical texts of the rules a -> b becomes when two of its variables are made one,
/// or a variable is made a constant: any kept rule with one of these texts is an instance
/// of a -> b (subsumed), since a rule variable matches any tensor, constants included.
[[nodiscard]] inline std::vector<std::string> merged_variable_texts(const GenGraph& a, const GenGraph& b,
                                                                   std::size_t variables, const GeneratorSpace& space) {
    const std::set<std::uint16_t> used = variables_used(a, space);
    std::vector<std::uint16_t> into(used.begin(), used.end());
    for (std::uint16_t c = 0; c < variables; ++c)
        if (space.variables[c].is_constant()) into.push_back(c);
    std::vector<std::string> texts;
    for (const std::uint16_t from : used)
        for (const std::uint16_t to : into)
            if (from != to) texts.push_back(canonical_rule_text(substitute(a, from, to), substitute(b, from, to), variables, space));
    return texts;
}

/// Common subgraph: the same op on the same variables on both sides.
[[nodiscard]] inline bool shares_leaf_op(const GenGraph& a, const GenGraph& b, std::size_t variables) {
    const auto on_variables = [&](const GenNode& n) {
        return std::all_of(n.inputs.begin(), n.inputs.end(), [&](std::uint16_t t) { return t == no_tensor || t < variables; });
    };
    for (const GenNode& n : a.nodes)
        if (on_variables(n))
            for (const GenNode& m : b.nodes)
                if (m.op == n.op && m.inputs == n.inputs) return true;
    return false;
}

/// Common supergraph: single-output sides whose output nodes are the same op with inputs
/// that differ in at most one position (compared as expressions).
[[nodiscard]] inline bool shares_last_op(const GenGraph& a, const GenGraph& b, std::size_t variables,
                                         const GeneratorSpace& space) {
    if (a.outputs.size() != 1 || b.outputs.size() != 1 || a.outputs[0] < variables || b.outputs[0] < variables)
        return false;
    const Producers pa(a), pb(b);
    const auto [na, ka] = pa.of[a.outputs[0] - variables];
    const auto [nb, kb] = pb.of[b.outputs[0] - variables];
    const GenNode& x = a.nodes[na];
    const GenNode& y = b.nodes[nb];
    if (x.op != y.op || ka != kb) return false;
    std::size_t differing = 0;
    for (std::size_t i = 0; i < max_generator_arity; ++i) {
        if ((x.inputs[i] == no_tensor) != (y.inputs[i] == no_tensor)) return false;
        if (x.inputs[i] == no_tensor) continue;
        // Variables keep their own names here: the inputs must be the very same tensors.
        std::map<std::uint16_t, std::size_t> identity_a, identity_b;
        for (std::uint16_t v = 0; v < variables; ++v) identity_a.emplace(v, v), identity_b.emplace(v, v);
        std::string ea, eb;
        write_expression(a, pa, x.inputs[i], variables, space, identity_a, ea);
        write_expression(b, pb, y.inputs[i], variables, space, identity_b, eb);
        differing += ea == eb ? 0 : 1;
    }
    return differing <= 1;
}

}  // namespace rlflow::synth::detail
