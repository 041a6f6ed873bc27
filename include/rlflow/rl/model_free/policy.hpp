#pragma once
/// \file
/// The actor-critic of the model-free agent (the RLFlow thesis §3.4, with the defects
/// below fixed):
///
/// - encoder: a graph network (nn::GraphNetwork, graph_nets' encode-process) over the
///   observation's features, trained end to end with the heads (the thesis's encoder
///   never received gradients);
/// - xfer head: an MLP of the global latent, a masked categorical over the N + 1 xfers
///   (N is NO-OP);
/// - location head, for the chosen xfer: each valid location is scored by an MLP of the
///   xfer's learned embedding, the mean latent of the nodes that location matched, and
///   the global latent, then a masked categorical over the at most L locations. Scoring
///   locations by their nodes (pointer-style, Vinyals et al. 2015) rather than by a fixed
///   L-wide output layer works on graphs of any size and transfers to unseen graphs;
/// - value head: an MLP of the global latent.
///
/// Both policy heads also see the observation's one-step gains (Observation::
/// location_gain, signed-log scaled): the location head each location's own, the xfer
/// head, through a small MLP added to its logits, each xfer's best. The thesis's agent
/// had to infer from node features alone what a rewrite earns now; with the gain in view
/// it learns early what greedy search knows and spends its training on where rewrites lead.
///
/// The joint log-probability is log p(xfer) + log p(location | xfer), NO-OP having no
/// location; the entropy is the xfer head's plus the location head's for the chosen xfer.
/// The same masks serve acting and learning, since both read them from the observation.
/// Heads are initialised orthogonally with gain 0.01 (policy) and 1 (value), as in the
/// PPO implementation details of Huang et al. 2022.

#include <rlflow/core/error.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn/distributions.hpp>
#include <rlflow/nn/graph_net.hpp>
#include <rlflow/nn/layers.hpp>
#include <rlflow/nn/ops.hpp>
#include <rlflow/nn/tape.hpp>
#include <rlflow/rl/env/env.hpp>
#include <rlflow/rl/env/observation.hpp>

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

/// Sizes of the actor-critic.
struct PolicyOptions {
    /// Width of the graph network's latents.
    std::int64_t latent = 32;
    /// Message-passing steps of the graph network.
    int message_passing_steps = 2;
    /// Hidden width of the heads, and of the xfer embeddings.
    std::int64_t hidden = 64;
    /// Seed of the initial weights.
    std::uint64_t seed = 0;
    /// Hidden width of the MLP that maps an xfer's best one-step gain to a logit term.
    std::int64_t gain_hidden = 16;
    /// Initial logit of NO-OP, against the rewrites' logits near 0 (gain 0.01). Under a
    /// uniform start NO-OP ends an episode after about (valid rules + 1) steps, 5 or so,
    /// and the agent never sees the states that deep rewrite sequences reach. ln(1/100)
    /// makes NO-OP about as likely per step as the default step limit's end; it is a
    /// learned bias like any other, so the agent can still learn to stop.
    double noop_logit = -4.6;
    friend bool operator==(const PolicyOptions&, const PolicyOptions&) = default;
};

/// Sets output `index`'s bias of `mlp` to `value` (the NO-OP prior of an xfer head).
template <nn::TensorBackend B>
void set_output_bias(nn::Mlp<B>& mlp, std::size_t index, double value) {
    nn::Parameter<B>& bias = mlp.output_layer().bias();
    std::vector<typename B::Scalar> b = bias.value.to_host();
    b.at(index) = static_cast<typename B::Scalar>(value);
    bias.value = nn::Tensor<B>::from_host(bias.value.shape(), b);
}

/// A forward pass over a batch of observations, with everything its tape refers to: keep
/// it alive until the backward pass is done.
template <nn::TensorBackend B>
struct PolicyPass {
    /// Joint log-probability of the given actions, (batch).
    nn::Var<B> log_prob;
    /// Entropy of the xfer head plus that of the location head for the given xfer, (batch).
    nn::Var<B> entropy;
    /// The value estimate, (batch).
    nn::Var<B> value;
    std::unique_ptr<nn::GraphBatch<B>> batch;
    std::deque<nn::Indices<B>> indices;
};

/// What the policy chose for a batch of observations.
struct Decision {
    std::vector<Action> actions;
    std::vector<double> log_probs;
    std::vector<double> values;
};

/// What a planner reads of one observation (rl/plan.hpp): the probability of every xfer,
/// N + 1 entries with NO-OP last and 0 where the mask forbids, and the value estimate.
struct Guidance {
    std::vector<double> xfer_probs;
    double value = 0;
};

template <nn::TensorBackend B>
class ActorCritic {
public:
    using Scalar = typename B::Scalar;
    /// What the policy acts on (ppo.hpp's PpoPolicy).
    using Input = Observation;

    /// A policy for `num_xfers` rules (actions 0..N, N being NO-OP) and L = `max_locations`.
    ActorCritic(std::uint32_t num_xfers, std::uint32_t max_locations, PolicyOptions options = {})
        : m_num_xfers(num_xfers), m_max_locations(max_locations), m_options(options) {
        RLFLOW_EXPECTS(num_xfers > 0 && max_locations > 0, precondition_error, "ActorCritic needs xfers and locations");
        Rng rng(options.seed);
        const std::int64_t d = options.latent, h = options.hidden;
        m_encoder = nn::GraphNetwork<B>(
            "policy.encoder", {.input = observation_feature_sizes, .latent = d, .steps = options.message_passing_steps}, rng);
        m_xfer_head = nn::Mlp<B>("policy.xfer", {.sizes = {d, h, num_xfers + std::int64_t{1}}, .output_gain = 0.01}, rng);
        set_output_bias(m_xfer_head, num_xfers, options.noop_logit);
        m_embedding = nn::Parameter<B>("policy.xfer_embedding", nn::orthogonal<B>(Shape{num_xfers, h}, 1.0, rng));
        m_location_head = nn::Mlp<B>("policy.location", {.sizes = {h + 2 * d + 1, h, 1}, .output_gain = 0.01}, rng);
        m_gain_head = nn::Mlp<B>("policy.gain", {.sizes = {1, options.gain_hidden, 1}, .output_gain = 0.01}, rng);
        m_value_head = nn::Mlp<B>("policy.value", {.sizes = {d, h, 1}, .output_gain = 1.0}, rng);
    }

    [[nodiscard]] std::uint32_t num_xfers() const noexcept { return m_num_xfers; }
    [[nodiscard]] std::uint32_t max_locations() const noexcept { return m_max_locations; }
    [[nodiscard]] const PolicyOptions& options() const noexcept { return m_options; }
    /// A policy of the same shape with fresh weights (a gradient shard's replica).
    [[nodiscard]] std::unique_ptr<ActorCritic> replica() const {
        return std::make_unique<ActorCritic>(m_num_xfers, m_max_locations, m_options);
    }

    /// Every parameter (encoder first), named; what Adam and checkpoints hold.
    [[nodiscard]] std::vector<nn::Parameter<B>*> parameters() {
        std::vector<nn::Parameter<B>*> out = encoder_parameters();
        for (nn::Mlp<B>* head : {&m_xfer_head, &m_location_head, &m_value_head, &m_gain_head})
            for (nn::Parameter<B>* p : head->parameters()) out.push_back(p);
        out.push_back(&m_embedding);
        return out;
    }
    [[nodiscard]] std::vector<nn::Parameter<B>*> encoder_parameters() { return m_encoder.parameters(); }

    /// Log-probabilities, entropies and values of `actions` taken at `observations`.
    [[nodiscard]] PolicyPass<B> evaluate(nn::Tape<B>& tape, std::span<const Observation* const> observations,
                                         std::span<const Action> actions) {
        RLFLOW_EXPECTS(observations.size() == actions.size() && !observations.empty(), precondition_error,
                       "ActorCritic::evaluate needs one action per observation");
        PolicyPass<B> pass;
        const Heads heads = encode(tape, observations, pass);
        std::vector<std::int32_t> xfers;
        for (const Action& a : actions) xfers.push_back(static_cast<std::int32_t>(a.xfer));
        pass.log_prob = heads.xfer.log_prob(xfers);
        pass.entropy = heads.xfer.entropy();
        pass.value = heads.value;
        if (auto location = locations(tape, observations, xfers, heads, pass)) {
            std::vector<std::int32_t> chosen;
            for (const std::size_t b : location->rows) chosen.push_back(static_cast<std::int32_t>(actions[b].location));
            pass.log_prob = add(pass.log_prob, spread(location->dist.log_prob(chosen), *location->spread));
            pass.entropy = add(pass.entropy, spread(location->dist.entropy(), *location->spread));
        }
        return pass;
    }

    /// Actions for `observations`: sampled, or the most probable ones when `greedy`.
    [[nodiscard]] Decision act(std::span<const Observation* const> observations, Rng& rng, bool greedy = false) {
        nn::Tape<B> tape;
        nn::NoGrad<B> no_grad(tape);
        PolicyPass<B> pass;
        const Heads heads = encode(tape, observations, pass);
        const std::vector<std::int32_t> xfers = greedy ? heads.xfer.argmax() : heads.xfer.sample(rng);
        const std::vector<Scalar> xfer_log_probs = heads.xfer.log_prob(xfers).value().to_host();
        const std::vector<Scalar> values = heads.value.value().to_host();
        Decision d;
        for (std::size_t b = 0; b < observations.size(); ++b) {
            d.actions.push_back({static_cast<std::uint32_t>(xfers[b]), 0});
            d.log_probs.push_back(static_cast<double>(xfer_log_probs[b]));
            d.values.push_back(static_cast<double>(values[b]));
        }
        if (auto location = locations(tape, observations, xfers, heads, pass)) {
            const std::vector<std::int32_t> chosen = greedy ? location->dist.argmax() : location->dist.sample(rng);
            const std::vector<Scalar> log_probs = location->dist.log_prob(chosen).value().to_host();
            for (std::size_t j = 0; j < location->rows.size(); ++j) {
                d.actions[location->rows[j]].location = static_cast<std::uint32_t>(chosen[j]);
                d.log_probs[location->rows[j]] += static_cast<double>(log_probs[j]);
            }
        }
        return d;
    }

    /// The xfer probabilities and the value estimate of `o`.
    [[nodiscard]] Guidance guide(const Observation& o) {
        nn::Tape<B> tape;
        nn::NoGrad<B> no_grad(tape);
        PolicyPass<B> pass;
        const Observation* one[] = {&o};
        const Heads heads = encode(tape, one, pass);
        const std::vector<Scalar> log_probs = heads.xfer.log_probabilities().value().to_host();
        Guidance g;
        g.xfer_probs.reserve(o.xfer_mask.size());
        for (std::size_t x = 0; x < o.xfer_mask.size(); ++x)
            g.xfer_probs.push_back(o.xfer_mask[x] != 0 ? std::exp(static_cast<double>(log_probs[x])) : 0.0);
        g.value = static_cast<double>(heads.value.value().to_host()[0]);
        return g;
    }

    /// The value estimates of `observations`.
    [[nodiscard]] std::vector<double> values(std::span<const Observation* const> observations) {
        nn::Tape<B> tape;
        nn::NoGrad<B> no_grad(tape);
        PolicyPass<B> pass;
        const std::vector<Scalar> v = encode(tape, observations, pass).value.value().to_host();
        return {v.begin(), v.end()};
    }

private:
    struct Heads {
        nn::GraphVars<B> latents;
        nn::MaskedCategorical<B> xfer;
        nn::Var<B> value;
    };
    struct LocationHead {
        /// The batch rows whose xfer is not NO-OP, in order.
        std::vector<std::size_t> rows;
        nn::MaskedCategorical<B> dist;
        /// Maps those rows back into the batch.
        const nn::Indices<B>* spread;
    };

    [[nodiscard]] Heads encode(nn::Tape<B>& tape, std::span<const Observation* const> observations, PolicyPass<B>& pass) {
        std::vector<const nn::HostGraph*> graphs;
        std::vector<std::uint8_t> mask;
        graphs.reserve(observations.size());
        for (const Observation* o : observations) {
            RLFLOW_EXPECTS(o->num_xfers == m_num_xfers && o->max_locations == m_max_locations, precondition_error,
                           "ActorCritic: an observation of " + std::to_string(o->num_xfers) + " xfers and "
                               + std::to_string(o->max_locations) + " locations, the policy has " + std::to_string(m_num_xfers)
                               + " and " + std::to_string(m_max_locations));
            graphs.push_back(&o->graph);
            mask.insert(mask.end(), o->xfer_mask.begin(), o->xfer_mask.end());
        }
        pass.batch = std::make_unique<nn::GraphBatch<B>>(std::span<const nn::HostGraph* const>(graphs));
        const nn::GraphVars<B> latents = m_encoder(tape, *pass.batch);
        const nn::Var<B> logits = add(m_xfer_head(tape, latents.globals), gain_logits(tape, observations));
        const nn::Var<B> value = reshape(m_value_head(tape, latents.globals), Shape{static_cast<std::int64_t>(observations.size())});
        return {latents, nn::MaskedCategorical<B>(logits, mask), value};
    }

    /// (batch, N + 1): the gain head's term for each xfer's best one-step gain (0 in, for
    /// NO-OP and for xfers without a location).
    [[nodiscard]] nn::Var<B> gain_logits(nn::Tape<B>& tape, std::span<const Observation* const> observations) {
        const std::size_t width = m_num_xfers + std::size_t{1};
        std::vector<Scalar> best(observations.size() * width, Scalar(0));
        for (std::size_t b = 0; b < observations.size(); ++b)
            for (std::uint32_t x = 0; x < m_num_xfers; ++x) {
                const Observation& o = *observations[b];
                const std::uint32_t count = o.location_count(x);
                if (count == 0) continue;
                best[b * width + x] = static_cast<Scalar>(scaled_gain(o.gain(x, best_location(o, x))));
            }
        const auto rows = static_cast<std::int64_t>(best.size());
        const nn::Var<B> column = tape.constant(nn::Tensor<B>::from_host(Shape{rows, 1}, std::span<const Scalar>(best)));
        return reshape(m_gain_head(tape, column),
                       Shape{static_cast<std::int64_t>(observations.size()), static_cast<std::int64_t>(width)});
    }

    /// The location head for the rows whose xfer (in `xfers`) is not NO-OP; nullopt if none.
    [[nodiscard]] std::optional<LocationHead> locations(nn::Tape<B>& tape, std::span<const Observation* const> observations,
                                                        std::span<const std::int32_t> xfers, const Heads& heads,
                                                        PolicyPass<B>& pass) {
        std::vector<std::size_t> rows;
        std::vector<std::int32_t> member_node, member_location, xfer_of, row_of, padded, spread_to;
        std::vector<std::uint8_t> mask;
        std::vector<Scalar> gains;
        const std::span<const std::int64_t> node_offsets = pass.batch->node_offsets();
        std::int32_t k = 0;
        for (std::size_t b = 0; b < observations.size(); ++b) {
            const auto x = static_cast<std::uint32_t>(xfers[b]);
            if (x >= m_num_xfers) continue;
            const Observation& o = *observations[b];
            const std::uint32_t count = o.location_count(x);
            RLFLOW_EXPECTS(count > 0, precondition_error, "ActorCritic: xfer " + std::to_string(x) + " has no location");
            spread_to.push_back(static_cast<std::int32_t>(b));
            rows.push_back(b);
            for (std::uint32_t l = 0; l < m_max_locations; ++l) {
                mask.push_back(l < count ? 1 : 0);
                padded.push_back(l < count ? k + static_cast<std::int32_t>(l) : -1);
            }
            for (std::uint32_t l = 0; l < count; ++l, ++k) {
                for (const std::int32_t n : o.location(x, l)) {
                    member_node.push_back(static_cast<std::int32_t>(node_offsets[b]) + n);
                    member_location.push_back(k);
                }
                xfer_of.push_back(static_cast<std::int32_t>(x));
                row_of.push_back(static_cast<std::int32_t>(b));
                gains.push_back(static_cast<Scalar>(scaled_gain(o.gain(x, l))));
            }
        }
        if (rows.empty()) return std::nullopt;
        for (std::int32_t& p : padded)
            if (p < 0) p = k;  // the zero row appended below
        const auto index = [&](std::vector<std::int32_t> values, std::int64_t bound) -> const nn::Indices<B>& {
            return pass.indices.emplace_back(std::move(values), bound);
        };
        const auto batch_rows = static_cast<std::int64_t>(observations.size());
        const nn::Indices<B>& nodes = index(std::move(member_node), pass.batch->num_nodes());
        const nn::Indices<B>& members = index(std::move(member_location), k);
        const nn::Indices<B>& xfer_rows = index(std::move(xfer_of), m_num_xfers);
        const nn::Indices<B>& graph_rows = index(std::move(row_of), batch_rows);
        const nn::Indices<B>& pad = index(std::move(padded), k + 1);
        const nn::Indices<B>& spread_rows = index(std::move(spread_to), batch_rows);

        const nn::Var<B> pooled = segment_mean(gather(heads.latents.nodes, nodes), members);
        const nn::Var<B> gain_column = tape.constant(nn::Tensor<B>::from_host(Shape{k, 1}, std::span<const Scalar>(gains)));
        const nn::InputBlock<B> blocks[] = {{tape.parameter(m_embedding), &xfer_rows}, {pooled, nullptr},
                                            {heads.latents.globals, &graph_rows}, {gain_column, nullptr}};
        const nn::Var<B> scores = m_location_head(tape, std::span<const nn::InputBlock<B>>(blocks));
        const nn::Var<B> with_zero = concat(std::vector<nn::Var<B>>{scores, tape.constant(nn::Tensor<B>(Shape{1, 1}))}, 0);
        const auto n = static_cast<std::int64_t>(rows.size());
        const nn::Var<B> logits = reshape(gather(with_zero, pad), Shape{n, static_cast<std::int64_t>(m_max_locations)});
        return LocationHead{std::move(rows), nn::MaskedCategorical<B>(logits, mask), &spread_rows};
    }

    /// A (rows) vector of the location rows spread into the whole batch (0 for NO-OP rows).
    [[nodiscard]] static nn::Var<B> spread(nn::Var<B> per_row, const nn::Indices<B>& to) {
        const nn::Var<B> column = reshape(per_row, Shape{per_row.dim(0), 1});
        const nn::Var<B> spread_out = segment_sum(column, to);
        return reshape(spread_out, Shape{to.bound()});
    }

    std::uint32_t m_num_xfers;
    std::uint32_t m_max_locations;
    PolicyOptions m_options;
    nn::GraphNetwork<B> m_encoder;
    nn::Mlp<B> m_xfer_head;
    nn::Parameter<B> m_embedding;
    nn::Mlp<B> m_location_head;
    nn::Mlp<B> m_value_head;
    nn::Mlp<B> m_gain_head;
};

}  // namespace rlflow::rl
