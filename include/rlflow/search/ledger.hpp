#pragma once
/// \file
/// The rule ledger: which rule families paid at a target when each was applied alone to
/// real models and the whole model was timed against its input there (`rlflow rules
/// measure`, docs/rules.md). A search's price model sees one op at a time; the ledger saw
/// the runtime. It is used three ways:
///  - a family that paid on no model and was slower on some is left out of the target's
///    default rules (`drop_unpaying`; still available by naming the rules);
///  - candidates are timed in the order of what the ledger expects of them
///    (`expected_ratio`), so that the guard's few slots go to the likeliest gains;
///  - it ships with rlflow for the ort-cpu target at level all (`shipped_ledger_path`).
///
/// A family is a built-in rule by its name, or the generated rules that rewrite the same
/// ops into the same ops ("Concat+Relu+Relu -> Concat+Relu"): `rule_family`.

#include <rlflow/core/error.hpp>
#include <rlflow/core/op_traits.hpp>
#include <rlflow/rewrite/builtin_rules.hpp>
#include <rlflow/rewrite/rule_set.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#ifndef RLFLOW_DATA_DIR
#define RLFLOW_DATA_DIR ""
#endif

namespace rlflow::search {

/// One family's record over the ledger's models.
struct LedgerFamily {
    std::string name;
    /// The model's time with the family over the input's (below 1 is faster): the median
    /// over the models it matched in, and the best.
    double median_ratio = 1;
    double best_ratio = 1;
    std::vector<std::string> models, pays_on, slower_on;

    /// Measured, paid on none of its models and slower on one at least.
    [[nodiscard]] bool never_pays() const noexcept { return pays_on.empty() && !slower_on.empty(); }
};

struct Ledger {
    /// Where it was measured: the target's name ("ort-cpu") and, for ort-cpu, ONNX
    /// Runtime's optimisation level.
    std::string target;
    std::string level;
    /// The file it was read from, for reports.
    std::string origin;
    std::vector<LedgerFamily> families;

    /// The record of `family`, or nullptr when the ledger did not measure it.
    [[nodiscard]] const LedgerFamily* find(std::string_view family) const noexcept {
        for (const LedgerFamily& f : families)
            if (f.name == family) return &f;
        return nullptr;
    }
};

/// The names of the built-in rules, each its own family.
[[nodiscard]] inline std::set<std::string> builtin_rule_names() {
    std::set<std::string> names;
    for (const rewrite::Rule& r : rewrite::builtin_rules()) names.insert(r.name);
    return names;
}

/// The family of `rule`: a built-in rule is its own family; a generated rule belongs to
/// "SOURCE OPS -> TARGET OPS" (each side's ops sorted, Constants not counted).
[[nodiscard]] inline std::string rule_family(const rewrite::Rule& rule, const std::set<std::string>& builtin) {
    if (builtin.contains(rule.name)) return rule.name;
    const auto ops = [](const std::vector<rewrite::PatternNode>& side) {
        std::vector<std::string> names;
        for (const rewrite::PatternNode& n : side)
            if (n.op != OpKind::Constant) names.emplace_back(op_name(n.op));
        std::sort(names.begin(), names.end());
        std::string joined;
        for (const std::string& name : names) joined += (joined.empty() ? "" : "+") + name;
        return joined;
    };
    return ops(rule.source) + " -> " + ops(rule.target);
}

/// The ledger in the JSON `rlflow rules measure` writes (its "target", "target_level" and
/// "families"; the per-model results are not needed here). Throws precondition_error
/// naming `origin` when it is not such a ledger.
[[nodiscard]] inline Ledger parse_ledger(const std::string& text, const std::string& origin) {
    const auto fail = [&](const std::string& what) { throw precondition_error(origin + ": not a usable rule ledger: " + what); };
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) fail("it is not JSON (damaged or truncated)");
    Ledger ledger;
    ledger.origin = origin;
    try {
        ledger.target = j.at("target").get<std::string>();
        ledger.level = j.value("target_level", std::string());
        for (const nlohmann::json& f : j.at("families")) {
            LedgerFamily family{f.at("family").get<std::string>(), f.at("median_ratio").get<double>(), f.at("best_ratio").get<double>(),
                                f.at("models").get<std::vector<std::string>>(), f.at("pays_on").get<std::vector<std::string>>(),
                                f.at("slower_on").get<std::vector<std::string>>()};
            if (!(family.median_ratio > 0) || !std::isfinite(family.median_ratio) || !(family.best_ratio > 0)
                || !std::isfinite(family.best_ratio))
                fail("family '" + family.name + "' has a ratio that is not a finite, positive number");
            ledger.families.push_back(std::move(family));
        }
    } catch (const nlohmann::json::exception& e) {
        fail(std::string("a field is missing or of the wrong type (") + e.what() + ")");
    }
    return ledger;
}

/// The ledger in `path`; throws io_error when it cannot be read, precondition_error naming
/// the file when it is damaged.
[[nodiscard]] inline Ledger load_ledger(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    RLFLOW_EXPECTS(in.good(), io_error, path.string() + ": cannot read the rule ledger");
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    return parse_ledger(text, path.string());
}

/// The ledger that ships with rlflow for the ort-cpu target at level all (docs/rules.md):
/// in rlflow's data directory, beside the generated rule library.
[[nodiscard]] inline std::filesystem::path shipped_ledger_path() {
    return std::filesystem::path(RLFLOW_DATA_DIR) / "ledger_ort_cpu.json";
}

/// `rules` without the families the ledger says never pay; the families left out, by name.
struct PrunedRules {
    rewrite::RuleSet rules;
    std::vector<std::string> dropped_families;
    std::size_t dropped_rules = 0;
};

[[nodiscard]] inline PrunedRules drop_unpaying(const rewrite::RuleSet& rules, const Ledger& ledger) {
    const std::set<std::string> builtin = builtin_rule_names();
    PrunedRules out;
    std::set<std::string> dropped;
    for (const rewrite::Rule& rule : rules) {
        const std::string family = rule_family(rule, builtin);
        const LedgerFamily* record = ledger.find(family);
        if (record != nullptr && record->never_pays()) {
            ++out.dropped_rules;
            if (dropped.insert(family).second) out.dropped_families.push_back(family);
            continue;
        }
        (void)out.rules.add(rule);
    }
    return out;
}

/// What the ledger expects of a graph the rules in `applied` (rule name -> times applied)
/// made from the input: the product of the median ratios of the families applied, 1 for a
/// family it did not measure or a rule `rules` does not hold. Below 1: expected faster.
[[nodiscard]] inline double expected_ratio(const std::map<std::string, std::size_t>& applied, const rewrite::RuleSet& rules,
                                           const Ledger& ledger) {
    const std::set<std::string> builtin = builtin_rule_names();
    std::set<std::string> families;
    for (const auto& [name, count] : applied) {
        const auto id = rules.find(name);
        if (count > 0 && id) families.insert(rule_family(rules[*id], builtin));
    }
    double ratio = 1;
    for (const std::string& family : families)
        if (const LedgerFamily* record = ledger.find(family)) ratio *= record->median_ratio;
    return ratio;
}

}  // namespace rlflow::search
