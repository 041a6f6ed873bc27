// `rlflow eval`.

#include "command_eval.hpp"
#include "commands.hpp"

namespace rlflow::cli {

void add_eval_command(CLI::App& app) {
    auto o = std::make_shared<EvalOptions>();
    CLI::App* cmd = app.add_subcommand("eval", "Run every method on every graph under every seed, and write results.json and results.md");
    cmd->add_option("--graphs", o->graphs, "models (zoo:NAME or .onnx files)")->required();
    cmd->add_option("--methods", o->methods, "greedy, taso, eqsat, mf, mb (comma-separated)")->delimiter(',')->capture_default_str();
    cmd->add_option("--agent", o->agents, "trained agents (directories `rlflow train` wrote), for mf and mb");
    cmd->add_option("--seeds", o->seeds, "seeds 1..N of each cell")->check(CLI::Range(std::size_t{1}, std::size_t{1000}))->capture_default_str();
    cmd->add_option("--out", o->out, "the output folder (cells, inputs, results.json, results.md)")->required();
    cmd->add_flag("--ort", o->ort, "also time each result against its input in ONNX Runtime");
    cmd->add_option("--ort-level", o->ort_levels, "ONNX Runtime optimisation levels to time at (comma-separated); the first also prices --cost ort")
        ->delimiter(',')->check(CLI::IsMember(opt::ort_level_names))->capture_default_str();
    cmd->add_option("--ort-threads", o->ort_threads, "ONNX Runtime threads (default: this machine's physical cores, " + std::to_string(o->ort_threads) + ")")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--ort-runs", o->ort_runs, "--ort: interleaved timed runs of each pair")->check(CLI::Range(3, 1000))->capture_default_str();
    cmd->add_option("--time-limit", o->time_limit, "seconds per cell's search (0: none)")->check(CLI::Range(0.0, 1e9))->capture_default_str();
    cmd->add_option("--target", o->target, "the target of every cell (as optimize --target)")
        ->check(CLI::IsMember({"auto", "ort-cpu", "cuda"}))->capture_default_str();
    cmd->add_option("--cost", o->cost, "the cost backend of every cell (as optimize --cost: auto, analytic, cpu, ort, cudnn or table:FILE)")
        ->capture_default_str();
    cmd->add_option("--device", o->device, "analytic preset (as optimize --device)")->capture_default_str();
    cmd->add_option("--budget", o->budget, "as optimize --budget")->check(CLI::Range(std::size_t{1}, std::size_t{1'000'000'000}))->capture_default_str();
    cmd->add_option("--rules", o->rules, "as optimize --rules")->capture_default_str();
    cmd->add_option("--cost-cache", o->cost_cache, "as optimize --cost-cache");
    cmd->callback([o] {
        if (o->cost != "auto" && o->cost != "analytic") (void)opt::parse_cost_choice(o->cost);  // refused before any cell runs
        dispatch_eval(*o);
    });
}

}  // namespace rlflow::cli
