#pragma once
/// \file
/// Umbrella header of the reference executor, its random weights and inputs, and the
/// folding of weight-only work into weights.

#include <rlflow/exec/executor.hpp>
#include <rlflow/exec/fold_weights.hpp>
#include <rlflow/exec/random.hpp>
