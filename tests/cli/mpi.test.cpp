// `mpirun -np K rlflow train|eval|rules generate ...` as a user runs them
// (docs/scale-out.md): the ranks train one agent (model-free or model-based) that rank 0 logs and
// saves, a run resumes with another rank count, a rank that dies or fails stops the others
// with an error instead of leaving them waiting, and eval and rules generate write what
// one process writes.
#include "support.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace rlflow::cli_test;

namespace {

/// Whether mpiexec is here (rlflow built with MPI); says "skipped" if not.
bool mpi_built() {
#if defined(RLFLOW_MPIEXEC)
    return true;
#else
    MESSAGE("skipped: rlflow was built without MPI (mpi-default-dev, RLFLOW_ENABLE_MPI)");
    return false;
#endif
}

/// Seconds a launch may take before the test calls it hung.
constexpr int launch_limit_seconds = 300;

/// The prefix that runs a command on `ranks` ranks: as root too (CI runs in a container),
/// on fewer cores than ranks, and never past launch_limit_seconds.
std::string on_ranks(int ranks) {
#if defined(RLFLOW_MPIEXEC)
    return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 timeout "
           + std::to_string(launch_limit_seconds) + " " + RLFLOW_MPIEXEC + " -n " + std::to_string(ranks);
#else
    return "false " + std::to_string(ranks);
#endif
}

constexpr const char* mpi_train_args = "train --graph zoo:squeezenet1_1 --cost analytic --rollout-steps 32 --seed 5 --jobs 1";

std::vector<nlohmann::json> log_lines(const std::filesystem::path& dir) {
    std::ifstream log(dir / "train.jsonl");
    std::vector<nlohmann::json> lines;
    for (std::string line; std::getline(log, line);) lines.push_back(nlohmann::json::parse(line));
    return lines;
}

}  // namespace

TEST_CASE("train on 2 ranks logs the rank count, matches one process's first update, and resumes on another rank count") {
    if (!mpi_built()) return;
    const ScratchDir scratch("rlflow-cli-mpi-train");
    const std::string two = scratch.file("two"), one = scratch.file("one");
    const Result spread = run_cli(std::string(mpi_train_args) + " --updates 2 --checkpoint " + two, true, on_ranks(2));
    INFO(spread.output);
    REQUIRE(spread.exit_code == 0);
    CHECK(spread.output.find("2 ranks, 1 of 2 environments each") != std::string::npos);
    REQUIRE(run_cli(std::string(mpi_train_args) + " --updates 1 --checkpoint " + one).exit_code == 0);

    const std::vector<nlohmann::json> a = log_lines(one), b = log_lines(two);
    REQUIRE(a.size() == 1);
    REQUIRE(b.size() == 2);
    CHECK(a[0]["ranks"] == 1);
    CHECK(b[0]["ranks"] == 2);
    // The same rollout (the same steps and episodes); the update within float rounding.
    CHECK(b[0]["env_steps"] == a[0]["env_steps"]);
    CHECK(b[0]["episodes_ended"] == a[0]["episodes_ended"]);
    CHECK(b[0]["entropy"].get<double>() == doctest::Approx(a[0]["entropy"].get<double>()).epsilon(1e-5));
    CHECK(b[0]["value_loss"].get<double>() == doctest::Approx(a[0]["value_loss"].get<double>()).epsilon(1e-4));

    // One process continues the 2-rank agent, then 2 ranks continue that.
    const Result alone = run_cli(std::string(mpi_train_args) + " --updates 1 --resume --checkpoint " + two);
    INFO(alone.output);
    REQUIRE(alone.exit_code == 0);
    const Result again = run_cli(std::string(mpi_train_args) + " --updates 1 --resume --checkpoint " + two, true, on_ranks(2));
    INFO(again.output);
    REQUIRE(again.exit_code == 0);
    CHECK(again.output.find("resuming at update 3") != std::string::npos);
    const std::vector<nlohmann::json> resumed = log_lines(two);
    REQUIRE(resumed.size() == 4);
    CHECK(resumed[2]["update"] == 3);
    CHECK(resumed[2]["ranks"] == 1);
    CHECK(resumed[3]["update"] == 4);
    CHECK(resumed[3]["ranks"] == 2);
    CHECK(resumed[3]["env_steps"].get<std::size_t>() == 4 * a[0]["env_steps"].get<std::size_t>());
}

TEST_CASE("train --agent mb on 2 ranks spends the real-step budget of all ranks, logs the rank count and saves one agent") {
    if (!mpi_built()) return;
    const ScratchDir scratch("rlflow-cli-mpi-mb");
    const std::string agent = scratch.file("mb");
    const Result trained = run_cli("train --agent mb --graph zoo:squeezenet1_1 --cost analytic --seed 2 --real-steps 700 --dream-steps 512 "
                                   "--jobs 1 --checkpoint " + agent,
                                   true, on_ranks(2));
    INFO(trained.output);
    REQUIRE(trained.exit_code == 0);
    CHECK(trained.output.find("; 2 ranks") != std::string::npos);
    const std::vector<nlohmann::json> lines = log_lines(agent);
    // As one process: a quarter of the budget (175) by the random agent and 500 by the
    // controller, then the 25 left; here shared by the ranks.
    REQUIRE(lines.size() == 2);
    CHECK(lines[0]["real_steps"] == 675);
    CHECK(lines[1]["real_steps"] == 700);
    CHECK(lines[1]["ranks"] == 2);
    CHECK(lines[1]["dream_steps"].get<int>() >= 2 * 512);
    CHECK(std::isfinite(lines[1]["model"]["total"].get<double>()));
    std::ifstream in(scratch.path / "mb" / "agent.json");
    const nlohmann::json state = nlohmann::json::parse(in);
    CHECK(state["real_steps"] == 700);
}

TEST_CASE("a rank killed during training stops the others within 60 s with a non-zero exit, and the checkpoint stays intact") {
    if (!mpi_built()) return;
    const ScratchDir scratch("rlflow-cli-mpi-kill");
    const std::string agent = scratch.file("agent"), out = scratch.file("out.txt");
    constexpr int stop_limit_seconds = 60;
    // Start 2 ranks (under `timeout`, whose child is mpiexec), wait for their first
    // checkpoint, kill one (mpiexec's second child) and time how long the launch takes to
    // end. Prints "exit CODE after MILLISECONDS ms".
    // Children are found in /proc, times taken with date: no procps or bc needed.
    const std::string script =
        "children() { for d in /proc/[0-9]*; do read -r pid _ _ ppid _ < $d/stat 2>/dev/null && [ \"$ppid\" = \"$1\" ] && echo $pid; done; }\n"
        + on_ranks(2) + " " + RLFLOW_CLI_PATH + " " + mpi_train_args + " --updates 1000000 --checkpoint-every 1 --checkpoint " + agent
        + " > " + out + " 2>&1 & launcher=$!\n"
        + "for i in $(seq 240); do [ -f " + agent + "/agent.json ] && break; sleep 0.5; done\n"
        + "mpiexec=$(children $launcher | head -1); victim=$(children \"$mpiexec\" | sort -n | sed -n 2p)\n"
        + "[ -n \"$victim\" ] || { kill $launcher; echo no rank; exit 1; }\n"
        + "start=$(date +%s%N); kill -9 $victim; wait $launcher; code=$?; end=$(date +%s%N)\n"
        + "echo exit $code after $(( (end - start) / 1000000 )) ms\n";
    const std::string script_file = scratch.file("kill.sh");
    std::ofstream(script_file) << script;
    FILE* pipe = popen(("bash " + script_file).c_str(), "r");
    REQUIRE(pipe != nullptr);
    char text[256] = {};
    const std::string verdict = std::fgets(text, sizeof text, pipe) ? text : "";
    pclose(pipe);
    std::ifstream log(out);
    const std::string output{std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>()};
    INFO(verdict);
    INFO(output);
    int code = 0;
    long milliseconds = 0;
    REQUIRE(std::sscanf(verdict.c_str(), "exit %d after %ld ms", &code, &milliseconds) == 2);
    const double seconds = static_cast<double>(milliseconds) / 1000;
    MESSAGE("mpiexec ended ", seconds, " s after the kill, with exit code ", code);
    CHECK(code != 0);
    CHECK(code != 124);  // not stopped by the hang limit
    CHECK(seconds < stop_limit_seconds);
    CHECK(output.find("signal 9") != std::string::npos);
    // The last checkpoint is whole: one process resumes it.
    const Result resumed = run_cli(std::string(mpi_train_args) + " --updates 1 --resume --checkpoint " + agent);
    INFO(resumed.output);
    CHECK(resumed.exit_code == 0);
}

TEST_CASE("bad input on 2 ranks is reported and ends every rank with exit code 2") {
    if (!mpi_built()) return;
    const ScratchDir scratch("rlflow-cli-mpi-bad");
    const Result r = run_cli("train --graph " + scratch.file("missing.onnx") + " --checkpoint " + scratch.file("agent"), true, on_ranks(2));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("missing.onnx") != std::string::npos);
}

TEST_CASE("rules generate on 2 ranks writes the same file as one process, byte for byte") {
    if (!mpi_built()) return;
    const ScratchDir scratch("rlflow-cli-mpi-rules");
    for (const char* file : {"rules.rules", "rules.pb"}) {
        CAPTURE(file);
        const std::string args = std::string("rules generate --max-ops 2 --jobs 1 --seed 4 -o ");
        const Result one = run_cli(args + scratch.file(std::string("one_") + file));
        const Result two = run_cli(args + scratch.file(std::string("two_") + file) + " --report " + scratch.file("report.json"), true,
                                   on_ranks(2));
        INFO(one.output);
        INFO(two.output);
        REQUIRE(one.exit_code == 0);
        REQUIRE(two.exit_code == 0);
        std::ifstream a(scratch.file(std::string("one_") + file), std::ios::binary), b(scratch.file(std::string("two_") + file), std::ios::binary);
        const std::string bytes_one{std::istreambuf_iterator<char>(a), std::istreambuf_iterator<char>()};
        const std::string bytes_two{std::istreambuf_iterator<char>(b), std::istreambuf_iterator<char>()};
        CHECK(bytes_one.size() > 1000);
        CHECK(bytes_one == bytes_two);
        std::ifstream report(scratch.file("report.json"));
        CHECK(nlohmann::json::parse(report)["ranks"] == 2);
    }
}

TEST_CASE("eval on 2 ranks runs every cell once and writes the results one process writes, but for timings") {
    if (!mpi_built()) return;
    const ScratchDir scratch("rlflow-cli-mpi-eval");
    const std::string small_export = std::string(RLFLOW_SOURCE_DIR) + "/tests/data/opaque/conv_sin_branches.onnx";
    const auto args = [&](const std::string& out) {
        return "eval --graphs zoo:squeezenet1_1 " + small_export + " --methods greedy,taso --seeds 2 --cost analytic --device v100 "
               "--budget 50 --out " + out;
    };
    const Result one = run_cli(args(scratch.file("one")));
    const Result two = run_cli(args(scratch.file("two")), true, on_ranks(2));
    INFO(one.output);
    INFO(two.output);
    REQUIRE(one.exit_code == 0);
    REQUIRE(two.exit_code == 0);
    CHECK(two.output.find("8 of 8 cells done (0 kept from an earlier run, on 2 ranks)") != std::string::npos);
    const auto cells = [&](const std::string& name) {
        std::ifstream in(scratch.path / name / "results.json");
        nlohmann::json results = nlohmann::json::parse(in);
        // What differs between runs: timings, and the folder the files are in.
        for (nlohmann::json& c : results["cells"])
            for (const char* key : {"seconds", "input", "log", "output", "report"}) c.erase(key);
        return results["cells"];
    };
    const nlohmann::json a = cells("one"), b = cells("two");
    REQUIRE(a.size() == 8);
    CHECK(b == a);
}
