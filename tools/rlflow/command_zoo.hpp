#pragma once
// `rlflow zoo list`: the built-in models.

#include <rlflow/models/zoo.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>

namespace rlflow::cli {

inline void add_zoo_command(CLI::App& app) {
    CLI::App* zoo = app.add_subcommand("zoo", "The built-in model zoo");
    zoo->require_subcommand(1);
    CLI::App* list = zoo->add_subcommand("list", "List the zoo models (use them as zoo:NAME)");
    list->callback([] {
        for (const auto& entry : models::zoo_entries())
            std::printf("%-16s %.*s\n", std::string(entry.name).c_str(), static_cast<int>(entry.description.size()),
                        entry.description.data());
    });
}

}  // namespace rlflow::cli
