// The commands on one model: `rlflow info`, `zoo`, `convert`, `weights` and `run`.

#include "command_convert.hpp"
#include "command_info.hpp"
#include "command_run.hpp"
#include "command_zoo.hpp"
#include "commands.hpp"

namespace rlflow::cli {

void add_info_command(CLI::App& app) {
    auto options = std::make_shared<InfoOptions>();
    CLI::App* cmd = app.add_subcommand("info", "Print node count, op histogram, parameters, FLOPs and memory");
    cmd->add_option("model", options->model, "an .onnx file or zoo:NAME")->required();
    add_model_flags(*cmd, options->load);
    cmd->add_flag("--json", options->json, "print JSON instead of text");
    cmd->callback([options] {
        const Graph g = load_model(options->model, options->load);
        g.validate();
        const GraphStatistics s = graph_statistics(g);
        if (options->json) std::cout << info_json(options->model, g, s).dump(2) << "\n";
        else print_info_text(options->model, g, s);
    });
}

void add_zoo_command(CLI::App& app) {
    CLI::App* zoo = app.add_subcommand("zoo", "The built-in model zoo");
    zoo->require_subcommand(1);
    CLI::App* list = zoo->add_subcommand("list", "List the zoo models (use them as zoo:NAME)");
    list->callback([] {
        for (const auto& entry : models::zoo_entries())
            std::printf("%-16s %.*s\n", std::string(entry.name).c_str(), static_cast<int>(entry.description.size()),
                        entry.description.data());
    });
}

void add_convert_command(CLI::App& app) {
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

void add_weights_command(CLI::App& app) {
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

void add_run_command(CLI::App& app) {
    auto o = std::make_shared<RunOptions>();
    CLI::App* cmd = app.add_subcommand("run", "Run a model in the reference executor");
    cmd->add_option("model", o->model, "an .onnx file or zoo:NAME")->required();
    add_model_flags(*cmd, o->load);
    cmd->add_option("--inputs", o->inputs, "directory with input_N.pb tensors (default: seeded random inputs)");
    cmd->add_option("--expect", o->expect, "directory with output_N.pb reference tensors to compare with");
    cmd->add_option("--rtol", o->rtol, "relative tolerance for --expect");
    cmd->add_option("--atol", o->atol, "absolute tolerance for --expect");
    cmd->add_option("--seed", o->seed, "seed for random weights and inputs");
    cmd->callback([o] {
        check_input_directory(o->inputs, "--inputs");
        check_input_directory(o->expect, "--expect");
        o->load.seed = o->seed;
        Graph g = load_model(o->model, o->load);
        exec::fill_random_weights(g, o->seed);
        std::vector<std::string> input_names, output_names;
        for (const NodeId id : g.inputs()) input_names.push_back(g.node(id).name);
        for (const auto& out : g.outputs()) output_names.push_back(out.name);
        // Both directories are read, and their files counted, before the model runs.
        const auto inputs = o->inputs.empty() ? exec::random_inputs(g, o->seed)
                                              : load_tensor_directory(o->inputs, "input", input_names, "--inputs");
        const auto expected = o->expect.empty() ? std::vector<Tensor>{}
                                                : load_tensor_directory(o->expect, "output", output_names, "--expect");
        const auto start = std::chrono::steady_clock::now();
        const exec::RunResult result = exec::Executor{}.run(g, inputs);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        std::printf("ran %s in %.1f ms, peak activations %s\n", o->model.c_str(), ms,
                    human_bytes(static_cast<double>(result.peak_activation_bytes)).c_str());
        for (std::size_t i = 0; i < result.outputs.size(); ++i)
            std::printf("output %zu '%s': %s\n", i, g.outputs()[i].name.c_str(), result.outputs[i].type().to_string().c_str());
        if (!o->expect.empty() && !compare_outputs(result.outputs, expected, *o))
            throw CLI::RuntimeError("outputs differ from the reference", 1);
    });
}

}  // namespace rlflow::cli
