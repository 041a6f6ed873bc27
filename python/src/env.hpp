#pragma once
// rlflow.Env: the graph-rewriting environment (rl::GraphEnv) with the Gymnasium
// conventions, reset(seed=) -> (obs, info) and step(action) -> (obs, reward, terminated,
// truncated, info), without depending on gymnasium. Observations are dicts of NumPy
// arrays that take over the C++ buffers (no copy).

#include "common.hpp"
#include "graph.hpp"
#include "rules.hpp"

#include "rlflow/target.hpp"

#include <rlflow/core/random.hpp>
#include <rlflow/cost.hpp>
#include <rlflow/cost/ort_backend.hpp>
#include <rlflow/rl/env/action_space.hpp>
#include <rlflow/rl/env/env.hpp>

#include <atomic>

namespace rlflow::python {

/// A GraphEnv over any cost backend, behind one interface.
class EnvCore {
public:
    virtual ~EnvCore() = default;
    virtual rl::Observation reset(Graph graph) = 0;
    virtual rl::StepResult step(rl::Action action) = 0;
    [[nodiscard]] virtual const Graph& graph() const = 0;
    [[nodiscard]] virtual double cost_ms() const = 0;
    [[nodiscard]] virtual double initial_cost_ms() const = 0;
    [[nodiscard]] virtual std::size_t steps() const = 0;
    [[nodiscard]] virtual std::string cost_name() const = 0;
};

/// The environment and the cost model it prices with, which it refers to.
template <cost::CostBackend Backend>
class EnvOver final : public EnvCore {
public:
    EnvOver(Backend backend, std::shared_ptr<const rewrite::RuleSet> rules, const rl::EnvOptions& options)
        : m_model(std::move(backend)), m_env(std::move(rules), m_model, options) {}
    rl::Observation reset(Graph graph) override { return m_env.reset(std::move(graph)); }
    rl::StepResult step(rl::Action action) override { return m_env.step(action); }
    [[nodiscard]] const Graph& graph() const override { return m_env.graph(); }
    [[nodiscard]] double cost_ms() const override { return m_env.cost_ms(); }
    [[nodiscard]] double initial_cost_ms() const override { return m_env.initial_cost_ms(); }
    [[nodiscard]] std::size_t steps() const override { return m_env.steps(); }
    [[nodiscard]] std::string cost_name() const override { return m_model.name(); }

private:
    cost::CostModel<Backend> m_model;
    rl::GraphEnv<Backend> m_env;
};

/// The environment's cost, as the CLI's --cost, --device and --target name it: analytic (a
/// roofline preset), cpu (the reference executor's op times), ort (ONNX Runtime's, at the
/// target's level and threads), cudnn, or table:FILE (a recorded price table).
inline std::unique_ptr<EnvCore> make_env_core(const cli::TargetFlags& where, std::shared_ptr<const rewrite::RuleSet> rules,
                                              const rl::EnvOptions& options) {
    const cost::Target target = cli::resolve_target(where);
    const opt::CostChoice pricing = cli::resolve_cost(where, target);
    if (pricing.kind == opt::CostKind::ort)
        if (const auto why = cost::ort_unavailable_reason()) throw precondition_error("cost='ort': " + *why + "; " + cost::ort_install_hint());
    return opt::with_cost_backend(pricing, target, {}, [&](auto backend) -> std::unique_ptr<EnvCore> {
        return std::make_unique<EnvOver<decltype(backend)>>(std::move(backend), std::move(rules), options);
    });
}

/// The observation as the dict of NumPy arrays: nodes (n, fn), edges (E, fe), globals
/// (fg,), senders and receivers (E,), xfer_mask (N+1,) and location_mask (N, L).
inline py::dict observation_dict(rl::Observation&& o) {
    nn::HostGraph& g = o.graph;
    const auto n = static_cast<py::ssize_t>(g.num_nodes);
    const auto e = static_cast<py::ssize_t>(g.num_edges());
    const auto xfers = static_cast<py::ssize_t>(o.num_xfers);
    const auto width = static_cast<py::ssize_t>(o.max_locations);
    std::vector<std::uint8_t> location_mask(static_cast<std::size_t>(xfers * width), 0);
    for (std::uint32_t r = 0; r < o.num_xfers; ++r)
        std::fill_n(location_mask.begin() + static_cast<std::ptrdiff_t>(r) * width, o.location_count(r), 1);
    py::dict d;
    d["nodes"] = to_numpy(std::move(g.nodes), {n, static_cast<py::ssize_t>(g.sizes.node)});
    d["edges"] = to_numpy(std::move(g.edges), {e, static_cast<py::ssize_t>(g.sizes.edge)});
    d["globals"] = to_numpy(std::move(g.globals), {static_cast<py::ssize_t>(g.sizes.global)});
    d["senders"] = to_numpy(std::move(g.senders), {e});
    d["receivers"] = to_numpy(std::move(g.receivers), {e});
    d["xfer_mask"] = to_bool_numpy(std::move(o.xfer_mask), {xfers + 1});
    d["location_mask"] = to_bool_numpy(std::move(location_mask), {xfers, width});
    return d;
}

/// Marks an environment busy for one reset or step, which run without the GIL: a second
/// thread that steps the same environment meanwhile gets an error, not a data race.
class BusyGuard {
public:
    explicit BusyGuard(std::atomic<bool>& busy) : m_busy(busy) {
        RLFLOW_EXPECTS(!m_busy.exchange(true), precondition_error,
                       "rlflow.Env is being reset or stepped by another thread; use one Env per thread");
    }
    ~BusyGuard() { m_busy.store(false); }
    BusyGuard(const BusyGuard&) = delete;
    BusyGuard& operator=(const BusyGuard&) = delete;

private:
    std::atomic<bool>& m_busy;
};

/// rlflow.Env.
class PyEnv {
public:
    PyEnv(const PyGraph& graph, const py::object& rules, const cli::TargetFlags& where, const rl::EnvOptions& options)
        : m_graph(graph), m_options(options) {
        if (py::isinstance<PyRules>(rules)) m_rules = rules.cast<const PyRules&>().set;
        else if (py::isinstance<py::str>(rules) && rules.cast<std::string>() == "agent")
            m_rules = std::make_shared<const rewrite::RuleSet>(rl::training_rules(std::span<const Graph>(&m_graph.graph, 1)));
        else m_rules = cli::load_rule_set(py::str(py::module_::import("os").attr("fspath")(rules)));
        m_core = make_env_core(where, m_rules, options);
    }

    /// Starts an episode on a copy of the graph; `seed` reseeds sample_action().
    py::tuple reset(const std::optional<std::uint64_t>& seed) {
        const BusyGuard busy(*m_busy);
        if (seed) m_rng = Rng(*seed);
        rl::Observation o;
        {
            const py::gil_scoped_release unlocked;
            o = m_core->reset(m_graph.graph);
        }
        remember_counts(o);
        py::dict info;
        info["cost_ms"] = m_core->cost_ms();
        info["initial_cost_ms"] = m_core->initial_cost_ms();
        info["graph_nodes"] = m_core->graph().num_nodes();
        return py::make_tuple(observation_dict(std::move(o)), info);
    }

    py::tuple step(const py::object& action) {
        std::vector<std::int64_t> pair;
        try {
            pair = py::cast<std::vector<std::int64_t>>(action);
        } catch (const py::cast_error&) {
            pair.clear();
        }
        RLFLOW_EXPECTS(pair.size() == 2 && pair[0] >= 0 && pair[0] <= num_xfers() && pair[1] >= 0
                           && pair[1] < static_cast<std::int64_t>(m_options.max_locations),
                       precondition_error,
                       "an action is a pair (xfer, location) of integers with 0 <= xfer <= " + std::to_string(num_xfers()) + " (" + std::to_string(num_xfers())
                           + ": NO-OP) and 0 <= location < " + std::to_string(m_options.max_locations) + ", valid where the observation's masks say; got "
                           + std::string(py::repr(action)));
        const BusyGuard busy(*m_busy);
        rl::StepResult r;
        {
            const py::gil_scoped_release unlocked;
            r = m_core->step({static_cast<std::uint32_t>(pair[0]), static_cast<std::uint32_t>(pair[1])});
        }
        remember_counts(r.observation);
        py::dict info;
        info["cost_ms"] = r.info.cost_ms;
        info["initial_cost_ms"] = m_core->initial_cost_ms();
        info["rule"] = r.info.rule;
        info["location"] = r.info.location;
        info["graph_nodes"] = r.info.graph_nodes;
        info["steps"] = m_core->steps();
        return py::make_tuple(observation_dict(std::move(r.observation)), r.reward, r.terminated, r.truncated, info);
    }

    /// A uniformly random valid xfer (NO-OP among them), then a uniformly random valid
    /// location of it, from the generator reset(seed=) seeds.
    py::tuple sample_action() {
        RLFLOW_EXPECTS(!m_counts.empty(), precondition_error, "Env.sample_action before reset");
        std::vector<std::uint32_t> valid;
        for (std::uint32_t r = 0; r < m_counts.size(); ++r)
            if (m_counts[r] > 0) valid.push_back(r);
        valid.push_back(num_xfers());  // NO-OP
        const std::uint32_t xfer = valid[m_rng.below(valid.size())];
        const std::uint32_t location = xfer == num_xfers() ? 0 : static_cast<std::uint32_t>(m_rng.below(m_counts[xfer]));
        return py::make_tuple(xfer, location);
    }

    [[nodiscard]] std::uint32_t num_xfers() const { return static_cast<std::uint32_t>(m_rules->size()); }
    [[nodiscard]] const rl::EnvOptions& options() const { return m_options; }
    [[nodiscard]] const EnvCore& core() const { return *m_core; }
    [[nodiscard]] const rewrite::RuleSet& rules() const { return *m_rules; }

private:
    void remember_counts(const rl::Observation& o) {
        m_counts.assign(o.num_xfers, 0);
        for (std::uint32_t r = 0; r < o.num_xfers; ++r) m_counts[r] = o.location_count(r);
    }

    PyGraph m_graph;
    rl::EnvOptions m_options;
    std::shared_ptr<const rewrite::RuleSet> m_rules;
    std::unique_ptr<EnvCore> m_core;
    Rng m_rng;
    /// Set while a reset or step runs (BusyGuard); held by pointer so that PyEnv moves.
    std::unique_ptr<std::atomic<bool>> m_busy = std::make_unique<std::atomic<bool>>(false);
    /// Valid locations of each xfer in the last observation.
    std::vector<std::uint32_t> m_counts;
};

inline void bind_env(py::module_& m) {
    const rl::EnvOptions d;
    py::class_<PyEnv>(m, "_Env", R"(The core of rlflow.Env (python/rlflow/env.py), which adds the Gymnasium API.

An action is (xfer, location): rule `xfer` at its valid location `location`; xfer N (the number of
rules) is NO-OP and ends the episode. Rewards are the fraction of the input's cost a step saves,
times `reward_scale`, so an episode's rewards sum to (cost_0 - cost_T) / cost_0 * reward_scale.
Observations are dicts of NumPy arrays: nodes, edges, globals, senders, receivers, xfer_mask (N+1,
NO-OP last) and location_mask (N, L), whose valid locations come first in each row.

reset and step release the GIL, so environments in separate threads step in parallel; an
environment stepped from two threads at once raises rlflow.PreconditionError.)")
        .def(py::init([](const PyGraph& graph, const py::object& rules, const std::string& cost, const std::string& device,
                         const std::string& target, std::size_t max_steps, std::size_t max_locations, double reward_scale,
                         bool one_step_gains) {
                 if (!cost.starts_with("table:")) expect_one_of("cost", cost, {"auto", "analytic", "cpu", "ort", "cudnn", "table:FILE"});
                 cli::TargetFlags where;
                 where.cost = cost;
                 where.device = device;
                 where.target = target;
                 rl::EnvOptions o;
                 o.step_limit = max_steps;
                 o.max_locations = max_locations;
                 o.reward_scale = reward_scale;
                 o.one_step_gains = one_step_gains;
                 return PyEnv(graph, rules, where, o);
             }),
             py::arg("graph"), py::kw_only(), py::arg("rules") = "agent", py::arg("cost") = "auto",
             py::arg("device") = "auto", py::arg("target") = "auto", py::arg("max_steps") = d.step_limit, py::arg("max_locations") = d.max_locations,
             py::arg("reward_scale") = d.reward_scale, py::arg("one_step_gains") = false)
        .def("reset", &PyEnv::reset, py::kw_only(), py::arg("seed") = py::none(), "Starts an episode: (obs, info).")
        .def("step", &PyEnv::step, py::arg("action"), "(obs, reward, terminated, truncated, info).")
        .def("sample_action", &PyEnv::sample_action, "A random valid action, from the generator reset(seed=) seeds.")
        .def_property_readonly("num_xfers", &PyEnv::num_xfers, "N: the number of rules; xfer N is NO-OP.")
        .def_property_readonly("max_locations", [](const PyEnv& e) { return e.options().max_locations; })
        .def_property_readonly("max_steps", [](const PyEnv& e) { return e.options().step_limit; })
        .def_property_readonly("reward_scale", [](const PyEnv& e) { return e.options().reward_scale; })
        .def_property_readonly("rule_names", [](const PyEnv& e) {
            std::vector<std::string> names;
            for (const rewrite::Rule& r : e.rules()) names.push_back(r.name);
            return names;
        })
        .def_property_readonly("cost_backend", [](const PyEnv& e) { return e.core().cost_name(); })
        .def_property_readonly_static("feature_sizes", [](const py::object&) {
            const nn::FeatureSizes s = rl::observation_feature_sizes;
            py::dict widths;
            widths["node"] = s.node;
            widths["edge"] = s.edge;
            widths["global"] = s.global;
            return widths;
        }, "Widths of the observation's node, edge and global features.")
        .def_property_readonly("cost_ms", [](const PyEnv& e) { return e.core().cost_ms(); })
        .def_property_readonly("initial_cost_ms", [](const PyEnv& e) { return e.core().initial_cost_ms(); })
        .def_property_readonly("steps", [](const PyEnv& e) { return e.core().steps(); })
        .def("graph", [](const PyEnv& e) { return PyGraph{e.core().graph(), "rlflow.Env", std::nullopt}; },
             "A copy of the graph as the episode has rewritten it.");
}

}  // namespace rlflow::python
