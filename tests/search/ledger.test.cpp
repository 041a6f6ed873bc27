// The rule ledger (search/ledger.hpp): families, reading a ledger and refusing a damaged
// one, leaving out the families that never paid, what it expects of a candidate, and the
// shipped ledger agreeing with the page rendered from it (docs/rules.md).
#include <rlflow/rewrite.hpp>
#include <rlflow/search/ledger.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

using namespace rlflow;

namespace {

/// A generated rule: Relu(Concat(x, y)) written as Concat(Relu(x), Relu(y)), backwards.
constexpr std::string_view concat_relu_rule = R"(rlflow-rules 1

rule gen_concat_relu
  var x y
  src a = Relu(x)
  src b = Relu(y)
  src c = Concat(a, b) axis=1
  dst d = Concat(x, y) axis=1
  dst e = Relu(d)
  out c -> e
  status proved
end
)";

/// A ledger in the form `rlflow rules measure` writes, reduced to what is read.
std::string ledger_text(const std::string& families) {
    return R"({"target": "ort-cpu", "target_level": "all", "models": [], "families": [)" + families + "]}";
}

const std::string pays = R"({"family": "merge_group_conv_bias", "median_ratio": 0.98, "best_ratio": 0.86,
    "models": ["a", "b", "c"], "pays_on": ["a"], "slower_on": ["b"]})";
const std::string loses = R"({"family": "merge_conv_pair_bias", "median_ratio": 1.05, "best_ratio": 1.02,
    "models": ["a", "b"], "pays_on": [], "slower_on": ["b"]})";
const std::string generated = R"({"family": "Concat+Relu+Relu -> Concat+Relu", "median_ratio": 1.02, "best_ratio": 0.98,
    "models": ["a", "b"], "pays_on": [], "slower_on": ["a"]})";
const std::string even = R"({"family": "eliminate_identity", "median_ratio": 0.99, "best_ratio": 0.99,
    "models": ["a"], "pays_on": [], "slower_on": []})";

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

TEST_CASE("a built-in rule is its own family; generated rules are grouped by the ops they rewrite") {
    const std::set<std::string> builtin = search::builtin_rule_names();
    const rewrite::RuleSet builtins = rewrite::builtin_rules();
    CHECK(builtin.size() == builtins.size());
    CHECK(search::rule_family(builtins.at("merge_group_conv_bias"), builtin) == "merge_group_conv_bias");
    const std::vector<rewrite::Rule> parsed = rewrite::parse_rules_text(concat_relu_rule, "gen.rules");
    REQUIRE(parsed.size() == 1);
    CHECK(search::rule_family(parsed[0], builtin) == "Concat+Relu+Relu -> Concat+Relu");
}

TEST_CASE("a ledger is read, and the families that never paid are known") {
    const search::Ledger ledger = search::parse_ledger(ledger_text(pays + "," + loses + "," + even), "l.json");
    CHECK(ledger.target == "ort-cpu");
    CHECK(ledger.level == "all");
    CHECK(ledger.origin == "l.json");
    REQUIRE(ledger.families.size() == 3);
    REQUIRE(ledger.find("merge_conv_pair_bias") != nullptr);
    CHECK(ledger.find("merge_conv_pair_bias")->never_pays());
    // Paid somewhere, though slower elsewhere: kept.
    CHECK_FALSE(ledger.find("merge_group_conv_bias")->never_pays());
    // Slower nowhere: not known to lose.
    CHECK_FALSE(ledger.find("eliminate_identity")->never_pays());
    CHECK(ledger.find("fuse_conv_relu_bias") == nullptr);
}

TEST_CASE("a damaged ledger is refused with the file's name and what is wrong") {
    const auto refused = [](const std::string& text, const std::string& why) {
        const std::string message = "bad.json: not a usable rule ledger: " + why;
        CHECK_THROWS_WITH_AS((void)search::parse_ledger(text, "bad.json"), doctest::Contains(message.c_str()), precondition_error);
    };
    refused(ledger_text(pays).substr(0, 60), "it is not JSON");
    refused("[1, 2]", "it is not JSON");
    refused(R"({"target": "ort-cpu", "families": [{"family": "x"}]})", "a field is missing or of the wrong type");
    refused(R"({"families": []})", "a field is missing or of the wrong type");
    refused(ledger_text(R"({"family": "x", "median_ratio": -1, "best_ratio": 0.9, "models": [], "pays_on": [], "slower_on": []})"),
            "family 'x' has a ratio that is not a finite, positive number");
    refused(ledger_text(R"({"family": "x", "median_ratio": "0.9", "best_ratio": 0.9, "models": [], "pays_on": [], "slower_on": []})"),
            "a field is missing or of the wrong type");
    CHECK_THROWS_WITH_AS((void)search::load_ledger("/nonexistent/ledger.json"), doctest::Contains("/nonexistent/ledger.json: cannot read"),
                         io_error);
}

TEST_CASE("the families that never paid are left out of the rules, and only they") {
    rewrite::RuleSet rules = rewrite::builtin_rules();
    for (rewrite::Rule& r : rewrite::parse_rules_text(concat_relu_rule, "gen.rules")) (void)rules.add(std::move(r));
    const search::Ledger ledger = search::parse_ledger(ledger_text(pays + "," + loses + "," + generated + "," + even), "l.json");
    const search::PrunedRules pruned = search::drop_unpaying(rules, ledger);
    CHECK(pruned.dropped_families == std::vector<std::string>{"merge_conv_pair_bias", "Concat+Relu+Relu -> Concat+Relu"});
    CHECK(pruned.dropped_rules == 2);
    CHECK(pruned.rules.size() == rules.size() - 2);
    CHECK_FALSE(pruned.rules.find("merge_conv_pair_bias"));
    CHECK_FALSE(pruned.rules.find("gen_concat_relu"));
    CHECK(pruned.rules.find("merge_group_conv_bias"));
    CHECK(pruned.rules.find("eliminate_identity"));
    // The kept rules are numbered afresh, in their order.
    for (std::size_t i = 0; i < pruned.rules.size(); ++i) CHECK(pruned.rules[i].id == i);
    // A ledger that measured nothing leaves every rule.
    CHECK(search::drop_unpaying(rules, search::parse_ledger(ledger_text(""), "empty.json")).rules.size() == rules.size());
}

TEST_CASE("what the ledger expects of a candidate is the product of its families' median ratios") {
    const rewrite::RuleSet rules = rewrite::builtin_rules();
    const search::Ledger ledger = search::parse_ledger(ledger_text(pays + "," + loses), "l.json");
    CHECK(search::expected_ratio({}, rules, ledger) == 1.0);
    // How often a family was applied does not count: its ratio was measured applied everywhere.
    CHECK(search::expected_ratio({{"merge_group_conv_bias", 7}}, rules, ledger) == doctest::Approx(0.98));
    CHECK(search::expected_ratio({{"merge_group_conv_bias", 1}, {"merge_conv_pair_bias", 2}}, rules, ledger)
          == doctest::Approx(0.98 * 1.05));
    // Not measured, not applied, or not a rule of the set: 1.
    CHECK(search::expected_ratio({{"fuse_conv_relu_bias", 3}, {"merge_conv_pair_bias", 0}, {"no_such_rule", 1}}, rules, ledger) == 1.0);
}

TEST_CASE("the shipped ledger is for ort-cpu at level all and agrees with docs/rules.md") {
    const std::filesystem::path shipped = search::shipped_ledger_path();
    REQUIRE(std::filesystem::exists(shipped));
    const search::Ledger ledger = search::load_ledger(shipped);
    CHECK(ledger.target == "ort-cpu");
    CHECK(ledger.level == "all");
    REQUIRE_FALSE(ledger.families.empty());
    // Each row of the page's family table: `name` | models | median | best | pays on | slower on.
    const std::string page = read_text(std::filesystem::path(RLFLOW_SOURCE_DIR) / "docs" / "rules.md");
    const std::regex row(R"(\| `([^`]+)` \| (\d+) \| ([0-9.]+) \| ([0-9.]+) \|)");
    std::size_t rows = 0;
    for (auto it = std::sregex_iterator(page.begin(), page.end(), row); it != std::sregex_iterator(); ++it, ++rows) {
        const std::string name = (*it)[1];
        CAPTURE(name);
        const search::LedgerFamily* family = ledger.find(name);
        REQUIRE(family != nullptr);
        CHECK(family->models.size() == std::stoul((*it)[2]));
        CHECK(std::abs(family->median_ratio - std::stod((*it)[3])) < 5e-4);
        CHECK(std::abs(family->best_ratio - std::stod((*it)[4])) < 5e-4);
    }
    CHECK(rows == ledger.families.size());
    // The families it leaves out of the default rules are the page's list of them.
    const std::string heading = "## Left out of the default rules at this target";
    const std::size_t section = page.find(heading);
    REQUIRE(section != std::string::npos);
    const std::string listed = page.substr(section, page.find("\n## ", section + heading.size()) - section);
    for (const search::LedgerFamily& f : ledger.families) {
        CAPTURE(f.name);
        CHECK((listed.find("`" + f.name + "`") != std::string::npos) == f.never_pays());
    }
}
