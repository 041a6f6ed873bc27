// What a new user meets first: the README's main job, and everyday mistakes with paths and
// values. Each case reproduces what a user ran and checks what they should get: the exit
// code, a message that names what is wrong, and no output file.
#include "support.hpp"

#include <rlflow/onnx/import.hpp>
#include <rlflow/onnx/tensor_io.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <fstream>
#include <string>
#include <vector>

using namespace rlflow::cli_test;

namespace {

const std::string squeezenet_export = std::string(RLFLOW_SOURCE_DIR) + "/tests/data/squeezenet1_1_op13.onnx";

/// `info --json` of a model.
nlohmann::json info(const std::string& model) {
    const Result r = run_cli("info " + model + " --json", false);
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    return nlohmann::json::parse(r.output);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// Runs `model` alone in ONNX Runtime, feeding only its data input: true when ORT loads
/// and runs it as it is.
bool runs_in_ort(const std::string& model) {
    const std::string command = "node " + std::string(RLFLOW_SOURCE_DIR) + "/tools/ort/compare.js " + model
                                + " --runs 1 --warmup 0 >/dev/null 2>&1";
    return std::system(command.c_str()) == 0;
}

}  // namespace

TEST_CASE("a zoo model is written with seeded random weights, and --weight-free keeps them as inputs") {
    const ScratchDir dir("rlflow_cli_zoo_weights");
    const std::string weighted = dir.file("squeezenet.onnx");
    const std::string free = dir.file("squeezenet.free.onnx");
    REQUIRE(run_cli("convert zoo:squeezenet1_1 " + weighted).exit_code == 0);
    REQUIRE(run_cli("convert zoo:squeezenet1_1 " + free + " --weight-free").exit_code == 0);
    const auto proto = [](const std::string& f) { return rlflow::onnx_io::parse_model(rlflow::onnx_io::read_file(f), f); };
    const auto with = proto(weighted);
    const auto without = proto(free);
    CHECK(with.graph().input_size() == 1);  // the image alone: every weight is an initializer
    CHECK(with.graph().initializer_size() > 0);
    CHECK(without.graph().input_size() > 1);  // weights are graph inputs
    CHECK(without.graph().initializer_size() == 0);
    CHECK(std::filesystem::file_size(weighted) > 4'000'000);  // about 1.2 M parameters of 4 bytes
    CHECK(std::filesystem::file_size(free) < 200'000);
    // The same seed gives the same bytes; another seed other weights.
    const std::string again = dir.file("again.onnx");
    const std::string other = dir.file("other.onnx");
    REQUIRE(run_cli("convert zoo:squeezenet1_1 " + again).exit_code == 0);
    REQUIRE(run_cli("convert zoo:squeezenet1_1 " + other + " --seed 7").exit_code == 0);
    const auto bytes = [](const std::string& f) {
        std::ifstream in(f, std::ios::binary);
        return std::string{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    };
    CHECK(bytes(weighted) == bytes(again));
    CHECK(bytes(weighted) != bytes(other));
}

TEST_CASE("the README's main job writes a zoo model that ONNX Runtime runs as it is") {
    if (!ort_installed()) return;
    const ScratchDir dir("rlflow_cli_readme_job");
    // The README's command (optimize zoo:resnext50 -o build/resnext50.opt.onnx --report ...),
    // with a small budget, the analytic cost and no guard, so that the test takes seconds and
    // does not depend on this machine's timing (the README shows what it measured).
    const std::string out = dir.file("resnext50.opt.onnx");
    const Result r = run_cli("optimize zoo:resnext50 -o " + out + " --report " + dir.file("resnext50.report.json")
                             + " --cost analytic --guard none --budget 5");
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    const auto model = rlflow::onnx_io::parse_model(rlflow::onnx_io::read_file(out), out);
    CHECK(model.graph().input_size() == 1);
    CHECK(info(out)["weight_bytes"].get<double>() > 90e6);  // seeded random weights, written as initializers
    CHECK(runs_in_ort(out));
}

TEST_CASE("every output path is checked before any work, and nothing is written when one is bad") {
    const ScratchDir dir("rlflow_cli_output_paths");
    const std::string out = dir.file("out.onnx");
    const std::string missing = dir.file("nodir") + "/";
    const std::string job = "optimize zoo:squeezenet1_1 --cost analytic --guard none --budget 5 ";

    const Result no_dir = run_cli(job + "-o " + missing + "x.onnx");
    CHECK(no_dir.exit_code == 2);
    CHECK(contains(no_dir.output, "--output"));
    CHECK(contains(no_dir.output, "does not exist"));
    CHECK_FALSE(contains(no_dir.output, "search:"));  // refused before the search

    const Result report = run_cli(job + "-o " + out + " --report " + missing + "r.json");
    CHECK(report.exit_code == 2);
    CHECK(contains(report.output, "--report"));
    CHECK_FALSE(std::filesystem::exists(out));  // not half a success: no model without its report

    const Result cache = run_cli(job + "-o " + out + " --cost-cache " + missing + "costs.bin");
    CHECK(cache.exit_code == 2);
    CHECK(contains(cache.output, "--cost-cache"));
    CHECK_FALSE(std::filesystem::exists(out));

    const Result into_directory = run_cli(job + "-o " + dir.path.string());
    CHECK(into_directory.exit_code == 2);
    CHECK(contains(into_directory.output, "is a directory"));

    const Result convert = run_cli("convert zoo:squeezenet1_1 " + missing + "c.onnx");
    CHECK(convert.exit_code == 2);
    CHECK(contains(convert.output, "does not exist"));
    CHECK(std::filesystem::is_empty(dir.path));
}

TEST_CASE("a directory given as a model is named as a directory, not as a missing file") {
    const ScratchDir dir("rlflow_cli_model_dir");
    for (const std::string& command : std::vector<std::string>{"info ", "optimize --guard none -o " + dir.file("x.onnx") + " ", "run "}) {
        const Result r = run_cli(command + dir.path.string());
        CHECK(r.exit_code == 2);
        CHECK_MESSAGE(contains(r.output, "is a directory"), command);
        CHECK_FALSE(contains(r.output, "no such file"));
    }
}

TEST_CASE("run names the directory and the file it looked for, before running") {
    const ScratchDir dir("rlflow_cli_run_dirs");
    const Result missing = run_cli("run zoo:squeezenet1_1 --inputs " + dir.file("nothing"));
    CHECK(missing.exit_code == 2);
    CHECK(contains(missing.output, dir.file("nothing")));
    CHECK(contains(missing.output, "no such directory"));
    CHECK_FALSE(contains(missing.output, "Executor"));

    const Result empty = run_cli("run zoo:squeezenet1_1 --inputs " + dir.path.string());
    CHECK(empty.exit_code == 2);
    CHECK(contains(empty.output, "input_0.pb"));
    CHECK_FALSE(contains(empty.output, "ran "));

    const Result expect = run_cli("run zoo:squeezenet1_1 --expect " + dir.file("nothing"));
    CHECK(expect.exit_code == 2);
    CHECK(contains(expect.output, "--expect"));
    CHECK_FALSE(contains(expect.output, "ran "));  // checked before the model ran

    const Result ok = run_cli("run zoo:squeezenet1_1");
    CHECK(ok.exit_code == 0);
    CHECK(contains(ok.output, "MiB"));  // sizes as the other commands print them
}

TEST_CASE("bad values are refused with exit code 2, not run as something else") {
    const ScratchDir dir("rlflow_cli_bad_values");
    const std::string out = dir.file("out.onnx");
    const Result budget = run_cli("optimize zoo:squeezenet1_1 -o " + out + " --budget -5");
    CHECK(budget.exit_code == 2);
    CHECK(contains(budget.output, "--budget"));
    CHECK(run_cli("optimize zoo:squeezenet1_1 -o " + out + " --time-limit -1").exit_code == 2);

    const Result opset = run_cli("convert " + squeezenet_export + " " + out + " --opset 99");
    CHECK(opset.exit_code == 2);
    CHECK(contains(opset.output, "--opset"));

    const Result batch = run_cli("info " + squeezenet_export + " --batch 8");
    CHECK(batch.exit_code == 2);
    CHECK(contains(batch.output, "--dim"));
    CHECK_FALSE(std::filesystem::exists(out));

    // A model of an opset rlflow does not read is loaded with a warning that says so.
    rlflow::onnx_io::pb::ModelProto model = rlflow::onnx_io::parse_model(rlflow::onnx_io::read_file(squeezenet_export),
                                                                          squeezenet_export);
    for (auto& import : *model.mutable_opset_import())
        if (import.domain().empty()) import.set_version(21);
    const std::string newer = dir.file("opset21.onnx");
    {
        std::ofstream f(newer, std::ios::binary);
        f << model.SerializeAsString();
    }
    const Result warned = run_cli("info " + newer);
    CHECK(warned.exit_code == 0);
    CHECK(contains(warned.output, "warning"));
    CHECK(contains(warned.output, "opset 21"));
    CHECK_FALSE(contains(run_cli("info " + squeezenet_export).output, "warning"));
}

TEST_CASE("optimize's figures describe the file it wrote, as info reads it, FLOPs included") {
    const ScratchDir dir("rlflow_cli_written_figures");
    const std::string model = dir.file("squeezenet.onnx");
    const std::string out = dir.file("out.onnx");
    const std::string report = dir.file("report.json");
    REQUIRE(run_cli("weights " + squeezenet_export + " " + model + " --data-inputs input").exit_code == 0);
    // A V100 roofline makes the search merge and enlarge convolutions: figures change.
    const Result r = run_cli("optimize " + model + " -o " + out + " --cost analytic --device v100 --guard none --budget 200"
                             " --report " + report);
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    CHECK(contains(r.output, "FLOPs"));
    std::ifstream in(report);
    const auto j = nlohmann::json::parse(in);
    REQUIRE(j["written"] == "optimised");
    const auto before = info(model);
    const auto after = info(out);
    CHECK(j["flops_before"] == before["flops"]);
    CHECK(j["flops_after"] == after["flops"]);
    CHECK(j["memory_before_bytes"] == before["activation_peak_bytes"]);
    CHECK(j["memory_after_bytes"] == after["activation_peak_bytes"]);
    CHECK(j["weight_bytes_before"] == before["weight_bytes"]);
    CHECK(j["weight_bytes_after"] == after["weight_bytes"]);
}

TEST_CASE("optimize reports net rewrites and why it stopped in words, and errors carry no internal tags") {
    const ScratchDir dir("rlflow_cli_wording");
    const std::string report = dir.file("report.json");
    const Result r = run_cli("optimize zoo:squeezenet1_1 -o " + dir.file("out.onnx") + " --cost analytic --device v100"
                             " --guard none --budget 300 --report " + report);
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    std::ifstream in(report);
    const auto j = nlohmann::json::parse(in);
    CHECK(j.contains("rewrites_applied"));
    // Every step, in order: the applied counts are the sequence's.
    std::map<std::string, int> steps;
    for (const auto& rule : j["rewrite_sequence"]) ++steps[rule.get<std::string>()];
    CHECK(nlohmann::json(steps) == j["rewrites_applied"]);
    for (const auto& [forward, backward] : {std::pair{"merge_group_conv_bias", "split_group_conv_bias"},
                                           std::pair{"fuse_conv_relu_bias", "unfuse_conv_relu_bias"},
                                           std::pair{"merge_group_conv", "split_group_conv"}})
        CHECK_FALSE((j["rewrites"].contains(forward) && j["rewrites"].contains(backward)));
    for (const auto& [rule, count] : j["rewrites"].items()) {
        CHECK(count.get<int>() > 0);
        CHECK(count.get<int>() <= j["rewrites_applied"][rule].get<int>());
    }
    const std::string stop = j["stop"];
    CHECK((contains(stop, "converged") || contains(stop, "--budget")));
    // The budget is named as what to raise only when the search was still finding cheaper
    // graphs in the second half of it.
    const auto found_at = j["best_found_at"].get<std::size_t>();
    const auto expansions = j["expansions"].get<std::size_t>();
    CHECK(found_at <= expansions);
    if (j["stop_reason"] == "budget")
        CHECK(contains(stop, found_at * 2 <= expansions ? "so a larger one is unlikely to help" : "a larger --budget may find more"));
    CHECK(contains(r.output, "search: " + stop));
    CHECK_FALSE(contains(r.output, "search: budget"));

    const Result error = run_cli("info " + dir.file("missing.onnx"));
    CHECK(error.exit_code == 2);
    CHECK(contains(error.output, "error: "));
    CHECK_FALSE(contains(error.output, "[rlflow."));

    const std::string help = run_cli("optimize --help").output;
    for (const char* shown : {"taso", "1000", "1.05", "auto", "3"}) CHECK_MESSAGE(contains(help, shown), shown);
}

TEST_CASE("piped into a log, long work prints a progress line every few seconds") {
    const ScratchDir dir("rlflow_cli_piped_progress");
    // A 0.05 s interval instead of 5 s, so that a short search prints several lines.
    const Result r = run_cli("optimize zoo:resnet50 -o " + dir.file("out.onnx") + " --cost analytic --guard none"
                             " --budget 400",
                             true, "RLFLOW_PROGRESS_INTERVAL=0.05");
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    CHECK(contains(r.output, "search: "));
    CHECK(contains(r.output, " after "));
    CHECK(contains(r.output, "best "));
    CHECK_FALSE(contains(r.output, "\r"));  // no terminal redraws in a log
    // With the default interval a run this short leaves the log clean.
    const Result quiet = run_cli("optimize zoo:squeezenet1_1 -o " + dir.file("q.onnx") + " --cost analytic --guard none --budget 5");
    REQUIRE(quiet.exit_code == 0);
    CHECK_FALSE(contains(quiet.output, " after 0 s"));
}

TEST_CASE("when optimize keeps the input, the console and the report say why in a sentence") {
    const ScratchDir dir("rlflow_cli_kept_why");
    const std::string report = dir.file("report.json");
    // One op that no rule rewrites: nothing to time, whatever the prices.
    const std::string single_op = std::string(RLFLOW_SOURCE_DIR) + "/tests/data/ops/instance_norm.onnx";
    const Result r = run_cli("optimize " + single_op + " -o " + dir.file("out.onnx") + " --cost analytic --guard none --report " + report);
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    std::ifstream in(report);
    const auto j = nlohmann::json::parse(in);
    REQUIRE(j["written"] == "input");
    const std::string why = j["kept_because"];
    CHECK(contains(why, "no rewrite the search found lowers the price of this model"));
    CHECK(contains(why, "analytic:cpu"));
    CHECK(contains(r.output, "kept the input: " + why));
    // The report says what its cost figures are and how they relate to measured latency.
    CHECK(contains(j["cost_means"].get<std::string>(), "roofline estimate"));
    CHECK(contains(j["cost_means"].get<std::string>(), "only the guard's measurement decides what is written"));
    // A written model has no such sentence.
    const Result written = run_cli("optimize zoo:squeezenet1_1 -o " + dir.file("sq.onnx") + " --cost analytic --device v100 --guard none "
                                   "--budget 50 --report " + report);
    REQUIRE_MESSAGE(written.exit_code == 0, written.output);
    std::ifstream again(report);
    const auto k = nlohmann::json::parse(again);
    REQUIRE(k["written"] == "optimised");
    CHECK(k["kept_because"].is_null());
    CHECK_FALSE(contains(written.output, "kept the input"));
}
