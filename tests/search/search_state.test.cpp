#include <rlflow/core/canonical.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/cost.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/rewrite.hpp>
#include <rlflow/search.hpp>

#include "support.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

using namespace rlflow;
using cost::AnalyticBackend;
using cost::CostModel;
using search_test::rules;

namespace {

using Action = std::pair<std::uint32_t, rewrite::Location>;

/// The state's cost after each action it keeps a price for.
std::map<Action, double> kept_prices(const search::SearchState<AnalyticBackend>& state) {
    std::map<Action, double> prices;
    state.for_each_cheapest([&](const search::PricedAction& a, double cost) {
        prices.emplace(Action{a.rule, a.where}, cost);
        return true;
    });
    return prices;
}

/// Checks that the state keeps a price for exactly the listed actions, and that each
/// equals the cost of a copy of its graph, freshly indexed, rewritten and priced from
/// scratch. The prices are sums of the same node prices in another order, so they agree
/// within rounding.
void check_prices_fresh(const search::SearchState<AnalyticBackend>& state, CostModel<AnalyticBackend>& model) {
    const std::map<Action, double> kept = kept_prices(state);
    rewrite::Rewriter fresh(state.graph(), rules(), search::every_location);
    cost::CostTracker<AnalyticBackend> tracker(model, fresh.graph());
    CHECK(state.cost() == doctest::Approx(tracker.total()).epsilon(1e-9));
    std::size_t listed = 0;
    for (std::size_t r = 0; r < fresh.index().num_rules(); ++r)
        for (std::size_t l = 0; l < fresh.index().num_choices(r); ++l) {
            ++listed;
            const auto it = kept.find({static_cast<std::uint32_t>(r), fresh.index().location(r, l)});
            CAPTURE((*rules())[r].name);
            REQUIRE(it != kept.end());
            Graph rewritten = fresh.graph();
            (void)rewrite::apply(rewritten, *rules(), static_cast<std::uint32_t>(r), fresh.index().location(r, l), rewrite::Verify::no);
            CHECK(it->second == doctest::Approx(cost::CostTracker<AnalyticBackend>(model, rewritten).total()).epsilon(1e-9));
        }
    CHECK(kept.size() == listed);
    CHECK(state.priced_actions() == listed);
}

/// A random listed action of the state.
Action random_action(const search::SearchState<AnalyticBackend>& state, Rng& rng) {
    std::vector<Action> all;
    state.for_each_cheapest([&](const search::PricedAction& a, double) {
        all.emplace_back(a.rule, a.where);
        return true;
    });
    REQUIRE_FALSE(all.empty());
    return all[rng.below(all.size())];
}

}  // namespace

TEST_CASE("a search state's kept prices equal fresh probes along a walk of rewrites and undos") {
    for (const std::string name : {"bert", "squeezenet1_1", "encoder_small:2"}) {
        CAPTURE(name);
        const Graph g = models::build_zoo_model(name);
        CostModel<AnalyticBackend> model;
        search::SearchState<AnalyticBackend> state(g, rules(), model);
        // Probing every action left the running total as the tracker first summed it.
        CHECK(state.cost() == cost::CostTracker<AnalyticBackend>(model, g).total());
        check_prices_fresh(state, model);
        std::size_t probe_everything = state.priced_actions();  // what probing every action at every step costs
        Rng rng(7);
        std::vector<EditJournal> done;
        for (int step = 0; step < 24; ++step) {
            if (!done.empty() && rng.below(3) == 0) {
                state.undo(std::move(done.back()));
                done.pop_back();
            } else {
                const auto [rule, where] = random_action(state, rng);
                done.push_back(state.apply(rule, where));
            }
            check_prices_fresh(state, model);
            probe_everything += state.priced_actions();
        }
        while (!done.empty()) {
            state.undo(std::move(done.back()));
            done.pop_back();
        }
        CHECK(canonical_form(state.graph()) == canonical_form(g));
        check_prices_fresh(state, model);
        // Prices are measured once and kept: the walk probed fewer actions than probing
        // every listed action after every step would have.
        CHECK(state.probes() < probe_everything);
    }
}

TEST_CASE("edits synced at once leave the state as edits synced one by one") {
    const Graph g = models::build_zoo_model("bert");
    CostModel<AnalyticBackend> model;
    search::SearchState<AnalyticBackend> stepwise(g, rules(), model);
    search::SearchState<AnalyticBackend> batched(g, rules(), model);
    Rng rng(11);
    std::vector<Action> walk;
    std::vector<EditJournal> stepwise_done, batched_done;
    for (int step = 0; step < 6; ++step) {
        walk.push_back(random_action(stepwise, rng));
        stepwise_done.push_back(stepwise.apply(walk.back().first, walk.back().second));
    }
    // Back two steps, then one other step.
    for (int i = 0; i < 2; ++i) {
        stepwise.undo(std::move(stepwise_done.back()));
        stepwise_done.pop_back();
    }
    const Action other = random_action(stepwise, rng);
    stepwise_done.push_back(stepwise.apply(other.first, other.second));

    for (const Action& a : walk) batched_done.push_back(batched.edit(a.first, a.second));
    CHECK_THROWS_AS((void)batched.cost(), precondition_error);
    for (int i = 0; i < 2; ++i) {
        batched.revert(std::move(batched_done.back()));
        batched_done.pop_back();
    }
    batched_done.push_back(batched.edit(other.first, other.second));
    CHECK(batched.hash() == stepwise.hash());
    batched.sync();

    CHECK(canonical_form(batched.graph()) == canonical_form(stepwise.graph()));
    CHECK(batched.cost() == doctest::Approx(stepwise.cost()).epsilon(1e-12));
    const auto a = kept_prices(stepwise);
    const auto b = kept_prices(batched);
    REQUIRE(a.size() == b.size());
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
        CHECK(i->first == j->first);
        CHECK(i->second == doctest::Approx(j->second).epsilon(1e-9));
    }
    check_prices_fresh(batched, model);
}

TEST_CASE("a state kept without its structure hash edits and prices alike, and refuses to give a hash") {
    const Graph g = models::build_zoo_model("squeezenet1_1");
    CostModel<AnalyticBackend> model;
    search::SearchState<AnalyticBackend> hashed(g, rules(), model);
    search::SearchState<AnalyticBackend> unhashed(g, rules(), model, {.hash = false});
    CHECK_THROWS_AS((void)unhashed.hash(), precondition_error);
    Rng rng(3);
    for (int step = 0; step < 4; ++step) {
        const auto [rule, where] = random_action(hashed, rng);
        (void)hashed.apply(rule, where);
        (void)unhashed.apply(rule, where);
        CHECK(unhashed.cost() == hashed.cost());
        CHECK(kept_prices(unhashed) == kept_prices(hashed));
    }
}
