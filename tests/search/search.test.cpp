#include <rlflow/cost.hpp>
#include <rlflow/core/canonical.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/rewrite.hpp>
#include <rlflow/search.hpp>

#include "support.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>

#include <atomic>

using namespace rlflow;
using cost::AnalyticBackend;
using cost::CostModel;

namespace {

using search_test::rules;
using search_test::weighted;

}  // namespace

TEST_CASE("greedy search lowers the cost of zoo graphs and keeps their function") {
    for (const char* name : {"squeezenet1_1", "resnet18", "resnext50"}) {
        CAPTURE(name);
        const Graph g = weighted(name);
        CostModel<AnalyticBackend> model;
        const auto result = search::greedy(g, rules(), model);
        CHECK(result.reason == search::StopReason::converged);
        CHECK(result.best_cost_ms < result.initial_cost_ms);
        CHECK(result.initial_cost_ms == doctest::Approx(model.graph_cost(g)));
        CHECK(result.best_cost_ms == doctest::Approx(model.graph_cost(result.graph)));
        std::size_t applied = 0;
        for (const auto& [rule, count] : result.rewrites) applied += count;
        CHECK(applied == result.expansions);
        CHECK(result.sequence.size() == result.expansions);
        const auto report = rewrite::check_equivalence(g, result.graph, {.trials = 1, .seed = 1, .rtol = 1e-3, .atol = 1e-4});
        CHECK_MESSAGE(report.equal, report.detail);
    }
}

TEST_CASE("both searches are deterministic") {
    const Graph g = models::build_zoo_model("squeezenet1_1");
    CostModel<AnalyticBackend> model;
    CHECK(canonical_hash(search::greedy(g, rules(), model).graph) == canonical_hash(search::greedy(g, rules(), model).graph));
    search::SearchOptions options;
    options.budget = 15;
    const auto a = search::backtracking(g, rules(), model, options);
    const auto b = search::backtracking(g, rules(), model, options);
    CHECK(canonical_hash(a.graph) == canonical_hash(b.graph));
    CHECK(a.rewrites == b.rewrites);
    CHECK(a.sequence == b.sequence);
    // The sequence lists every step the counts count, in order.
    std::map<std::string, std::size_t> counted;
    for (const std::string& rule : a.sequence) ++counted[rule];
    CHECK(counted == a.rewrites);
    CHECK_FALSE(a.sequence.empty());
}

TEST_CASE("backtracking keeps the best graph, stops on its budget and reports progress") {
    const Graph g = weighted("squeezenet1_1");
    CostModel<AnalyticBackend> model;
    search::SearchOptions options;
    options.budget = 20;
    std::size_t reports = 0;
    double last_best = INFINITY;
    options.on_progress = [&](const search::SearchProgress& p) {
        ++reports;
        CHECK(p.best_cost_ms <= last_best);
        last_best = p.best_cost_ms;
    };
    const auto result = search::backtracking(g, rules(), model, options);
    CHECK(result.reason == search::StopReason::budget);
    CHECK(result.expansions == options.budget);
    CHECK(reports == options.budget);
    CHECK(result.best_cost_ms < result.initial_cost_ms);
    CHECK(result.best_cost_ms == doctest::Approx(model.graph_cost(result.graph)));
    const auto report = rewrite::check_equivalence(g, result.graph, {.trials = 1, .seed = 1, .rtol = 1e-3, .atol = 1e-4});
    CHECK_MESSAGE(report.equal, report.detail);
}

TEST_CASE("a raised stop flag or a spent time limit ends a search with the best graph so far") {
    const Graph g = models::build_zoo_model("resnet18");
    CostModel<AnalyticBackend> model;
    std::atomic<bool> stop{true};
    search::SearchOptions options;
    options.stop = &stop;
    const auto interrupted = search::backtracking(g, rules(), model, options);
    CHECK(interrupted.reason == search::StopReason::interrupted);
    CHECK(interrupted.expansions == 0);
    CHECK(canonical_hash(interrupted.graph) == canonical_hash(g));
    CHECK(search::greedy(g, rules(), model, options).reason == search::StopReason::interrupted);

    search::SearchOptions timed;
    timed.time_limit_seconds = 1e-9;
    CHECK(search::backtracking(g, rules(), model, timed).reason == search::StopReason::time_limit);
}

TEST_CASE("backtracking holds its tree, not whole graphs, and stops at a memory limit") {
    const Graph g = weighted("squeezenet1_1");
    CostModel<AnalyticBackend> model;
    search::SearchOptions options;
    options.budget = 30;
    const auto free = search::backtracking(g, rules(), model, options);
    REQUIRE(free.expansions == options.budget);
    CHECK(free.peak_search_bytes > 0);
    // Thirty graphs kept whole would hold thirty copies of the graph's nodes; the tree
    // holds thirty rewrites beside the price cache of one graph.
    search::SearchOptions first;
    first.budget = 1;
    const auto one = search::backtracking(g, rules(), model, first);
    CHECK(free.peak_search_bytes < one.peak_search_bytes + options.budget * 4096);

    options.memory_limit_bytes = one.peak_search_bytes / 2;
    const auto limited = search::backtracking(g, rules(), model, options);
    CHECK(limited.reason == search::StopReason::memory_limit);
    CHECK(limited.expansions == 1);
    CHECK(search::stop_reason_name(limited.reason) == "memory_limit");
    const auto report = rewrite::check_equivalence(g, limited.graph, {.trials = 1, .seed = 1, .rtol = 1e-3, .atol = 1e-4});
    CHECK_MESSAGE(report.equal, report.detail);
    CHECK(search::greedy(g, rules(), model, options).reason == search::StopReason::memory_limit);
}

TEST_CASE("the default budget is 1000, or one expansion per 8 nodes on larger graphs") {
    CHECK(search::default_budget(100) == 1000);
    CHECK(search::default_budget(8000) == 1000);
    CHECK(search::default_budget(50'000) == 6250);
}
