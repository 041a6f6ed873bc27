#pragma once
// `rlflow eval`'s cells: one method on one graph under one seed, run as a child
// `rlflow optimize` process so that a cell that fails (or crashes) is recorded as failed
// and the others go on, and each cell's console output goes to its own log. A finished
// cell is a `.cell.json` written atomically; resuming skips the cells that have one.

#include "progress.hpp"

#include <rlflow/core/atomic_file.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/cost/detail/timing.hpp>
#include <rlflow/cost/ort_worker.hpp>
#include <rlflow/search/guard.hpp>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

extern char** environ;

namespace rlflow::cli {

/// One cell of the evaluation grid.
struct EvalCell {
    /// The graph as given (zoo:NAME or a file), its short name, and the file optimised.
    std::string graph;
    std::string slug;
    std::filesystem::path input;
    std::string method;
    std::uint64_t seed = 0;
    /// The agent directory (mf and mb), whether it trained on this graph, what it cost.
    std::string agent;
    bool agent_trained_on_graph = false;
    double training_seconds = 0;
    std::size_t training_real_steps = 0;
    /// Where the cell's files go: <stem>.onnx, .json (the optimize report), .log, .cell.json.
    std::filesystem::path stem;

    [[nodiscard]] std::filesystem::path output() const { return path_with(".onnx"); }
    [[nodiscard]] std::filesystem::path report() const { return path_with(".json"); }
    [[nodiscard]] std::filesystem::path log() const { return path_with(".log"); }
    [[nodiscard]] std::filesystem::path record() const { return path_with(".cell.json"); }

private:
    [[nodiscard]] std::filesystem::path path_with(const char* extension) const {
        std::filesystem::path p = stem;
        p += extension;
        return p;
    }
};

/// This program's own executable, to run cells with.
inline std::filesystem::path self_executable() {
    std::error_code ec;
    std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    RLFLOW_EXPECTS(!ec, io_error, "cannot find this program's executable (/proc/self/exe): " + ec.message());
    return exe;
}

/// Runs `args` (args[0] is the program) with stdout and stderr into `log`; its exit code,
/// or 128 + the signal that ended it.
inline int run_logged(const std::vector<std::string>& args, const std::filesystem::path& log) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, STDIN_FILENO);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    RLFLOW_EXPECTS(spawned == 0, io_error, "cannot start " + args[0] + ": " + std::strerror(spawned));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        RLFLOW_EXPECTS(errno == EINTR, io_error, std::string("waiting for a cell's process: ") + std::strerror(errno));
    constexpr int signalled = 128;
    return WIFEXITED(status) ? WEXITSTATUS(status) : signalled + WTERMSIG(status);
}

/// The last non-empty line of a log, to say why a cell failed.
inline std::string last_line(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::string line, last;
    while (std::getline(in, line))
        if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
    return last;
}

/// ONNX Runtime latencies of a cell's input and output, timed interleaved in one session.
struct OrtPair {
    double before_ms = 0;
    double after_ms = 0;
    /// The median of the paired ratios after / before.
    double ratio = 0;
    /// The guard's sign test on the paired runs (search/guard.hpp): rounds the output won,
    /// rounds with a sign, the one-sided p-values, and whether it cannot tell the output
    /// from its input (neither faster nor slower at the guard's significance and least gain).
    std::size_t wins = 0;
    std::size_t rounds = 0;
    double p_faster = 1;
    double p_slower = 1;
    bool within_noise = true;
};

/// Times `before` and `after` interleaved: `runs` rounds after `warmup`.
inline OrtPair time_pair(cost::OrtWorker& worker, const std::filesystem::path& before, const std::filesystem::path& after,
                         const cost::OrtSettings& settings, int warmup, int runs, std::uint64_t seed) {
    cost::OrtTimingRequest request;
    request.settings = settings;
    request.warmup = warmup;
    request.runs = runs;
    request.interleave = true;
    request.seed = seed;
    const std::vector<std::filesystem::path> files{before, after};
    const std::vector<cost::ModelTiming> timed = worker.time(files, request);
    for (const cost::ModelTiming& t : timed)
        RLFLOW_EXPECTS(t.ok(), io_error, "ONNX Runtime could not time " + before.string() + " against " + after.string() + ": " + t.error);
    const search::GuardOptions test;
    const search::CandidateVerdict v =
        search::detail::compare(search::LevelTimings{settings.level, {timed[0].runs_ms, timed[1].runs_ms}}, 0, test, test.significance);
    return {.before_ms = v.input_median_ms, .after_ms = v.candidate_median_ms, .ratio = v.median_ratio, .wins = v.wins, .rounds = v.rounds,
            .p_faster = v.p_faster, .p_slower = v.p_slower, .within_noise = !v.faster && !v.slower};
}

/// The cell's record: what identifies it, then the optimize report's figures, or the error.
inline nlohmann::json cell_record(const EvalCell& c, int exit_code) {
    nlohmann::json j;
    j["graph"] = c.graph;
    j["method"] = c.method;
    j["seed"] = c.seed;
    j["input"] = c.input.string();
    j["log"] = c.log().string();
    if (!c.agent.empty()) {
        j["agent"] = c.agent;
        j["agent_trained_on_graph"] = c.agent_trained_on_graph;
        j["training_seconds"] = c.training_seconds;
        j["training_real_steps"] = c.training_real_steps;
    }
    if (exit_code != 0) {
        j["status"] = "error";
        j["exit_code"] = exit_code;
        j["error"] = last_line(c.log());
        return j;
    }
    std::ifstream in(c.report());
    const nlohmann::json report = nlohmann::json::parse(in);
    j["status"] = "ok";
    j["output"] = c.output().string();
    j["report"] = c.report().string();
    for (const char* key : {"cost_backend", "cost_before_ms", "cost_after_ms", "memory_before_bytes", "memory_after_bytes", "seconds",
                            "rewrites", "verified", "max_abs_diff", "written", "stop_reason"})
        j[key] = report.at(key);
    j["speedup"] = report.at("cost_before_ms").get<double>() / report.at("cost_after_ms").get<double>();
    if (report.contains("real_steps")) j["inference_steps"] = report.at("real_steps");
    return j;
}

}  // namespace rlflow::cli
