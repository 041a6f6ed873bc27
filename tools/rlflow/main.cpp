// The rlflow command-line program. Exit codes: 0 success, 2 bad input (any rlflow::error
// or a usage error), 1 internal error. Each command is compiled in its own file
// (command_*.cpp), so that the program builds on several cores and the optimize pipeline
// is compiled once for it and the Python module.

#include "commands.hpp"
#include "ranks.hpp"

#include <rlflow/core/error.hpp>

#include <new>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

namespace {
constexpr int exit_ok = 0;
constexpr int exit_internal = 1;
constexpr int exit_bad_input = 2;
}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"rlflow: faster neural-network graphs through verified rewrites chosen by reinforcement learning"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "rlflow 0.1.0");
    rlflow::cli::add_info_command(app);
    rlflow::cli::add_zoo_command(app);
    rlflow::cli::add_convert_command(app);
    rlflow::cli::add_weights_command(app);
    rlflow::cli::add_run_command(app);
    rlflow::cli::add_optimize_command(app);
    rlflow::cli::add_train_command(app);
    rlflow::cli::add_eval_command(app);
    rlflow::cli::add_rules_command(app);
    rlflow::cli::add_measure_command(*app.get_subcommand("rules"));
    rlflow::cli::add_costs_command(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::RuntimeError& e) {  // a check that ran and failed, e.g. `run --expect`
        std::fprintf(stderr, "error: %s\n", e.what());
        return rlflow::cli::fail_ranks(e.get_exit_code());
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        return exit_bad_input;
    } catch (const rlflow::error& e) {
        std::fprintf(stderr, "error: %s\n", e.message().c_str());
        return rlflow::cli::fail_ranks(exit_bad_input);
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "error: out of memory: the model or job needs more memory than this machine gave rlflow\n");
        return rlflow::cli::fail_ranks(exit_bad_input);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "internal error: %s\n", e.what());
        return rlflow::cli::fail_ranks(exit_internal);
    }
    return exit_ok;
}
