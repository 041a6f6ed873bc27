#pragma once
/// \file
/// Reading the rule text form line by line. The grammar is in rewrite/rule_text.hpp.

#include <rlflow/rewrite/detail/rule_load.hpp>
#include <rlflow/rewrite/detail/rule_text_cursor.hpp>
#include <rlflow/rewrite/detail/rule_text_expr.hpp>
#include <rlflow/rewrite/rule.hpp>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow::rewrite::detail {

/// A line that is neither blank nor a comment, with its number (from 1).
struct TextLine {
    std::string_view text;
    std::size_t number = 0;
};

/// The first `limit` lines of `text` that are neither blank nor comments.
[[nodiscard]] inline std::vector<TextLine> content_lines(std::string_view text,
                                                         std::size_t limit = std::numeric_limits<std::size_t>::max()) {
    std::vector<TextLine> lines;
    std::size_t number = 0;
    for (std::size_t start = 0; start <= text.size() && lines.size() < limit;) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        const std::string_view line = text.substr(start, end - start);
        ++number;
        const std::size_t first = line.find_first_not_of(" \t\r");
        if (first != std::string_view::npos && line[first] != text_comment) lines.push_back({line, number});
        start = end + 1;
    }
    return lines;
}

/// True if the first line that is neither blank nor a comment starts with the text
/// form's header keyword.
[[nodiscard]] inline bool looks_like_rule_text(std::string_view bytes) {
    const std::vector<TextLine> first = content_lines(bytes, 1);
    if (first.empty()) return false;
    const std::string_view line = first.front().text;
    return line.substr(line.find_first_not_of(" \t\r")).starts_with(text_header_keyword);
}

/// Reads a whole text: the header, then `rule ... end` blocks. A rule's names are
/// declared in a first pass over its lines, so a line may use a label or variable that
/// is declared below it; symbols not declared by `sym` are appended in order of use.
class RuleTextParser {
public:
    RuleTextParser(std::string_view text, std::string_view source) : m_lines(content_lines(text)), m_source(source) {}

    [[nodiscard]] std::vector<Rule> parse() {
        if (m_lines.empty())
            throw rule_error(m_source + ": missing header '" + std::string(text_header_keyword) + " "
                             + std::to_string(text_format_version) + "' (the text is empty)");
        read_header(m_lines.front());
        for (std::size_t next = 1; next < m_lines.size();) next = read_rule(next);
        return std::move(m_rules);
    }

private:
    [[nodiscard]] std::string line_location(const TextLine& line) const {
        return m_source + ":" + std::to_string(line.number);
    }
    [[nodiscard]] TextCursor rule_cursor(const TextLine& line, const Rule& rule) const {
        return {line.text, rule_location(m_source, line.number, rule.id, rule.name)};
    }

    void read_header(const TextLine& line) const {
        TextCursor c(line.text, line_location(line));
        const std::string expected = std::string(text_header_keyword) + " " + std::to_string(text_format_version);
        if (c.word() != text_header_keyword) c.fail("missing header: the first line must be '" + expected + "'");
        c.skip_spaces();
        const std::int64_t version = c.integer();
        if (version != text_format_version)
            c.fail("version " + std::to_string(version) + " is not supported (this build reads version "
                   + std::to_string(text_format_version) + ")");
        c.expect_end();
    }

    /// Reads the rule whose `rule` line is m_lines[first]; gives the line after its `end`.
    std::size_t read_rule(std::size_t first) {
        const TextLine& head = m_lines[first];
        TextCursor c(head.text, line_location(head));
        const std::string_view word = c.word();
        if (word != text_keyword::rule) c.fail("expected 'rule', found '" + std::string(word) + "'");
        c.skip_spaces();
        Rule rule;
        rule.id = static_cast<std::uint32_t>(m_rules.size());
        rule.name = c.rule_name();
        c.set_location(rule_location(m_source, head.number, rule.id, rule.name));
        c.expect_end();
        const std::size_t end = find_end(first, rule);
        const std::span<const TextLine> body(m_lines.data() + first + 1, end - first - 1);
        RuleScope scope(rule);
        for (const TextLine& line : body) declare_names(line, scope, rule);
        for (const TextLine& line : body) read_body_line(line, scope, rule);
        m_checker.check(rule, rule_location(m_source, head.number, rule.id, rule.name));
        m_rules.push_back(std::move(rule));
        return end + 1;
    }

    /// The index of the `end` line of the rule starting at m_lines[first].
    [[nodiscard]] std::size_t find_end(std::size_t first, const Rule& rule) const {
        for (std::size_t i = first + 1; i < m_lines.size(); ++i) {
            TextCursor c = rule_cursor(m_lines[i], rule);
            const std::string_view word = c.word();
            if (word == text_keyword::end) {
                c.expect_end();
                return i;
            }
            if (word == text_keyword::rule) c.fail("unterminated rule: 'rule' before 'end'");
        }
        rule_cursor(m_lines[first], rule).fail("unterminated rule: no 'end' before the end of the text");
    }

    /// First pass: `var` and `sym` lines and the labels of `src` and `dst` lines.
    void declare_names(const TextLine& line, RuleScope& scope, const Rule& rule) const {
        TextCursor c = rule_cursor(line, rule);
        const std::string_view word = c.word();
        if (word == text_keyword::variables || word == text_keyword::symbols) {
            while (!c.at_end()) {
                if (word == text_keyword::variables) {
                    scope.declare_variable(c, c.name("a variable name"));
                } else {
                    (void)c.accept('$');
                    scope.declare_symbol(c, c.name("a symbol name"));
                }
                c.skip_spaces();
                (void)c.accept(',');  // names may also be separated by commas: `var x, w`
            }
        } else if (word == text_keyword::source || word == text_keyword::target) {
            c.skip_spaces();
            scope.declare_label(c, word == text_keyword::source ? PatternSide::source : PatternSide::target,
                                c.name("a node label"));
        }
    }

    /// Second pass: everything but the declarations.
    void read_body_line(const TextLine& line, RuleScope& scope, Rule& rule) const {
        TextCursor c = rule_cursor(line, rule);
        const std::string_view word = c.word();
        c.skip_spaces();
        if (word == text_keyword::source) {
            rule.source.push_back(read_node(c, scope, PatternSide::source));
        } else if (word == text_keyword::target) {
            rule.target.push_back(read_node(c, scope, PatternSide::target));
        } else if (word == text_keyword::output) {
            const PatternRef source = scope.ref(c, PatternSide::source);
            c.expect_spaced("->");
            rule.outputs.push_back({source, scope.ref(c, PatternSide::target)});
        } else if (word == text_keyword::constraint) {
            rule.constraints.push_back(read_constraint(c, scope));
        } else if (word == text_keyword::order) {
            const std::uint32_t first = scope.source_node(c);
            c.expect_spaced("<");
            rule.ordered.emplace_back(first, scope.source_node(c));
        } else if (word == text_keyword::verification) {
            const std::string_view name = c.word();
            const auto status = verification_from_name(name);
            if (!status) c.fail("unknown status '" + std::string(name) + "' (expected none, tested, proved or rejected)");
            rule.verification = *status;
        } else if (word == text_keyword::variables || word == text_keyword::symbols) {
            return;  // read by declare_names
        } else {
            c.fail("unknown keyword '" + std::string(word)
                   + "' (expected var, sym, src, dst, out, require, order, status or end)");
        }
        c.expect_end();
    }

    /// `<label> = <Op>(<ref>, ...) [name=<expr> ...] [outputs=<n>]`.
    [[nodiscard]] static PatternNode read_node(TextCursor& c, RuleScope& scope, PatternSide side) {
        PatternNode node;
        node.label = c.name("a node label");
        c.expect_spaced("=");
        const std::string_view op = c.name("an op name");
        const std::optional<OpKind> kind = op_kind_from_name(op);
        if (!kind) c.fail("unknown op '" + std::string(op) + "'");
        node.op = *kind;
        c.for_each_item('(', ')', [&] { node.inputs.push_back(scope.ref(c, side)); });
        for (;;) {
            if (!c.at_separator()) c.unexpected();
            if (c.at_end()) return node;
            read_attribute(c, scope, node);
        }
    }

    static void read_attribute(TextCursor& c, RuleScope& scope, PatternNode& node) {
        const std::string name(c.name("an attribute name"));
        c.expect_spaced("=");
        if (name == text_outputs_keyword) {
            node.num_outputs = c.count();
            return;
        }
        const std::optional<AttributeType> type = pattern_attribute_type(node.op, name);
        if (!type) c.fail("unknown attribute '" + name + "' for " + std::string(op_name(node.op)));
        for (const PatternAttribute& earlier : node.attributes)
            if (earlier.name == name) c.fail("attribute '" + name + "' given twice");
        node.attributes.push_back({name, ExprReader(c, scope).attribute(*type, name)});
    }

    /// `<name>(<tensor refs>, <$symbols>, <value>)`, as constraint_specs says.
    [[nodiscard]] static Constraint read_constraint(TextCursor& c, RuleScope& scope) {
        const std::string_view name = c.name("a constraint name");
        const std::optional<Constraint::Kind> kind = constraint_kind_from_name(name);
        if (!kind) c.fail("unknown constraint '" + std::string(name) + "'");
        Constraint constraint;
        constraint.kind = *kind;
        std::size_t values = 0;
        c.for_each_item('(', ')', [&] {
            if (c.peek('$')) {
                constraint.symbols.push_back(scope.symbol(c));
            } else if (c.peek('-') || c.peek_digit()) {
                constraint.value = c.integer();
                ++values;
            } else {
                constraint.tensors.push_back(scope.ref(c, PatternSide::source));
            }
        });
        const ConstraintSpec& spec = constraint_spec(*kind);
        if (constraint.tensors.size() != spec.tensors || constraint.symbols.size() != spec.symbols
            || values != (spec.has_value ? 1U : 0U))
            c.fail(std::string(name) + " takes " + std::to_string(spec.tensors) + " tensor(s), "
                   + std::to_string(spec.symbols) + " symbol(s) and " + (spec.has_value ? "a value" : "no value"));
        return constraint;
    }

    std::vector<TextLine> m_lines;
    std::string m_source;
    std::vector<Rule> m_rules;
    RuleSetChecker m_checker;
};

}  // namespace rlflow::rewrite::detail
