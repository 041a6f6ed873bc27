#pragma once
/// \file
/// The end-to-end guard: a cost model is a means, a runtime's measurement is the truth.
/// After a search, the input graph and the best few candidates are written as ONNX and
/// timed whole in the target runtime, interleaved run by run, at one or more ONNX
/// Runtime optimisation levels. A candidate replaces the input only if it is faster
/// beyond the noise at the first level and loses nothing beyond min_gain at the others;
/// otherwise the input is kept, unchanged.
///
/// "Beyond the noise" is a one-sided sign test on paired runs: in round k the input and
/// every candidate run once each, back to back, so machine noise that lasts longer than a
/// round hits both alike, and the ratio r_k = candidate_k / input_k compares them.
/// Under "no difference" a candidate wins each round with probability 1/2, so the chance
/// of w or more wins in n rounds is P = sum_{i>=w} C(n, i) / 2^n. A candidate is faster
/// when P < significance and the median ratio is below 1 - min_gain; slower when the
/// same holds for losses and the median ratio is above 1 + min_gain. The test makes no
/// assumption about the shape of the timing distribution (which has a long right tail).
/// At the other levels a candidate may lose at most min_gain in the median, whether or
/// not the sign test can tell the loss from noise yet: a written model must not be slower
/// at any level, and one that lost 1.2% in 14 of 21 rounds (p = 0.09) would be.
///
/// Several candidates are several tests, and the fastest of several measured candidates is
/// favoured by its luck in that measurement (the winner's curse). So by default the guard
/// works in two stages: the first comparison only screens (the candidate with the best
/// median ratio, below 1 - min_gain at the first level and within min_gain at the others),
/// and the screened candidate is then timed against the input again, in fresh sessions,
/// and written only if that second comparison finds it faster by the sign test at the
/// significance. The choice uses the first sample alone and the test the second alone, so
/// a candidate no faster than the input is written with probability at most the
/// significance, however many candidates there were: two separate comparisons, as a
/// claimed speed-up needs. The second comparison is group-sequential: a few-percent gain
/// can take more rounds than one comparison has on a noisy machine, so a look that neither
/// confirms the candidate nor finds it slower, while its median still gains beyond
/// min_gain, times as many rounds again and tests the pooled runs; each of the
/// confirm_looks looks tests at significance / confirm_looks (Bonferroni), so the bound
/// above still holds. Without the second stage (GuardOptions::confirm false) each of k
/// candidates must pass the first comparison's sign test at significance / k (Bonferroni).
#include <rlflow/core/graph.hpp>
#include <rlflow/cost/detail/timing.hpp>
#include <rlflow/onnx/export.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace rlflow::search {

/// How the guard measures and decides.
struct GuardOptions {
    /// Interleaved rounds: timed runs of each model.
    int rounds = 21;
    /// Untimed runs of each model first.
    int warmup = 2;
    /// The sign test's significance level.
    double significance = 0.05;
    /// The least relative gain (and loss) that counts.
    double min_gain = 0.005;
    /// How the candidates are written to be timed: as they will be written for the user.
    onnx_io::ExportOptions written_as;
    /// Two stages: the first comparison screens, a second one of the screened candidate
    /// against the input, at the first level, decides. False: the first decides alone.
    bool confirm = true;
    /// Most looks of the second comparison, each of `rounds` more rounds (see the file
    /// comment); each look tests at significance / confirm_looks.
    int confirm_looks = 2;
};

/// Runs of each model at one level, index 0 the input, in round order.
struct LevelTimings {
    std::string level;
    std::vector<std::vector<double>> runs_ms;
};

/// What the guard saw of one candidate at one level.
struct CandidateVerdict {
    /// Index into the candidates (0 = the first candidate, not the input).
    std::size_t candidate = 0;
    std::string level;
    double input_median_ms = 0;
    double candidate_median_ms = 0;
    /// Median over rounds of candidate / input.
    double median_ratio = 1;
    std::size_t wins = 0;
    std::size_t rounds = 0;
    /// One-sided sign-test p-values for "faster" and "slower".
    double p_faster = 1;
    double p_slower = 1;
    bool faster = false;
    bool slower = false;
    /// Looks of a sequential comparison whose pooled runs these are (1: a single one).
    std::size_t looks = 1;
};

/// The guard's decision.
struct GuardDecision {
    /// The candidate to write; nullopt: write the input unchanged.
    std::optional<std::size_t> chosen;
    /// Why, in a sentence.
    std::string reason;
    std::vector<CandidateVerdict> verdicts;
    /// The input's median ms at the first level, timed even when no candidate differs
    /// from it (0 when nothing was timed).
    double input_median_ms = 0;
    /// The second comparison of the chosen candidate with the input, when one was run.
    std::optional<CandidateVerdict> confirmation;
    /// The candidate with the lowest median ratio at the first level, chosen or not.
    std::optional<std::size_t> best;
    /// The level at which `best` lost beyond min_gain when it gained at the first level
    /// and was not chosen for that (empty otherwise).
    std::string vetoed_at;
};

namespace detail {

using cost::detail::sign_test_p;

/// Compares candidate `c` (runs index c + 1) with the input at one level, its sign test at
/// `significance`.
[[nodiscard]] inline CandidateVerdict compare(const LevelTimings& t, std::size_t c, const GuardOptions& options, double significance) {
    const std::vector<double>& input = t.runs_ms.at(0);
    const std::vector<double>& mine = t.runs_ms.at(c + 1);
    CandidateVerdict v;
    v.candidate = c;
    v.level = t.level;
    const std::vector<double> ratios = cost::detail::paired_ratios(input, mine);
    v.wins = static_cast<std::size_t>(std::count_if(ratios.begin(), ratios.end(), [](double r) { return r < 1; }));
    const auto losses = static_cast<std::size_t>(std::count_if(ratios.begin(), ratios.end(), [](double r) { return r > 1; }));
    v.rounds = v.wins + losses;  // ties carry no sign
    v.input_median_ms = cost::detail::median(input);
    v.candidate_median_ms = cost::detail::median(mine);
    v.median_ratio = ratios.empty() ? 1.0 : cost::detail::median(ratios);
    v.p_faster = sign_test_p(v.wins, v.rounds);
    v.p_slower = sign_test_p(losses, v.rounds);
    v.faster = v.p_faster < significance && v.median_ratio < 1 - options.min_gain;
    v.slower = v.p_slower < significance && v.median_ratio > 1 + options.min_gain;
    return v;
}

/// A median ratio of a candidate's time to the input's, in words: "12.3% faster",
/// "2.3% slower" (percent of the input's time) or "as fast".
[[nodiscard]] inline std::string change_in_words(double ratio) {
    constexpr double shown_as_equal = 0.0005;  // rounds to 0.0% at one decimal
    char text[48];
    if (std::abs(ratio - 1) < shown_as_equal) return "as fast";
    std::snprintf(text, sizeof text, "%.1f%% %s", std::abs(1 - ratio) * 100, ratio < 1 ? "faster" : "slower");
    return text;
}

/// A fraction as a percentage with one decimal: 0.005 is "0.5%".
[[nodiscard]] inline std::string share(double fraction) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f%%", fraction * 100);
    return text;
}

/// A sign test's p-value as the console gives it: four decimals, "p < 0.0001" below.
[[nodiscard]] inline std::string p_value(double p) {
    if (p < 0.0001) return "p < 0.0001";
    char text[32];
    std::snprintf(text, sizeof text, "p = %.4f", p);
    return text;
}

/// "12/21 rounds faster, p = 0.0391" for a verdict read as a gain; "3/21 rounds faster,
/// p = 0.0001 that it is slower" for one read as a loss.
[[nodiscard]] inline std::string tally(const CandidateVerdict& v, bool as_loss = false) {
    return std::to_string(v.wins) + "/" + std::to_string(v.rounds) + " rounds faster" + (v.looks > 1 ? " over " + std::to_string(v.looks) + " looks" : "")
           + ", sign test " + (as_loss ? p_value(v.p_slower) + " that it is slower" : p_value(v.p_faster));
}

}  // namespace detail

/// Decides from timings at one or more levels (the first is the level that must gain)
/// for `candidates` candidates: the fastest candidate at the first level among those
/// faster there whose median loses at most min_gain at every other level; else none.
/// "Faster" is a median gain beyond min_gain when the choice is to be confirmed
/// (options.confirm: this comparison only screens), else also the sign test at the
/// significance divided among the candidates.
[[nodiscard]] inline GuardDecision decide(const std::vector<LevelTimings>& levels, std::size_t candidates,
                                          const GuardOptions& options = {}) {
    GuardDecision d;
    if (levels.empty() || candidates == 0) {
        d.reason = "no candidate differs from the input";
        return d;
    }
    double best_ratio = 1;
    const bool screening = options.confirm;
    const double significance = screening ? options.significance : options.significance / static_cast<double>(candidates);  // Bonferroni
    for (std::size_t c = 0; c < candidates; ++c) {
        bool acceptable = true;
        for (std::size_t l = 0; l < levels.size(); ++l) {
            const CandidateVerdict v = detail::compare(levels[l], c, options, significance);
            const bool gains = screening ? v.median_ratio < 1 - options.min_gain : v.faster;
            acceptable = acceptable && (l == 0 ? gains : v.median_ratio <= 1 + options.min_gain);
            d.verdicts.push_back(v);
        }
        const double ratio = d.verdicts[c * levels.size()].median_ratio;
        if (acceptable && (!d.chosen || ratio < best_ratio)) {
            d.chosen = c;
            best_ratio = ratio;
        }
    }
    const std::size_t per = levels.size();
    std::size_t best = 0;
    for (std::size_t c = 1; c < candidates; ++c)
        if (d.verdicts[c * per].median_ratio < d.verdicts[best * per].median_ratio) best = c;
    d.best = best;
    if (d.chosen) {
        const CandidateVerdict& v = d.verdicts[*d.chosen * per];
        d.reason = "candidate " + std::to_string(*d.chosen + 1) + (screening ? " is the fastest at level " : " is faster at level ") + v.level
                   + " (" + detail::change_in_words(v.median_ratio) + ", " + detail::tally(v)
                   + (!screening && candidates > 1 ? ", below " + std::to_string(significance).substr(0, 6) + " for " + std::to_string(candidates) + " candidates" : "")
                   + ")";
        if (per > 1) d.reason += " and not slower at the other levels (median loss at most " + detail::share(options.min_gain) + ")";
        if (best != *d.chosen) {
            // One with a lower median was not chosen: say which, and why (a level vetoed it, or noise).
            std::size_t worst = 0;
            for (std::size_t l = 1; l < per; ++l)
                if (worst == 0 || d.verdicts[best * per + l].median_ratio > d.verdicts[best * per + worst].median_ratio) worst = l;
            const bool vetoed = worst > 0 && d.verdicts[best * per + worst].median_ratio > 1 + options.min_gain;
            d.reason += "; candidate " + std::to_string(best + 1) + " was " + detail::change_in_words(d.verdicts[best * per].median_ratio)
                        + " there, but "
                        + (vetoed ? detail::change_in_words(d.verdicts[best * per + worst].median_ratio) + " at level " + d.verdicts[best * per + worst].level
                                  : std::string("not faster beyond the noise"));
        }
        return d;
    }
    // Why the input is kept, in terms of the best candidate: what it gained at the first
    // level, and the level that vetoed it or the noise that hid it.
    const CandidateVerdict& b = d.verdicts[best * per];
    const std::string name = candidates > 1 ? "the best candidate (" + std::to_string(best + 1) + " of " + std::to_string(candidates) + ")"
                                            : "the candidate";
    std::size_t veto = 0;
    for (std::size_t l = 1; l < per; ++l)
        if (d.verdicts[best * per + l].median_ratio > 1 + options.min_gain
            && (veto == 0 || d.verdicts[best * per + l].median_ratio > d.verdicts[best * per + veto].median_ratio))
            veto = l;
    const bool gained = screening ? b.median_ratio < 1 - options.min_gain : b.faster;
    if (gained && veto > 0) {
        const CandidateVerdict& v = d.verdicts[best * per + veto];
        d.vetoed_at = v.level;
        d.reason = "keeping the input: " + name + " was " + detail::change_in_words(b.median_ratio) + " at level " + b.level + " ("
                   + detail::tally(b) + "), but level " + v.level + " vetoed it: " + detail::change_in_words(v.median_ratio) + " there ("
                   + detail::tally(v, true) + "), where a written model may lose at most " + detail::share(options.min_gain);
        return d;
    }
    if (b.rounds == 0) {
        d.reason = "keeping the input: the runtime gave the candidates no timed runs at level " + b.level + " (it could not run them)";
        return d;
    }
    if (b.median_ratio < 1 && b.median_ratio >= 1 - options.min_gain) {
        d.reason = "keeping the input: no candidate gains the " + detail::share(options.min_gain) + " a written model must gain at level "
                   + b.level + "; " + name + " was " + detail::change_in_words(b.median_ratio) + " (" + detail::tally(b) + ")";
        return d;
    }
    const bool loses = b.median_ratio > 1 + options.min_gain;
    d.reason = "keeping the input: no candidate is faster at level " + b.level + " beyond the noise; " + name + " was "
               + detail::change_in_words(b.median_ratio) + " (" + detail::tally(b, loses) + ")";
    return d;
}

/// Times the chosen candidate against the input again at `level`, in fresh sessions, and
/// keeps it only if it is faster there too: up to options.confirm_looks looks, each at
/// significance / confirm_looks on the runs pooled so far, the next one only while the
/// last neither decided nor lost its median gain.
template <class Timer>
void confirm(GuardDecision& d, const std::vector<std::filesystem::path>& files, const std::vector<std::string>& levels, Timer& timer,
             const GuardOptions& options) {
    const std::size_t c = *d.chosen;
    const std::string& level = levels.front();
    const int looks = std::max(options.confirm_looks, 1);
    const double per_look = options.significance / static_cast<double>(looks);
    LevelTimings pooled{level, {{}, {}}};
    CandidateVerdict v;
    for (int look = 1; look <= looks; ++look) {
        const std::vector<std::vector<double>> more = timer(std::vector<std::filesystem::path>{files.front(), files.at(c + 1)}, level);
        for (std::size_t m = 0; m < 2; ++m) pooled.runs_ms[m].insert(pooled.runs_ms[m].end(), more.at(m).begin(), more.at(m).end());
        v = detail::compare(pooled, 0, options, per_look);
        v.looks = static_cast<std::size_t>(look);
        if (v.faster || v.slower || v.median_ratio >= 1 - options.min_gain) break;
    }
    v.candidate = c;
    d.confirmation = v;
    if (v.faster) {
        d.reason += "; timed again: " + detail::change_in_words(v.median_ratio) + " (" + detail::tally(v) + ")";
        return;
    }
    d.reason = "keeping the input: candidate " + std::to_string(c + 1) + " was " + detail::change_in_words(d.verdicts.at(c * levels.size()).median_ratio)
               + " at level " + level + " in the first comparison, but timed again it was " + detail::change_in_words(v.median_ratio) + " ("
               + detail::tally(v, v.median_ratio > 1) + "), not faster beyond the noise";
    d.chosen.reset();
}

/// Times the input and `candidates` with `timer` at each of `levels` and decides.
/// `timer(files, level)` returns each file's runs in round order, interleaved; the files
/// are written under `scratch` and removed afterwards. When the input came from an ONNX
/// file, `input_file` names it and it is timed as it is: the candidates must beat the
/// model the user has, not rlflow's export of it.
template <class Timer>
[[nodiscard]] GuardDecision run_guard(const Graph& input, const std::vector<const Graph*>& candidates,
                                      const std::vector<std::string>& levels, const std::filesystem::path& scratch,
                                      Timer&& timer, const GuardOptions& options = {},
                                      const std::optional<std::filesystem::path>& input_file = std::nullopt) {
    std::vector<std::filesystem::path> files;
    std::vector<std::filesystem::path> written;
    const auto write = [&](const Graph& g) {
        written.push_back(scratch / ("guard_" + std::to_string(files.size()) + ".onnx"));
        files.push_back(written.back());
        onnx_io::save_onnx(g, files.back(), options.written_as);
    };
    if (input_file) files.push_back(*input_file);
    else write(input);
    for (const Graph* g : candidates) write(*g);
    // With no candidate, the input is timed at the first level alone: its latency for the report.
    const std::size_t timed_levels = candidates.empty() ? std::min<std::size_t>(levels.size(), 1) : levels.size();
    std::vector<LevelTimings> timings;
    for (std::size_t l = 0; l < timed_levels; ++l) timings.push_back({levels[l], timer(files, levels[l])});
    GuardDecision d = decide(candidates.empty() ? std::vector<LevelTimings>{} : timings, candidates.size(), options);
    if (!timings.empty() && !timings.front().runs_ms.empty() && !timings.front().runs_ms.front().empty())
        d.input_median_ms = cost::detail::median(timings.front().runs_ms.front());
    if (d.chosen && options.confirm) confirm(d, files, levels, timer, options);
    for (const auto& f : written) {
        std::error_code ignored;
        std::filesystem::remove(f, ignored);
    }
    return d;
}

}  // namespace rlflow::search
