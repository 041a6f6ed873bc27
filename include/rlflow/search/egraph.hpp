#pragma once
/// \file
/// The e-graph of equality saturation (Tensat, after egg): e-classes of equal tensors,
/// each holding e-nodes that compute it, hash-consed so that an e-node exists once, with
/// a union-find over classes and rebuilding that restores congruence after unions.
///
/// Three kinds of e-node:
/// - `op`: a core op (a Constant too) over child classes, with its attributes (and a
///   Constant's value) in `payload`. Equal op, attributes and canonical children are the
///   same e-node.
/// - `fixed`: a node of the input graph carried over as it is: an input, a weight, or an
///   op rlflow does not interpret (Opaque, with its child classes). Its identity is the
///   graph node it came from.
/// - `output`: output `output` of a multi-output node. Such a node's class is a tuple
///   class, whose types are all its outputs; its outputs are tensor classes that hold
///   `output` e-nodes over the tuple class. Everything else consumes tensor classes.
///
/// The analysis of a class is its types (one for a tensor class) and whether it is known
/// before the model runs (computed from weights and constants alone, as
/// weight_only_nodes decides for a graph). Classes that merge must have equal types: a
/// verified rule never equates tensors of different types, so a mismatch throws.
///
/// Every class has a level, kept so that a class reaches (along e-node children) only
/// classes whose level is at most its own: a new class sits one above its highest
/// child, and a union raises the consumers of the lower class up to the union's level.
/// space_levels() recomputes them spaced (strongly connected components in children-first
/// order, a wide gap between dependent ones), so that the rewrites of one exploring
/// iteration rarely raise anything. Searches for a class among another's descendants
/// (erewrite.hpp's cycle check) stop at classes below it, so that they cost in proportion
/// to the band between the two rather than to the graph.

#include <rlflow/core/canonical.hpp>
#include <rlflow/core/graph.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rlflow::search {

using ClassId = std::uint32_t;
using ENodeId = std::uint32_t;
/// ENode::made_by of the input graph's e-nodes.
inline constexpr std::uint32_t no_rule = std::numeric_limits<std::uint32_t>::max();
/// The child of an absent optional input.
inline constexpr ClassId no_class = std::numeric_limits<ClassId>::max();

/// One e-node (see the file comment).
struct ENode {
    enum class Kind : std::uint8_t { op, fixed, output };
    Kind kind = Kind::op;
    /// op: the op, attributes and (Constant) data; fixed: a copy of the graph node
    /// (inputs and uses cleared); output: unused.
    Node payload;
    std::vector<ClassId> children;
    /// fixed: the input graph's node; op: the node it was made from, if any.
    NodeId origin;
    /// output: which output of the tuple child.
    std::uint32_t output = 0;
    /// How many outputs the node has; above 1 its class is a tuple class.
    std::uint32_t num_outputs = 1;
    /// The rule whose rewrite first made this e-node (no_rule: the input graph's).
    std::uint32_t made_by = no_rule;
};

/// What a class knows about its tensors.
struct EClassData {
    std::vector<TensorType> types;
    /// Computed from weights and constants alone.
    bool constant = false;
};

/// An e-graph over rlflow's IR.
class EGraph {
public:
    /// Adds `node` (its children are canonicalised) with its output `types`, or finds
    /// it; returns its class. A new node's class is new.
    ClassId add(ENode node, std::vector<TensorType> types) {
        canonicalize(node);
        std::string key = key_of(node);
        if (const auto it = m_memo.find(key); it != m_memo.end()) return find(m_class_of[it->second]);
        const ENodeId id = static_cast<ENodeId>(m_nodes.size());
        const ClassId cls = static_cast<ClassId>(m_parent.size());
        std::uint64_t level = 0;
        for (const ClassId c : node.children)
            if (c != no_class) level = std::max(level, m_level[c] + 1);
        m_level.push_back(level);
        m_parent.push_back(cls);
        m_data.push_back({std::move(types), is_constant(node)});
        m_members.push_back({id});
        m_parents.emplace_back();
        for (const ClassId c : node.children)
            if (c != no_class) m_parents[c].push_back(id);
        m_memo.emplace(std::move(key), id);
        m_nodes.push_back(std::move(node));
        m_class_of.push_back(cls);
        m_alive.push_back(1);
        return cls;
    }

    /// The canonical class of `c`.
    [[nodiscard]] ClassId find(ClassId c) const {
        while (m_parent[c] != c) {
            m_parent[c] = m_parent[m_parent[c]];
            c = m_parent[c];
        }
        return c;
    }

    /// Unites the classes of `a` and `b`; false if they were one already. Congruence
    /// holds again only after rebuild().
    bool merge(ClassId a, ClassId b) {
        a = find(a);
        b = find(b);
        if (a == b) return false;
        RLFLOW_EXPECTS(m_data[a].types == m_data[b].types, graph_error,
                       "e-graph: a rewrite equated tensors of different types (" + types_text(a) + " and " + types_text(b) + ")");
        if (m_members[a].size() < m_members[b].size()) std::swap(a, b);
        // The consumers of the lower class may now sit below the union: raise them.
        const std::uint64_t level = std::max(m_level[a], m_level[b]);
        std::vector<ENodeId> lower = m_level[a] < level ? m_parents[a] : m_level[b] < level ? m_parents[b] : std::vector<ENodeId>{};
        m_level[a] = level;
        m_parent[b] = a;
        if (m_data[a].constant != m_data[b].constant) m_now_constant.push_back(a);
        m_data[a].constant = m_data[a].constant || m_data[b].constant;
        append(m_members[a], m_members[b]);
        append(m_parents[a], m_parents[b]);
        raise_consumers(lower, level);
        ++m_unions;
        m_dirty = true;
        return true;
    }

    /// Restores congruence: e-nodes that became equal after unions unite their classes,
    /// until nothing changes; duplicate e-nodes are dropped.
    void rebuild() {
        while (m_dirty) {
            m_dirty = false;
            m_memo.clear();
            for (ENodeId id = 0; id < m_nodes.size(); ++id) {
                if (!m_alive[id]) continue;
                ENode& n = m_nodes[id];
                canonicalize(n);
                auto [it, fresh] = m_memo.emplace(key_of(n), id);
                if (fresh) continue;
                m_alive[id] = 0;  // an equal e-node exists: its class and this one's are one
                merge(m_class_of[it->second], m_class_of[id]);
            }
        }
        for (ClassId c = 0; c < m_parent.size(); ++c) {
            if (find(c) != c) continue;
            prune(m_members[c], [&](ENodeId n) { return m_alive[n] != 0; });
            prune(m_parents[c], [&](ENodeId n) { return m_alive[n] != 0; });
        }
        propagate_constants();
    }

    [[nodiscard]] const ENode& node(ENodeId id) const { return m_nodes[id]; }
    /// The canonical class of e-node `id`.
    [[nodiscard]] ClassId class_of(ENodeId id) const { return find(m_class_of[id]); }
    [[nodiscard]] bool alive(ENodeId id) const { return m_alive[id] != 0; }
    /// The e-nodes of canonical class `c` (current after rebuild()).
    [[nodiscard]] const std::vector<ENodeId>& members(ClassId c) const { return m_members[c]; }
    /// The e-nodes that have canonical class `c` as a child (current after rebuild()).
    [[nodiscard]] const std::vector<ENodeId>& parents(ClassId c) const { return m_parents[c]; }
    [[nodiscard]] const EClassData& data(ClassId c) const { return m_data[find(c)]; }
    /// Class `c`'s level (see the file comment): it reaches no class of a higher one.
    [[nodiscard]] std::uint64_t level(ClassId c) const { return m_level[find(c)]; }
    /// Recomputes every level, spaced (see the file comment); linear in the e-graph.
    void space_levels();

    /// E-nodes ever added (dropped duplicates included: ids stay valid).
    [[nodiscard]] std::size_t node_bound() const noexcept { return m_nodes.size(); }
    /// Class ids ever made (only canonical ones are classes now).
    [[nodiscard]] std::size_t class_bound() const noexcept { return m_parent.size(); }
    /// Live e-nodes and canonical classes.
    [[nodiscard]] std::size_t num_nodes() const {
        return static_cast<std::size_t>(std::count(m_alive.begin(), m_alive.end(), char{1}));
    }
    [[nodiscard]] std::size_t num_classes() const {
        std::size_t n = 0;
        for (ClassId c = 0; c < m_parent.size(); ++c) n += find(c) == c ? 1 : 0;
        return n;
    }
    /// Unions performed so far (rebuilding's included).
    [[nodiscard]] std::size_t unions() const noexcept { return m_unions; }

private:
    void canonicalize(ENode& n) const {
        for (ClassId& c : n.children)
            if (c != no_class) c = find(c);
    }

    /// The hash-consing key: kind, op, attributes, data, identity and canonical children.
    [[nodiscard]] static std::string key_of(const ENode& n) {
        rlflow::detail::ByteWriter w;
        w.u64(static_cast<std::uint64_t>(n.kind));
        w.u64(n.children.size());
        for (const ClassId c : n.children) w.u64(c);
        if (n.kind == ENode::Kind::output) {
            w.u64(n.output);
            return w.take();
        }
        if (n.kind == ENode::Kind::fixed) {
            w.u64(n.origin.value);
            return w.take();
        }
        w.u64(static_cast<std::uint64_t>(n.payload.op));
        w.u64(n.num_outputs);
        for (const auto& [name, value] : n.payload.attributes) {
            w.str(name);
            rlflow::detail::encode_attribute_value(w, value);
        }
        if (n.payload.data) {
            w.u64(static_cast<std::uint64_t>(n.payload.data->dtype()));
            for (const auto d : n.payload.data->shape().dims()) w.i64(d);
            w.bytes(n.payload.data->raw());
        }
        return w.take();
    }

    /// Whether `n` is known before the model runs (memory.hpp's is_weight_only, over classes).
    [[nodiscard]] bool is_constant(const ENode& n) const {
        if (n.kind == ENode::Kind::output) return data(n.children.at(0)).constant;
        const OpKind op = n.payload.op;
        if (op == OpKind::Constant) return true;
        if (op == OpKind::Weight) return n.payload.data != nullptr;
        if (n.kind == ENode::Kind::fixed || n.children.empty()) return false;
        return std::all_of(n.children.begin(), n.children.end(), [&](ClassId c) { return c == no_class || data(c).constant; });
    }

    /// A class that became constant by a union can make its parents' classes constant.
    void propagate_constants() {
        while (!m_now_constant.empty()) {
            const ClassId c = find(m_now_constant.back());
            m_now_constant.pop_back();
            for (const ENodeId p : m_parents[c]) {
                const ClassId up = class_of(p);
                if (m_data[up].constant || !is_constant(m_nodes[p])) continue;
                m_data[up].constant = true;
                m_now_constant.push_back(up);
            }
        }
    }

    [[nodiscard]] std::string types_text(ClassId c) const {
        std::string s;
        for (const TensorType& t : m_data[c].types) s += (s.empty() ? "" : ", ") + t.to_string();
        return s;
    }

    /// Raises the classes of e-nodes `consumers`, and theirs in turn, to at least `level`.
    void raise_consumers(const std::vector<ENodeId>& consumers, std::uint64_t level) {
        std::vector<ClassId> stack;
        for (const ENodeId p : consumers) stack.push_back(m_class_of[p]);
        while (!stack.empty()) {
            const ClassId c = find(stack.back());
            stack.pop_back();
            if (m_level[c] >= level) continue;
            m_level[c] = level;
            for (const ENodeId p : m_parents[c]) stack.push_back(m_class_of[p]);
        }
    }

    static void append(std::vector<ENodeId>& to, std::vector<ENodeId>& from) {
        to.insert(to.end(), from.begin(), from.end());
        from.clear();
        from.shrink_to_fit();
    }

    template <class Keep>
    static void prune(std::vector<ENodeId>& ids, Keep keep) {
        std::sort(ids.begin(), ids.end());
        ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
        ids.erase(std::remove_if(ids.begin(), ids.end(), [&](ENodeId n) { return !keep(n); }), ids.end());
    }

    std::vector<ENode> m_nodes;
    std::vector<ClassId> m_class_of;
    std::vector<char> m_alive;
    mutable std::vector<ClassId> m_parent;
    std::vector<EClassData> m_data;
    std::vector<std::vector<ENodeId>> m_members;
    std::vector<std::vector<ENodeId>> m_parents;
    std::unordered_map<std::string, ENodeId> m_memo;
    std::vector<ClassId> m_now_constant;
    std::vector<std::uint64_t> m_level;
    std::size_t m_unions = 0;
    bool m_dirty = false;
};

namespace detail {

/// The distinct canonical child classes of `e`.
[[nodiscard]] inline std::vector<ClassId> child_classes(const EGraph& eg, ENodeId e) {
    std::vector<ClassId> kids;
    for (const ClassId c : eg.node(e).children)
        if (c != no_class) kids.push_back(eg.find(c));
    std::sort(kids.begin(), kids.end());
    kids.erase(std::unique(kids.begin(), kids.end()), kids.end());
    return kids;
}

/// Some canonical classes, and the position of each (class id -> position, -1 if absent).
struct ClassIndex {
    std::vector<ClassId> classes;
    std::vector<int> index;
};

/// The strongly connected component of each class of `r` (by position in `r.classes`),
/// over edges from a class to its e-nodes' children inside `r` (Tarjan's algorithm,
/// iterative). Only an edge inside a component can be part of a cycle. Components are
/// numbered children first: one that reaches another has the higher number.
[[nodiscard]] inline std::vector<int> class_components(const EGraph& eg, const ClassIndex& r) {
    const std::size_t n = r.classes.size();
    std::vector<std::vector<int>> next(n);
    for (std::size_t i = 0; i < n; ++i)
        for (const ENodeId e : eg.members(r.classes[i]))
            for (const ClassId k : child_classes(eg, e))
                if (r.index[k] >= 0) next[i].push_back(r.index[k]);
    std::vector<int> component(n, -1), order(n, -1), low(n, 0), stack;
    std::vector<char> on_stack(n, 0);
    int counter = 0, components = 0;
    std::vector<std::pair<int, std::size_t>> frames;  // (class, next edge)
    for (std::size_t root = 0; root < n; ++root) {
        if (order[root] >= 0) continue;
        frames.emplace_back(static_cast<int>(root), 0);
        while (!frames.empty()) {
            auto& [v, edge] = frames.back();
            if (edge == 0 && order[v] < 0) {
                order[v] = low[v] = counter++;
                stack.push_back(v);
                on_stack[v] = 1;
            }
            if (edge < next[v].size()) {
                const int w = next[v][edge++];
                if (order[w] < 0) frames.emplace_back(w, 0);
                else if (on_stack[w]) low[v] = std::min(low[v], order[w]);
                continue;
            }
            if (low[v] == order[v]) {
                for (int w = -1; w != v;) {
                    w = stack.back();
                    stack.pop_back();
                    on_stack[w] = 0;
                    component[w] = components;
                }
                ++components;
            }
            const int done = v;
            frames.pop_back();
            if (!frames.empty()) low[frames.back().first] = std::min(low[frames.back().first], low[done]);
        }
    }
    return component;
}
}  // namespace detail

inline void EGraph::space_levels() {
    // As wide as a rewrite's new nodes are ever stacked between two classes in one iteration.
    constexpr std::uint64_t gap = std::uint64_t{1} << 20;
    detail::ClassIndex all;
    all.index.assign(m_parent.size(), -1);
    for (ClassId c = 0; c < m_parent.size(); ++c)
        if (find(c) == c) {
            all.index[c] = static_cast<int>(all.classes.size());
            all.classes.push_back(c);
        }
    const std::vector<int> component = detail::class_components(*this, all);
    const int count = component.empty() ? 0 : *std::max_element(component.begin(), component.end()) + 1;
    std::vector<std::vector<std::size_t>> of(static_cast<std::size_t>(count));
    for (std::size_t i = 0; i < component.size(); ++i) of[static_cast<std::size_t>(component[i])].push_back(i);
    std::vector<std::uint64_t> level(static_cast<std::size_t>(count), 0);
    for (std::size_t k = 0; k < of.size(); ++k) {  // children first
        for (const std::size_t i : of[k])
            for (const ENodeId e : m_members[all.classes[i]])
                for (const ClassId child : detail::child_classes(*this, e))
                    if (const int j = component[static_cast<std::size_t>(all.index[child])]; j != static_cast<int>(k))
                        level[k] = std::max(level[k], level[static_cast<std::size_t>(j)] + gap);
        for (const std::size_t i : of[k]) m_level[all.classes[i]] = level[k];
    }
}

}  // namespace rlflow::search
