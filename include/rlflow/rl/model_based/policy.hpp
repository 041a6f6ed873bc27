#pragma once
/// \file
/// The model-based agent acting in the real environment: V encodes the observation into
/// z, C chooses the xfer from [z, h], the real gains and the real mask, the xfer is
/// applied at its best one-step-gain location (the rule M learned and the dream assumes),
/// and M's LSTM advances h on [z, embedding, the real location's summary]. The same C
/// acts in the dream (dream.hpp); only where its inputs come from differs.
///
/// It acts as ActorCritic does (act(), a batch of one), so the `mb` search rolls it out
/// with rl::agent_search like the model-free agent. It is recurrent: begin_episode()
/// clears h before a rollout.

#include <rlflow/core/error.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn/inference.hpp>
#include <rlflow/rl/env/random_policy.hpp>
#include <rlflow/rl/model_based/controller.hpp>
#include <rlflow/rl/model_based/dream.hpp>
#include <rlflow/rl/model_based/world_model.hpp>
#include <rlflow/rl/model_free/policy.hpp>

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace rlflow::rl {

template <nn::TensorBackend B>
class MbPolicy {
public:
    /// An agent over `model` and `controller` (which must outlive it) for observations of
    /// at most `max_locations` locations per xfer.
    MbPolicy(WorldModel<B>& model, Controller<B>& controller, std::uint32_t max_locations)
        : m_model(&model), m_controller(&controller), m_max_locations(max_locations) {
        refresh();
        begin_episode();
    }

    /// Follows new weights of the world model and the controller.
    void refresh() {
        m_frozen_model.refresh(*m_model);
        m_frozen_controller.refresh(*m_controller);
    }
    /// h = c = 0: a new episode.
    void begin_episode() {
        m_h = nn::HostMatrix::Zero(1, m_frozen_model.hidden());
        m_c = nn::HostMatrix::Zero(1, m_frozen_model.hidden());
    }
    /// With this probability (when not greedy) the xfer is drawn uniformly from the valid
    /// rewrites instead (exploration while collecting real experience).
    void set_exploration(double epsilon) { m_exploration = epsilon; }

    [[nodiscard]] std::uint32_t num_xfers() const noexcept { return m_model->num_xfers(); }
    [[nodiscard]] std::uint32_t max_locations() const noexcept { return m_max_locations; }

    /// The xfer probabilities and the value estimate of `o` (rl/plan.hpp) under the memory
    /// h as it is; h does not advance. A planner calls begin_episode() first, so a tree
    /// node is judged by what it shows, not by the path that reached it.
    [[nodiscard]] Guidance guide(const Observation& o) {
        nn::Tape<B> tape;
        nn::NoGrad<B> no_grad(tape);
        const Observation* one[] = {&o};
        nn::HostMatrix logits, value;
        (void)controller_outputs(tape, one, logits, value);
        return {masked_probabilities(std::span<const float>(logits.data(), static_cast<std::size_t>(logits.cols())), o.xfer_mask),
                double(value(0, 0))};
    }

    /// The action for one observation; advances h.
    [[nodiscard]] Decision act(std::span<const Observation* const> observations, Rng& rng, bool greedy = false) {
        RLFLOW_EXPECTS(observations.size() == 1, precondition_error, "MbPolicy acts on one observation at a time");
        const Observation& o = *observations[0];
        RLFLOW_EXPECTS(o.num_xfers == num_xfers() && o.max_locations == m_max_locations, precondition_error,
                       "MbPolicy: an observation of another action space");
        nn::Tape<B> tape;
        nn::NoGrad<B> no_grad(tape);
        typename WorldModel<B>::IndexStore store;
        nn::HostMatrix logits, value;
        const auto [encoding, zh] = controller_outputs(tape, observations, logits, value);
        HostChoice c = choose_masked(std::span<const float>(logits.data(), static_cast<std::size_t>(logits.cols())), o.xfer_mask, rng, greedy);
        if (!greedy && m_exploration > 0 && rng.uniform() < m_exploration) c.action = random_xfer(o, rng);
        const Action a{c.action, c.action < num_xfers() ? best_location(o, c.action) : 0};
        advance(tape, encoding, observations, zh.leftCols(m_frozen_model.latent()), a, store);
        return {{a}, {c.log_prob}, {double(value(0, 0))}};
    }

private:
    /// Encodes the one observation of `observations` into z and fills C's `logits` and
    /// `value` from [z, h] and its gains; returns the encoding and [z, h].
    std::pair<typename WorldModel<B>::Encoding, nn::HostMatrix> controller_outputs(nn::Tape<B>& tape,
                                                                                   std::span<const Observation* const> observations,
                                                                                   nn::HostMatrix& logits, nn::HostMatrix& value) {
        auto encoding = m_model->encode(tape, observations);
        const std::vector<typename B::Scalar> z = encoding.z.value().to_host();
        const std::int64_t latent = m_frozen_model.latent();
        nn::HostMatrix zh(1, latent + m_h.cols()), gains(1, num_xfers());
        for (std::int64_t d = 0; d < latent; ++d) zh(0, d) = static_cast<float>(z[static_cast<std::size_t>(d)]);
        zh.rightCols(m_h.cols()) = m_h;
        const std::vector<float> g = xfer_best_gains(*observations[0]);
        for (std::uint32_t x = 0; x < num_xfers(); ++x) gains(0, x) = g[x];
        m_frozen_controller.logits(zh, gains, logits);
        m_frozen_controller.values(zh, value);
        return {std::move(encoding), std::move(zh)};
    }

    void advance(nn::Tape<B>& tape, const typename WorldModel<B>::Encoding& encoding, std::span<const Observation* const> observations,
                 const nn::HostMatrix& z, Action a, typename WorldModel<B>::IndexStore& store) {
        const std::int32_t row = 0;
        const nn::Var<B> s = m_model->location_summary(tape, encoding, observations, std::span<const std::int32_t>(&row, 1),
                                                        std::span<const Action>(&a, 1), store);
        const std::vector<typename B::Scalar> sv = s.value().to_host();
        nn::HostMatrix summary(1, static_cast<std::int64_t>(sv.size())), embedded;
        for (std::size_t i = 0; i < sv.size(); ++i) summary(0, static_cast<std::int64_t>(i)) = static_cast<float>(sv[i]);
        const std::uint32_t xfer = a.xfer;
        m_frozen_model.embed(std::span<const std::uint32_t>(&xfer, 1), embedded);
        m_frozen_model.advance(z, embedded, summary, m_h, m_c);
    }

    WorldModel<B>* m_model;
    Controller<B>* m_controller;
    std::uint32_t m_max_locations;
    FrozenWorldModel m_frozen_model;
    FrozenController m_frozen_controller;
    nn::HostMatrix m_h, m_c;
    double m_exploration = 0;
};

}  // namespace rlflow::rl
