// The agent directory (rl/env/agent_dir.hpp) and the two kinds' agent.json
// (rl/model_free/agent_file.hpp, rl/model_based/agent_file.hpp): every struct agent.json
// holds survives a JSON round trip field by field, either kind's header is read by the
// same function, and each reader refuses the other kind, a missing field and a damaged
// generator state, naming the file and what is wrong.
#include "../small_graphs.hpp"
#include "../small_mb_options.hpp"

#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/rl/env/action_space.hpp>
#include <rlflow/rl/env/agent_dir.hpp>
#include <rlflow/rl/model_based/agent_file.hpp>
#include <rlflow/rl/model_free/agent_file.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

using namespace rlflow;
using Float = nn::backend::Eigen;

namespace {

/// `value` through JSON and back.
template <class T>
T round_trip(const T& value) {
    return nlohmann::json(value).template get<T>();
}

/// Every field of the model-free agent's state set to a value of its own (no field
/// equals another of its type), so that a field read into another shows.
rl::MfAgentState distinct_mf_state() {
    rl::MfAgentState s;
    s.rules = {"fuse_conv_relu", "merge_conv"};
    s.node_features = rl::observation_feature_sizes.node;
    s.env = {.max_locations = 17, .step_limit = 23, .reward_scale = 31.5, .one_step_gains = false};
    s.cost_backend = "analytic:cpu";
    s.target = "ort-cpu (all, 2 threads)";
    s.graphs = {"zoo:squeezenet1_1", "model.onnx"};
    s.seed = 41;
    s.seconds = 43.25;
    s.policy = {.latent = 3, .message_passing_steps = 5, .hidden = 7, .seed = 11, .gain_hidden = 13, .noop_logit = -2.5};
    s.ppo = {.gamma = 0.91, .lambda = 0.92, .clip = 0.23, .epochs = 3, .minibatch_size = 19, .normalize_advantages = false,
             .entropy_coefficient = 0.07, .final_entropy_coefficient = 0.03, .value_coefficient = 0.44, .max_grad_norm = 0.66,
             .target_kl = 0.02, .learning_rate = 3e-4, .rollout_steps = 29, .environments_per_graph = 4, .gradient_shards = 5};
    s.updates = 47;
    s.env_steps = 53;
    s.episodes = 59;
    s.rng = {1, 2, std::numeric_limits<std::uint64_t>::max(), 0x0123456789abcdefULL};
    s.episode_actions = {{{1, 2}, {3, 4}}, {}};
    s.episode_returns = {0.5, -1.5};
    s.final_cost_ratio = {0.875, std::numeric_limits<double>::quiet_NaN()};
    s.best_cost_ratio = {0.75, 0.8125};
    return s;
}

rl::MbAgentState distinct_mb_state() {
    rl::MbAgentState s;
    static_cast<rl::AgentHeader&>(s) = distinct_mf_state();
    s.model = {.latent = 3, .encoder_latent = 5, .message_passing_steps = 7, .lstm_hidden = 11, .components = 13, .action_embedding = 17,
               .summary = 19, .head_hidden = 23, .target_rate = 0.03, .spread_floor = 0.4, .spread_weight = 7.5, .seed = 29,
               .reward_bins = 31};
    s.controller = {.hidden = 37, .gain_hidden = 41, .gain_prior = 0.75, .state_logit_bound = 2.5, .noop_logit = -1.25, .seed = 43};
    s.temperature = 1.25;
    s.real_steps = 47;
    s.dream_steps = 53;
    s.iterations = 59;
    s.episodes = 61;
    return s;
}

void check_same_header(const rl::AgentHeader& a, const rl::AgentHeader& b) {
    CHECK(a.rules == b.rules);
    CHECK(a.node_features == b.node_features);
    CHECK(a.env == b.env);
    CHECK(a.cost_backend == b.cost_backend);
    CHECK(a.target == b.target);
    CHECK(a.graphs == b.graphs);
    CHECK(a.seed == b.seed);
    CHECK(a.seconds == b.seconds);
}

/// NaN-aware equality of cost ratios (NaN: none yet).
bool same_ratios(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
    return true;
}

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A fresh directory under the temporary directory.
std::filesystem::path fresh_dir(const std::string& name) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("rlflow-agent-dir-test-" + name);
    std::filesystem::remove_all(dir);
    return dir;
}

/// Saves a small model-free agent of the built-in rules into `dir`.
rl::MfAgentState save_small_mf_agent(const std::filesystem::path& dir) {
    rl::MfAgentState s;
    s.rules = rl::rule_names(*rlflow::test::builtin());
    s.policy = {.latent = 4, .message_passing_steps = 1, .hidden = 8, .seed = 3, .gain_hidden = 4};
    s.graphs = {"two branches"};
    s.cost_backend = "analytic:cpu";
    rl::ActorCritic<Float> policy(static_cast<std::uint32_t>(s.rules.size()), static_cast<std::uint32_t>(s.env.max_locations), s.policy);
    rl::save_mf_agent<Float>(dir, s, policy.parameters(), nullptr);
    return s;
}

}  // namespace

TEST_CASE("every struct agent.json holds survives a JSON round trip, field by field") {
    const rl::MfAgentState mf = distinct_mf_state();
    CHECK(round_trip(mf.env) == mf.env);
    CHECK(round_trip(mf.policy) == mf.policy);
    CHECK(round_trip(mf.ppo) == mf.ppo);
    CHECK(round_trip(rl::Action{7, 9}) == rl::Action{7, 9});
    check_same_header(round_trip(static_cast<const rl::AgentHeader&>(mf)), mf);

    const rl::MfAgentState mf_back = round_trip(mf);
    check_same_header(mf_back, mf);
    CHECK(mf_back.policy == mf.policy);
    CHECK(mf_back.ppo == mf.ppo);
    CHECK(mf_back.updates == mf.updates);
    CHECK(mf_back.env_steps == mf.env_steps);
    CHECK(mf_back.episodes == mf.episodes);
    CHECK(mf_back.rng == mf.rng);  // all 64 bits of every word
    CHECK(mf_back.episode_actions == mf.episode_actions);
    CHECK(mf_back.episode_returns == mf.episode_returns);
    CHECK(same_ratios(mf_back.final_cost_ratio, mf.final_cost_ratio));
    CHECK(same_ratios(mf_back.best_cost_ratio, mf.best_cost_ratio));

    const rl::MbAgentState mb = distinct_mb_state();
    CHECK(round_trip(mb.model) == mb.model);
    CHECK(round_trip(mb.controller) == mb.controller);
    const rl::MbAgentState mb_back = round_trip(mb);
    check_same_header(mb_back, mb);
    CHECK(mb_back.model == mb.model);
    CHECK(mb_back.controller == mb.controller);
    CHECK(mb_back.temperature == mb.temperature);
    CHECK(mb_back.real_steps == mb.real_steps);
    CHECK(mb_back.dream_steps == mb.dream_steps);
    CHECK(mb_back.iterations == mb.iterations);
    CHECK(mb_back.episodes == mb.episodes);

    // Fields added within a format version may be missing from older files.
    nlohmann::json old = mf;
    old.erase("target");
    old.erase("final_cost_ratio");
    old.erase("best_cost_ratio");
    const auto from_old = old.get<rl::MfAgentState>();
    CHECK(from_old.target.empty());
    CHECK(from_old.final_cost_ratio.empty());
    CHECK(from_old.best_cost_ratio.empty());
}

TEST_CASE("either kind's directory is read by one header reader, and each kind's reader refuses the other, naming its search") {
    const std::filesystem::path mf_dir = fresh_dir("mf");
    const rl::MfAgentState mf = save_small_mf_agent(mf_dir);
    CHECK(rl::agent_kind(mf_dir) == rl::AgentKind::model_free);
    check_same_header(rl::read_agent_header(mf_dir), mf);
    const rl::MfAgent<Float> loaded(mf_dir);
    CHECK(loaded.policy.num_xfers() == mf.rules.size());
    CHECK(loaded.state.policy == mf.policy);

    const std::filesystem::path mb_dir = fresh_dir("mb");
    const rl::MbOptions o = rlflow::test::small_mb_options(5);
    rl::MbAgentState mb;
    mb.rules = mf.rules;
    mb.model = o.model;
    mb.controller = o.controller;
    mb.env = o.env;
    mb.cost_backend = "ort:cpu";
    mb.graphs = {"zoo:resnext50"};
    const auto xfers = static_cast<std::uint32_t>(mb.rules.size());
    rl::WorldModel<Float> model(xfers, mb.model);
    rl::Controller<Float> controller(xfers, mb.model.latent, mb.model.lstm_hidden, mb.controller);
    rl::save_mb_agent<Float>(mb_dir, mb, model, controller);
    CHECK(rl::agent_kind(mb_dir) == rl::AgentKind::model_based);
    check_same_header(rl::read_agent_header(mb_dir), mb);
    const rl::MbAgent<Float> mb_loaded(mb_dir);
    CHECK(mb_loaded.policy.num_xfers() == xfers);

    CHECK_THROWS_WITH_AS((void)rl::read_mb_agent_state(mf_dir), doctest::Contains("use --search mf"), checkpoint_error);
    CHECK_THROWS_WITH_AS((void)rl::read_mf_agent_state(mb_dir), doctest::Contains("use --search mb"), checkpoint_error);
    CHECK_THROWS_WITH_AS((void)rl::read_mf_agent_state(mb_dir), doctest::Contains(rl::agent_json_path(mb_dir).string().c_str()),
                         checkpoint_error);

    // Rules the library lacks are named.
    rewrite::RuleSet none;
    CHECK_THROWS_WITH_AS((void)rl::agent_rules(mf, none, mf_dir), doctest::Contains(("rule '" + mf.rules.front() + "'").c_str()), checkpoint_error);
    std::filesystem::remove_all(mf_dir);
    std::filesystem::remove_all(mb_dir);
}

TEST_CASE("a damaged agent.json is refused with the file and what is wrong: not JSON, not an agent, a missing field, a bad generator state") {
    const std::filesystem::path dir = fresh_dir("damaged");
    save_small_mf_agent(dir);
    const std::filesystem::path json = rl::agent_json_path(dir);
    const std::string good = read_text(json);
    // `header`: the header alone is damaged too, so the kind-blind reader refuses it as well.
    const auto refuses = [&](const std::string& text, const std::string& what, bool header = false) {
        std::ofstream(json, std::ios::trunc) << text;
        CAPTURE(what);
        CHECK_THROWS_WITH_AS((void)rl::read_mf_agent_state(dir), doctest::Contains(what.c_str()), checkpoint_error);
        CHECK_THROWS_WITH_AS((void)rl::read_mf_agent_state(dir), doctest::Contains(json.string().c_str()), checkpoint_error);
        if (header) CHECK_THROWS_WITH_AS((void)rl::read_agent_header(dir), doctest::Contains(what.c_str()), checkpoint_error);
    };
    refuses(good.substr(0, good.size() / 2), "damaged (not JSON)", true);
    refuses("{\"format\": \"something-else\"}", "not an rlflow agent", true);
    nlohmann::json j = nlohmann::json::parse(good);
    j["ppo"].erase("gamma");
    refuses(j.dump(), "gamma");
    j = nlohmann::json::parse(good);
    j["rng"] = {"1", "2", "3"};
    refuses(j.dump(), "has 3 words, not 4");
    j["rng"] = {"1", "2", "3", "x4"};
    refuses(j.dump(), "not 64-bit numbers ('x4')");
    j = nlohmann::json::parse(good);
    j["node_features"] = 3;
    refuses(j.dump(), "made for observations of 3 node features", true);
    // Put back, it reads again.
    std::ofstream(json, std::ios::trunc) << good;
    CHECK_NOTHROW((void)rl::read_mf_agent_state(dir));
    std::filesystem::remove_all(dir);
}
