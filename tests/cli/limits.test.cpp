// Resource limits as a user meets them: a model or rule that would need more memory or
// nodes than rlflow allows itself is refused with exit code 2 and a message saying which
// limit, before it is built, and nothing is written.
#include "support.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace rlflow::cli_test;

TEST_CASE("a model too large to check in memory is refused with exit code 2, writing nothing") {
    const ScratchDir dir("rlflow-cli-limits-memory");
    const std::string out = dir.file("out.onnx");
    // A batch of 100,000 224x224 images is 60 GB of input alone: the search runs on shapes,
    // but the check of the result on random inputs would not fit.
    const Result r = run_cli("optimize zoo:resnet18 --batch 100000 --cost analytic --guard none --budget 50 -o " + out);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("of memory, more than the limit") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("a model with more nodes than --max-nodes is refused with exit code 2") {
    const std::string model = std::string(RLFLOW_SOURCE_DIR) + "/tests/data/opaque/conv_sin_branches.onnx";
    const Result refused = run_cli("info " + model + " --max-nodes 2");
    CHECK(refused.exit_code == 2);
    CHECK(refused.output.find("more than the limit of 2 (--max-nodes)") != std::string::npos);
    CHECK(run_cli("info " + model).exit_code == 0);
}

TEST_CASE("a rule file asking for a constant beyond the limit is refused with exit code 2, naming the rule") {
    const ScratchDir dir("rlflow-cli-limits-rule");
    const std::string rules = dir.file("huge.rules");
    std::ofstream(rules) << "rlflow-rules 1\n\nrule huge_constant\n  var w1\n"
                            "  src src0 = Constant() value=1 shape=[50000, 50000] fill=\"uniform\"\n"
                            "  src src1 = Add(w1, src0)\n"
                            "  dst dst0 = Constant() value=1 shape=[50000, 50000] fill=\"uniform\"\n"
                            "  dst dst1 = Add(dst0, w1)\n  out src1 -> dst1\n  status tested\nend\n";
    const Result r = run_cli("rules verify " + rules);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("huge_constant") != std::string::npos);
    CHECK(r.output.find("more than 268435456 elements") != std::string::npos);
}
