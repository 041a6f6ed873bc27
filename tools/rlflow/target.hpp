#pragma once
// The flags of where a model will run and how its ops are priced (--target, --cost,
// --device, --ort-level, --ort-threads), shared by every command that prices or times
// graphs, and their reading into the library's TargetSpec (rlflow/optimize/target.hpp).

#include <rlflow/optimize/target.hpp>

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace rlflow::cli {

/// The flags every command that prices or times graphs shares: where the model will run
/// (--target, refined by --ort-level and --ort-threads) and how its ops are priced there
/// (--cost, --device).
struct TargetFlags {
    /// auto, or a name in cost::target_kind_names.
    std::string target = "auto";
    /// auto (the target's own prices), or a name in cost_kind_names.
    std::string cost = "auto";
    /// auto (the target's preset), or a name in cost::device_presets.
    std::string device = "auto";
    /// Empty: the target's level (all).
    std::string ort_level;
    /// 0: the target's threads (one per physical core).
    int ort_threads = 0;
};

/// Adds --target, --cost, --device, --ort-level and --ort-threads to `cmd`.
inline void add_target_flags(CLI::App& cmd, TargetFlags& f) {
    std::vector<std::string> targets{"auto"};
    for (const cost::TargetKindName& t : cost::target_kind_names) targets.emplace_back(t.name);
    cmd.add_option("--target", f.target,
                   "where the model will run: auto (cuda on a machine with a usable GPU in a CUDA build, else ort-cpu), "
                   "ort-cpu (ONNX Runtime's CPU provider; by default level all with a thread per physical core, as an "
                   "InferenceSession runs) or cuda")
        ->check(CLI::IsMember(targets))->capture_default_str();
    cmd.add_option("--cost", f.cost,
                   "how ops are priced: auto (the target's own: ort for ort-cpu when ONNX Runtime is installed, cudnn for "
                   "cuda; else analytic), analytic (a roofline, see --device), cpu (ops timed in the reference executor), "
                   "ort (ops timed in ONNX Runtime at the target's level and threads), cudnn (cuDNN/cuBLAS; needs a GPU) or "
                   "table:FILE (a price table `rlflow costs record` wrote, on any machine)")
        ->check(CLI::Validator(
            [](std::string& v) -> std::string {
                if (v == "auto" || v == "analytic" || v.starts_with("table:")) return {};
                if (const auto kind = opt::cost_kind_names.find(v); kind && *kind != opt::CostKind::table) return {};
                return "unknown cost backend '" + v + "'; use auto, analytic, cpu, ort, cudnn or table:FILE";
            },
            "COST"))
        ->capture_default_str();
    std::vector<std::string> devices{"auto"};
    for (const cost::DeviceSpec& d : cost::device_presets) devices.emplace_back(d.name);
    cmd.add_option("--device", f.device,
                   "analytic roofline preset (implies --cost analytic unless --cost says otherwise): auto (the target's: cpu "
                   "for ort-cpu, v100 for cuda), " + cost::device_preset_names())
        ->check(CLI::IsMember(devices))->capture_default_str();
    cmd.add_option("--ort-level", f.ort_level, "ort-cpu target: ONNX Runtime's optimisation level (default: all)")
        ->check(CLI::IsMember(opt::ort_level_names));
    cmd.add_option("--ort-threads", f.ort_threads,
                   "ort-cpu target: ONNX Runtime's intra-op threads (default: this machine's physical cores, " +
                       std::to_string(cost::physical_cores()) + ")")
        ->check(CLI::PositiveNumber);
}


/// The TargetSpec the flags name ("auto" is nullopt): strings read once, here.
inline opt::TargetSpec target_spec(const TargetFlags& f) {
    opt::TargetSpec spec;
    if (f.target != "auto") spec.kind = cost::parse_target_kind(f.target);
    if (f.cost.starts_with("table:")) {
        spec.cost = opt::CostKind::table;
        spec.table = f.cost.substr(6);
    } else if (f.cost != "auto") {
        spec.cost = opt::cost_kind_names.parse(f.cost, "cost backend");
    }
    if (f.device != "auto") spec.device = f.device;
    if (!f.ort_level.empty()) spec.ort_level = f.ort_level;
    spec.ort_threads = f.ort_threads;
    return spec;
}

/// The target the flags name (opt::resolve_target).
inline cost::Target resolve_target(const TargetFlags& f) { return opt::resolve_target(target_spec(f)); }

/// The cost backend the flags name for target `t` (opt::resolve_cost).
inline opt::CostChoice resolve_cost(const TargetFlags& f, const cost::Target& t) { return opt::resolve_cost(target_spec(f), t); }

}  // namespace rlflow::cli
