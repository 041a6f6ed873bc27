#pragma once
/// \file
/// The library's front door: `rlflow::optimize(graph, request)` searches, guards and
/// verifies, and returns the graph to write with a typed report; `rlflow::write_result`
/// writes it. The command line's `optimize` and Python's `rlflow.optimize` call it.

#include <rlflow/optimize/guard.hpp>
#include <rlflow/optimize/hooks.hpp>
#include <rlflow/optimize/nchwc_groups.hpp>
#include <rlflow/optimize/pipeline.hpp>
#include <rlflow/optimize/report.hpp>
#include <rlflow/optimize/request.hpp>
#include <rlflow/optimize/target.hpp>
