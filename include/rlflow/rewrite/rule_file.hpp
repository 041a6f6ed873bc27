#pragma once
/// \file
/// Saving and loading rule sets. The binary form is protobuf's wire format with the
/// schema in proto/rules.proto (`protoc --decode=rlflow.rules.RuleFile rules.proto`
/// shows a file); the text form is described in rule_text.hpp. Loading checks every rule
/// (validate_rule, known ops and constraints, literal types, unique names) and throws
/// rule_error naming the file, the rule's index and its name:
/// `rules.pb: rule #3 'fuse_conv_relu': source node 0 'conv': unknown op 'Conv3D'`.
/// A rule's id is its position in the file.

#include <rlflow/core/atomic_file.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/rewrite/detail/rule_load.hpp>
#include <rlflow/rewrite/detail/rule_text_parser.hpp>
#include <rlflow/rewrite/detail/rule_wire.hpp>
#include <rlflow/rewrite/rule.hpp>
#include <rlflow/rewrite/rule_text.hpp>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow::rewrite {

/// The binary form of `rules`. Throws rule_error (naming the rule's index and name) if a
/// rule would not load again.
[[nodiscard]] inline std::string serialize_rules(std::span<const Rule> rules) {
    detail::RuleSetChecker checker;
    for (std::size_t i = 0; i < rules.size(); ++i)
        checker.check(rules[i], detail::rule_location({}, 0, i, rules[i].name));
    return detail::encode_rule_file(rules);
}

/// Reads the binary form. Unknown fields are skipped; a file that is not a rules file,
/// has another version, is cut short or corrupt, or holds an invalid rule throws
/// rule_error naming `source_name`.
[[nodiscard]] inline std::vector<Rule> deserialize_rules(std::string_view bytes, std::string_view source_name) {
    return detail::decode_rule_file(bytes, source_name);
}

/// How save_rules writes: `automatic` picks text for the extensions ".txt" and ".rules"
/// and binary for any other.
enum class RuleFormat : std::uint8_t { automatic, binary, text };

/// Writes `rules` to `path` atomically (a temporary file renamed into place). Throws
/// rule_error for a rule that would not load again, io_error if the file cannot be written.
inline void save_rules(const std::filesystem::path& path, std::span<const Rule> rules,
                       RuleFormat format = RuleFormat::automatic) {
    if (format == RuleFormat::automatic) {
        const std::filesystem::path extension = path.extension();
        format = extension == ".txt" || extension == ".rules" ? RuleFormat::text : RuleFormat::binary;
    }
    write_file_atomically(path, format == RuleFormat::text ? to_text(rules) : serialize_rules(rules));
}

/// Reads a rules file in either form: text if its first line that is neither blank nor
/// a comment starts with `rlflow-rules`, binary otherwise. Throws io_error naming the
/// path if it cannot be read, rule_error if it is not a valid rules file.
[[nodiscard]] inline std::vector<Rule> load_rules(const std::filesystem::path& path) {
    const std::string bytes = detail::read_rule_file(path);
    if (detail::looks_like_rule_text(bytes)) return parse_rules_text(bytes, path.string());
    return deserialize_rules(bytes, path.string());
}

}  // namespace rlflow::rewrite
