#pragma once
/// \file
/// One rule as Z3 terms and formulas (see synth/prover.hpp): as an axiom, universally
/// quantified with its source's root terms as the E-matching pattern; as a goal, premises
/// over constants and the negated conclusion. Also why a rule cannot be encoded. Only with
/// Z3 (RLFLOW_HAS_Z3).

#include <rlflow/rewrite/detail/rule_text_expr.hpp>
#include <rlflow/rewrite/rule.hpp>
#include <rlflow/synth/axiom.hpp>
#include <rlflow/synth/detail/prover_shape_facts.hpp>
#include <rlflow/synth/detail/prover_signature.hpp>
#include <rlflow/synth/detail/rewrite_names.hpp>
#include <rlflow/synth/rule_check.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#ifdef RLFLOW_HAS_Z3

namespace rlflow::synth::detail {

/// Encodes constraints that measure tensors; symbol-only ones become predicates.
[[nodiscard]] inline std::optional<z3::expr> tensor_constraint(Signature& s, const Constraint& c, const std::vector<z3::expr>& tensors) {
    switch (c.kind) {
        case Constraint::Kind::rank_equals: return s.rank(tensors[0]) == s.context().int_val(c.value);
        case Constraint::Kind::same_shape: return s.shape(tensors[0]) == s.shape(tensors[1]);
        case Constraint::Kind::broadcasts_to:
            return s.predicate(constraint_spec(c.kind).name, 2)(s.shape(tensors[0]), s.shape(tensors[1]));
        default: return std::nullopt;
    }
}

/// Why `rule` cannot be encoded, if it cannot.
[[nodiscard]] inline std::optional<std::string> encoding_problem(Signature& s, const Rule& rule) {
    for (const auto* side : {&rule.source, &rule.target})
        for (const PatternNode& node : *side) {
            const std::string where = "node '" + node.label + "' (" + std::string(op_name(node.op)) + ")";
            const std::vector<AttributeSpec> specs = encoded_attributes(node.op, is_tensor_constant(node));
            for (const AttributeSpec& spec : specs) {
                if (!s.attribute_sort(spec.type))
                    return where + ": attributes of type " + std::string(attribute_type_name(spec.type)) + " are not encoded";
                if (side == &rule.target && !mentions(node, spec.name))
                    return "target " + where + " leaves attribute '" + std::string(spec.name) + "' to its default";
            }
            for (const PatternAttribute& a : node.attributes)
                if (std::none_of(specs.begin(), specs.end(), [&](const AttributeSpec& spec) { return spec.name == a.name; }))
                    return where + " sets attribute '" + a.name + "', which normalisation erases";
        }
    for (std::uint32_t q = 0; q < rule.source.size(); ++q) {
        const auto rank_zero = [&](const Constraint& c) {
            return c.kind == Constraint::Kind::rank_equals && c.value == 0 && c.tensors[0] == PatternRef::node(q);
        };
        const PatternNode& node = rule.source[q];
        const bool scalar_constant = node.op == OpKind::Constant && !is_tensor_constant(node);
        if (scalar_constant && std::none_of(rule.constraints.begin(), rule.constraints.end(), rank_zero))
            return "source Constant '" + node.label + "' may match any one-element constant; require rank_equals(" + node.label
                   + ", 0)";
    }
    const std::vector<z3::expr> probe(2, s.context().constant("probe", s.tensor()));
    for (const Constraint& c : rule.constraints)
        if (constraint_spec(c.kind).tensors != 0 && !tensor_constraint(s, c, probe))
            return "constraint " + std::string(constraint_spec(c.kind).name) + " is not encoded";
    return std::nullopt;
}

/// Whether a rule is encoded as an axiom (over bound variables) or as the goal (over
/// constants).
enum class EncodingMode : std::uint8_t { axiom, goal };

/// One rule as Z3 terms and formulas (see the file comment). The rule must be valid and
/// have no encoding_problem.
class RuleEncoding {
public:
    RuleEncoding(Signature& signature, const Rule& rule, EncodingMode mode, AxiomGuard guard = AxiomGuard::source)
        : m_signature(signature), m_context(signature.context()), m_rule(rule), m_mode(mode), m_conditions(m_context),
          m_equalities(m_context) {
        declare_variables_and_symbols();
        for (const PatternNode& node : rule.source) m_source.push_back(encode_node(node, PatternSide::source));
        for (const Deferred& d : m_deferred) m_conditions.push_back(d.argument == expression(*d.expression));
        for (const PatternNode& node : rule.target) m_target.push_back(encode_node(node, PatternSide::target));
        for (const Constraint& c : rule.constraints) m_conditions.push_back(constraint(c));
        for (const OutputMapping& m : rule.outputs)
            m_equalities.push_back(tensor(m.source, PatternSide::source) == tensor(m.target, PatternSide::target));
        add_definedness(guard);
    }

    /// ∀ variables, symbols, source attributes . conditions → equalities, instantiated when
    /// the source pattern's root terms match.
    [[nodiscard]] z3::expr axiom() const {
        std::vector<z3::expr> roots;
        for (std::uint32_t q = 0; q < m_rule.source.size(); ++q)
            if (!consumed_in_source(q)) roots.push_back(m_source[q][0]);
        return forall_with_patterns(m_bound, roots, z3::implies(z3::mk_and(m_conditions), z3::mk_and(m_equalities)));
    }
    /// The premises, then the negated conclusion.
    [[nodiscard]] std::vector<z3::expr> goal() const {
        std::vector<z3::expr> assertions;
        for (unsigned i = 0; i < m_conditions.size(); ++i) assertions.push_back(m_conditions[i]);
        assertions.push_back(!z3::mk_and(m_equalities));
        return assertions;
    }
    /// The Int lists the rule writes literally (for ground facts about them).
    [[nodiscard]] const std::set<std::vector<std::int64_t>>& literal_lists() const noexcept { return m_literal_lists; }

private:
    /// A source attribute given by an expression: the argument, equated to it once every
    /// source node is encoded.
    struct Deferred {
        z3::expr argument;
        const AttrExpr* expression;
    };

    /// A constant; in an axiom, one of the bound variables.
    [[nodiscard]] z3::expr fresh(const std::string& name, const z3::sort& sort) {
        z3::expr constant = m_context.constant(name.c_str(), sort);
        if (m_mode == EncodingMode::axiom) m_bound.push_back(constant);
        return constant;
    }

    void declare_variables_and_symbols() {
        for (const std::string& name : m_rule.variables) {
            m_variables.push_back(fresh("var " + name, m_signature.tensor()));
            if (m_mode == EncodingMode::goal) m_conditions.push_back(m_signature.defined(m_variables.back()));
        }
        const auto types = symbol_types(m_rule);
        for (std::size_t s = 0; s < m_rule.symbols.size(); ++s)
            m_symbols.push_back(fresh("$" + m_rule.symbols[s], *m_signature.attribute_sort(*types[s])));
    }

    [[nodiscard]] bool consumed_in_source(std::uint32_t q) const {
        return std::any_of(m_rule.source.begin(), m_rule.source.end(), [&](const PatternNode& n) {
            return std::any_of(n.inputs.begin(), n.inputs.end(), [&](PatternRef r) { return !r.is_variable() && r.index == q; });
        });
    }

    [[nodiscard]] const z3::expr& tensor(PatternRef ref, PatternSide side) const {
        if (ref.is_variable()) return m_variables[ref.index];
        return (side == PatternSide::source ? m_source : m_target)[ref.index][ref.output];
    }

    /// One term per output of `node`.
    [[nodiscard]] std::vector<z3::expr> encode_node(const PatternNode& node, PatternSide side) {
        z3::expr_vector arguments(m_context);
        for (const PatternRef& r : node.inputs) arguments.push_back(tensor(r, side));
        const bool tensor_constant = is_tensor_constant(node);
        for (const AttributeSpec& spec : encoded_attributes(node.op, tensor_constant))
            arguments.push_back(attribute_argument(node, spec, side));
        std::vector<z3::expr> outputs;
        const auto arity = static_cast<std::uint32_t>(node.inputs.size());
        for (std::uint32_t k = 0; k < node.num_outputs; ++k)
            outputs.push_back(m_signature.op_function({node.op, arity, k, node.num_outputs, tensor_constant})(arguments));
        return outputs;
    }

    /// A target attribute is its expression. A source attribute is its symbol, or (an
    /// axiom's literal, any derived value) a fresh argument equated to its expression, or
    /// (left open) a fresh argument.
    [[nodiscard]] z3::expr attribute_argument(const PatternNode& node, const AttributeSpec& spec, PatternSide side) {
        const auto it = std::find_if(node.attributes.begin(), node.attributes.end(),
                                     [&](const PatternAttribute& a) { return a.name == spec.name; });
        const std::string name = "attribute " + node.label + "." + std::string(spec.name);
        if (it == node.attributes.end()) return fresh(name, *m_signature.attribute_sort(spec.type));
        const AttrExpr& e = it->value;
        const bool direct = e.kind == AttrExpr::Kind::symbol || (e.kind == AttrExpr::Kind::literal && m_mode == EncodingMode::goal);
        if (side == PatternSide::target || direct) return expression(e);
        z3::expr argument = fresh(name, *m_signature.attribute_sort(spec.type));
        m_deferred.push_back({argument, &e});
        return argument;
    }

    [[nodiscard]] z3::expr expression(const AttrExpr& e) {
        switch (e.kind) {
            case AttrExpr::Kind::literal:
                if (const auto* list = std::get_if<std::vector<std::int64_t>>(&e.literal)) m_literal_lists.insert(*list);
                return m_signature.literal(e.literal);
            case AttrExpr::Kind::symbol: return m_symbols[e.symbol];
            case AttrExpr::Kind::integer: return integer(e.terms[0]);
            case AttrExpr::Kind::ints: return int_list(e.terms);
            case AttrExpr::Kind::composed_permutation: {
                const z3::expr &inner = m_symbols[e.symbol], &outer = m_symbols[e.second_symbol];
                m_conditions.push_back(m_signature.predicate(composable_name, 2)(inner, outer));
                return m_signature.compose(inner, outer);
            }
        }
        RLFLOW_ASSERT(false);
        return m_context.int_val(0);
    }

    [[nodiscard]] z3::expr int_list(const std::vector<IntTerm>& terms) {
        std::vector<std::int64_t> literal;
        std::vector<z3::expr> elements;
        for (const IntTerm& t : terms) {
            if (t.kind == IntTerm::Kind::literal) literal.push_back(t.offset);
            elements.push_back(integer(t));
        }
        if (literal.size() == terms.size()) m_literal_lists.insert(literal);
        return m_signature.list(elements);
    }

    /// base / divisor + offset, with the conditions evaluate() needs to succeed: an axis in
    /// range, a known dim, an exact division.
    [[nodiscard]] z3::expr integer(const IntTerm& t) {
        z3::expr base = m_context.int_val(0);
        if (t.kind == IntTerm::Kind::symbol) base = m_symbols[t.symbol];
        if (t.kind == IntTerm::Kind::rank) base = m_signature.rank(tensor(t.tensor, PatternSide::source));
        if (t.kind == IntTerm::Kind::dim) {
            const z3::expr& measured = tensor(t.tensor, PatternSide::source);
            const z3::expr rank = m_signature.rank(measured);
            const z3::expr axis = normalised_axis(t.axis_from_symbol ? m_symbols[t.symbol] : m_context.int_val(t.axis), rank);
            base = m_signature.dim(measured, axis);
            m_conditions.push_back(axis >= 0 && axis < rank && base >= 0);
        }
        if (t.divisor != 1) {
            const z3::expr divisor = m_context.int_val(t.divisor);
            m_conditions.push_back(z3::mod(base, divisor) == 0);
            base = base / divisor;
        }
        return base + m_context.int_val(t.offset);
    }

    [[nodiscard]] z3::expr constraint(const Constraint& c) {
        const ConstraintSpec& spec = constraint_spec(c.kind);
        if (spec.tensors == 0) {
            z3::expr_vector arguments(m_context);
            for (const std::uint32_t s : c.symbols) arguments.push_back(m_symbols[s]);
            return m_signature.predicate(spec.name, spec.symbols)(arguments);
        }
        std::vector<z3::expr> tensors;
        for (const PatternRef& r : c.tensors) tensors.push_back(tensor(r, PatternSide::source));
        return *tensor_constraint(m_signature, c, tensors);
    }

    /// Source outputs are defined (the guard). A goal also knows its variables and target
    /// outputs defined and each replacement of the replaced output's shape; an axiom with
    /// the inner-target guard, its target's inner nodes defined.
    void add_definedness(AxiomGuard guard) {
        for (const auto& outputs : m_source)
            for (const z3::expr& t : outputs) m_conditions.push_back(m_signature.defined(t));
        const bool goal = m_mode == EncodingMode::goal;
        for (std::uint32_t q = 0; q < m_target.size(); ++q) {
            const bool mapped = std::any_of(m_rule.outputs.begin(), m_rule.outputs.end(),
                                            [&](const OutputMapping& m) { return !m.target.is_variable() && m.target.index == q; });
            if (goal || (guard == AxiomGuard::source_and_inner_target && !mapped))
                for (const z3::expr& t : m_target[q]) m_conditions.push_back(m_signature.defined(t));
        }
        if (!goal) return;
        for (const OutputMapping& m : m_rule.outputs)
            m_conditions.push_back(m_signature.shape(tensor(m.source, PatternSide::source))
                                   == m_signature.shape(tensor(m.target, PatternSide::target)));
    }

    static constexpr std::string_view composable_name = "composable";

    Signature& m_signature;
    z3::context& m_context;
    const Rule& m_rule;
    EncodingMode m_mode;
    std::vector<z3::expr> m_variables, m_symbols, m_bound;
    std::vector<std::vector<z3::expr>> m_source, m_target;
    std::vector<Deferred> m_deferred;
    z3::expr_vector m_conditions, m_equalities;
    std::set<std::vector<std::int64_t>> m_literal_lists;
};

}  // namespace rlflow::synth::detail

#endif  // RLFLOW_HAS_Z3
