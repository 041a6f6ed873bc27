// rlflow eval: every method on every graph under every seed, results.json and results.md,
// resuming, and arguments refused before any work.
#include "support.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

using rlflow::cli_test::read_file;
using rlflow::cli_test::Result;
using rlflow::cli_test::run_cli;
using rlflow::cli_test::ScratchDir;

namespace {

/// A Python with matplotlib, to run the figure scripts; empty (and "skipped") if none.
std::string figure_python() {
    const std::string python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    if (std::system((python + " -c 'import matplotlib' >/dev/null 2>&1").c_str()) == 0) return python;
    MESSAGE("skipped: matplotlib is missing (apt-get install python3-matplotlib)");
    return {};
}

const std::string small_export = std::string(RLFLOW_SOURCE_DIR) + "/tests/data/opaque/conv_sin_branches.onnx";

/// Two small graphs, greedy and taso, two seeds, priced by the analytic V100 preset.
std::string eval_args(const std::string& out) {
    return "eval --graphs zoo:squeezenet1_1 " + small_export + " --methods greedy,taso --seeds 2 --cost analytic --device v100 "
           "--budget 50 --out " + out;
}

}  // namespace

TEST_CASE("eval runs every method on every graph under every seed and writes results.json and results.md") {
    const ScratchDir dir("rlflow-cli-eval");
    const std::string out = dir.file("eval");
    const Result run = run_cli(eval_args(out));
    REQUIRE_MESSAGE(run.exit_code == 0, run.output);
    CHECK(run.output.find("8 of 8 cells done (0 kept") != std::string::npos);
    const nlohmann::json results = nlohmann::json::parse(read_file(out + "/results.json"));
    REQUIRE(results["cells"].size() == 8);  // 2 graphs x 2 methods x 2 seeds
    for (const nlohmann::json& c : results["cells"]) {
        CAPTURE(c.dump());
        REQUIRE(c["status"] == "ok");
        CHECK(c["verified"] == true);
        CHECK(c["cost_after_ms"].get<double>() <= c["cost_before_ms"].get<double>());
        CHECK(c["speedup"].get<double>() == doctest::Approx(c["cost_before_ms"].get<double>() / c["cost_after_ms"].get<double>()));
        CHECK(c["cost_backend"].get<std::string>().find("v100") != std::string::npos);
        CHECK(std::filesystem::exists(c["output"].get<std::string>()));
        CHECK(c["seconds"].get<double>() >= 0);
        CHECK(c["rewrites"].is_object());
        // Every rule applied has its pattern in rule_labels, for tables and figures.
        for (const auto& [name, count] : c["rewrites"].items()) {
            REQUIRE(results["rule_labels"].contains(name));
            CHECK(results["rule_labels"][name].get<std::string>().find(" \u2192 ") != std::string::npos);
        }
    }
    // squeezenet has gains under V100 prices (its 1x1/3x3 expand pairs merge): the best
    // method's mean is in bold in its row of the cost table.
    const std::string md = read_file(out + "/results.md");
    CHECK(md.find("| graph | greedy | taso |") != std::string::npos);
    CHECK(md.find("| squeezenet1_1 |") != std::string::npos);
    CHECK(md.find("| conv_sin_branches |") != std::string::npos);
    CHECK(md.find("**") != std::string::npos);
    // Seeds give zoo graphs their weights: one input per seed.
    CHECK(std::filesystem::exists(out + "/inputs/squeezenet1_1_s1.onnx"));
    CHECK(std::filesystem::exists(out + "/inputs/squeezenet1_1_s2.onnx"));
}

TEST_CASE("the figure script draws an eval's results: the cost bars and the rules' heatmap") {
    const std::string python = figure_python();
    if (python.empty()) return;
    const ScratchDir dir("rlflow-cli-eval-figures");
    const std::string out = dir.file("eval"), figures = dir.file("figures");
    REQUIRE(run_cli(eval_args(out)).exit_code == 0);
    const std::string draw = python + " " + RLFLOW_SOURCE_DIR + "/tools/eval_figures.py " + out + " --out " + figures + " >/dev/null";
    REQUIRE(std::system(draw.c_str()) == 0);
    for (const char* name : {"speedup_cost.png", "speedup_cost.svg", "rules_heatmap.png"}) {
        CAPTURE(name);
        CHECK(std::filesystem::file_size(figures + "/" + name) > 1000);
    }
    CHECK(!std::filesystem::exists(figures + "/speedup_ort_basic_t1.png"));  // eval ran without --ort
}

TEST_CASE("a resumed eval keeps the finished cells and runs the rest") {
    const ScratchDir dir("rlflow-cli-eval-resume");
    const std::string out = dir.file("eval");
    REQUIRE(run_cli(eval_args(out)).exit_code == 0);
    const std::filesystem::path kept = std::filesystem::path(out) / "cells/squeezenet1_1/taso_s2.cell.json";
    const std::filesystem::path redone = std::filesystem::path(out) / "cells/squeezenet1_1/greedy_s1.cell.json";
    const std::string kept_record = read_file(kept);
    const std::string redone_record = read_file(redone);
    std::filesystem::remove(redone);  // as if the run had been interrupted in that cell
    const auto kept_time = std::filesystem::last_write_time(kept);
    const Result again = run_cli(eval_args(out));
    REQUIRE_MESSAGE(again.exit_code == 0, again.output);
    CHECK(again.output.find("8 of 8 cells done (7 kept") != std::string::npos);
    CHECK(std::filesystem::last_write_time(kept) == kept_time);
    CHECK(read_file(kept) == kept_record);
    // The redone cell's figures are the same: the searches are deterministic.
    const nlohmann::json before = nlohmann::json::parse(redone_record), after = nlohmann::json::parse(read_file(redone));
    CHECK(after["cost_after_ms"] == before["cost_after_ms"]);
    CHECK(after["rewrites"] == before["rewrites"]);
}

TEST_CASE("eval refuses bad arguments with exit 2 before any work") {
    const ScratchDir dir("rlflow-cli-eval-bad");
    const std::string out = dir.file("eval");
    const Result unknown = run_cli("eval --graphs zoo:squeezenet1_1 --methods greedy,annealing --out " + out);
    CHECK(unknown.exit_code == 2);
    CHECK(unknown.output.find("annealing") != std::string::npos);
    const Result no_agent = run_cli("eval --graphs zoo:squeezenet1_1 --methods mf --out " + out);
    CHECK(no_agent.exit_code == 2);
    CHECK(no_agent.output.find("--agent") != std::string::npos);
    const Result no_graph = run_cli("eval --graphs zoo:no_such_model --methods greedy --out " + out);
    CHECK(no_graph.exit_code == 2);
    CHECK(!std::filesystem::exists(out));  // nothing was made
    // An agent trained with the default rules, evaluated with the built-in rules alone: its
    // generated rules are missing, which is named.
    const std::string agent = dir.file("agent");
    REQUIRE(run_cli("train --graph zoo:squeezenet1_1 --cost analytic --rollout-steps 8 --updates 1 --checkpoint " + agent).exit_code == 0);
    const Result other_rules = run_cli("eval --graphs zoo:squeezenet1_1 --methods mf --agent " + agent + " --rules builtin --out " + out);
    CHECK(other_rules.exit_code == 2);
    CHECK(other_rules.output.find("another rule set") != std::string::npos);
    CHECK(!std::filesystem::exists(out));
}

TEST_CASE("eval --ort times each result at every level, and a resumed eval times kept cells at a new level without running them again") {
    if (!rlflow::cli_test::ort_installed()) return;
    const ScratchDir dir("rlflow-cli-eval-ort");
    const std::string out = dir.file("eval");
    const std::string args = "eval --graphs " + small_export + " --methods greedy --cost analytic --device v100 --budget 50 --ort --ort-runs 3 "
                             "--ort-threads 1 --out " + out + " --ort-level ";
    const Result first = run_cli(args + "basic,all");
    REQUIRE_MESSAGE(first.exit_code == 0, first.output);
    const std::filesystem::path record = std::filesystem::path(out) / "cells/conv_sin_branches/greedy_s1.cell.json";
    const nlohmann::json timed = nlohmann::json::parse(read_file(record));
    for (const char* key : {"basic_t1", "all_t1"}) {
        CAPTURE(key);
        REQUIRE(timed["ort"].contains(key));
        const nlohmann::json& t = timed["ort"][key];
        CHECK(t["before_ms"].get<double>() > 0);
        CHECK(t["after_ms"].get<double>() > 0);
        CHECK(t["speedup"].get<double>() > 0);
        CHECK(t["runs"] == 3);
    }
    CHECK(timed["ort"]["all_t1"]["level"] == "all");
    const std::string md = read_file(out + "/results.md");
    CHECK(md.find("level basic, 1 thread(s)") != std::string::npos);
    CHECK(md.find("level all, 1 thread(s)") != std::string::npos);
    // Three runs cannot reach the sign test's 5% (its least p is 1/8): every timing is
    // within the noise, and each ORT table's cell says so instead of a figure.
    for (const char* key : {"basic_t1", "all_t1"}) {
        CHECK(timed["ort"][key]["within_noise"] == true);
        CHECK(timed["ort"][key]["p_faster"].get<double>() >= 0.125);
    }
    const std::size_t ort_tables = md.find("## Speed-up in ONNX Runtime");
    REQUIRE(ort_tables != std::string::npos);
    CHECK(md.find("| conv_sin_branches | \u2248 |", ort_tables) != std::string::npos);
    // Resumed with another level: the cell is not run again (its log is untouched), the
    // timings it had are kept as they were, and the new level is added.
    const std::filesystem::path log = std::filesystem::path(out) / "cells/conv_sin_branches/greedy_s1.log";
    const auto log_time = std::filesystem::last_write_time(log);
    const Result again = run_cli(args + "extended");
    REQUIRE_MESSAGE(again.exit_code == 0, again.output);
    CHECK(again.output.find("1 of 1 cells done (1 kept") != std::string::npos);
    CHECK(std::filesystem::last_write_time(log) == log_time);
    const nlohmann::json resumed = nlohmann::json::parse(read_file(record));
    CHECK(resumed["ort"]["basic_t1"] == timed["ort"]["basic_t1"]);
    CHECK(resumed["ort"]["all_t1"] == timed["ort"]["all_t1"]);
    CHECK(resumed["ort"]["extended_t1"]["speedup"].get<double>() > 0);
}

TEST_CASE("eval marks a model timed against itself as within the noise, never as a gain in bold") {
    if (!rlflow::cli_test::ort_installed()) return;
    const ScratchDir dir("rlflow-cli-eval-noise");
    const std::string out = dir.file("eval");
    // One op that no rule rewrites: the cell writes its input, and ONNX Runtime times the
    // model against itself.
    const std::string single_op = std::string(RLFLOW_SOURCE_DIR) + "/tests/data/ops/instance_norm.onnx";
    const Result run = run_cli("eval --graphs " + single_op + " --methods greedy,taso --cost analytic --ort --ort-runs 4 --ort-threads 1 "
                               "--ort-level all --out " + out);
    REQUIRE_MESSAGE(run.exit_code == 0, run.output);
    const nlohmann::json results = nlohmann::json::parse(read_file(out + "/results.json"));
    REQUIRE(results["cells"].size() == 2);
    for (const nlohmann::json& c : results["cells"]) {
        CAPTURE(c.dump());
        REQUIRE(c["written"] == "input");
        const nlohmann::json& t = c["ort"]["all_t1"];
        // Four rounds cannot reach 5% (the least p is 1/16): within the noise, whatever the medians.
        CHECK(t["within_noise"] == true);
        CHECK(t["p_faster"].get<double>() >= 0.0625);
        CHECK(t["p_slower"].get<double>() >= 0.0625);
    }
    const std::string md = read_file(out + "/results.md");
    const std::size_t ort_table = md.find("## Speed-up in ONNX Runtime");
    REQUIRE(ort_table != std::string::npos);
    CHECK(md.find("| instance_norm | \u2248 | \u2248 |", ort_table) != std::string::npos);
    CHECK(md.find("**", ort_table) > md.find("## Search or inference seconds"));  // no bold in the ORT table
}

TEST_CASE("the training-curve and temperature-sweep scripts draw mf and mb agents") {
    const std::string python = figure_python();
    if (python.empty()) return;
    const ScratchDir dir("rlflow-cli-eval-curves");
    const std::string common = " --graph zoo:squeezenet1_1 --cost analytic --seed 1 --checkpoint ";
    const std::string cold = dir.file("mb_cold"), warm = dir.file("mb_warm"), mf = dir.file("mf");
    for (const auto& [agent, temperature] : {std::pair{cold, "0.5"}, std::pair{warm, "2"}})
        REQUIRE(run_cli("train --agent mb --real-steps 40 --dream-steps 64 --temperature " + std::string(temperature) + common + agent).exit_code == 0);
    REQUIRE(run_cli("train --agent mf --rollout-steps 8 --updates 2" + common + mf).exit_code == 0);
    const std::string tools = std::string(RLFLOW_SOURCE_DIR) + "/tools/";
    const std::string curves = dir.file("curves"), sweep = dir.file("sweep"), table = dir.file("sweep.md");
    REQUIRE(std::system((python + " " + tools + "training_curves.py --out " + curves + " " + mf + " " + cold + " >/dev/null").c_str()) == 0);
    REQUIRE(std::system((python + " " + tools + "temperature_sweep.py --out " + sweep + " " + cold + " " + warm + " >" + table).c_str()) == 0);
    CHECK(std::filesystem::file_size(curves + ".png") > 1000);
    CHECK(std::filesystem::file_size(sweep + ".png") > 1000);
    CHECK(std::filesystem::file_size(sweep + ".svg") > 1000);
    // One row per temperature, each with its one seed.
    const std::string rows = read_file(table);
    CHECK(rows.find("| 0.5 | 1 |") != std::string::npos);
    CHECK(rows.find("| 2 | 1 |") != std::string::npos);
    // An mf agent is not a temperature sweep's: named, and refused.
    CHECK(std::system((python + " " + tools + "temperature_sweep.py --out " + sweep + " " + mf + " >/dev/null 2>&1").c_str()) != 0);
}
