// `rlflow rules generate|verify|stats` and `rlflow rules measure`.

#include "command_rules.hpp"
#include "command_rules_measure.hpp"
#include "commands.hpp"

namespace rlflow::cli {

void add_rules_command(CLI::App& app) {
    auto o = std::make_shared<RulesOptions>();
    CLI::App* rules = app.add_subcommand("rules", "Generate, verify and inspect substitution rules");
    rules->require_subcommand(1);
    CLI::App* generate = rules->add_subcommand("generate", "Enumerate, verify and write substitution rules");
    generate->add_option("-o,--output", o->output, "the rules file to write (.pb binary, .rules text)")->required();
    generate->add_option("--max-ops", o->generator.max_ops, "most ops on a side (default 3)")->check(CLI::Range(1, 4));
    generate->add_option("--ops", o->ops, "generator ops to use, comma-separated (default: TASO's space, every op but the extended ones: "
                         "reducesum1, reducemean1, reducemax1, upsample2)")->delimiter(',');
    generate->add_option("--jobs", o->generator.jobs, "worker threads")->check(CLI::PositiveNumber);
    generate->add_option("--seed", o->generator.seed, "seed of the exact and float inputs");
    generate->add_option("--timeout-ms", o->generator.proof_timeout_ms, "Z3 time limit per rule");
    generate->add_flag("--no-prove", o->no_prove, "numeric checks only (rules are 'tested')");
    generate->add_flag("--keep-builtin", o->keep_builtin,
                       "keep rules a built-in rule already does with the same result (pruned by default)");
    generate->add_option("--report", o->report, "write a JSON report here");
    generate->callback([o] { generate_command(*o); });
    CLI::App* verify = rules->add_subcommand("verify", "Check every rule of a file again; exit 2 at the first that fails");
    verify->add_option("file", o->file, "a rules file")->required();
    verify->add_option("--jobs", o->generator.jobs, "worker threads")->check(CLI::PositiveNumber);
    verify->add_option("--timeout-ms", o->generator.proof_timeout_ms, "Z3 time limit per rule");
    verify->add_flag("--no-prove", o->no_prove, "numeric checks only");
    verify->callback([o] { verify_command(*o); });
    CLI::App* stats = rules->add_subcommand("stats", "Count a file's rules by side sizes, ops and verification status");
    stats->add_option("file", o->file, "a rules file")->required();
    stats->add_flag("--json", o->json, "print JSON");
    stats->callback([o] { stats_command(*o); });
}

void add_measure_command(CLI::App& rules) {
    auto o = std::make_shared<MeasureOptions>();
    CLI::App* cmd = rules.add_subcommand("measure", "Time each rule family alone on models at the target: the ledger of what pays");
    cmd->add_option("models", o->models, ".onnx files or zoo:NAME")->required();
    cmd->add_option("-o,--output", o->output, "the ledger (JSON) to write")->required();
    add_model_flags(*cmd, o->load);
    add_target_flags(*cmd, o->where);
    cmd->add_option("--rules", o->rules, "default (built-in + generated library), builtin, or a rules file")->capture_default_str();
    cmd->add_option("--family", o->families, "measure only this family (repeatable; names as the ledger gives them)");
    cmd->add_option("--rounds", o->rounds, "interleaved timed runs of each model")->check(CLI::Range(5, 1000))->capture_default_str();
    cmd->add_option("--min-gain", o->min_gain, "the least relative gain that counts")->check(CLI::Range(0.0, 0.5))->capture_default_str();
    cmd->add_option("--noise-limit", o->noise_limit, "a copy of the input timed further than this from it voids the comparison")
        ->check(CLI::Range(0.0, 0.5))->capture_default_str();
    cmd->add_option("--together", o->batch, "results timed together in one interleaved comparison")
        ->check(CLI::Range(std::size_t{1}, std::size_t{64}))->capture_default_str();
    cmd->add_option("--seed", o->seed, "seed of the inputs and of a zoo model's weights")->capture_default_str();
    cmd->callback([o] { measure_command(*o); });
}

}  // namespace rlflow::cli
