// nn throughput on the CPU (Eigen backend, float32):
// - the graph network that encodes an observation, forward and backward, on the zoo's
//   ResNet-50 and BERT graphs (3 message-passing steps, latent 64). Items are graph
//   nodes, so items/s is nodes encoded and differentiated per second.
// - the backend's gemm primitive against a raw Eigen product of the same row-major
//   matrices, to show what the primitive's wrapping costs. "FLOPS" counts 2mnk per product.
// - one MDN-RNN step of a dream rollout, on the tape (no-grad) and on the frozen copies.

#include "eigen_baseline.hpp"

#include <rlflow/core/random.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/nn.hpp>
#include <rlflow/nn/graph_features.hpp>
#include <rlflow/nn/graph_net.hpp>
#include <rlflow/nn/lstm.hpp>
#include <rlflow/nn/mdn.hpp>

#include <Eigen/Core>
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace rlflow;
using Float = nn::backend::Eigen;

/// The encoder the agents use by default.
constexpr std::int64_t latent = 64;
constexpr int steps = 3;

/// One forward and backward pass of the graph network over a zoo graph per iteration.
void graph_network_forward_backward(benchmark::State& state, const std::string& model) {
    const nn::GraphBatch<Float> batch(nn::graph_features(models::build_zoo_model(model)));
    Rng rng(1);
    nn::GraphNetwork<Float> network("gnn", {.input = nn::graph_feature_sizes, .latent = latent, .steps = steps}, rng);
    for (auto _ : state) {
        nn::Tape<Float> tape;
        const nn::GraphVars<Float> out = network(tape, batch);
        const nn::Var<Float> loss = nn::add(nn::sum(out.globals), nn::add(nn::mean(out.nodes), nn::mean(out.edges)));
        tape.backward(loss);
        benchmark::DoNotOptimize(loss.value().data());
    }
    state.SetItemsProcessed(state.iterations() * batch.num_nodes());
    state.counters["nodes"] = static_cast<double>(batch.num_nodes());
    state.counters["edges"] = static_cast<double>(batch.num_edges());
}

using RowMajor = bench_support::RowMajorMatrix;

/// Counters shared by both gemm benchmarks: FLOPs and bytes of A, B and C per product.
void set_gemm_counters(benchmark::State& state, std::int64_t m, std::int64_t k, std::int64_t n) {
    const auto flops = static_cast<double>(2 * m * n * k);
    state.counters["FLOPS"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
    state.SetBytesProcessed(state.iterations() * (m * k + k * n + m * n) * static_cast<std::int64_t>(sizeof(float)));
}

/// C (m, n) = A (m, k) B (k, n) through nn::backend::Eigen::gemm.
void backend_gemm(benchmark::State& state) {
    const std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
    const RowMajor a = RowMajor::Random(m, k), b = RowMajor::Random(k, n);
    RowMajor c(m, n);
    for (auto _ : state) {
        Float::gemm(nn::Transpose::no, nn::Transpose::no, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n, 1, 0, 0, 0);
        benchmark::DoNotOptimize(c.data());
        benchmark::ClobberMemory();
    }
    set_gemm_counters(state, m, k, n);
}

/// The same product as a plain Eigen expression.
void eigen_gemm(benchmark::State& state) {
    const std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
    bench_support::time_eigen_product(state, m, k, n);
    set_gemm_counters(state, m, k, n);
}

/// (m, k, n): a batch of 64 rows, a square product, and one row against a wide matrix.
/// One world-model step as a dream rollout takes it: LSTM cell (hidden 256) on the latent,
/// the MDN head (K = 8) predicting the next latent, and a sample from it at temperature 1,
/// without gradients. state.range(0) is the batch.
void mdn_rnn_step(benchmark::State& state) {
    const std::int64_t batch = state.range(0);
    Rng rng(2);
    nn::LstmCell<Float> cell("rnn", latent, rng, 256);
    nn::MdnHead<Float> head("mdn", 256, latent, rng, 8);
    nn::Tape<Float> tape;
    const nn::NoGrad<Float> no_grad(tape);
    std::vector<float> z(static_cast<std::size_t>(batch * latent));
    for (float& v : z) v = static_cast<float>(rng.normal());
    nn::Tensor<Float> latent_now = nn::Tensor<Float>::from_host(Shape{batch, latent}, z);
    nn::Tensor<Float> h(Shape{batch, 256}), c(Shape{batch, 256});
    for (auto _ : state) {
        tape.clear();
        const nn::LstmState<Float> next =
            cell(tape, tape.constant(std::move(latent_now)), {tape.constant(std::move(h)), tape.constant(std::move(c))});
        latent_now = nn::MdnHead<Float>::sample(head(tape, next.h), 1.0, rng);
        h = next.h.value();
        c = next.c.value();
        benchmark::DoNotOptimize(latent_now.data());
    }
    state.SetItemsProcessed(state.iterations() * batch);
}

/// The same step on the frozen host copies a dream rollout uses (nn/inference.hpp): no
/// tape, transposed weights, and only the chosen components' means and stddevs computed.
void mdn_rnn_step_frozen(benchmark::State& state) {
    const std::int64_t batch = state.range(0);
    Rng rng(2);
    const nn::LstmCell<Float> cell("rnn", latent, rng, 256);
    const nn::MdnHead<Float> head("mdn", 256, latent, rng, 8);
    nn::FrozenLstmCell frozen_cell(cell);
    nn::FrozenMdnHead frozen_head(head);
    nn::HostMatrix z(batch, latent), h = nn::HostMatrix::Zero(batch, 256), c = nn::HostMatrix::Zero(batch, 256);
    for (std::int64_t i = 0; i < z.size(); ++i) z.data()[i] = static_cast<float>(rng.normal());
    for (auto _ : state) {
        frozen_cell.step(z, h, c);
        frozen_head.sample(h, 1.0, rng, z);
        benchmark::DoNotOptimize(z.data());
    }
    state.SetItemsProcessed(state.iterations() * batch);
}

void gemm_sizes(benchmark::internal::Benchmark* b) {
    b->ArgNames({"m", "k", "n"});
    b->Args({64, 256, 256});
    b->Args({256, 256, 256});
    b->Args({1, 256, 1024});
}

}  // namespace

BENCHMARK_CAPTURE(graph_network_forward_backward, resnet50, std::string("resnet50"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(graph_network_forward_backward, bert, std::string("bert"))->Unit(benchmark::kMillisecond);
BENCHMARK(mdn_rnn_step)->ArgName("batch")->Arg(1)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK(mdn_rnn_step_frozen)->ArgName("batch")->Arg(1)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK(backend_gemm)->Apply(gemm_sizes)->Unit(benchmark::kMicrosecond);
BENCHMARK(eigen_gemm)->Apply(gemm_sizes)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
