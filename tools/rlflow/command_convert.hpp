#pragma once
// `rlflow convert <in.onnx> <out.onnx>`: import, then export, with no rewriting; and
// `rlflow weights <in.onnx> <out.onnx>`: give a weight-free export seeded random weights.

#include "model_source.hpp"
#include "output_paths.hpp"

#include <rlflow/core/atomic_file.hpp>
#include <rlflow/exec/random.hpp>
#include <rlflow/onnx/export.hpp>
#include <rlflow/onnx/weights.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>

namespace rlflow::cli {

struct ConvertOptions {
    std::string input;
    std::string output;
    ModelOptions load;
    onnx_io::ExportOptions save;
    bool no_check = false;
};

struct WeightsOptions {
    std::string input;
    std::string output;
    std::vector<std::string> data_inputs;
    std::uint64_t seed = 0;
};

}  // namespace rlflow::cli
