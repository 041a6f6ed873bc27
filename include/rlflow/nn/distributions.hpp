#pragma once
/// \file
/// `MaskedCategorical`: a categorical distribution over N actions per batch row of which
/// only some are valid (the transformation mask and the location masks of thesis §3.4),
/// with the same mask used when acting (sample, argmax) and when updating (log_prob,
/// entropy), as PPO requires.
///
/// Masking: an invalid action's logit is shifted by `masked_logit_offset` = -1e9, a large
/// *finite* number, never -inf. Why that cannot produce NaN:
///  - every value on the tape stays finite, so no product is ever 0 · ∞ or ∞ - ∞;
///  - log_softmax subtracts the row maximum, which is a valid entry (a row has one, and
///    logits are far smaller than 1e9 in magnitude), so an invalid entry's exponent is
///    below -1e9 + 2 max|logit|, and exp underflows to exactly 0 (it does from about -104
///    in float32 and -745 in float64): invalid actions get probability exactly 0, their
///    log-probability is a finite ≈ -1e9, and they drop out of every sum;
///  - the entropy multiplies each term p log p by the 0/1 mask as well, so an invalid
///    term is 0 · finite = 0 whatever its value, and with a single valid action
///    (p = 1, log p = 0) the entropy is exactly 0 and its gradient exactly 0.
/// log_prob picks the chosen entries with a one-hot product, which is safe for the same
/// reason (finite log-probabilities only).

#include <rlflow/core/error.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn/ops.hpp>
#include <rlflow/nn/tape.hpp>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rlflow::nn {

/// What is added to the logit of an invalid action (see the file comment).
inline constexpr double masked_logit_offset = -1e9;

/// A batch of categorical distributions over valid actions only.
template <TensorBackend B>
class MaskedCategorical {
public:
    using Scalar = typename B::Scalar;

    /// `logits` (batch, N) and a host mask, row-major (batch x N), nonzero where an action is
    /// valid; every row needs at least one valid action.
    MaskedCategorical(Var<B> logits, std::span<const std::uint8_t> mask) : m_logits(logits), m_mask(mask.begin(), mask.end()) {
        RLFLOW_EXPECTS(logits.shape().rank() == 2, shape_error,
                       "masked categorical logits are (batch, actions), got " + logits.shape().to_string());
        RLFLOW_EXPECTS(static_cast<std::int64_t>(mask.size()) == logits.value().numel(), shape_error,
                       "masked categorical: " + std::to_string(mask.size()) + " mask entries for logits " + logits.shape().to_string());
        std::vector<Scalar> valid(m_mask.size()), offsets(m_mask.size());
        for (std::size_t i = 0; i < m_mask.size(); ++i) {
            valid[i] = m_mask[i] != 0 ? Scalar(1) : Scalar(0);
            offsets[i] = m_mask[i] != 0 ? Scalar(0) : static_cast<Scalar>(masked_logit_offset);
        }
        for (std::int64_t row = 0; row < batch(); ++row)
            RLFLOW_EXPECTS(first_valid(row) < actions(), precondition_error,
                           "masked categorical: row " + std::to_string(row) + " has no valid action");
        Tape<B>& tape = logits.tape();
        m_valid = tape.constant(Tensor<B>::from_host(logits.shape(), valid));
        m_log_probs = log_softmax(add(logits, tape.constant(Tensor<B>::from_host(logits.shape(), offsets))));
    }

    /// log π(a_b) for one action per row, shape (batch); each must be valid.
    [[nodiscard]] Var<B> log_prob(std::span<const std::int32_t> chosen) const {
        RLFLOW_EXPECTS(static_cast<std::int64_t>(chosen.size()) == batch(), shape_error,
                       "masked categorical: " + std::to_string(chosen.size()) + " actions for a batch of " + std::to_string(batch()));
        std::vector<Scalar> one_hot(m_mask.size(), Scalar(0));
        for (std::int64_t row = 0; row < batch(); ++row) {
            const std::int32_t a = chosen[static_cast<std::size_t>(row)];
            RLFLOW_EXPECTS(a >= 0 && a < actions() && valid(row, a), precondition_error,
                           "masked categorical: row " + std::to_string(row) + " chose action " + std::to_string(a)
                               + ", which is out of range or masked");
            one_hot[index(row, a)] = Scalar(1);
        }
        const Var<B> picked = mul(m_log_probs, m_log_probs.tape().constant(Tensor<B>::from_host(m_logits.shape(), one_hot)));
        return reshape(sum(picked, -1), Shape{batch()});
    }

    /// -Σ_a π(a) log π(a) over the valid actions of each row, shape (batch).
    [[nodiscard]] Var<B> entropy() const {
        const Var<B> terms = mul(mul(exp(m_log_probs), m_log_probs), m_valid);
        return reshape(scale(sum(terms, -1), Scalar(-1)), Shape{batch()});
    }

    /// One action per row, drawn from π by inverse CDF over the valid actions only.
    [[nodiscard]] std::vector<std::int32_t> sample(Rng& rng) const {
        const std::vector<Scalar> log_probs = m_log_probs.value().to_host();
        std::vector<std::int32_t> out(static_cast<std::size_t>(batch()));
        for (std::int64_t row = 0; row < batch(); ++row) {
            double total = 0;
            for (std::int64_t a = 0; a < actions(); ++a)
                if (valid(row, a)) total += std::exp(double(log_probs[index(row, a)]));
            double u = rng.uniform() * total;
            // The fallback, for u past the last weight by rounding: the most probable valid action.
            std::int32_t pick = argmax_row(log_probs, row);
            for (std::int64_t a = 0; a < actions(); ++a) {
                if (!valid(row, a)) continue;
                const double p = std::exp(double(log_probs[index(row, a)]));
                if (u < p) {
                    pick = static_cast<std::int32_t>(a);
                    break;
                }
                u -= p;
            }
            out[static_cast<std::size_t>(row)] = pick;
        }
        return out;
    }

    /// The most probable valid action per row (the first on ties); masked actions are
    /// ignored whatever their logits.
    [[nodiscard]] std::vector<std::int32_t> argmax() const {
        const std::vector<Scalar> logits = m_logits.value().to_host();
        std::vector<std::int32_t> out(static_cast<std::size_t>(batch()));
        for (std::int64_t row = 0; row < batch(); ++row) out[static_cast<std::size_t>(row)] = argmax_row(logits, row);
        return out;
    }

    /// log π for every action, (batch, N); ≈ -1e9 (finite) for masked actions.
    [[nodiscard]] Var<B> log_probabilities() const noexcept { return m_log_probs; }
    [[nodiscard]] std::int64_t batch() const { return m_logits.dim(0); }
    [[nodiscard]] std::int64_t actions() const { return m_logits.dim(1); }

private:
    [[nodiscard]] std::size_t index(std::int64_t row, std::int64_t action) const {
        return static_cast<std::size_t>(row * actions() + action);
    }
    [[nodiscard]] bool valid(std::int64_t row, std::int64_t action) const { return m_mask[index(row, action)] != 0; }
    [[nodiscard]] std::int64_t first_valid(std::int64_t row) const {
        std::int64_t a = 0;
        while (a < actions() && !valid(row, a)) ++a;
        return a;
    }
    /// The valid action with the largest `scores` entry in `row`.
    [[nodiscard]] std::int32_t argmax_row(const std::vector<Scalar>& scores, std::int64_t row) const {
        std::int64_t best = first_valid(row);
        for (std::int64_t a = best + 1; a < actions(); ++a)
            if (valid(row, a) && scores[index(row, a)] > scores[index(row, best)]) best = a;
        return static_cast<std::int32_t>(best);
    }

    Var<B> m_logits;
    std::vector<std::uint8_t> m_mask;
    Var<B> m_valid;
    Var<B> m_log_probs;
};

}  // namespace rlflow::nn
