#pragma once
/// \file
/// Where a model will run: the target rlflow optimises for. A target is a runtime, its
/// settings and a device:
///   - ort-cpu: ONNX Runtime's CPU execution provider at an optimisation level and a
///     number of intra-op threads. Its default is how an InferenceSession with default
///     options runs a model: level `all`, one intra-op thread per physical core.
///   - cuda: a GPU, ops run with cuDNN/cuBLAS.
/// The target decides which prices the searches use, how the result is checked end to end
/// before it is written, and what the console and the report say. What pays depends on
/// it: a grouped-convolution merge that loses 1-2% at level basic with one thread wins
/// 5-18% at level all (docs/targets.md).

#include <rlflow/core/error.hpp>
#include <rlflow/cost/ort_worker.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include <sched.h>

namespace rlflow::cost {

/// The runtimes a model can be optimised for.
enum class TargetKind { ort_cpu, cuda };

/// A target kind's name on the command line and in reports, and what it means.
struct TargetKindName {
    TargetKind kind;
    std::string_view name;
    std::string_view meaning;
};

/// The one table of target names, read by the CLI, Python and the reports.
inline constexpr std::array<TargetKindName, 2> target_kind_names{{
    {TargetKind::ort_cpu, "ort-cpu", "ONNX Runtime's CPU execution provider on this machine"},
    {TargetKind::cuda, "cuda", "a GPU, ops run with cuDNN/cuBLAS"},
}};

/// The name of `kind` ("ort-cpu", "cuda").
[[nodiscard]] constexpr std::string_view target_kind_name(TargetKind kind) noexcept {
    for (const TargetKindName& n : target_kind_names)
        if (n.kind == kind) return n.name;
    return "unknown";
}

/// The valid target names, comma separated, for messages.
[[nodiscard]] inline std::string target_kind_list() {
    std::string names;
    for (const TargetKindName& n : target_kind_names) names += (names.empty() ? "" : ", ") + std::string(n.name);
    return names;
}

/// The kind `name` names; throws precondition_error naming the valid ones otherwise.
[[nodiscard]] inline TargetKind parse_target_kind(std::string_view name) {
    for (const TargetKindName& n : target_kind_names)
        if (n.name == name) return n.kind;
    throw precondition_error("unknown target '" + std::string(name) + "'; the targets are " + target_kind_list());
}

/// The physical cores this process may run on: distinct (package, core) pairs among the
/// CPUs in its affinity mask, read from sysfs. This is the number of intra-op threads
/// ONNX Runtime gives a session by default. Falls back to the logical CPUs when the
/// topology cannot be read.
[[nodiscard]] inline int physical_cores() {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof mask, &mask) != 0)
        return static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
    const auto read_id = [](int cpu, const char* field) {
        std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/" + field);
        long id = -1;
        in >> id;
        return in ? id : -1L;
    };
    std::set<std::pair<long, long>> cores;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &mask)) continue;
        const long package = read_id(cpu, "physical_package_id");
        const long core = read_id(cpu, "core_id");
        if (package < 0 || core < 0) return std::max(1, CPU_COUNT(&mask));
        cores.emplace(package, core);
    }
    return std::max<int>(1, static_cast<int>(cores.size()));
}

/// Where a model will run, with the settings that change what it costs there.
struct Target {
    TargetKind kind = TargetKind::ort_cpu;
    /// ort-cpu: the optimisation level and intra-op threads.
    OrtSettings ort{"all", 1};
    /// cuda: the device index.
    int gpu = 0;

    /// "ort-cpu" or "cuda".
    [[nodiscard]] std::string_view name() const noexcept { return target_kind_name(kind); }

    /// The target in words, for the console and the report: "ort-cpu (ONNX Runtime,
    /// level all, 2 threads)" or "cuda (GPU 0)".
    [[nodiscard]] std::string describe() const {
        if (kind == TargetKind::cuda) return "cuda (GPU " + std::to_string(gpu) + ", cuDNN/cuBLAS)";
        return "ort-cpu (ONNX Runtime, level " + ort.level + ", " + std::to_string(ort.threads)
               + (ort.threads == 1 ? " thread)" : " threads)");
    }
};

/// ONNX Runtime on this CPU as a session with default options runs: level all, one
/// intra-op thread per physical core.
[[nodiscard]] inline Target default_cpu_target() { return Target{TargetKind::ort_cpu, OrtSettings{"all", physical_cores()}, 0}; }

/// A target of `kind` with its defaults.
[[nodiscard]] inline Target default_target(TargetKind kind) {
    Target t = default_cpu_target();
    t.kind = kind;
    return t;
}

}  // namespace rlflow::cost
