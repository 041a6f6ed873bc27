#pragma once
/// \file
/// The Z3 encoding of ops (see synth/prover.hpp for the semantics): the sorts of tensors,
/// Int lists and attribute values, one function symbol per (op, input count, output,
/// output count) taking the attributes an op keeps after normalisation, the list
/// constructors and their axioms, and quantifiers with E-matching patterns. Only with Z3
/// (RLFLOW_HAS_Z3).

#include <rlflow/core/attributes.hpp>
#include <rlflow/core/op_traits.hpp>
#include <rlflow/rewrite/detail/rule_text_writer.hpp>
#include <rlflow/rewrite/rule.hpp>
#include <rlflow/synth/detail/rewrite_names.hpp>
#include <rlflow/synth/rule_check.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#ifdef RLFLOW_HAS_Z3
#include <z3++.h>
#endif

#ifdef RLFLOW_HAS_Z3

namespace rlflow::synth::detail {

/// Attributes normalisation always erases: no graph node holds them, so no function
/// symbol takes them.
inline constexpr std::pair<OpKind, std::string_view> attributes_erased_by_normalisation[] = {{OpKind::Reshape, "allowzero"}};

/// Whether pattern node `node` is a tensor Constant (one with a shape and a fill).
[[nodiscard]] inline bool is_tensor_constant(const PatternNode& node) {
    return node.op == OpKind::Constant && mentions(node, "shape");
}

/// The attributes an op's function symbol takes, in order: a scalar Constant its value, a
/// tensor Constant its value, shape and fill (pattern_attribute_type's types).
[[nodiscard]] inline std::vector<AttributeSpec> encoded_attributes(OpKind op, bool tensor_constant) {
    if (op == OpKind::Constant && tensor_constant)
        return {{"value", AttributeType::Float}, {"shape", AttributeType::Ints}, {"fill", AttributeType::String}};
    if (op == OpKind::Constant) return {{"value", AttributeType::Float}};
    std::vector<AttributeSpec> out;
    for (const AttributeSpec& spec : op_traits(op).attributes) {
        const bool erased = std::any_of(std::begin(attributes_erased_by_normalisation), std::end(attributes_erased_by_normalisation),
                                        [&](const auto& e) { return e.first == op && e.second == spec.name; });
        if (!erased) out.push_back(spec);
    }
    return out;
}

/// `∀ bound . body`, instantiated when the terms of `patterns` (together) match.
[[nodiscard]] inline z3::expr forall_with_patterns(const std::vector<z3::expr>& bound, const std::vector<z3::expr>& patterns,
                                                   const z3::expr& body) {
    if (bound.empty()) return body;
    z3::context& c = body.ctx();
    std::vector<Z3_app> variables;
    for (const z3::expr& b : bound) variables.push_back(Z3_to_app(c, b));
    std::vector<Z3_ast> terms(patterns.begin(), patterns.end());
    Z3_pattern pattern = Z3_mk_pattern(c, static_cast<unsigned>(terms.size()), terms.data());
    c.check_error();
    const z3::ast keep(c, Z3_pattern_to_ast(c, pattern));
    const Z3_ast quantifier = Z3_mk_forall_const(c, 0, static_cast<unsigned>(variables.size()), variables.data(), 1, &pattern, body);
    c.check_error();
    return z3::expr(c, quantifier);
}

/// One op function symbol.
struct OpSymbol {
    OpKind op = OpKind::Identity;
    std::uint32_t arity = 0;
    std::uint32_t output = 0;
    std::uint32_t outputs = 1;
    /// A tensor Constant, a symbol apart from scalar ones (is_tensor_constant).
    bool tensor_constant = false;
    friend auto operator<=>(const OpSymbol&, const OpSymbol&) = default;
};

/// The sorts, functions and literal constants of the encoding, in one Z3 context.
class Signature {
public:
    explicit Signature(z3::context& context)
        : m_context(context), m_tensor(context.uninterpreted_sort("Tensor")), m_int(context.int_sort()),
          m_ints(context.uninterpreted_sort("Ints")), m_scalar(context.uninterpreted_sort("Float")),
          m_text(context.uninterpreted_sort("String")), m_floats(context.uninterpreted_sort("Floats")), m_shape(context.function("shape", m_tensor, m_ints)),
          m_length(context.function("length", m_ints, m_int)), m_element(context.function("element", m_ints, m_int, m_int)),
          m_defined(context.function("defined", m_tensor, context.bool_sort())),
          m_compose(context.function("compose", m_ints, m_ints, m_ints)) {}
    Signature(const Signature&) = delete;
    Signature& operator=(const Signature&) = delete;

    [[nodiscard]] z3::context& context() const noexcept { return m_context; }
    [[nodiscard]] const z3::sort& tensor() const noexcept { return m_tensor; }
    /// The sort of an attribute type, if it can be encoded.
    [[nodiscard]] std::optional<z3::sort> attribute_sort(AttributeType type) const {
        switch (type) {
            case AttributeType::Int: return m_int;
            case AttributeType::Float: return m_scalar;
            case AttributeType::String: return m_text;
            case AttributeType::Ints: return m_ints;
            case AttributeType::Floats: return m_floats;
            default: return std::nullopt;
        }
    }
    [[nodiscard]] z3::expr shape(const z3::expr& t) const { return m_shape(t); }
    [[nodiscard]] z3::expr rank(const z3::expr& t) const { return length(shape(t)); }
    [[nodiscard]] z3::expr dim(const z3::expr& t, const z3::expr& axis) const { return element(shape(t), axis); }
    [[nodiscard]] z3::expr length(const z3::expr& list) const { return m_length(list); }
    [[nodiscard]] z3::expr element(const z3::expr& list, const z3::expr& index) const { return m_element(list, index); }
    [[nodiscard]] z3::expr element(const z3::expr& list, int index) const { return m_element(list, m_context.int_val(index)); }
    [[nodiscard]] z3::expr dim(const z3::expr& t, int axis) const { return dim(t, m_context.int_val(axis)); }
    [[nodiscard]] z3::expr defined(const z3::expr& t) const { return m_defined(t); }
    [[nodiscard]] z3::expr compose(const z3::expr& inner, const z3::expr& outer) const { return m_compose(inner, outer); }

    /// The function symbol of `symbol` (made on first use).
    [[nodiscard]] z3::func_decl op_function(const OpSymbol& symbol) {
        if (const auto it = m_functions.find(symbol); it != m_functions.end()) return it->second;
        z3::sort_vector domain(m_context);
        for (std::uint32_t i = 0; i < symbol.arity; ++i) domain.push_back(m_tensor);
        for (const AttributeSpec& a : encoded_attributes(symbol.op, symbol.tensor_constant))
            domain.push_back(*attribute_sort(a.type));
        std::string name = std::string(op_name(symbol.op)) + (symbol.tensor_constant ? "Tensor" : "") + "/"
                           + std::to_string(symbol.arity);
        if (symbol.outputs != 1) name += "#" + std::to_string(symbol.output) + "of" + std::to_string(symbol.outputs);
        return m_functions.emplace(symbol, m_context.function(name.c_str(), domain, m_tensor)).first->second;
    }
    [[nodiscard]] const std::map<OpSymbol, z3::func_decl>& op_functions() const noexcept { return m_functions; }

    /// The predicate standing for a symbol-only constraint kind, or "composable".
    [[nodiscard]] z3::func_decl predicate(std::string_view name, std::size_t arity) {
        z3::sort_vector domain(m_context);
        for (std::size_t i = 0; i < arity; ++i) domain.push_back(m_ints);
        return m_context.function(std::string(name).c_str(), domain, m_context.bool_sort());
    }

    /// The list of `elements` (Int terms).
    [[nodiscard]] z3::expr list(const std::vector<z3::expr>& elements) {
        z3::expr_vector arguments(m_context);
        for (const z3::expr& e : elements) arguments.push_back(e);
        return list_function(elements.size())(arguments);
    }
    /// A literal list of Ints.
    [[nodiscard]] z3::expr ints(std::span<const std::int64_t> values) {
        std::vector<z3::expr> elements;
        for (const std::int64_t v : values) elements.push_back(m_context.int_val(v));
        return list(elements);
    }
    /// What the list constructors mean: `∀ a . length(list_n(a)) = n ∧ element(list_n(a), i) = a_i`
    /// for every length n made so far.
    [[nodiscard]] std::vector<z3::expr> list_axioms() {
        std::vector<z3::expr> axioms;
        for (std::size_t n = 0; n < m_lists.size(); ++n) {
            std::vector<z3::expr> elements;
            for (std::size_t i = 0; i < n; ++i) elements.push_back(m_context.int_const(("element " + std::to_string(i)).c_str()));
            const z3::expr made = list(elements);
            z3::expr body = length(made) == m_context.int_val(static_cast<unsigned>(n));
            for (std::size_t i = 0; i < n; ++i) body = body && element(made, static_cast<int>(i)) == elements[i];
            axioms.push_back(forall_with_patterns(elements, {made}, body));
        }
        return axioms;
    }
    /// The literal `value` of an encodable attribute type.
    [[nodiscard]] z3::expr literal(const AttributeValue& value) {
        if (const auto* i = std::get_if<std::int64_t>(&value)) return m_context.int_val(*i);
        if (const auto* ints_value = std::get_if<std::vector<std::int64_t>>(&value)) return ints(*ints_value);
        if (const auto* f = std::get_if<double>(&value)) return named_literal(m_scalars, float_name(*f), m_scalar);
        if (const auto* fs = std::get_if<std::vector<double>>(&value)) return named_literal(m_float_lists, floats_name(*fs), m_floats);
        return named_literal(m_texts, quoted_string(std::get<std::string>(value)), m_text);
    }
    /// Distinct literals denote distinct values.
    [[nodiscard]] z3::expr literals_distinct() const {
        z3::expr_vector facts(m_context);
        for (const auto* set : {&m_scalars, &m_texts, &m_float_lists}) {
            z3::expr_vector values(m_context);
            for (const auto& [name, constant] : *set) values.push_back(constant);
            if (values.size() > 1) facts.push_back(z3::distinct(values));
        }
        return z3::mk_and(facts);
    }

private:
    /// Named by the shortest text that reads back as `value`: distinct doubles, distinct names.
    [[nodiscard]] static std::string float_name(double value) { return "float " + shortest_double(value); }
    [[nodiscard]] static std::string floats_name(const std::vector<double>& values) {
        std::string name = "floats [";
        for (std::size_t i = 0; i < values.size(); ++i) name += (i == 0 ? "" : ", ") + shortest_double(values[i]);
        return name + "]";
    }
    [[nodiscard]] z3::expr named_literal(std::map<std::string, z3::expr>& set, const std::string& name, const z3::sort& sort) {
        if (const auto it = set.find(name); it != set.end()) return it->second;
        return set.emplace(name, m_context.constant(name.c_str(), sort)).first->second;
    }

    /// The constructor of lists of length n (made, with all shorter ones, on first use).
    [[nodiscard]] z3::func_decl list_function(std::size_t n) {
        while (m_lists.size() <= n) {
            z3::sort_vector domain(m_context);
            for (std::size_t i = 0; i < m_lists.size(); ++i) domain.push_back(m_int);
            m_lists.push_back(m_context.function(("list" + std::to_string(m_lists.size())).c_str(), domain, m_ints));
        }
        return m_lists[n];
    }

    z3::context& m_context;
    z3::sort m_tensor, m_int, m_ints, m_scalar, m_text, m_floats;
    z3::func_decl m_shape, m_length, m_element, m_defined, m_compose;
    std::vector<z3::func_decl> m_lists;
    std::map<OpSymbol, z3::func_decl> m_functions;
    std::map<std::string, z3::expr> m_scalars, m_texts, m_float_lists;
};

/// An op function symbol applied to arguments: what shape facts talk about.
struct Application {
    Signature& signature;
    OpSymbol symbol;
    std::vector<z3::expr> inputs;
    std::vector<z3::expr> attributes;
    z3::expr output;

    /// The argument of attribute `name` (one of the symbol's encoded attributes).
    [[nodiscard]] const z3::expr& attribute(std::string_view name) const {
        const std::vector<AttributeSpec> specs = encoded_attributes(symbol.op, symbol.tensor_constant);
        const auto it = std::find_if(specs.begin(), specs.end(), [&](const AttributeSpec& s) { return s.name == name; });
        RLFLOW_ASSERT(it != specs.end());
        return attributes[static_cast<std::size_t>(it - specs.begin())];
    }
    [[nodiscard]] z3::expr integer(int value) const { return signature.context().int_val(value); }
};

}  // namespace rlflow::synth::detail

#endif  // RLFLOW_HAS_Z3
