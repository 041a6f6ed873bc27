#pragma once
// `rlflow eval --graphs MODEL... --methods greedy,taso,eqsat,mf,mb --out DIR [--agent DIR...]
//  [--seeds N] [--ort [--ort-level basic,all]] [--time-limit S]`: every method on every graph under every seed, each
// cell a child `rlflow optimize` (eval_cells.hpp), then DIR/results.json (a record per cell)
// and DIR/results.md (the tables: mean and spread over seeds, the best method per graph in
// bold). Zoo graphs are written once per seed to DIR/inputs, so that every method of a seed
// optimises, and ONNX Runtime times, the same weights. Interrupted or not, finished cells
// are kept; running the same command again does the rest, and times the kept cells at ORT
// levels they were not timed at. Under `mpirun -np K`, the ranks take the cells in turn and
// rank 0 writes the results (the same as one process's, but for timings).
//
// Agents: for mf and mb, each graph uses the agents of that kind that trained on it (the
// seeds take them in turn); a graph no agent of that kind trained on uses all of them:
// transfer, zero-shot, marked as such in every record.

#include "command_optimize.hpp"
#include "eval_cells.hpp"
#include "model_source.hpp"
#include "output_paths.hpp"
#include "progress.hpp"
#include "ranks.hpp"

#include <rlflow/optimize.hpp>
#include <rlflow/rl/model_based/agent_file.hpp>
#include <rlflow/rl/model_free/agent_file.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rlflow::cli {

struct EvalOptions {
    std::vector<std::string> graphs;
    std::vector<std::string> methods{"greedy", "taso", "eqsat"};
    std::vector<std::string> agents;
    std::size_t seeds = 1;
    std::string out;
    bool ort = false;
    /// ORT levels to time each result at; the first also prices --cost ort. By default the
    /// ort-cpu target's: level all, a thread per physical core.
    std::vector<std::string> ort_levels{"all"};
    int ort_threads = cost::physical_cores();
    /// The target of every cell (as optimize --target).
    std::string target = "auto";
    int ort_runs = 21;
    int ort_warmup = 3;
    double time_limit = 0;
    std::string cost = "auto";
    std::string device = "auto";
    std::size_t budget = 1000;
    std::string rules = "default";
    std::string cost_cache;
};

/// The methods eval knows, in the order its tables list them: optimize's searches.
inline std::vector<std::string> eval_methods() { return search_kind_names.names(); }

/// A trained agent that eval may use: its directory, kind, graphs and what training cost.
struct EvalAgent {
    std::string dir;
    std::string kind;
    std::vector<std::string> graphs;
    double seconds = 0;
    std::size_t real_steps = 0;
};

/// Reads the agent in `dir` and checks that `library` holds its rules (exit 2 otherwise).
inline EvalAgent read_eval_agent(const std::string& dir, const rewrite::RuleSet& library) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) throw io_error("--agent '" + dir + "': no such directory (give one `rlflow train` wrote)");
    const rl::AgentKind kind = rl::agent_kind(dir);  // names the problem when it holds no agent
    if (kind == rl::AgentKind::model_based) {
        const rl::MbAgentState s = rl::read_mb_agent_state(dir);
        static_cast<void>(rl::agent_rules(s, library, dir));
        return {dir, "mb", s.graphs, s.seconds, s.real_steps};
    }
    const rl::MfAgentState s = rl::read_mf_agent_state(dir);
    static_cast<void>(rl::agent_rules(s, library, dir));
    return {dir, "mf", s.graphs, s.seconds, s.env_steps};
}

/// A file-system-friendly short name of a graph: NAME of zoo:NAME, else the file's stem.
inline std::string graph_slug(const std::string& graph) {
    std::string slug = graph.starts_with(zoo_prefix) ? graph.substr(zoo_prefix.size()) : std::filesystem::path(graph).stem().string();
    for (char& c : slug)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
    return slug;
}

/// The file a graph is optimised from under `seed`: a zoo graph written with that seed's
/// weights into DIR/inputs (once), a file as it is.
inline std::filesystem::path eval_input(const EvalOptions& o, const std::string& graph, std::uint64_t seed) {
    if (!graph.starts_with(zoo_prefix)) return graph;
    const std::filesystem::path file = std::filesystem::path(o.out) / "inputs" / (graph_slug(graph) + "_s" + std::to_string(seed) + ".onnx");
    if (std::filesystem::exists(file)) return file;
    ModelOptions load;
    load.seed = seed;
    std::filesystem::create_directories(file.parent_path());
    onnx_io::save_onnx(load_model(graph, load), file);
    return file;
}

/// The cells of the grid, graph by graph, method by method, seed by seed; agents chosen as
/// the file comment says.
inline std::vector<EvalCell> eval_cells(const EvalOptions& o, const std::vector<EvalAgent>& agents) {
    std::vector<EvalCell> cells;
    for (const std::string& graph : o.graphs)
        for (const std::string& method : o.methods) {
            std::vector<const EvalAgent*> trained, any;
            for (const EvalAgent& a : agents) {
                if (a.kind != method) continue;
                any.push_back(&a);
                if (std::find(a.graphs.begin(), a.graphs.end(), graph) != a.graphs.end()) trained.push_back(&a);
            }
            const std::vector<const EvalAgent*>& pool = trained.empty() ? any : trained;
            for (std::size_t s = 1; s <= o.seeds; ++s) {
                EvalCell c;
                c.graph = graph;
                c.slug = graph_slug(graph);
                c.method = method;
                c.seed = s;
                c.stem = std::filesystem::path(o.out) / "cells" / c.slug / (method + "_s" + std::to_string(s));
                if (!pool.empty()) {
                    const EvalAgent& a = *pool[(s - 1) % pool.size()];
                    c.agent = a.dir;
                    c.agent_trained_on_graph = !trained.empty();
                    c.training_seconds = a.seconds;
                    c.training_real_steps = a.real_steps;
                }
                cells.push_back(std::move(c));
            }
        }
    return cells;
}

/// The child command line of a cell.
inline std::vector<std::string> cell_command(const EvalOptions& o, const EvalCell& c) {
    std::vector<std::string> args{self_executable().string(), "optimize", c.input.string(), "-o", c.output().string(), "--search", c.method,
                                  "--seed", std::to_string(c.seed), "--report", c.report().string(), "--guard", "none", "--target",
                                  o.target, "--cost", o.cost,
                                  "--device", o.device, "--budget", std::to_string(o.budget), "--rules", o.rules, "--ort-level",
                                  o.ort_levels.front(), "--ort-threads", std::to_string(o.ort_threads)};
    if (o.time_limit > 0) args.insert(args.end(), {"--time-limit", std::to_string(o.time_limit)});
    if (!o.cost_cache.empty()) args.insert(args.end(), {"--cost-cache", o.cost_cache});
    if (!c.agent.empty()) args.insert(args.end(), {"--agent", c.agent});
    return args;
}

/// Set by SIGINT: eval stops after the cell in flight, which is not recorded.
inline std::atomic<bool> eval_interrupted{false};

/// The key of a record's ONNX Runtime timing at `level` with `threads` threads.
inline std::string ort_key(const std::string& level, int threads) { return level + "_t" + std::to_string(threads); }

/// Times an ok record's output against its input at each of `o.ort_levels` it was not
/// timed at yet (record["ort"][ort_key]: before_ms, after_ms, speedup); true when it added one.
inline bool add_ort_timings(const EvalOptions& o, cost::OrtWorker& worker, nlohmann::json& record) {
    if (record["status"] != "ok") return false;
    bool added = false;
    for (const std::string& level : o.ort_levels) {
        const std::string key = ort_key(level, o.ort_threads);
        if (record.contains("ort") && record["ort"].contains(key)) continue;
        const OrtPair t = time_pair(worker, record["input"].get<std::string>(), record["output"].get<std::string>(), {level, o.ort_threads},
                                    o.ort_warmup, o.ort_runs, record["seed"].get<std::uint64_t>());
        record["ort"][key] = {{"level", level},         {"threads", o.ort_threads}, {"runs", o.ort_runs},   {"before_ms", t.before_ms},
                              {"after_ms", t.after_ms},  {"speedup", 1 / t.ratio},   {"wins", t.wins},       {"rounds", t.rounds},
                              {"p_faster", t.p_faster}, {"p_slower", t.p_slower},   {"within_noise", t.within_noise}};
        added = true;
    }
    return added;
}

/// Runs one cell (and times it in ORT with --ort) and writes its record.
inline nlohmann::json run_cell(const EvalOptions& o, EvalCell& c, cost::OrtWorker* worker) {
    std::filesystem::create_directories(c.stem.parent_path());
    nlohmann::json record = cell_record(c, run_logged(cell_command(o, c), c.log()));
    if (worker) add_ort_timings(o, *worker, record);
    return record;
}

/// Mean and sample standard deviation.
inline std::pair<double, double> mean_spread(const std::vector<double>& xs) {
    double mean = 0;
    for (double x : xs) mean += x / static_cast<double>(xs.size());
    double var = 0;
    for (double x : xs) var += (x - mean) * (x - mean);
    return {mean, xs.size() > 1 ? std::sqrt(var / static_cast<double>(xs.size() - 1)) : 0.0};
}

/// A Markdown table of the figure at JSON pointer `key` (higher is better when `higher`),
/// graphs by methods: mean ± spread over the seeds' ok cells, the best mean of each row in
/// bold. With `noise` (a JSON pointer to a bool), a cell whose every seed is within the
/// noise prints "≈" and is never bold.
inline std::string results_table(const EvalOptions& o, const std::vector<nlohmann::json>& records, const std::string& key, bool higher,
                                 const char* format, const std::string& noise = "") {
    const nlohmann::json::json_pointer at(key);
    std::string md = "| graph |";
    for (const std::string& m : o.methods) md += " " + m + " |";
    md += "\n|---|";
    for (std::size_t i = 0; i < o.methods.size(); ++i) md += "---|";
    md += "\n";
    for (const std::string& g : o.graphs) {
        std::vector<std::optional<std::pair<double, double>>> stats;
        std::vector<bool> noisy;
        for (const std::string& m : o.methods) {
            std::vector<double> xs;
            bool all_noise = !noise.empty();
            for (const nlohmann::json& r : records)
                if (r["graph"] == g && r["method"] == m && r["status"] == "ok" && r.contains(at)) {
                    xs.push_back(r[at].get<double>());
                    const nlohmann::json::json_pointer flag(noise.empty() ? "/-" : noise);
                    all_noise = all_noise && r.contains(flag) && r[flag].get<bool>();
                }
            stats.push_back(xs.empty() ? std::nullopt : std::optional(mean_spread(xs)));
            noisy.push_back(!xs.empty() && all_noise);
        }
        constexpr double none = std::numeric_limits<double>::infinity();
        double best = higher ? -none : none;
        for (std::size_t i = 0; i < stats.size(); ++i)
            if (stats[i] && !noisy[i]) best = higher ? std::max(best, stats[i]->first) : std::min(best, stats[i]->first);
        md += "| " + graph_slug(g) + " |";
        for (std::size_t i = 0; i < stats.size(); ++i) {
            const auto& s = stats[i];
            if (!s) {
                md += " - |";
                continue;
            }
            if (noisy[i]) {
                md += " \u2248 |";
                continue;
            }
            char text[64];
            std::snprintf(text, sizeof text, format, s->first, s->second);
            md += s->first == best ? std::string(" **") + text + "** |" : std::string(" ") + text + " |";
        }
        md += "\n";
    }
    return md;
}

/// DIR/results.md: the tables, and the cells that failed.
inline std::string results_markdown(const EvalOptions& o, const std::vector<nlohmann::json>& records) {
    std::string md = "# rlflow eval\n\nCost backend: " + (records.empty() ? std::string("-") : records.front().value("cost_backend", "-"))
                     + ". " + std::to_string(o.seeds) + " seed(s); each entry is the mean ± the standard deviation over seeds.\n\n";
    md += "## Speed-up by the cost model (cost before / after; higher is better)\n\n" + results_table(o, records, "/speedup", true, "%.4f ± %.4f");
    if (o.ort)
        for (const std::string& level : o.ort_levels)
            md += "\n## Speed-up in ONNX Runtime (level " + level + ", " + std::to_string(o.ort_threads) + " thread(s); median of "
                  + std::to_string(o.ort_runs) + " interleaved paired ratios; higher is better)\n\n"
                  + "\u2248: the sign test on the paired runs cannot tell the result from its input in any seed (p \u2265 "
                  + std::to_string(search::GuardOptions{}.significance).substr(0, 4) + ", or a median change within "
                  + search::detail::share(search::GuardOptions{}.min_gain) + "), so the figure is noise, not a speed-up.\n\n"
                  + results_table(o, records, "/ort/" + ort_key(level, o.ort_threads) + "/speedup", true, "%.3f ± %.3f",
                                  "/ort/" + ort_key(level, o.ort_threads) + "/within_noise");
    md += "\n## Search or inference seconds (lower is better)\n\n" + results_table(o, records, "/seconds", false, "%.2f ± %.2f");
    std::string failed;
    for (const nlohmann::json& r : records)
        if (r["status"] != "ok")
            failed += "- " + r["graph"].get<std::string>() + ", " + r["method"].get<std::string>() + ", seed "
                      + std::to_string(r["seed"].get<std::uint64_t>()) + ": exit " + std::to_string(r["exit_code"].get<int>()) + ": "
                      + r["error"].get<std::string>() + "\n";
    if (!failed.empty()) md += "\n## Cells that failed\n\n" + failed;
    return md;
}

/// Checks everything before any work: methods, agents, rules, graphs, the output folder.
inline std::vector<EvalAgent> check_eval(const EvalOptions& o) {
    for (const std::string& m : o.methods) (void)search_kind_names.parse(m, "--methods method");
    const auto library = load_rule_set(o.rules);
    std::vector<EvalAgent> agents;
    for (const std::string& dir : o.agents) agents.push_back(read_eval_agent(dir, *library));
    for (const std::string m : {"mf", "mb"})
        if (std::find(o.methods.begin(), o.methods.end(), m) != o.methods.end()
            && std::none_of(agents.begin(), agents.end(), [&](const EvalAgent& a) { return a.kind == m; }))
            throw precondition_error("--methods " + m + " needs an --agent DIR that `rlflow train --agent " + m + "` wrote");
    for (const std::string& g : o.graphs)
        if (!g.starts_with(zoo_prefix)) check_model_file(g);
    for (const std::string& g : o.graphs)
        if (g.starts_with(zoo_prefix)) static_cast<void>(load_model(g, {}));  // an unknown zoo name fails here
    if (o.ort)
        if (const auto why = cost::ort_unavailable_reason()) throw precondition_error("--ort: " + *why + "; " + cost::ort_install_hint());
    std::error_code ec;
    if (std::filesystem::exists(o.out, ec) && !std::filesystem::is_directory(o.out, ec))
        throw io_error("--out '" + o.out + "' is a file; give a folder");
    std::filesystem::create_directories(o.out, ec);
    if (ec) throw io_error("--out '" + o.out + "': cannot create the folder: " + ec.message());
    check_output_path((std::filesystem::path(o.out) / "results.json").string(), "--out");
    return agents;
}

/// Every rank's (cell index, record) pairs, at rank 0, in cell order: the records one
/// process keeps, in its order. The other ranks get none.
inline std::vector<nlohmann::json> records_at_root(Ranks& ranks, const std::vector<std::pair<std::size_t, nlohmann::json>>& mine) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [cell, record] : mine) list.push_back({{"cell", cell}, {"record", record}});
    std::vector<std::pair<std::size_t, nlohmann::json>> all;
    for (const std::string& part : ranks.comm().gather_bytes(list.dump(), 0))
        for (nlohmann::json& entry : nlohmann::json::parse(part)) all.emplace_back(entry["cell"].get<std::size_t>(), std::move(entry["record"]));
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<nlohmann::json> records;
    for (auto& entry : all) records.push_back(std::move(entry.second));
    return records;
}

/// Runs the cells (under mpirun, rank r takes cells r, r + K, ...; each writes its own
/// cells' records) and, on rank 0, writes the results of all of them.
inline void dispatch_eval(const EvalOptions& o) {
    Ranks ranks;
    const std::vector<EvalAgent> agents = check_eval(o);
    std::vector<EvalCell> cells = eval_cells(o, agents);
    std::unique_ptr<cost::OrtWorker> worker = o.ort ? std::make_unique<cost::OrtWorker>() : nullptr;
    std::vector<std::pair<std::size_t, nlohmann::json>> mine;
    std::size_t resumed = 0;
    ProgressBar bar("eval", cells.size(), ranks.root());
    const auto previous = std::signal(SIGINT, [](int) { eval_interrupted.store(true); });
    const auto step = static_cast<std::size_t>(ranks.size());
    for (auto k = static_cast<std::size_t>(ranks.rank()); k < cells.size() && !eval_interrupted.load(); k += step) {
        EvalCell& c = cells[k];
        bar.update(k, c.slug + " " + c.method + " seed " + std::to_string(c.seed));
        if (std::filesystem::exists(c.record())) {
            std::ifstream in(c.record());
            nlohmann::json kept = nlohmann::json::parse(in);
            if (worker && add_ort_timings(o, *worker, kept)) write_file_atomically(c.record(), kept.dump(2) + "\n");
            mine.emplace_back(k, std::move(kept));
            ++resumed;
            continue;
        }
        c.input = eval_input(o, c.graph, c.seed);
        nlohmann::json record = run_cell(o, c, worker.get());
        if (eval_interrupted.load()) break;  // the cell in flight was cut short: not recorded
        write_file_atomically(c.record(), record.dump(2) + "\n");
        mine.emplace_back(k, std::move(record));
    }
    std::signal(SIGINT, previous);
    const bool interrupted_any = on_any_rank(ranks.comm(), eval_interrupted.load());
    std::array<double, 1> kept{static_cast<double>(resumed)};
    ranks.comm().all_reduce_sum(std::span<double>(kept));
    const std::vector<nlohmann::json> records = records_at_root(ranks, mine);
    if (!ranks.root()) return;
    bar.update(records.size(), "done");
    bar.finish();
    nlohmann::json results;
    results["graphs"] = o.graphs;
    results["methods"] = o.methods;
    results["seeds"] = o.seeds;
    results["ranks"] = ranks.size();
    results["cells"] = records;
    // Each applied rule's pattern, for tables and figures (a generated rule's name says nothing).
    const auto library = load_rule_set(o.rules);
    results["rule_labels"] = nlohmann::json::object();
    for (const nlohmann::json& r : records)
        if (r.contains("rewrites"))
            for (const auto& [name, count] : r["rewrites"].items())
                if (const std::optional<std::uint32_t> id = library->find(name)) results["rule_labels"][name] = rewrite::pattern_label((*library)[*id]);
    write_file_atomically(std::filesystem::path(o.out) / "results.json", results.dump(2) + "\n");
    write_file_atomically(std::filesystem::path(o.out) / "results.md", results_markdown(o, records));
    const std::string spread = ranks.size() > 1 ? ", on " + std::to_string(ranks.size()) + " ranks" : std::string();
    std::printf("%zu of %zu cells done (%zu kept from an earlier run%s); wrote %s/results.json and results.md\n", records.size(),
                cells.size(), static_cast<std::size_t>(kept[0]), spread.c_str(), o.out.c_str());
    if (interrupted_any) std::printf("interrupted: run the same command again to do the rest\n");
}

}  // namespace rlflow::cli
