#pragma once
// `rlflow rules measure MODEL... -o ledger.json [--target ...] [--rules R] [--family F]...
//  [--rounds N]`: the ledger of what pays. For each model, each rule family (a built-in
// rule, or the generated rules that rewrite the same ops into the same ops) that matches
// in it is applied alone: "everywhere" (at every place it matches in the input; the group
// merges also "nchwc-groups:B", as optimize proposes them for ort-cpu) and "priced:MODEL"
// (the greedy search with the family's rules alone under a price model: the target's,
// then the analytic cpu and v100 presets `optimize` also proposes with). Each result whose
// written form differs from the input's and from the others' is verified against the input
// on random inputs, then timed whole at the target against the input as rlflow writes it
// unchanged (what import and export alone change is timed apart, as
// "original_over_written"), interleaved run by run, beside a copy of the input (the
// comparison's noise floor). A result that screens faster beyond --min-gain is timed again
// alone against the input in fresh sessions: it "pays" when that second comparison's sign
// test says faster too.

#include "command_optimize.hpp"

#include <rlflow/optimize.hpp>
#include <rlflow/cost/ort_backend.hpp>
#include <rlflow/rewrite/builtin_rules.hpp>
#include <rlflow/search/greedy.hpp>
#include <rlflow/search/guard.hpp>
#include <rlflow/search/ledger.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace rlflow::cli {

struct MeasureOptions {
    std::vector<std::string> models;
    std::string output;
    ModelOptions load;
    TargetFlags where;
    std::string rules = "default";
    /// Families to measure (names as the ledger gives them); empty: every family that
    /// matches somewhere in the model.
    std::vector<std::string> families;
    int rounds = 21;
    int warmup = 2;
    double min_gain = 0.005;
    /// A copy of the input timed further than this from it: the comparison is too noisy.
    double noise_limit = 0.02;
    double significance = 0.05;
    /// Results timed in one interleaved comparison (beside the input and its copy).
    std::size_t batch = 8;
    std::uint64_t seed = 0;
};

/// The rule set's families, each with its rules, in order of first appearance.
inline std::vector<std::pair<std::string, std::vector<rewrite::Rule>>> rule_families(const rewrite::RuleSet& rules) {
    const std::set<std::string> builtin = search::builtin_rule_names();
    std::vector<std::pair<std::string, std::vector<rewrite::Rule>>> out;
    std::map<std::string, std::size_t> where;
    for (const rewrite::Rule& rule : rules) {
        const std::string family = search::rule_family(rule, builtin);
        const auto [at, fresh] = where.emplace(family, out.size());
        if (fresh) out.push_back({family, {}});
        out[at->second].second.push_back(rule);
    }
    return out;
}

/// `graph` with the family applied at every place it matches in `graph` itself (not at
/// places its own rewrites create), and how often each rule was applied.
inline std::pair<Graph, std::map<std::string, std::size_t>> apply_everywhere(const Graph& graph,
                                                                           const std::shared_ptr<const rewrite::RuleSet>& family) {
    rewrite::Rewriter rw(graph, family, search::every_location);
    const std::uint32_t bound = graph.id_bound();
    const auto applied = opt::apply_while(rw, [&](std::size_t rule, const rewrite::Location& at) {
        const std::size_t n = (*family)[rule].source.size();
        return std::all_of(at.nodes.begin(), at.nodes.begin() + static_cast<std::ptrdiff_t>(n),
                           [&](NodeId id) { return id.value < bound; });
    });
    return {rw.graph(), applied};
}

/// One rewritten model to time: which family made it, how, and what it applied.
struct LedgerVariant {
    std::string family;
    std::string how;
    std::map<std::string, std::size_t> applied;
    /// The rewritten model as written (graphs are not kept: a model's weights each).
    std::filesystem::path file;
    nlohmann::json result;
};

/// One timing of `files` (index 0 the input, which must run) at the target's level; the
/// runs per file (none for a file ONNX Runtime cannot run, its error in `errors`).
inline std::vector<std::vector<double>> time_files(cost::OrtWorker& worker, const cost::Target& target, const MeasureOptions& o,
                                                   const std::vector<std::filesystem::path>& files, std::vector<std::string>& errors) {
    cost::OrtTimingRequest request;
    request.settings = target.ort;
    request.warmup = o.warmup;
    request.runs = o.rounds;
    request.interleave = true;
    request.seed = o.seed;
    std::vector<std::vector<double>> runs;
    errors.clear();
    for (const cost::ModelTiming& t : worker.time(files, request)) {
        runs.push_back(t.ok() ? t.runs_ms : std::vector<double>{});
        errors.push_back(t.ok() ? std::string() : t.error);
    }
    RLFLOW_EXPECTS(!runs.empty() && !runs.front().empty(), io_error,
                   files.front().string() + ": ONNX Runtime cannot run it: " + (errors.empty() ? "" : errors.front()));
    return runs;
}

inline nlohmann::json verdict_summary(const search::CandidateVerdict& v) {
    return {{"ratio", v.median_ratio}, {"wins", v.wins}, {"rounds", v.rounds}, {"p_faster", v.p_faster}, {"p_slower", v.p_slower},
            {"input_ms", v.input_median_ms}, {"variant_ms", v.candidate_median_ms}};
}

/// A family that matches in the model, with its rules as a set and its matches there.
struct MatchingFamily {
    std::string name;
    std::shared_ptr<const rewrite::RuleSet> rules;
    std::size_t matches = 0;
};

/// The families of `rules` that `o` asks for and that match somewhere in `input`.
inline std::vector<MatchingFamily> matching_families(const MeasureOptions& o, const Graph& input, const rewrite::RuleSet& rules) {
    std::vector<MatchingFamily> out;
    for (auto& [name, members] : rule_families(rules)) {
        if (!o.families.empty() && std::find(o.families.begin(), o.families.end(), name) == o.families.end()) continue;
        auto family = std::make_shared<const rewrite::RuleSet>(std::move(members));
        const rewrite::Rewriter probe(input, family, search::every_location);
        std::size_t matches = 0;
        for (std::size_t r = 0; r < family->size(); ++r) matches += probe.index().num_choices(r);
        if (matches > 0) out.push_back({name, std::move(family), matches});
    }
    return out;
}

/// Collects a model's rewritten forms: each written form once, each verified against
/// the input, each written to a file to be timed.
class LedgerVariants {
public:
    LedgerVariants(const OptimizeOptions& as_optimize, const Graph& input, std::filesystem::path folder)
        : m_as_optimize(as_optimize), m_input(input), m_folder(std::move(folder)),
          m_forms{canonical_form(opt::written_back(input, as_optimize.save, import_options(as_optimize.load))).bytes} {}

    /// Adds `g`, which `family` made `how` by applying `applied`, unless its written form
    /// is the input's or another's; `extra` goes into its result.
    void add(const MatchingFamily& family, const std::string& how, Graph g, const std::map<std::string, std::size_t>& applied,
             nlohmann::json extra) {
        if (applied.empty()) return;
        opt::settle_as_written(g);
        std::string form = canonical_form(opt::written_back(g, m_as_optimize.save, import_options(m_as_optimize.load))).bytes;
        if (std::find(m_forms.begin(), m_forms.end(), form) != m_forms.end()) {
            skipped.push_back({{"family", family.name}, {"how", how}, {"matches", family.matches},
                               {"why", "written as the input or as another result"}});
            return;
        }
        const opt::Verification check = opt::verify(m_input, g, {m_as_optimize.verify_trials}, m_as_optimize.seed);
        if (!check.equal) {
            // A verified rule that changes outputs is a defect in rlflow: never timed, and
            // the command fails once the ledger is written.
            std::fprintf(stderr, "error: family %s (%s) changed the model's outputs: %s\n", family.name.c_str(), how.c_str(),
                         check.detail.c_str());
            skipped.push_back({{"family", family.name}, {"how", how}, {"matches", family.matches},
                               {"why", "differs from the input: " + check.detail}});
            unsound = true;
            return;
        }
        m_forms.push_back(std::move(form));
        extra["family"] = family.name;
        extra["how"] = how;
        extra["matches"] = family.matches;
        extra["applied"] = applied;
        extra["max_abs_diff"] = check.max_abs_diff;
        const std::filesystem::path file = m_folder / ("variant_" + std::to_string(variants.size()) + ".onnx");
        onnx_io::save_onnx(g, file, {});
        variants.push_back({family.name, how, applied, file, std::move(extra)});
    }

    std::vector<LedgerVariant> variants;
    nlohmann::json skipped = nlohmann::json::array();
    bool unsound = false;

private:
    const OptimizeOptions& m_as_optimize;
    const Graph& m_input;
    std::filesystem::path m_folder;
    std::vector<std::string> m_forms;
};

/// Each family's greedy search under `model`'s prices: the locations an optimiser pricing
/// with it would take ("priced:MODEL").
template <cost::CostBackend Backend>
void add_priced(LedgerVariants& out, const Graph& input, const std::vector<MatchingFamily>& families, cost::CostModel<Backend>& model) {
    ProgressBar bar("priced " + model.name(), families.size());
    for (std::size_t i = 0; i < families.size(); ++i) {
        bar.update(i, families[i].name);
        search::SearchOptions options;
        options.budget = search::default_budget(input.num_nodes());
        options.stop = &interrupted;
        search::SearchResult r = search::greedy(input, families[i].rules, model, options);
        const double before = r.initial_cost_ms;
        const double after = r.best_cost_ms;
        out.add(families[i], "priced:" + model.name(), std::move(r.graph), r.rewrites,
                {{"cost_model", model.name()}, {"cost_before_ms", before}, {"cost_after_ms", after}});
    }
    bar.finish();
}

/// Times every variant against the input (in batches, each beside a copy of the input),
/// then times again those that screened faster. Fills each variant's result and returns
/// the copies' ratios (the noise floor of each batch).
inline std::vector<double> time_variants(cost::OrtWorker& worker, const cost::Target& target, const MeasureOptions& o,
                                         const std::filesystem::path& input_file, const std::filesystem::path& folder,
                                         std::vector<LedgerVariant>& variants) {
    const std::filesystem::path copy = folder / "input_copy.onnx";
    std::filesystem::copy_file(input_file, copy);
    search::GuardOptions decision;
    decision.min_gain = o.min_gain;
    std::vector<double> noise;
    ProgressBar bar("timing", variants.size());
    for (std::size_t first = 0; first < variants.size(); first += o.batch) {
        const std::size_t last = std::min(variants.size(), first + o.batch);
        std::vector<std::filesystem::path> files{input_file, copy};
        for (std::size_t v = first; v < last; ++v) files.push_back(variants[v].file);
        bar.update(first, "timing " + std::to_string(files.size()) + " models at level " + target.ort.level);
        std::vector<std::string> errors;
        // A copy of the input further than --noise-limit from it means the machine was too
        // busy to judge: timed again, at most twice; then the batch's results count for nothing.
        search::LevelTimings timings;
        for (int attempt = 0; attempt < 3; ++attempt) {
            timings = {target.ort.level, time_files(worker, target, o, files, errors)};
            noise.push_back(search::detail::compare(timings, 0, decision, o.significance).median_ratio);
            if (std::abs(noise.back() - 1) <= o.noise_limit) break;
        }
        const bool noisy = std::abs(noise.back() - 1) > o.noise_limit;
        for (std::size_t v = first; v < last; ++v) {
            nlohmann::json& r = variants[v].result;
            r["pays"] = false;
            r["slower"] = false;
            if (timings.runs_ms[v - first + 2].empty()) {
                r["error"] = "ONNX Runtime cannot run it: " + errors[v - first + 2];
                continue;
            }
            const search::CandidateVerdict screen = search::detail::compare(timings, v - first + 1, decision, o.significance);
            r["screen"] = verdict_summary(screen);
            r["noise_ratio"] = noise.back();
            r["noisy"] = noisy;
            if (noisy) continue;
            r["slower"] = screen.slower;
            if (screen.median_ratio < 1 - o.min_gain) {
                const search::LevelTimings again{target.ort.level, time_files(worker, target, o, {input_file, files[v - first + 2]}, errors)};
                if (again.runs_ms[1].empty()) {
                    r["error"] = "ONNX Runtime cannot run it again: " + errors[1];
                    continue;
                }
                const search::CandidateVerdict confirm = search::detail::compare(again, 0, decision, o.significance);
                r["confirm"] = verdict_summary(confirm);
                r["pays"] = confirm.faster;
            }
        }
    }
    bar.finish();
    return noise;
}

/// The ledger's entry for one model.
inline nlohmann::json measure_model(const MeasureOptions& o, const std::string& path, const cost::Target& target,
                                    const opt::CostChoice& pricing, const rewrite::RuleSet& rules, cost::OrtWorker& worker,
                                    bool& unsound) {
    OptimizeOptions as_optimize;
    as_optimize.model = path;
    as_optimize.load = o.load;
    as_optimize.load.seed = o.seed;
    as_optimize.seed = o.seed;
    as_optimize.verify_trials = 1;
    const Graph input = load_model(path, as_optimize.load);
    nlohmann::json entry{{"model", path}, {"nodes", input.num_nodes()}};
    const cost::detail::ScratchFolder scratch({});
    const std::vector<MatchingFamily> families = matching_families(o, input, rules);
    LedgerVariants found(as_optimize, input, scratch.path());
    for (const MatchingFamily& family : families) {
        auto [g, applied] = apply_everywhere(input, family.rules);
        found.add(family, "everywhere", std::move(g), applied, nlohmann::json::object());
        // The group merges as the ort-cpu target applies them: each grouped Conv outside
        // ONNX Runtime's NCHWc layout widened until its groups are whole blocks.
        if (family.name.starts_with("merge_group_conv") && target.kind == cost::TargetKind::ort_cpu) {
            const std::int64_t block = opt::ort_nchwc_block();
            auto [widened, merges] = opt::widen_groups(input, block);
            found.add(family, std::string(opt::nchwc_groups_proposer) + ":" + std::to_string(block), std::move(widened), merges,
                      nlohmann::json::object());
        }
    }
    // The target's prices, then the proposers optimize also searches under by default.
    std::vector<opt::CostChoice> pricings{pricing};
    for (const char* preset : {"cpu", "v100"})
        if (!(opt::CostChoice{opt::CostKind::analytic, preset, {}} == pricing)) pricings.push_back({opt::CostKind::analytic, preset, {}});
    for (const opt::CostChoice& choice : pricings)
        opt::with_cost_backend(choice, target, {o.seed, false}, [&](auto backend) {
            cost::CostModel<decltype(backend)> model(std::move(backend));
            const auto cache = opt::cost_cache_path({}, model.name());
            opt::load_cost_cache(model, cache, opt::print_message);
            add_priced(found, input, families, model);
            opt::save_cost_cache(model, cache, false, opt::print_message);
        });
    entry["families_matching"] = families.size();
    entry["skipped"] = found.skipped;
    unsound = unsound || found.unsound;
    std::vector<LedgerVariant> variants = std::move(found.variants);
    // Each family is timed against the input as rlflow writes it unchanged, so that what
    // the import and the export alone change (static shape arithmetic folded, Identity
    // and Dropout gone) is not credited to the family. That change is measured apart.
    const std::filesystem::path input_file = scratch.path() / "input.onnx";
    onnx_io::save_onnx(input, input_file, {});
    if (const auto file = model_file(as_optimize.model)) {
        std::vector<std::string> errors;
        search::GuardOptions decision;
        const search::LevelTimings t{target.ort.level, time_files(worker, target, o, {input_file, *file}, errors)};
        if (!t.runs_ms[1].empty())
            entry["original_over_written"] = verdict_summary(search::detail::compare(t, 0, decision, o.significance));
    }
    const std::vector<double> noise = time_variants(worker, target, o, input_file, scratch.path(), variants);
    entry["noise_ratios"] = noise;
    entry["results"] = nlohmann::json::array();
    for (const LedgerVariant& v : variants) entry["results"].push_back(v.result);
    return entry;
}

/// Per family over the models: the best result's ratio on each model (the confirmed one
/// where there is one), their median, and the models where it paid or was slower.
inline nlohmann::json ledger_summary(const nlohmann::json& models) {
    struct Row {
        std::vector<double> ratios;
        std::vector<std::string> measured, pays, slower;
    };
    std::map<std::string, Row> rows;
    for (const nlohmann::json& m : models) {
        std::map<std::string, double> best;
        std::set<std::string> paid, lost;
        for (const nlohmann::json& r : m["results"]) {
            if (!r.contains("screen") || r.value("noisy", false)) continue;  // not run, or not judged
            const std::string family = r["family"];
            const double ratio = r.contains("confirm") ? r["confirm"]["ratio"].get<double>() : r["screen"]["ratio"].get<double>();
            const auto at = best.find(family);
            if (at == best.end() || ratio < at->second) best[family] = ratio;
            if (r["pays"].get<bool>()) paid.insert(family);
            if (r["slower"].get<bool>()) lost.insert(family);
        }
        const std::string name = std::filesystem::path(m["model"].get<std::string>()).stem().string();
        for (const auto& [family, ratio] : best) {
            Row& row = rows[family];
            row.ratios.push_back(ratio);
            row.measured.push_back(name);
            if (paid.contains(family)) row.pays.push_back(name);
            if (lost.contains(family) && !paid.contains(family)) row.slower.push_back(name);
        }
    }
    nlohmann::json out = nlohmann::json::array();
    for (const auto& [family, row] : rows)
        out.push_back({{"family", family}, {"models", row.measured}, {"median_ratio", cost::detail::median(row.ratios)},
                       {"best_ratio", *std::min_element(row.ratios.begin(), row.ratios.end())},
                       {"pays_on", row.pays}, {"slower_on", row.slower}});
    std::sort(out.begin(), out.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
        return a["median_ratio"].get<double>() < b["median_ratio"].get<double>();
    });
    return out;
}

inline void measure_command(const MeasureOptions& o) {
    check_output_path(o.output, "--output");
    for (const std::string& path : o.models)
        if (!path.starts_with(zoo_prefix)) check_model_file(path);  // before minutes of work on the others
    const cost::Target target = resolve_target(o.where);
    RLFLOW_EXPECTS(target.kind == cost::TargetKind::ort_cpu, precondition_error,
                   "rules measure times models in ONNX Runtime; the target is " + target.describe() + " (use --target ort-cpu)");
    if (const auto why = cost::ort_unavailable_reason()) throw precondition_error("rules measure: " + *why + "; " + cost::ort_install_hint());
    const opt::CostChoice pricing = resolve_cost(o.where, target);
    const auto rules = load_rule_set(o.rules);
    std::printf("target: %s on %s; prices: %s; %zu rules\n", target.describe().c_str(), opt::target_device(target).c_str(),
                pricing.name().c_str(), rules->size());
    std::fflush(stdout);
    cost::OrtWorker worker;
    bool unsound = false;
    nlohmann::json models = nlohmann::json::array();
    for (const std::string& path : o.models) {
        std::printf("%s\n", path.c_str());
        std::fflush(stdout);
        models.push_back(measure_model(o, path, target, pricing, *rules, worker, unsound));
        for (const nlohmann::json& r : models.back()["results"]) {
            if (!r.contains("screen")) {
                std::printf("  %-48s %-10s %s\n", r["family"].get<std::string>().c_str(), r["how"].get<std::string>().c_str(),
                            r.value("error", std::string("not timed")).c_str());
                continue;
            }
            // The model's time with the family over the input's (the second comparison's when run).
            std::printf("  %-48s %-10s %.3f%s\n", r["family"].get<std::string>().c_str(), r["how"].get<std::string>().c_str(),
                        (r.contains("confirm") ? r["confirm"]["ratio"] : r["screen"]["ratio"]).get<double>(),
                        r.value("noisy", false) ? "  too noisy to judge"
                        : r["pays"].get<bool>() ? "  pays"
                        : r["slower"].get<bool>() ? "  slower"
                                                  : "");
        }
    }
    const nlohmann::json ledger{{"target", target.name()}, {"target_level", target.ort.level}, {"target_description", target.describe()},
                                {"target_device", opt::target_device(target)}, {"rules", o.rules}, {"rounds", o.rounds},
                                {"min_gain", o.min_gain}, {"noise_limit", o.noise_limit}, {"significance", o.significance}, {"seed", o.seed},
                                {"models", models}, {"families", ledger_summary(models)}};
    write_file_atomically(o.output, ledger.dump(1) + "\n");
    std::printf("wrote %s\n", o.output.c_str());
    if (unsound) throw CLI::RuntimeError(1);
}

}  // namespace rlflow::cli
