#pragma once
/// \file
/// Wall-clock sampling for measuring backends: warm-up calls, then timed samples whose
/// median is the result. The median, not the mean, because a loaded machine adds
/// one-sided outliers (preemption, page faults) that a mean would absorb.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace rlflow::cost::detail {

/// How a measurement is sampled.
struct SamplingPlan {
    /// Untimed calls first (timed only to size the samples).
    int warmup = 0;
    /// Timed samples; the result is their median.
    int repetitions = 1;
    /// A sample repeats the call until it lasts at least this long and reports the mean
    /// per call, so that calls of a few microseconds are not timed at the granularity
    /// of the clock and the loop.
    double min_sample_seconds = 0;
};

/// The most calls one sample makes, however fast a call is.
inline constexpr std::int64_t max_calls_per_sample = 1000;

/// Keeps the compiler from proving that the memory behind `p` is never read, so that the
/// work a benchmark loop does on it is not optimised away (Google Benchmark's
/// DoNotOptimize, for GCC and Clang).
inline void do_not_optimize(const void* p) noexcept { asm volatile("" : : "g"(p) : "memory"); }

/// The median of `samples` (the mean of the middle two for an even count); 0 for none.
[[nodiscard]] inline double median(std::vector<double> samples) {
    if (samples.empty()) return 0.0;
    const auto middle = samples.begin() + static_cast<std::ptrdiff_t>(samples.size() / 2);
    std::nth_element(samples.begin(), middle, samples.end());
    if (samples.size() % 2 == 1) return *middle;
    const double below = *std::max_element(samples.begin(), middle);
    return (below + *middle) / 2;
}

/// The paired ratios other[k] / base[k] of runs timed in the same rounds (interleaved),
/// over the rounds both have and where base[k] > 0: machine noise that lasts longer than
/// a round hits both runs of a pair alike, and cancels in the ratio.
[[nodiscard]] inline std::vector<double> paired_ratios(const std::vector<double>& base, const std::vector<double>& other) {
    std::vector<double> ratios;
    for (std::size_t k = 0; k < std::min(base.size(), other.size()); ++k)
        if (base[k] > 0) ratios.push_back(other[k] / base[k]);
    return ratios;
}

/// P(X >= wins) for X ~ Binomial(n, 1/2): the one-sided sign test's p-value, for `wins`
/// rounds of `n` paired runs in which one side was faster.
[[nodiscard]] inline double sign_test_p(std::size_t wins, std::size_t n) {
    if (wins == 0) return 1.0;
    double p = 0;
    for (std::size_t i = wins; i <= n; ++i)
        p += std::exp(std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(i) + 1)
                      - std::lgamma(static_cast<double>(n - i) + 1) - static_cast<double>(n) * std::log(2.0));
    return std::min(p, 1.0);
}

/// Seconds that `calls` calls of `call` take together, by std::chrono::steady_clock.
template <class Call>
[[nodiscard]] double seconds_of(Call& call, std::int64_t calls = 1) {
    const auto start = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i < calls; ++i) call();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Calls per sample so that a sample lasts `plan.min_sample_seconds`, for calls that take
/// `call_seconds` each (0 when unknown: then 1).
[[nodiscard]] inline std::int64_t calls_per_sample(const SamplingPlan& plan, double call_seconds) {
    if (plan.min_sample_seconds <= call_seconds || call_seconds <= 0) return 1;
    const double calls = std::ceil(plan.min_sample_seconds / call_seconds);
    return static_cast<std::int64_t>(std::min(calls, static_cast<double>(max_calls_per_sample)));
}

/// Median seconds per call of `call` under `plan`; `prepare` runs before every timed
/// sample, untimed (e.g. to evict the caches).
template <class Call, class Prepare>
[[nodiscard]] double median_seconds(Call&& call, const SamplingPlan& plan, Prepare&& prepare) {
    double fastest = 0;
    for (int i = 0; i < plan.warmup; ++i) {
        const double s = seconds_of(call);
        fastest = i == 0 ? s : std::min(fastest, s);
    }
    const std::int64_t calls = calls_per_sample(plan, fastest);
    std::vector<double> samples;
    samples.reserve(static_cast<std::size_t>(std::max(plan.repetitions, 1)));
    for (int i = 0; i < std::max(plan.repetitions, 1); ++i) {
        prepare();
        samples.push_back(seconds_of(call, calls) / static_cast<double>(calls));
    }
    return median(std::move(samples));
}

/// Median seconds per call of `call` under `plan`.
template <class Call>
[[nodiscard]] double median_seconds(Call&& call, const SamplingPlan& plan) {
    return median_seconds(std::forward<Call>(call), plan, [] {});
}

}  // namespace rlflow::cost::detail
