#pragma once
/// \file
/// Reading the names, tensor references, integer terms and attribute expressions of the
/// rule text form. The grammar is in rewrite/rule_text.hpp.

#include <rlflow/rewrite/detail/rule_load.hpp>
#include <rlflow/rewrite/detail/rule_text_cursor.hpp>
#include <rlflow/rewrite/rule.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow::rewrite::detail {

/// Which pattern of a rule a node or reference belongs to.
enum class PatternSide : std::uint8_t { source, target };

/// The position of `name` in `names`, if there.
[[nodiscard]] inline std::optional<std::uint32_t> name_index(const std::vector<std::string>& names,
                                                             std::string_view name) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) return std::nullopt;
    return static_cast<std::uint32_t>(it - names.begin());
}

/// The names of the rule being read. Variables, declared symbols and the labels of both
/// sides are declared before any line that uses them is read; symbols that are used
/// without a declaration are appended in order of first use.
class RuleScope {
public:
    explicit RuleScope(Rule& rule) : m_rule(rule) {}

    void declare_variable(const TextCursor& c, std::string_view name) {
        if (name_index(m_rule.variables, name) || name_index(m_labels[0], name) || name_index(m_labels[1], name))
            c.fail("duplicate name '" + std::string(name) + "'");
        m_rule.variables.emplace_back(name);
    }
    void declare_label(const TextCursor& c, PatternSide side, std::string_view name) {
        if (name_index(labels(side), name) || name_index(m_rule.variables, name))
            c.fail("duplicate label '" + std::string(name) + "'");
        m_labels[static_cast<std::size_t>(side)].emplace_back(name);
    }
    void declare_symbol(const TextCursor& c, std::string_view name) {
        if (name_index(m_rule.symbols, name)) c.fail("duplicate symbol '$" + std::string(name) + "'");
        m_rule.symbols.emplace_back(name);
    }

    /// Reads `name` or `name:k`: a variable, or output k of the node of `side` labelled `name`.
    [[nodiscard]] PatternRef ref(TextCursor& c, PatternSide side) const {
        const std::string_view name = c.name("a label or variable");
        const std::uint32_t output = c.accept(':') ? c.count() : 0;
        if (const auto node = name_index(labels(side), name)) return PatternRef::node(*node, output);
        if (const auto variable = name_index(m_rule.variables, name)) {
            if (output != 0) c.fail("variable '" + std::string(name) + "' has no output " + std::to_string(output));
            return PatternRef::variable(*variable);
        }
        c.fail("unknown label '" + std::string(name) + "'");
    }
    /// Reads the label of a source node and gives its index.
    [[nodiscard]] std::uint32_t source_node(TextCursor& c) const {
        const std::string_view name = c.name("a source label");
        if (const auto node = name_index(labels(PatternSide::source), name)) return *node;
        c.fail("unknown label '" + std::string(name) + "'");
    }
    /// Reads `$name` and gives the symbol's index.
    [[nodiscard]] std::uint32_t symbol(TextCursor& c) {
        c.expect('$');
        const std::string_view name = c.name("a symbol name");
        if (const auto s = name_index(m_rule.symbols, name)) return *s;
        m_rule.symbols.emplace_back(name);
        return static_cast<std::uint32_t>(m_rule.symbols.size() - 1);
    }

private:
    [[nodiscard]] const std::vector<std::string>& labels(PatternSide side) const {
        return m_labels[static_cast<std::size_t>(side)];
    }

    Rule& m_rule;
    std::vector<std::string> m_labels[2];
};

/// A term as read, and whether it was written bare (`5`, `$k`: no divisor, no offset).
/// A bare literal or symbol alone is a literal or symbol expression; to_text writes `+0`
/// after an integer term that would otherwise look bare, so its kind survives.
struct ParsedTerm {
    IntTerm term;
    bool bare = true;
};

/// Reads attribute expressions and integer terms from one line.
class ExprReader {
public:
    ExprReader(TextCursor& cursor, RuleScope& scope) : m_cursor(cursor), m_scope(scope) {}

    /// The value of attribute `attribute` of type `type`; the type decides how numbers
    /// read (`1` is a double for a Float attribute) and what a list holds.
    [[nodiscard]] AttrExpr attribute(AttributeType type, std::string_view attribute) {
        if (m_cursor.peek('[')) return list(type, attribute);
        if (m_cursor.peek('"')) return AttrExpr::of(m_cursor.quoted());
        if (m_cursor.accept_call(text_keyword::compose)) {
            const std::uint32_t inner = m_scope.symbol(m_cursor);
            m_cursor.expect_spaced(",");
            const std::uint32_t outer = m_scope.symbol(m_cursor);
            m_cursor.close();
            return AttrExpr::composed(inner, outer);
        }
        if (type == AttributeType::Float && !m_cursor.peek('$')) return AttrExpr::of(m_cursor.number());
        const ParsedTerm t = term();
        if (t.bare && t.term.kind == IntTerm::Kind::symbol) return AttrExpr::of_symbol(t.term.symbol);
        if (t.bare && t.term.kind == IntTerm::Kind::literal) return AttrExpr::of(t.term.offset);
        return AttrExpr::of_integer(t.term);
    }

    /// `base ['/' INT] [('+'|'-') INT]`; a literal base takes no divisor.
    [[nodiscard]] ParsedTerm term() {
        ParsedTerm out{base()};
        if (m_cursor.peek('/')) {
            if (out.term.kind == IntTerm::Kind::literal) m_cursor.fail("a literal cannot be divided");
            m_cursor.expect('/');
            out.term.divisor = m_cursor.integer();
            if (out.term.divisor < 1) m_cursor.fail("a divisor must be positive");
            out.bare = false;
        }
        if (m_cursor.peek('+') || m_cursor.peek('-')) {
            if (m_cursor.accept('+') && !m_cursor.peek_digit()) m_cursor.fail("expected a number after '+'");
            if (__builtin_add_overflow(out.term.offset, m_cursor.integer(), &out.term.offset))
                m_cursor.fail("number out of range");
            out.bare = false;
        }
        return out;
    }

private:
    /// `INT | $sym | dim(<ref>, INT) | dim(<ref>, $sym) | rank(<ref>)`.
    [[nodiscard]] IntTerm base() {
        if (m_cursor.peek('$')) return IntTerm::of_symbol(m_scope.symbol(m_cursor));
        if (m_cursor.accept_call(text_keyword::dim)) {
            const PatternRef tensor = m_scope.ref(m_cursor, PatternSide::source);
            m_cursor.expect_spaced(",");
            const IntTerm t = m_cursor.peek('$') ? IntTerm::dim_at_symbol(tensor, m_scope.symbol(m_cursor))
                                                 : IntTerm::dim(tensor, m_cursor.integer());
            m_cursor.close();
            return t;
        }
        if (m_cursor.accept_call(text_keyword::rank)) {
            const PatternRef tensor = m_scope.ref(m_cursor, PatternSide::source);
            m_cursor.close();
            return IntTerm::rank(tensor);
        }
        return IntTerm::literal(m_cursor.integer());
    }

    /// `[item, ...]`: strings, numbers or terms as the attribute's type says. A list of
    /// bare literals is a literal; one with any other term is an ints expression.
    [[nodiscard]] AttrExpr list(AttributeType type, std::string_view attribute) {
        switch (type) {
            case AttributeType::Strings: return AttrExpr::of(items([&] { return m_cursor.quoted(); }));
            case AttributeType::Floats: return AttrExpr::of(items([&] { return m_cursor.number(); }));
            case AttributeType::Ints: {
                const std::vector<ParsedTerm> terms = items([&] { return term(); });
                const auto bare_literal
                    = [](const ParsedTerm& t) { return t.bare && t.term.kind == IntTerm::Kind::literal; };
                std::vector<std::int64_t> values;
                std::vector<IntTerm> expressions;
                for (const ParsedTerm& t : terms) {
                    values.push_back(t.term.offset);
                    expressions.push_back(t.term);
                }
                if (std::all_of(terms.begin(), terms.end(), bare_literal)) return AttrExpr::of(std::move(values));
                return AttrExpr::of_ints(std::move(expressions));
            }
            default:
                m_cursor.fail("a list, but attribute '" + std::string(attribute) + "' has type "
                              + std::string(attribute_type_name(type)));
        }
    }

    /// Reads `[item, ...]`.
    template <class ReadItem>
    [[nodiscard]] auto items(ReadItem read_item) -> std::vector<decltype(read_item())> {
        std::vector<decltype(read_item())> out;
        m_cursor.for_each_item('[', ']', [&] { out.push_back(read_item()); });
        return out;
    }

    TextCursor& m_cursor;
    RuleScope& m_scope;
};

}  // namespace rlflow::rewrite::detail
