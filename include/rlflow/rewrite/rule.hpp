#pragma once
/// \file
/// A substitution rule (an "xfer"): a source pattern graph and a target pattern graph over
/// shared input variables, with attribute expressions, shape constraints and a mapping of
/// source outputs to target outputs.
///
/// Attribute expressions do double duty. In the source they are checked against a matched
/// node (a `$symbol` binds on its first occurrence and must agree afterwards); in the
/// target they are evaluated to build the new node. So one rule reversed is again a rule.

#include <rlflow/core/attributes.hpp>
#include <rlflow/core/op_traits.hpp>
#include <rlflow/rewrite/constant_tensor.hpp>

#include <algorithm>
#include <compare>
#include <optional>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlflow::rewrite {

/// The most nodes a source pattern may have (a match stores its nodes inline).
inline constexpr std::size_t max_pattern_nodes = 8;
/// The most variables a rule may have.
inline constexpr std::size_t max_pattern_variables = 12;
/// The most outputs a pattern node may have (a Split's parts; the matcher keeps a bit each).
inline constexpr std::uint32_t max_pattern_outputs = 32;

/// A tensor in a pattern: variable `index`, or output `output` of pattern node `index`.
struct PatternRef {
    enum class Kind : std::uint8_t { variable, node };
    Kind kind = Kind::variable;
    std::uint32_t index = 0;
    std::uint32_t output = 0;

    [[nodiscard]] static constexpr PatternRef variable(std::uint32_t i) noexcept { return {Kind::variable, i, 0}; }
    [[nodiscard]] static constexpr PatternRef node(std::uint32_t i, std::uint32_t out = 0) noexcept {
        return {Kind::node, i, out};
    }
    [[nodiscard]] constexpr bool is_variable() const noexcept { return kind == Kind::variable; }
    friend constexpr auto operator<=>(const PatternRef&, const PatternRef&) = default;
};

/// An integer computed from a match: base / divisor + offset, where the base is a literal
/// (0), a bound Int symbol, a dimension of a pattern tensor or its rank. A division that
/// leaves a remainder, or an axis out of range, makes the term (and the match) fail.
struct IntTerm {
    enum class Kind : std::uint8_t { literal, symbol, dim, rank };
    Kind kind = Kind::literal;
    /// Added last; the whole value of a literal.
    std::int64_t offset = 0;
    std::int64_t divisor = 1;
    /// Kind::symbol: the Int symbol; Kind::dim with axis_from_symbol: the axis symbol.
    std::uint32_t symbol = 0;
    /// Kind::dim and Kind::rank: the tensor.
    PatternRef tensor;
    /// Kind::dim: the axis (negative counts from the end), unless axis_from_symbol.
    std::int64_t axis = 0;
    bool axis_from_symbol = false;

    [[nodiscard]] static IntTerm literal(std::int64_t v) {
        IntTerm t;
        t.offset = v;
        return t;
    }
    [[nodiscard]] static IntTerm of_symbol(std::uint32_t s) {
        IntTerm t;
        t.kind = Kind::symbol;
        t.symbol = s;
        return t;
    }
    [[nodiscard]] static IntTerm dim(PatternRef tensor, std::int64_t axis) {
        IntTerm t;
        t.kind = Kind::dim;
        t.tensor = tensor;
        t.axis = axis;
        return t;
    }
    [[nodiscard]] static IntTerm dim_at_symbol(PatternRef tensor, std::uint32_t axis_symbol) {
        IntTerm t = dim(tensor, 0);
        t.symbol = axis_symbol;
        t.axis_from_symbol = true;
        return t;
    }
    [[nodiscard]] static IntTerm rank(PatternRef tensor, std::int64_t offset = 0) {
        IntTerm t;
        t.kind = Kind::rank;
        t.tensor = tensor;
        t.offset = offset;
        return t;
    }
    friend bool operator==(const IntTerm&, const IntTerm&) = default;
};

/// The value an attribute must have (source) or gets (target).
struct AttrExpr {
    enum class Kind : std::uint8_t {
        /// A fixed value.
        literal,
        /// `$name`: binds in the source, is copied in the target.
        symbol,
        /// An Int from terms[0].
        integer,
        /// Ints, one term per element.
        ints,
        /// The permutation of Transpose(Transpose(x, symbol), second_symbol):
        /// result[j] = inner[outer[j]].
        composed_permutation,
    };
    Kind kind = Kind::literal;
    AttributeValue literal;
    std::uint32_t symbol = 0;
    std::uint32_t second_symbol = 0;
    std::vector<IntTerm> terms;

    [[nodiscard]] static AttrExpr of(AttributeValue v) {
        AttrExpr e;
        e.literal = std::move(v);
        return e;
    }
    [[nodiscard]] static AttrExpr of_symbol(std::uint32_t s) {
        AttrExpr e;
        e.kind = Kind::symbol;
        e.symbol = s;
        return e;
    }
    [[nodiscard]] static AttrExpr of_integer(IntTerm t) {
        AttrExpr e;
        e.kind = Kind::integer;
        e.terms.push_back(t);
        return e;
    }
    [[nodiscard]] static AttrExpr of_ints(std::vector<IntTerm> terms) {
        AttrExpr e;
        e.kind = Kind::ints;
        e.terms = std::move(terms);
        return e;
    }
    [[nodiscard]] static AttrExpr composed(std::uint32_t inner, std::uint32_t outer) {
        AttrExpr e;
        e.kind = Kind::composed_permutation;
        e.symbol = inner;
        e.second_symbol = outer;
        return e;
    }
    friend bool operator==(const AttrExpr& a, const AttrExpr& b) {
        return a.kind == b.kind && Attributes::values_equal(a.literal, b.literal) && a.symbol == b.symbol
               && a.second_symbol == b.second_symbol && a.terms == b.terms;
    }
};

/// One attribute of a pattern node. A Constant pattern node has the attribute "value" (a
/// Float): a scalar's single element; with "shape" (Ints) and "fill" (String, "uniform" or
/// "identity") it is a tensor of that shape filled with the value (constant_tensor.hpp).
struct PatternAttribute {
    std::string name;
    AttrExpr value;
    friend bool operator==(const PatternAttribute&, const PatternAttribute&) = default;
};

/// One op of a pattern graph. Inputs refer to variables or to earlier nodes.
struct PatternNode {
    OpKind op = OpKind::Identity;
    std::vector<PatternRef> inputs;
    std::vector<PatternAttribute> attributes;
    std::uint32_t num_outputs = 1;
    /// The node's name in the text form ("conv", "r").
    std::string label;
    friend bool operator==(const PatternNode&, const PatternNode&) = default;
};

/// A condition on the matched tensors and bound symbols beyond op types and attributes.
struct Constraint {
    enum class Kind : std::uint8_t {
        /// rank(tensors[0]) == value.
        rank_equals,
        /// tensors[0] and tensors[1] have the same shape.
        same_shape,
        /// tensors[0] broadcasts to tensors[1] one way (ONNX unidirectional broadcasting).
        broadcasts_to,
        /// Transpose by symbols[0] then symbols[1] is the identity.
        permutation_is_identity,
        /// ... is not the identity.
        permutation_not_identity,
        /// A conv with kernel symbols[0] and pads symbols[1] equals one with its kernel
        /// Enlarge'd to symbols[2] and pads symbols[3]: each kernel dim grows by an even
        /// amount 2e (not all zero) and each pad by exactly e on both sides.
        kernel_enlargeable,
        /// tensors[0] has exactly one element (a scalar that broadcasts anywhere).
        is_scalar,
    };
    Kind kind = Kind::rank_equals;
    std::vector<PatternRef> tensors;
    std::vector<std::uint32_t> symbols;
    std::int64_t value = 0;
    friend bool operator==(const Constraint&, const Constraint&) = default;
};

/// The arity of each constraint kind, and its name in the text form.
struct ConstraintSpec {
    Constraint::Kind kind;
    std::string_view name;
    std::size_t tensors;
    std::size_t symbols;
    bool has_value;
};
inline constexpr ConstraintSpec constraint_specs[] = {
    {Constraint::Kind::rank_equals, "rank_equals", 1, 0, true},
    {Constraint::Kind::same_shape, "same_shape", 2, 0, false},
    {Constraint::Kind::broadcasts_to, "broadcasts_to", 2, 0, false},
    {Constraint::Kind::permutation_is_identity, "permutation_is_identity", 0, 2, false},
    {Constraint::Kind::permutation_not_identity, "permutation_not_identity", 0, 2, false},
    {Constraint::Kind::kernel_enlargeable, "kernel_enlargeable", 0, 4, false},
    {Constraint::Kind::is_scalar, "is_scalar", 1, 0, false},
};
/// The spec of constraint kind `kind`.
[[nodiscard]] constexpr const ConstraintSpec& constraint_spec(Constraint::Kind kind) noexcept {
    return constraint_specs[static_cast<std::size_t>(kind)];
}

/// Which target tensor replaces which source output.
struct OutputMapping {
    /// A source node output.
    PatternRef source;
    /// A target node output or a variable.
    PatternRef target;
    friend bool operator==(const OutputMapping&, const OutputMapping&) = default;
};

/// How a rule was shown to be sound. Hand-written rules (the built-in ones) carry `none`:
/// their tests check them. Generated rules are `proved` (Z3, from the operator axioms),
/// `tested` (numeric checks only: Z3 gave up or is absent) or `rejected` (a check failed;
/// kept in reports, never in a rule set used for rewriting).
enum class Verification : std::uint8_t { none, tested, proved, rejected };

/// The name of a verification status in files and reports ("proved").
[[nodiscard]] constexpr std::string_view verification_name(Verification v) noexcept {
    constexpr std::string_view names[] = {"none", "tested", "proved", "rejected"};
    return names[static_cast<std::size_t>(v)];
}

/// The status called `name`, if any.
[[nodiscard]] constexpr std::optional<Verification> verification_from_name(std::string_view name) noexcept {
    for (const Verification v : {Verification::none, Verification::tested, Verification::proved, Verification::rejected})
        if (verification_name(v) == name) return v;
    return std::nullopt;
}

/// A substitution rule.
struct Rule {
    /// Stable name, unique within a rule set ("fuse_conv_relu").
    std::string name;
    /// Position in its rule set: the xfer id the RL agents see.
    std::uint32_t id = 0;
    std::vector<std::string> variables;
    /// Names of the `$symbols` (without the `$`).
    std::vector<std::string> symbols;
    /// Topologically ordered: a node's inputs are variables or earlier nodes.
    std::vector<PatternNode> source;
    std::vector<PatternNode> target;
    std::vector<OutputMapping> outputs;
    std::vector<Constraint> constraints;
    /// Symmetry breaking: matched source node `first` must have a smaller id than `second`,
    /// so that interchangeable nodes (two parallel convs) give one location, not two.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ordered;
    Verification verification = Verification::none;
    friend bool operator==(const Rule&, const Rule&) = default;
};

/// The type of attribute `name` of `op` in a pattern (a Constant's "value" is a Float,
/// its "shape" Ints and its "fill" a String), or nullopt if the op has no such attribute.
[[nodiscard]] inline std::optional<AttributeType> pattern_attribute_type(OpKind op, std::string_view name) noexcept {
    if (op == OpKind::Constant) {
        if (name == "value") return AttributeType::Float;
        if (name == "shape") return AttributeType::Ints;
        if (name == "fill") return AttributeType::String;
        return std::nullopt;
    }
    for (const AttributeSpec& s : op_traits(op).attributes)
        if (s.name == name) return s.type;
    return std::nullopt;
}

namespace detail {

/// Checks of one rule; every failure throws rule_error naming the rule and the part.
class RuleChecker {
public:
    explicit RuleChecker(const Rule& rule) : m_rule(rule) {}

    void run() const {
        expect(!m_rule.name.empty(), "has no name");
        expect(m_rule.variables.size() <= max_pattern_variables,
               "has " + std::to_string(m_rule.variables.size()) + " variables (at most "
                   + std::to_string(max_pattern_variables) + ")");
        expect(!m_rule.source.empty() && m_rule.source.size() <= max_pattern_nodes,
               "source must have 1.." + std::to_string(max_pattern_nodes) + " nodes");
        check_side(m_rule.source, "source");
        check_side(m_rule.target, "target");
        for (const auto& c : m_rule.constraints) check_constraint(c);
        check_variables_bound();
        check_symbols_bound();
        check_symbol_types();
        check_outputs();
        check_target_complete();
        for (const auto& [first, second] : m_rule.ordered)
            expect(first < m_rule.source.size() && second < m_rule.source.size() && first != second,
                   "ordered pair out of range");
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw rule_error("rule '" + m_rule.name + "': " + what);
    }
    void expect(bool ok, const std::string& what) const {
        if (!ok) fail(what);
    }
    [[nodiscard]] std::string describe(const PatternNode& n, std::string_view side, std::size_t i) const {
        return std::string(side) + " node " + std::to_string(i) + " '" + n.label + "' (" + std::string(op_name(n.op)) + ")";
    }
    void check_ref(PatternRef r, const std::vector<PatternNode>& side, std::size_t before, const std::string& where) const {
        if (r.is_variable()) {
            expect(r.index < m_rule.variables.size() && r.output == 0,
                   where + ": variable " + std::to_string(r.index) + " out of range");
            return;
        }
        expect(r.index < before, where + ": refers to node " + std::to_string(r.index) + ", which is not earlier");
        expect(r.output < side[r.index].num_outputs, where + ": node " + std::to_string(r.index) + " has no output "
                                                         + std::to_string(r.output));
    }
    void check_side(const std::vector<PatternNode>& side, std::string_view name) const {
        for (std::size_t i = 0; i < side.size(); ++i) {
            const PatternNode& n = side[i];
            const std::string where = describe(n, name, i);
            const OpTraits& t = op_traits(n.op);
            expect(n.op == OpKind::Constant || (!t.has(op_flag_source) && !t.has(op_flag_opaque)),
                   where + ": op cannot appear in a pattern");
            const int count = static_cast<int>(n.inputs.size());
            expect(count >= t.min_inputs && (t.max_inputs < 0 || count <= t.max_inputs), where + ": wrong number of inputs");
            expect(n.num_outputs >= 1 && n.num_outputs <= max_pattern_outputs && (n.num_outputs == 1 || n.op == OpKind::Split),
                   where + ": wrong number of outputs");
            for (const auto& r : n.inputs) check_ref(r, side, i, where);
            check_attributes(n, where);
            if (n.op == OpKind::Constant) check_constant(n, where);
        }
    }
    /// A tensor Constant has both "shape" and "fill"; a literal fill is a known one, and an
    /// identity has the rank of a matrix or a conv kernel.
    void check_constant(const PatternNode& n, const std::string& where) const {
        const auto find = [&](std::string_view name) -> const AttrExpr* {
            for (const PatternAttribute& a : n.attributes)
                if (a.name == name) return &a.value;
            return nullptr;
        };
        const AttrExpr* shape = find("shape");
        const AttrExpr* fill = find("fill");
        expect((shape == nullptr) == (fill == nullptr), where + ": a tensor Constant needs both 'shape' and 'fill'");
        if (fill == nullptr || fill->kind != AttrExpr::Kind::literal) return;
        const auto parsed = parse_constant_fill(std::get<std::string>(fill->literal));
        expect(parsed.has_value(), where + ": fill must be \"uniform\" or \"identity\"");
        std::size_t rank = 0;
        if (shape->kind == AttrExpr::Kind::ints) {
            rank = shape->terms.size();
        } else if (shape->kind == AttrExpr::Kind::literal) {
            const auto& dims = std::get<std::vector<std::int64_t>>(shape->literal);
            rank = dims.size();
            expect(!constant_too_large(dims),
                   where + ": the shape has more than " + std::to_string(max_constant_elements) + " elements");
        } else {
            return;
        }
        expect(*parsed != ConstantFill::identity || rank == 2 || rank == 4,
               where + ": an identity Constant is a matrix or a conv kernel (rank 2 or 4)");
    }
    void check_attributes(const PatternNode& n, const std::string& where) const {
        for (std::size_t a = 0; a < n.attributes.size(); ++a) {
            const PatternAttribute& attr = n.attributes[a];
            for (std::size_t b = 0; b < a; ++b)
                expect(n.attributes[b].name != attr.name, where + ": attribute '" + attr.name + "' given twice");
            const auto type = pattern_attribute_type(n.op, attr.name);
            expect(type.has_value(), where + ": unknown attribute '" + attr.name + "'");
            check_expr(attr.value, where + " attribute '" + attr.name + "'");
            const AttrExpr& e = attr.value;
            const bool fits = (e.kind == AttrExpr::Kind::literal && e.literal.index() == static_cast<std::size_t>(*type))
                              || e.kind == AttrExpr::Kind::symbol
                              || (e.kind == AttrExpr::Kind::integer && *type == AttributeType::Int)
                              || ((e.kind == AttrExpr::Kind::ints || e.kind == AttrExpr::Kind::composed_permutation)
                                  && *type == AttributeType::Ints);
            expect(fits, where + ": attribute '" + attr.name + "' must be of type "
                             + std::string(attribute_type_name(*type)));
        }
    }
    void check_expr(const AttrExpr& e, const std::string& where) const {
        const auto symbol_ok = [&](std::uint32_t s) { return s < m_rule.symbols.size(); };
        if (e.kind == AttrExpr::Kind::symbol) expect(symbol_ok(e.symbol), where + ": symbol out of range");
        if (e.kind == AttrExpr::Kind::composed_permutation)
            expect(symbol_ok(e.symbol) && symbol_ok(e.second_symbol), where + ": symbol out of range");
        if (e.kind == AttrExpr::Kind::integer) expect(e.terms.size() == 1, where + ": an integer has one term");
        for (const IntTerm& t : e.terms) {
            expect(t.divisor >= 1, where + ": divisor must be positive");
            if (t.kind == IntTerm::Kind::symbol || (t.kind == IntTerm::Kind::dim && t.axis_from_symbol))
                expect(symbol_ok(t.symbol), where + ": symbol out of range");
            // Terms measure matched tensors: variables or source nodes.
            if (t.kind == IntTerm::Kind::dim || t.kind == IntTerm::Kind::rank)
                check_ref(t.tensor, m_rule.source, m_rule.source.size(), where);
        }
    }
    /// Target nodes give every required attribute (the matcher's dry run and the applier
    /// must agree), and each feeds a mapped output (no dead nodes are created).
    void check_target_complete() const {
        const auto& target = m_rule.target;
        std::vector<char> live(target.size(), 0);
        for (const auto& m : m_rule.outputs)
            if (!m.target.is_variable() && m.target.index < target.size()) live[m.target.index] = 1;
        for (std::size_t i = target.size(); i-- > 0;) {
            const PatternNode& n = target[i];
            const auto has = [&](std::string_view name) {
                return std::any_of(n.attributes.begin(), n.attributes.end(), [&](const PatternAttribute& a) { return a.name == name; });
            };
            for (const AttributeSpec& spec : op_traits(n.op).attributes)
                expect(!spec.required || has(spec.name), describe(n, "target", i) + ": lacks required attribute '"
                                                              + std::string(spec.name) + "'");
            expect(n.op != OpKind::Constant || has("value"), describe(n, "target", i) + ": a Constant needs a value");
            expect(live[i] != 0, describe(n, "target", i) + ": feeds no mapped output");
            for (const auto& r : n.inputs)
                if (!r.is_variable()) live[r.index] = 1;
        }
    }
    void check_variables_bound() const {
        std::vector<bool> bound(m_rule.variables.size(), false);
        for (const auto& n : m_rule.source)
            for (const auto& r : n.inputs)
                if (r.is_variable()) bound[r.index] = true;
        for (std::size_t v = 0; v < bound.size(); ++v)
            expect(bound[v], "variable '" + m_rule.variables[v] + "' is not an input of any source node");
    }
    /// Every symbol is bound by a plain `$symbol` attribute of some source node.
    void check_symbols_bound() const {
        std::vector<bool> bound(m_rule.symbols.size(), false);
        for (const auto& n : m_rule.source)
            for (const auto& a : n.attributes)
                if (a.value.kind == AttrExpr::Kind::symbol) bound[a.value.symbol] = true;
        for (std::size_t s = 0; s < bound.size(); ++s)
            expect(bound[s], "symbol '$" + m_rule.symbols[s] + "' is never bound by a source attribute");
    }
    /// A symbol has the type of the attribute that binds it, and every use agrees.
    void check_symbol_types() const {
        std::vector<std::optional<AttributeType>> types(m_rule.symbols.size());
        for (const auto& n : m_rule.source)
            for (const auto& a : n.attributes)
                if (a.value.kind == AttrExpr::Kind::symbol && !types[a.value.symbol])
                    types[a.value.symbol] = pattern_attribute_type(n.op, a.name);
        const auto use = [&](std::uint32_t s, AttributeType t, const std::string& where) {
            if (types[s] != t)
                fail(where + ": symbol '$" + m_rule.symbols[s] + "' is " + std::string(attribute_type_name(*types[s]))
                     + ", used as " + std::string(attribute_type_name(t)));
        };
        for (const auto& side : {&m_rule.source, &m_rule.target})
            for (const auto& n : *side)
                for (const auto& a : n.attributes) {
                    const std::string where = "attribute '" + a.name + "' of '" + n.label + "'";
                    if (a.value.kind == AttrExpr::Kind::symbol) use(a.value.symbol, *pattern_attribute_type(n.op, a.name), where);
                    if (a.value.kind == AttrExpr::Kind::composed_permutation) {
                        use(a.value.symbol, AttributeType::Ints, where);
                        use(a.value.second_symbol, AttributeType::Ints, where);
                    }
                    for (const IntTerm& t : a.value.terms)
                        if (t.kind == IntTerm::Kind::symbol || (t.kind == IntTerm::Kind::dim && t.axis_from_symbol))
                            use(t.symbol, AttributeType::Int, where);
                }
        for (const auto& c : m_rule.constraints)
            for (const auto s : c.symbols) use(s, AttributeType::Ints, "constraint " + std::string(constraint_spec(c.kind).name));
    }
    void check_outputs() const {
        expect(!m_rule.outputs.empty(), "maps no outputs");
        for (std::size_t i = 0; i < m_rule.outputs.size(); ++i) {
            const OutputMapping& m = m_rule.outputs[i];
            const std::string where = "output mapping " + std::to_string(i);
            expect(!m.source.is_variable(), where + ": source side must be a node output");
            check_ref(m.source, m_rule.source, m_rule.source.size(), where);
            check_ref(m.target, m_rule.target, m_rule.target.size(), where);
            for (std::size_t j = 0; j < i; ++j)
                expect(m_rule.outputs[j].source != m.source && m_rule.outputs[j].target != m.target,
                       where + ": maps a tensor twice");
        }
    }
    void check_constraint(const Constraint& c) const {
        const auto index = static_cast<std::size_t>(c.kind);
        expect(index < std::size(constraint_specs), "unknown constraint kind " + std::to_string(index));
        const ConstraintSpec& spec = constraint_spec(c.kind);
        const std::string where = "constraint " + std::string(spec.name);
        expect(c.tensors.size() == spec.tensors && c.symbols.size() == spec.symbols && (spec.has_value || c.value == 0),
               where + ": wrong number of arguments");
        for (const auto& r : c.tensors) check_ref(r, m_rule.source, m_rule.source.size(), where);
        for (const auto s : c.symbols) expect(s < m_rule.symbols.size(), where + ": symbol out of range");
    }

    const Rule& m_rule;
};

}  // namespace detail

/// Checks a rule's structure; throws rule_error naming the rule and what is wrong.
inline void validate_rule(const Rule& rule) { detail::RuleChecker(rule).run(); }

/// A rule's shape in a few words, for tables and figures where its name (gen_01519) says
/// nothing: the ops of each side in topological order, "Conv+Conv → Concat+Conv+Split".
[[nodiscard]] inline std::string pattern_label(const Rule& rule) {
    const auto side = [](const std::vector<PatternNode>& nodes) {
        std::string text;
        for (const PatternNode& n : nodes) text += (text.empty() ? "" : "+") + std::string(op_name(n.op));
        return text.empty() ? std::string("(inputs)") : text;
    };
    return side(rule.source) + " \u2192 " + side(rule.target);
}

/// The same rule read right to left, named `name`. Throws rule_error if the target cannot
/// serve as a source: it maps a variable to an output, or its expressions and constraints
/// measure source-only tensors or use symbols the target does not bind.
[[nodiscard]] inline Rule reversed(const Rule& rule, std::string name) {
    const auto variables_only = [&](const std::vector<IntTerm>& terms) {
        return std::all_of(terms.begin(), terms.end(), [](const IntTerm& t) {
            return (t.kind != IntTerm::Kind::dim && t.kind != IntTerm::Kind::rank) || t.tensor.is_variable();
        });
    };
    for (const auto& side : {&rule.source, &rule.target})
        for (const auto& n : *side)
            for (const auto& a : n.attributes)
                RLFLOW_EXPECTS(variables_only(a.value.terms), rule_error,
                               "rule '" + rule.name + "': cannot reverse, attribute '" + a.name + "' measures a node");
    for (const auto& c : rule.constraints)
        for (const auto& r : c.tensors)
            RLFLOW_EXPECTS(r.is_variable(), rule_error,
                           "rule '" + rule.name + "': cannot reverse, a constraint measures a node");
    // An attribute the source leaves open matches any value; as a target it would get the
    // default, so every attribute must be pinned down.
    for (const auto& n : rule.source)
        for (const AttributeSpec& spec : op_traits(n.op).attributes) {
            const bool given = std::any_of(n.attributes.begin(), n.attributes.end(),
                                           [&](const PatternAttribute& a) { return a.name == spec.name; });
            RLFLOW_EXPECTS(given, rule_error,
                           "rule '" + rule.name + "': cannot reverse, source node '" + n.label + "' leaves attribute '"
                               + std::string(spec.name) + "' open");
        }
    Rule out = rule;
    out.name = std::move(name);
    std::swap(out.source, out.target);
    out.ordered.clear();
    for (auto& m : out.outputs) {
        RLFLOW_EXPECTS(!m.target.is_variable(), rule_error,
                       "rule '" + rule.name + "': cannot reverse, an output is a variable");
        std::swap(m.source, m.target);
    }
    validate_rule(out);
    return out;
}

}  // namespace rlflow::rewrite
