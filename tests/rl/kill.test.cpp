// Crash safety: a writer process that saves an agent checkpoint, a cost cache and an output
// model, generation after generation, is killed with SIGKILL at random points, 1,000 times.
// After every kill, each file that exists loads intact and holds one whole generation (never
// a mix of two, never a partial file), no file goes back to an older generation, and the
// next writer continues from what is on disk. The training-level check (a killed
// `rlflow train` resumes from its last checkpoint) is in tests/cli/train.test.cpp.
#include <rlflow/cost/analytic.hpp>
#include <rlflow/cost/cost_model.hpp>
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/onnx/export.hpp>
#include <rlflow/onnx/import.hpp>
#include <rlflow/rl/model_free/agent_file.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace rlflow;
namespace fs = std::filesystem;
using B = nn::backend::Eigen;

namespace {

constexpr std::int64_t agent_side = 64;   // a 64x64 parameter: 16 KiB of weights per save
constexpr std::int64_t model_side = 128;  // a 128x128 weight: 64 KiB per model
constexpr std::int64_t features = 8;

struct Files {
    fs::path agent, cache, model;
};

/// The agent of generation `g`: every weight is g, and so is the update count.
void save_agent_generation(const fs::path& dir, std::size_t g) {
    nn::Parameter<B> a("a", nn::Tensor<B>(Shape{agent_side, agent_side}, static_cast<float>(g)));
    nn::Parameter<B> b("b", nn::Tensor<B>(Shape{agent_side}, static_cast<float>(g)));
    rl::MfAgentState state;
    state.updates = g;
    state.graphs = {"generation"};
    rl::save_mf_agent<B>(dir, state, {&a, &b}, nullptr);
}

/// A Relu on [1, k]: one cost-cache entry per k.
Graph relu_of_width(std::int64_t k) {
    Graph g;
    const NodeId x = g.add_input("x", {DType::Float32, Shape{1, k}});
    g.add_output({g.add_node(OpKind::Relu, {{x, 0}}), 0});
    return g;
}

/// The model of generation `g`: named after it, its weight all g.
Graph model_generation(std::size_t g) {
    Graph graph;
    const TensorType w_type{DType::Float32, Shape{model_side, model_side}};
    const NodeId x = graph.add_input("x", {DType::Float32, Shape{features, model_side}});
    const auto values = static_cast<std::size_t>(model_side * model_side);
    const NodeId w = graph.add_weight(
        "w", w_type, std::make_shared<const Tensor>(Tensor::from_floats(w_type.shape, std::vector<float>(values, static_cast<float>(g)))));
    graph.add_output({graph.add_node(OpKind::MatMul, {{x, 0}, {w, 0}}), 0});
    graph.info().graph_name = "generation " + std::to_string(g);
    return graph;
}

/// What a file holds after a kill: its generation (0: no file yet). Fails the test if the
/// file does not load or mixes generations.
std::size_t agent_generation(const fs::path& dir) {
    if (!fs::exists(rl::agent_json_path(dir))) return 0;
    const rl::MfAgentState state = rl::read_mf_agent_state(dir);
    nn::Parameter<B> a("a", nn::Tensor<B>(Shape{agent_side, agent_side}));
    nn::Parameter<B> b("b", nn::Tensor<B>(Shape{agent_side}));
    rl::load_agent_weights<B>(dir, {&a, &b});
    const auto is_generation = [&](float v) { return v == static_cast<float>(state.updates); };
    for (const nn::Parameter<B>* p : {&a, &b}) REQUIRE(std::ranges::all_of(p->value.to_host(), is_generation));
    return state.updates;
}

std::size_t cache_generation(const fs::path& file) {
    if (!fs::exists(file)) return 0;
    cost::CostModel<cost::AnalyticBackend> model;
    REQUIRE(model.load_cache(file));
    return model.cache_size();
}

std::size_t model_generation_of(const fs::path& file) {
    if (!fs::exists(file)) return 0;
    const Graph g = onnx_io::load_onnx(file);
    const std::string& name = g.info().graph_name;
    REQUIRE(name.starts_with("generation "));
    const std::size_t generation = std::stoul(name.substr(std::string("generation ").size()));
    for (const Node& n : g.nodes())
        if (n.op == OpKind::Weight) {
            REQUIRE(n.data != nullptr);
            REQUIRE(std::ranges::all_of(n.data->floats(), [&](float v) { return v == static_cast<float>(generation); }));
        }
    return generation;
}

/// The writer: continues from what is on disk, generation after generation, until killed,
/// or until it has written `generations` of them (0: no end), when it exits with 0.
[[noreturn]] void writer(const Files& f, std::size_t generations = 0) {
    try {
        cost::CostModel<cost::AnalyticBackend> cache;
        cache.load_cache(f.cache);
        const std::size_t first = std::max({agent_generation(f.agent), cache.cache_size(), model_generation_of(f.model)}) + 1;
        for (std::size_t g = first; generations == 0 || g < first + generations; ++g) {
            save_agent_generation(f.agent, g);
            while (cache.cache_size() < g) static_cast<void>(cache.graph_cost(relu_of_width(static_cast<std::int64_t>(cache.cache_size()) + 1)));
            cache.save_cache(f.cache);
            onnx_io::save_onnx(model_generation(g), f.model);
        }
    } catch (...) {
        std::_Exit(3);
    }
    std::_Exit(0);
}

/// How long a writer takes from its start to its first generation's last write, here and
/// now: measured on a scratch copy of the files, so that the kills below can land
/// anywhere in the first few generations on a fast machine or a sanitizer build alike.
std::chrono::microseconds one_generation_time(const fs::path& scratch) {
    fs::create_directories(scratch);
    const Files f{scratch / "agent", scratch / "prices.bin", scratch / "out.onnx"};
    const auto start = std::chrono::steady_clock::now();
    const ::pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) writer(f, 1);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), "the calibrating writer failed");
    const auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
    fs::remove_all(scratch);
    return took;
}

std::size_t temporaries(const fs::path& dir) {
    std::size_t n = 0;
    for (const auto& entry : fs::recursive_directory_iterator(dir))
        if (entry.path().filename().string().find(".tmp.") != std::string::npos) ++n;
    return n;
}

std::size_t kills_from_environment() {
    constexpr std::size_t kills = 1000;
    const char* asked = std::getenv("RLFLOW_KILLS");
    return asked ? std::stoul(asked) : kills;
}

}  // namespace

TEST_CASE("a writer killed 1,000 times at random points leaves every file whole, never older, and the next one continues") {
    const fs::path dir = fs::temp_directory_path() / ("rlflow-kill-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const Files f{dir / "agent", dir / "prices.bin", dir / "out.onnx"};
    std::mt19937_64 random(11);
    // Kills land anywhere from before the first write to a few generations in: up to three
    // times a writer's start and first generation, and 30 ms at least.
    constexpr std::chrono::microseconds least_window{30000};
    constexpr int generations_in_window = 3;
    const auto window = std::max(least_window, generations_in_window * one_generation_time(dir / "calibration"));
    std::uniform_int_distribution<std::int64_t> delay_us(0, window.count());
    std::size_t agent = 0, cache = 0, model = 0, mid_write = 0;
    const std::size_t kills = kills_from_environment();
    for (std::size_t k = 0; k < kills; ++k) {
        const ::pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) writer(f);
        std::this_thread::sleep_for(std::chrono::microseconds(delay_us(random)));
        ::kill(pid, SIGKILL);
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        // Killed, not failed: a writer that threw would have exited with 3.
        REQUIRE_MESSAGE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL), "kill " << k << ": the writer stopped by itself");
        CAPTURE(k);
        const std::size_t a = agent_generation(f.agent), c = cache_generation(f.cache), m = model_generation_of(f.model);
        CHECK(a >= agent);
        CHECK(c >= cache);
        CHECK(m >= model);
        agent = a, cache = c, model = m;
        if (temporaries(dir) > 0 || fs::exists(rl::agent_next_weights_path(f.agent))) ++mid_write;
    }
    MESSAGE("after " << kills << " kills within " << window.count() / 1000 << " ms of each start: agent generation " << agent << ", cache " << cache << ", model " << model << "; "
                     << mid_write << " kills left a write unfinished");
    // The kills went on while the writers made progress, and many cut a write short.
    CHECK(model > kills / 10);
    CHECK(mid_write > kills / 10);
    // One writer that ends normally: its writes remove the dead writers' temporaries.
    save_agent_generation(f.agent, agent + 1);
    cost::CostModel<cost::AnalyticBackend> prices;
    prices.load_cache(f.cache);
    prices.save_cache(f.cache);
    onnx_io::save_onnx(model_generation(model + 1), f.model);
    CHECK(temporaries(dir) == 0);
    CHECK(agent_generation(f.agent) == agent + 1);
    fs::remove_all(dir);
}
