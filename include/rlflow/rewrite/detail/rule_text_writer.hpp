#pragma once
/// \file
/// Writing one rule in the text form (grammar in rewrite/rule_text.hpp), so that
/// RuleTextParser reads back exactly the same rule.

#include <rlflow/core/error.hpp>
#include <rlflow/rewrite/detail/rule_text_cursor.hpp>
#include <rlflow/rewrite/detail/rule_text_expr.hpp>
#include <rlflow/rewrite/rule.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace rlflow::rewrite::detail {

/// Indentation of the lines inside `rule ... end`.
inline constexpr std::string_view text_indent = "  ";
/// Written after an integer term that would otherwise read back as a bare literal or
/// symbol (see ParsedTerm).
inline constexpr std::string_view text_term_marker = "+0";

/// `value` in the shortest form that reads back as the same double.
[[nodiscard]] inline std::string shortest_double(double value) {
    constexpr std::size_t enough = 32;  // the longest shortest form has 24 characters
    std::array<char, enough> buffer{};
    const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    RLFLOW_ASSERT(ec == std::errc{});
    return std::string(buffer.data(), end);
}

/// `s` in double quotes, with the escapes RuleTextCursor::quoted reads.
[[nodiscard]] inline std::string quoted_string(std::string_view s) {
    constexpr char hex_digits[] = "0123456789abcdef";
    constexpr unsigned nibble_bits = 4;
    constexpr unsigned nibble_mask = 0xf;
    constexpr unsigned char first_printable = 0x20;
    constexpr unsigned char delete_char = 0x7f;
    std::string out = "\"";
    for (const char c : s) {
        const auto* escape = std::find_if(std::begin(text_escapes), std::end(text_escapes),
                                          [&](const auto& e) { return e.second == c; });
        const auto byte = static_cast<unsigned char>(c);
        if (escape != std::end(text_escapes)) {
            out += '\\';
            out += escape->first;
        } else if (byte < first_printable || byte == delete_char) {
            out += "\\x";
            out += hex_digits[byte >> nibble_bits];
            out += hex_digits[byte & nibble_mask];
        } else {
            out += c;
        }
    }
    return out + "\"";
}

/// Writes one rule. The constructor throws rule_error if a name cannot be written (not
/// an identifier, empty, or ambiguous); the rule must have passed RuleSetChecker.
class RuleTextWriter {
public:
    RuleTextWriter(const Rule& rule, std::string location) : m_rule(rule), m_location(std::move(location)) {
        for (const PatternNode& n : rule.source) m_labels[0].push_back(n.label);
        for (const PatternNode& n : rule.target) m_labels[1].push_back(n.label);
        check_names();
    }

    void write(std::string& out) const {
        const auto line = [&](std::string_view word, const std::string& rest) {
            out += std::string(text_indent) + std::string(word) + rest + "\n";
        };
        out += std::string(text_keyword::rule) + " " + m_rule.name + "\n";
        if (!m_rule.variables.empty()) line(text_keyword::variables, joined(m_rule.variables));
        if (!m_rule.symbols.empty()) line(text_keyword::symbols, joined(m_rule.symbols));
        for (const PatternNode& n : m_rule.source) line(text_keyword::source, " " + node(n, PatternSide::source));
        for (const PatternNode& n : m_rule.target) line(text_keyword::target, " " + node(n, PatternSide::target));
        for (const OutputMapping& m : m_rule.outputs)
            line(text_keyword::output,
                 " " + ref(m.source, PatternSide::source) + " -> " + ref(m.target, PatternSide::target));
        for (const Constraint& c : m_rule.constraints) line(text_keyword::constraint, " " + constraint(c));
        for (const auto& [first, second] : m_rule.ordered)
            line(text_keyword::order, " " + m_rule.source[first].label + " < " + m_rule.source[second].label);
        if (m_rule.verification != Verification::none)
            line(text_keyword::verification, " " + std::string(verification_name(m_rule.verification)));
        out += std::string(text_keyword::end) + "\n";
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw rule_error(m_location + ": cannot be written as text: " + what);
    }
    /// Names must read back as themselves and resolve to one thing.
    void check_names() const {
        if (!is_text_rule_name(m_rule.name)) fail("the rule name may only hold letters, digits, '_', '.' and '-'");
        check_unique_names(m_rule.variables, "variable", {});
        check_unique_names(m_rule.symbols, "symbol", {});
        check_unique_names(m_labels[0], "source label", m_rule.variables);
        check_unique_names(m_labels[1], "target label", m_rule.variables);
    }
    void check_unique_names(const std::vector<std::string>& names, std::string_view what,
                            const std::vector<std::string>& taken) const {
        for (std::size_t i = 0; i < names.size(); ++i) {
            const std::string described = std::string(what) + " " + std::to_string(i) + " '" + names[i] + "'";
            if (!is_text_name(names[i])) fail(described + " is not a name ([A-Za-z_][A-Za-z0-9_]*)");
            if (name_index(names, names[i]) != i || name_index(taken, names[i])) fail(described + " is not unique");
        }
    }

    /// ` a b c`: each name after a space.
    [[nodiscard]] static std::string joined(const std::vector<std::string>& names) {
        std::string out;
        for (const std::string& n : names) out += " " + n;
        return out;
    }
    /// `a, b, c`.
    template <class Items, class Write>
    [[nodiscard]] static std::string comma_list(const Items& items, Write write) {
        std::string out;
        bool first = true;
        for (const auto& item : items) {
            out += (first ? "" : ", ") + write(item);
            first = false;
        }
        return out;
    }

    [[nodiscard]] std::string ref(PatternRef r, PatternSide side) const {
        if (r.is_variable()) return m_rule.variables[r.index];
        const std::string& label = m_labels[static_cast<std::size_t>(side)][r.index];
        return r.output == 0 ? label : label + ":" + std::to_string(r.output);
    }
    [[nodiscard]] std::string symbol(std::uint32_t s) const { return "$" + m_rule.symbols[s]; }

    [[nodiscard]] std::string node(const PatternNode& n, PatternSide side) const {
        std::string out = n.label + " = " + std::string(op_name(n.op)) + "("
                          + comma_list(n.inputs, [&](PatternRef r) { return ref(r, side); }) + ")";
        for (const PatternAttribute& a : n.attributes) out += " " + a.name + "=" + expression(a.value);
        if (n.num_outputs != 1) out += " " + std::string(text_outputs_keyword) + "=" + std::to_string(n.num_outputs);
        return out;
    }

    [[nodiscard]] std::string expression(const AttrExpr& e) const {
        const auto looks_bare = [](const IntTerm& t) {
            return t.kind == IntTerm::Kind::literal
                   || (t.kind == IntTerm::Kind::symbol && t.divisor == 1 && t.offset == 0);
        };
        switch (e.kind) {
            case AttrExpr::Kind::literal: return literal(e.literal);
            case AttrExpr::Kind::symbol: return symbol(e.symbol);
            case AttrExpr::Kind::integer:
                return term(e.terms.front()) + std::string(looks_bare(e.terms.front()) ? text_term_marker : "");
            case AttrExpr::Kind::ints: {
                const bool all_literals = std::all_of(
                    e.terms.begin(), e.terms.end(), [](const IntTerm& t) { return t.kind == IntTerm::Kind::literal; });
                std::string out = "[" + comma_list(e.terms, [&](const IntTerm& t) { return term(t); }) + "]";
                // The marker goes after the first term, before the first ',' or the ']'.
                if (all_literals) out.insert(out.find_first_of(",]"), text_term_marker);
                return out;
            }
            case AttrExpr::Kind::composed_permutation:
                return std::string(text_keyword::compose) + "(" + symbol(e.symbol) + ", " + symbol(e.second_symbol)
                       + ")";
        }
        fail("unknown expression kind");
    }

    [[nodiscard]] std::string term(const IntTerm& t) const {
        std::string out;
        switch (t.kind) {
            case IntTerm::Kind::literal: return std::to_string(t.offset);
            case IntTerm::Kind::symbol: out = symbol(t.symbol); break;
            case IntTerm::Kind::dim:
                out = std::string(text_keyword::dim) + "(" + ref(t.tensor, PatternSide::source) + ", "
                      + (t.axis_from_symbol ? symbol(t.symbol) : std::to_string(t.axis)) + ")";
                break;
            case IntTerm::Kind::rank:
                out = std::string(text_keyword::rank) + "(" + ref(t.tensor, PatternSide::source) + ")";
                break;
        }
        if (t.divisor != 1) out += "/" + std::to_string(t.divisor);
        if (t.offset > 0) out += "+";
        if (t.offset != 0) out += std::to_string(t.offset);
        return out;
    }

    [[nodiscard]] std::string literal(const AttributeValue& value) const {
        return std::visit(
            [&](const auto& v) -> std::string {
                using V = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<V, std::int64_t>)
                    return std::to_string(v);
                else if constexpr (std::is_same_v<V, double>)
                    return shortest_double(v);
                else if constexpr (std::is_same_v<V, std::string>)
                    return quoted_string(v);
                else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>)
                    return "[" + comma_list(v, [](std::int64_t x) { return std::to_string(x); }) + "]";
                else if constexpr (std::is_same_v<V, std::vector<double>>)
                    return "[" + comma_list(v, shortest_double) + "]";
                else if constexpr (std::is_same_v<V, std::vector<std::string>>)
                    return "[" + comma_list(v, quoted_string) + "]";
                else
                    fail("tensors are not allowed in rules");
            },
            value);
    }

    [[nodiscard]] std::string constraint(const Constraint& c) const {
        const ConstraintSpec& spec = constraint_spec(c.kind);
        std::vector<std::string> arguments;
        for (const PatternRef r : c.tensors) arguments.push_back(ref(r, PatternSide::source));
        for (const std::uint32_t s : c.symbols) arguments.push_back(symbol(s));
        if (spec.has_value) arguments.push_back(std::to_string(c.value));
        return std::string(spec.name) + "(" + comma_list(arguments, [](const std::string& a) { return a; }) + ")";
    }

    const Rule& m_rule;
    std::string m_location;
    /// The node labels of the source and the target.
    std::vector<std::string> m_labels[2];
};

}  // namespace rlflow::rewrite::detail
