#pragma once
/// \file
/// The dream: the world model played as an environment, on frozen host copies (no tape),
/// a batch of episodes at a time. A dream episode starts from V's z of a real start graph
/// (with its real mask and gains, and h = c = 0). Each step:
///
/// 1. C chooses an xfer from [z, h] and the gains, among those the mask allows;
/// 2. NO-OP ends the episode with reward 0; any other xfer is embedded, its location
///    summary made of a projection guessed from [z, h, embedding] and the xfer's gain, and
///    M's LSTM advances on [z, embedding, summary];
/// 3. from the new h: z' ~ the mixture at temperature τ (logits / τ, noise × √τ), the
///    reward (symexp of the reward head), done ~ Bernoulli(σ(done head)), the next mask
///    (σ(mask head) > 1/2 per xfer; NO-OP always allowed) and the next gains (the gains
///    head, 0 where masked).
///
/// Episodes are cut at the step limit, as real ones, and bootstrapped there. What the dream
/// yields is what PPO updates from: one BasicRolloutSegment<DreamInput> per batch row.

#include <rlflow/core/error.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn/inference.hpp>
#include <rlflow/rl/model_based/controller.hpp>
#include <rlflow/rl/model_based/symlog.hpp>
#include <rlflow/rl/model_based/world_model.hpp>
#include <rlflow/rl/model_free/ppo.hpp>

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

namespace rlflow::rl {

/// How the dream runs.
struct DreamOptions {
    /// τ of M's mixture draws (World Models: logits / τ, noise × √τ).
    double temperature = 1.0;
    /// Steps after which a dream episode is cut (the real environment's limit).
    std::size_t step_limit = 100;
    /// Dream episodes stepped together.
    std::size_t batch = 64;
};

/// Where a dream episode starts: a real graph's z, gains (N) and mask (N + 1).
struct DreamStart {
    std::vector<float> z;
    std::vector<float> gains;
    std::vector<std::uint8_t> mask;
};

/// What a dream collection did.
struct DreamStats {
    std::size_t steps = 0;
    std::size_t episodes_ended = 0;
    double mean_return = 0;
    double mean_length = 0;
};

/// M's modules frozen for dreaming.
class FrozenWorldModel {
public:
    FrozenWorldModel() = default;
    template <nn::TensorBackend B>
    explicit FrozenWorldModel(const WorldModel<B>& m) {
        refresh(m);
    }
    template <nn::TensorBackend B>
    void refresh(const WorldModel<B>& m) {
        m_num_xfers = m.num_xfers();
        m_latent = m.options().latent;
        m_rnn.refresh(m.rnn());
        m_mdn.refresh(m.mdn());
        m_summary.refresh(m.summary_guess());
        m_reward.refresh(m.reward_head());
        m_reward_bins = m.options().reward_bins;
        m_done.refresh(m.done_head());
        m_mask.refresh(m.mask_head());
        m_gains.refresh(m.gains_head());
        const auto e = m.embedding().value.to_host();
        const std::int64_t rows = m.embedding().value.dim(0), cols = m.embedding().value.dim(1);
        m_embedding.resize(rows, cols);
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < cols; ++c) m_embedding(r, c) = static_cast<float>(e[static_cast<std::size_t>(r * cols + c)]);
    }

    /// The embeddings of `xfers`, (rows, action_embedding).
    void embed(std::span<const std::uint32_t> xfers, nn::HostMatrix& out) const {
        out.resize(static_cast<std::int64_t>(xfers.size()), m_embedding.cols());
        for (std::size_t r = 0; r < xfers.size(); ++r) out.row(static_cast<std::int64_t>(r)) = m_embedding.row(xfers[r]);
    }
    /// One LSTM step on [z, embedding, summary]: h and c advance in place.
    void advance(const nn::HostMatrix& z, const nn::HostMatrix& embedded, const nn::HostMatrix& summary, nn::HostMatrix& h,
                 nn::HostMatrix& c) {
        m_input.resize(z.rows(), z.cols() + embedded.cols() + summary.cols());
        m_input << z, embedded, summary;
        m_rnn.step(m_input, h, c);
    }
    /// The dream's guess of a summary's projection from [z, h, embedding].
    void guess_summary(const nn::HostMatrix& z, const nn::HostMatrix& h, const nn::HostMatrix& embedded, nn::HostMatrix& out) {
        m_input.resize(z.rows(), z.cols() + h.cols() + embedded.cols());
        m_input << z, h, embedded;
        m_summary.apply(m_input, out);
        out = out.array().tanh().matrix();
    }

    /// What M predicts from h (after a step): the next z drawn at `temperature`, the
    /// reward, the probability of done, the next mask and gains.
    struct Prediction {
        nn::HostMatrix z, reward, done, mask_logits, gains;
    };
    void predict(const nn::HostMatrix& h, double temperature, Rng& rng, Prediction& p) {
        m_mdn.sample(h, temperature, rng, p.z);
        reward(h, p.reward);
        m_done.apply(h, p.done);
        m_mask.apply(h, p.mask_logits);
        m_gains.apply(h, p.gains);
    }

    /// The reward head's symlog point prediction per row of h, (rows, 1): the regression's
    /// output, or the bins' expectation.
    void reward(const nn::HostMatrix& h, nn::HostMatrix& out) {
        if (m_reward_bins == 0) {
            m_reward.apply(h, out);
            return;
        }
        m_reward.apply(h, m_logits);
        const SymlogBins bins(m_reward_bins, reward_bound);
        out.resize(h.rows(), 1);
        for (std::int64_t r = 0; r < h.rows(); ++r)
            out(r, 0) = static_cast<float>(bins.expectation(std::span<const float>(m_logits.row(r).data(), static_cast<std::size_t>(m_logits.cols()))));
    }

    [[nodiscard]] std::uint32_t num_xfers() const noexcept { return m_num_xfers; }
    [[nodiscard]] std::int64_t latent() const noexcept { return m_latent; }
    [[nodiscard]] std::int64_t hidden() const noexcept { return m_rnn.hidden_size(); }

private:
    std::uint32_t m_num_xfers = 0;
    std::int64_t m_latent = 0;
    nn::FrozenLstmCell m_rnn;
    nn::FrozenMdnHead m_mdn;
    nn::FrozenMlp m_summary;
    nn::FrozenMlp m_reward, m_done, m_mask, m_gains;
    std::int64_t m_reward_bins = 0;
    nn::HostMatrix m_embedding;
    nn::HostMatrix m_input;
    nn::HostMatrix m_logits;
};

/// A batch of dream episodes.
class Dream {
public:
    template <nn::TensorBackend B>
    Dream(const WorldModel<B>& model, const Controller<B>& controller, DreamOptions options)
        : m_model(model), m_controller(controller), m_options(options) {
        RLFLOW_EXPECTS(options.batch > 0 && options.step_limit > 0 && options.temperature >= 0 && std::isfinite(options.temperature),
                       precondition_error, "DreamOptions: batch and step_limit must be positive and the temperature finite and >= 0");
    }
    /// Follows new weights of the world model and the controller.
    template <nn::TensorBackend B>
    void refresh(const WorldModel<B>& model, const Controller<B>& controller) {
        m_model.refresh(model);
        m_controller.refresh(controller);
    }

    /// Runs `steps_per_row` steps of every batch row, episodes starting from `starts`
    /// (drawn uniformly) and restarting when they end; the rows' segments for PPO.
    std::vector<BasicRolloutSegment<DreamInput>> collect(std::span<const DreamStart> starts, std::size_t steps_per_row, Rng& rng,
                                                         DreamStats& stats);

private:
    void restart(std::size_t row, std::span<const DreamStart> starts, Rng& rng);
    [[nodiscard]] DreamInput input_of(std::size_t row) const;
    [[nodiscard]] double value_of(const DreamInput& in);

    FrozenWorldModel m_model;
    FrozenController m_controller;
    DreamOptions m_options;
    // Per row: z, h, c, gains, mask, steps, return so far.
    nn::HostMatrix m_z, m_h, m_c, m_gains;
    std::vector<std::vector<std::uint8_t>> m_mask;
    std::vector<std::size_t> m_steps;
    std::vector<double> m_return;
};

inline void Dream::restart(std::size_t row, std::span<const DreamStart> starts, Rng& rng) {
    const DreamStart& s = starts[rng.next() % starts.size()];
    const auto r = static_cast<std::int64_t>(row);
    for (std::int64_t d = 0; d < m_z.cols(); ++d) m_z(r, d) = s.z[static_cast<std::size_t>(d)];
    for (std::int64_t x = 0; x < m_gains.cols(); ++x) m_gains(r, x) = s.gains[static_cast<std::size_t>(x)];
    m_h.row(r).setZero();
    m_c.row(r).setZero();
    m_mask[row] = s.mask;
    m_steps[row] = 0;
    m_return[row] = 0;
}

inline DreamInput Dream::input_of(std::size_t row) const {
    const auto r = static_cast<std::int64_t>(row);
    DreamInput in;
    in.z.assign(m_z.row(r).data(), m_z.row(r).data() + m_z.cols());
    in.h.assign(m_h.row(r).data(), m_h.row(r).data() + m_h.cols());
    in.gains.assign(m_gains.row(r).data(), m_gains.row(r).data() + m_gains.cols());
    in.mask = m_mask[row];
    return in;
}

inline double Dream::value_of(const DreamInput& in) {
    nn::HostMatrix zh(1, static_cast<std::int64_t>(in.z.size() + in.h.size())), v;
    for (std::size_t i = 0; i < in.z.size(); ++i) zh(0, static_cast<std::int64_t>(i)) = in.z[i];
    for (std::size_t i = 0; i < in.h.size(); ++i) zh(0, static_cast<std::int64_t>(in.z.size() + i)) = in.h[i];
    m_controller.values(zh, v);
    return v(0, 0);
}

inline std::vector<BasicRolloutSegment<DreamInput>> Dream::collect(std::span<const DreamStart> starts, std::size_t steps_per_row, Rng& rng,
                                                                   DreamStats& stats) {
    RLFLOW_EXPECTS(!starts.empty() && steps_per_row > 0, precondition_error, "Dream::collect needs start states and steps");
    const auto n = static_cast<std::int64_t>(m_options.batch);
    const std::uint32_t noop = m_model.num_xfers();
    m_z.resize(n, m_model.latent());
    m_h.resize(n, m_model.hidden());
    m_c.resize(n, m_model.hidden());
    m_gains.resize(n, noop);
    m_mask.assign(m_options.batch, {});
    m_steps.assign(m_options.batch, 0);
    m_return.assign(m_options.batch, 0);
    for (std::size_t r = 0; r < m_options.batch; ++r) restart(r, starts, rng);
    std::vector<BasicRolloutSegment<DreamInput>> segments(m_options.batch);
    nn::HostMatrix zh, logits, values, embedded, guessed, summary;
    FrozenWorldModel::Prediction p;
    std::vector<std::uint32_t> xfers(m_options.batch);
    double returns = 0, lengths = 0;
    for (std::size_t t = 0; t < steps_per_row; ++t) {
        zh.resize(n, m_z.cols() + m_h.cols());
        zh << m_z, m_h;
        m_controller.logits(zh, m_gains, logits);
        m_controller.values(zh, values);
        for (std::size_t r = 0; r < m_options.batch; ++r) {
            const auto row = static_cast<std::int64_t>(r);
            const HostChoice c = choose_masked(std::span<const float>(logits.row(row).data(), static_cast<std::size_t>(logits.cols())),
                                               m_mask[r], rng, false);
            xfers[r] = c.action;
            BasicRolloutSegment<DreamInput>& s = segments[r];
            if (!s.terminated.empty() && !s.terminated.back() && !s.truncated.back()) s.next_values.back() = values(row, 0);
            s.observations.push_back(input_of(r));
            s.actions.push_back({c.action, 0});
            s.log_probs.push_back(c.log_prob);
            s.values.push_back(values(row, 0));
        }
        m_model.embed(xfers, embedded);
        m_model.guess_summary(m_z, m_h, embedded, guessed);
        summary.resize(n, guessed.cols() + 1);
        summary.leftCols(guessed.cols()) = guessed;
        for (std::size_t r = 0; r < m_options.batch; ++r)
            summary(static_cast<std::int64_t>(r), guessed.cols()) = xfers[r] < noop ? m_gains(static_cast<std::int64_t>(r), xfers[r]) : 0.0f;
        m_model.advance(m_z, embedded, summary, m_h, m_c);
        m_model.predict(m_h, m_options.temperature, rng, p);
        for (std::size_t r = 0; r < m_options.batch; ++r) {
            const auto row = static_cast<std::int64_t>(r);
            BasicRolloutSegment<DreamInput>& s = segments[r];
            const bool noop_chosen = xfers[r] == noop;
            const double reward = noop_chosen ? 0.0 : symexp(p.reward(row, 0));
            const double p_done = 1 / (1 + std::exp(-double(p.done(row, 0))));
            const bool terminated = noop_chosen || rng.uniform() < p_done;
            ++m_steps[r];
            const bool truncated = !terminated && m_steps[r] >= m_options.step_limit;
            m_z.row(row) = p.z.row(row);
            for (std::uint32_t x = 0; x < noop; ++x) {
                const bool allowed = p.mask_logits(row, x) > 0;  // σ > 1/2
                m_mask[r][x] = allowed ? 1 : 0;
                m_gains(row, x) = allowed ? p.gains(row, x) : 0.0f;
            }
            m_mask[r][noop] = 1;
            s.rewards.push_back(reward);
            s.next_values.push_back(0);
            s.terminated.push_back(terminated ? 1 : 0);
            s.truncated.push_back(truncated ? 1 : 0);
            m_return[r] += reward;
            if (!terminated && !truncated) continue;
            if (truncated) s.next_values.back() = value_of(input_of(r));
            returns += m_return[r];
            lengths += static_cast<double>(m_steps[r]);
            ++stats.episodes_ended;
            restart(r, starts, rng);
        }
        stats.steps += m_options.batch;
    }
    for (std::size_t r = 0; r < m_options.batch; ++r) {
        BasicRolloutSegment<DreamInput>& s = segments[r];
        if (!s.terminated.back() && !s.truncated.back()) s.next_values.back() = value_of(input_of(r));
    }
    if (stats.episodes_ended > 0) {
        stats.mean_return = returns / static_cast<double>(stats.episodes_ended);
        stats.mean_length = lengths / static_cast<double>(stats.episodes_ended);
    }
    return segments;
}

}  // namespace rlflow::rl
