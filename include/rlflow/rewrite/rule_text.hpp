#pragma once
/// \file
/// The text form of substitution rules: readable, diffable, written and read exactly
/// (parse_rules_text(to_text(r)) == r, and to_text(parse_rules_text(t)) == t for text
/// that to_text wrote).
///
/// ```
/// # comments start with '#'; blank lines are ignored
/// rlflow-rules 1
///
/// rule fuse_conv_relu
///   var x w
///   sym k s p d g
///   src conv = Conv2D(x, w) kernel_shape=$k strides=$s pads=$p dilations=$d group=$g activation=0
///   src r = Relu(conv)
///   dst f = Conv2D(x, w) kernel_shape=$k strides=$s pads=$p dilations=$d group=$g activation=1
///   out r -> f
/// end
/// ```
///
/// - Header: `rlflow-rules 1`. Then `rule <name>` ... `end` blocks. A rule name holds
///   letters, digits, '_', '.' and '-'; other names are [A-Za-z_][A-Za-z0-9_]*.
/// - `var` lines declare the variables in order; `sym` lines the symbols (`$` optional).
///   Names are separated by spaces or commas. Symbols used but not declared are appended
///   in order of first use. A line may use names declared below it.
/// - `src`/`dst <label> = <Op>(<ref>, ...) [name=<expr> ...] [outputs=<n>]`: a source or
///   target node. Op is rlflow's op name; `outputs=n` is written when n != 1 (Split).
///   A ref is `label` (output 0), `label:k` or a variable; in a node line it names a node
///   of the same side. Labels are unique within a side and differ from variables.
/// - `out <src ref> -> <dst ref or variable>`, `require <constraint>(<tensors>, <$symbols>,
///   <value>)` (arity from constraint_specs), `order <src label> < <src label>`.
/// - Expressions are typed by the op's attribute schema (Constant's "value" is a float):
///   a literal (`0`, `-1`, `1e-05`, `"constant"`, `[1, 1]`); `$k` (a symbol);
///   `compose($p, $q)`; an integer term (`$g/2`, `dim(w, 0)`, `dim(x, $a)`, `rank(x)-1`);
///   a list with any term that is not a bare literal (`[dim(x, 0), -1]`: ints). A term is
///   `base ['/' INT] [('+'|'-') INT]`, base `INT | $sym | dim(<ref>, INT | $sym) |
///   rank(<ref>)`; refs in terms and constraints name source nodes or variables. An
///   integer term that would look like a bare literal or symbol is written with `+0`.
///
/// Errors are rule_error naming the source, the line, and the rule's index and name:
/// `rules.txt:17: rule #3 'fuse_conv_relu': unknown op 'Conv3D'`.

#include <rlflow/rewrite/detail/rule_load.hpp>
#include <rlflow/rewrite/detail/rule_text_cursor.hpp>
#include <rlflow/rewrite/detail/rule_text_parser.hpp>
#include <rlflow/rewrite/detail/rule_text_writer.hpp>
#include <rlflow/rewrite/rule.hpp>

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow::rewrite {

/// The text form of `rules`. Throws rule_error (naming the rule's index and name) if a
/// rule would not load again: it fails validate_rule or the load checks, or has a name
/// the text form cannot hold.
[[nodiscard]] inline std::string to_text(std::span<const Rule> rules) {
    std::string out
        = std::string(detail::text_header_keyword) + " " + std::to_string(detail::text_format_version) + "\n";
    detail::RuleSetChecker checker;
    for (std::size_t i = 0; i < rules.size(); ++i) {
        const std::string location = detail::rule_location({}, 0, i, rules[i].name);
        checker.check(rules[i], location);
        out += "\n";
        detail::RuleTextWriter(rules[i], location).write(out);
    }
    return out;
}

/// Reads rules in the text form; each rule's id is its position. Every rule is checked
/// as it is read (validate_rule, known ops, attributes and constraints, literal types,
/// unique names); any failure throws rule_error naming `source_name`, the line and rule.
[[nodiscard]] inline std::vector<Rule> parse_rules_text(std::string_view text,
                                                        std::string_view source_name = "<text>") {
    return detail::RuleTextParser(text, source_name).parse();
}

}  // namespace rlflow::rewrite
