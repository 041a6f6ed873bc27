#pragma once
/// \file
/// What loading rules in either form shares: reading the file, naming where an error is,
/// and the checks every loaded rule passes: validate_rule, plus what only the whole rule
/// set can answer (unique names) and what the text form needs to read a rule back exactly
/// (canonical expressions). Writers run the checks too, so that whatever is saved loads
/// again.

#include <rlflow/core/error.hpp>
#include <rlflow/rewrite/rule.hpp>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>

namespace rlflow::rewrite::detail {

/// The bytes of the file at `path`; throws io_error naming it if it cannot be read.
[[nodiscard]] inline std::string read_rule_file(const std::filesystem::path& path) {
    std::error_code ec;
    const std::filesystem::file_status status = std::filesystem::status(path, ec);
    RLFLOW_EXPECTS(status.type() != std::filesystem::file_type::not_found, io_error, path.string() + ": no such file");
    RLFLOW_EXPECTS(!ec, io_error, path.string() + ": cannot access the file (" + ec.message() + ")");
    RLFLOW_EXPECTS(!std::filesystem::is_directory(status), io_error,
                   path.string() + ": is a directory, not a rules file");
    std::ifstream in(path, std::ios::binary);
    RLFLOW_EXPECTS(in.is_open(), io_error, path.string() + ": cannot open the file");
    std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    RLFLOW_EXPECTS(!in.bad(), io_error, path.string() + ": cannot read the file");
    return bytes;
}

/// The constraint kind called `name` in constraint_specs, if any.
[[nodiscard]] inline std::optional<Constraint::Kind> constraint_kind_from_name(std::string_view name) {
    for (const ConstraintSpec& spec : constraint_specs)
        if (spec.name == name) return spec.kind;
    return std::nullopt;
}

/// "rules.pb: rule #3 'fuse_conv_relu'" (`line` 0: no line; empty `source`: no file):
/// where an error about rule `index` (its id, from 0) of a rule set is.
[[nodiscard]] inline std::string rule_location(std::string_view source, std::size_t line, std::size_t index,
                                               std::string_view name) {
    std::string out(source);
    if (line > 0) out += ":" + std::to_string(line);
    if (!out.empty()) out += ": ";
    out += "rule #" + std::to_string(index);
    if (!name.empty()) out += " '" + std::string(name) + "'";
    return out;
}

/// Why `e` has no text form that reads back as itself, or an empty string: a literal
/// term with a divisor, or an ints expression without terms (`[]` reads as a literal).
[[nodiscard]] inline std::string non_canonical_form(const AttrExpr& e) {
    for (const IntTerm& t : e.terms)
        if (t.kind == IntTerm::Kind::literal && t.divisor != 1) return "a literal term cannot have a divisor";
    if (e.kind == AttrExpr::Kind::ints && e.terms.empty())
        return "an ints expression needs at least one term (write an empty literal instead)";
    return {};
}

/// Checks the rules of one set in order: each must pass validate_rule, have attribute
/// expressions in canonical form (non_canonical_form) and a name no earlier rule has.
/// Every failure throws rule_error prefixed with the location the caller gives (see
/// rule_location).
class RuleSetChecker {
public:
    void check(const Rule& rule, const std::string& location) {
        try {
            validate_rule(rule);
        } catch (const rule_error& e) {  // not swallowed: rethrown with the file and index
            throw rule_error(location + ": " + without_prefix(e.what(), rule.name));
        }
        check_canonical(rule.source, "source", location);
        check_canonical(rule.target, "target", location);
        const auto [earlier, inserted] = m_indices.emplace(rule.name, m_count);
        RLFLOW_EXPECTS(inserted, rule_error,
                       location + ": the name is already used by rule #" + std::to_string(earlier->second));
        ++m_count;
    }

private:
    /// validate_rule's message without "[rlflow.rule_error] rule 'name': ", which the
    /// location replaces.
    [[nodiscard]] static std::string without_prefix(std::string_view message, const std::string& name) {
        for (const std::string& prefix : {std::string(rule_error("").what()), "rule '" + name + "': "})
            if (message.starts_with(prefix)) message.remove_prefix(prefix.size());
        return std::string(message);
    }
    static void check_canonical(const std::vector<PatternNode>& side, std::string_view side_name,
                                const std::string& location) {
        for (std::size_t i = 0; i < side.size(); ++i)
            for (const PatternAttribute& attribute : side[i].attributes) {
                const std::string problem = non_canonical_form(attribute.value);
                RLFLOW_EXPECTS(problem.empty(), rule_error,
                               location + ": " + std::string(side_name) + " node " + std::to_string(i) + " '"
                                   + side[i].label + "' attribute '" + attribute.name + "': " + problem);
            }
    }

    std::unordered_map<std::string, std::size_t> m_indices;
    std::size_t m_count = 0;
};

}  // namespace rlflow::rewrite::detail
