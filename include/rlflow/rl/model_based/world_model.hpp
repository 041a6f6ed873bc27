#pragma once
/// \file
/// The world model of the model-based agent (RLFlow thesis ch. 4, after "World Models",
/// Ha & Schmidhuber 2018): V encodes a graph into z, and M, an MDN-RNN, predicts from
/// [z_t, action] how the graph changes. Where the thesis's model fell short, this one:
///
/// - **V learns.** z = tanh(Linear(global latent of a graph network)) is trained through
///   M's grounded heads: the reward, done, the next xfer mask and the next per-xfer
///   one-step gains (the cost change each rewrite would make). M's mixture predicts the
///   next z of a *target* encoder, a slowly updated copy of V that receives no gradient
///   (θ' ← (1 - α) θ' + α θ after every step, as BYOL and DreamerV3's target networks), so
///   that V cannot make z easy to predict by making it constant. The heads can predict
///   much from the action and its location summary alone, so that pressure is weak
///   against z's pull towards a constant, which makes the next z trivial to predict; a
///   variance floor (VICReg, Bardes et al. 2022) keeps each dimension's spread over the
///   batch's states at least `spread_floor`.
/// - **Actions are embedded**, not fed as integers: a learned xfer embedding plus a
///   summary of the chosen location (the mean latent of the nodes it matched and its
///   one-step gain: `summary` projected dims and the gain).
/// - **Locations.** The dream has no nodes. Both agents' location rule is the same: an
///   xfer is applied at its location of largest one-step gain (rl/env/observation.hpp's
///   best_location), the location greedy search takes. The controller chooses *which*
///   rewrite, the sequencing that needs lookahead and that a model can predict; M learns
///   the transitions of that rule. In the real environment M reads the real location
///   summary; in the dream, where no location exists, the summary's gain is the xfer's
///   gain as M predicted it (at the best location the two are the same), and its
///   projection of the nodes is guessed by a head from [z, h, xfer embedding], trained to
///   regress the real one.
/// - **Done** is what ends a real episode: NO-OP, or a state where nothing but NO-OP applies.
/// - **The reward is the cost change**, as the environment gives it, on the symlog scale
///   (DreamerV3) so that rare large gains do not swamp the small ones: regressed by
///   squared error, or (WorldModelOptions::reward_bins > 0) predicted as logits over
///   symlog bins, trained by cross-entropy against the two-hot target and read as the
///   bins' expectation (rl/model_based/symlog.hpp). Both report the point prediction's squared error
///   on the symlog scale (WorldModelLosses::reward_error), which compares the two.
///
/// Real experience is stored as episodes (RealEpisode); M trains on windows of them by
/// backpropagation through time, the whole batch of windows encoded in one graph batch.

#include <rlflow/core/error.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn/graph_net.hpp>
#include <rlflow/nn/layers.hpp>
#include <rlflow/nn/lstm.hpp>
#include <rlflow/nn/mdn.hpp>
#include <rlflow/nn/ops.hpp>
#include <rlflow/nn/tape.hpp>
#include <rlflow/rl/env/env.hpp>
#include <rlflow/rl/env/observation.hpp>
#include <rlflow/rl/model_based/symlog.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rlflow::rl {

/// Sizes and rates of the world model.
struct WorldModelOptions {
    /// z: the latent M predicts (the thesis: 32).
    std::int64_t latent = 32;
    /// Width of V's graph network, and its message-passing steps.
    std::int64_t encoder_latent = 32;
    int message_passing_steps = 2;
    /// M's LSTM (the thesis: 256) and its Gaussians per dimension (the thesis: 8).
    std::int64_t lstm_hidden = nn::default_lstm_hidden;
    std::int64_t components = nn::default_mdn_components;
    /// The xfer embedding and the location summary widths.
    std::int64_t action_embedding = 32;
    std::int64_t summary = 16;
    /// Hidden width of M's heads.
    std::int64_t head_hidden = 64;
    /// α of the target encoder's update after every gradient step.
    double target_rate = 0.02;
    /// The least standard deviation of each z dimension over a batch's states (the
    /// variance floor's hinge), of z in (-1, 1).
    double spread_floor = 0.2;
    /// The hinge's weight in M's loss.
    double spread_weight = 10;
    /// Seed of the initial weights.
    std::uint64_t seed = 0;
    /// The reward head: 0, symlog regression; at least 2, two-hot symlog bins over
    /// [-reward_bound, reward_bound] (the file comment).
    std::int64_t reward_bins = 0;
    friend bool operator==(const WorldModelOptions&, const WorldModelOptions&) = default;
};

/// The symlog range of the reward bins: |reward| up to e^5 - 1 ≈ 147, 147% of the start
/// cost at the environment's default reward scale (100 per 100%).
inline constexpr double reward_bound = 5.0;

/// One real episode as M learns from it: states[t] is where actions[t] was taken, and
/// states[t + 1] where it led (T + 1 states for T steps).
struct RealEpisode {
    std::vector<Observation> states;
    std::vector<Action> actions;
    std::vector<double> rewards;
    /// 1 where the step ended the episode (NO-OP).
    std::vector<std::uint8_t> dones;
    [[nodiscard]] std::size_t size() const noexcept { return actions.size(); }
};

/// A window of `length` steps of an episode, from step `offset`.
struct EpisodeWindow {
    const RealEpisode* episode = nullptr;
    std::size_t offset = 0;
    std::size_t length = 0;
};

/// M's losses over a batch of windows, each a mean per predicted step.
struct WorldModelLosses {
    /// The mixture's negative log-likelihood of the next z, per dimension.
    double nll_per_dim = 0;
    /// The reward head's loss (squared error of the symlog reward, or the bins'
    /// cross-entropy), binary cross-entropies of done and of the next mask (mean over
    /// xfers), squared error of the next scaled gains (mean over xfers) and of the
    /// predicted location summary (mean over its dims).
    double reward = 0;
    double done = 0;
    double mask = 0;
    double gains = 0;
    double summary = 0;
    /// The variance floor's weighted hinge, mean over z's dimensions (0 when every dimension spreads).
    double spread = 0;
    double total = 0;
    /// Squared error of the reward head's point prediction on the symlog scale, whichever
    /// the head (equal to `reward` for regression).
    double reward_error = 0;
    std::size_t steps = 0;
};

/// V, M and their heads.
template <nn::TensorBackend B>
class WorldModel {
public:
    using Scalar = typename B::Scalar;

    /// What V makes of a batch of observations, with what its tape refers to.
    struct Encoding {
        nn::Var<B> z;
        nn::GraphVars<B> latents;
        std::unique_ptr<nn::GraphBatch<B>> batch;
    };
    /// Index lists a pass's tape refers to: keep them until the backward pass is done.
    using IndexStore = std::deque<nn::Indices<B>>;

    WorldModel(std::uint32_t num_xfers, WorldModelOptions options = {}) : m_num_xfers(num_xfers), m_options(options) {
        RLFLOW_EXPECTS(num_xfers > 0 && options.latent > 0 && options.summary > 0, precondition_error,
                       "WorldModel needs xfers, a latent and a summary");
        Rng rng(options.seed);
        const WorldModelOptions& o = options;
        const nn::GraphNetworkOptions gn{.input = observation_feature_sizes, .latent = o.encoder_latent, .steps = o.message_passing_steps};
        m_encoder = nn::GraphNetwork<B>("wm.encoder", gn, rng);
        m_z = nn::Linear<B>("wm.z", o.encoder_latent, o.latent, rng, 1.0);
        m_embedding = nn::Parameter<B>("wm.xfer_embedding", nn::orthogonal<B>(Shape{num_xfers + std::int64_t{1}, o.action_embedding}, 1.0, rng));
        m_summary = nn::Linear<B>("wm.summary", o.encoder_latent, o.summary, rng, 1.0);
        m_summary_guess = nn::Mlp<B>("wm.summary_guess", {.sizes = {o.latent + o.lstm_hidden + o.action_embedding, o.head_hidden, o.summary}, .output_gain = 1.0}, rng);
        m_rnn = nn::LstmCell<B>("wm.rnn", o.latent + o.action_embedding + o.summary + 1, rng, o.lstm_hidden);
        m_mdn = nn::MdnHead<B>("wm.mdn", o.lstm_hidden, o.latent, rng, o.components);
        const auto head = [&](const std::string& name, std::int64_t out) {
            return nn::Mlp<B>(name, {.sizes = {o.lstm_hidden, o.head_hidden, out}, .output_gain = 1.0}, rng);
        };
        RLFLOW_EXPECTS(o.reward_bins == 0 || o.reward_bins >= 2, precondition_error,
                       "WorldModelOptions::reward_bins must be 0 (regression) or at least 2, not " + std::to_string(o.reward_bins));
        m_reward = head("wm.reward", o.reward_bins > 0 ? o.reward_bins : 1);
        m_done = head("wm.done", 1);
        m_mask = head("wm.mask", num_xfers);
        m_gains = head("wm.gains", num_xfers);
        // The target encoder starts as V's copy; its own draws are overwritten.
        Rng spare(options.seed + 1);
        m_target_encoder = nn::GraphNetwork<B>("wm.target.encoder", gn, spare);
        m_target_z = nn::Linear<B>("wm.target.z", o.encoder_latent, o.latent, spare, 1.0);
        update_target(1.0);
    }

    [[nodiscard]] std::uint32_t num_xfers() const noexcept { return m_num_xfers; }
    [[nodiscard]] const WorldModelOptions& options() const noexcept { return m_options; }

    /// Every trained parameter: V's, then M's.
    [[nodiscard]] std::vector<nn::Parameter<B>*> parameters() {
        std::vector<nn::Parameter<B>*> out = encoder_parameters();
        const auto add_all = [&](std::vector<nn::Parameter<B>*> ps) { out.insert(out.end(), ps.begin(), ps.end()); };
        add_all(m_summary.parameters());
        out.push_back(&m_embedding);
        add_all(m_summary_guess.parameters());
        add_all(m_rnn.parameters());
        add_all(m_mdn.parameters());
        for (nn::Mlp<B>* h : {&m_reward, &m_done, &m_mask, &m_gains}) add_all(h->parameters());
        return out;
    }
    /// V's parameters (the graph network and the map to z).
    [[nodiscard]] std::vector<nn::Parameter<B>*> encoder_parameters() {
        std::vector<nn::Parameter<B>*> out = m_encoder.parameters();
        for (nn::Parameter<B>* p : m_z.parameters()) out.push_back(p);
        return out;
    }
    /// The target encoder's parameters, in encoder_parameters' order (saved with the agent).
    [[nodiscard]] std::vector<nn::Parameter<B>*> target_parameters() {
        std::vector<nn::Parameter<B>*> out = m_target_encoder.parameters();
        for (nn::Parameter<B>* p : m_target_z.parameters()) out.push_back(p);
        return out;
    }

    /// θ' ← (1 - rate) θ' + rate θ for the target encoder (rate 1: a copy of V).
    void update_target(double rate) {
        const std::vector<nn::Parameter<B>*> online = encoder_parameters(), target = target_parameters();
        for (std::size_t i = 0; i < online.size(); ++i) {
            const std::vector<Scalar> a = online[i]->value.to_host();
            std::vector<Scalar> b = target[i]->value.to_host();
            for (std::size_t k = 0; k < b.size(); ++k) b[k] = static_cast<Scalar>((1 - rate) * b[k] + rate * a[k]);
            target[i]->value = nn::Tensor<B>::from_host(target[i]->value.shape(), b);
        }
    }

    /// V on a batch of observations: z (batch, latent) and the graph network's latents.
    [[nodiscard]] Encoding encode(nn::Tape<B>& tape, std::span<const Observation* const> observations) {
        return encode_with(tape, observations, m_encoder, m_z);
    }
    /// The target encoder's z of `observations`, (batch, latent), without gradient.
    [[nodiscard]] nn::Tensor<B> target_z(std::span<const Observation* const> observations) {
        nn::Tape<B> tape;
        nn::NoGrad<B> no_grad(tape);
        return encode_with(tape, observations, m_target_encoder, m_target_z).z.value();
    }

    /// The location summaries (rows, summary + 1) of `actions` taken at observations
    /// `rows` of `encoding` (whose observations are `observations`): a projection of the
    /// mean node latent of the location, then its scaled one-step gain. NO-OP rows read a
    /// zero input and a gain of 0. At an xfer's best location the gain is the xfer's entry
    /// of xfer_best_gains, which the dream knows (M predicts the gains), so only the
    /// projection is guessed there.
    [[nodiscard]] nn::Var<B> location_summary(nn::Tape<B>& tape, const Encoding& encoding, std::span<const Observation* const> observations,
                                              std::span<const std::int32_t> rows, std::span<const Action> actions, IndexStore& store) {
        std::vector<std::int32_t> member_node, member_location, padded;
        std::vector<Scalar> gains;
        const std::span<const std::int64_t> offsets = encoding.batch->node_offsets();
        std::int32_t k = 0;
        for (std::size_t j = 0; j < rows.size(); ++j) {
            const Observation& o = *observations[static_cast<std::size_t>(rows[j])];
            const Action a = actions[j];
            if (a.xfer >= m_num_xfers) {
                padded.push_back(-1);
                gains.push_back(Scalar(0));
                continue;
            }
            for (const std::int32_t n : o.location(a.xfer, a.location)) {
                member_node.push_back(static_cast<std::int32_t>(offsets[static_cast<std::size_t>(rows[j])]) + n);
                member_location.push_back(k);
            }
            gains.push_back(static_cast<Scalar>(scaled_gain(o.gain(a.xfer, a.location))));
            padded.push_back(k++);
        }
        for (std::int32_t& p : padded)
            if (p < 0) p = k;  // the zero row
        nn::Var<B> features = tape.constant(nn::Tensor<B>(Shape{1, m_options.encoder_latent}));
        if (k > 0) {
            const nn::Indices<B>& nodes = store.emplace_back(std::move(member_node), encoding.batch->num_nodes());
            const nn::Indices<B>& members = store.emplace_back(std::move(member_location), k);
            features = nn::concat<B>({segment_mean(gather(encoding.latents.nodes, nodes), members), features}, 0);
        }
        const nn::Indices<B>& pad = store.emplace_back(std::move(padded), k + 1);
        const auto n = static_cast<std::int64_t>(rows.size());
        const nn::Var<B> gain = tape.constant(nn::Tensor<B>::from_host(Shape{n, 1}, std::span<const Scalar>(gains)));
        return nn::concat<B>({tanh(m_summary(tape, gather(features, pad))), gain}, 1);
    }

    /// The dream's guess of a location summary's projection (location_summary's first
    /// `summary` columns) from [z, h, xfer embedding], (rows, summary).
    [[nodiscard]] nn::Var<B> guess_summary(nn::Tape<B>& tape, nn::Var<B> z, nn::Var<B> h, nn::Var<B> embedded) {
        return tanh(m_summary_guess(tape, nn::concat<B>({z, h, embedded}, 1)));
    }
    /// The xfer embeddings of `xfers` (NO-OP = N included), (rows, action_embedding).
    [[nodiscard]] nn::Var<B> embed(nn::Tape<B>& tape, std::span<const std::int32_t> xfers, IndexStore& store) {
        const nn::Indices<B>& rows = store.emplace_back(std::vector<std::int32_t>(xfers.begin(), xfers.end()), m_num_xfers + std::int64_t{1});
        return gather(tape.parameter(m_embedding), rows);
    }

    /// Adds to the parameters' gradients those of M's loss over `windows` (each at least
    /// one step) and returns the losses: V and M learn together, the targets of z from
    /// the target encoder.
    WorldModelLosses add_gradient(std::vector<EpisodeWindow> windows);

    /// The modules the dream freezes.
    [[nodiscard]] const nn::LstmCell<B>& rnn() const noexcept { return m_rnn; }
    [[nodiscard]] const nn::MdnHead<B>& mdn() const noexcept { return m_mdn; }
    [[nodiscard]] const nn::Mlp<B>& summary_guess() const noexcept { return m_summary_guess; }
    [[nodiscard]] const nn::Mlp<B>& reward_head() const noexcept { return m_reward; }
    [[nodiscard]] const nn::Mlp<B>& done_head() const noexcept { return m_done; }
    [[nodiscard]] const nn::Mlp<B>& mask_head() const noexcept { return m_mask; }
    [[nodiscard]] const nn::Mlp<B>& gains_head() const noexcept { return m_gains; }
    [[nodiscard]] const nn::Parameter<B>& embedding() const noexcept { return m_embedding; }

    /// One M step on a tape: from inputs z (rows, latent), the embedded action and its
    /// summary, and the state; the next state.
    [[nodiscard]] nn::LstmState<B> advance(nn::Tape<B>& tape, nn::Var<B> z, nn::Var<B> embedded, nn::Var<B> summary,
                                           const nn::LstmState<B>& state) {
        return m_rnn(tape, nn::concat<B>({z, embedded, summary}, 1), state);
    }

private:
    [[nodiscard]] static Encoding encode_with(nn::Tape<B>& tape, std::span<const Observation* const> observations,
                                              nn::GraphNetwork<B>& encoder, nn::Linear<B>& to_z) {
        RLFLOW_EXPECTS(!observations.empty(), precondition_error, "WorldModel: encode no observations");
        std::vector<const nn::HostGraph*> graphs;
        graphs.reserve(observations.size());
        for (const Observation* o : observations) graphs.push_back(&o->graph);
        Encoding e;
        e.batch = std::make_unique<nn::GraphBatch<B>>(std::span<const nn::HostGraph* const>(graphs));
        e.latents = encoder(tape, *e.batch);
        e.z = tanh(to_z(tape, e.latents.globals));
        return e;
    }

    /// spread_weight x mean_d max(0, spread_floor - sd_d(z)) over the rows of z (batch, latent).
    [[nodiscard]] nn::Var<B> spread_hinge(nn::Tape<B>& tape, nn::Var<B> z) const {
        constexpr double variance_epsilon = 1e-4;  // keeps the square root's gradient finite
        const nn::Var<B> centred = sub(z, mean(z, 0));
        const nn::Var<B> variance = mean(square(centred), 0);
        const nn::Var<B> epsilon = tape.constant(nn::Tensor<B>::scalar(static_cast<Scalar>(variance_epsilon)));
        const nn::Var<B> floor = tape.constant(nn::Tensor<B>::scalar(static_cast<Scalar>(m_options.spread_floor)));
        return scale(mean(relu(sub(floor, sqrt(add(variance, epsilon))))), static_cast<Scalar>(m_options.spread_weight));
    }

    /// Per-step targets of a prefix of windows: what the heads are fitted to.
    struct StepTargets {
        std::vector<Scalar> reward, done, mask, gains;
    };
    [[nodiscard]] StepTargets targets_at(std::span<const EpisodeWindow> windows, std::size_t t) const;
    [[nodiscard]] nn::Var<B> reward_loss(nn::Tape<B>& tape, nn::Var<B> h, const std::vector<Scalar>& targets, double& error);

    std::uint32_t m_num_xfers;
    WorldModelOptions m_options;
    nn::GraphNetwork<B> m_encoder;
    nn::Linear<B> m_z;
    nn::Parameter<B> m_embedding;
    nn::Linear<B> m_summary;
    nn::Mlp<B> m_summary_guess;
    nn::LstmCell<B> m_rnn;
    nn::MdnHead<B> m_mdn;
    nn::Mlp<B> m_reward;
    nn::Mlp<B> m_done;
    nn::Mlp<B> m_mask;
    nn::Mlp<B> m_gains;
    nn::GraphNetwork<B> m_target_encoder;
    nn::Linear<B> m_target_z;
};

/// Σ over elements of softplus(x) - y x: the binary cross-entropy of logits x against
/// targets y in [0, 1].
template <nn::TensorBackend B>
[[nodiscard]] nn::Var<B> binary_cross_entropy_sum(nn::Var<B> logits, nn::Var<B> targets) {
    return sum(sub(softplus(logits), mul(targets, logits)));
}

template <nn::TensorBackend B>
auto WorldModel<B>::targets_at(std::span<const EpisodeWindow> windows, std::size_t t) const -> StepTargets {
    StepTargets out;
    for (const EpisodeWindow& w : windows) {
        const std::size_t step = w.offset + t;
        const Observation& next = w.episode->states[step + 1];
        out.reward.push_back(static_cast<Scalar>(symlog(w.episode->rewards[step])));
        // Done: the episode ended (NO-OP), or the step left nothing but NO-OP to do. Episodes
        // of this environment end no other way, so a dream that samples done elsewhere ends
        // its episodes where no real one would.
        const bool stuck = std::none_of(next.xfer_mask.begin(), next.xfer_mask.end() - 1, [](std::uint8_t m) { return m != 0; });
        out.done.push_back(static_cast<Scalar>(w.episode->dones[step] != 0 || stuck ? 1 : 0));
        for (std::uint32_t x = 0; x < m_num_xfers; ++x) out.mask.push_back(static_cast<Scalar>(next.xfer_mask[x]));
        const std::vector<float> g = xfer_best_gains(next);
        out.gains.insert(out.gains.end(), g.begin(), g.end());
    }
    return out;
}

/// The reward head's loss summed over a step's rows (`targets`: symlog rewards), adding
/// the squared symlog error of its point predictions to `error`.
template <nn::TensorBackend B>
nn::Var<B> WorldModel<B>::reward_loss(nn::Tape<B>& tape, nn::Var<B> h, const std::vector<Scalar>& targets, double& error) {
    const nn::Var<B> out = m_reward(tape, h);
    const auto rows = static_cast<std::int64_t>(targets.size());
    if (m_options.reward_bins == 0) {
        const nn::Var<B> loss = sum(square(sub(out, tape.constant(nn::Tensor<B>::from_host(Shape{rows, 1}, targets)))));
        error += static_cast<double>(loss.value().item());
        return loss;
    }
    const std::int64_t k = m_options.reward_bins;
    const SymlogBins bins(k, reward_bound);
    std::vector<float> two_hot;
    for (const Scalar y : targets) bins.append_two_hot(static_cast<double>(y), two_hot);
    const std::vector<Scalar> logits = out.value().to_host();
    std::vector<float> row(static_cast<std::size_t>(k));
    for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t i = 0; i < k; ++i) row[static_cast<std::size_t>(i)] = static_cast<float>(logits[static_cast<std::size_t>(r * k + i)]);
        const double miss = bins.expectation(row) - static_cast<double>(targets[static_cast<std::size_t>(r)]);
        error += miss * miss;
    }
    const std::vector<Scalar> weights(two_hot.begin(), two_hot.end());
    const nn::Var<B> target = tape.constant(nn::Tensor<B>::from_host(Shape{rows, k}, weights));
    return scale(sum(mul(target, log_softmax(out))), Scalar(-1));
}

template <nn::TensorBackend B>
WorldModelLosses WorldModel<B>::add_gradient(std::vector<EpisodeWindow> windows) {
    RLFLOW_EXPECTS(!windows.empty(), precondition_error, "WorldModel::add_gradient needs windows");
    // Longest first: the windows still running at step t are a prefix.
    std::stable_sort(windows.begin(), windows.end(), [](const EpisodeWindow& a, const EpisodeWindow& b) { return a.length > b.length; });
    std::vector<const Observation*> observations;
    std::vector<std::size_t> first;
    std::size_t total_steps = 0;
    for (const EpisodeWindow& w : windows) {
        RLFLOW_EXPECTS(w.length > 0 && w.offset + w.length <= w.episode->size(), precondition_error, "WorldModel: a window outside its episode");
        first.push_back(observations.size());
        for (std::size_t s = 0; s <= w.length; ++s) observations.push_back(&w.episode->states[w.offset + s]);
        total_steps += w.length;
    }
    nn::Tape<B> tape;
    IndexStore store;
    const Encoding encoding = encode(tape, observations);
    const nn::Tensor<B> target = target_z(observations);
    const std::vector<Scalar> target_host = target.to_host();
    const auto n_obs = static_cast<std::int64_t>(observations.size());
    nn::LstmState<B> state = m_rnn.zero_state(tape, static_cast<std::int64_t>(windows.size()));
    const auto inv = [&](double d) { return static_cast<Scalar>(1.0 / d); };
    const double steps = static_cast<double>(total_steps), n = m_num_xfers, latent = static_cast<double>(m_options.latent);
    std::optional<nn::Var<B>> nll, reward, done, mask, gains, summary;
    double reward_error = 0;
    const auto accumulate = [](std::optional<nn::Var<B>>& into, nn::Var<B> term) { into = into ? add(*into, term) : term; };
    for (std::size_t t = 0; t < windows.front().length; ++t) {
        std::size_t active = 0;
        while (active < windows.size() && windows[active].length > t) ++active;
        const auto rows_n = static_cast<std::int64_t>(active);
        std::vector<std::int32_t> rows, next_rows, xfers;
        std::vector<Action> actions;
        std::vector<Scalar> next_z;
        for (std::size_t w = 0; w < active; ++w) {
            rows.push_back(static_cast<std::int32_t>(first[w] + t));
            next_rows.push_back(static_cast<std::int32_t>(first[w] + t + 1));
            const Action a = windows[w].episode->actions[windows[w].offset + t];
            actions.push_back(a);
            xfers.push_back(static_cast<std::int32_t>(a.xfer));
            const auto at = static_cast<std::size_t>(next_rows.back()) * static_cast<std::size_t>(m_options.latent);
            next_z.insert(next_z.end(), target_host.begin() + static_cast<std::ptrdiff_t>(at),
                          target_host.begin() + static_cast<std::ptrdiff_t>(at + static_cast<std::size_t>(m_options.latent)));
        }
        const nn::Var<B> z = gather(encoding.z, store.emplace_back(rows, n_obs));
        const nn::Var<B> embedded = embed(tape, xfers, store);
        const nn::Var<B> s = location_summary(tape, encoding, observations, rows, actions, store);
        const nn::LstmState<B> prefix{slice(state.h, 0, 0, rows_n), slice(state.c, 0, 0, rows_n)};
        const nn::Var<B> guess = guess_summary(tape, z, prefix.h, embedded);
        const nn::Var<B> projection = tape.constant(slice(s, 1, 0, m_options.summary).value());
        accumulate(summary, scale(sum(square(sub(guess, projection))), inv(static_cast<double>(m_options.summary))));
        state = advance(tape, z, embedded, s, prefix);
        const nn::MdnParams<B> mixture = m_mdn(tape, state.h);
        const nn::Tensor<B> z_next = nn::Tensor<B>::from_host(Shape{rows_n, m_options.latent}, next_z);
        accumulate(nll, scale(nn::MdnHead<B>::negative_log_likelihood(tape, mixture, z_next), static_cast<Scalar>(rows_n)));
        const StepTargets y = targets_at(std::span<const EpisodeWindow>(windows).first(active), t);
        const auto constant = [&](const std::vector<Scalar>& v, std::int64_t cols) {
            return tape.constant(nn::Tensor<B>::from_host(Shape{rows_n, cols}, v));
        };
        accumulate(reward, reward_loss(tape, state.h, y.reward, reward_error));
        accumulate(done, binary_cross_entropy_sum(m_done(tape, state.h), constant(y.done, 1)));
        accumulate(mask, scale(binary_cross_entropy_sum(m_mask(tape, state.h), constant(y.mask, m_num_xfers)), inv(n)));
        accumulate(gains, scale(sum(square(sub(m_gains(tape, state.h), constant(y.gains, m_num_xfers)))), inv(n)));
    }
    const nn::Var<B> nll_per_dim = scale(*nll, inv(latent));
    const nn::Var<B> spread = spread_hinge(tape, encoding.z);
    const nn::Var<B> loss = add(scale(add(add(add(nll_per_dim, *reward), add(*done, *mask)), add(*gains, *summary)), inv(steps)), spread);
    tape.backward(loss);
    const auto mean_of = [&](nn::Var<B> v) { return static_cast<double>(v.value().item()) / steps; };
    return {mean_of(nll_per_dim), mean_of(*reward), mean_of(*done),  mean_of(*mask), mean_of(*gains), mean_of(*summary),
            static_cast<double>(spread.value().item()), static_cast<double>(loss.value().item()), reward_error / steps, total_steps};
}

}  // namespace rlflow::rl
