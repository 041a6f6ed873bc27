#pragma once
/// \file
/// Umbrella header of the reference executor.

#include <rlflow/exec/executor.hpp>
#include <rlflow/exec/random.hpp>
