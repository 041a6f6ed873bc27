#pragma once
/// \file
/// Umbrella header of the searches: greedy, TASO-style backtracking and equality saturation.

#include <rlflow/search/backtracking.hpp>
#include <rlflow/search/eqsat.hpp>
#include <rlflow/search/greedy.hpp>
#include <rlflow/search/guard.hpp>
#include <rlflow/search/search.hpp>
#include <rlflow/search/search_state.hpp>
