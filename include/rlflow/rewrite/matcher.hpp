#pragma once
/// \file
/// The matcher: finds the locations of a rule in a graph. A search binds one source node
/// (the anchor) to a graph node and follows the rule's precomputed plan, taking each
/// other node as the producer of a bound input or a consumer of a bound tensor, so its
/// cost depends on the neighbourhood, not on the size of the graph. Full matching anchors
/// on the pattern op with the fewest nodes in the graph.
///
/// A complete match is a location only if: its derived attributes and constraints hold;
/// no variable is bound to a matched node's output; no output of a matched node other
/// than the mapped ones is used outside the match or is a graph output; the rewrite
/// closes no cycle; and the target instantiates with the replaced outputs' types.

#include <rlflow/rewrite/detail/target.hpp>
#include <rlflow/rewrite/graph_index.hpp>
#include <rlflow/rewrite/rule_set.hpp>

#include <algorithm>
#include <utility>
#include <vector>

namespace rlflow::rewrite {

/// Finds locations of the rules of one rule set in one graph.
class Matcher {
public:
    /// A matcher of `rules` in `graph`; `index` must be current for `graph`.
    Matcher(const RuleSet& rules, const Graph& graph, const GraphIndex& index)
        : m_rules(rules), m_graph(graph), m_index(index) {}

    /// Leaves cycle checks of cycle-prone rules to the caller (a LocationIndex keeps such
    /// candidates and re-checks them whenever the graph changes).
    void defer_cycle_checks() noexcept { m_defer_cycle_checks = true; }

    /// Appends every location of rule `rule_id`, sorted.
    void find_all(std::uint32_t rule_id, std::vector<Location>& out) {
        const Rule& rule = m_rules[rule_id];
        std::uint32_t anchor = 0;
        for (std::uint32_t n = 1; n < rule.source.size(); ++n)
            if (m_index.nodes_of(rule.source[n].op).size() < m_index.nodes_of(rule.source[anchor].op).size()) anchor = n;
        const std::size_t first = out.size();
        for (const NodeId id : m_index.nodes_of(rule.source[anchor].op)) find_anchored(rule_id, anchor, id, out);
        std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
        out.erase(std::unique(out.begin() + static_cast<std::ptrdiff_t>(first), out.end()), out.end());
    }

    /// Appends every location of rule `rule_id` that binds source node `anchor` to graph
    /// node `id` (unsorted).
    void find_anchored(std::uint32_t rule_id, std::uint32_t anchor, NodeId id, std::vector<Location>& out) {
        start(rule_id);
        m_plan = &m_compiled->plans[anchor];
        m_out = &out;
        try_node(0, anchor, id);
    }

    /// Whether `location` is a valid location of rule `rule_id` (every check, cycles
    /// included): what a location that did not come from this matcher must pass.
    [[nodiscard]] bool is_location(std::uint32_t rule_id, const Location& location) {
        const NodeId anchor = location.nodes[0];
        if (!anchor.valid() || !m_graph.contains(anchor)) return false;
        const bool deferred = std::exchange(m_defer_cycle_checks, false);
        m_check.clear();
        find_anchored(rule_id, 0, anchor, m_check);
        m_defer_cycle_checks = deferred;
        return std::find(m_check.begin(), m_check.end(), location) != m_check.end();
    }

    /// Whether applying rule `rule_id` at `location` would close a cycle: whether an
    /// outside path leads from a replaced output to a variable's producer.
    [[nodiscard]] bool closes_cycle(std::uint32_t rule_id, const Location& location) {
        const Rule& rule = m_rules[rule_id];
        std::uint64_t bound = 0;
        m_targets.clear();
        for (std::size_t v = 0; v < rule.variables.size(); ++v) {
            m_targets.push_back(location.variables[v].node);
            bound = std::max(bound, m_index.level(location.variables[v].node));
        }
        m_stack.clear();
        m_visited.resize(m_graph.id_bound(), 0);
        if (++m_visit_mark == 0) {
            std::fill(m_visited.begin(), m_visited.end(), 0);
            m_visit_mark = 1;
        }
        for (const OutputMapping& m : rule.outputs)
            for (const Use& u : m_graph.output(location.tensor(m.source)).uses)
                if (!location.contains(u.node)) m_stack.push_back(u.node);
        while (!m_stack.empty()) {
            const NodeId id = m_stack.back();
            m_stack.pop_back();
            if (std::find(m_targets.begin(), m_targets.end(), id) != m_targets.end()) return true;
            // Levels grow along edges: a node at or above every target reaches none.
            if (m_index.level(id) >= bound || m_visited[id.value] == m_visit_mark) continue;
            m_visited[id.value] = m_visit_mark;
            for (const auto& out : m_graph.node(id).outputs)
                for (const Use& u : out.uses) m_stack.push_back(u.node);
        }
        return false;
    }

private:
    enum class TrailKind : std::uint8_t { variable, pending, symbol };
    struct TrailEntry {
        TrailKind kind;
        std::uint32_t index;
    };

    void start(std::uint32_t rule_id) {
        m_rule = &m_rules[rule_id];
        m_rule_id = rule_id;
        m_compiled = &m_rules.compiled(rule_id);
        m_location = Location{};
        m_pending.fill(NodeId{});
        m_symbols.reset(m_rule->symbols.size());
        m_trail.clear();
    }

    void undo_to(std::size_t mark) {
        while (m_trail.size() > mark) {
            const TrailEntry e = m_trail.back();
            m_trail.pop_back();
            if (e.kind == TrailKind::variable) m_location.variables[e.index] = TensorRef{};
            else if (e.kind == TrailKind::pending) m_pending[e.index] = NodeId{};
            else m_symbols.unbind(e.index);
        }
    }

    /// Runs plan step `step` (or finishes the match).
    void search(std::size_t step) {
        if (step == m_plan->size()) return finish();
        const detail::PlanStep& s = (*m_plan)[step];
        if (s.kind == detail::PlanStep::Kind::producer) return try_node(step + 1, s.node, m_pending[s.node]);
        const TensorRef from = m_location.tensor(s.from);
        const std::vector<Use>& uses = m_graph.output(from).uses;
        // Uses are sorted by node, so a node using the tensor twice is tried once.
        NodeId last;
        for (std::size_t i = 0; i < uses.size(); ++i) {
            if (uses[i].node == last) continue;
            last = uses[i].node;
            try_node(step + 1, s.node, last);
        }
    }

    /// Binds source node `q` to graph node `id` and continues with plan step `next`.
    void try_node(std::size_t next, std::uint32_t q, NodeId id) {
        const PatternNode& p = m_rule->source[q];
        const Node& n = m_graph.node(id);
        if (n.op != p.op || n.outputs.size() != p.num_outputs || n.inputs.size() != p.inputs.size()) return;
        if (!detail::constant_kind_fits(p, n)) return;
        if (m_location.contains(id) || (m_pending[q].valid() && m_pending[q] != id)) return;
        const std::size_t mark = m_trail.size();
        if (bind_attributes(p, n)) {
            m_location.nodes[q] = id;
            const bool swappable = n.traits().has(op_flag_commutative) && n.inputs[0] != n.inputs[1];
            for (int order = 0; order < (swappable ? 2 : 1); ++order) {
                const std::size_t inner = m_trail.size();
                if (bind_inputs(p, n, order == 1)) search(next);
                undo_to(inner);
            }
            m_location.nodes[q] = NodeId{};
        }
        undo_to(mark);
    }

    [[nodiscard]] bool bind_attributes(const PatternNode& p, const Node& n) {
        for (const PatternAttribute& a : p.attributes) {
            const auto kind = a.value.kind;
            if (kind != AttrExpr::Kind::literal && kind != AttrExpr::Kind::symbol) continue;
            const AttributeValue* actual = detail::pattern_view(n, a.name, m_scratch);
            if (!actual) return false;
            if (kind == AttrExpr::Kind::literal) {
                if (!Attributes::values_equal(a.value.literal, *actual)) return false;
            } else if (m_symbols.bound(a.value.symbol)) {
                if (!Attributes::values_equal(m_symbols.value(a.value.symbol), *actual)) return false;
            } else {
                m_symbols.bind(a.value.symbol, *actual);
                m_trail.push_back({TrailKind::symbol, a.value.symbol});
            }
        }
        return true;
    }

    /// Binds the inputs of a matched node (swapped: a commutative op's two inputs in the
    /// other order): variables bind or must agree; producers become pending.
    [[nodiscard]] bool bind_inputs(const PatternNode& p, const Node& n, bool swapped) {
        for (std::size_t i = 0; i < p.inputs.size(); ++i) {
            const TensorRef t = n.inputs[swapped ? 1 - i : i];
            const PatternRef r = p.inputs[i];
            if (!t.present()) return false;
            if (r.is_variable()) {
                TensorRef& slot = m_location.variables[r.index];
                if (slot.present()) {
                    if (slot != t) return false;
                } else {
                    slot = t;
                    m_trail.push_back({TrailKind::variable, r.index});
                }
                continue;
            }
            if (t.index != r.output) return false;
            if (m_location.nodes[r.index].valid()) {
                if (m_location.nodes[r.index] != t.node) return false;
            } else if (m_pending[r.index].valid()) {
                if (m_pending[r.index] != t.node) return false;
            } else {
                m_pending[r.index] = t.node;
                m_trail.push_back({TrailKind::pending, r.index});
            }
        }
        return true;
    }

    /// All source nodes are bound: checks what needs the whole match.
    void finish() {
        const detail::EvalContext context{m_graph, m_location, m_symbols};
        for (const auto& [first, second] : m_rule->ordered)
            if (!(m_location.nodes[first] < m_location.nodes[second])) return;
        for (const auto& [node, attribute] : m_compiled->deferred_attributes) {
            const PatternAttribute& a = m_rule->source[node].attributes[attribute];
            const auto expected = detail::evaluate(a.value, context);
            const AttributeValue* actual = detail::pattern_view(m_graph.node(m_location.nodes[node]), a.name, m_scratch);
            if (!expected || !actual || !Attributes::values_equal(*expected, *actual)) return;
        }
        for (const Constraint& c : m_rule->constraints)
            if (!detail::holds(c, context)) return;
        if (!self_contained()) return;
        if (m_compiled->cycle_prone && !m_defer_cycle_checks && closes_cycle(m_rule_id, m_location)) return;
        if (!detail::instantiate_target(*m_rule, context, m_instance)) return;
        m_out->push_back(m_location);
    }

    /// No variable is a matched node's output, and every matched output that the rewrite
    /// does not replace is used only inside the match and is not a graph output.
    [[nodiscard]] bool self_contained() const {
        for (std::size_t v = 0; v < m_rule->variables.size(); ++v)
            if (m_location.contains(m_location.variables[v].node)) return false;
        for (std::uint32_t q = 0; q < m_rule->source.size(); ++q) {
            const Node& n = m_graph.node(m_location.nodes[q]);
            for (std::uint32_t k = 0; k < n.outputs.size(); ++k) {
                if (m_compiled->mapped_outputs[q] & (1u << k)) continue;
                if (m_graph.is_graph_output({n.id, k})) return false;
                for (const Use& u : n.outputs[k].uses)
                    if (!m_location.contains(u.node)) return false;
            }
        }
        return true;
    }

    const RuleSet& m_rules;
    const Graph& m_graph;
    const GraphIndex& m_index;
    bool m_defer_cycle_checks = false;

    const Rule* m_rule = nullptr;
    std::uint32_t m_rule_id = 0;
    const detail::CompiledRule* m_compiled = nullptr;
    const std::vector<detail::PlanStep>* m_plan = nullptr;
    std::vector<Location>* m_out = nullptr;
    Location m_location;
    std::array<NodeId, max_pattern_nodes> m_pending{};
    detail::SymbolTable m_symbols;
    std::vector<TrailEntry> m_trail;
    AttributeValue m_scratch;
    detail::TargetInstance m_instance;
    std::vector<NodeId> m_targets, m_stack;
    /// Cycle-check visits: m_visited[id] == m_visit_mark when visited in this check.
    std::vector<std::uint32_t> m_visited;
    std::uint32_t m_visit_mark = 0;
    std::vector<Location> m_check;
};

/// Every location of `rule_id` in `graph`, sorted (a one-off search; environments keep a
/// LocationIndex instead).
[[nodiscard]] inline std::vector<Location> find_locations(const RuleSet& rules, std::uint32_t rule_id, const Graph& graph) {
    const GraphIndex index(graph);
    Matcher matcher(rules, graph, index);
    std::vector<Location> out;
    matcher.find_all(rule_id, out);
    return out;
}

}  // namespace rlflow::rewrite
