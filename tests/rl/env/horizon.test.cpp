// How long a training episode runs (rl/env/horizon.hpp).
#include "../small_graphs.hpp"

#include <rlflow/rl/env/horizon.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace rlflow;

TEST_CASE("episodes run twice the rewrites greedy search takes on the longest graph, and at least 100 steps") {
    auto model = test::analytic_cpu();
    const std::vector<Graph> short_chain{test::conv_chain(2)};
    const std::vector<Graph> long_chain{test::conv_chain(9)};
    const std::vector<Graph> both{test::conv_chain(2), test::conv_chain(9)};
    const std::size_t few = rl::greedy_rewrites(std::span<const Graph>(short_chain), test::builtin(), model);
    const std::size_t many = rl::greedy_rewrites(std::span<const Graph>(long_chain), test::builtin(), model);
    CHECK(many >= 9);  // an activation to fuse after each convolution
    CHECK(few < many);
    CHECK(rl::greedy_rewrites(std::span<const Graph>(both), test::builtin(), model) == many);
    CHECK(rl::episode_step_limit(many) == rl::min_episode_steps);
    CHECK(rl::episode_step_limit(207) == 414);
}
