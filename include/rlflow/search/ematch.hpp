#pragma once
/// \file
/// E-matching: where a rule's source pattern occurs in an e-graph, structurally. Pattern
/// nodes bind to e-nodes and variables to classes, following the same search plans as
/// the graph matcher (rewrite/detail/compiled_rule.hpp): a producer step tries every
/// e-node of the class a bound node consumes, a consumer step every parent of a bound
/// class. Literal attributes prune here; everything else a rule checks (symbols that
/// must agree, derived attributes, shape constraints, whether the target fits) is left
/// to erewrite.hpp, which runs the graph matcher itself on the matched nodes, so the
/// e-graph and the rewriter accept exactly the same matches.
///
/// Matches that can only equate a tensor with something computed from itself are
/// dropped here: a variable bound to the class of a matched node, or two matched nodes
/// of one class (Tensat skips such pairs of multi-output matches too).

#include <rlflow/rewrite/detail/evaluate.hpp>
#include <rlflow/rewrite/rule_set.hpp>
#include <rlflow/search/egraph.hpp>

#include <array>
#include <atomic>
#include <limits>
#include <vector>

namespace rlflow::search {

inline constexpr ENodeId no_enode = std::numeric_limits<ENodeId>::max();

/// A structural match of rule `rule`'s source: the e-node of each pattern node and the
/// class of each variable.
struct EMatch {
    std::uint32_t rule = 0;
    std::array<ENodeId, rewrite::max_pattern_nodes> nodes{};
    std::array<ClassId, rewrite::max_pattern_variables> variables{};
};

/// The tensor class of output `k` of e-node `e` (its class, or the class of its `output`
/// e-node when it has several); no_class if there is none.
[[nodiscard]] inline ClassId output_class(const EGraph& eg, ENodeId e, std::uint32_t k) {
    const ClassId own = eg.class_of(e);
    if (eg.node(e).num_outputs == 1) return k == 0 ? own : no_class;
    for (const ENodeId p : eg.parents(own)) {
        const ENode& n = eg.node(p);
        if (n.kind == ENode::Kind::output && n.output == k) return eg.class_of(p);
    }
    return no_class;
}

/// Finds the structural matches of rules in one e-graph (current: rebuilt, unchanged
/// since construction).
class EMatcher {
public:
    EMatcher(const EGraph& eg, const rewrite::RuleSet& rules) : m_eg(eg), m_rules(rules), m_by_op(op_kind_count) {
        for (ENodeId id = 0; id < eg.node_bound(); ++id)
            if (eg.alive(id) && eg.node(id).kind == ENode::Kind::op) m_by_op[static_cast<std::size_t>(eg.node(id).payload.op)].push_back(id);
    }

    /// Appends the matches of rule `rule_id`, at most `limit` of them.
    void find_all(std::uint32_t rule_id, std::vector<EMatch>& out, std::size_t limit,
                  const std::atomic<bool>* stop = nullptr) {
        m_rule = &m_rules[rule_id];
        const auto& source = m_rule->source;
        std::uint32_t anchor = 0;
        for (std::uint32_t n = 1; n < source.size(); ++n)
            if (candidates(source[n].op).size() < candidates(source[anchor].op).size()) anchor = n;
        m_plan = &m_rules.compiled(rule_id).plans[anchor];
        m_out = &out;
        m_limit = out.size() + limit;
        State fresh;
        fresh.match.rule = rule_id;
        fresh.match.nodes.fill(no_enode);
        fresh.match.variables.fill(no_class);
        fresh.pending.fill(no_class);
        for (const ENodeId e : candidates(source[anchor].op)) {
            if (out.size() >= m_limit || (stop && stop->load(std::memory_order_relaxed))) return;
            try_node(0, anchor, e, fresh);
        }
    }

private:
    struct State {
        EMatch match;
        /// pending[q]: the tensor class that pattern node q's output pending_output[q] must be.
        std::array<ClassId, rewrite::max_pattern_nodes> pending{};
        std::array<std::uint32_t, rewrite::max_pattern_nodes> pending_output{};
    };

    [[nodiscard]] const std::vector<ENodeId>& candidates(OpKind op) const { return m_by_op[static_cast<std::size_t>(op)]; }

    void search(std::size_t step, const State& s) {
        if (step == m_plan->size()) return finish(s);
        const rewrite::detail::PlanStep& ps = (*m_plan)[step];
        if (ps.kind == rewrite::detail::PlanStep::Kind::producer) {
            const ClassId cls = s.pending[ps.node];
            if (cls == no_class) return;
            const bool tuple = m_rule->source[ps.node].num_outputs > 1;
            for (const ENodeId e : m_eg.members(cls)) {
                const ENode& n = m_eg.node(e);
                if (!tuple) try_node(step + 1, ps.node, e, s);
                else if (n.kind == ENode::Kind::output && n.output == s.pending_output[ps.node])
                    for (const ENodeId t : m_eg.members(m_eg.find(n.children[0]))) try_node(step + 1, ps.node, t, s);
            }
            return;
        }
        const ClassId from = tensor_class(s.match, ps.from);
        if (from == no_class) return;
        ENodeId last = no_enode;
        for (const ENodeId p : m_eg.parents(from)) {
            if (p == last) continue;  // parents are sorted: a node using the class twice is tried once
            last = p;
            try_node(step + 1, ps.node, p, s);
        }
    }

    [[nodiscard]] ClassId tensor_class(const EMatch& m, rewrite::PatternRef r) const {
        if (r.is_variable()) return m.variables[r.index];
        return m.nodes[r.index] == no_enode ? no_class : output_class(m_eg, m.nodes[r.index], r.output);
    }

    /// Binds pattern node `q` to e-node `e` and goes on with plan step `next`.
    void try_node(std::size_t next, std::uint32_t q, ENodeId e, const State& s) {
        if (m_out->size() >= m_limit) return;
        const rewrite::PatternNode& p = m_rule->source[q];
        const ENode& n = m_eg.node(e);
        if (n.kind != ENode::Kind::op || n.payload.op != p.op || n.num_outputs != p.num_outputs || n.children.size() != p.inputs.size())
            return;
        if (!rewrite::detail::constant_kind_fits(p, n.payload) || !literals_fit(p, n.payload)) return;
        for (const ENodeId bound : s.match.nodes)
            if (bound == e) return;
        if (s.pending[q] != no_class && output_class(m_eg, e, s.pending_output[q]) != s.pending[q]) return;
        const bool swappable = n.payload.traits().has(op_flag_commutative) && n.children.size() == 2 && n.children[0] != n.children[1];
        for (int order = 0; order < (swappable ? 2 : 1); ++order) {
            State t = s;
            t.match.nodes[q] = e;
            if (bind_inputs(p, n, order == 1, t)) search(next, t);
        }
    }

    [[nodiscard]] bool literals_fit(const rewrite::PatternNode& p, const Node& payload) {
        for (const rewrite::PatternAttribute& a : p.attributes) {
            if (a.value.kind != rewrite::AttrExpr::Kind::literal) continue;
            const AttributeValue* actual = rewrite::detail::pattern_view(payload, a.name, m_scratch);
            if (!actual || !Attributes::values_equal(a.value.literal, *actual)) return false;
        }
        return true;
    }

    /// Binds the children of a matched e-node: variables bind or must agree, bound
    /// producers must produce them, unbound producers become pending.
    [[nodiscard]] bool bind_inputs(const rewrite::PatternNode& p, const ENode& n, bool swapped, State& t) const {
        for (std::size_t i = 0; i < p.inputs.size(); ++i) {
            const ClassId c = n.children[swapped ? 1 - i : i];
            const rewrite::PatternRef r = p.inputs[i];
            if (c == no_class) return false;
            if (r.is_variable()) {
                ClassId& slot = t.match.variables[r.index];
                if (slot != no_class && slot != c) return false;
                slot = c;
            } else if (t.match.nodes[r.index] != no_enode) {
                if (output_class(m_eg, t.match.nodes[r.index], r.output) != c) return false;
            } else if (t.pending[r.index] != no_class) {
                if (t.pending[r.index] != c || t.pending_output[r.index] != r.output) return false;
            } else {
                t.pending[r.index] = c;
                t.pending_output[r.index] = r.output;
            }
        }
        return true;
    }

    void finish(const State& s) {
        const EMatch& m = s.match;
        for (const auto& [first, second] : m_rule->ordered)
            if (!(m.nodes[first] < m.nodes[second])) return;
        const std::size_t count = m_rule->source.size();
        for (std::size_t q = 0; q < count; ++q) {
            const ClassId own = m_eg.class_of(m.nodes[q]);
            for (std::size_t r = q + 1; r < count; ++r)
                if (m_eg.class_of(m.nodes[r]) == own) return;
            for (std::size_t v = 0; v < m_rule->variables.size(); ++v)
                for (std::uint32_t k = 0; k < m_rule->source[q].num_outputs; ++k)
                    if (m.variables[v] == own || m.variables[v] == output_class(m_eg, m.nodes[q], k)) return;
        }
        m_out->push_back(m);
    }

    const EGraph& m_eg;
    const rewrite::RuleSet& m_rules;
    std::vector<std::vector<ENodeId>> m_by_op;
    const rewrite::Rule* m_rule = nullptr;
    const std::vector<rewrite::detail::PlanStep>* m_plan = nullptr;
    std::vector<EMatch>* m_out = nullptr;
    std::size_t m_limit = 0;
    AttributeValue m_scratch;
};

}  // namespace rlflow::search
