#pragma once
// rlflow.optimize: the library's front door (rlflow/optimize.hpp), as `rlflow optimize`
// calls it, on a Graph, with the GIL released; Ctrl-C stops the search with the best graph
// so far. The keyword arguments are read into the same OptimizeRequest as the flags.

#include "common.hpp"
#include "graph.hpp"
#include "rules.hpp"

#include "rlflow/command_optimize.hpp"

#include <algorithm>
#include <iterator>

namespace rlflow::python {

/// The keyword arguments of optimize() that are not OptimizeOptions fields of the same
/// type.
struct OptimizeArguments {
    py::object model;
    py::object rules;
    std::optional<std::string> agent;
};

/// OptimizeOptions from the arguments, each checked as the command line checks its flag.
inline cli::OptimizeOptions optimize_options(const OptimizeArguments& a, cli::OptimizeOptions o) {
    expect_listed("search", o.search, search_kind_names.names());
    std::set<std::string> targets{"auto"};
    for (const cost::TargetKindName& t : cost::target_kind_names) targets.emplace(t.name);
    expect_one_of("target", o.where.target, targets);
    std::set<std::string> costs{"auto", "table:FILE"};
    for (const Named<opt::CostKind>& c : opt::cost_kind_names.entries)
        if (c.value != opt::CostKind::table) costs.emplace(c.name);
    if (!o.where.cost.starts_with("table:")) expect_one_of("cost", o.where.cost, costs);
    expect_listed("guard", o.guard, opt::guard_mode_names.names());
    if (!o.where.ort_level.empty()) expect_listed("ort_level", o.where.ort_level, opt::ort_level_names);
    RLFLOW_EXPECTS(o.where.ort_threads >= 0, precondition_error, "ort_threads must be 0 (the target's) or positive");
    std::set<std::string> devices{"auto"};
    for (const cost::DeviceSpec& d : cost::device_presets) devices.emplace(d.name);
    expect_one_of("device", o.where.device, devices);
    RLFLOW_EXPECTS(o.alpha > 0, precondition_error, "alpha must be positive");
    RLFLOW_EXPECTS(o.time_limit >= 0, precondition_error, "time_limit must be 0 (none) or positive seconds");
    RLFLOW_EXPECTS(o.verify_trials > 0, precondition_error, "verify_trials must be positive");
    if (a.agent) o.agent = *a.agent;
    if (!a.rules.is_none()) {
        if (py::isinstance<PyRules>(a.rules)) {
            const PyRules& given = a.rules.cast<const PyRules&>();
            o.rule_set = given.set;
            o.rules = given.source;
        } else {
            o.rules = py::str(a.rules);
        }
    }
    return o;
}

/// Optimises `model` (a Graph, or what load() takes); returns (graph, report).
inline py::tuple optimize(const OptimizeArguments& a, const cli::OptimizeOptions& given) {
    const PyGraph input = py::isinstance<PyGraph>(a.model) ? a.model.cast<const PyGraph&>() : load_graph(a.model, {});
    cli::OptimizeOptions o = optimize_options(a, given);
    o.model = input.source;
    OptimizeRequest request = cli::optimize_request(o, &cli::interrupted);
    request.input.file = input.file;
    std::optional<OptimizeResult> result;
    {
        const py::gil_scoped_release unlocked;
        const cli::SigintStop sigint;
        result = cli::run_optimize(input.graph, request);
    }
    if (!result->verified())
        throw verification_error("the optimised graph differs from the original (" + result->report.verification.detail + ")");
    const nlohmann::json report = result->report.to_json();
    PyGraph out = result->is_input() ? input : PyGraph{std::move(result->graph), input.source + " (optimised)", std::nullopt};
    return py::make_tuple(std::move(out), to_python(report));
}

/// One keyword argument of optimize(): it sets the OptimizeOptions field that the command
/// line's flag of the same name (underscores for dashes) sets.
struct OptimizeKeyword {
    const char* name;
    void (*set)(cli::OptimizeOptions&, const py::handle&);
};

/// A string or a list of strings, as a list.
inline std::vector<std::string> string_list(const py::handle& v) {
    if (py::isinstance<py::str>(v)) return {v.cast<std::string>()};
    return v.cast<std::vector<std::string>>();
}

/// A list of strings, each string also split at commas (as --propose a,b reads).
inline std::vector<std::string> comma_list(const py::handle& v) {
    std::vector<std::string> out;
    for (const std::string& item : string_list(v))
        for (std::size_t start = 0;;) {
            const std::size_t comma = item.find(',', start);
            out.push_back(item.substr(start, comma - start));
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
    return out;
}

/// A str or an os.PathLike as text.
inline std::string path_text(const py::handle& v) {
    return py::str(py::module_::import("os").attr("fspath")(v)).cast<std::string>();
}

/// Every keyword optimize() takes besides model, search, cost, budget, agent and rules:
/// the target, the other price models, the guard, verification, each search's options and
/// the output's form, as the flags of `rlflow optimize` name them.
inline constexpr OptimizeKeyword optimize_keywords[] = {
    {"target", [](cli::OptimizeOptions& o, const py::handle& v) { o.where.target = v.cast<std::string>(); }},
    {"device", [](cli::OptimizeOptions& o, const py::handle& v) { o.where.device = v.cast<std::string>(); }},
    {"ort_level", [](cli::OptimizeOptions& o, const py::handle& v) { o.where.ort_level = v.is_none() ? "" : v.cast<std::string>(); }},
    {"ort_threads", [](cli::OptimizeOptions& o, const py::handle& v) { o.where.ort_threads = v.cast<int>(); }},
    {"propose", [](cli::OptimizeOptions& o, const py::handle& v) { o.propose = comma_list(v); }},
    {"guard", [](cli::OptimizeOptions& o, const py::handle& v) { o.guard = v.cast<std::string>(); }},
    {"guard_levels", [](cli::OptimizeOptions& o, const py::handle& v) { o.guard_levels = string_list(v); }},
    {"guard_candidates", [](cli::OptimizeOptions& o, const py::handle& v) { o.guard_candidates = v.cast<std::size_t>(); }},
    {"guard_rounds", [](cli::OptimizeOptions& o, const py::handle& v) { o.guard_rounds = v.cast<int>(); }},
    {"verify_trials", [](cli::OptimizeOptions& o, const py::handle& v) { o.verify_trials = v.cast<int>(); }},
    {"seed", [](cli::OptimizeOptions& o, const py::handle& v) { o.seed = v.cast<std::uint64_t>(); }},
    {"alpha", [](cli::OptimizeOptions& o, const py::handle& v) { o.alpha = v.cast<double>(); }},
    {"time_limit", [](cli::OptimizeOptions& o, const py::handle& v) { o.time_limit = v.cast<double>(); }},
    {"memory_limit", [](cli::OptimizeOptions& o, const py::handle& v) { o.memory_limit_mb = v.cast<std::size_t>(); }},
    {"ledger", [](cli::OptimizeOptions& o, const py::handle& v) { o.ledger = path_text(v); }},
    {"cost_cache", [](cli::OptimizeOptions& o, const py::handle& v) { o.cost_cache = v.is_none() ? "" : path_text(v); }},
    {"samples", [](cli::OptimizeOptions& o, const py::handle& v) { o.samples = v.cast<std::size_t>(); }},
    {"agent_stop", [](cli::OptimizeOptions& o, const py::handle& v) { o.agent_stop = v.cast<std::string>(); }},
    {"plan", [](cli::OptimizeOptions& o, const py::handle& v) { o.plan = v.cast<std::string>(); }},
    {"simulations", [](cli::OptimizeOptions& o, const py::handle& v) { o.simulations = v.cast<std::size_t>(); }},
    {"grow_steps", [](cli::OptimizeOptions& o, const py::handle& v) { o.grow_steps = v.cast<std::size_t>(); }},
    {"node_limit", [](cli::OptimizeOptions& o, const py::handle& v) { o.eqsat.node_limit = v.cast<std::size_t>(); }},
    {"iter_limit", [](cli::OptimizeOptions& o, const py::handle& v) { o.eqsat.iteration_limit = v.cast<std::size_t>(); }},
    {"multi_rounds", [](cli::OptimizeOptions& o, const py::handle& v) { o.eqsat.multi_rounds = v.cast<std::size_t>(); }},
    {"multi_schedule", [](cli::OptimizeOptions& o, const py::handle& v) {
         o.eqsat.multi_schedule = search::multi_schedule_names.parse(v.cast<std::string>(), "multi_schedule");
     }},
    {"extract", [](cli::OptimizeOptions& o, const py::handle& v) { o.extract = v.cast<std::string>(); }},
    {"local_search_seconds", [](cli::OptimizeOptions& o, const py::handle& v) { o.eqsat.local.seconds = v.cast<double>(); }},
    {"ilp_time_limit", [](cli::OptimizeOptions& o, const py::handle& v) { o.eqsat.ilp_time_limit_seconds = v.cast<double>(); }},
    {"ilp_cycles", [](cli::OptimizeOptions& o, const py::handle& v) { o.ilp_cycles = v.cast<std::string>(); }},
    {"portable", [](cli::OptimizeOptions& o, const py::handle& v) { o.portable = v.cast<bool>(); }},
    {"fused_conv_ms", [](cli::OptimizeOptions& o, const py::handle& v) { o.save.fused_conv_microsoft = v.cast<bool>(); }},
    {"progress", [](cli::OptimizeOptions& o, const py::handle& v) { o.progress = v.cast<bool>(); }},
};

/// Sets `o` from optimize()'s keyword arguments; an unknown one is a TypeError naming the
/// known ones, a value of the wrong type an rlflow.PreconditionError naming the argument.
inline void apply_keywords(cli::OptimizeOptions& o, const py::kwargs& given) {
    for (const auto& [key, value] : given) {
        const std::string name = py::str(key);
        const auto* k = std::find_if(std::begin(optimize_keywords), std::end(optimize_keywords),
                                     [&](const OptimizeKeyword& w) { return name == w.name; });
        if (k == std::end(optimize_keywords)) {
            std::string known;
            for (const OptimizeKeyword& w : optimize_keywords) known += std::string(known.empty() ? "" : ", ") + w.name;
            throw py::type_error("optimize() got an unexpected keyword argument '" + name + "'; it takes model, search, cost, budget, agent, rules, " + known);
        }
        try {
            k->set(o, value);
        } catch (const py::cast_error&) {
            throw precondition_error("optimize(): " + name + "=" + std::string(py::repr(value)) + " has the wrong type");
        }
    }
    RLFLOW_EXPECTS(o.guard_candidates >= 1 && o.guard_candidates <= cli::most_guard_candidates, precondition_error,
                   "guard_candidates must be 1 to " + std::to_string(cli::most_guard_candidates));
    RLFLOW_EXPECTS(o.guard_rounds >= cli::fewest_guard_rounds && o.guard_rounds <= cli::most_guard_rounds, precondition_error,
                   "guard_rounds must be " + std::to_string(cli::fewest_guard_rounds) + " to " + std::to_string(cli::most_guard_rounds));
    for (const std::string& level : o.guard_levels) expect_listed("guard_levels", level, opt::ort_level_names);
    RLFLOW_EXPECTS(o.eqsat.ilp_time_limit_seconds > 0, precondition_error, "ilp_time_limit must be positive seconds");
    RLFLOW_EXPECTS(o.eqsat.local.seconds >= 0, precondition_error, "local_search_seconds must be 0 (off) or positive");
    RLFLOW_EXPECTS(!(o.portable && o.save.fused_conv_microsoft), precondition_error, "portable and fused_conv_ms exclude each other");
}

inline void bind_optimize(py::module_& m) {
    const cli::OptimizeOptions d;
    m.def("_optimize_keywords", [] {
        std::vector<std::string> names{"search", "cost", "budget", "agent", "rules"};
        for (const OptimizeKeyword& k : optimize_keywords) names.emplace_back(k.name);
        return names;
    }, "The keyword arguments optimize() takes (for the test that keeps them level with the command's flags).");
    m.def("optimize",
          [](const py::object& model, const std::string& search, const std::string& cost, std::size_t budget,
             const std::optional<std::string>& agent, const py::object& rules, const py::kwargs& options) {
              cli::OptimizeOptions o;
              o.progress = false;  // silent unless progress=True, as a library call should be
              o.search = search;
              o.where.cost = cost;
              o.budget = budget;
              apply_keywords(o, options);
              return optimize({model, rules, agent}, o);
          },
          py::arg("model"), py::arg("search") = d.search, py::arg("cost") = d.where.cost, py::arg("budget") = d.budget,
          py::arg("agent") = py::none(), py::kw_only(), py::arg("rules") = py::none(),
          R"(Rewrites `model` (a Graph, a path, 'zoo:NAME' or ONNX bytes) into a cheaper equivalent graph.

The front door of `rlflow optimize`, with the same request: every flag of that command is a keyword
argument here, its dashes written as underscores and with the command's defaults (`rlflow optimize
--help`). `target` is auto, ort-cpu (ONNX Runtime on this CPU, by default level all with a thread per
physical core; `ort_level` and `ort_threads` refine it) or cuda; `search` is greedy, taso, eqsat, mf
or mb (mf/mb roll out the agent in the directory `agent`; `plan` is none, mcts, eqsat or grow, with
`simulations` and `grow_steps`; `samples` and `agent_stop` as the flags); `cost` is auto (the target's
own prices), analytic, cpu, ort, cudnn or table:FILE, and `device` a roofline preset; `budget` bounds
the search (0: by the graph's size), and so do `time_limit` (s), `memory_limit` (MB) and `alpha`.
eqsat: `node_limit`, `iter_limit`, `multi_rounds`, `multi_schedule`, `extract`,
`local_search_seconds`, `ilp_time_limit`, `ilp_cycles`. The guard: `guard` (auto, ort, cuda, none)
times the best `guard_candidates` candidates of the target's prices and of the `propose` price models
against the input, `guard_rounds` interleaved runs each, at the target's level and the `guard_levels`,
and the input is returned unchanged unless one is faster. `verify_trials` random input sets check
the result; a mismatch raises rlflow.VerificationError. `portable` writes standard ONNX ops only,
`fused_conv_ms` ONNX Runtime's FusedConv; `ledger` and `cost_cache` as the flags; `seed` seeds the
checks; `progress` prints the command's progress bars. The GIL is released while it works, and
Ctrl-C stops the search with the best graph so far. Returns (graph, report dict), the report as
`rlflow optimize --report` writes it.)");
}

}  // namespace rlflow::python
