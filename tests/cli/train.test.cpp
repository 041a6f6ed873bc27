// `rlflow train` and `optimize --search mf` as a user runs them: an agent directory with
// a training log, an exact resume, damaged or foreign checkpoints refused with exit code 2,
// and the trained agent optimising a model.
#include "support.hpp"

#include <rlflow/rewrite/default_rules.hpp>
#include <rlflow/rl/model_based/controller.hpp>
#include <rlflow/search/ledger.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace rlflow::cli_test;

namespace {

constexpr const char* train_args = "train --graph zoo:squeezenet1_1 zoo:resnet18 --cost analytic --rollout-steps 32 --seed 3";

/// The lines of an agent's train.jsonl, without their timings.
std::vector<nlohmann::json> log_without_seconds(const std::string& agent) {
    std::ifstream log(agent + "/train.jsonl");
    std::vector<nlohmann::json> lines;
    for (std::string line; std::getline(log, line);) {
        nlohmann::json j = nlohmann::json::parse(line);
        for (const char* timing : {"seconds", "rollout_seconds", "update_seconds"}) j.erase(timing);
        lines.push_back(std::move(j));
    }
    return lines;
}

/// Starts `rlflow <arguments>` (its output discarded) and SIGKILLs it `delay` after it
/// (re)writes `file`, unless it ends first; returns whether it was killed.
bool kill_after(const std::string& arguments, const std::filesystem::path& file, std::chrono::milliseconds delay) {
    const auto written = [&] {
        std::error_code ec;
        return std::filesystem::last_write_time(file, ec);
    };
    const auto before = written();
    const std::string command = "exec " + std::string(RLFLOW_CLI_PATH) + " " + arguments + " >/dev/null 2>&1";
    const ::pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    constexpr auto poll = std::chrono::milliseconds(5);
    int status = 0;
    while (written() == before && ::waitpid(pid, &status, WNOHANG) == 0) std::this_thread::sleep_for(poll);
    std::this_thread::sleep_for(delay);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

}  // namespace

TEST_CASE("train killed at random points resumes from its last checkpoint to the agent and log of an uninterrupted run") {
    const ScratchDir dir("rlflow-cli-train-kill");
    constexpr std::size_t updates = 12;
    const std::string args = "train --graph zoo:squeezenet1_1 --cost analytic --rollout-steps 16 --seed 3 --checkpoint-every 1";
    const std::string straight = dir.file("straight"), killed = dir.file("killed");
    REQUIRE(run_cli(args + " --updates " + std::to_string(updates) + " --checkpoint " + straight).exit_code == 0);

    std::mt19937_64 random(5);
    std::uniform_int_distribution<int> delay_ms(0, 200);  // an update and its checkpoint take about 0.15 s here
    std::size_t kills = 0, resumes = 0, done = 0;
    const auto agent_updates = [&] {
        return nlohmann::json::parse(read_file(killed + "/agent.json"))["updates"].get<std::size_t>();
    };
    // Each run, the first and every resumed one, is killed at a random point after it saved
    // its first checkpoint, until one finishes.
    std::string command = args + " --updates " + std::to_string(updates) + " --checkpoint " + killed;
    constexpr std::size_t most_tries = 40;
    for (std::size_t attempt = 0; attempt < most_tries && done < updates; ++attempt) {
        const auto delay = std::chrono::milliseconds(delay_ms(random));
        if (kill_after(command, killed + "/agent.json", delay)) ++kills;
        done = agent_updates();
        REQUIRE(done <= updates);
        command = "train --resume --cost analytic --checkpoint " + killed + " --updates " + std::to_string(updates - done);
        if (done < updates) ++resumes;
    }
    MESSAGE(kills << " kills, " << resumes << " resumes");
    CHECK(kills >= 1);
    REQUIRE(done == updates);
    CHECK(read_file(straight + "/weights.ckpt") == read_file(killed + "/weights.ckpt"));
    const std::vector<nlohmann::json> log = log_without_seconds(killed);
    CHECK(log.size() == updates);  // each update logged once: lines past a checkpoint were dropped on resume
    CHECK(log == log_without_seconds(straight));
}

TEST_CASE("train writes an agent and a log line per update, and a resumed run equals an uninterrupted one bit for bit") {
    const ScratchDir dir("rlflow-cli-train");
    const std::string straight = dir.file("straight"), halves = dir.file("halves");
    const Result full = run_cli(std::string(train_args) + " --updates 4 --checkpoint " + straight);
    REQUIRE_MESSAGE(full.exit_code == 0, full.output);
    CHECK(full.output.find("done after 4 updates") != std::string::npos);

    std::ifstream log(straight + "/train.jsonl");
    std::vector<nlohmann::json> lines;
    for (std::string line; std::getline(log, line);) lines.push_back(nlohmann::json::parse(line));
    REQUIRE(lines.size() == 4);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const nlohmann::json& j = lines[i];
        CHECK(j["update"] == i + 1);
        CHECK(j["env_steps"] == 32 * (i + 1));
        for (const char* key : {"episodes", "mean_return", "entropy", "approx_kl", "clip_fraction", "value_loss",
                                "explained_variance", "seconds", "rollout_seconds", "update_seconds", "final_cost_ratio",
                                "best_cost_ratio", "ranks"})
            CHECK_MESSAGE(j.contains(key), key);
        CHECK(j["entropy"].get<double>() > 0);
        CHECK(j["best_cost_ratio"].contains("zoo:resnet18"));
    }

    REQUIRE(run_cli(std::string(train_args) + " --updates 2 --checkpoint " + halves).exit_code == 0);
    const Result resumed = run_cli("train --resume --updates 2 --cost analytic --checkpoint " + halves);
    REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.output);
    CHECK(resumed.output.find("resuming at update 2") != std::string::npos);
    CHECK(read_file(straight + "/weights.ckpt") == read_file(halves + "/weights.ckpt"));
    auto state = [](const std::string& agent) {
        nlohmann::json j = nlohmann::json::parse(read_file(agent + "/agent.json"));
        j.erase("seconds");
        return j;
    };
    CHECK(state(straight) == state(halves));

    // Training into a directory that holds an agent without --resume is refused.
    const Result again = run_cli(std::string(train_args) + " --updates 1 --checkpoint " + straight);
    CHECK(again.exit_code == 2);
    CHECK(again.output.find("already holds an agent") != std::string::npos);

    // The trained agent optimises a model it was trained on; the result is verified.
    const std::string out = dir.file("sq.onnx"), report = dir.file("sq.json");
    const Result optimised = run_cli("optimize zoo:squeezenet1_1 --search mf --agent " + straight +
                                     " --samples 2 --cost analytic --guard none -o " + out + " --report " + report);
    REQUIRE_MESSAGE(optimised.exit_code == 0, optimised.output);
    const nlohmann::json r = nlohmann::json::parse(read_file(report));
    CHECK(r["search"] == "mf");
    CHECK(r["agent"] == straight);
    CHECK(r["real_steps"].get<int>() > 0);
    CHECK(r["inference_seconds"].get<double>() >= 0);
    CHECK(r["verified"] == true);
    CHECK(r["cost_after_ms"].get<double>() <= r["cost_before_ms"].get<double>() + 1e-9);
    CHECK(std::filesystem::exists(out));

    // With --plan grow, the agent then grows an e-graph from the same rollouts' cheapest
    // graph: never costlier than the rollouts alone, and verified like any result.
    const std::string grown_report = dir.file("grown.json");
    const Result grown = run_cli("optimize zoo:squeezenet1_1 --search mf --agent " + straight + " --samples 2 --plan grow --grow-steps 2 " +
                                 "--cost analytic --guard none -o " + dir.file("grown.onnx") + " --report " + grown_report);
    REQUIRE_MESSAGE(grown.exit_code == 0, grown.output);
    const nlohmann::json g = nlohmann::json::parse(read_file(grown_report));
    CHECK(g["plan"] == "grow");
    CHECK(g["grow_steps"] == 2);
    CHECK(!g.contains("simulations"));
    CHECK(g["verified"] == true);
    CHECK(g["cost_after_ms"].get<double>() <= r["cost_after_ms"].get<double>() * (1 + 1e-9));
}

TEST_CASE("an agent trained under a GPU preset's prices records that target, and using it for the CPU warns and says so in the report") {
    const ScratchDir dir("rlflow-cli-train-target");
    const std::string agent = dir.file("h100");
    const Result trained = run_cli("train --agent mf --graph zoo:squeezenet1_1 --cost analytic --device h100 --rollout-steps 16 "
                                   "--updates 1 --checkpoint " + agent);
    REQUIRE_MESSAGE(trained.exit_code == 0, trained.output);
    CHECK(trained.output.find("for cuda (priced by the analytic h100 preset, not measured)") != std::string::npos);
    const nlohmann::json state = nlohmann::json::parse(read_file(agent + "/agent.json"));
    CHECK(state["target"] == "cuda (priced by the analytic h100 preset, not measured)");
    CHECK(state["cost_backend"] == "analytic:h100");

    // Used with the same prices: no warning, and the report names the target both ways.
    const std::string out = dir.file("sq.onnx"), report = dir.file("sq.json");
    const Result same = run_cli("optimize zoo:squeezenet1_1 --search mf --agent " + agent + " --device h100 --guard none -o " + out
                                + " --report " + report);
    REQUIRE_MESSAGE(same.exit_code == 0, same.output);
    CHECK(same.output.find("was trained for") == std::string::npos);
    const nlohmann::json r = nlohmann::json::parse(read_file(report));
    CHECK(r["agent_target"] == state["target"]);
    CHECK(r["prices_for"] == state["target"]);
    CHECK(r["agent_target_matches"] == true);

    // Used for the CPU's prices: a warning, recorded in the report.
    const Result other = run_cli("optimize zoo:squeezenet1_1 --search mf --agent " + agent + " --cost analytic --guard none -o " + out
                                 + " --report " + report);
    REQUIRE_MESSAGE(other.exit_code == 0, other.output);
    CHECK(other.output.find("warning: the agent in " + agent + " was trained for cuda") != std::string::npos);
    const nlohmann::json k = nlohmann::json::parse(read_file(report));
    CHECK(k["agent_target_matches"] == false);
    CHECK(k["prices_for"].get<std::string>().find("ort-cpu") == 0);
}

TEST_CASE("a missing, damaged, torn or foreign agent is refused with exit code 2 naming what is wrong") {
    const ScratchDir dir("rlflow-cli-train-bad");
    const std::string agent = dir.file("agent");
    REQUIRE(run_cli(std::string(train_args) + " --updates 1 --checkpoint " + agent).exit_code == 0);
    const std::string out = dir.file("out.onnx");
    const auto optimize_with = [&](const std::string& which) {
        return run_cli("optimize zoo:squeezenet1_1 --search mf --cost analytic --guard none --agent " + which + " -o " + out);
    };

    const Result missing = optimize_with(dir.file("nowhere"));
    CHECK(missing.exit_code == 2);
    CHECK(missing.output.find("agent.json") != std::string::npos);
    CHECK(run_cli("optimize zoo:squeezenet1_1 --search mf --cost analytic -o " + out).exit_code == 2);  // no --agent

    // Another rule set: an agent over a rule the rules given lack.
    const std::string json = read_file(agent + "/agent.json");
    nlohmann::json foreign = nlohmann::json::parse(json);
    foreign["rules"][0] = "a_rule_nobody_has";
    std::ofstream(agent + "/agent.json") << foreign.dump();
    const Result other_rules = optimize_with(agent);
    CHECK(other_rules.exit_code == 2);
    CHECK(other_rules.output.find("made for another rule set") != std::string::npos);
    CHECK(other_rules.output.find("a_rule_nobody_has") != std::string::npos);

    // Another feature width.
    nlohmann::json wider = nlohmann::json::parse(json);
    wider["node_features"] = wider["node_features"].get<int>() + 1;
    std::ofstream(agent + "/agent.json") << wider.dump();
    const Result other_width = optimize_with(agent);
    CHECK(other_width.exit_code == 2);
    CHECK(other_width.output.find("node features") != std::string::npos);

    // Damaged JSON, and weights that are not the ones saved with it.
    std::ofstream(agent + "/agent.json") << json.substr(0, json.size() / 2);
    const Result damaged = optimize_with(agent);
    CHECK(damaged.exit_code == 2);
    CHECK(damaged.output.find("agent.json") != std::string::npos);
    CHECK(damaged.output.find("damaged") != std::string::npos);
    std::ofstream(agent + "/agent.json") << json;
    std::string weights = read_file(agent + "/weights.ckpt");
    weights[weights.size() / 2] ^= 0x5a;
    std::ofstream(agent + "/weights.ckpt", std::ios::binary) << weights;
    const Result torn = optimize_with(agent);
    CHECK(torn.exit_code == 2);
    CHECK(torn.output.find("not the file this agent was saved with") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(out));

    // Resuming a damaged agent is refused the same way, and so is an unknown agent kind.
    CHECK(run_cli("train --resume --updates 1 --cost analytic --checkpoint " + agent).exit_code == 2);
    CHECK(run_cli("train --agent wm --graph zoo:squeezenet1_1 --checkpoint " + dir.file("wm")).exit_code == 2);
    // Bad settings are refused before anything is made.
    for (const char* bad : {"--entropy -1", "--learning-rate 0", "--rollout-steps 0", "--time-limit -5"}) {
        const std::string where = dir.file("bad");
        CHECK_MESSAGE(run_cli(std::string(train_args) + " " + bad + " --checkpoint " + where).exit_code == 2, bad);
        CHECK_FALSE(std::filesystem::exists(where));
    }
}

TEST_CASE("train on one thread and on two writes the same agent") {
    const ScratchDir dir("rlflow-cli-train-jobs");
    const std::string one = dir.file("one"), two = dir.file("two");
    const std::string args = std::string(train_args) + " --updates 2 --envs-per-graph 3";
    const Result serial = run_cli(args + " --jobs 1 --checkpoint " + one);
    REQUIRE_MESSAGE(serial.exit_code == 0, serial.output);
    REQUIRE(run_cli(args + " --jobs 2 --checkpoint " + two).exit_code == 0);
    CHECK(read_file(one + "/weights.ckpt") == read_file(two + "/weights.ckpt"));
    const nlohmann::json agent = nlohmann::json::parse(read_file(one + "/agent.json"));
    CHECK(agent["ppo"]["environments_per_graph"] == 3);
    CHECK(agent["episode_actions"].size() == 6);  // 3 environments for each of the 2 graphs
}

TEST_CASE("train --reward ort-latency rewards the ORT latency of whole graphs, writes the fastest graph it timed, and resume keeps to it") {
    if (!ort_installed()) {
        MESSAGE("skipped: ONNX Runtime (node and onnxruntime-node in tools/ort) is not installed");
        return;
    }
    const ScratchDir dir("rlflow-cli-train-latency");
    const std::string agent = dir.file("agent");
    const Result trained = run_cli("train --graph zoo:squeezenet1_1 --cost analytic --reward ort-latency --ort-level extended "
                                   "--rollout-steps 4 --step-limit 2 --updates 1 --checkpoint " + agent);
    REQUIRE_MESSAGE(trained.exit_code == 0, trained.output);
    CHECK(trained.output.find("rewards from ort-latency:") != std::string::npos);
    CHECK(trained.output.find("graphs timed") != std::string::npos);
    // The fastest graph timed is written, loads again, and its latency is no more than the start's.
    const nlohmann::json fastest = nlohmann::json::parse(read_file(agent + "/fastest.json"));
    REQUIRE(fastest.size() == 1);
    CHECK(fastest[0]["graph"] == "zoo:squeezenet1_1");
    CHECK(fastest[0]["fastest_ms"].get<double>() <= fastest[0]["start_ms"].get<double>());
    CHECK(fastest[0]["confirmed_ratio"].get<double>() > 0);  // timed again, against the start
    CHECK(run_cli("info " + fastest[0]["file"].get<std::string>()).exit_code == 0);
    // The timeline has the start first (ratio 1) and the fastest graph at the time fastest.json gives.
    std::istringstream timeline(read_file(agent + "/timed.jsonl"));
    std::vector<nlohmann::json> timed;
    for (std::string line; std::getline(timeline, line);) timed.push_back(nlohmann::json::parse(line));
    REQUIRE(!timed.empty());
    CHECK(timed.front()["ratio"].get<double>() == 1.0);
    CHECK(timed.front()["graph"] == "zoo:squeezenet1_1");
    const auto found = std::find_if(timed.begin(), timed.end(), [&](const nlohmann::json& t) { return t["hash"] == fastest[0]["hash"]; });
    REQUIRE(found != timed.end());
    CHECK((*found)["seconds"].get<double>() == fastest[0]["found_seconds"].get<double>());
    CHECK((*found)["ms"].get<double>() == fastest[0]["fastest_ms"].get<double>());
    const nlohmann::json state = nlohmann::json::parse(read_file(agent + "/agent.json"));
    CHECK(state["cost_backend"].get<std::string>().starts_with("ort-latency:"));
    CHECK(state["cost_backend"].get<std::string>().find(":extended:") != std::string::npos);  // --ort-level reached the reward
    // Resuming with per-op rewards would mix two kinds of reward: refused, naming both.
    const Result mixed = run_cli("train --resume --updates 1 --cost analytic --checkpoint " + agent);
    CHECK(mixed.exit_code == 2);
    CHECK(mixed.output.find("ort-latency:") != std::string::npos);
    CHECK(mixed.output.find("--reward") != std::string::npos);
}

TEST_CASE("train --agent mb starts the controller's gain prior lower under a measured reward than under the cost model's") {
    if (!ort_installed()) {
        MESSAGE("skipped: ONNX Runtime (node and onnxruntime-node in tools/ort) is not installed");
        return;
    }
    const ScratchDir dir("rlflow-cli-train-mb-prior");
    const auto gain_prior = [&](const std::string& reward) {
        const std::string agent = dir.file("mb_" + reward);
        const Result r = run_cli("train --agent mb --graph zoo:squeezenet1_1 --cost analytic --ort-level extended --real-steps 4 "
                                 "--dream-steps 64 --reward " + reward + " --checkpoint " + agent);
        REQUIRE_MESSAGE(r.exit_code == 0, r.output);
        return nlohmann::json::parse(read_file(agent + "/agent.json"))["controller"]["gain_prior"].get<double>();
    };
    // The gains C reads are the cost model's; under a measured reward they are what misleads.
    CHECK(gain_prior("ort-latency") == rl::measured_reward_gain_prior);
    CHECK(gain_prior("cost") == rl::ControllerOptions{}.gain_prior);
    CHECK(rl::measured_reward_gain_prior < rl::ControllerOptions{}.gain_prior);
}

TEST_CASE("train --reward gpu-latency on a CPU target is refused with exit code 2, saying it needs --target cuda") {
    const ScratchDir dir("rlflow-cli-train-gpu-latency-cpu");
    const Result r = run_cli("train --graph zoo:squeezenet1_1 --cost analytic --target ort-cpu --reward gpu-latency --updates 1 "
                             "--checkpoint " + dir.file("agent"));
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.output.find("--reward gpu-latency times whole graphs on the GPU") != std::string::npos, r.output);
    CHECK(r.output.find("--target cuda") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir.file("agent") + "/agent.json"));
}

TEST_CASE("train --reward gpu-latency rewards whole graphs timed on the GPU and records the executor as the reward's source") {
    const ScratchDir dir("rlflow-cli-train-gpu-latency");
    const std::string agent = dir.file("agent");
    const Result trained = run_cli("train --graph zoo:squeezenet1_1 --cost analytic --target cuda --reward gpu-latency "
                                   "--rollout-steps 4 --step-limit 2 --updates 1 --checkpoint " + agent);
    if (trained.exit_code == 2 && trained.output.find("--target cuda") != std::string::npos) {
        MESSAGE("skipped: no usable GPU (" << trained.output.substr(0, 200) << ")");
        return;
    }
    REQUIRE_MESSAGE(trained.exit_code == 0, trained.output);
    CHECK(trained.output.find(":latency") != std::string::npos);
    const nlohmann::json state = nlohmann::json::parse(read_file(agent + "/agent.json"));
    CHECK(state["cost_backend"].get<std::string>().starts_with("cuda:"));
}

TEST_CASE("train --agent mb logs real and dream steps per iteration, keeps to its real-step budget, and optimize --search mb uses it") {
    const ScratchDir dir("rlflow-cli-train-mb");
    const std::string agent = dir.file("mb");
    const Result trained = run_cli("train --agent mb --graph zoo:squeezenet1_1 --cost analytic --seed 2 --real-steps 700 "
                                   "--dream-steps 512 --temperature 0.8 --checkpoint " + agent);
    REQUIRE_MESSAGE(trained.exit_code == 0, trained.output);
    std::ifstream log(agent + "/train.jsonl");
    std::vector<nlohmann::json> lines;
    for (std::string line; std::getline(log, line);) lines.push_back(nlohmann::json::parse(line));
    // A quarter of the budget (175) by the random agent and 500 by the controller, then the 25 left.
    REQUIRE(lines.size() == 2);
    CHECK(lines[0]["real_steps"] == 675);
    CHECK(lines[1]["real_steps"] == 700);
    CHECK(lines[1]["dream_steps"].get<int>() >= 2 * 512);
    for (const char* key : {"nll_per_dim", "reward", "done", "mask", "gains", "summary", "spread", "total"})
        CHECK_MESSAGE(lines[1]["model"].contains(key), key);
    CHECK(lines[1]["controller"]["entropy"].get<double>() > 0);
    const nlohmann::json state = nlohmann::json::parse(read_file(agent + "/agent.json"));
    CHECK(state["format"] == "rlflow-mb-agent");
    CHECK(state["real_steps"] == 700);
    CHECK(state["temperature"] == 0.8);

    const std::string out = dir.file("sq.onnx"), report = dir.file("sq.json");
    const Result optimised = run_cli("optimize zoo:squeezenet1_1 --search mb --agent " + agent +
                                     " --samples 1 --cost analytic --guard none -o " + out + " --report " + report);
    REQUIRE_MESSAGE(optimised.exit_code == 0, optimised.output);
    const nlohmann::json r = nlohmann::json::parse(read_file(report));
    CHECK(r["search"] == "mb");
    CHECK(r["verified"] == true);
    CHECK(r["real_steps"].get<int>() > 0);
    CHECK(r["cost_after_ms"].get<double>() <= r["cost_before_ms"].get<double>() + 1e-9);

    // Each search reads only its own kind of agent, and says which to use; mb does not resume.
    const Result crossed = run_cli("optimize zoo:squeezenet1_1 --search mf --agent " + agent + " --cost analytic -o " + dir.file("x.onnx"));
    CHECK(crossed.exit_code == 2);
    CHECK(crossed.output.find("use --search mb") != std::string::npos);
    const Result resumed = run_cli("train --agent mb --resume --cost analytic --checkpoint " + agent);
    CHECK(resumed.exit_code == 2);
    CHECK(resumed.output.find("cannot resume") != std::string::npos);
    CHECK(run_cli("train --agent mb --graph zoo:squeezenet1_1 --temperature -1 --checkpoint " + dir.file("bad")).exit_code == 2);
    CHECK_FALSE(std::filesystem::exists(dir.file("bad")));
}

TEST_CASE("train --init-from starts a model-free agent from another's weights and action space, on other graphs") {
    const ScratchDir dir("rlflow-cli-train-init");
    const std::string base = dir.file("base"), tuned = dir.file("tuned"), fresh = dir.file("fresh");
    const std::string common = " --cost analytic --rollout-steps 8 --updates 1 --seed 4";
    REQUIRE(run_cli("train --graph zoo:squeezenet1_1 --checkpoint " + base + common).exit_code == 0);
    const Result fine = run_cli("train --graph zoo:resnet18 --init-from " + base + " --checkpoint " + tuned + common);
    REQUIRE_MESSAGE(fine.exit_code == 0, fine.output);
    CHECK(fine.output.find("starting from the agent in") != std::string::npos);
    const nlohmann::json from = nlohmann::json::parse(read_file(base + "/agent.json"));
    const nlohmann::json to = nlohmann::json::parse(read_file(tuned + "/agent.json"));
    CHECK(to["rules"] == from["rules"]);  // the trained agent's action space, not resnet18's own
    CHECK(to["graphs"] == nlohmann::json::array({"zoo:resnet18"}));
    CHECK(to["updates"] == 1);            // its own progress, from zero
    // A fresh agent on resnet18 with the same seed and one update differs: the start was the trained one.
    REQUIRE(run_cli("train --graph zoo:resnet18 --checkpoint " + fresh + common).exit_code == 0);
    CHECK(read_file(tuned + "/weights.ckpt") != read_file(fresh + "/weights.ckpt"));
    CHECK(run_cli("optimize zoo:resnet18 -o " + dir.file("r.onnx") + " --search mf --agent " + tuned + " --cost analytic --guard none").exit_code == 0);
    // Not with --resume, and not for the model-based agent yet.
    CHECK(run_cli("train --resume --init-from " + base + " --checkpoint " + tuned).exit_code == 2);
    CHECK(run_cli("train --agent mb --graph zoo:resnet18 --init-from " + base + " --checkpoint " + dir.file("mb") + common).exit_code == 2);
}

TEST_CASE("train leaves the rule families the ledger says never pay out of a new agent's action space") {
    const ScratchDir dir("rlflow-cli-train-ledger");
    // squeezenet's fire modules match the generated family that moves a Relu over a Concat.
    const std::string family = "Concat+Relu+Relu -> Concat+Relu";
    const std::string ledger = dir.file("ledger.json");
    std::ofstream(ledger) << R"({"target": "ort-cpu", "target_level": "all", "families": [{"family": ")" << family
                          << R"(", "median_ratio": 1.03, "best_ratio": 1.01, "models": ["a"], "pays_on": [], "slower_on": ["a"]}]})";
    const std::string common = " --graph zoo:squeezenet1_1 --cost analytic --target ort-cpu --ort-level all --rollout-steps 8 --updates 1 --seed 4";
    const Result pruned = run_cli("train --checkpoint " + dir.file("pruned") + common + " --ledger " + ledger);
    REQUIRE_MESSAGE(pruned.exit_code == 0, pruned.output);
    CHECK(pruned.output.find("left out of the action space") != std::string::npos);
    const Result every = run_cli("train --checkpoint " + dir.file("every") + common + " --ledger none");
    REQUIRE_MESSAGE(every.exit_code == 0, every.output);
    const rlflow::rewrite::RuleSet library = rlflow::rewrite::default_rules();
    const std::set<std::string> builtin = rlflow::search::builtin_rule_names();
    const auto of_family = [&](const std::string& agent) {
        std::size_t n = 0;
        const nlohmann::json state = nlohmann::json::parse(read_file(agent + "/agent.json"));
        for (const auto& name : state["rules"])
            n += rlflow::search::rule_family(library.at(name.get<std::string>()), builtin) == family ? 1 : 0;
        return n;
    };
    CHECK(of_family(dir.file("every")) > 0);
    CHECK(of_family(dir.file("pruned")) == 0);
    // Everything else of the action space is kept.
    const auto rules = [&](const std::string& agent) { return nlohmann::json::parse(read_file(agent + "/agent.json"))["rules"].size(); };
    CHECK(rules(dir.file("pruned")) == rules(dir.file("every")) - of_family(dir.file("every")));
}
