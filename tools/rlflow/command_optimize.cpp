// `rlflow optimize`, and run_optimize: rlflow::optimize as the command line and the Python
// module call it (both compile this file).

#include "command_optimize.hpp"
#include "commands.hpp"

#include <rlflow/optimize.hpp>

namespace rlflow::cli {

OptimizeResult run_optimize(const Graph& original, const OptimizeRequest& request) { return optimize(original, request); }

void optimize_command(OptimizeOptions o) {
    // Every path written is checked before minutes of search.
    check_output_path(o.output, "--output");
    check_output_path(o.report, "--report");
    if (o.cost_cache != "none") check_output_path(o.cost_cache, "--cost-cache");
    o.load.seed = o.seed;
    const Graph original = load_model(o.model, o.load);
    const SigintStop sigint;
    const OptimizeRequest request = optimize_request(o, &interrupted);
    const OptimizeResult result = run_optimize(original, request);
    if (!result.verified()) {
        std::fprintf(stderr, "error: the optimised graph differs from the original (%s); nothing written\n",
                     result.report.verification.detail.c_str());
        throw CLI::RuntimeError(1);
    }
    write_result(result, request, o.output);
    if (!o.report.empty()) write_file_atomically(o.report, result.report.to_json().dump(2) + "\n");
    print_summary(result.report);
    std::printf("wrote %s\n", o.output.c_str());
}

void add_optimize_command(CLI::App& app) {
    auto o = std::make_shared<OptimizeOptions>();
    CLI::App* cmd = app.add_subcommand("optimize", "Rewrite a model into a cheaper equivalent one and write it as ONNX");
    cmd->add_option("model", o->model, "an .onnx file or zoo:NAME")->required();
    cmd->add_option("-o,--output", o->output, "the .onnx file to write")->required();
    add_model_flags(*cmd, o->load);
    cmd->add_option("--search", o->search,
                    "greedy, taso (cost-ordered backtracking), eqsat (equality saturation, then extraction), mf or mb "
                    "(roll out the model-free or model-based agent --agent names; --budget counts its steps)")
        ->check(CLI::IsMember(search_kind_names.names()))->capture_default_str();
    cmd->add_option("--node-limit", o->eqsat.node_limit,
                    "--search eqsat: stop exploring at this many e-nodes (0: 50,000, or 10 per node on larger graphs)")
        ->check(CLI::Range(std::size_t{0}, std::size_t{100'000'000}))->capture_default_str();
    cmd->add_option("--iter-limit", o->eqsat.iteration_limit, "--search eqsat: stop exploring after this many iterations")
        ->check(CLI::Range(std::size_t{0}, std::size_t{1'000'000}))->capture_default_str();
    cmd->add_option("--multi-rounds", o->eqsat.multi_rounds,
                    "--search eqsat: iterations in which rules with several outputs run (Tensat's k_multi)")
        ->check(CLI::Range(std::size_t{0}, std::size_t{1'000'000}))->capture_default_str();
    cmd->add_option_function<std::string>(
           "--multi-schedule", [o](const std::string& v) { o->eqsat.multi_schedule = search::multi_schedule_names.parse(v, "--multi-schedule"); },
           "--search eqsat: when the --multi-rounds run: first (the first iterations, as Tensat; default) or "
           "saturated (each after an iteration in which the single-output rules changed nothing)")
        ->check(CLI::IsMember(search::multi_schedule_names.names()));
    cmd->add_option("--extract", o->extract, "--search eqsat: greedy (cheapest e-node per class, then the local search) or ilp (also CBC's "
                    "integer program from the local search's choice; the cheapest is written)")
        ->check(CLI::IsMember(search::extraction_names.names()))->capture_default_str();
    cmd->add_option("--local-search-seconds", o->eqsat.local.seconds,
                    "--search eqsat: a safety limit in seconds on the local search that improves greedy's choice with "
                    "shared subgraphs counted once (its main limit counts cost evaluations, so it is deterministic; 0: off)")
        ->check(CLI::Range(0.0, 1e6))->capture_default_str();
    cmd->add_option("--ilp-time-limit", o->eqsat.ilp_time_limit_seconds, "--search eqsat --extract ilp: the solver's seconds")
        ->check(CLI::PositiveNumber)->capture_default_str();
    cmd->add_option("--ilp-cycles", o->ilp_cycles,
                    "--search eqsat --extract ilp: filter (leave out e-nodes that close cycles and that the start does not "
                    "choose, after Tensat; no order rows) or order (exact: order rows on the cycles)")
        ->check(CLI::IsMember(search::ilp_cycles_names.names()))->capture_default_str();
    cmd->add_option("--agent", o->agent, "--search mf|mb: the agent's directory, as `rlflow train` wrote it");
    cmd->add_option("--samples", o->samples, "--search mf|mb: sampled rollouts after the greedy one")
        ->check(CLI::Range(std::size_t{0}, std::size_t{100'000}))->capture_default_str();
    cmd->add_option("--agent-stop", o->agent_stop,
                    "--search mf|mb: auto (noop for an agent trained with a latency --reward, else limit), limit (roll on "
                    "past the agent's NO-OP to the step limit, keeping the cheapest graph met) or noop (a rollout ends at "
                    "the agent's NO-OP, as in training; an agent trained on latency offers where it ended first, and the "
                    "guard times it whatever the cost model says)")
        ->check(CLI::IsMember(agent_stop_names.names()))->capture_default_str();
    cmd->add_option("--plan", o->plan,
                    "--search mf|mb: none (rollouts only), mcts (then a tree search over rewrites guided by the agent's "
                    "probabilities and value estimates, with the rest of --budget; the cheapest graph met is kept) or eqsat "
                    "(then equality saturation from the rollouts' cheapest graph, as --search eqsat at its defaults) or grow (then "
                    "the agent grows an e-graph from that graph, adding one rule's matches a step, for --grow-steps steps, and "
                    "the ILP extracts)")
        ->check(CLI::IsMember(rl::plan_kind_names.names()))->capture_default_str();
    cmd->add_option("--simulations", o->simulations, "--plan mcts: simulations before each step the search commits to")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1'000'000}))->capture_default_str();
    cmd->add_option("--grow-steps", o->grow_steps, "--plan grow: growth steps at most, each adding the matches of the rule the agent chooses")
        ->check(CLI::Range(std::size_t{1}, std::size_t{100'000}))->capture_default_str();
    add_target_flags(*cmd, o->where);
    cmd->add_option("--propose", o->propose,
                    "price models whose cheapest graphs the guard times besides the target's, the fastest measured being "
                    "written: auto (analytic:cpu and analytic:v100, and nchwc-groups, for an ort-cpu target), none, or a list "
                    "of cpu, ort, cudnn, analytic:PRESET and nchwc-groups (grouped convolutions widened to ONNX Runtime's "
                    "NCHWc block)")
        ->delimiter(',')->capture_default_str();
    cmd->add_option("--guard", o->guard,
                    "time the input and the best candidates whole and write a candidate only if it is faster: auto (ONNX "
                    "Runtime for an ort-cpu target when it is installed, the CUDA executor for a cuda target), ort, cuda or none")
        ->check(CLI::IsMember(opt::guard_mode_names.names()))->capture_default_str();
    cmd->add_option("--guard-levels", o->guard_levels,
                    "further ONNX Runtime levels the guard times at, where the written model must not be slower (the "
                    "target's own level, where it must be faster, is always timed first)")
        ->check(CLI::IsMember(opt::ort_level_names));
    cmd->add_option("--guard-candidates", o->guard_candidates,
                    "how many candidates the guard times at most: distinct graphs taken in turn from each price model's "
                    "cheapest (each model searches for this many)")
        ->check(CLI::Range(std::size_t{1}, most_guard_candidates))->capture_default_str();
    cmd->add_option("--guard-rounds", o->guard_rounds, "interleaved timed runs of each model")
        ->check(CLI::Range(fewest_guard_rounds, most_guard_rounds))->capture_default_str();
    constexpr std::size_t largest_budget = 1'000'000'000;
    cmd->add_option("--budget", o->budget,
                    "most expansions (taso) or rewrites (greedy); 0: 1000, or one per 8 nodes on larger graphs")
        ->check(CLI::Range(std::size_t{0}, largest_budget))->capture_default_str();
    cmd->add_option("--memory-limit", o->memory_limit_mb,
                    "megabytes the search may hold beyond its working graph (the report's peak_search_bytes); "
                    "past it the search stops with the best graph so far (0: no limit)")
        ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 30))->capture_default_str();
    cmd->add_option("--alpha", o->alpha, "taso keeps graphs costing below alpha x the best")
        ->check(CLI::PositiveNumber)->capture_default_str();
    cmd->add_option("--time-limit", o->time_limit, "seconds; stop with the best graph so far (0: none)")
        ->check(CLI::Range(0.0, 1e9))->capture_default_str();
    cmd->add_option("--rules", o->rules,
                    "default (built-in + generated library), builtin, or a rules file (text or binary)")
        ->capture_default_str();
    cmd->add_option("--ledger", o->ledger,
                    "the rule ledger: auto (the one shipped for ort-cpu at level all, applied to the default rules there under "
                    "the target's own prices), "
                    "none, or a ledger file from `rules measure`; families that never paid in it are left out and "
                    "candidates are timed in the order it expects")
        ->capture_default_str();
    cmd->add_option("--report", o->report, "write a JSON report here");
    cmd->add_option("--cost-cache", o->cost_cache,
                    "read op costs from, and save them to, this file ('none': no cache; default for measuring backends: "
                    "~/.cache/rlflow)");
    cmd->add_option("--verify-trials", o->verify_trials, "random input sets the result is checked on")
        ->check(CLI::PositiveNumber)->capture_default_str();
    cmd->add_option("--seed", o->seed, "seed of the verification inputs and of a zoo model's weights")
        ->capture_default_str();
    CLI::Option* fused = cmd->add_flag("--fused-conv-ms", o->save.fused_conv_microsoft,
                                       "write fused convolutions as com.microsoft.FusedConv (ONNX Runtime) instead of "
                                       "Conv + activation; the report's needs_onnxruntime says so");
    cmd->add_flag("--portable", o->portable,
                  "write standard ONNX ops only, for any runtime: no ONNX Runtime contrib op (refuses --fused-conv-ms, "
                  "and an input that already holds one)")
        ->excludes(fused);
    cmd->callback([o] { optimize_command(*o); });
}

}  // namespace rlflow::cli
