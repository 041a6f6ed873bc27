#pragma once
// `rlflow run <MODEL>`: runs a model in the reference executor on given (ONNX test-data
// layout: input_N.pb) or seeded random inputs, and optionally compares with reference
// outputs (output_N.pb). Exit code 1 when the outputs do not match.

#include "command_info.hpp"
#include "model_source.hpp"
#include "output_paths.hpp"

#include <rlflow/exec/executor.hpp>
#include <rlflow/exec/random.hpp>
#include <rlflow/onnx/tensor_io.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace rlflow::cli {

struct RunOptions {
    std::string model;
    ModelOptions load;
    std::string inputs;
    std::string expect;
    double rtol = 1e-4;
    double atol = 1e-5;
    std::uint64_t seed = 0;
};

/// Largest absolute and relative (to the reference's largest magnitude) differences, and
/// whether every element is within atol + rtol * |reference|.
struct Agreement {
    double max_abs = 0, max_rel = 0;
    bool within = true;
};

inline Agreement agreement(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
    Agreement a;
    double scale = 0;
    for (const float e : expected.floats()) scale = std::max(scale, std::abs(static_cast<double>(e)));
    for (std::size_t i = 0; i < actual.floats().size(); ++i) {
        const double x = actual.floats()[i], e = expected.floats()[i];
        const double diff = std::abs(x - e);
        a.max_abs = std::isnan(diff) ? INFINITY : std::max(a.max_abs, diff);
        a.within = a.within && diff <= atol + rtol * std::abs(e);
    }
    a.max_rel = scale > 0 ? a.max_abs / scale : a.max_abs;
    return a;
}

inline bool compare_outputs(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected, const RunOptions& o) {
    RLFLOW_EXPECTS(actual.size() == expected.size(), precondition_error,
                   o.expect + ": " + std::to_string(expected.size()) + " reference outputs for "
                       + std::to_string(actual.size()) + " graph outputs");
    bool all = true;
    for (std::size_t i = 0; i < actual.size(); ++i) {
        RLFLOW_EXPECTS(actual[i].type() == expected[i].type(), shape_error,
                       o.expect + ": output " + std::to_string(i) + " is " + actual[i].type().to_string()
                           + ", the reference " + expected[i].type().to_string());
        if (actual[i].dtype() != DType::Float32) {  // exact for integer and boolean outputs
            const bool same = std::ranges::equal(actual[i].raw(), expected[i].raw());
            std::printf("output %zu: %s\n", i, same ? "identical ok" : "MISMATCH");
            all = all && same;
            continue;
        }
        const Agreement a = agreement(actual[i], expected[i], o.rtol, o.atol);
        std::printf("output %zu: max_abs_diff %.3g, max_rel_diff %.3g %s\n", i, a.max_abs, a.max_rel,
                    a.within ? "ok" : "MISMATCH");
        all = all && a.within;
    }
    return all;
}

/// The tensors `<prefix>_0.pb` ... of `directory`, one for each of `names` (graph inputs
/// or outputs), checked before the model runs: a missing file is named with the tensor it
/// stands for.
inline std::vector<Tensor> load_tensor_directory(const std::string& directory, const std::string& prefix,
                                                 const std::vector<std::string>& names, std::string_view flag) {
    check_input_directory(directory, flag);
    std::vector<Tensor> tensors = onnx_io::load_tensor_files(directory, prefix);
    if (tensors.size() < names.size()) {
        const std::filesystem::path missing = std::filesystem::path(directory) / (prefix + "_" + std::to_string(tensors.size()) + ".pb");
        throw io_error(std::string(flag) + " '" + directory + "': no " + missing.string() + " for " + prefix + " "
                       + std::to_string(tensors.size()) + " '" + names[tensors.size()] + "' (the model has "
                       + std::to_string(names.size()) + " " + prefix + "s; the files are " + prefix + "_0.pb, "
                       + prefix + "_1.pb, ...)");
    }
    if (tensors.size() > names.size())
        throw io_error(std::string(flag) + " '" + directory + "' holds " + std::to_string(tensors.size()) + " " + prefix
                       + " files; the model has " + std::to_string(names.size()) + " " + prefix + "s");
    return tensors;
}

}  // namespace rlflow::cli
