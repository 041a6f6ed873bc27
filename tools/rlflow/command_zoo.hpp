#pragma once
// `rlflow zoo list`: the built-in models.

#include <rlflow/models/zoo.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>

namespace rlflow::cli {

}  // namespace rlflow::cli
