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

inline void add_convert_command(CLI::App& app) {
    auto options = std::make_shared<ConvertOptions>();
    CLI::App* cmd = app.add_subcommand("convert", "Import a model and export it again, with no rewriting");
    cmd->add_option("input", options->input, "an .onnx file or zoo:NAME")->required();
    cmd->add_option("output", options->output, "the .onnx file to write")->required();
    add_model_flags(*cmd, options->load);
    cmd->add_flag("--fused-conv-ms", options->save.fused_conv_microsoft,
                  "write fused convolutions as com.microsoft.FusedConv");
    cmd->add_option("--opset", options->save.opset,
                    "default-domain opset to write, " + onnx_io::supported_opset_range() + " (default: the model's)")
        ->check(CLI::Range(onnx_io::min_supported_opset, onnx_io::max_supported_opset));
    cmd->add_flag("--no-check", options->no_check, "skip the ONNX checker on the written model");
    cmd->add_option("--seed", options->load.seed, "seed of a zoo model's random weights")->capture_default_str();
    cmd->callback([options] {
        check_output_path(options->output, "output");
        const Graph g = load_model(options->input, options->load);
        options->save.check = !options->no_check;
        onnx_io::save_onnx(g, options->output, options->save);
        std::printf("wrote %s (%zu nodes)\n", options->output.c_str(), g.num_nodes());
    });
}

struct WeightsOptions {
    std::string input;
    std::string output;
    std::vector<std::string> data_inputs;
    std::uint64_t seed = 0;
};

inline void add_weights_command(CLI::App& app) {
    auto options = std::make_shared<WeightsOptions>();
    CLI::App* cmd = app.add_subcommand(
        "weights", "Give a weight-free ONNX export (export_params=False) seeded random weights, changing nothing else");
    cmd->add_option("input", options->input, "the weight-free .onnx file")->required();
    cmd->add_option("output", options->output, "the .onnx file to write")->required();
    cmd->add_option("--data-inputs", options->data_inputs, "graph inputs that carry data (the rest are parameters)")
        ->required();
    cmd->add_option("--seed", options->seed, "random seed");
    cmd->callback([options] {
        check_model_file(options->input);
        check_output_path(options->output, "output");
        onnx_io::pb::ModelProto model = onnx_io::parse_model(onnx_io::read_file(options->input), options->input);
        onnx_io::ImportOptions import;
        import.data_inputs = options->data_inputs;
        Graph g = onnx_io::import_model(model, import, options->input);
        exec::fill_random_weights(g, options->seed);
        const std::size_t attached = onnx_io::attach_weights(model, g);
        write_file_atomically(options->output, model.SerializeAsString());
        std::printf("wrote %s (%zu parameters given random weights)\n", options->output.c_str(), attached);
    });
}

}  // namespace rlflow::cli
