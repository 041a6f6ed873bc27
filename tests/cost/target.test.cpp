// The target: where a model will run, its name table and its defaults.
#include <rlflow/cost/target.hpp>

#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <string>
#include <thread>

using namespace rlflow;

TEST_CASE("every target kind's name parses back to that kind, and an unknown one is refused naming the valid ones") {
    for (const cost::TargetKindName& n : cost::target_kind_names) {
        CHECK(cost::parse_target_kind(n.name) == n.kind);
        CHECK(cost::target_kind_name(n.kind) == n.name);
    }
    CHECK_THROWS_WITH_AS((void)cost::parse_target_kind("tpu"),
                         doctest::Contains("unknown target 'tpu'; the targets are ort-cpu, cuda"), precondition_error);
}

TEST_CASE("physical cores count each core of the affinity mask once, as the sysfs topology lists them") {
    const int cores = cost::physical_cores();
    CHECK(cores >= 1);
    CHECK(cores <= static_cast<int>(std::max(1U, std::thread::hardware_concurrency())));
    // Independently: distinct (package, core) pairs over every online CPU, where sysfs has them
    // (this process is not pinned in the test run, so the mask holds every online CPU).
    std::set<std::pair<long, long>> pairs;
    for (unsigned cpu = 0; cpu < std::thread::hardware_concurrency(); ++cpu) {
        const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
        long package = -1;
        long core = -1;
        std::ifstream(base + "physical_package_id") >> package;
        std::ifstream(base + "core_id") >> core;
        if (package < 0 || core < 0) return;  // no topology here: the fallback counted CPUs
        pairs.emplace(package, core);
    }
    CHECK(cores == static_cast<int>(pairs.size()));
}

TEST_CASE("the default cpu target is how an InferenceSession runs by default: level all, a thread per physical core") {
    const cost::Target t = cost::default_cpu_target();
    CHECK(t.kind == cost::TargetKind::ort_cpu);
    CHECK(t.ort.level == "all");
    CHECK(t.ort.threads == cost::physical_cores());
    CHECK(t.name() == "ort-cpu");
    const std::string threads = std::to_string(t.ort.threads) + (t.ort.threads == 1 ? " thread)" : " threads)");
    CHECK(t.describe() == "ort-cpu (ONNX Runtime, level all, " + threads);
    cost::Target one = t;
    one.ort.threads = 1;
    CHECK(one.describe() == "ort-cpu (ONNX Runtime, level all, 1 thread)");
    const cost::Target gpu = cost::default_target(cost::TargetKind::cuda);
    CHECK(gpu.describe() == "cuda (GPU 0, cuDNN/cuBLAS)");
}
