// ONNX import + fold + export throughput on the real PyTorch exports (the BERT-style
// 12-layer transformer encoder and Inception-v3), with their weights: the committed
// weight-free exports are given seeded random weights first. Bytes/s counts the
// serialised model once per round trip; "peak_rss_MiB" is the process's peak resident
// memory after the benchmark.
//
// Compare with Python: tools/bench_onnx_python.py times onnx.load + onnx.save on the
// same files (written by `rlflow weights`).

#include <rlflow/exec/random.hpp>
#include <rlflow/onnx/export.hpp>
#include <rlflow/onnx/import.hpp>
#include <rlflow/onnx/weights.hpp>

#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <sys/resource.h>

namespace {

using namespace rlflow;

constexpr double kib_per_mib = 1024.0;

/// The serialised export `name` (tests/data), with seeded random weights when `weights`.
const std::string& model_bytes(const std::string& name, bool weights) {
    static std::map<std::pair<std::string, bool>, std::string> cache;
    auto& bytes = cache[{name, weights}];
    if (!bytes.empty()) return bytes;
    const std::string path = std::string(RLFLOW_SOURCE_DIR) + "/tests/data/" + name;
    onnx_io::pb::ModelProto model = onnx_io::parse_model(onnx_io::read_file(path), path);
    if (weights) {
        onnx_io::ImportOptions options;
        options.data_inputs = {"input"};
        Graph g = onnx_io::import_model(model, options, path);
        exec::fill_random_weights(g, 1);
        onnx_io::attach_weights(model, g);
    }
    bytes = model.SerializeAsString();
    return bytes;
}

double peak_rss_mib() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / kib_per_mib;
}

/// parse -> import (fold) -> export -> serialise; `check` adds the ONNX checker and
/// strict shape inference on the exported model.
void round_trip(benchmark::State& state, const std::string& name, bool weights, bool check) {
    const std::string& bytes = model_bytes(name, weights);
    onnx_io::ExportOptions options;
    options.check = check;
    for (auto _ : state) {
        const Graph g = onnx_io::import_model(onnx_io::parse_model(bytes, name), {}, name);
        std::string out;
        onnx_io::export_model(g, options).SerializeToString(&out);
        benchmark::DoNotOptimize(out.data());
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes.size()));
    state.counters["model_MiB"] = static_cast<double>(bytes.size()) / (kib_per_mib * kib_per_mib);
    state.counters["peak_rss_MiB"] = peak_rss_mib();
}

void register_all() {
    for (const std::string name : {"transformer_op17.onnx", "inception_v3_op13.onnx"}) {
        for (const bool weights : {true, false}) {
            for (const bool check : {false, true}) {
                const std::string label = "onnx_round_trip/" + name + (weights ? "/weights" : "/weight_free")
                                          + (check ? "/checked" : "/unchecked");
                benchmark::RegisterBenchmark(label.c_str(), round_trip, name, weights, check)
                    ->Unit(benchmark::kMillisecond);
            }
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    register_all();
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
