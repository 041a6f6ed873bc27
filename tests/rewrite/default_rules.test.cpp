// The rules every search uses by default: built-in plus the shipped generated library.
#include "support.hpp"

#include <rlflow/rewrite/default_rules.hpp>

#include <algorithm>
#include <cstdlib>
#include <set>

using namespace rewrite_test;

TEST_CASE("the default rules are the built-in rules followed by the shipped library's proved rules") {
    const rewrite::RuleSet rules = rewrite::default_rules();
    const rewrite::RuleSet builtin = rewrite::builtin_rules();
    const std::vector<rewrite::Rule> library = rewrite::load_rules(rewrite::generated_library_path());
    REQUIRE(library.size() >= 500);
    const auto proved = std::count_if(library.begin(), library.end(),
                                      [](const rewrite::Rule& r) { return r.verification == rewrite::Verification::proved; });
    CHECK(rules.size() == builtin.size() + static_cast<std::size_t>(proved));
    for (std::size_t i = 0; i < builtin.size(); ++i) CHECK(rules[i].name == builtin[i].name);
    for (std::size_t i = builtin.size(); i < rules.size(); ++i) {
        CAPTURE(rules[i].name);
        CHECK(rules[i].id == i);
        CHECK(rules[i].name.starts_with("gen_"));
        CHECK(rules[i].verification == rewrite::Verification::proved);
    }
}

TEST_CASE("a rule marked rejected is refused by a rule set, naming it") {
    rewrite::Rule rule = rewrite::builtin_rules().at("fuse_conv_relu");
    rule.verification = rewrite::Verification::rejected;
    rewrite::RuleSet set;
    CHECK_THROWS_WITH_AS(set.add(rule), doctest::Contains("'fuse_conv_relu' failed verification"), rule_error);
    CHECK(set.empty());
}

TEST_CASE("RLFLOW_RULES points the default rules at another library, and a missing one is an io_error") {
    const char* name = rewrite::rules_environment_variable;
    ::setenv(name, "/nonexistent/rules.pb", 1);
    CHECK_THROWS_WITH_AS((void)rewrite::default_rules(), doctest::Contains("/nonexistent/rules.pb"), io_error);
    ::unsetenv(name);
    CHECK(rewrite::generated_library_path().filename() == rewrite::generated_library_name);
}
