// `rlflow costs record`.

#include "command_costs.hpp"
#include "commands.hpp"

namespace rlflow::cli {

void add_costs_command(CLI::App& app) {
    CLI::App* costs = app.add_subcommand("costs", "Price tables: record measured op prices on a target, to price from anywhere");
    costs->require_subcommand(1);
    auto o = std::make_shared<CostsRecordOptions>();
    CLI::App* record = costs->add_subcommand("record", "Measure the ops that searches meet on MODELs and write them as a price table");
    record->add_option("models", o->models, "the models (.onnx files or zoo:NAME)")->required();
    record->add_option("-o,--output", o->output, "the table to write (JSON)")->required();
    add_target_flags(*record, o->where);
    add_model_flags(*record, o->load);
    record->add_option("--rules", o->rules, "default, builtin, or a rules file")->capture_default_str();
    record->add_option("--budget", o->budget, "the search's expansions on each model (0: by the graph's size)")->capture_default_str();
    record->add_option("--neighbours", o->neighbours, "graphs one rewrite away from each recorded graph, at most")
        ->check(CLI::Range(std::size_t{0}, std::size_t{1'000'000}))->capture_default_str();
    record->add_option("--walks", o->walks, "seeded walks of the merging and fusing rules per model")->capture_default_str();
    record->add_option("--seed", o->seed, "seed of the walks and of a zoo model's weights")->capture_default_str();
    record->callback([o] {
        check_output_path(o->output, "--output");
        const cost::Target target = resolve_target(o->where);
        const opt::CostChoice pricing = resolve_cost(o->where, target);
        RLFLOW_EXPECTS(pricing.kind != opt::CostKind::table, precondition_error,
                       "costs record measures prices; --cost table:FILE only reads them");
        opt::with_cost_backend(pricing, target, {o->seed, false}, [&](auto backend) { record_with(*o, target, std::move(backend)); });
    });
}

}  // namespace rlflow::cli
