// The rewrite engine as the RL environment uses it, on the zoo's largest graphs.
// - full_match: every built-in rule matched from scratch (ms per graph; items are graphs).
// - step: one RL step, a random offered action applied in place and the masks of every
//   rule updated incrementally; the thesis's environment took 850 ms a step. Counters give
//   the median and 90th percentile of single steps in microseconds; items are steps.
// - step_full_rematch: the same step, but rematching every rule from scratch, to show
//   what the incremental update saves.
// Episodes run 50 steps and are then undone (untimed), so every iteration sees graphs
// like those an agent sees.

#include <rlflow/models/zoo.hpp>
#include <rlflow/rewrite.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace rlflow;

constexpr std::size_t episode_length = 50;

const std::shared_ptr<const rewrite::RuleSet>& rules() {
    static const auto set = std::make_shared<const rewrite::RuleSet>(rewrite::builtin_rules());
    return set;
}

/// Matches every rule from scratch.
void full_match(benchmark::State& state, const std::string& model) {
    const Graph g = models::build_zoo_model(model);
    rewrite::LocationIndex index(rules());
    std::size_t locations = 0;
    for (auto _ : state) {
        index.rebuild(g);
        benchmark::ClobberMemory();
    }
    for (std::size_t r = 0; r < index.num_rules(); ++r) locations += index.locations(r).size();
    state.SetItemsProcessed(state.iterations());
    state.counters["nodes"] = static_cast<double>(g.num_nodes());
    state.counters["rules"] = static_cast<double>(index.num_rules());
    state.counters["locations"] = static_cast<double>(locations);
}

/// A random offered action (rule, location), or rule == N when none is offered.
std::pair<std::size_t, std::size_t> random_action(const rewrite::LocationIndex& index, Rng& rng) {
    std::vector<std::size_t> offered;
    for (std::size_t r = 0; r < index.num_rules(); ++r)
        if (index.num_choices(r) > 0) offered.push_back(r);
    if (offered.empty()) return {index.num_rules(), 0};
    const std::size_t rule = offered[rng.below(offered.size())];
    return {rule, rng.below(index.num_choices(rule))};
}

void report(benchmark::State& state, std::vector<double>& micros) {
    std::sort(micros.begin(), micros.end());
    constexpr double p90 = 0.9;
    state.SetItemsProcessed(static_cast<std::int64_t>(micros.size()));
    if (micros.empty()) return;
    state.counters["median_us"] = micros[micros.size() / 2];
    state.counters["p90_us"] = micros[static_cast<std::size_t>(p90 * static_cast<double>(micros.size() - 1))];
}

/// The environment an agent steps: masks kept current incrementally.
struct IncrementalMasks {
    explicit IncrementalMasks(Graph g) : rewriter(std::move(g), rules()) {}
    const rewrite::LocationIndex& index() const { return rewriter.index(); }
    EditJournal apply(std::size_t rule, std::size_t location) { return rewriter.apply(rule, location); }
    void undo(EditJournal&& j) { rewriter.undo(std::move(j)); }
    rewrite::Rewriter rewriter;
};

/// The same environment rematching every rule from scratch after each rewrite.
struct FullRematch {
    explicit FullRematch(Graph g) : graph(std::move(g)), masks(rules()) { masks.rebuild(graph); }
    const rewrite::LocationIndex& index() const { return masks; }
    EditJournal apply(std::size_t rule, std::size_t location) {
        EditJournal j = rewrite::apply(graph, *rules(), static_cast<std::uint32_t>(rule), masks.location(rule, location),
                                       rewrite::Verify::no);
        masks.rebuild(graph);
        return j;
    }
    void undo(EditJournal&& j) {
        graph.undo(std::move(j));
        masks.rebuild(graph);
    }
    Graph graph;
    rewrite::LocationIndex masks;
};

/// One RL step: a random offered action applied in place, then the masks brought up to date.
template <class Environment>
void step(benchmark::State& state, const std::string& model) {
    Environment env(models::build_zoo_model(model));
    Rng rng(1);
    std::vector<EditJournal> history;
    std::vector<double> micros;
    for (auto _ : state) {
        const auto [rule, location] = random_action(env.index(), rng);
        if (rule == env.index().num_rules() || history.size() == episode_length) {
            state.PauseTiming();
            while (!history.empty()) {
                env.undo(std::move(history.back()));
                history.pop_back();
            }
            state.ResumeTiming();
            continue;
        }
        const auto start = std::chrono::steady_clock::now();
        history.push_back(env.apply(rule, location));
        const auto stop = std::chrono::steady_clock::now();
        micros.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
    }
    report(state, micros);
}

void step_incremental(benchmark::State& state, const std::string& model) { step<IncrementalMasks>(state, model); }
void step_full_rematch(benchmark::State& state, const std::string& model) { step<FullRematch>(state, model); }

}  // namespace

BENCHMARK_CAPTURE(full_match, bert, std::string("bert"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(full_match, inception_v3, std::string("inception_v3"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(full_match, resnet50, std::string("resnet50"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(step_incremental, resnet50, std::string("resnet50"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(step_incremental, bert, std::string("bert"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(step_incremental, inception_v3, std::string("inception_v3"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(step_full_rematch, resnet50, std::string("resnet50"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(step_full_rematch, bert, std::string("bert"))->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(step_full_rematch, inception_v3, std::string("inception_v3"))->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
