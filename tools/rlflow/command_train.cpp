// `rlflow train`.

#include "command_train.hpp"
#include "commands.hpp"

namespace rlflow::cli {

void add_train_command(CLI::App& app) {
    auto o = std::make_shared<TrainOptions>();
    CLI::App* cmd = app.add_subcommand("train", "Train an agent to choose rewrites (model-free PPO, or model-based with a world model)");
    cmd->add_option("--agent", o->agent, "mf (model-free PPO) or mb (a world model, and a controller trained in its dream)")
        ->check(CLI::IsMember({"mf", "mb"}))->capture_default_str();
    cmd->add_option("--temperature", o->temperature, "--agent mb: the dream's temperature (mixture logits / T, noise x sqrt(T))")
        ->check(CLI::Range(0.0, 10.0))->capture_default_str();
    cmd->add_option("--real-steps", o->real_steps, "--agent mb: the budget of real environment steps (the first quarter of it, at most 2000, by a "
                    "uniformly random agent)")
        ->check(CLI::Range(std::size_t{1}, std::size_t{100'000'000}))->capture_default_str();
    cmd->add_option("--dream-steps", o->dream_steps, "--agent mb: dream steps the controller trains on per iteration")
        ->check(CLI::Range(std::size_t{1}, std::size_t{100'000'000}))->capture_default_str();
    cmd->add_option("--reward-bins", o->reward_bins, "--agent mb: M's reward head: 0, symlog regression; N >= 2, two-hot over N symlog bins")
        ->check(CLI::Range(std::int64_t{0}, std::int64_t{1024}))->capture_default_str();
    cmd->add_option("--graph", o->graphs, "models to train on (zoo:NAME or .onnx files)");
    cmd->add_option("--checkpoint", o->checkpoint, "the agent's directory (agent.json, weights.ckpt, train.jsonl)")->required();
    cmd->add_option("--seed", o->seed, "seed of the weights, the rollouts and the updates")->capture_default_str();
    cmd->add_option("--episodes", o->episodes, "stop after this many episodes in all (0: no limit)");
    cmd->add_option("--updates", o->updates, "stop after this many more updates (default 50 when no limit is given)");
    cmd->add_option("--time-limit", o->time_limit, "stop after this many seconds of training (0: none)")
        ->check(CLI::Range(0.0, 1e9));
    cmd->add_flag("--resume", o->resume, "continue the agent in --checkpoint exactly where it stopped");
    cmd->add_option("--init-from", o->init_from,
                    "--agent mf: start from the weights and action space of the agent in this directory, with a fresh "
                    "optimiser (fine-tuning, e.g. on graphs it never saw)")
        ->excludes("--resume");
    add_target_flags(*cmd, o->where);
    cmd->add_option("--reward", o->reward,
                    "what rewards measure: cost (the --cost backend's per-op sum), ort-latency (each new graph timed "
                    "whole in ONNX Runtime, as X-RLflow; slow) or gpu-latency (each new graph timed whole on the GPU by "
                    "the CUDA executor; --target cuda)")
        ->check(CLI::IsMember({"cost", "ort-latency", "gpu-latency"}))->capture_default_str();
    cmd->add_option("--latency-runs", o->latency_runs,
                    "--reward ort-latency: interleaved timed runs of each graph and its start per session")
        ->check(CLI::Range(1, 1000))->capture_default_str();
    cmd->add_option("--latency-sessions", o->latency_sessions,
                    "--reward ort-latency: sessions per graph; the latency is the start's times the median of their "
                    "median paired ratios")
        ->check(CLI::Range(1, 100))->capture_default_str();
    cmd->add_option("--latency-max-sessions", o->latency_max_sessions,
                    "--reward ort-latency: sessions per graph at most; past --latency-sessions one more at a time until a "
                    "sign test over all its paired runs says faster or slower than the start (p <= 0.05)")
        ->check(CLI::Range(1, 100))->capture_default_str();
    cmd->add_option("--cost-cache", o->cost_cache,
                    "read op costs from, and save them to, this file ('none': no cache; default for measuring backends: "
                    "~/.cache/rlflow, shared with optimize)");
    cmd->add_option("--rules", o->rules,
                    "default (built-in rules + the generated rules that match a training graph), builtin, or a rules file")
        ->capture_default_str();
    cmd->add_option("--ledger", o->ledger,
                    "the rule ledger, as optimize reads it: auto (the one shipped for ort-cpu at level all, applied to the "
                    "default rules there under the target's own prices), none, or a ledger file; families that never paid in it are not in a new agent's "
                    "action space")
        ->capture_default_str();
    cmd->add_option("--rollout-steps", o->rollout_steps, "environment steps per update")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1'000'000}))->capture_default_str();
    cmd->add_option("--step-limit", o->step_limit,
                    "steps after which an episode is cut (0: by the graphs, twice the rewrites greedy search takes on the one "
                    "that takes the most, at least 100)")
        ->check(CLI::Range(std::size_t{0}, std::size_t{100'000}))->capture_default_str();
    cmd->add_flag("--no-gains", o->no_gains,
                  "do not show the agent each location's one-step gain (faster steps, weaker agent)");
    cmd->add_option("--entropy", o->entropy_coefficient, "PPO's entropy bonus (both heads)")
        ->check(CLI::Range(0.0, 10.0))->capture_default_str();
    cmd->add_option("--entropy-final", o->final_entropy_coefficient,
                    "the entropy bonus to decay to, linearly over the first " + std::to_string(rl::planned_updates) +
                        " updates (default: in the defaults' proportion)")
        ->check(CLI::Range(0.0, 10.0));
    cmd->add_option("--learning-rate", o->learning_rate, "Adam's learning rate at the first update")
        ->check(CLI::Range(1e-8, 1.0))->capture_default_str();
    cmd->add_option("--envs-per-graph", o->environments_per_graph, "environments per training graph, stepped in parallel")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1024}))->capture_default_str();
    cmd->add_option("--jobs", o->jobs, "threads for rollouts and gradients (default: this machine's hardware threads, "
                    + std::to_string(o->jobs) + "; results do not depend on it)")
        ->check(CLI::Range(1u, 1024u));
    cmd->add_option("--checkpoint-every", o->checkpoint_every, "updates between checkpoints")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1'000'000}))->capture_default_str();
    add_model_flags(*cmd, o->load);
    cmd->callback([o] {
        o->load.seed = o->seed;  // zoo models get the weights of --seed, as optimize gives them
        dispatch_train(*o);
    });
}

}  // namespace rlflow::cli
