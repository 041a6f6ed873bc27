#pragma once
/// \file
/// What `rlflow::optimize` makes a model faster for (the target: this machine's CPU, or a
/// GPU) and how it prices ops for it (the cost backend), chosen on purpose and named in the
/// console and the report; and where measured op costs are cached between runs.

#include <rlflow/core/names.hpp>
#include <rlflow/cost/analytic.hpp>
#include <rlflow/cost/cpu_profiler.hpp>
#include <rlflow/cost/cuda_plugin_loader.hpp>
#include <rlflow/cost/ort_backend.hpp>
#include <rlflow/cost/ort_worker.hpp>
#include <rlflow/cost/price_table.hpp>
#include <rlflow/cost/target.hpp>
#include <rlflow/optimize/hooks.hpp>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlflow::opt {

/// The CPU's model name (from /proc/cpuinfo), or "this machine's CPU".
inline std::string host_cpu_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    const std::string key = "model name";
    while (std::getline(in, line))
        if (line.starts_with(key)) {
            const auto colon = line.find(':');
            if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
        }
    return "this machine's CPU";
}

/// Whether a CUDA device can be used (a CUDA build with a visible GPU). Loads the CUDA
/// plugin only on a machine that shows an NVIDIA device.
inline bool gpu_available() {
    const cost::LoadedCudaPlugin& plugin = cost::cuda_plugin();
    return plugin.api && plugin.api->device_count() > 0;
}

/// How ops are priced for a search.
enum class CostKind { analytic, cpu, ort, cudnn, table };

/// The one table of cost backend names (--cost, Python's cost). `table` is written
/// table:FILE.
inline constexpr NameTable<CostKind, 5> cost_kind_names{{{
    {CostKind::analytic, "analytic"},
    {CostKind::cpu, "cpu"},
    {CostKind::ort, "ort"},
    {CostKind::cudnn, "cudnn"},
    {CostKind::table, "table"},
}}};

/// What --cost, --device and the target resolve to.
struct CostChoice {
    CostKind kind = CostKind::analytic;
    /// analytic: the device preset.
    std::string preset = "cpu";
    /// table: the price table's file.
    std::filesystem::path table;

    /// "analytic:cpu", "ort", "table:FILE", ...: how --propose and the console name it.
    [[nodiscard]] std::string name() const {
        if (kind == CostKind::analytic) return "analytic:" + preset;
        if (kind == CostKind::table) return "table:" + table.string();
        return std::string(cost_kind_names.name(kind));
    }
    [[nodiscard]] bool operator==(const CostChoice&) const = default;
};

/// The price model `name` names: analytic (with `preset`), cpu, ort, cudnn,
/// analytic:PRESET or table:FILE. Throws precondition_error
/// naming the valid ones otherwise.
inline CostChoice parse_cost_choice(const std::string& name, const std::string& preset = "cpu") {
    if (name.starts_with("table:")) {
        RLFLOW_EXPECTS(name.size() > 6, precondition_error, "table:FILE needs a file");
        return {CostKind::table, preset, name.substr(6)};
    }
    if (name.starts_with("analytic:")) {
        CostChoice c{CostKind::analytic, name.substr(9), {}};
        (void)cost::AnalyticBackend::preset(c.preset);  // names the presets when unknown
        return c;
    }
    if (const auto kind = cost_kind_names.find(name); kind && *kind != CostKind::table) return {*kind, preset, {}};
    throw precondition_error("unknown price model '" + name + "'; use cpu, ort, cudnn, analytic:PRESET (" + cost::device_preset_names()
                             + ") or table:FILE");
}

/// ONNX Runtime's graph optimisation levels, as --ort-level, --guard-levels and Python's
/// ort_level take them.
inline const std::vector<std::string> ort_level_names{"disabled", "basic", "extended", "all"};

/// Where the model will run and how its ops are priced there; nullopt is "auto" (the
/// choice resolve_target and resolve_cost make).
struct TargetSpec {
    /// auto: cuda on a machine with a usable GPU in a CUDA build, else ort-cpu.
    std::optional<cost::TargetKind> kind;
    /// auto: the target's own prices (resolve_cost).
    std::optional<CostKind> cost;
    /// cost table: the price table's file.
    std::filesystem::path table;
    /// The analytic preset; auto: the target's (cpu for ort-cpu, v100 for cuda). A preset
    /// given with cost auto means analytic prices.
    std::optional<std::string> device;
    /// ort-cpu: ONNX Runtime's level and intra-op threads (0: the target's defaults).
    std::optional<std::string> ort_level;
    int ort_threads = 0;

    /// The target's own prices: neither the cost nor the preset chosen.
    [[nodiscard]] bool own_prices() const noexcept { return !cost && !device; }
};

/// The target `f` names, checked: cuda needs a CUDA build and a GPU (the error says which
/// is missing); more ORT threads than physical cores is allowed, with a warning to `warn`.
inline cost::Target resolve_target(const TargetSpec& f, const MessageHook& warn = print_message) {
    const cost::TargetKind kind = f.kind ? *f.kind : gpu_available() ? cost::TargetKind::cuda : cost::TargetKind::ort_cpu;
    cost::Target t = cost::default_target(kind);
    if (kind == cost::TargetKind::cuda) {
        const cost::LoadedCudaPlugin& plugin = cost::cuda_plugin();
        if (!plugin.api) throw precondition_error("--target cuda: " + plugin.reason);
        if (plugin.api->device_count() <= 0) throw precondition_error("--target cuda: the CUDA plugin sees no GPU on this machine");
    }
    if (f.ort_level) t.ort.level = *f.ort_level;
    if (f.ort_threads > 0) t.ort.threads = f.ort_threads;
    t.ort.validate();
    if (t.ort.threads > cost::physical_cores())
        tell(warn, MessageKind::warning, "warning: --ort-threads " + std::to_string(t.ort.threads) + " is more than this machine's "
             + std::to_string(cost::physical_cores()) + " physical cores; timings will share cores");
    return t;
}

/// The cost backend `f` names for target `t`: a chosen cost; else a chosen preset means
/// its analytic prices; else the target's own prices (ort for ort-cpu when
/// ONNX Runtime is installed, cudnn for cuda), falling back to the analytic preset.
inline CostChoice resolve_cost(const TargetSpec& f, const cost::Target& t) {
    const bool gpu = t.kind == cost::TargetKind::cuda;
    CostChoice c;
    c.preset = f.device ? *f.device : gpu ? "v100" : "cpu";
    (void)cost::AnalyticBackend::preset(c.preset);  // names the presets when unknown
    if (!f.cost) {
        c.kind = f.device ? CostKind::analytic : gpu ? CostKind::cudnn : cost::ort_unavailable_reason() ? CostKind::analytic : CostKind::ort;
        return c;
    }
    c.kind = *f.cost;
    if (c.kind == CostKind::table) {
        RLFLOW_EXPECTS(!f.table.empty(), precondition_error, "table:FILE needs a file");
        c.table = f.table;
    }
    return c;
}

/// The device a target runs on, in words: the CPU's model name, or the GPU's index.
inline std::string target_device(const cost::Target& t) {
    if (t.kind == cost::TargetKind::cuda) return "GPU " + std::to_string(t.gpu);
    return host_cpu_name();
}

/// The target that prices of `c` stand for, in words, as an agent records what it was
/// trained for: a GPU preset's prices train for a GPU (priced, not measured) on any
/// machine; the others stand for target `t`.
inline std::string priced_target(const CostChoice& c, const cost::Target& t) {
    if (c.kind == CostKind::analytic && c.preset != "cpu") return "cuda (priced by the analytic " + c.preset + " preset, not measured)";
    if (c.kind == CostKind::analytic) return t.describe() + ", priced by the analytic cpu preset";
    return t.describe();
}

/// Settings of a backend that are not the choice itself.
struct BackendExtras {
    std::uint64_t seed = 0;
    /// ort: price fusions as com.microsoft.FusedConv.
    bool fused_conv_microsoft = false;
};

/// Calls `f(backend)` with the backend `c` names, built for target `t`.
template <class F>
decltype(auto) with_cost_backend(const CostChoice& c, const cost::Target& t, const BackendExtras& extras, F&& f) {
    switch (c.kind) {
        case CostKind::cpu: return f(cost::CpuProfiler{});
        case CostKind::ort: {
            cost::OrtBackendOptions ort;
            ort.settings = t.ort;
            ort.seed = extras.seed;
            ort.fused_conv_microsoft = extras.fused_conv_microsoft;
            return f(cost::OrtBackend(ort));
        }
        case CostKind::cudnn: {
            const cost::LoadedCudaPlugin& plugin = cost::cuda_plugin();
            if (!plugin.api) throw precondition_error("--cost cudnn needs a GPU and rlflow's CUDA plugin: " + plugin.reason);
            return f(cost::PluginCostBackend(plugin.api->make_profiler(t.gpu)));
        }
        case CostKind::table: return f(cost::TableBackend(c.table));
        case CostKind::analytic: break;
    }
    return f(cost::AnalyticBackend::preset(c.preset));
}

/// A file name made of a backend's name: characters other than [A-Za-z0-9._-] become '_'.
inline std::string file_safe(std::string name) {
    for (char& c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) c = '_';
    return name;
}

/// Where measured op costs of `backend_name` are cached by default:
/// $XDG_CACHE_HOME/rlflow, else ~/.cache/rlflow; nullopt when neither is set.
inline std::optional<std::filesystem::path> default_cost_cache(const std::string& backend_name) {
    std::filesystem::path dir;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') dir = std::filesystem::path(xdg) / "rlflow";
    else if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/')
        dir = std::filesystem::path(home) / ".cache" / "rlflow";
    else return std::nullopt;
    return dir / ("costs-" + file_safe(backend_name) + ".bin");
}

}  // namespace rlflow::opt
