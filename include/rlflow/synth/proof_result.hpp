#pragma once
/// \file
/// What the Z3 prover (synth/prover.hpp) answers about one rule, and how hard it tries.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rlflow::synth {

/// The outcome of one proof attempt.
enum class ProofStatus : std::uint8_t {
    /// The rule follows from the axioms.
    proved,
    /// Z3 gave up (timeout, incomplete quantifier reasoning), or the rule cannot be encoded.
    unknown,
    /// Z3 found a model of the axioms and premises in which the outputs differ.
    refuted,
};

/// "proved", "unknown" or "refuted".
[[nodiscard]] constexpr std::string_view proof_status_name(ProofStatus s) noexcept {
    constexpr std::string_view names[] = {"proved", "unknown", "refuted"};
    return names[static_cast<std::size_t>(s)];
}

/// The verdict on one rule.
struct ProofResult {
    ProofStatus status = ProofStatus::unknown;
    /// Wall-clock seconds, encoding included.
    double seconds = 0;
    std::string detail;
};

/// How hard the prover tries.
struct ProverOptions {
    /// Z3's time limit per rule for the E-matching search, which proves what it can in
    /// milliseconds and otherwise usually runs out of instances long before the limit.
    unsigned timeout_ms = 2000;
    /// Z3's random seed.
    std::uint64_t seed = 0;
    /// Time for a second search with model-based quantifier instantiation when E-matching
    /// finds no proof: the only way to `refuted`, and a rare way to `proved`; it seldom ends
    /// within seconds on these axioms, so 0 (the default) skips it.
    unsigned model_search_ms = 0;
};

}  // namespace rlflow::synth
