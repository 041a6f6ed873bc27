// The random policy (rl/env/random_policy.hpp): it draws only allowed rewrites, NO-OP only
// where asked or where nothing else is allowed, the best-gain location when asked, every
// allowed xfer and location over many draws, and the same sequence under one seed.
#include "../small_graphs.hpp"

#include <rlflow/cost/analytic.hpp>
#include <rlflow/rl/env/env.hpp>
#include <rlflow/rl/env/random_policy.hpp>

#include <doctest/doctest.h>

#include <set>
#include <utility>
#include <vector>

using namespace rlflow;

namespace {

/// The first observation of the two-branch graph under the built-in rules.
rl::Observation first_observation() {
    static cost::CostModel<cost::AnalyticBackend> model{cost::AnalyticBackend::preset("cpu")};
    rl::GraphEnv env(rlflow::test::builtin(), model, {});
    return env.reset(rlflow::test::two_branches());
}

}  // namespace

TEST_CASE("the random policy draws allowed rewrites uniformly, NO-OP only as asked, and repeats under a seed") {
    const rl::Observation o = first_observation();
    std::set<std::pair<std::uint32_t, std::uint32_t>> allowed;
    for (std::uint32_t x = 0; x < o.num_xfers; ++x)
        for (std::uint32_t l = 0; l < o.location_count(x); ++l) allowed.insert({x, l});
    REQUIRE(allowed.size() >= 2);

    Rng rng(1);
    std::set<std::pair<std::uint32_t, std::uint32_t>> seen;
    for (int i = 0; i < 2000; ++i) {
        const rl::Action a = rl::random_action(o, rng);
        REQUIRE(o.allows(a.xfer, a.location));
        CHECK(a.xfer != o.num_xfers);  // never NO-OP while a rewrite is allowed
        seen.insert({a.xfer, a.location});
    }
    CHECK(seen == allowed);  // every allowed rewrite is drawn

    // Best-gain locations only, and NO-OP at about the asked rate.
    int no_ops = 0;
    constexpr int draws = 4000;
    for (int i = 0; i < draws; ++i) {
        const rl::Action a = rl::random_action(o, rng, {.no_op = 0.25, .best_location = true});
        if (a.xfer == o.num_xfers) {
            ++no_ops;
            continue;
        }
        CHECK(a.location == rl::best_location(o, a.xfer));
    }
    CHECK(no_ops > draws / 4 - 200);  // about 5 standard deviations either side
    CHECK(no_ops < draws / 4 + 200);

    // The same seed, the same draws.
    Rng a(9), b(9);
    for (int i = 0; i < 100; ++i) CHECK(rl::random_action(o, a) == rl::random_action(o, b));
}

TEST_CASE("the random policy takes NO-OP when no rewrite is allowed") {
    rl::Observation o = first_observation();
    for (std::uint32_t x = 0; x < o.num_xfers; ++x) o.xfer_mask[x] = 0;
    Rng rng(3);
    CHECK(rl::random_xfer(o, rng) == o.num_xfers);
    CHECK(rl::random_action(o, rng).xfer == o.num_xfers);
}
