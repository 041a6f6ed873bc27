#pragma once
// The commands of the rlflow program, each compiled in its own file (command_*.cpp) and
// added to the program by main.cpp.

#include <CLI/CLI.hpp>

namespace rlflow::cli {

void add_info_command(CLI::App& app);
void add_zoo_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_weights_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_optimize_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_rules_command(CLI::App& app);
/// `rules measure`, under the `rules` command.
void add_measure_command(CLI::App& rules);
void add_costs_command(CLI::App& app);

}  // namespace rlflow::cli
