#include "support.hpp"

#include <rlflow/core/canonical.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/onnx.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

using namespace rewrite_test;

namespace {

/// A random action among the offered ones: a rule with locations, then one of its first L.
std::pair<std::size_t, std::size_t> random_action(const rewrite::LocationIndex& index, Rng& rng) {
    const auto mask = index.xfer_mask();
    std::vector<std::size_t> rules;
    for (std::size_t r = 0; r + 1 < mask.size(); ++r)
        if (mask[r]) rules.push_back(r);
    if (rules.empty()) return {index.num_rules(), 0};
    const std::size_t rule = rules[rng.below(rules.size())];
    return {rule, rng.below(index.num_choices(rule))};
}

/// Every rule's locations in `a` equal those of a fresh index of `graph`.
void check_matches_full_recomputation(const rewrite::LocationIndex& a, const Graph& graph) {
    rewrite::LocationIndex fresh(builtin(), {});
    fresh.rebuild(graph);
    for (std::size_t r = 0; r < a.num_rules(); ++r) {
        const auto x = a.locations(r);
        const auto y = fresh.locations(r);
        CAPTURE(builtin()->operator[](r).name);
        REQUIRE(std::equal(x.begin(), x.end(), y.begin(), y.end()));
    }
}

Graph real_export(const char* file) {
    onnx_io::ImportOptions options;
    options.data_inputs = {"input"};
    return onnx_io::load_onnx(std::filesystem::path(RLFLOW_SOURCE_DIR) / "tests" / "data" / file, options);
}

}  // namespace

TEST_CASE("masks have N+1 xfer entries ending in NO-OP and L location entries") {
    rewrite::Rewriter rw(models::build_zoo_model("bert"), builtin(), {.max_locations = 7});
    const auto& index = rw.index();
    const auto xfers = index.xfer_mask();
    REQUIRE(xfers.size() == builtin()->size() + 1);
    CHECK(xfers.back() == 1);
    const auto triple = rule_id("merge_matmul_triple");
    CHECK(xfers[triple] == 1);
    CHECK(index.locations(triple).size() == 12);
    const auto mask = index.location_mask(triple);
    REQUIRE(mask.size() == 7);
    CHECK(std::count(mask.begin(), mask.end(), 1) == 7);
    CHECK(index.num_choices(triple) == 7);
    CHECK_THROWS_AS((void)index.location(triple, 7), precondition_error);
    const auto none = rule_id("merge_group_conv");
    CHECK(xfers[none] == 0);
    const auto empty = index.location_mask(none);
    CHECK(std::count(empty.begin(), empty.end(), 1) == 0);
}

TEST_CASE("incremental masks always equal a full recomputation over random rewrite sequences") {
    constexpr int steps = 60;
    for (const auto& entry : models::zoo_entries()) {
        CAPTURE(entry.name);
        rewrite::Rewriter rw(entry.build({}), builtin());
        Rng rng(seed_from_name(entry.name));
        std::vector<EditJournal> history;
        for (int step = 0; step < steps; ++step) {
            // One step in four goes back (when there is something to undo).
            if (!history.empty() && rng.below(4) == 0) {
                rw.undo(std::move(history.back()));
                history.pop_back();
            } else {
                const auto [rule, location] = random_action(rw.index(), rng);
                if (rule == rw.index().num_rules()) break;
                history.push_back(rw.apply(rule, location));
            }
            check_matches_full_recomputation(rw.index(), rw.graph());
        }
    }
}

TEST_CASE("a rewriter continued from its parent on a rewritten copy indexes what a fresh one does") {
    for (const char* model : {"squeezenet1_1", "inception_v3", "bert"}) {
        CAPTURE(model);
        const auto parent = std::make_shared<rewrite::Rewriter>(models::build_zoo_model(model), builtin());
        Rng rng(7);
        // A chain of children, each made from a copy of its parent's graph, as a search does.
        std::shared_ptr<rewrite::Rewriter> current = parent;
        for (int step = 0; step < 8; ++step) {
            const auto [rule, choice] = random_action(current->index(), rng);
            if (rule == current->index().num_rules()) break;
            const CanonicalForm before = canonical_form(current->graph());
            Graph copy = current->graph();
            const auto touched = rewrite::apply(copy, current->rules(), static_cast<std::uint32_t>(rule),
                                                current->index().location(rule, choice), rewrite::Verify::no)
                                     .touched_nodes();
            const auto child = std::make_shared<rewrite::Rewriter>(*current, std::move(copy), touched);
            check_matches_full_recomputation(child->index(), child->graph());
            // The parent is left as it was.
            CHECK(canonical_form(current->graph()) == before);
            check_matches_full_recomputation(current->index(), current->graph());
            current = child;
        }
    }
}

TEST_CASE("undoing every step restores the graph and its locations exactly") {
    const Graph original = models::build_zoo_model("inception_v3");
    rewrite::Rewriter rw(original, builtin());
    std::vector<std::vector<Location>> before;
    for (std::size_t r = 0; r < rw.index().num_rules(); ++r)
        before.emplace_back(rw.index().locations(r).begin(), rw.index().locations(r).end());
    Rng rng(3);
    std::vector<EditJournal> history;
    for (int step = 0; step < 40; ++step) {
        const auto [rule, location] = random_action(rw.index(), rng);
        if (rule == rw.index().num_rules()) break;
        history.push_back(rw.apply(rule, location));
    }
    CHECK(canonical_hash(rw.graph()) != canonical_hash(original));
    while (!history.empty()) {
        rw.undo(std::move(history.back()));
        history.pop_back();
    }
    CHECK(canonical_hash(rw.graph()) == canonical_hash(original));
    CHECK(rw.graph().id_bound() == original.id_bound());
    for (std::size_t r = 0; r < rw.index().num_rules(); ++r) {
        const auto now = rw.index().locations(r);
        CHECK(std::equal(now.begin(), now.end(), before[r].begin(), before[r].end()));
    }
}

namespace {

/// The graphs one long-sequence check runs: zoo models by name and real exports by file.
struct SequenceGroup {
    std::vector<std::string> zoo;
    std::vector<std::string> exports;
};

/// The long-sequence checks come in five groups of about equal time (18 to 31 s each in a
/// Release build), so that ctest runs them side by side; as one test they took over an
/// hour under ASan.
const std::vector<SequenceGroup>& sequence_groups() {
    static const std::vector<SequenceGroup> groups = {
        {{"vit_base", "nasrnn", "encoder_small"}, {}},
        {{"nasnet_a"}, {}},
        {{"bert"}, {"transformer_op17.onnx"}},
        {{"resnet18", "resnet50", "resnext50", "squeezenet1_1"}, {}},
        {{"inception_v3"}, {"inception_v3_op17.onnx"}},
    };
    return groups;
}

/// Applies 50 random rewrites to each graph of `group`, running the graph after each and
/// comparing its outputs with the original's.
void check_long_sequences(const SequenceGroup& group) {
    constexpr int steps = 50;
    std::vector<std::pair<std::string, Graph>> graphs;
    for (const std::string& name : group.zoo) graphs.emplace_back(name, models::build_zoo_model(name));
    for (const std::string& file : group.exports) graphs.emplace_back(file, real_export(file.c_str()));
    for (auto& [name, graph] : graphs) {
        CAPTURE(name);
        exec::fill_random_weights(graph, 1);
        const auto inputs = exec::random_inputs(graph, 2);
        const auto expected = exec::Executor{}.run(graph, inputs).outputs;
        rewrite::Rewriter rw(std::move(graph), builtin());
        Rng rng(seed_from_name(name));
        int applied = 0;
        for (; applied < steps; ++applied) {
            const auto [rule, location] = random_action(rw.index(), rng);
            if (rule == rw.index().num_rules()) break;
            CAPTURE(builtin()->operator[](rule).name);
            (void)rw.apply(rule, location);
            const auto got = exec::Executor{}.run(rw.graph(), inputs).outputs;
            REQUIRE(got.size() == expected.size());
            for (std::size_t o = 0; o < got.size(); ++o) {
                REQUIRE(got[o].type() == expected[o].type());
                const auto a = expected[o].floats(), b = got[o].floats();
                std::size_t mismatches = 0;
                for (std::size_t i = 0; i < a.size(); ++i) mismatches += std::abs(a[i] - b[i]) <= 1e-4 + 1e-3 * std::abs(a[i]) ? 0 : 1;
                REQUIRE(mismatches == 0);
            }
        }
        MESSAGE(name << ": " << applied << " rewrites, each checked");
        CHECK(applied > 0);
    }
}

}  // namespace

TEST_CASE("long random rewrite sequences keep ViT-B/16, NasRNN and the small encoder computing the same function") {
    check_long_sequences(sequence_groups()[0]);
}

TEST_CASE("long random rewrite sequences keep NasNet-A computing the same function") {
    check_long_sequences(sequence_groups()[1]);
}

TEST_CASE("long random rewrite sequences keep BERT and the exported transformer computing the same function") {
    check_long_sequences(sequence_groups()[2]);
}

TEST_CASE("long random rewrite sequences keep the ResNets, ResNeXt and SqueezeNet computing the same function") {
    check_long_sequences(sequence_groups()[3]);
}

TEST_CASE("long random rewrite sequences keep Inception-v3, built and exported, computing the same function") {
    check_long_sequences(sequence_groups()[4]);
}

TEST_CASE("the long-sequence groups cover every zoo model once") {
    std::vector<std::string> covered;
    for (const SequenceGroup& group : sequence_groups()) covered.insert(covered.end(), group.zoo.begin(), group.zoo.end());
    std::vector<std::string> zoo;
    for (const auto& entry : models::zoo_entries()) zoo.emplace_back(entry.name);
    std::ranges::sort(covered);
    std::ranges::sort(zoo);
    CHECK(covered == zoo);
}
