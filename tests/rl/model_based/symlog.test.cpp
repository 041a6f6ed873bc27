// The symlog scale and its two-hot bins: symexp inverts symlog, a two-hot target's
// expectation is the value it encodes, and values beyond the range clamp to its ends.
#include <rlflow/rl/model_based/symlog.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace rlflow;

TEST_CASE("symexp inverts symlog, and a two-hot target's expectation is its value") {
    for (const double x : {-150.0, -3.5, -1e-3, 0.0, 2e-4, 0.7, 42.0}) CHECK(rl::symexp(rl::symlog(x)) == doctest::Approx(x).epsilon(1e-12));
    const rl::SymlogBins bins(41, 5.0);
    CHECK(bins.value(0) == -5.0);
    CHECK(bins.value(40) == 5.0);
    CHECK(bins.value(20) == doctest::Approx(0.0));
    // Logits log(w) of the two-hot weights w (0 as a very negative logit) decode to the
    // value: the expectation of the bins under the target itself. Tolerance: float logits.
    const auto decode = [&](double y) {
        std::vector<float> w;
        bins.append_two_hot(y, w);
        REQUIRE(w.size() == 41);
        double total = 0;
        int nonzero = 0;
        for (float& v : w) {
            total += v;
            nonzero += v > 0 ? 1 : 0;
            v = v > 0 ? std::log(v) : -1e4f;
        }
        CHECK(total == doctest::Approx(1.0));
        CHECK(nonzero <= 2);
        return bins.expectation(w);
    };
    for (const double y : {-4.99, -2.3, -0.01, 0.0, 0.0049, 0.13, 1.0, 4.75}) CHECK(decode(y) == doctest::Approx(y).epsilon(1e-5));
    CHECK(decode(5.0) == doctest::Approx(5.0));
    CHECK(decode(9.0) == doctest::Approx(5.0));
    CHECK(decode(-7.5) == doctest::Approx(-5.0));
    CHECK_THROWS_AS(rl::SymlogBins(1, 5.0), precondition_error);
    CHECK_THROWS_AS(rl::SymlogBins(8, 0.0), precondition_error);
}
