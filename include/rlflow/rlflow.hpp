#pragma once
/// \file
/// The umbrella header: everything on the CPU side. CUDA backends are only reachable
/// through their own headers (cost/cudnn_profiler.hpp, nn/backend/cublas.hpp).

#include <rlflow/core.hpp>
#include <rlflow/cost.hpp>
#include <rlflow/exec.hpp>
#include <rlflow/models.hpp>
#include <rlflow/nn.hpp>
#include <rlflow/onnx.hpp>
#include <rlflow/optimize.hpp>
#include <rlflow/rewrite.hpp>
#include <rlflow/rl.hpp>
#include <rlflow/search.hpp>
#include <rlflow/synth.hpp>
