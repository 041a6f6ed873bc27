// rlflow::optimize compiled once, for the programs of this build that call it: the
// command line, the Python module and the examples link the rlflow_optimize library and
// declare it extern (RLFLOW_OPTIMIZE_COMPILED, include/rlflow/optimize/pipeline.hpp).

#include <rlflow/optimize.hpp>

template rlflow::OptimizeResult rlflow::optimize<rlflow::OptimizeRequest>(const rlflow::Graph&, const rlflow::OptimizeRequest&);
