#pragma once
/// \file
/// Umbrella header of the searches: greedy and TASO-style backtracking.

#include <rlflow/search/backtracking.hpp>
#include <rlflow/search/greedy.hpp>
#include <rlflow/search/guard.hpp>
#include <rlflow/search/search.hpp>
