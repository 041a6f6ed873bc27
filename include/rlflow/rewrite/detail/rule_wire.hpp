#pragma once
/// \file
/// The binary form of rules: the messages of proto/rules.proto, written and read field by
/// field with rule_wire_stream.hpp. Ops and constraints are stored by name; the small
/// enums by the fixed numbers of the proto file.

#include <rlflow/core/error.hpp>
#include <rlflow/rewrite/detail/rule_load.hpp>
#include <rlflow/rewrite/detail/rule_wire_stream.hpp>
#include <rlflow/rewrite/rule.hpp>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace rlflow::rewrite::detail {

/// RuleFile.format of every rules file.
inline constexpr std::string_view wire_format_name = "rlflow.rules";
/// RuleFile.version this build reads and writes.
inline constexpr std::uint64_t wire_format_version = 1;

// Field numbers of proto/rules.proto, one enum per message.
enum class FileField : std::uint32_t { format = 1, version, rules, rule_count };
enum class RuleField : std::uint32_t {
    name = 1, variables, symbols, source, target, outputs, constraints, ordered, verification
};
enum class RefField : std::uint32_t { kind = 1, index, output };
enum class NodeField : std::uint32_t { op = 1, inputs, attributes, num_outputs, label };
enum class AttributeField : std::uint32_t { name = 1, value };
enum class ExprField : std::uint32_t { kind = 1, literal, symbol, second_symbol, terms };
enum class LiteralField : std::uint32_t { int_value = 1, float_value, string_value, ints, floats, strings };
enum class ListField : std::uint32_t { values = 1 };
enum class TermField : std::uint32_t { kind = 1, offset, divisor, symbol, tensor, axis, axis_from_symbol };
enum class ConstraintField : std::uint32_t { kind = 1, tensors, symbols, value };
enum class OutputField : std::uint32_t { source = 1, target };
enum class PairField : std::uint32_t { first = 1, second };

// The proto enums, indexed by their wire numbers (Ref.Kind, Expr.Kind, IntTerm.Kind):
// the file format fixes these numbers, whatever the C++ enums' order.
inline constexpr PatternRef::Kind wire_ref_kinds[] = {PatternRef::Kind::variable, PatternRef::Kind::node};
inline constexpr AttrExpr::Kind wire_expr_kinds[]
    = {AttrExpr::Kind::literal, AttrExpr::Kind::symbol, AttrExpr::Kind::integer, AttrExpr::Kind::ints,
       AttrExpr::Kind::composed_permutation};
inline constexpr IntTerm::Kind wire_term_kinds[]
    = {IntTerm::Kind::literal, IntTerm::Kind::symbol, IntTerm::Kind::dim, IntTerm::Kind::rank};

template <class Kind, std::size_t N>
[[nodiscard]] constexpr std::uint64_t wire_number(const Kind (&kinds)[N], Kind kind) noexcept {
    for (std::size_t i = 0; i < N; ++i)
        if (kinds[i] == kind) return i;
    return N;  // unreachable for a kind of the enum; a reader rejects it
}

/// The kind whose wire number is `number`; rejects numbers this build does not know.
template <class Kind, std::size_t N>
[[nodiscard]] Kind kind_from_wire(const Kind (&kinds)[N], std::uint64_t number, const WireReader& r,
                                  std::string_view what) {
    if (number >= N) r.reject("unknown " + std::string(what) + " " + std::to_string(number) + " (a newer file?)");
    return kinds[number];
}

// ---- writing ------------------------------------------------------------------------

inline void encode_ref(WireWriter& w, PatternRef ref) {
    w.varint(RefField::kind, wire_number(wire_ref_kinds, ref.kind));
    w.varint(RefField::index, ref.index);
    w.varint(RefField::output, ref.output);
}

template <class Field>
void encode_ref_field(WireWriter& w, Field field, PatternRef ref) {
    w.message(field, [&](WireWriter& m) { encode_ref(m, ref); });
}

/// A Literal message; throws rule_error for tensors, which rules cannot hold.
inline void encode_literal(WireWriter& w, const AttributeValue& value) {
    std::visit(
        [&](const auto& v) {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, std::int64_t>) {
                w.sint64(LiteralField::int_value, v, true);
            } else if constexpr (std::is_same_v<V, double>) {
                w.float64(LiteralField::float_value, v);
            } else if constexpr (std::is_same_v<V, std::string>) {
                w.bytes(LiteralField::string_value, v, true);
            } else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>) {
                w.message(LiteralField::ints, [&](WireWriter& list) {
                    list.packed(ListField::values, v, [](WireWriter& e, std::int64_t x) { e.raw_varint(zigzag(x)); });
                });
            } else if constexpr (std::is_same_v<V, std::vector<double>>) {
                w.message(LiteralField::floats, [&](WireWriter& list) {
                    list.packed(ListField::values, v, [](WireWriter& e, double x) { e.raw_double(x); });
                });
            } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
                w.message(LiteralField::strings, [&](WireWriter& list) {
                    for (const std::string& x : v) list.bytes(ListField::values, x, true);
                });
            } else {
                throw rule_error("tensors are not allowed in rules");
            }
        },
        value);
}

inline void encode_term(WireWriter& w, const IntTerm& t) {
    w.varint(TermField::kind, wire_number(wire_term_kinds, t.kind));
    w.sint64(TermField::offset, t.offset);
    if (t.divisor != 1) w.sint64(TermField::divisor, t.divisor, true);
    w.varint(TermField::symbol, t.symbol);
    const bool measures = t.kind == IntTerm::Kind::dim || t.kind == IntTerm::Kind::rank;
    if (measures || t.tensor != PatternRef{}) encode_ref_field(w, TermField::tensor, t.tensor);
    w.sint64(TermField::axis, t.axis);
    w.varint(TermField::axis_from_symbol, t.axis_from_symbol ? 1 : 0);
}

inline void encode_expr(WireWriter& w, const AttrExpr& e) {
    w.varint(ExprField::kind, wire_number(wire_expr_kinds, e.kind));
    // An absent literal reads as the int 0, the default of AttrExpr::literal.
    const bool default_literal = Attributes::values_equal(e.literal, AttributeValue{});
    if (e.kind == AttrExpr::Kind::literal || !default_literal)
        w.message(ExprField::literal, [&](WireWriter& m) { encode_literal(m, e.literal); });
    w.varint(ExprField::symbol, e.symbol);
    w.varint(ExprField::second_symbol, e.second_symbol);
    for (const IntTerm& t : e.terms) w.message(ExprField::terms, [&](WireWriter& m) { encode_term(m, t); });
}

inline void encode_node(WireWriter& w, const PatternNode& n) {
    w.bytes(NodeField::op, op_name(n.op));
    for (const PatternRef r : n.inputs) encode_ref_field(w, NodeField::inputs, r);
    for (const PatternAttribute& a : n.attributes)
        w.message(NodeField::attributes, [&](WireWriter& m) {
            m.bytes(AttributeField::name, a.name);
            m.message(AttributeField::value, [&](WireWriter& e) { encode_expr(e, a.value); });
        });
    if (n.num_outputs != 1) w.varint(NodeField::num_outputs, n.num_outputs, true);
    w.bytes(NodeField::label, n.label);
}

inline void encode_constraint(WireWriter& w, const Constraint& c) {
    w.bytes(ConstraintField::kind, constraint_spec(c.kind).name);
    for (const PatternRef r : c.tensors) encode_ref_field(w, ConstraintField::tensors, r);
    w.packed(ConstraintField::symbols, c.symbols, [](WireWriter& e, std::uint32_t s) { e.raw_varint(s); });
    w.sint64(ConstraintField::value, c.value);
}

inline void encode_rule(WireWriter& w, const Rule& rule) {
    w.bytes(RuleField::name, rule.name);
    for (const std::string& v : rule.variables) w.bytes(RuleField::variables, v, true);
    for (const std::string& s : rule.symbols) w.bytes(RuleField::symbols, s, true);
    for (const PatternNode& n : rule.source) w.message(RuleField::source, [&](WireWriter& m) { encode_node(m, n); });
    for (const PatternNode& n : rule.target) w.message(RuleField::target, [&](WireWriter& m) { encode_node(m, n); });
    for (const OutputMapping& o : rule.outputs)
        w.message(RuleField::outputs, [&](WireWriter& m) {
            encode_ref_field(m, OutputField::source, o.source);
            encode_ref_field(m, OutputField::target, o.target);
        });
    for (const Constraint& c : rule.constraints)
        w.message(RuleField::constraints, [&](WireWriter& m) { encode_constraint(m, c); });
    for (const auto& [first, second] : rule.ordered)
        w.message(RuleField::ordered, [&](WireWriter& m) {
            m.varint(PairField::first, first);
            m.varint(PairField::second, second);
        });
    w.varint(RuleField::verification, static_cast<std::uint64_t>(rule.verification));
}

/// A RuleFile: header, rules, and the rule count last (see proto/rules.proto).
[[nodiscard]] inline std::string encode_rule_file(std::span<const Rule> rules) {
    return encode_message([&](WireWriter& w) {
        w.bytes(FileField::format, wire_format_name);
        w.varint(FileField::version, wire_format_version);
        for (const Rule& rule : rules) w.message(FileField::rules, [&](WireWriter& m) { encode_rule(m, rule); });
        w.varint(FileField::rule_count, rules.size(), true);
    });
}

// ---- reading ------------------------------------------------------------------------

[[nodiscard]] inline PatternRef decode_ref(WireReader& r) {
    PatternRef ref;
    r.read_message<RefField>([&](RefField field) {
        switch (field) {
            case RefField::kind: ref.kind = kind_from_wire(wire_ref_kinds, r.varint(), r, "reference kind"); break;
            case RefField::index: ref.index = r.uint32(); break;
            case RefField::output: ref.output = r.uint32(); break;
            default: r.skip();
        }
    });
    return ref;
}

/// A list message (IntList, FloatList, StringList): `read_values(values)` reads one
/// occurrence of its `values` field.
template <class T, class ReadValues>
[[nodiscard]] std::vector<T> decode_list(WireReader& r, ReadValues read_values) {
    std::vector<T> values;
    r.read_message<ListField>([&](ListField field) {
        if (field == ListField::values)
            read_values(values);
        else
            r.skip();
    });
    return values;
}

[[nodiscard]] inline AttributeValue decode_literal(WireReader& r) {
    std::optional<AttributeValue> value;
    r.read_message<LiteralField>([&](LiteralField field) {
        switch (field) {
            case LiteralField::int_value: value = r.sint64(); break;
            case LiteralField::float_value: value = r.float64(); break;
            case LiteralField::string_value: value = r.string(); break;
            case LiteralField::ints:
                value = decode_list<std::int64_t>(
                    r, [&](auto& v) { r.repeated_varints([&](std::uint64_t x) { v.push_back(unzigzag(x)); }); });
                break;
            case LiteralField::floats:
                value = decode_list<double>(r, [&](auto& v) { r.repeated_doubles([&](double x) { v.push_back(x); }); });
                break;
            case LiteralField::strings:
                value = decode_list<std::string>(r, [&](auto& v) { v.push_back(r.string()); });
                break;
            default: r.skip();
        }
    });
    if (!value) r.reject("a literal has no value");
    return std::move(*value);
}

[[nodiscard]] inline IntTerm decode_term(WireReader& r) {
    IntTerm t;
    r.read_message<TermField>([&](TermField field) {
        switch (field) {
            case TermField::kind: t.kind = kind_from_wire(wire_term_kinds, r.varint(), r, "term kind"); break;
            case TermField::offset: t.offset = r.sint64(); break;
            case TermField::divisor: t.divisor = r.sint64(); break;
            case TermField::symbol: t.symbol = r.uint32(); break;
            case TermField::tensor: t.tensor = decode_ref(r); break;
            case TermField::axis: t.axis = r.sint64(); break;
            case TermField::axis_from_symbol: t.axis_from_symbol = r.varint() != 0; break;
            default: r.skip();
        }
    });
    if (t.divisor == 0) t.divisor = 1;  // absent means 1
    return t;
}

[[nodiscard]] inline AttrExpr decode_expr(WireReader& r) {
    AttrExpr e;
    r.read_message<ExprField>([&](ExprField field) {
        switch (field) {
            case ExprField::kind: e.kind = kind_from_wire(wire_expr_kinds, r.varint(), r, "expression kind"); break;
            case ExprField::literal: e.literal = decode_literal(r); break;
            case ExprField::symbol: e.symbol = r.uint32(); break;
            case ExprField::second_symbol: e.second_symbol = r.uint32(); break;
            case ExprField::terms: e.terms.push_back(decode_term(r)); break;
            default: r.skip();
        }
    });
    return e;
}

[[nodiscard]] inline PatternAttribute decode_attribute(WireReader& r) {
    PatternAttribute a;
    r.read_message<AttributeField>([&](AttributeField field) {
        switch (field) {
            case AttributeField::name: a.name = r.string(); break;
            case AttributeField::value: a.value = decode_expr(r); break;
            default: r.skip();
        }
    });
    return a;
}

/// Node `index` of `side` ("source", "target").
[[nodiscard]] inline PatternNode decode_node(WireReader& r, std::string_view side, std::size_t index) {
    PatternNode n;
    std::optional<std::string> op;
    r.read_message<NodeField>([&](NodeField field) {
        switch (field) {
            case NodeField::op: op = r.string(); break;
            case NodeField::inputs: n.inputs.push_back(decode_ref(r)); break;
            case NodeField::attributes: n.attributes.push_back(decode_attribute(r)); break;
            case NodeField::num_outputs: n.num_outputs = r.uint32(); break;
            case NodeField::label: n.label = r.string(); break;
            default: r.skip();
        }
    });
    const std::optional<OpKind> kind = op_kind_from_name(op.value_or(""));
    if (!kind)
        r.reject(std::string(side) + " node " + std::to_string(index) + " '" + n.label + "': unknown op '"
                 + op.value_or("") + "'");
    n.op = *kind;
    if (n.num_outputs == 0) n.num_outputs = 1;  // absent means 1
    return n;
}

[[nodiscard]] inline Constraint decode_constraint(WireReader& r) {
    Constraint c;
    std::string name;
    r.read_message<ConstraintField>([&](ConstraintField field) {
        switch (field) {
            case ConstraintField::kind: name = r.string(); break;
            case ConstraintField::tensors: c.tensors.push_back(decode_ref(r)); break;
            case ConstraintField::symbols:
                r.repeated_varints([&](std::uint64_t s) {
                    if (s > std::numeric_limits<std::uint32_t>::max()) r.malformed("symbol index overflows a uint32");
                    c.symbols.push_back(static_cast<std::uint32_t>(s));
                });
                break;
            case ConstraintField::value: c.value = r.sint64(); break;
            default: r.skip();
        }
    });
    const std::optional<Constraint::Kind> kind = constraint_kind_from_name(name);
    if (!kind) r.reject("unknown constraint '" + name + "'");
    c.kind = *kind;
    return c;
}

[[nodiscard]] inline OutputMapping decode_output(WireReader& r) {
    OutputMapping m;
    r.read_message<OutputField>([&](OutputField field) {
        switch (field) {
            case OutputField::source: m.source = decode_ref(r); break;
            case OutputField::target: m.target = decode_ref(r); break;
            default: r.skip();
        }
    });
    return m;
}

[[nodiscard]] inline std::pair<std::uint32_t, std::uint32_t> decode_pair(WireReader& r) {
    std::pair<std::uint32_t, std::uint32_t> p;
    r.read_message<PairField>([&](PairField field) {
        switch (field) {
            case PairField::first: p.first = r.uint32(); break;
            case PairField::second: p.second = r.uint32(); break;
            default: r.skip();
        }
    });
    return p;
}

/// A Rule's verification field; an unknown value is an error (it would be trusted otherwise).
[[nodiscard]] inline Verification decode_verification(WireReader& r) {
    const std::uint64_t value = r.varint();
    if (value > static_cast<std::uint64_t>(Verification::rejected)) r.reject("unknown verification " + std::to_string(value));
    return static_cast<Verification>(value);
}

/// Rule `index` of the file `source`, from its Rule message `bytes` at `file_offset`.
[[nodiscard]] inline Rule decode_rule(std::string_view bytes, std::size_t file_offset, std::string_view source,
                                      std::size_t index) {
    Rule rule;
    rule.id = static_cast<std::uint32_t>(index);
    WireReader r(bytes, file_offset, rule_location(source, 0, index, {}));
    r.for_each_field<RuleField>([&](RuleField field) {
        switch (field) {
            case RuleField::name:
                rule.name = r.string();
                r.set_location(rule_location(source, 0, index, rule.name));
                break;
            case RuleField::variables: rule.variables.push_back(r.string()); break;
            case RuleField::symbols: rule.symbols.push_back(r.string()); break;
            case RuleField::source: rule.source.push_back(decode_node(r, "source", rule.source.size())); break;
            case RuleField::target: rule.target.push_back(decode_node(r, "target", rule.target.size())); break;
            case RuleField::outputs: rule.outputs.push_back(decode_output(r)); break;
            case RuleField::constraints: rule.constraints.push_back(decode_constraint(r)); break;
            case RuleField::ordered: rule.ordered.push_back(decode_pair(r)); break;
            case RuleField::verification: rule.verification = decode_verification(r); break;
            default: r.skip();
        }
    });
    return rule;
}

/// The top level of a RuleFile: its header fields and where each Rule message lies.
struct RuleFileHeader {
    std::optional<std::string> format;
    std::uint64_t version = 0;
    std::optional<std::uint64_t> rule_count;
    /// Each Rule message and its offset in the file.
    std::vector<std::pair<std::string_view, std::size_t>> rules;
};

/// Reads the top level of `bytes`; malformed input before a right `format` field reads
/// as "not an rlflow rules file".
[[nodiscard]] inline RuleFileHeader decode_rule_file_header(std::string_view bytes, std::string_view source) {
    RLFLOW_EXPECTS(!bytes.empty(), rule_error, std::string(source) + ": not an rlflow rules file (it is empty)");
    RLFLOW_EXPECTS(bytes.size() <= static_cast<std::size_t>(INT_MAX), rule_error,
                   std::string(source) + ": larger than 2 GiB, which no rules file is");
    RuleFileHeader header;
    WireReader r(bytes, 0, std::string(source));
    r.set_sniffing(true);
    r.for_each_field<FileField>([&](FileField field) {
        switch (field) {
            case FileField::format:
                header.format = r.string();
                r.set_sniffing(header.format != wire_format_name);
                break;
            case FileField::version: header.version = r.varint(); break;
            case FileField::rules: {
                const std::string_view rule = r.length_delimited();
                header.rules.emplace_back(rule, r.file_position() - rule.size());
                break;
            }
            case FileField::rule_count: header.rule_count = r.varint(); break;
            default: r.skip();
        }
    });
    return header;
}

/// Reads a RuleFile and checks every rule (RuleSetChecker); errors name `source`.
[[nodiscard]] inline std::vector<Rule> decode_rule_file(std::string_view bytes, std::string_view source) {
    const RuleFileHeader header = decode_rule_file_header(bytes, source);
    const std::string where(source);
    RLFLOW_EXPECTS(header.format.has_value(), rule_error, where + ": not an rlflow rules file (no format field)");
    RLFLOW_EXPECTS(*header.format == wire_format_name, rule_error,
                   where + ": not an rlflow rules file (format '" + *header.format + "', expected '"
                       + std::string(wire_format_name) + "')");
    RLFLOW_EXPECTS(header.version == wire_format_version, rule_error,
                   where + ": version " + std::to_string(header.version)
                       + " is not supported (this build reads version " + std::to_string(wire_format_version) + ")");
    RLFLOW_EXPECTS(header.rule_count.has_value(), rule_error,
                   where + ": truncated: the rule count, written after the rules, is missing");
    RLFLOW_EXPECTS(*header.rule_count == header.rules.size(), rule_error,
                   where + ": says it holds " + std::to_string(*header.rule_count) + " rules but holds "
                       + std::to_string(header.rules.size()) + " (truncated or corrupt)");
    std::vector<Rule> rules;
    RuleSetChecker checker;
    for (std::size_t i = 0; i < header.rules.size(); ++i) {
        Rule rule = decode_rule(header.rules[i].first, header.rules[i].second, source, i);
        checker.check(rule, rule_location(source, 0, i, rule.name));
        rules.push_back(std::move(rule));
    }
    return rules;
}

}  // namespace rlflow::rewrite::detail
