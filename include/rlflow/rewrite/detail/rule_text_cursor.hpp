#pragma once
/// \file
/// Reading one line of the rule text form: names, numbers, quoted strings and
/// punctuation, with errors that name the file, line and rule.

#include <rlflow/core/error.hpp>

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace rlflow::rewrite::detail {

/// The first word of the text form.
inline constexpr std::string_view text_header_keyword = "rlflow-rules";
/// The text form version this build reads and writes.
inline constexpr std::int64_t text_format_version = 1;
/// The keywords of the text form: those that start lines, and functions.
namespace text_keyword {
inline constexpr std::string_view rule = "rule";
inline constexpr std::string_view end = "end";
inline constexpr std::string_view variables = "var";
inline constexpr std::string_view symbols = "sym";
inline constexpr std::string_view source = "src";
inline constexpr std::string_view target = "dst";
inline constexpr std::string_view output = "out";
inline constexpr std::string_view constraint = "require";
inline constexpr std::string_view order = "order";
inline constexpr std::string_view verification = "status";
// Functions in expressions.
inline constexpr std::string_view compose = "compose";
inline constexpr std::string_view dim = "dim";
inline constexpr std::string_view rank = "rank";
}  // namespace text_keyword
/// The attribute name that gives a node's output count (`outputs=2`).
inline constexpr std::string_view text_outputs_keyword = "outputs";
/// Starts a comment that runs to the end of the line.
inline constexpr char text_comment = '#';

/// Escapes in quoted strings besides `\xHH`: the letter after the backslash and the
/// character it stands for.
inline constexpr std::pair<char, char> text_escapes[]
    = {{'\\', '\\'}, {'"', '"'}, {'n', '\n'}, {'r', '\r'}, {'t', '\t'}};
/// Hex digits in a `\xHH` escape.
inline constexpr std::size_t text_hex_escape_digits = 2;

[[nodiscard]] constexpr bool is_name_start(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
[[nodiscard]] constexpr bool is_name_char(char c) noexcept { return is_name_start(c) || (c >= '0' && c <= '9'); }
/// Rule names may also hold '.' and '-' ("taso.17", "fuse-conv-relu").
[[nodiscard]] constexpr bool is_rule_name_char(char c) noexcept { return is_name_char(c) || c == '.' || c == '-'; }
[[nodiscard]] constexpr bool is_text_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\r'; }

/// True if `s` is a variable, label or symbol name: [A-Za-z_][A-Za-z0-9_]*.
[[nodiscard]] constexpr bool is_text_name(std::string_view s) noexcept {
    if (s.empty() || !is_name_start(s.front())) return false;
    for (const char c : s)
        if (!is_name_char(c)) return false;
    return true;
}
/// True if `s` can be a rule name in the text form.
[[nodiscard]] constexpr bool is_text_rule_name(std::string_view s) noexcept {
    if (s.empty()) return false;
    for (const char c : s)
        if (!is_rule_name_char(c)) return false;
    return true;
}

/// A position in one line. Nothing skips spaces unless it says so: a space ends an
/// attribute expression.
class TextCursor {
public:
    TextCursor(std::string_view line, std::string location) : m_line(line), m_location(std::move(location)) {}

    /// Throws rule_error naming this line's location.
    [[noreturn]] void fail(const std::string& what) const { throw rule_error(m_location + ": " + what); }
    void set_location(std::string location) { m_location = std::move(location); }

    void skip_spaces() noexcept {
        while (m_pos < m_line.size() && is_text_space(m_line[m_pos])) ++m_pos;
    }
    /// True if only spaces or a comment are left.
    [[nodiscard]] bool at_end() noexcept {
        skip_spaces();
        return m_pos == m_line.size() || m_line[m_pos] == text_comment;
    }
    /// True at a space, a comment or the end: where an attribute expression may end.
    [[nodiscard]] bool at_separator() const noexcept {
        return m_pos == m_line.size() || is_text_space(m_line[m_pos]) || m_line[m_pos] == text_comment;
    }
    /// Fails at what is left of the line.
    [[noreturn]] void unexpected() const { fail("unexpected " + found()); }
    /// Fails unless only spaces or a comment are left.
    void expect_end() {
        if (!at_end()) fail("unexpected '" + std::string(m_line.substr(m_pos)) + "' at the end of the line");
    }
    [[nodiscard]] bool peek(char c) const noexcept { return m_pos < m_line.size() && m_line[m_pos] == c; }
    [[nodiscard]] bool peek_digit() const noexcept {
        return m_pos < m_line.size() && m_line[m_pos] >= '0' && m_line[m_pos] <= '9';
    }
    [[nodiscard]] bool accept(char c) noexcept {
        if (!peek(c)) return false;
        ++m_pos;
        return true;
    }
    void expect(char c) {
        if (!accept(c)) fail(std::string("expected '") + c + "', found " + found());
    }
    /// Expects `token` with optional spaces around it ("=", "->", ",").
    void expect_spaced(std::string_view token) {
        skip_spaces();
        if (!m_line.substr(m_pos).starts_with(token)) fail("expected '" + std::string(token) + "', found " + found());
        m_pos += token.size();
        skip_spaces();
    }
    /// Expects ')' after optional spaces.
    void close() {
        skip_spaces();
        expect(')');
    }
    /// Accepts `name(` and the spaces after it.
    [[nodiscard]] bool accept_call(std::string_view name) {
        const std::string_view rest = m_line.substr(m_pos);
        if (!rest.starts_with(name) || rest.substr(name.size()).empty() || rest[name.size()] != '(') return false;
        m_pos += name.size() + 1;
        skip_spaces();
        return true;
    }
    /// Reads `open`, items separated by commas (spaces allowed around them), `close`;
    /// `read_item` reads one item.
    template <class ReadItem>
    void for_each_item(char open, char close, ReadItem read_item) {
        expect(open);
        skip_spaces();
        if (accept(close)) return;
        do {
            skip_spaces();
            read_item();
            skip_spaces();
        } while (accept(','));
        expect(close);
    }
    /// The next run of characters that are not spaces (a keyword), after spaces.
    [[nodiscard]] std::string_view word() {
        skip_spaces();
        return take_while([](char c) { return !is_text_space(c) && c != text_comment; });
    }
    /// A variable, label, symbol, op, attribute or constraint name; `what` says which.
    [[nodiscard]] std::string_view name(std::string_view what) {
        if (m_pos >= m_line.size() || !is_name_start(m_line[m_pos]))
            fail("expected " + std::string(what) + ", found " + found());
        return take_while(is_name_char);
    }
    [[nodiscard]] std::string_view rule_name() {
        const std::string_view n = take_while(is_rule_name_char);
        if (n.empty()) fail("expected a rule name, found " + found());
        return n;
    }
    [[nodiscard]] std::int64_t integer() { return parse_number<std::int64_t>(number_token(false)); }
    [[nodiscard]] double number() { return parse_number<double>(number_token(true)); }
    /// A number in 0 .. 2^32-1 (an output index, an output count).
    [[nodiscard]] std::uint32_t count() {
        const std::int64_t v = integer();
        if (v < 0 || v > std::numeric_limits<std::uint32_t>::max()) fail("bad number " + std::to_string(v));
        return static_cast<std::uint32_t>(v);
    }
    /// A quoted string with the escapes of text_escapes and `\xHH`.
    [[nodiscard]] std::string quoted() {
        expect('"');
        std::string out;
        while (m_pos < m_line.size() && m_line[m_pos] != '"') {
            const char c = m_line[m_pos++];
            out += c == '\\' ? escaped() : c;
        }
        if (!accept('"')) fail("unterminated string");
        return out;
    }

private:
    [[nodiscard]] std::string found() const {
        if (m_pos >= m_line.size() || m_line[m_pos] == text_comment) return "the end of the line";
        return "'" + std::string(m_line.substr(m_pos)) + "'";
    }
    template <class Predicate>
    std::string_view take_while(Predicate keep) {
        const std::size_t start = m_pos;
        while (m_pos < m_line.size() && keep(m_line[m_pos])) ++m_pos;
        return m_line.substr(start, m_pos - start);
    }
    /// A leading '-', then letters, digits and dots; with `exponent_signs` also a sign
    /// right after 'e' ("1e-05"). Letters are taken so that "2x" is a bad number, not 2.
    std::string_view number_token(bool exponent_signs) {
        const std::size_t start = m_pos;
        if (peek('-')) ++m_pos;
        while (m_pos < m_line.size()) {
            const char c = m_line[m_pos];
            const bool sign
                = (c == '+' || c == '-') && m_pos > start && (m_line[m_pos - 1] == 'e' || m_line[m_pos - 1] == 'E');
            if (!is_name_char(c) && c != '.' && !(exponent_signs && sign)) break;
            ++m_pos;
        }
        return m_line.substr(start, m_pos - start);
    }
    template <class Number>
    [[nodiscard]] Number parse_number(std::string_view token) const {
        if (token.empty()) fail("expected a number, found " + found());
        Number value{};
        const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
        if (ec != std::errc{} || end != token.data() + token.size()) fail("bad number '" + std::string(token) + "'");
        return value;
    }
    char escaped() {
        if (m_pos >= m_line.size()) fail("unterminated string");
        const char c = m_line[m_pos++];
        for (const auto& [letter, meaning] : text_escapes)
            if (c == letter) return meaning;
        if (c != 'x') fail(std::string("unknown escape '\\") + c + "'");
        const std::string_view digits = m_line.substr(m_pos, text_hex_escape_digits);
        unsigned value = 0;
        constexpr int hex = 16;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, hex);
        if (ec != std::errc{} || end != digits.data() + text_hex_escape_digits)
            fail("bad escape '\\x" + std::string(digits) + "'");
        m_pos += text_hex_escape_digits;
        return static_cast<char>(value);
    }

    std::string_view m_line;
    std::string m_location;
    std::size_t m_pos = 0;
};

}  // namespace rlflow::rewrite::detail
