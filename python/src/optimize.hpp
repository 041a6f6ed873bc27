#pragma once
// rlflow.optimize: the library's front door (rlflow/optimize.hpp), as `rlflow optimize`
// calls it, on a Graph, with the GIL released; Ctrl-C stops the search with the best graph
// so far. The keyword arguments are read into the same OptimizeRequest as the flags.

#include "common.hpp"
#include "graph.hpp"
#include "rules.hpp"

#include "rlflow/command_optimize.hpp"

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

inline void bind_optimize(py::module_& m) {
    const cli::OptimizeOptions d;
    m.def("optimize",
          [](const py::object& model, const std::string& search, const std::string& cost, std::size_t budget,
             const std::optional<std::string>& agent, const py::object& rules, const std::string& target,
             const std::string& device, const std::string& guard, double alpha, double time_limit, std::uint64_t seed,
             int verify_trials, const std::optional<std::string>& ort_level, int ort_threads, std::size_t samples,
             const std::string& plan, std::size_t simulations, std::size_t grow_steps, bool portable, const std::string& ledger,
             bool progress) {
              cli::OptimizeOptions o;
              o.search = search;
              o.where.target = target;
              o.where.cost = cost;
              o.budget = budget;
              o.where.device = device;
              o.guard = guard;
              o.alpha = alpha;
              o.time_limit = time_limit;
              o.seed = seed;
              o.verify_trials = verify_trials;
              o.where.ort_level = ort_level.value_or("");
              o.where.ort_threads = ort_threads;
              o.samples = samples;
              o.plan = plan;
              o.simulations = simulations;
              o.grow_steps = grow_steps;
              o.portable = portable;
              o.ledger = ledger;
              o.progress = progress;
              return optimize({model, rules, agent}, o);
          },
          py::arg("model"), py::arg("search") = d.search, py::arg("cost") = d.where.cost, py::arg("budget") = d.budget,
          py::arg("agent") = py::none(), py::kw_only(), py::arg("rules") = py::none(), py::arg("target") = d.where.target,
          py::arg("device") = d.where.device,
          py::arg("guard") = d.guard, py::arg("alpha") = d.alpha, py::arg("time_limit") = d.time_limit,
          py::arg("seed") = d.seed, py::arg("verify_trials") = d.verify_trials, py::arg("ort_level") = py::none(),
          py::arg("ort_threads") = d.where.ort_threads, py::arg("samples") = d.samples,
          py::arg("plan") = d.plan, py::arg("simulations") = d.simulations, py::arg("grow_steps") = d.grow_steps,
          py::arg("portable") = d.portable,
          py::arg("ledger") = d.ledger, py::arg("progress") = false,
          R"(Rewrites `model` (a Graph, a path, 'zoo:NAME' or ONNX bytes) into a cheaper equivalent graph.

As `rlflow optimize`: `target` is auto, ort-cpu (ONNX Runtime on this CPU, by default level all with a
thread per physical core; `ort_level` and `ort_threads` refine it) or cuda; `search` is greedy, taso,
eqsat, mf or mb (mf/mb roll out the agent in the directory `agent`, then with `plan`='mcts' guide a
tree search of `simulations` simulations a step, with `plan`='eqsat' seed equality saturation, or with
`plan`='grow' grow an e-graph for `grow_steps` steps, one rule's matches a step); `cost` is auto (the target's own
prices), analytic, cpu, ort or cudnn; `budget` bounds the search (0: by the graph's size). The best
candidates are timed against the input in ONNX Runtime (`guard`), and the input is returned unchanged
unless one is faster. `portable` writes standard ONNX ops only (an input holding an ONNX Runtime
contrib op raises rlflow.Error). `ledger` is the rule ledger: auto (the one shipped for ort-cpu at
level all, applied to the default rules under the target's own prices), none, or a file from
`rlflow rules measure`; the families it says never pay are left out of the rules. The result is checked against the input on random inputs; a mismatch raises
rlflow.VerificationError. The GIL is released while it works, and Ctrl-C stops the search with the
best graph so far. Returns (graph, report dict).)");
}

}  // namespace rlflow::python
