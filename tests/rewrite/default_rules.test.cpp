// The rules every search uses by default: built-in plus the shipped generated library.
#include "support.hpp"

#include <rlflow/rewrite/default_rules.hpp>

#include <cstdlib>
#include <set>

using namespace rewrite_test;

TEST_CASE("the default rules are the built-in rules followed by the shipped, verified generated library") {
    const rewrite::RuleSet rules = rewrite::default_rules();
    const rewrite::RuleSet builtin = rewrite::builtin_rules();
    REQUIRE(rules.size() > builtin.size() + 500);
    for (std::size_t i = 0; i < builtin.size(); ++i) CHECK(rules[i].name == builtin[i].name);
    for (std::size_t i = builtin.size(); i < rules.size(); ++i) {
        CAPTURE(rules[i].name);
        CHECK(rules[i].id == i);
        CHECK(rules[i].name.starts_with("gen_"));
        CHECK((rules[i].verification == rewrite::Verification::proved
               || rules[i].verification == rewrite::Verification::tested));
    }
}

TEST_CASE("RLFLOW_RULES points the default rules at another library, and a missing one is an io_error") {
    const char* name = rewrite::rules_environment_variable;
    ::setenv(name, "/nonexistent/rules.pb", 1);
    CHECK_THROWS_WITH_AS((void)rewrite::default_rules(), doctest::Contains("/nonexistent/rules.pb"), io_error);
    ::unsetenv(name);
    CHECK(rewrite::generated_library_path().filename() == rewrite::generated_library_name);
}
