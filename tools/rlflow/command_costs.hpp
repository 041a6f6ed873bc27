#pragma once
// `rlflow costs record [--target T] [--cost C] -o table.json MODEL...`: measures, on the
// target, the price of every op signature that searches meet on the models, and writes
// them as a price table (cost/price_table.hpp) that `--cost table:FILE` prices from on any
// machine. Which signatures: those of each model, of the cheapest graphs a search finds
// under the measured prices, of every graph one rewrite away from those, and of seeded
// walks of the rewrites that change a convolution's or a product's arithmetic. The table
// also holds the analytic roofline fitted to its prices, for signatures it lacks.

#include "../preset_fit.hpp"
#include "../variant_walks.hpp"
#include "command_optimize.hpp"
#include "model_source.hpp"
#include "output_paths.hpp"
#include "progress.hpp"
#include "target.hpp"

#include <rlflow/optimize.hpp>
#include <rlflow/cost/price_table.hpp>

#include <CLI/CLI.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace rlflow::cli {

struct CostsRecordOptions {
    std::vector<std::string> models;
    std::string output;
    TargetFlags where;
    ModelOptions load;
    std::string rules = "default";
    /// The search's budget on each model (0: search::default_budget).
    std::size_t budget = 0;
    /// Graphs one rewrite away from each recorded graph, at most.
    std::size_t neighbours = 400;
    /// Seeded walks of the focused rules per model, and their length.
    std::size_t walks = 8;
    std::size_t walk_steps = 6;
    std::uint64_t seed = 0;
};

/// Prices every chargeable node of `g` with `model` into `table` (alone, and with the op it
/// fuses with where the backend prices in context); new signatures also go to `samples`
/// for the fit.
template <cost::CostBackend Backend>
void record_graph(const Graph& g, cost::CostModel<Backend>& model, cost::PriceTable& table, std::vector<tools::OpSample>& samples) {
    const std::vector<char> constant = weight_only_nodes(g);
    model.prefetch(g, constant);
    using Signature = typename cost::CostModel<Backend>::Signature;
    for (const Node& n : g.nodes()) {
        if (n.traits().has(op_flag_source) || n.traits().has(op_flag_view) || constant[n.id.value]) continue;
        const Signature s(g, n, constant);
        const cost::OpSignature alone = s.view();
        std::string key = cost::signature_key(alone);
        if (!table.prices.contains(key)) {
            const double ms = model.op_cost(alone);
            table.ops[key] = std::string(n.traits().onnx_name);
            table.prices.emplace(key, ms);
            cost::OwnedSignature owned{n.op, n.attributes, s.inputs, s.outputs, s.constant_inputs, {}};
            owned.constant_values.assign(s.constant_values.size(), nullptr);
            samples.push_back({std::move(owned), "", ms});
        }
        if constexpr (cost::ContextCostBackend<Backend>) {
            const auto head = cost::CostModel<Backend>::fusion_head(g, n, constant);
            if (!head) continue;
            const Signature producer(g, g.node(head->node), constant);
            const cost::OpSignature producer_alone = producer.view();
            cost::OpSignature pair = alone;
            pair.producer = &producer_alone;
            pair.producer_slot = head->slot;
            std::string pair_key = cost::signature_key(pair);
            if (table.prices.contains(pair_key)) continue;
            table.ops[pair_key] = std::string(g.node(head->node).traits().onnx_name) + "+" + std::string(n.traits().onnx_name);
            table.prices.emplace(std::move(pair_key), model.op_cost(pair));
        }
    }
}

/// Records `g` and the graphs one rewrite away from it (at most `limit` of them), each
/// rewrite probed and undone in place.
template <cost::CostBackend Backend>
void record_neighbourhood(const Graph& g, const std::shared_ptr<const rewrite::RuleSet>& rules, std::size_t limit,
                          cost::CostModel<Backend>& model, cost::PriceTable& table, std::vector<tools::OpSample>& samples) {
    record_graph(g, model, table, samples);
    rewrite::Rewriter rewriter(g, rules);
    std::size_t probed = 0;
    for (std::size_t rule = 0; rule < rewriter.index().num_rules() && probed < limit; ++rule)
        for (std::size_t location = 0; location < rewriter.index().num_choices(rule) && probed < limit; ++location, ++probed)
            rewriter.probe(rule, location, [&](const Graph& next, std::span<const NodeId>) {
                record_graph(next, model, table, samples);
                return 0;
            });
}

/// How strongly a fitted field is held to its preset's value (fit_preset's prior): a field
/// no recorded op informs stays there, one the prices inform moves freely.
inline constexpr double table_fit_prior = 0.3;

/// The roofline fitted to the table's prices: the cpu preset's fields for a CPU target,
/// the roofline's four for a GPU's (a GPU preset has no CPU lowering), each held towards
/// the preset. A fit that is not finite everywhere falls back to the preset.
inline tools::PresetFit fit_table(const std::vector<tools::OpSample>& samples, bool cpu) {
    const cost::DeviceSpec start = *cost::device_preset(cpu ? "cpu" : "v100");
    std::vector<tools::FittedField> fields = tools::cpu_fitted_fields();
    if (!cpu) fields.resize(4);  // peak_gflops, half_saturation, bandwidth_gbs, launch_us
    tools::PresetFit fit = tools::fit_preset(start, fields, samples, table_fit_prior);
    bool finite = std::isfinite(fit.rms_log_error);
    cost::detail::for_each_spec_field(fit.device, [&](const char*, double v) { finite = finite && std::isfinite(v); });
    if (!finite) {
        const double count = static_cast<double>(std::max<std::size_t>(samples.size(), 1));
        fit = {start, std::sqrt(tools::detail::log_errors(start, samples).squaredNorm() / count), 0};
    }
    fit.device.name = "table-fit";
    return fit;
}

template <cost::CostBackend Backend>
void record_with(const CostsRecordOptions& o, const cost::Target& target, Backend backend) {
    cost::CostModel<Backend> model(std::move(backend));
    const auto cache = opt::cost_cache_path({}, model.name());
    opt::load_cost_cache(model, cache, opt::print_message);
    const auto rules = load_rule_set(o.rules);
    cost::PriceTable table;
    table.origin = {target.describe(), opt::target_device(target), model.name(), "", "fp32", model.name()};
    std::vector<tools::OpSample> samples;
    std::mt19937_64 rng(o.seed);
    const std::vector<std::size_t> focused = tools::rule_ids(*rules, tools::focused_rule_names());
    ProgressBar bar("record", o.models.size());
    for (std::size_t m = 0; m < o.models.size(); ++m) {
        bar.update(m, o.models[m]);
        ModelOptions load = o.load;
        load.seed = o.seed;
        const Graph g = load_model(o.models[m], load);
        OptimizeRequest search;
        search.limits.budget = o.budget;
        opt::StopFlag stop(nullptr);
        std::optional<opt::EqsatUse> ignored;
        search::SearchResult r = opt::run_search(search, "", g, rules, model, 3, stop, ignored);
        std::vector<Graph> seeds{g};
        for (opt::Outcome& c : opt::candidate_outcomes(r, model.name())) seeds.push_back(std::move(c.graph));
        for (std::size_t w = 0; w < o.walks; ++w) {
            std::size_t applied = 0;
            seeds.push_back(tools::random_walk(g, rules, focused, o.walk_steps, rng, applied));
        }
        for (const Graph& s : seeds) record_neighbourhood(s, rules, o.neighbours, model, table, samples);
    }
    bar.finish();
    opt::save_cost_cache(model, cache, false, opt::print_message);
    const tools::PresetFit fit = fit_table(samples, target.kind == cost::TargetKind::ort_cpu);
    table.fit = fit.device;
    table.fit_rms_log_error = fit.rms_log_error;
    cost::save_price_table(table, o.output);
    std::printf("recorded %zu prices (%zu op signatures, the rest fused pairs) on %s with %s; fitted roofline rms log error %.3f\n"
                "wrote %s\n",
                table.prices.size(), samples.size(), table.origin.target.c_str(), model.name().c_str(), fit.rms_log_error,
                o.output.c_str());
}

}  // namespace rlflow::cli
