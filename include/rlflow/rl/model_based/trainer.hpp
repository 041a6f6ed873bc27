#pragma once
/// \file
/// Training the model-based agent (RLFlow thesis ch. 4-5; "World Models"): real
/// experience trains the world model, and the controller trains in the world model's
/// dream only. One iteration:
///
/// 1. the first time, real rollouts of a uniformly random masked agent (MbOptions::
///    random_steps; each rewrite at its best-gain location, NO-OP with a small probability
///    so that episodes run long, as the agents' NO-OP prior does);
/// 2. M (with V) takes `model_updates` gradient steps on windows of stored episodes (more
///    if the new real steps need them, MbOptions::model_visits);
/// 3. C takes PPO updates on dream rollouts until `dream_steps` dream steps;
/// 4. C collects `collect_steps` more real steps: on each graph in turn, first an episode of
///    its most probable actions (what the log's cost ratios report, as an evaluation that
///    counts as real steps), then episodes with ε-uniform exploration.
///
/// Every real environment step is counted (real_steps(); the budget MbOptions::real_steps
/// is never passed), apart from the dream steps. Episodes are kept in a buffer of at most
/// `buffer_states` observations, the oldest dropped first.
///
/// Over the ranks of an AnyCommunicator (docs/scale-out.md), every part is spread: each
/// rank takes its share of the real steps (and the greedy episodes of every K-th graph)
/// into a buffer of its own, its share of M's windows (the gradients all-reduced, weighted
/// by transitions) and its share of the dream's rows (C's PPO update data-parallel,
/// ppo_update_over). A rank draws its own actions, windows and dreams from a generator
/// forked from the seed by its rank; the shuffles of C's update come from the run's
/// generator, alike on every rank. One process is exactly the single-process trainer.

#include <rlflow/core/communicator.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/core/parallel.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn/distributed.hpp>
#include <rlflow/nn/optim.hpp>
#include <rlflow/rl/env/env.hpp>
#include <rlflow/rl/env/random_policy.hpp>
#include <rlflow/rl/model_based/controller.hpp>
#include <rlflow/rl/model_based/dream.hpp>
#include <rlflow/rl/model_based/policy.hpp>
#include <rlflow/rl/model_based/world_model.hpp>
#include <rlflow/rl/model_free/ppo.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rlflow::rl {

/// Every setting of model-based training.
struct MbOptions {
    WorldModelOptions model;
    ControllerOptions controller;
    EnvOptions env;
    /// C's PPO (its rollouts are dream rollouts of dream.batch rows x dream_horizon steps).
    PpoOptions ppo{.minibatch_size = 256, .entropy_coefficient = 0.02, .final_entropy_coefficient = 0.02};
    DreamOptions dream;
    /// Dream steps per row of each PPO update's rollout.
    std::size_t dream_horizon = 16;
    /// The budget of real environment steps, and those the random agent takes first.
    std::size_t real_steps = 20'000;
    std::size_t random_steps = 2'000;
    /// Real steps C collects per iteration, and dream steps C trains on per iteration.
    std::size_t collect_steps = 500;
    std::size_t dream_steps = 16'384;
    /// M's gradient steps per iteration, its windows per step, and their length.
    std::size_t model_updates = 40;
    /// The least number of times M sees each new real transition on average, in windows.
    std::size_t model_visits = 2;
    std::size_t windows = 8;
    std::size_t window_length = 8;
    double model_learning_rate = 1e-3;
    double model_max_grad_norm = 1.0;
    /// The random agent's probability of NO-OP, and C's exploration while collecting.
    double random_noop = 0.01;
    double exploration = 0.1;
    /// Dream episodes that start from stored real states per C's training phase (beside
    /// the start graphs; dream_starts() says why); 0: from the start graphs only.
    std::size_t dream_replay_starts = 32;
    /// The most observations the episode buffer keeps.
    std::size_t buffer_states = 4'096;
    std::uint64_t seed = 0;
};

/// What an iteration did.
struct MbLog {
    std::size_t iteration = 0;
    std::size_t real_steps = 0;
    std::size_t dream_steps = 0;
    std::size_t episodes = 0;
    WorldModelLosses model;
    UpdateStats controller;
    DreamStats dream;
    /// Per training graph: the cost ratio of C's last greedy real episode, and the best
    /// ratio any real episode reached (NaN until one ends).
    std::vector<double> final_cost_ratio;
    std::vector<double> best_cost_ratio;
    double model_seconds = 0;
    double dream_seconds = 0;
    double real_seconds = 0;
};

template <nn::TensorBackend B, cost::CostBackend C>
class MbTrainer {
public:
    MbTrainer(std::vector<Graph> graphs, std::shared_ptr<const rewrite::RuleSet> rules, cost::CostModel<C>& costs, MbOptions options,
              unsigned jobs = 1, const GraphMeasure& measure = {}, AnyCommunicator comm = {})
        : m_options(options), m_comm(comm), m_graphs(std::move(graphs)), m_pool(std::make_unique<ThreadPool>(jobs)),
          m_model(static_cast<std::uint32_t>(rules->size()), options.model),
          m_controller(static_cast<std::uint32_t>(rules->size()), options.model.latent, options.model.lstm_hidden, options.controller),
          m_model_adam(m_model.parameters(), nn::AdamOptions{.learning_rate = nn::LearningRateSchedule::constant(options.model_learning_rate)}),
          m_controller_adam(m_controller.parameters(), nn::AdamOptions{.learning_rate = nn::LearningRateSchedule::constant(options.ppo.learning_rate)}),
          m_agent(m_model, m_controller, static_cast<std::uint32_t>(options.env.max_locations)),
          m_dream(m_model, m_controller, dream_options(options, m_comm)), m_rng(options.seed),
          m_own(Rng(options.seed).fork(static_cast<std::uint64_t>(m_comm.rank()) + 1)),
          m_final(m_graphs.size(), std::numeric_limits<double>::quiet_NaN()), m_best(m_graphs.size(), std::numeric_limits<double>::quiet_NaN()) {
        RLFLOW_EXPECTS(!m_graphs.empty() && options.window_length > 0 && options.windows > 0 && options.dream_horizon > 0, precondition_error,
                       "MbTrainer needs graphs, windows and a dream horizon");
        const auto ranks = static_cast<std::size_t>(m_comm.size());
        RLFLOW_EXPECTS(options.windows >= ranks && options.dream.batch >= ranks && options.random_steps >= ranks, precondition_error,
                       "MbTrainer over " + std::to_string(ranks) + " ranks needs as many of M's windows, dream rows and random steps at least");
        m_turn = static_cast<std::size_t>(m_comm.rank());  // rank r starts on graph r
        m_envs.reserve(m_graphs.size());
        for (const Graph& g : m_graphs) {
            m_envs.emplace_back(rules, costs, options.env);
            m_envs.back().measure_with(measure);
            m_starts.push_back(m_envs.back().reset(g));
        }
    }
    MbTrainer(const MbTrainer&) = delete;
    MbTrainer& operator=(const MbTrainer&) = delete;

    [[nodiscard]] bool done() const noexcept { return m_real_steps >= m_options.real_steps; }
    [[nodiscard]] std::size_t real_steps() const noexcept { return m_real_steps; }
    [[nodiscard]] std::size_t dream_steps() const noexcept { return m_dream_steps; }
    [[nodiscard]] std::size_t episodes() const noexcept { return m_episodes; }
    [[nodiscard]] WorldModel<B>& model() noexcept { return m_model; }
    [[nodiscard]] Controller<B>& controller() noexcept { return m_controller; }
    [[nodiscard]] const std::deque<RealEpisode>& buffer() const noexcept { return m_buffer; }
    [[nodiscard]] const MbOptions& options() const noexcept { return m_options; }

    /// Gives every rank rank 0's weights of M and C (every rank calls it; ranks made alike
    /// already start equal).
    void synchronise() {
        const auto model = m_model.parameters();
        const auto controller = m_controller.parameters();
        nn::broadcast_parameters<B>(m_comm, std::span<nn::Parameter<B>* const>(model), 0);
        nn::broadcast_parameters<B>(m_comm, std::span<nn::Parameter<B>* const>(controller), 0);
    }

    /// Makes every later collection end early, after the real step at which `cut` first
    /// returns true (a clock, or Ctrl-C): with rewards timed in ONNX Runtime, one collection
    /// can take far longer than a time limit allows. One process only: ranks add their
    /// steps up at the end of a collection, and each would cut at another step.
    void set_cut(std::function<bool()> cut) {
        RLFLOW_EXPECTS(m_comm.size() == 1, precondition_error, "MbTrainer::set_cut: for one process only");
        m_cut = std::move(cut);
    }

    /// One iteration (the file comment's steps 1-4).
    MbLog iterate() {
        MbLog log;
        using clock = std::chrono::steady_clock;
        auto start = clock::now();
        if (m_real_steps == 0) collect(std::min(m_options.random_steps, m_options.real_steps), true);
        log.real_seconds += std::chrono::duration<double>(clock::now() - start).count();
        start = clock::now();
        log.model = train_model(m_real_steps - m_trained_on);
        m_trained_on = m_real_steps;
        log.model_seconds = std::chrono::duration<double>(clock::now() - start).count();
        start = clock::now();
        log.controller = train_controller(log.dream);
        log.dream_seconds = std::chrono::duration<double>(clock::now() - start).count();
        start = clock::now();
        if (!done()) collect(std::min(m_options.collect_steps, m_options.real_steps - m_real_steps), false);
        log.real_seconds += std::chrono::duration<double>(clock::now() - start).count();
        log.iteration = ++m_iterations;
        log.real_steps = m_real_steps;
        log.dream_steps = m_dream_steps;
        log.episodes = m_episodes;
        log.final_cost_ratio = m_final;
        log.best_cost_ratio = m_best;
        return log;
    }

    /// `steps` real steps (of all ranks), by the random agent or by C; episodes go to the
    /// buffer. C's first episode on each graph is greedy and unexplored (over the ranks, on
    /// every K-th graph from the rank's own).
    void collect(std::size_t steps, bool random) {
        m_agent.refresh();
        const auto rank = static_cast<std::size_t>(m_comm.rank()), ranks = static_cast<std::size_t>(m_comm.size());
        const auto [first, last] = rank_share(steps, m_comm.rank(), m_comm.size());
        const std::size_t mine = last - first;
        std::vector<char> evaluated(m_envs.size(), 1);
        for (std::size_t g = rank; !random && g < m_envs.size(); g += ranks) evaluated[g] = 0;
        std::vector<double> final_ratio(m_envs.size(), std::numeric_limits<double>::quiet_NaN());
        std::vector<double> best_ratio = final_ratio;
        std::size_t taken = 0, ended_here = 0;
        bool cut = false;
        while (taken < mine && !cut) {
            const std::size_t g = m_turn++ % m_envs.size();
            const bool greedy = !evaluated[g];
            evaluated[g] = 1;
            m_agent.set_exploration(greedy ? 0.0 : m_options.exploration);
            GraphEnv<C>& env = m_envs[g];
            RealEpisode episode;
            episode.states.push_back(env.reset(m_graphs[g]));
            m_agent.begin_episode();
            bool ended = false;
            while (taken < mine && !ended) {
                const Observation* one[] = {&episode.states.back()};
                const Action a = random ? random_action(*one[0], own(), {.no_op = m_options.random_noop, .best_location = true})
                                         : m_agent.act(one, own(), greedy).actions[0];
                StepResult r = env.step(a);
                ++taken;
                episode.actions.push_back(a);
                episode.rewards.push_back(r.reward);
                episode.dones.push_back(r.terminated ? 1 : 0);
                episode.states.push_back(std::move(r.observation));
                ended = r.terminated || r.truncated;
                cut = m_cut && m_cut();
                if (cut) break;
            }
            if (ended) {
                ++ended_here;
                const double ratio = env.cost_ms() / env.initial_cost_ms();
                if (greedy) final_ratio[g] = ratio;
                if (!(best_ratio[g] <= ratio)) best_ratio[g] = ratio;
            }
            store(std::move(episode));
        }
        merge_collected(taken, ended_here, final_ratio, best_ratio);
    }

private:
    /// The dream's settings; over the ranks, this rank's share of the rows.
    [[nodiscard]] static DreamOptions dream_options(const MbOptions& o, AnyCommunicator& comm) {
        DreamOptions d = o.dream;
        d.step_limit = o.env.step_limit;
        const auto [first, last] = rank_share(o.dream.batch, comm.rank(), comm.size());
        d.batch = std::max<std::size_t>(1, last - first);
        return d;
    }

    /// What draws this rank's own actions, windows and dreams: the run's generator on one
    /// process, a fork of the seed by rank over several.
    [[nodiscard]] Rng& own() noexcept { return m_comm.size() == 1 ? m_rng : m_own; }

    /// Every rank's steps, episodes and cost ratios of a collection into the counters (the
    /// ratios NaN where this rank had none: the first rank's greedy ratio of a graph, the
    /// least best ratio).
    void merge_collected(std::size_t taken, std::size_t ended, const std::vector<double>& final_ratio, const std::vector<double>& best_ratio) {
        std::vector<double> counts{static_cast<double>(taken), static_cast<double>(ended)};
        m_comm.all_reduce_sum(std::span<double>(counts));
        m_real_steps += static_cast<std::size_t>(counts[0]);
        m_episodes += static_cast<std::size_t>(counts[1]);
        std::vector<double> mine = final_ratio;
        mine.insert(mine.end(), best_ratio.begin(), best_ratio.end());
        const std::size_t n = m_envs.size();
        std::vector<double> ratios(2 * n, std::numeric_limits<double>::quiet_NaN());
        for (const std::string& part : m_comm.size() == 1 ? std::vector<std::string>{to_bytes(std::span<const double>(mine))}
                                                           : all_gather_bytes(m_comm, to_bytes(std::span<const double>(mine)))) {
            const std::vector<double> theirs = from_bytes<double>(part);
            for (std::size_t g = 0; g < n; ++g) {
                if (!std::isnan(theirs[g]) && std::isnan(ratios[g])) ratios[g] = theirs[g];
                if (!(ratios[n + g] <= theirs[n + g])) ratios[n + g] = theirs[n + g];
            }
        }
        for (std::size_t g = 0; g < n; ++g) {
            if (!std::isnan(ratios[g])) m_final[g] = ratios[g];
            if (!(m_best[g] <= ratios[n + g])) m_best[g] = ratios[n + g];
        }
    }

    void store(RealEpisode episode) {
        if (episode.size() == 0) return;
        m_stored_states += episode.states.size();
        m_buffer.push_back(std::move(episode));
        while (m_buffer.size() > 1 && m_stored_states > m_options.buffer_states) {
            m_stored_states -= m_buffer.front().states.size();
            m_buffer.pop_front();
        }
    }

    /// M's gradient steps on random windows (half of them from an episode's start, where
    /// dream episodes start with h = 0): model_updates, or more when `new_steps` new real
    /// steps need them to be visited model_visits times each on average. Over the ranks,
    /// each draws its share of the windows from its own buffer.
    WorldModelLosses train_model(std::size_t new_steps) {
        WorldModelLosses mean;
        const std::size_t per_update = m_options.windows * m_options.window_length;
        const std::size_t updates = std::max(m_options.model_updates, (m_options.model_visits * new_steps + per_update - 1) / per_update);
        const auto [first, last] = rank_share(m_options.windows, m_comm.rank(), m_comm.size());
        for (std::size_t u = 0; u < updates; ++u) {
            std::vector<EpisodeWindow> windows;
            for (std::size_t w = first; w < last; ++w) {
                const RealEpisode& e = m_buffer[own().next() % m_buffer.size()];
                const std::size_t offset = own().uniform() < 0.5 ? 0 : own().next() % e.size();
                windows.push_back({&e, offset, std::min(m_options.window_length, e.size() - offset)});
            }
            m_model_adam.zero_grad();
            WorldModelLosses l = m_model.add_gradient(std::move(windows));
            if (m_comm.size() > 1) l = all_ranks_model_step(l);
            m_model_adam.step(m_options.model_max_grad_norm);
            m_model.update_target(m_options.model.target_rate);
            const double k = 1.0 / static_cast<double>(u + 1);  // running means
            for (auto [into, x] : loss_fields(mean, l)) *into += (x - *into) * k;
            mean.steps += l.steps;
        }
        return mean;
    }

    /// The fields of `into` averaged, paired with those of `l`.
    [[nodiscard]] static std::array<std::pair<double*, double>, 9> loss_fields(WorldModelLosses& into, const WorldModelLosses& l) {
        return {std::pair{&into.nll_per_dim, l.nll_per_dim}, {&into.reward, l.reward}, {&into.done, l.done}, {&into.mask, l.mask},
                {&into.gains, l.gains}, {&into.summary, l.summary}, {&into.spread, l.spread}, {&into.total, l.total},
                {&into.reward_error, l.reward_error}};
    }

    /// M's gradients averaged over the ranks, weighted by their transitions, and the
    /// losses likewise: what one process's step over all the windows computes.
    [[nodiscard]] WorldModelLosses all_ranks_model_step(const WorldModelLosses& mine) {
        const auto params = m_model.parameters();
        nn::all_reduce_mean_gradients<B>(m_comm, std::span<nn::Parameter<B>* const>(params), static_cast<double>(mine.steps));
        WorldModelLosses scratch;
        const auto fields = loss_fields(scratch, mine);
        std::vector<double> sums;
        for (const auto& [unused, x] : fields) sums.push_back(x * static_cast<double>(mine.steps));
        sums.push_back(static_cast<double>(mine.steps));
        m_comm.all_reduce_sum(std::span<double>(sums));
        WorldModelLosses all;
        all.steps = static_cast<std::size_t>(sums.back());
        const auto out = loss_fields(all, mine);
        for (std::size_t i = 0; i < out.size(); ++i) *out[i].first = sums[i] / sums.back();
        return all;
    }

    /// Where dream episodes start: V's z of each training graph's start, with its real
    /// gains and mask, and of `dream_replay_starts` states drawn from the stored episodes,
    /// the start graphs repeated so that half of the dream episodes start there. Dreams
    /// from replayed states reach the deep states of long rewrite sequences in a few
    /// imagined steps, where M's errors have not yet compounded (as Dreamer imagines from
    /// replayed states); M trains on windows that start mid-episode with h = 0 as well.
    [[nodiscard]] std::vector<DreamStart> dream_starts() {
        std::vector<const Observation*> observations;
        const std::size_t replayed = m_options.dream_replay_starts;
        const std::size_t repeats = std::max<std::size_t>(1, replayed / m_starts.size());
        for (std::size_t r = 0; r < repeats; ++r)
            for (const Observation& o : m_starts) observations.push_back(&o);
        for (std::size_t k = 0; k < replayed && !m_buffer.empty(); ++k) {
            const RealEpisode& e = m_buffer[own().next() % m_buffer.size()];
            observations.push_back(&e.states[own().next() % e.size()]);
        }
        nn::Tape<B> tape;
        nn::NoGrad<B> no_grad(tape);
        const std::vector<typename B::Scalar> z = m_model.encode(tape, observations).z.value().to_host();
        const auto latent = static_cast<std::size_t>(m_options.model.latent);
        std::vector<DreamStart> starts;
        for (std::size_t i = 0; i < observations.size(); ++i)
            starts.push_back({std::vector<float>(z.begin() + static_cast<std::ptrdiff_t>(i * latent),
                                                 z.begin() + static_cast<std::ptrdiff_t>((i + 1) * latent)),
                              xfer_best_gains(*observations[i]), observations[i]->xfer_mask});
        return starts;
    }

    /// PPO updates of C on dream rollouts until dream_steps steps (of all ranks: each
    /// dreams its rows, and the update is data-parallel).
    UpdateStats train_controller(DreamStats& dream) {
        const std::vector<DreamStart> starts = dream_starts();
        UpdateStats last;
        std::size_t steps = 0;
        while (steps < m_options.dream_steps) {
            m_dream.refresh(m_model, m_controller);
            DreamStats s;
            const auto segments = m_dream.collect(starts, m_options.dream_horizon, own(), s);
            last = ppo_update_over<B>(m_comm, m_controller, m_controller_adam, std::span<const BasicRolloutSegment<DreamInput>>(segments),
                                      m_options.ppo, m_rng, m_pool.get());
            if (m_comm.size() > 1) s = all_ranks_dream(s);
            steps += s.steps;
            dream = s;
        }
        dream.steps = steps;
        m_dream_steps += steps;
        return last;
    }

    /// The ranks' dream statistics together (the means weighted by episodes).
    [[nodiscard]] DreamStats all_ranks_dream(const DreamStats& mine) {
        const auto ended = static_cast<double>(mine.episodes_ended);
        std::array<double, 4> sums{static_cast<double>(mine.steps), ended, mine.mean_return * ended, mine.mean_length * ended};
        m_comm.all_reduce_sum(std::span<double>(sums));
        DreamStats all;
        all.steps = static_cast<std::size_t>(sums[0]);
        all.episodes_ended = static_cast<std::size_t>(sums[1]);
        all.mean_return = sums[1] > 0 ? sums[2] / sums[1] : 0;
        all.mean_length = sums[1] > 0 ? sums[3] / sums[1] : 0;
        return all;
    }

    MbOptions m_options;
    AnyCommunicator m_comm;
    std::vector<Graph> m_graphs;
    std::unique_ptr<ThreadPool> m_pool;
    WorldModel<B> m_model;
    Controller<B> m_controller;
    nn::Adam<B> m_model_adam;
    nn::Adam<B> m_controller_adam;
    MbPolicy<B> m_agent;
    Dream m_dream;
    Rng m_rng;
    Rng m_own;
    std::vector<GraphEnv<C>> m_envs;
    std::vector<Observation> m_starts;
    std::deque<RealEpisode> m_buffer;
    std::size_t m_stored_states = 0;
    std::size_t m_real_steps = 0;
    std::function<bool()> m_cut;
    /// Real steps when M last trained.
    std::size_t m_trained_on = 0;
    std::size_t m_dream_steps = 0;
    std::size_t m_episodes = 0;
    std::size_t m_iterations = 0;
    std::size_t m_turn = 0;
    std::vector<double> m_final;
    std::vector<double> m_best;
};

}  // namespace rlflow::rl
