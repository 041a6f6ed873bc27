#pragma once
/// \file
/// Umbrella header of the CPU cost backends: the backend concept, the analytic roofline,
/// the CPU profiler, the cached cost model and the incremental cost tracker. (The
/// cuDNN/cuBLAS profiler is reachable only through rlflow/cost/cudnn_profiler.hpp.)

#include <rlflow/cost/analytic.hpp>
#include <rlflow/cost/cost_backend.hpp>
#include <rlflow/cost/cost_model.hpp>
#include <rlflow/cost/cost_tracker.hpp>
#include <rlflow/cost/cpu_profiler.hpp>
#include <rlflow/cost/ort_backend.hpp>
#include <rlflow/cost/ort_latency.hpp>
#include <rlflow/cost/ort_worker.hpp>
#include <rlflow/cost/target.hpp>
