// OrtLatency (cost/ort_latency.hpp): whole graphs timed in ONNX Runtime, cached by their
// canonical form. Skipped where ONNX Runtime is not installed.
#include <rlflow/core/canonical.hpp>
#include <rlflow/onnx/export.hpp>
#include <rlflow/onnx/model_hash.hpp>
#include <rlflow/core/graph.hpp>
#include <rlflow/exec/random.hpp>
#include <rlflow/cost/ort_latency.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <vector>

using namespace rlflow;

namespace {

/// Matrices of the small graphs are side x side.
constexpr std::int64_t side = 64;

/// y = Relu(x W) or, with `add`, y = Relu(x W) + x: two graphs of different latency.
/// With `chain` > 0, y is multiplied by W `chain` more times first.
Graph small_graph(bool add, int chain = 0, const char* weight = "w") {
    Graph g;
    const TensorType t{DType::Float32, {side, side}};
    const NodeId x = g.add_input("x", t);
    const NodeId w = g.add_weight(weight, t);
    NodeId y = g.add_node(OpKind::MatMul, {{x, 0}, {w, 0}});
    for (int i = 0; i < chain; ++i) y = g.add_node(OpKind::MatMul, {{y, 0}, {w, 0}});
    y = g.add_node(OpKind::Relu, {{y, 0}});
    if (add) y = g.add_node(OpKind::Add, {{y, 0}, {x, 0}});
    g.add_output({y, 0}, "y");  // rewrites keep graph output names: one interface
    exec::fill_random_weights(g, 1);
    return g;
}

/// The hash OrtLatency keys its latencies by: the model as written.
std::uint64_t model_hash(const Graph& g) { return onnx_io::model_structure_hash(onnx_io::export_model(g)); }

}  // namespace

TEST_CASE("ORT latencies of whole graphs are measured once per written model") {
    if (const auto why = cost::ort_unavailable_reason()) {
        MESSAGE("skipped: ", *why);
        return;
    }
    cost::OrtWorker worker;
    cost::OrtLatencyOptions options;
    options.runs = 5;
    options.sessions = 2;
    cost::OrtLatency latency(worker, options);
    CHECK(latency.name().starts_with("ort-latency:"));
    CHECK(latency.name().ends_with(":basic:t1"));
    const double plain = latency(small_graph(false));
    CHECK(plain > 0);
    CHECK(latency.measured() == 1);
    // The same graph built again (other node ids, same canonical form) is not timed again.
    CHECK(latency(small_graph(false)) == plain);
    CHECK(latency.measured() == 1);
    CHECK(latency.cache_hits() == 1);
    // Nor is a graph of another canonical form that writes the same model: the same values
    // under another weight name.
    Graph renamed = small_graph(false, 0, "kernel");
    const Graph original = small_graph(false);
    renamed.set_weight_data(renamed.weights().front(), original.node(original.weights().front()).data);
    REQUIRE_FALSE(canonical_form(renamed) == canonical_form(original));
    CHECK(latency(renamed) == plain);
    CHECK(latency.measured() == 1);
    CHECK(latency.cache_hits() == 2);
    const double added = latency(small_graph(true));
    CHECK(added > 0);
    CHECK(latency.measured() == 2);
    // Both have one interface: the faster is kept, and the first timed is the start.
    const cost::OrtLatency::Fastest* fastest = latency.fastest(cost::OrtLatency::interface_key(small_graph(false)));
    REQUIRE(fastest != nullptr);
    CHECK(fastest->first_ms == plain);
    CHECK(std::filesystem::exists(fastest->file));  // the reference later graphs are timed against
    CHECK(fastest->ms == std::min(plain, added));
    CHECK(canonical_hash(fastest->graph) == canonical_hash(small_graph(added < plain)));
    CHECK(latency.fastest("no such interface") == nullptr);
    // The timeline: both graphs in the order timed, the start first, each with its hash and time.
    const auto& timeline = latency.timeline();
    REQUIRE(timeline.size() == 2);
    CHECK(timeline[0].hash == model_hash(small_graph(false)));
    CHECK(timeline[0].ms == plain);
    CHECK(timeline[0].reference_ms == plain);
    CHECK(timeline[1].hash == model_hash(small_graph(true)));
    CHECK(timeline[1].ms == added);
    CHECK(timeline[1].reference_ms == plain);
    CHECK(timeline[1].interface == timeline[0].interface);
    CHECK(timeline[0].seconds <= timeline[1].seconds);
    CHECK(fastest->timed.hash == model_hash(fastest->graph));
    CHECK(fastest->timed.seconds == timeline[added < plain ? 1 : 0].seconds);
    // Timed again on request, outside the cache and the count.
    CHECK(latency.confirm(cost::OrtLatency::interface_key(small_graph(false)), 3, 1) > 0);
    CHECK(latency.measured() == 2);
}

TEST_CASE("ORT latencies of later graphs are the reference's times a paired ratio") {
    if (const auto why = cost::ort_unavailable_reason()) {
        MESSAGE("skipped: ", *why);
        return;
    }
    cost::OrtWorker worker;
    cost::OrtLatencyOptions options;
    options.runs = 7;
    options.sessions = 1;
    cost::OrtLatency latency(worker, options);
    const double reference = latency(small_graph(false));
    // 64 more products of the same size: far more than twice the work of one product, a
    // Relu and the call (about 80 us of ORT's overhead per run here, which 16 more
    // products, at 1.8x, did not clear on a slow day), so the paired ratio stays above 2
    // on a noisy machine too.
    constexpr int extra_products = 64;
    constexpr double least_ratio = 2;
    const double heavy = latency(small_graph(false, extra_products));
    CHECK(heavy > least_ratio * reference);
    CHECK(latency.measured() == 2);
    const cost::OrtLatency::Fastest* fastest = latency.fastest(cost::OrtLatency::interface_key(small_graph(false)));
    REQUIRE(fastest != nullptr);
    CHECK(fastest->ms == reference);  // the heavy graph did not displace the start
    CHECK(latency.confirm(cost::OrtLatency::interface_key(small_graph(false)), 3, 1) == 1.0);  // nothing faster to confirm
}

TEST_CASE("ORT latencies add sessions until the sign test decides, up to max_sessions") {
    if (const auto why = cost::ort_unavailable_reason()) {
        MESSAGE("skipped: ", *why);
        return;
    }
    cost::OrtWorker worker;
    cost::OrtLatencyOptions options{.runs = 7, .sessions = 1, .max_sessions = 4, .warm_process = false};
    const auto sessions_for_heavy = [&](double significance) {
        options.significance = significance;
        cost::OrtLatency latency(worker, options);
        (void)latency(small_graph(false));
        const std::size_t before = latency.sessions_run();
        const double ratio = latency(small_graph(false, 64)) / latency(small_graph(false));
        CHECK(ratio > 2);  // as in the case above: far slower than the start
        return latency.sessions_run() - before;
    };
    // 7 of 7 paired runs slower: p = 1/128, decided after the first session.
    CHECK(sessions_for_heavy(0.05) == 1);
    // At a significance no 28 runs can reach, every session up to the most is run.
    CHECK(sessions_for_heavy(1e-12) == 4);
}
