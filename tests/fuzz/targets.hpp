#pragma once
// The fuzz targets: one entry point per reader of files users did not write. Each takes
// arbitrary bytes and either reads them or throws one of rlflow's own errors; anything
// else (another exception, a crash, a sanitizer report, unbounded memory, a hang) is a
// finding. libFuzzer drives them (tests/fuzz/fuzz_main.cpp, RLFLOW_FUZZ=ON, clang), and
// the normal suite replays tests/fuzz/corpus/TARGET/* through them (replay.test.cpp).
//
// Beyond not crashing, the targets check what a reader promises:
// - an imported model exports, and the export imports again;
// - an imported model of core ops runs, or refuses to with one of rlflow's errors;
// - rule text that parses prints (to_text) as text that parses to the same rules;
// - binary rules that load serialize back to bytes that load to the same rules.

#include <rlflow/core/error.hpp>
#include <rlflow/core/memory.hpp>
#include <rlflow/core/statistics.hpp>
#include <rlflow/cost/analytic.hpp>
#include <rlflow/cost/cost_model.hpp>
#include <rlflow/exec/executor.hpp>
#include <rlflow/exec/random.hpp>
#include <rlflow/nn/serialize.hpp>
#include <rlflow/onnx/export.hpp>
#include <rlflow/onnx/import.hpp>
#include <rlflow/onnx/tensor_io.hpp>
#include <rlflow/rewrite/rule_file.hpp>
#include <rlflow/rewrite/rule_text.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace rlflow::fuzz {

/// The bytes as a string.
inline std::string bytes_of(const std::uint8_t* data, std::size_t size) { return {reinterpret_cast<const char*>(data), size}; }

/// Stops the process so that the fuzzer records the input: a promise of a reader broke.
[[noreturn]] inline void broken(const char* promise) {
    std::fprintf(stderr, "fuzz: broken promise: %s\n", promise);
    std::abort();
}

/// Runs `read`; rlflow's own errors are the expected answer to bad bytes.
template <class Read>
int guarded(Read&& read) {
    try {
        read();
    } catch (const rlflow::error&) {
    }
    return 0;
}

/// ONNX import, with constant folding (`fold`) or without.
inline int onnx_import(const std::uint8_t* data, std::size_t size, bool fold) {
    return guarded([&] {
        const onnx_io::pb::ModelProto model = onnx_io::parse_model(bytes_of(data, size), "fuzz.onnx");
        onnx_io::ImportOptions options;
        options.fold_constants = fold;
        static_cast<void>(onnx_io::import_model(model, options, "fuzz.onnx"));
    });
}

/// ONNX import, then export, then import of the export, which must succeed.
inline int onnx_roundtrip(const std::uint8_t* data, std::size_t size) {
    return guarded([&] {
        const onnx_io::pb::ModelProto model = onnx_io::parse_model(bytes_of(data, size), "fuzz.onnx");
        const Graph g = onnx_io::import_model(model, {}, "fuzz.onnx");
        const onnx_io::pb::ModelProto written = onnx_io::export_model(g);
        try {
            static_cast<void>(onnx_io::import_model(written, {}, "exported.onnx"));
        } catch (const rlflow::error& e) {
            std::fprintf(stderr, "%s\n", e.what());
            broken("a model rlflow exported imports again");
        }
    });
}

/// The largest activation memory a model may need for onnx_run to run it.
inline constexpr std::int64_t run_memory_limit_bytes = std::int64_t{64} << 20;

/// ONNX import, then, where every node is a core op and the run fits in
/// run_memory_limit_bytes, the reference executor on seeded random inputs (the typed
/// ops' kernels: indices, masks and casts from the file).
inline int onnx_run(const std::uint8_t* data, std::size_t size) {
    return guarded([&] {
        const onnx_io::pb::ModelProto model = onnx_io::parse_model(bytes_of(data, size), "fuzz.onnx");
        Graph g = onnx_io::import_model(model, {}, "fuzz.onnx");
        if (graph_statistics(g).opaque_nodes > 0) return;
        const MemoryProfile memory = memory_profile(g);
        if (memory.peak_activation_bytes + memory.weight_bytes > run_memory_limit_bytes) return;
        exec::fill_random_weights(g, 1);
        static_cast<void>(exec::Executor{}.run(g, exec::random_inputs(g, 2)));
    });
}

/// The rule text parser; what parses prints as text that parses to the same rules.
inline int rule_text(const std::uint8_t* data, std::size_t size) {
    return guarded([&] {
        const std::vector<rewrite::Rule> rules = rewrite::parse_rules_text(bytes_of(data, size), "fuzz.rules");
        const std::string printed = rewrite::to_text(rules);
        if (rewrite::to_text(rewrite::parse_rules_text(printed, "printed.rules")) != printed)
            broken("rule text that parses prints as text that parses to the same rules");
    });
}

/// The binary rule file loader; what loads serializes to bytes that load to the same rules.
inline int rule_binary(const std::uint8_t* data, std::size_t size) {
    return guarded([&] {
        const std::vector<rewrite::Rule> rules = rewrite::deserialize_rules(bytes_of(data, size), "fuzz.pb");
        const std::string written = rewrite::serialize_rules(rules);
        if (rewrite::to_text(rewrite::deserialize_rules(written, "written.pb")) != rewrite::to_text(rules))
            broken("binary rules that load serialize to bytes that load to the same rules");
    });
}

/// The checkpoint decoder (every check load_checkpoint makes before it changes anything).
inline int checkpoint(const std::uint8_t* data, std::size_t size) {
    return guarded([&] { static_cast<void>(nn::detail::decode_checkpoint("fuzz.ckpt", bytes_of(data, size))); });
}

/// The cost-cache loader, which reads a file: bad files are ignored, never trusted.
inline int cost_cache(const std::uint8_t* data, std::size_t size) {
    static const std::filesystem::path file =
        std::filesystem::temp_directory_path() / ("rlflow-fuzz-cache-" + std::to_string(::getpid()) + ".bin");
    {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    return guarded([&] {
        cost::CostModel<cost::AnalyticBackend> model;
        static_cast<void>(model.load_cache(file));
    });
}

/// ONNX TensorProto (.pb) files, as the conformance data holds them.
inline int tensor_pb(const std::uint8_t* data, std::size_t size) {
    return guarded([&] {
        onnx_io::pb::TensorProto t;
        if (!t.ParseFromString(bytes_of(data, size))) return;
        static_cast<void>(onnx_io::tensor_from_proto(t, "fuzz.pb"));
    });
}

/// A target by name.
struct Target {
    const char* name;
    int (*run)(const std::uint8_t*, std::size_t);
};

inline const std::vector<Target>& targets() {
    static const std::vector<Target> all{
        {"onnx_import", [](const std::uint8_t* d, std::size_t n) { return onnx_import(d, n, true); }},
        {"onnx_import_nofold", [](const std::uint8_t* d, std::size_t n) { return onnx_import(d, n, false); }},
        {"onnx_roundtrip", onnx_roundtrip},
        {"onnx_run", onnx_run},
        {"rule_text", rule_text},
        {"rule_binary", rule_binary},
        {"checkpoint", checkpoint},
        {"cost_cache", cost_cache},
        {"tensor_pb", tensor_pb},
    };
    return all;
}

}  // namespace rlflow::fuzz
