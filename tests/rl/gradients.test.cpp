// Finite-difference gradient checks of the agents' networks through the losses their
// trainers minimise, in float64 at tiny sizes: the actor-critic through the PPO loss, the
// world model's V and M through M's training loss, and the controller through the PPO
// loss. Each analytic gradient comes from the library's own loss function (which runs its
// own backward pass); the central differences are of the value that same function reports.
#include <rlflow/cost/analytic.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rl/model_based/controller.hpp>
#include <rlflow/rl/model_based/world_model.hpp>
#include <rlflow/rl/model_free/policy.hpp>
#include <rlflow/rl/model_free/ppo.hpp>

#include "../nn/gradient_check.hpp"
#include "small_graphs.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace rlflow;
using nn_test::Double;
using rlflow::test::builtin;
using rlflow::test::conv_chain;
using rlflow::test::two_branches;
using Analytic = cost::AnalyticBackend;
using Parameters = std::vector<nn::Parameter<Double>*>;

namespace {

/// The largest relative error |analytic - numeric| / max(1, |numeric|) a check allows
/// (nn_test's measure), against central differences of step 1e-6 (nn_test's step) in
/// float64. Their own error is about |f'''| h^2 ~ 1e-12 from truncation plus eps |f| / h
/// ~ 1e-10 from rounding; the checks below measure at most 3e-9 (the MESSAGE of each case
/// prints its worst) on gradients as large as 0.15 to 4 (it prints the largest), so a
/// backward term that is dropped or misweighted and moves an element by more than 1e-6
/// fails. Dropping LayerNorm's beta gradient, the LSTM's gradient into c_{t-1} or PPO's
/// entropy bonus term failed the cases they reach, each at its first wrong element.
constexpr double gradient_tolerance = 1e-6;

/// The half-width of the uniform offset added to every parameter before a check. Biases
/// start at 0, so a hidden row that relu zeroed whole puts the next layer's pre-activation
/// exactly on relu's kink, where central differences are meaningless; the offset moves
/// every parameter off such points (the gradient must be right at any weights).
constexpr double weight_offset = 0.1;

void offset_parameters(const Parameters& params, std::uint64_t seed) {
    Rng rng(seed);
    for (nn::Parameter<Double>* p : params) {
        std::vector<double> v = p->value.to_host();
        for (double& x : v) x += rng.uniform(-weight_offset, weight_offset);
        p->value = nn::Tensor<Double>::from_host(p->value.shape(), v);
    }
}

/// The largest |element| of the gradient `loss` gives `params` at their current values:
/// the scale a dropped term is measured against.
double largest_gradient(const Parameters& params, const nn_test::LossWithBackward& loss) {
    for (nn::Parameter<Double>* p : params) p->zero_grad();
    (void)loss();
    double largest = 0;
    for (nn::Parameter<Double>* p : params)
        for (const double g : p->grad.to_host()) largest = std::max(largest, std::abs(g));
    return largest;
}

/// How many values `params` hold.
std::int64_t values(const Parameters& params) {
    std::int64_t n = 0;
    for (const nn::Parameter<Double>* p : params) n += p->value.numel();
    return n;
}

/// The parameter of `params` named `name`.
nn::Parameter<Double>& named(const Parameters& params, const std::string& name) {
    const auto at = std::find_if(params.begin(), params.end(), [&](const nn::Parameter<Double>* p) { return p->name == name; });
    REQUIRE_MESSAGE(at != params.end(), "no parameter named " << name);
    return **at;
}

/// PPO's minibatch loss as the trainers compute it, its gradient added to the policy's:
/// ShardedGradient (two shards, the default) over add_ppo_gradient, whose reported sums
/// make up the loss of its comment, mean_i [ -min(r_i A_i, clip(r_i) A_i) + c_v (V_i - R_i)^2 - c_e H_i ].
template <class Policy>
double ppo_loss(rl::ShardedGradient<Double, Policy>& gradient, const rl::BasicMinibatch<typename Policy::Input>& mb,
                const rl::PpoOptions& options) {
    const rl::MinibatchSums s = gradient.add(mb, options);
    return (s.policy_loss + options.value_coefficient * s.value_loss - options.entropy_coefficient * s.entropy)
           / static_cast<double>(mb.size());
}

/// Probability ratios new / old and advantages that put one sample in each case of the
/// clipped surrogate (clip 0.2): inside the clip range with either sign of advantage, above
/// and below it with the clip binding (no gradient) and not binding (the unclipped term).
struct RatioCase {
    double ratio;
    double advantage;
};
constexpr RatioCase ratio_cases[] = {{1.1, 1.2}, {1.5, 0.8}, {1.5, -0.7}, {0.5, -1.1}, {0.5, 0.9}, {0.95, -0.4}};
/// How many of ratio_cases lie outside the clip range.
constexpr double outside_clip = 4;

/// A minibatch of `inputs` and `actions` whose old log-probabilities give ratio_cases
/// against `policy`'s current log-probabilities, with returns drawn from `rng`.
template <class Policy>
rl::BasicMinibatch<typename Policy::Input> ratio_minibatch(Policy& policy, const std::vector<const typename Policy::Input*>& inputs,
                                                           const std::vector<rl::Action>& actions, Rng& rng) {
    nn::Tape<Double> tape;
    const std::vector<double> now = policy.evaluate(tape, inputs, actions).log_prob.value().to_host();
    rl::BasicMinibatch<typename Policy::Input> mb;
    mb.observations = inputs;
    mb.actions = actions;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const RatioCase c = ratio_cases[i % std::size(ratio_cases)];
        mb.old_log_probs.push_back(now[i] - std::log(c.ratio));
        mb.advantages.push_back(c.advantage);
        mb.returns.push_back(rng.uniform(-2, 2));
    }
    return mb;
}

/// An episode of `env` from `graph`: up to `rewrites` random valid rewrites at random
/// valid locations (fewer if nothing applies), then NO-OP.
rl::RealEpisode random_episode(rl::GraphEnv<Analytic>& env, const Graph& graph, std::size_t rewrites, Rng& rng) {
    rl::RealEpisode e;
    e.states.push_back(env.reset(graph));
    for (;;) {
        const rl::Observation& o = e.states.back();
        std::vector<std::uint32_t> valid;
        for (std::uint32_t x = 0; x < o.num_xfers; ++x)
            if (o.location_count(x) > 0) valid.push_back(x);
        rl::Action a{o.num_xfers, 0};
        if (e.size() < rewrites && !valid.empty()) {
            a.xfer = valid[rng.below(valid.size())];
            a.location = static_cast<std::uint32_t>(rng.below(o.location_count(a.xfer)));
        }
        rl::StepResult r = env.step(a);
        e.actions.push_back(a);
        e.rewards.push_back(r.reward);
        e.dones.push_back(r.terminated ? 1 : 0);
        e.states.push_back(std::move(r.observation));
        if (r.terminated || r.truncated) return e;
    }
}

/// Locations per xfer the environments offer: few, so the location head stays small.
constexpr std::size_t few_locations = 4;

/// Two real episodes of four steps (three rewrites, then NO-OP), on the two small graphs.
struct Episodes {
    cost::CostModel<Analytic> costs{Analytic::preset("cpu")};
    rl::GraphEnv<Analytic> env{builtin(), costs, {.max_locations = few_locations, .step_limit = 8}};
    std::vector<rl::RealEpisode> episodes;
    Episodes() {
        Rng rng(11);
        episodes.push_back(random_episode(env, two_branches(), 3, rng));
        episodes.push_back(random_episode(env, conv_chain(3), 3, rng));
    }
    /// Windows of 4, 2 and 1 steps (whole, from an offset, the last step alone), so the
    /// rows still running shrink during backpropagation through time.
    [[nodiscard]] std::vector<rl::EpisodeWindow> windows() const {
        REQUIRE(episodes[0].size() == 4);
        REQUIRE(episodes[1].size() == 4);
        return {{&episodes[0], 0, 4}, {&episodes[1], 1, 2}, {&episodes[1], 3, 1}};
    }
};

/// A world model of tiny sizes. spread_floor 1.5 > the largest spread of z in (-1, 1), so
/// the variance floor's hinge is active in every dimension and its gradient is checked.
rl::WorldModelOptions tiny_world_model(std::int64_t reward_bins) {
    return {.latent = 2, .encoder_latent = 4, .message_passing_steps = 1, .lstm_hidden = 4, .components = 2, .action_embedding = 3,
            .summary = 2, .head_hidden = 4, .spread_floor = 1.5, .spread_weight = 1, .seed = 3, .reward_bins = reward_bins};
}
/// Offsets `model`'s parameters (offset_parameters) and makes its target encoder V's copy.
void prepare(rl::WorldModel<Double>& model) {
    offset_parameters(model.parameters(), 21);
    model.update_target(1.0);
}

}  // namespace

TEST_CASE("gradients: the actor-critic's gradient of the PPO loss matches central differences for every parameter") {
    Episodes data;
    // Six states: each episode's first three (its start and two rewrites in).
    std::vector<const rl::Observation*> observations;
    for (const rl::RealEpisode& e : data.episodes)
        for (std::size_t t = 0; t < 3; ++t) observations.push_back(&e.states[t]);
    const std::uint32_t n = data.env.num_xfers();
    rl::ActorCritic<Double> policy(n, few_locations, {.latent = 4, .message_passing_steps = 1, .hidden = 4, .seed = 2, .gain_hidden = 2});
    const Parameters params = policy.parameters();
    offset_parameters(params, 31);
    // The actions the policy samples, and NO-OP at the second state: rows with and without
    // a location head.
    Rng rng(41);
    std::vector<rl::Action> actions = policy.act(observations, rng).actions;
    actions[1] = {n, 0};
    std::size_t rewrites = 0;
    for (const rl::Action& a : actions) rewrites += a.xfer < n ? 1 : 0;
    REQUIRE(rewrites >= 2);
    const rl::Minibatch mb = ratio_minibatch(policy, observations, actions, rng);
    const rl::PpoOptions options;
    rl::ShardedGradient<Double> gradient(policy, options.gradient_shards);
    // The policy recomputes the log-probabilities the ratios were set against.
    REQUIRE(gradient.add(mb, options).clipped == outside_clip);
    const nn_test::LossWithBackward loss = [&] { return ppo_loss(gradient, mb, options); };
    const double worst = nn_test::check_loss_with_backward(params, loss, gradient_tolerance);
    MESSAGE("actor-critic: " << params.size() << " parameters (" << values(params) << " values), worst relative error " << worst << ", largest gradient "
                             << largest_gradient(params, loss));
    CHECK(worst < gradient_tolerance);
}

TEST_CASE("gradients: the world model's M matches central differences of M's training loss for every parameter") {
    // M: everything but V (encoder_parameters) and the location summary's projection
    // (wm.summary), whose output is also the summary guess's regression target, held
    // constant in training (a stop-gradient): central differences would see the target move.
    // The next case checks that projection. Both reward heads: regression and symlog bins.
    const Episodes data;
    for (const std::int64_t bins : {std::int64_t{0}, std::int64_t{5}}) {
        CAPTURE(bins);
        rl::WorldModel<Double> model(data.env.num_xfers(), tiny_world_model(bins));
        prepare(model);
        const Parameters all = model.parameters(), v = model.encoder_parameters();
        Parameters m;
        for (nn::Parameter<Double>* p : all)
            if (std::find(v.begin(), v.end(), p) == v.end() && !p->name.starts_with("wm.summary.")) m.push_back(p);
        REQUIRE(m.size() + v.size() + 2 == all.size());
        const auto windows = data.windows();
        const nn_test::LossWithBackward loss = [&] { return model.add_gradient(windows).total; };
        const double worst = nn_test::check_loss_with_backward(m, loss, gradient_tolerance);
        MESSAGE("world model M (reward bins " << bins << "): " << m.size() << " parameters (" << values(m) << " values), worst relative error " << worst
                                              << ", largest gradient " << largest_gradient(m, loss));
        CHECK(worst < gradient_tolerance);
    }
}

TEST_CASE("gradients: the world model's V and location projection match central differences of M's training loss") {
    // The summary guess regresses the location projection tanh(wm.summary(nodes)) as a
    // constant target (a stop-gradient). Central differences through V or wm.summary
    // would also move that target, which training leaves out by design, unless its
    // derivative is 0: here wm.summary's weight and the guess's output weight are 0 and
    // their biases equal, so guess = target = tanh(bias) in every row, the regression term
    // is 0 to second order and its gradient vanishes on both sides. V still reaches the
    // loss through z (the LSTM's input, the guess, the variance floor) and wm.summary
    // through the LSTM's input.
    const Episodes data;
    rl::WorldModel<Double> model(data.env.num_xfers(), tiny_world_model(0));
    prepare(model);
    const Parameters all = model.parameters();
    nn::Parameter<Double>& projection = named(all, "wm.summary.weight");
    projection.value = nn::Tensor<Double>(projection.value.shape());
    nn::Parameter<Double>& guess = named(all, "wm.summary_guess.1.weight");
    guess.value = nn::Tensor<Double>(guess.value.shape());
    const nn::Parameter<Double>& projection_bias = named(all, "wm.summary.bias");
    named(all, "wm.summary_guess.1.bias").value = nn::Tensor<Double>::from_host(projection_bias.value.shape(), projection_bias.value.to_host());
    Parameters v = model.encoder_parameters();
    v.push_back(&projection);
    v.push_back(&named(all, "wm.summary.bias"));
    const auto windows = data.windows();
    const nn_test::LossWithBackward loss = [&] { return model.add_gradient(windows).total; };
    const double worst = nn_test::check_loss_with_backward(v, loss, gradient_tolerance);
    MESSAGE("world model V: " << v.size() << " parameters (" << values(v) << " values), worst relative error " << worst << ", largest gradient "
                              << largest_gradient(v, loss));
    CHECK(worst < gradient_tolerance);
    CHECK(model.add_gradient(windows).summary == 0.0);
}

TEST_CASE("gradients: the controller's gradient of the PPO loss matches central differences for every parameter") {
    constexpr std::uint32_t xfers = 5;
    constexpr std::int64_t latent = 2, hidden = 3;
    rl::Controller<Double> controller(xfers, latent, hidden, {.hidden = 4, .gain_hidden = 2, .gain_prior = 0.7, .noop_logit = 0.3, .seed = 4});
    const Parameters params = controller.parameters();
    offset_parameters(params, 51);
    // Six dream inputs: z and h in (-1, 1), scaled gains in (-3, 3), masks allowing each
    // rewrite with probability `allowed` (NO-OP always), and a uniformly drawn valid xfer each.
    constexpr double allowed = 0.6;
    Rng rng(61);
    std::vector<rl::DreamInput> inputs(6);
    std::vector<rl::Action> actions;
    for (rl::DreamInput& in : inputs) {
        for (std::int64_t i = 0; i < latent; ++i) in.z.push_back(static_cast<float>(rng.uniform(-1, 1)));
        for (std::int64_t i = 0; i < hidden; ++i) in.h.push_back(static_cast<float>(rng.uniform(-1, 1)));
        std::vector<std::uint32_t> valid{xfers};
        for (std::uint32_t x = 0; x < xfers; ++x) {
            in.gains.push_back(static_cast<float>(rng.uniform(-3, 3)));
            in.mask.push_back(rng.uniform() < allowed ? 1 : 0);
            if (in.mask.back() != 0) valid.push_back(x);
        }
        in.mask.push_back(1);
        actions.push_back({valid[rng.below(valid.size())], 0});
    }
    std::vector<const rl::DreamInput*> pointers;
    for (const rl::DreamInput& in : inputs) pointers.push_back(&in);
    const rl::BasicMinibatch<rl::DreamInput> mb = ratio_minibatch(controller, pointers, actions, rng);
    const rl::PpoOptions options;
    rl::ShardedGradient<Double, rl::Controller<Double>> gradient(controller, options.gradient_shards);
    REQUIRE(gradient.add(mb, options).clipped == outside_clip);
    const nn_test::LossWithBackward loss = [&] { return ppo_loss(gradient, mb, options); };
    const double worst = nn_test::check_loss_with_backward(params, loss, gradient_tolerance);
    MESSAGE("controller: " << params.size() << " parameters (" << values(params) << " values), worst relative error " << worst << ", largest gradient "
                           << largest_gradient(params, loss));
    CHECK(worst < gradient_tolerance);
}
