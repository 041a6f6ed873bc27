#pragma once
/// \file
/// The rules every search and agent uses unless told otherwise: the built-in rules
/// followed by the generated library that ships with rlflow (`rlflow rules generate`,
/// max-ops 3, regenerated with tools/regenerate_rules.sh).

#include <rlflow/core/error.hpp>
#include <rlflow/rewrite/builtin_rules.hpp>
#include <rlflow/rewrite/rule_file.hpp>
#include <rlflow/rewrite/rule_set.hpp>

#include <cstdlib>
#include <filesystem>
#include <vector>

#ifndef RLFLOW_DATA_DIR
#define RLFLOW_DATA_DIR ""
#endif

namespace rlflow::rewrite {

/// The environment variable that points at another generated library file.
inline constexpr const char* rules_environment_variable = "RLFLOW_RULES";
/// The generated library's file name in rlflow's data directory.
inline constexpr const char* generated_library_name = "generated_rules.pb";

/// The generated library: $RLFLOW_RULES if set, else the file in rlflow's data directory
/// (the source tree's share/rlflow in a build tree, <prefix>/share/rlflow once installed).
[[nodiscard]] inline std::filesystem::path generated_library_path() {
    if (const char* path = std::getenv(rules_environment_variable); path != nullptr && *path != '\0') return path;
    return std::filesystem::path(RLFLOW_DATA_DIR) / generated_library_name;
}

/// The built-in rules, then the generated library's *proved* rules (ids are positions).
/// Rules the library marks only `tested` are left out: a numeric check at a few shapes is
/// evidence, not a guarantee for every shape a model holds (they stay available through
/// `load_rules` on the library file). Throws io_error if the library is missing and
/// rule_error if it is damaged or repeats a name, naming the file.
[[nodiscard]] inline RuleSet default_rules() {
    RuleSet rules = builtin_rules();
    const std::filesystem::path path = generated_library_path();
    RLFLOW_EXPECTS(std::filesystem::exists(path), io_error,
                   path.string() + ": the generated rule library is missing (set " + rules_environment_variable
                       + " to a rules file, or use the built-in rules alone)");
    for (Rule& rule : load_rules(path))
        if (rule.verification == Verification::proved) rules.add(std::move(rule));
    return rules;
}

}  // namespace rlflow::rewrite
