#pragma once
/// \file
/// Umbrella header of the rewrite engine.

#include <rlflow/rewrite/soundness.hpp>
