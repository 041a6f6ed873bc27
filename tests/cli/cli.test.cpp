// Drives the built `rlflow` program as a user would and checks its output and exit codes.
#include "support.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace rlflow::cli_test;

TEST_CASE("zoo list names every built-in model") {
    const Result r = run_cli("zoo list");
    CHECK(r.exit_code == 0);
    for (const char* name : {"resnet18", "resnet50", "inception_v3", "squeezenet1_1", "bert", "resnext50", "nasnet_a",
                             "nasrnn", "vit_base", "encoder_small"})
        CHECK_MESSAGE(r.output.find(name) != std::string::npos, name);
}

TEST_CASE("info --json reports the resnet50 architecture") {
    const Result r = run_cli("info zoo:resnet50 --json", false);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.output);
    CHECK(j["model"] == "zoo:resnet50");
    CHECK(j["op_histogram"]["Conv2D"] == 53);
    CHECK(j["op_histogram"]["BatchNormalization"] == 53);
    CHECK(j["flops"].get<double>() > 7.0e9);  // about 4.1 GMACs
    CHECK(j["flops"].get<double>() < 9.0e9);
    CHECK(j["activation_peak_bytes"].get<std::int64_t>() > 0);
    CHECK(j["weight_bytes"].get<std::int64_t>() == 4 * j["parameters"].get<std::int64_t>());
}

TEST_CASE("info prints a readable summary with the op histogram") {
    const Result r = run_cli("info zoo:bert");
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("Softmax") != std::string::npos);
    CHECK(r.output.find("LayerNormalization") != std::string::npos);
    CHECK(r.output.find("GFLOP") != std::string::npos);
}

TEST_CASE("info --batch scales activations but not weights") {
    const auto one = nlohmann::json::parse(run_cli("info zoo:resnet18 --json", false).output);
    const auto four = nlohmann::json::parse(run_cli("info zoo:resnet18 --json --batch 4", false).output);
    CHECK(four["weight_bytes"] == one["weight_bytes"]);
    CHECK(four["activation_peak_bytes"].get<std::int64_t>() == 4 * one["activation_peak_bytes"].get<std::int64_t>());
}

TEST_CASE("an unknown zoo name exits 2 and lists the valid names") {
    const Result r = run_cli("info zoo:resnet51");
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("resnet51") != std::string::npos);
    CHECK(r.output.find("resnet50") != std::string::npos);
}

TEST_CASE("a missing model file exits 2 with a clear message") {
    const Result r = run_cli("info /nonexistent/model.onnx");
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("/nonexistent/model.onnx") != std::string::npos);
    CHECK(r.output.find("no such file") != std::string::npos);
}

TEST_CASE("usage errors exit 2") {
    CHECK(run_cli("").exit_code == 2);
    CHECK(run_cli("info").exit_code == 2);
    CHECK(run_cli("frobnicate").exit_code == 2);
    CHECK(run_cli("info zoo:bert --batch 0").exit_code == 2);
}

TEST_CASE("info lists the opaque ops by type, count and reason, in text and JSON") {
    const std::string model = std::string(RLFLOW_SOURCE_DIR) + "/tests/data/opaque/conv_sin_branches.onnx";
    const auto info = nlohmann::json::parse(run_cli("info " + model + " --json", false).output);
    REQUIRE(info["opaque_ops"].size() == 1);
    const auto& sin = info["opaque_ops"][0];
    CHECK(sin["op_type"] == "Sin");
    CHECK(sin["count"] == info["opaque_nodes"]);
    CHECK(sin["nodes"].size() == sin["count"]);
    CHECK(sin["reason"] == "no core op for Sin");
    const Result text = run_cli("info " + model, false);
    CHECK(text.exit_code == 0);
    CHECK(text.output.find("opaque (never rewritten)") != std::string::npos);
    CHECK(text.output.find("no core op for Sin") != std::string::npos);
}

TEST_CASE("convert writes a model that imports back, and refuses garbage without leaving a file") {
    const auto dir = std::filesystem::temp_directory_path() / "rlflow_cli_convert_test";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string source = std::string(RLFLOW_SOURCE_DIR) + "/tests/data/squeezenet1_1_op13.onnx";
    const std::string out = (dir / "out.onnx").string();
    const Result ok = run_cli("convert " + source + " " + out);
    CHECK(ok.exit_code == 0);
    CHECK(std::filesystem::exists(out));
    const auto info = nlohmann::json::parse(run_cli("info " + out + " --json", false).output);
    CHECK(info["op_histogram"]["Conv2D"] == 26);
    CHECK(info["opaque_nodes"] == 0);
    CHECK(info["opaque_ops"].empty());

    const std::string garbage = (dir / "garbage.onnx").string();
    std::FILE* f = std::fopen(garbage.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fputs("this is not a protobuf \xff\xff\xff\xff", f);
    std::fclose(f);
    const std::string refused = (dir / "refused.onnx").string();
    const Result bad = run_cli("convert " + garbage + " " + refused);
    CHECK(bad.exit_code == 2);
    CHECK(bad.output.find("garbage.onnx") != std::string::npos);
    CHECK(bad.output.find("error: ") != std::string::npos);
    CHECK(bad.output.find("[rlflow.") == std::string::npos);  // a plain message, no internal tag
    CHECK_FALSE(std::filesystem::exists(refused));

    const Result unwritable = run_cli("convert " + source + " " + (dir / "no" / "such" / "dir.onnx").string());
    CHECK(unwritable.exit_code == 2);
    CHECK(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator{}) == 2);
    std::filesystem::remove_all(dir);
}

TEST_CASE("run --expect exits 0 when outputs match the reference and 1 when they differ") {
    const std::string node = "/usr/share/libonnx-testdata/data/node/";
    if (!std::filesystem::exists(node + "test_relu")) {
        MESSAGE("skipped: libonnx-testdata is not installed");
        return;
    }
    const std::string relu = node + "test_relu/model.onnx";
    const std::string relu_data = node + "test_relu/test_data_set_0";
    const std::string sigmoid_data = node + "test_sigmoid/test_data_set_0";  // same shapes, other function
    const Result agree = run_cli("run " + relu + " --inputs " + relu_data + " --expect " + relu_data);
    CHECK(agree.exit_code == 0);
    CHECK(agree.output.find("ok") != std::string::npos);
    const Result differ = run_cli("run " + relu + " --inputs " + sigmoid_data + " --expect " + sigmoid_data);
    CHECK(differ.exit_code == 1);
    CHECK(differ.output.find("MISMATCH") != std::string::npos);
}

TEST_CASE("optimize writes a cheaper verified model and a report with the contract's fields") {
    const auto dir = std::filesystem::temp_directory_path() / "rlflow_cli_optimize";
    std::filesystem::create_directories(dir);
    const auto out = dir / "squeezenet.opt.onnx";
    const auto report = dir / "report.json";
    const auto model = dir / "squeezenet.onnx";
    std::filesystem::remove(out);
    // A real export with weights: what is computed from weights alone is folded before writing.
    REQUIRE(run_cli("weights " + std::string(RLFLOW_SOURCE_DIR) + "/tests/data/squeezenet1_1_op17.onnx " + model.string()
                    + " --data-inputs input").exit_code == 0);
    const Result r = run_cli("optimize " + model.string() + " -o " + out.string() + " --cost analytic --device v100 --guard none"
                             " --budget 30 --report " + report.string());
    REQUIRE(r.exit_code == 0);
    CHECK(std::filesystem::exists(out));
    std::ifstream in(report);
    const auto j = nlohmann::json::parse(in);
    for (const char* field : {"model", "search", "cost_backend", "cost_before_ms", "cost_after_ms", "memory_before_bytes",
                              "memory_after_bytes", "rewrites", "seconds", "verified", "max_abs_diff"})
        CHECK_MESSAGE(j.contains(field), field);
    CHECK(j["model"] == model.string());
    CHECK(j["search"] == "taso");
    CHECK(j["cost_backend"] == "analytic:v100");
    CHECK(j["verified"] == true);
    CHECK(j["cost_after_ms"].get<double>() < j["cost_before_ms"].get<double>());
    CHECK(j["rewrites"]["fuse_conv_relu_bias"].get<int>() > 0);
    // The written model loads again, with the parallel expand convolutions merged.
    const auto before = nlohmann::json::parse(run_cli("info " + model.string() + " --json", false).output);
    const auto after = nlohmann::json::parse(run_cli("info " + out.string() + " --json", false).output);
    CHECK(after["op_histogram"]["Conv2D"].get<int>() < before["op_histogram"]["Conv2D"].get<int>());
    // Merged kernels are written as initializers, not as runtime Concat/Pad of weights.
    CHECK_FALSE(after["op_histogram"].contains("Pad"));
    std::filesystem::remove_all(dir);
}

TEST_CASE("optimize refuses bad input with exit code 2 and writes nothing") {
    const auto dir = std::filesystem::temp_directory_path() / "rlflow_cli_optimize_bad";
    std::filesystem::create_directories(dir);
    const auto out = dir / "out.onnx";
    const auto corrupt = dir / "broken.rules";
    {
        std::ofstream f(corrupt);
        f << "rlflow-rules 1\nrule broken\n  var x\n  src r = Relu(y)\nend\n";
    }
    const Result bad_rules = run_cli("optimize zoo:resnet18 -o " + out.string() + " --rules " + corrupt.string());
    CHECK(bad_rules.exit_code == 2);
    CHECK(bad_rules.output.find("broken.rules") != std::string::npos);
    const Result bad_device = run_cli("optimize zoo:resnet18 -o " + out.string() + " --device tpu");
    CHECK(bad_device.exit_code == 2);
    CHECK(bad_device.output.find("tpu") != std::string::npos);
    const Result bad_model = run_cli("optimize zoo:nothing -o " + out.string());
    CHECK(bad_model.exit_code == 2);
    CHECK_FALSE(std::filesystem::exists(out));
    std::filesystem::remove_all(dir);
}

TEST_CASE("optimize reuses a cost cache file and ignores a damaged one") {
    const auto dir = std::filesystem::temp_directory_path() / "rlflow_cli_cost_cache";
    std::filesystem::create_directories(dir);
    const auto cache = dir / "costs.bin";
    std::filesystem::remove(cache);
    const std::string args = "optimize zoo:resnet18 --search greedy --cost analytic --guard none -o " + (dir / "out.onnx").string()
                             + " --cost-cache " + cache.string();
    const Result first = run_cli(args);
    REQUIRE(first.exit_code == 0);
    REQUIRE(std::filesystem::exists(cache));
    const Result second = run_cli(args);
    CHECK(second.exit_code == 0);
    CHECK(second.output.find("not usable") == std::string::npos);
    {
        std::ofstream damaged(cache, std::ios::binary | std::ios::trunc);
        damaged << "not a cost cache";
    }
    const Result third = run_cli(args);
    CHECK(third.exit_code == 0);
    CHECK(third.output.find("not usable") != std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("optimize rewrites around an op rlflow cannot execute, verifies region by region and keeps the op") {
    const auto dir = std::filesystem::temp_directory_path() / "rlflow_cli_opaque";
    std::filesystem::create_directories(dir);
    const auto out = dir / "opt.onnx";
    const auto report = dir / "report.json";
    const std::string model = std::string(RLFLOW_SOURCE_DIR) + "/tests/data/opaque/conv_sin_branches.onnx";
    const Result r = run_cli("optimize " + model + " -o " + out.string() + " --cost analytic --device v100 --guard none --report "
                             + report.string());
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    CHECK(r.output.find("verified region by region (2 regions") != std::string::npos);
    std::ifstream in(report);
    const auto j = nlohmann::json::parse(in);
    CHECK(j["verified"] == true);
    CHECK(j["verification"] == "regions");
    CHECK(j["regions_verified"] == 2);
    CHECK(j["cost_after_ms"].get<double>() < j["cost_before_ms"].get<double>());
    CHECK(j["rewrites"]["merge_conv_pair_bias"] == 1);
    const auto before = nlohmann::json::parse(run_cli("info " + model + " --json", false).output);
    const auto after = nlohmann::json::parse(run_cli("info " + out.string() + " --json", false).output);
    CHECK(after["opaque_nodes"] == 1);
    CHECK(after["op_histogram"]["Sin"] == 1);
    CHECK(after["op_histogram"]["Conv2D"].get<int>() < before["op_histogram"]["Conv2D"].get<int>());
    std::filesystem::remove_all(dir);
}

TEST_CASE("optimize --search eqsat saturates an e-graph around an op rlflow cannot execute, extracts, verifies and reports it") {
    const auto dir = std::filesystem::temp_directory_path() / "rlflow_cli_eqsat";
    std::filesystem::create_directories(dir);
    const auto out = dir / "opt.onnx";
    const auto report = dir / "report.json";
    const std::string model = std::string(RLFLOW_SOURCE_DIR) + "/tests/data/opaque/conv_sin_branches.onnx";
    for (const std::string extract : {"greedy", "ilp"}) {
        CAPTURE(extract);
        std::filesystem::remove(out);
        const Result r = run_cli("optimize " + model + " -o " + out.string() + " --search eqsat --extract " + extract
                                 + " --cost analytic --device v100 --guard none --report " + report.string());
        if (extract == "ilp" && r.exit_code == 2 && r.output.find("needs rlflow built with CBC") != std::string::npos) {
            MESSAGE("skipped: rlflow was built without CBC");
            continue;
        }
        REQUIRE_MESSAGE(r.exit_code == 0, r.output);
        CHECK(r.output.find("e-graph: ") != std::string::npos);
        std::ifstream in(report);
        const auto j = nlohmann::json::parse(in);
        CHECK(j["search"] == "eqsat");
        CHECK(j["verified"] == true);
        CHECK(j["verification"] == "regions");
        CHECK(j["cost_after_ms"].get<double>() < j["cost_before_ms"].get<double>());
        const auto& e = j["eqsat"];
        CHECK(e["enodes"].get<int>() >= e["eclasses"].get<int>());
        CHECK(e["iterations"].get<int>() >= 1);
        CHECK(e["stop"] == "saturated");
        CHECK(e["greedy_cost_ms"].get<double>() >= j["cost_after_ms"].get<double>() * (1 - 1e-6));
        CHECK(e.contains("ilp_status") == (extract == "ilp"));
        const auto after = nlohmann::json::parse(run_cli("info " + out.string() + " --json", false).output);
        CHECK(after["opaque_nodes"] == 1);
        CHECK(after["op_histogram"]["Sin"] == 1);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("rules generate writes verified rules and a report, which stats and verify read back") {
    const auto dir = std::filesystem::temp_directory_path() / "rlflow_cli_rules";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto rules = dir / "small.rules";
    const auto report = dir / "report.json";
    // --keep-builtin: the transpose involution below is otherwise pruned as a built-in rule's.
    const Result r = run_cli("rules generate --ops matmul,add,transpose,concat1,split1 --max-ops 2 --jobs 2 --keep-builtin -o "
                             + rules.string() + " --report " + report.string());
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    std::ifstream in(report);
    const auto j = nlohmann::json::parse(in);
    CHECK(j["rejected"] == 0);
    CHECK(j["candidates"].get<int>() > j["rules_after_pruning"].get<int>());
    const int kept = j["proved"].get<int>() + j["tested"].get<int>();
    CHECK(kept > 0);
    const auto stats = nlohmann::json::parse(run_cli("rules stats " + rules.string() + " --json", false).output);
    CHECK(stats["rules"] == kept);
    int by_status = 0;
    for (const auto& [status, count] : stats["by_status"].items()) by_status += count.get<int>();
    CHECK(by_status == kept);
    CHECK(stats["by_ops"].contains("Transpose"));
    const Result verified = run_cli("rules verify " + rules.string() + " --no-prove");
    CHECK_MESSAGE(verified.exit_code == 0, verified.output);
    CHECK(verified.output.find("0 rejected") != std::string::npos);
    CHECK(verified.output.find("no Z3 proofs") != std::string::npos);  // no Z3 time when Z3 did not run
    CHECK(verified.output.find("median Z3") == std::string::npos);
    // Side sizes count ops as --max-ops does, not the Constant nodes of literal tensors.
    for (const auto& [sizes, count] : stats["by_side_sizes"].items()) {
        CAPTURE(sizes);
        const int source = std::stoi(sizes.substr(1)), target = std::stoi(sizes.substr(sizes.find(',') + 1));
        CHECK(source <= 2);
        CHECK(target <= 2);
    }

    // Make one rule false: Transpose(Transpose(x)) -> x, with the second transpose made
    // the identity, claims Transpose(x) = x.
    std::ifstream text_in(rules);
    std::string text((std::istreambuf_iterator<char>(text_in)), std::istreambuf_iterator<char>());
    const std::string involution = "  src src1 = Transpose(src0) perm=[1, 0]\n  out src1 -> w1\n";
    const auto at = text.find(involution);
    REQUIRE(at != std::string::npos);
    text.replace(at, involution.size(), "  src src1 = Transpose(src0) perm=[0, 1]\n  out src1 -> w1\n");
    const auto broken = dir / "broken.rules";
    std::ofstream(broken) << text;
    const Result bad = run_cli("rules verify " + broken.string() + " --no-prove");
    CHECK(bad.exit_code == 2);
    CHECK(bad.output.find("broken.rules") != std::string::npos);
    CHECK(bad.output.find("fails verification") != std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("rules generate refuses an unknown op with exit code 2 and writes nothing") {
    const auto out = std::filesystem::temp_directory_path() / "rlflow_cli_rules_bad.rules";
    std::filesystem::remove(out);
    const Result r = run_cli("rules generate --ops matmul,frobnicate -o " + out.string());
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("frobnicate") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("rules generate takes the extended ops by name, and the rules it writes verify again") {
    const auto dir = std::filesystem::temp_directory_path() / "rlflow_cli_rules_extended";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto rules = dir / "extended.rules";
    const Result r = run_cli("rules generate --ops relu,add,conv_s1,reducesum1,upsample2 --max-ops 2 --jobs 2 -o " + rules.string());
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    const auto stats = nlohmann::json::parse(run_cli("rules stats " + rules.string() + " --json", false).output);
    bool resize = false;
    for (const auto& [ops, count] : stats["by_ops"].items()) resize = resize || ops.find("Resize") != std::string::npos;
    CHECK(resize);
    const Result verified = run_cli("rules verify " + rules.string() + " --no-prove");
    CHECK_MESSAGE(verified.exit_code == 0, verified.output);
    CHECK(verified.output.find("0 rejected") != std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("optimize --portable writes standard ONNX ops only, and the report says when a file needs ONNX Runtime") {
    const auto dir = std::filesystem::temp_directory_path() / "rlflow_cli_portable";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto read = [](const std::filesystem::path& path) {
        std::ifstream in(path, std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    const std::string quick = " --cost analytic --guard none";
    // With --fused-conv-ms the fused convolutions are com.microsoft.FusedConv, and the
    // report says the file needs ONNX Runtime.
    const auto ms = dir / "ms.onnx";
    const Result fused = run_cli("optimize zoo:squeezenet1_1 -o " + ms.string() + quick + " --fused-conv-ms --report " + (dir / "ms.json").string());
    REQUIRE_MESSAGE(fused.exit_code == 0, fused.output);
    const auto fused_report = nlohmann::json::parse(read(dir / "ms.json"));
    CHECK(fused_report["nonstandard_ops"] == nlohmann::json::array({"com.microsoft.FusedConv"}));
    CHECK(fused_report["needs_onnxruntime"] == true);
    CHECK(read(ms).find("com.microsoft") != std::string::npos);
    // --portable: the same model in standard ops.
    const auto portable = dir / "portable.onnx";
    const Result plain = run_cli("optimize zoo:squeezenet1_1 -o " + portable.string() + quick + " --portable --report " + (dir / "p.json").string());
    REQUIRE_MESSAGE(plain.exit_code == 0, plain.output);
    const auto plain_report = nlohmann::json::parse(read(dir / "p.json"));
    CHECK(plain_report["nonstandard_ops"].empty());
    CHECK(plain_report["needs_onnxruntime"] == false);
    CHECK(plain_report["portable"] == true);
    CHECK(read(portable).find("com.microsoft") == std::string::npos);
    // --portable refuses --fused-conv-ms, and an input already holding a contrib op,
    // naming the node and the op; nothing is written.
    const auto out = dir / "out.onnx";
    const Result both = run_cli("optimize zoo:squeezenet1_1 -o " + out.string() + quick + " --portable --fused-conv-ms");
    CHECK(both.exit_code == 2);
    CHECK(both.output.find("--portable") != std::string::npos);
    const Result contrib = run_cli("optimize " + ms.string() + " -o " + out.string() + quick + " --portable");
    CHECK(contrib.exit_code == 2);
    CHECK(contrib.output.find("com.microsoft.FusedConv") != std::string::npos);
    CHECK(contrib.output.find("ms.onnx") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(out));
    std::filesystem::remove_all(dir);
}

TEST_CASE("optimize leaves out the rule families the ledger says never pay, and refuses a damaged ledger") {
    const auto dir = std::filesystem::temp_directory_path() / "rlflow_cli_ledger";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto read = [](const std::filesystem::path& path) {
        std::ifstream in(path, std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    const std::string quick = " --cost analytic --guard none --target ort-cpu --ort-level all";
    // A ledger in which the generated family that squeezenet's fire modules match (a Relu
    // on each branch of a Concat as one Relu after it) never paid, and a built-in one paid.
    const auto ledger = dir / "mine.json";
    std::ofstream(ledger) << R"({"target": "ort-cpu", "target_level": "all", "families": [
        {"family": "Concat+Relu+Relu -> Concat+Relu", "median_ratio": 1.03, "best_ratio": 1.01, "models": ["a"], "pays_on": [], "slower_on": ["a"]},
        {"family": "merge_group_conv_bias", "median_ratio": 0.98, "best_ratio": 0.9, "models": ["a"], "pays_on": ["a"], "slower_on": []}]})";
    const auto applied = [&](const std::string& name, const std::string& flags) {
        const Result r = run_cli("optimize zoo:squeezenet1_1 -o " + (dir / (name + ".onnx")).string() + quick + flags + " --report "
                                 + (dir / (name + ".json")).string());
        REQUIRE_MESSAGE(r.exit_code == 0, r.output);
        return nlohmann::json::parse(read(dir / (name + ".json")));
    };
    const nlohmann::json mine = applied("m", " --ledger " + ledger.string());
    CHECK(mine["ledger"]["file"] == ledger.string());
    CHECK(mine["ledger"]["dropped_families"] == nlohmann::json::array({"Concat+Relu+Relu -> Concat+Relu"}));
    CHECK(mine["ledger"]["dropped_rules"].get<int>() >= 1);
    // --ledger none keeps every rule: the search then applies rules the pruned one lacked.
    const nlohmann::json none = applied("n", " --ledger none");
    CHECK(none["ledger"].is_null());
    bool pruned_away = false;
    for (const auto& [rule, count] : none["rewrites_applied"].items()) pruned_away = pruned_away || !mine["rewrites_applied"].contains(rule);
    CHECK(pruned_away);
    // By default the shipped ledger applies to a run under the target's own prices (ONNX
    // Runtime's, measured), not under a price model the user chose.
    CHECK(applied("s", "")["ledger"].is_null());
    const Result own = run_cli("optimize zoo:squeezenet1_1 -o " + (dir / "o.onnx").string()
                               + " --search greedy --budget 2 --guard none --target ort-cpu --ort-level all --report " + (dir / "o.json").string());
    REQUIRE_MESSAGE(own.exit_code == 0, own.output);
    const auto shipped = nlohmann::json::parse(read(dir / "o.json"))["ledger"];
    CHECK(shipped["file"].get<std::string>().ends_with("ledger_ort_cpu.json"));
    CHECK(shipped["level"] == "all");
    CHECK_FALSE(shipped["dropped_families"].empty());
    // A damaged ledger: exit 2, the file named, nothing written.
    std::ofstream(dir / "bad.json") << R"({"target": "ort-cpu", "families": [{"family": )";
    const Result bad = run_cli("optimize zoo:squeezenet1_1 -o " + (dir / "b.onnx").string() + quick + " --ledger " + (dir / "bad.json").string());
    CHECK(bad.exit_code == 2);
    CHECK(bad.output.find("bad.json: not a usable rule ledger") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir / "b.onnx"));
    std::filesystem::remove_all(dir);
}

TEST_CASE("optimize refuses bad cost, guard and ONNX Runtime options with exit code 2 and writes nothing") {
    const auto dir = std::filesystem::temp_directory_path() / "rlflow_cli_ort_options";
    std::filesystem::create_directories(dir);
    const auto out = dir / "out.onnx";
    const std::string base = "optimize zoo:squeezenet1_1 -o " + out.string() + " --budget 2 ";
    for (const char* bad : {"--ort-threads 0", "--ort-level fast", "--guard maybe", "--cost tpu", "--guard-rounds 2",
                            "--guard-candidates 0", "--guard-levels basic fast", "--target tpu", "--propose analytic:tpu",
                            "--propose psychic", "--target ort-cpu --guard cuda"}) {
        const Result r = run_cli(base + bad);
        CHECK_MESSAGE(r.exit_code == 2, bad, r.output);
    }
    // An unknown target, preset or price model is named, with the valid ones.
    CHECK(run_cli(base + "--target tpu").output.find("ort-cpu") != std::string::npos);
    CHECK(run_cli(base + "--propose analytic:tpu").output.find("v100") != std::string::npos);
    CHECK(run_cli(base + "--propose psychic").output.find("'psychic'") != std::string::npos);
    // The GPU guard on a CPU target: what it times and what the target is.
    const std::string cuda_guard = run_cli(base + "--target ort-cpu --guard cuda").output;
    CHECK_MESSAGE(cuda_guard.find("--guard cuda times the model on the GPU") != std::string::npos, cuda_guard);
    // Asked for by name where ONNX Runtime is missing: a message saying how to install it.
    for (const char* needs_ort : {"--cost ort", "--cost analytic --device cpu --guard ort"}) {
        const Result r = run_cli(base + needs_ort, true, "RLFLOW_ORT_DIR=/nonexistent");
        CHECK_MESSAGE(r.exit_code == 2, needs_ort, r.output);
        CHECK(r.output.find("tools/setup.sh") != std::string::npos);
    }
    CHECK_FALSE(std::filesystem::exists(out));
    // Without ONNX Runtime the automatic choices fall back to the analytic CPU preset, unguarded.
    const Result fallback = run_cli(base + "--cost-cache none", true, "RLFLOW_ORT_DIR=/nonexistent");
    CHECK_MESSAGE(fallback.exit_code == 0, fallback.output);
    CHECK(fallback.output.find("prices: analytic:cpu; guard: off") != std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("optimize --target cuda without a usable GPU says which is missing, exits 2 and writes nothing") {
    const ScratchDir dir("rlflow_cli_target_cuda");
    const std::string out = dir.file("out.onnx");
    const Result r = run_cli("optimize zoo:squeezenet1_1 -o " + out + " --budget 2 --target cuda");
    if (r.exit_code == 0) {
        MESSAGE("skipped: this machine has a usable GPU, so --target cuda is not refused");
        return;
    }
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("--target cuda") != std::string::npos);
    // Either this build has no CUDA, or the machine shows no GPU: the line says which.
    const bool which = r.output.find("built without CUDA") != std::string::npos || r.output.find("no NVIDIA GPU") != std::string::npos
                       || r.output.find("sees no GPU") != std::string::npos || r.output.find("CUDA plugin") != std::string::npos;
    CHECK_MESSAGE(which, r.output);
    CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("optimize warns, and still runs, when asked for more ONNX Runtime threads than the machine has cores") {
    const ScratchDir dir("rlflow_cli_target_threads");
    const std::string out = dir.file("out.onnx");
    const std::string report = dir.file("r.json");
    const Result r = run_cli("optimize zoo:squeezenet1_1 -o " + out + " --budget 2 --cost analytic --guard none --ort-threads 4096 --report "
                             + report);
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    CHECK(r.output.find("warning: --ort-threads 4096 is more than this machine's") != std::string::npos);
    std::ifstream in(report);
    const auto j = nlohmann::json::parse(in);
    CHECK(j["target"] == "ort-cpu");
    CHECK(j["target_description"] == "ort-cpu (ONNX Runtime, level all, 4096 threads)");
}

TEST_CASE("optimize targets ONNX Runtime as a session runs by default, times candidates of several price models and writes the fastest") {
    if (!ort_installed()) return;
    const ScratchDir dir("rlflow_cli_ort_guard");
    const std::string out = dir.file("out.onnx");
    const std::string report = dir.file("report.json");
    const Result r = run_cli("optimize zoo:squeezenet1_1 -o " + out + " --budget 20 --guard-rounds 9 --cost-cache " + dir.file("costs.bin")
                             + " --report " + report);
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    CHECK(r.output.find("target: ort-cpu (ONNX Runtime, level all, ") != std::string::npos);
    // The console names every price model the candidates come from, and the guard's setting.
    CHECK(r.output.find(", analytic:cpu, analytic:v100; guard: ONNX Runtime, level all") != std::string::npos);
    std::ifstream in(report);
    const auto j = nlohmann::json::parse(in);
    CHECK(j["target"] == "ort-cpu");
    CHECK(j["cost_backend"].get<std::string>().find("ort:") == 0);
    CHECK(j["cost_backend"].get<std::string>().find(":all:t") != std::string::npos);  // priced at the target's level
    CHECK(j["ort_level"] == "all");
    CHECK(j["ort_threads"].get<int>() >= 1);
    CHECK(j["guard"]["levels"] == nlohmann::json({"all"}));  // the target's setting alone, unless --guard-levels
    // The target's prices proposed, and so did the analytic cpu and v100 presets.
    REQUIRE(j["proposers"].size() == 3);
    CHECK(j["proposers"][0]["model"] == j["cost_backend"]);
    CHECK(j["proposers"][1]["model"] == "analytic:cpu");
    CHECK(j["proposers"][2]["model"] == "analytic:v100");
    std::size_t proposed = 0;
    for (const auto& p : j["proposers"]) proposed += p["candidates"].get<std::size_t>();
    // Every timed candidate names the models that proposed it; a graph two models proposed
    // is timed once, and one written as the input is (fusions written back as the ops they
    // fused) is not timed at all.
    std::size_t named = 0;
    for (const auto& c : j["guard"]["candidates"]) {
        CHECK_FALSE(c["proposed_by"].empty());
        named += c["proposed_by"].size();
    }
    CHECK(named <= proposed);
    const std::string decision = j["guard"]["decision"];
    CHECK((decision == "candidate" || decision == "input"));
    // The report names the candidate that gained most at the target's level, when any was timed.
    if (!j["guard"]["candidates"].empty()) CHECK(j["guard"]["best_candidate"].get<std::size_t>() >= 1);
    CHECK(j["guard"].contains("vetoed_at"));
    CHECK(j["ort_before_ms"].get<double>() > 0);
    CHECK(j["ort_after_ms"].get<double>() > 0);
    if (decision == "candidate") {
        // Written only when faster beyond the noise at the target's setting.
        CHECK(j["ort_after_ms"].get<double>() < j["ort_before_ms"].get<double>());
        CHECK(j["written"] == "optimised");
        CHECK(j["verified"] == true);
        CHECK_FALSE(j["proposed_by"].empty());
    } else {
        CHECK(j["written"] == "input");
        CHECK(j["rewrites"].empty());
    }
    CHECK(std::filesystem::exists(out));

    // --guard-levels adds a level the written model must not lose at; --propose none keeps to the target's prices.
    const Result both = run_cli("optimize zoo:squeezenet1_1 -o " + out + " --budget 20 --guard-rounds 9 --ort-threads 1 --propose none "
                                "--guard-levels basic --cost-cache " + dir.file("costs.bin") + " --report " + report);
    REQUIRE_MESSAGE(both.exit_code == 0, both.output);
    std::ifstream again(report);
    const auto k = nlohmann::json::parse(again);
    CHECK(k["ort_threads"] == 1);
    CHECK(k["proposers"].size() == 1);
    if (k["guard"]["decision"] != "input" || !k["guard"]["candidates"].empty())
        CHECK(k["guard"]["levels"] == nlohmann::json({"all", "basic"}));
}

namespace {

/// A program started in a process group of its own (as a shell starts a foreground job),
/// its stderr readable through a pipe; the group is killed and reaped on destruction, so
/// a failed check leaves no process, zombie or descriptor behind.
class ProcessGroup {
public:
    explicit ProcessGroup(std::vector<std::string> argv, std::vector<std::string> environment) {
        int pipe_ends[2];
        REQUIRE(::pipe(pipe_ends) == 0);
        // Everything the child needs is built before fork: after it, only async-signal-safe calls.
        std::vector<char*> args, env;
        for (std::string& a : argv) args.push_back(a.data());
        args.push_back(nullptr);
        for (std::string& e : environment) env.push_back(e.data());
        for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
        env.push_back(nullptr);
        m_pid = ::fork();
        REQUIRE(m_pid >= 0);
        if (m_pid == 0) {
            ::setpgid(0, 0);
            const int null = ::open("/dev/null", O_WRONLY);
            ::dup2(null, STDOUT_FILENO);
            ::dup2(pipe_ends[1], STDERR_FILENO);
            ::execve(args[0], args.data(), env.data());
            ::_exit(127);
        }
        ::setpgid(m_pid, m_pid);  // also here, so that the group exists whichever runs first
        ::close(pipe_ends[1]);
        m_stderr = pipe_ends[0];
    }
    ProcessGroup(const ProcessGroup&) = delete;
    ProcessGroup& operator=(const ProcessGroup&) = delete;
    ~ProcessGroup() {
        if (m_pid > 0) {
            ::kill(-m_pid, SIGKILL);
            ::waitpid(m_pid, nullptr, 0);
        }
        if (m_stderr >= 0) ::close(m_stderr);
    }

    /// Reads stderr until `text` appears, the pipe ends or `seconds` pass; whether it appeared.
    bool wait_for(const std::string& text, double seconds) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
        while (said.find(text) == std::string::npos && read_some(deadline)) {}
        return said.find(text) != std::string::npos;
    }
    /// Reads stderr to its end (at most `seconds`), then reaps the program; its wait status.
    std::optional<int> finish(double seconds) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
        while (read_some(deadline)) {}
        int status = 0;
        if (::waitpid(m_pid, &status, WNOHANG) != m_pid) return std::nullopt;  // still running: the destructor kills it
        m_pid = -1;
        return status;
    }
    [[nodiscard]] ::pid_t pid() const { return m_pid; }
    std::string said;

private:
    bool read_some(std::chrono::steady_clock::time_point deadline) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        if (left <= 0) return false;
        pollfd fd{m_stderr, POLLIN, 0};
        if (::poll(&fd, 1, static_cast<int>(left)) <= 0) return false;
        std::array<char, 512> buffer{};
        const ssize_t n = ::read(m_stderr, buffer.data(), buffer.size());
        if (n <= 0) return false;
        said.append(buffer.data(), static_cast<std::size_t>(n));
        return true;
    }
    ::pid_t m_pid = -1;
    int m_stderr = -1;
};

}  // namespace

TEST_CASE("Ctrl-C at a terminal stops optimize's search over the ONNX Runtime worker; the best graph is verified and written") {
    if (!ort_installed()) return;
    const ScratchDir dir("rlflow_cli_sigint_group");
    const std::string out = dir.file("out.onnx");
    const std::string report = dir.file("report.json");
    // Priced afresh in ONNX Runtime (no cost cache), with a budget it would spend minutes on
    // and the target's prices alone (--propose none), so that the one search the signal stops
    // is the ORT-priced one; progress lines every 0.2 s say when it runs.
    ProcessGroup rlflow({RLFLOW_CLI_PATH, "optimize", "zoo:squeezenet1_1", "-o", out, "--report", report, "--budget", "1000000",
                         "--cost-cache", "none", "--propose", "none"},
                        {"RLFLOW_PROGRESS_INTERVAL=0.2"});
    REQUIRE_MESSAGE(rlflow.wait_for("search", 300), rlflow.said);  // the one search's progress (stderr)
    // As a terminal does: SIGINT to every process of the foreground group. The ONNX Runtime
    // worker, in a group of its own, does not get it, and times the guard's candidates after.
    REQUIRE(::kill(-rlflow.pid(), SIGINT) == 0);
    const std::optional<int> status = rlflow.finish(300);
    REQUIRE_MESSAGE(status.has_value(), rlflow.said);
    REQUIRE_MESSAGE(WIFEXITED(*status), rlflow.said);
    CHECK_MESSAGE(WEXITSTATUS(*status) == 0, rlflow.said);
    CHECK(rlflow.said.find("internal error") == std::string::npos);
    REQUIRE(std::filesystem::exists(out));
    std::ifstream in(report);
    const auto j = nlohmann::json::parse(in);
    CHECK(j["stop_reason"] == "interrupted");
    CHECK(j["verified"] == true);
    CHECK(j["ort_before_ms"].get<double>() > 0);  // the guard timed with the worker after the signal
}

TEST_CASE("optimize scales its budget with the graph, reports its memory, and stops at --memory-limit") {
    const ScratchDir dir("rlflow_cli_optimize_memory");
    const std::string out = dir.file("out.onnx");
    const std::string report = dir.file("report.json");
    const std::string base = "optimize zoo:inception_v3 -o " + out + " --cost analytic --guard none --report " + report;
    REQUIRE(run_cli(base + " --budget 40").exit_code == 0);
    std::ifstream in(report);
    const auto j = nlohmann::json::parse(in);
    CHECK(j["budget"] == 40);
    CHECK(j["peak_search_bytes"].get<double>() > 0);
    // The process's peak holds the search's and the graph's at least.
    CHECK(j["peak_rss_bytes"].get<double>() > j["peak_search_bytes"].get<double>());
    // The default budget: 1000 for a graph of under 8,000 nodes.
    REQUIRE(run_cli(base + " --budget 0 --time-limit 1").exit_code == 0);
    std::ifstream again(report);
    CHECK(nlohmann::json::parse(again)["budget"] == 1000);

    // The search holds about 4 MB on inception-v3 by its default budget (its tree, the
    // hashes seen and the prices of its working graph): a limit of one megabyte stops it
    // on the way, and what it writes is still verified.
    const Result limited = run_cli(base + " --memory-limit 1");
    REQUIRE_MESSAGE(limited.exit_code == 0, limited.output);
    CHECK(limited.output.find("stopped at the --memory-limit") != std::string::npos);
    std::ifstream third(report);
    const auto k = nlohmann::json::parse(third);
    CHECK(k["stop_reason"] == "memory_limit");
    CHECK(k["verified"] == true);
    CHECK(k["peak_search_bytes"].get<double>() > 1 << 20);
}

TEST_CASE("costs record writes a price table that optimize and train price from, and counts what it estimated") {
    const ScratchDir dir("rlflow_cli_price_table");
    const std::string table = dir.file("table.json");
    // Recorded from the analytic cpu preset, so the table's prices can be checked against it.
    const Result recorded = run_cli("costs record zoo:squeezenet1_1 --cost analytic --budget 10 --neighbours 30 --walks 2 -o " + table);
    REQUIRE_MESSAGE(recorded.exit_code == 0, recorded.output);
    std::ifstream in(table);
    const auto t = nlohmann::json::parse(in);
    CHECK(t["format"] == "rlflow-price-table");
    CHECK(t["version"] == 1);
    CHECK(t["backend"] == "analytic:cpu");
    CHECK(t["precision"] == "fp32");
    CHECK(t["target"].get<std::string>().find("ort-cpu") == 0);
    CHECK(t["entries"].size() > 10);
    // Fitted to the cpu preset's own prices from the cpu preset: the fit is exact.
    CHECK(t["fit"]["rms_log_error"].get<double>() < 1e-3);

    // Priced from the table, the model costs what the preset says: every signature is recorded.
    const std::string out = dir.file("out.onnx"), from_table = dir.file("t.json"), from_preset = dir.file("p.json");
    REQUIRE(run_cli("optimize zoo:squeezenet1_1 --budget 10 --guard none --cost table:" + table + " -o " + out + " --report " + from_table)
                .exit_code == 0);
    REQUIRE(run_cli("optimize zoo:squeezenet1_1 --budget 10 --guard none --cost analytic -o " + out + " --report " + from_preset)
                .exit_code == 0);
    std::ifstream a(from_table), b(from_preset);
    const auto ta = nlohmann::json::parse(a), pb = nlohmann::json::parse(b);
    CHECK(ta["cost_before_ms"].get<double>() == doctest::Approx(pb["cost_before_ms"].get<double>()).epsilon(1e-9));
    CHECK(ta["cost_backend"].get<std::string>() == "table:table:analytic:cpu");
    CHECK(ta["table"]["measured_signatures"].get<int>() > 0);
    CHECK(ta["table"].contains("estimated_signatures"));

    // An agent trains on the table's prices, and records what they stand for.
    const std::string agent = dir.file("agent");
    const Result trained = run_cli("train --graph zoo:squeezenet1_1 --cost table:" + table + " --rollout-steps 16 --updates 1 --checkpoint " + agent);
    REQUIRE_MESSAGE(trained.exit_code == 0, trained.output);
    std::ifstream state(agent + "/agent.json");
    CHECK(nlohmann::json::parse(state)["cost_backend"] == "table:table:analytic:cpu");

    // A damaged table, or a missing one, is refused naming the file, exit 2.
    std::ofstream(dir.file("bad.json")) << "{\"format\": \"rlflow-price-table\", \"version\": 99}";
    const Result bad = run_cli("optimize zoo:squeezenet1_1 --guard none --cost table:" + dir.file("bad.json") + " -o " + dir.file("x.onnx"));
    CHECK(bad.exit_code == 2);
    CHECK(bad.output.find(dir.file("bad.json")) != std::string::npos);
    CHECK(bad.output.find("version 99") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir.file("x.onnx")));
    CHECK(run_cli("optimize zoo:squeezenet1_1 --guard none --cost table:" + dir.file("none.json") + " -o " + dir.file("x.onnx")).exit_code == 2);
}

TEST_CASE("rules measure applies one family alone, verifies it, times it against the input beside a copy and writes a ledger") {
    if (!ort_installed()) return;
    const ScratchDir dir("rlflow_cli_rules_measure");
    const std::string ledger = dir.file("ledger.json");
    const std::string model = std::string(RLFLOW_SOURCE_DIR) + "/tests/data/resnet18_op17.onnx";
    // resnet18 has three pairs of sibling convolutions a merge with an enlarged kernel takes.
    const Result r = run_cli("rules measure " + model + " -o " + ledger + " --rules builtin --family merge_conv_enlarge_pair_bias"
                             + " --rounds 5 --noise-limit 0.5");
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    CHECK(r.output.find("target: ort-cpu (ONNX Runtime, level all, ") != std::string::npos);
    std::ifstream in(ledger);
    const auto j = nlohmann::json::parse(in);
    CHECK(j["target"] == "ort-cpu");
    CHECK(j["rounds"] == 5);
    REQUIRE(j["models"].size() == 1);
    const auto& m = j["models"][0];
    CHECK(m["model"] == model);
    CHECK(m["families_matching"] == 1);  // --family keeps the others out
    // The family is timed against the input as rlflow writes it; the file given, apart.
    CHECK(m["original_over_written"]["ratio"].get<double>() > 0);
    REQUIRE_FALSE(m["noise_ratios"].empty());
    for (const auto& noise : m["noise_ratios"]) CHECK(noise.get<double>() > 0);
    // Applied at every place it matches, and by the searches of the price models that
    // take it; each written form is timed once.
    REQUIRE_FALSE(m["results"].empty());
    const auto& everywhere = m["results"][0];
    CHECK(everywhere["family"] == "merge_conv_enlarge_pair_bias");
    CHECK(everywhere["how"] == "everywhere");
    CHECK(everywhere["matches"] == 3);
    CHECK(everywhere["applied"]["merge_conv_enlarge_pair_bias"] == 3);
    // Verified equal to the input before it was timed (a weight-free export's random
    // parameters give activations of any scale, so the check is relative).
    CHECK(std::isfinite(everywhere["max_abs_diff"].get<double>()));
    REQUIRE(everywhere.contains("screen"));
    CHECK(everywhere["screen"]["ratio"].get<double>() > 0);
    CHECK(everywhere["screen"]["input_ms"].get<double>() > 0);
    CHECK(everywhere["screen"]["rounds"].get<int>() <= 5);
    // "pays" needs a second comparison that confirms it.
    if (everywhere["pays"].get<bool>()) CHECK(everywhere.contains("confirm"));
    for (const auto& result : m["results"])
        if (result["how"] != "everywhere") CHECK(result["how"].get<std::string>().rfind("priced:", 0) == 0);
    REQUIRE(j["families"].size() == 1);
    CHECK(j["families"][0]["family"] == "merge_conv_enlarge_pair_bias");
    CHECK(j["families"][0]["models"] == nlohmann::json({"resnet18_op17"}));
}

TEST_CASE("rules measure refuses a missing model with exit code 2 and writes no ledger") {
    const ScratchDir dir("rlflow_cli_rules_measure_bad");
    const std::string ledger = dir.file("ledger.json");
    const Result r = run_cli("rules measure " + dir.file("missing.onnx") + " -o " + ledger + " --rules builtin");
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("missing.onnx") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(ledger));
}

TEST_CASE("optimize for ort-cpu also times the input with its grouped convolutions widened to ONNX Runtime's NCHWc block") {
    if (!ort_installed()) return;
    const ScratchDir dir("rlflow_cli_nchwc_groups");
    const std::string report = dir.file("report.json");
    // zoo:resnext50 (32 groups of 4 to 32 channels): its first stages' groups are narrower
    // than any NCHWc block. Only this proposer, so that the guard times its candidate.
    const Result r = run_cli("optimize zoo:resnext50 -o " + dir.file("out.onnx") + " --budget 5 --guard-rounds 5 --propose nchwc-groups"
                             + " --cost analytic --report " + report);
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    std::ifstream in(report);
    const auto j = nlohmann::json::parse(in);
    const int block = j["nchwc_block"].get<int>();
    if (block == 0) {
        MESSAGE("skipped: ONNX Runtime lays nothing out in NCHWc blocks on this CPU (no AVX2)");
        return;
    }
    const std::string name = "nchwc-groups:" + std::to_string(block);
    const auto& proposers = j["proposers"];
    const auto it = std::find_if(proposers.begin(), proposers.end(), [&](const auto& p) { return p["model"] == name; });
    REQUIRE(it != proposers.end());
    CHECK((*it)["candidates"] == 1);
    // Each merge halves a conv's groups: stage 1 (4 channels a group) needs two merges to
    // reach a block of 8, three for 16; stage 2 (8) one or two. Both rules count.
    bool timed = false;
    for (const auto& c : j["guard"]["candidates"])
        for (const auto& p : c["proposed_by"]) timed = timed || p == name;
    CHECK(timed);
    if (j["proposed_by"] == nlohmann::json({name}))
        CHECK((j["rewrites"].contains("merge_group_conv_bias") || j["rewrites"].contains("merge_group_conv")));
}
