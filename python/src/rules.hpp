#pragma once
// rlflow.rules: load, generate and verify substitution rules, as `rlflow rules` does.

#include "common.hpp"

#include "rlflow/command_optimize.hpp"
#include "rlflow/command_rules.hpp"

#include <rlflow/rewrite/rule_file.hpp>
#include <rlflow/rewrite/rule_text.hpp>

namespace rlflow::python {

/// A rule set and what it came from ("default", "builtin", a path, or "generated").
struct PyRules {
    std::shared_ptr<const rewrite::RuleSet> set;
    std::string source;
};

inline py::dict rule_dict(const rewrite::Rule& r) {
    py::dict d;
    d["name"] = r.name;
    d["verification"] = std::string(rewrite::verification_name(r.verification));
    d["variables"] = r.variables;
    d["source_ops"] = r.source.size();
    d["target_ops"] = r.target.size();
    d["text"] = rewrite::to_text(std::span<const rewrite::Rule>(&r, 1));
    return d;
}

/// Rules options of the keyword arguments shared by generate() and verify().
inline cli::RulesOptions rules_options(bool prove, unsigned jobs, unsigned timeout_ms) {
    cli::RulesOptions o;
    o.no_prove = !prove;
    RLFLOW_EXPECTS(jobs > 0, precondition_error, "jobs must be positive");
    o.generator.jobs = jobs;
    o.generator.proof_timeout_ms = timeout_ms;
    return o;
}

inline py::tuple generate_rules(std::size_t max_ops, const std::vector<std::string>& ops, unsigned jobs, std::uint64_t seed,
                                bool prove, unsigned timeout_ms, bool keep_builtin, bool progress) {
    constexpr std::size_t largest_max_ops = 4;  // as --max-ops: beyond 4 the enumeration does not end in hours
    RLFLOW_EXPECTS(max_ops >= 1 && max_ops <= largest_max_ops, precondition_error, "max_ops must be 1 to 4");
    cli::RulesOptions o = rules_options(prove, jobs, timeout_ms);
    o.generator.max_ops = max_ops;
    o.generator.seed = seed;
    o.ops = ops;
    o.keep_builtin = keep_builtin;
    synth::GeneratedRules generated;
    {
        const py::gil_scoped_release unlocked;
        generated = cli::generate_rule_set(o, progress);
    }
    nlohmann::json report = cli::generator_report_json(generated.report, o.generator);
    report["rejected_rules"] = generated.rejected.empty() ? "" : rewrite::to_text(generated.rejected);
    PyRules rules{std::make_shared<const rewrite::RuleSet>(std::move(generated.rules)), "generated"};
    return py::make_tuple(std::move(rules), to_python(report));
}

inline py::dict verify_rules(const py::object& rules, bool prove, unsigned jobs, unsigned timeout_ms) {
    const cli::RulesOptions o = rules_options(prove, jobs, timeout_ms);
    std::vector<rewrite::Rule> list;
    std::string source;
    if (py::isinstance<PyRules>(rules)) {
        const PyRules& given = rules.cast<const PyRules&>();
        list.assign(given.set->begin(), given.set->end());
        source = given.source;
    } else {
        source = py::str(py::module_::import("os").attr("fspath")(rules));
        list = rewrite::load_rules(source);
    }
    synth::GeneratorReport report;
    {
        const py::gil_scoped_release unlocked;
        report = cli::verify_rule_list(list, source, o, false);
    }
    py::dict out;
    out["rules"] = list.size();
    out["proved"] = report.proved;
    out["tested"] = report.tested;
    out["rejected"] = 0;
    return out;
}

inline void bind_rules(py::module_& m) {
    py::module_ rules = m.def_submodule("rules", "Substitution rules: load, generate and verify them.");
    py::class_<PyRules>(rules, "RuleSet", "Verified substitution rules, in a fixed order (action ids of rlflow.Env).")
        .def("__len__", [](const PyRules& r) { return r.set->size(); })
        .def("__getitem__", [](const PyRules& r, std::size_t i) {
            if (i >= r.set->size()) throw py::index_error("rule " + std::to_string(i) + " of " + std::to_string(r.set->size()));
            return rule_dict((*r.set)[i]);
        })
        .def_property_readonly("names", [](const PyRules& r) {
            std::vector<std::string> names;
            for (const rewrite::Rule& rule : *r.set) names.push_back(rule.name);
            return names;
        })
        .def_property_readonly("source", [](const PyRules& r) { return r.source; })
        .def("save", [](const PyRules& r, const py::object& path) {
                 rewrite::save_rules(std::string(py::str(py::module_::import("os").attr("fspath")(path))), r.set->rules());
             },
             py::arg("path"), "Writes the rules (text for .rules/.txt, binary otherwise), through a rename.")
        .def("__repr__", [](const PyRules& r) {
            return "<rlflow.rules.RuleSet " + r.source + ": " + std::to_string(r.set->size()) + " rules>";
        });
    rules.def("load", [](const py::object& which) {
                  const std::string name = py::str(py::module_::import("os").attr("fspath")(which));
                  return PyRules{cli::load_rule_set(name), name};
              },
              py::arg("which") = "default",
              "'default' (the built-in rules and the generated library), 'builtin', or a rules file (text or binary).");
    const synth::GeneratorOptions d;
    rules.def("generate", &generate_rules, py::kw_only(), py::arg("max_ops") = d.max_ops,
              py::arg("ops") = std::vector<std::string>(), py::arg("jobs") = d.jobs, py::arg("seed") = d.seed,
              py::arg("prove") = d.prove, py::arg("timeout_ms") = d.proof_timeout_ms, py::arg("keep_builtin") = false,
              py::arg("progress") = false,
              "Enumerates, prunes and verifies rules of up to `max_ops` ops a side (as `rlflow rules generate`); "
              "returns (RuleSet, report dict).");
    rules.def("verify", &verify_rules, py::arg("rules"), py::kw_only(), py::arg("prove") = d.prove, py::arg("jobs") = d.jobs,
              py::arg("timeout_ms") = d.proof_timeout_ms,
              "Checks every rule again (numerically, and with Z3 when `prove`); raises rlflow.RuleError naming the "
              "first that fails. Returns the counts.");
}

}  // namespace rlflow::python
