// The `rlflow` Python module's compiled part (rlflow._core): see python/rlflow/__init__.py.

#include "env.hpp"
#include "graph.hpp"
#include "optimize.hpp"
#include "rules.hpp"

PYBIND11_MODULE(_core, m) {
    namespace rp = rlflow::python;
    m.doc() = "rlflow: graph optimisation by verified rewrites and reinforcement learning";
    m.attr("__version__") = RLFLOW_VERSION;
    rp::register_errors(m);
    rp::bind_graph(m);
    rp::bind_rules(m);
    rp::bind_optimize(m);
    rp::bind_env(m);
}
