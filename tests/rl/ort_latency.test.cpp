// OrtLatency (rl/ort_latency.hpp): whole graphs timed in ONNX Runtime, cached by their
// canonical form. Skipped where ONNX Runtime is not installed.
#include <rlflow/core/canonical.hpp>
#include <rlflow/core/graph.hpp>
#include <rlflow/exec/random.hpp>
#include <rlflow/rl/ort_latency.hpp>

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
Graph small_graph(bool add, int chain = 0) {
    Graph g;
    const TensorType t{DType::Float32, {side, side}};
    const NodeId x = g.add_input("x", t);
    const NodeId w = g.add_weight("w", t);
    NodeId y = g.add_node(OpKind::MatMul, {{x, 0}, {w, 0}});
    for (int i = 0; i < chain; ++i) y = g.add_node(OpKind::MatMul, {{y, 0}, {w, 0}});
    y = g.add_node(OpKind::Relu, {{y, 0}});
    if (add) y = g.add_node(OpKind::Add, {{y, 0}, {x, 0}});
    g.add_output({y, 0}, "y");  // rewrites keep graph output names: one interface
    exec::fill_random_weights(g, 1);
    return g;
}

}  // namespace

TEST_CASE("ORT latencies of whole graphs are measured once per canonical graph") {
    if (const auto why = cost::ort_unavailable_reason()) {
        MESSAGE("skipped: ", *why);
        return;
    }
    cost::OrtWorker worker;
    rl::OrtLatencyOptions options;
    options.runs = 5;
    options.sessions = 2;
    rl::OrtLatency latency(worker, options);
    CHECK(latency.name().starts_with("ort-latency:"));
    CHECK(latency.name().ends_with(":basic:t1"));
    const double plain = latency(small_graph(false));
    CHECK(plain > 0);
    CHECK(latency.measured() == 1);
    // The same graph built again (other node ids, same canonical form) is not timed again.
    CHECK(latency(small_graph(false)) == plain);
    CHECK(latency.measured() == 1);
    CHECK(latency.cache_hits() == 1);
    const double added = latency(small_graph(true));
    CHECK(added > 0);
    CHECK(latency.measured() == 2);
    // Both have one interface: the faster is kept, and the first timed is the start.
    const rl::OrtLatency::Fastest* fastest = latency.fastest(rl::OrtLatency::interface_key(small_graph(false)));
    REQUIRE(fastest != nullptr);
    CHECK(fastest->first_ms == plain);
    CHECK(std::filesystem::exists(fastest->file));  // the reference later graphs are timed against
    CHECK(fastest->ms == std::min(plain, added));
    CHECK(canonical_hash(fastest->graph) == canonical_hash(small_graph(added < plain)));
    CHECK(latency.fastest("no such interface") == nullptr);
    // The timeline: both graphs in the order timed, the start first, each with its hash and time.
    const auto& timeline = latency.timeline();
    REQUIRE(timeline.size() == 2);
    CHECK(timeline[0].hash == canonical_hash(small_graph(false)));
    CHECK(timeline[0].ms == plain);
    CHECK(timeline[0].reference_ms == plain);
    CHECK(timeline[1].hash == canonical_hash(small_graph(true)));
    CHECK(timeline[1].ms == added);
    CHECK(timeline[1].reference_ms == plain);
    CHECK(timeline[1].interface == timeline[0].interface);
    CHECK(timeline[0].seconds <= timeline[1].seconds);
    CHECK(fastest->timed.hash == canonical_hash(fastest->graph));
    CHECK(fastest->timed.seconds == timeline[added < plain ? 1 : 0].seconds);
    // Timed again on request, outside the cache and the count.
    CHECK(latency.confirm(rl::OrtLatency::interface_key(small_graph(false)), 3, 1) > 0);
    CHECK(latency.measured() == 2);
}

TEST_CASE("ORT latencies of later graphs are the reference's times a paired ratio") {
    if (const auto why = cost::ort_unavailable_reason()) {
        MESSAGE("skipped: ", *why);
        return;
    }
    cost::OrtWorker worker;
    rl::OrtLatencyOptions options;
    options.runs = 7;
    options.sessions = 1;
    rl::OrtLatency latency(worker, options);
    const double reference = latency(small_graph(false));
    // Sixteen more products of the same size: far more than twice the work of one product,
    // a Relu and the call, so the paired ratio stays above 2 on a noisy machine too.
    constexpr int extra_products = 16;
    constexpr double least_ratio = 2;
    const double heavy = latency(small_graph(false, extra_products));
    CHECK(heavy > least_ratio * reference);
    CHECK(latency.measured() == 2);
    const rl::OrtLatency::Fastest* fastest = latency.fastest(rl::OrtLatency::interface_key(small_graph(false)));
    REQUIRE(fastest != nullptr);
    CHECK(fastest->ms == reference);  // the heavy graph did not displace the start
    CHECK(latency.confirm(rl::OrtLatency::interface_key(small_graph(false)), 3, 1) == 1.0);  // nothing faster to confirm
}
