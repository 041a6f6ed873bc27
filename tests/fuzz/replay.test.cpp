// The fuzz targets (targets.hpp) on the regression corpus (tests/fuzz/corpus/TARGET/*:
// inputs that once broke a reader, kept after the fix) and on damaged copies of real
// files: every prefix of a file (a write cut short) and seeded bit flips. Each reader
// either reads its input or throws one of rlflow's own errors; a crash, another exception
// or a broken promise fails the suite.
#include "targets.hpp"

#include <rlflow/nn/backend/eigen.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace {

std::string read_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const rlflow::fuzz::Target& target(const std::string& name) {
    for (const rlflow::fuzz::Target& t : rlflow::fuzz::targets())
        if (name == t.name) return t;
    FAIL("no fuzz target " << name);
    return rlflow::fuzz::targets().front();
}

int run(const std::string& name, const std::string& bytes) {
    return target(name).run(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

/// Runs `name` on every prefix of `bytes` (at `steps` evenly spaced lengths) and on `flips`
/// copies with one seeded random byte changed; returns how many inputs it ran.
std::size_t damage(const std::string& name, const std::string& bytes, std::size_t steps, std::size_t flips) {
    std::size_t runs = 0;
    for (std::size_t k = 0; k <= steps; ++k, ++runs) CHECK(run(name, bytes.substr(0, bytes.size() * k / steps)) == 0);
    std::mt19937_64 random(7);
    for (std::size_t k = 0; k < flips && !bytes.empty(); ++k, ++runs) {
        std::string copy = bytes;
        copy[random() % copy.size()] = static_cast<char>(random());
        CHECK(run(name, copy) == 0);
    }
    return runs;
}

const std::filesystem::path source_dir = RLFLOW_SOURCE_DIR;

}  // namespace

TEST_CASE("the regression corpus of every fuzz target is read or refused with rlflow's errors") {
    std::size_t replayed = 0;
    for (const rlflow::fuzz::Target& t : rlflow::fuzz::targets()) {
        const std::filesystem::path dir = source_dir / "tests/fuzz/corpus" / t.name;
        if (!std::filesystem::is_directory(dir)) continue;
        for (const auto& entry : std::filesystem::directory_iterator(dir)) {
            CAPTURE(entry.path().string());
            const std::string bytes = read_bytes(entry.path());
            CHECK(t.run(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()) == 0);
            ++replayed;
        }
    }
    CHECK(rlflow::fuzz::targets().size() == 9);
    if (replayed == 0) MESSAGE("skipped: the regression corpus (tests/fuzz/corpus/TARGET/) is empty");
}

TEST_CASE("models cut short or with a byte changed are imported, exported and imported again, or refused") {
    const std::string model = read_bytes(source_dir / "tests/data/opaque/conv_sin_branches.onnx");
    REQUIRE(model.size() > 100);
    for (const char* name : {"onnx_import", "onnx_import_nofold", "onnx_roundtrip"}) {
        CAPTURE(name);
        CHECK(damage(name, model, 64, 64) == 65 + 64);
    }
    // The intact model is read: its round trip keeps its promise.
    CHECK(run("onnx_roundtrip", model) == 0);
}

TEST_CASE("a model of typed ops cut short or with a byte changed runs, or is refused with one of rlflow's errors") {
    const std::string model = read_bytes(source_dir / "tests/data/ops/typed_mask.onnx");
    REQUIRE(model.size() > 100);
    CHECK(damage("onnx_run", model, 64, 128) == 65 + 128);
    CHECK(run("onnx_run", model) == 0);
}

TEST_CASE("rule files cut short or with a byte changed are parsed or refused, and what parses prints and parses again") {
    const std::string text = read_bytes(source_dir / "tests/data/rules/matrix_k2.rules");
    REQUIRE(text.size() > 100);
    CHECK(damage("rule_text", text, 64, 128) == 65 + 128);
    // The intact file parses (to_text and back are checked inside the target).
    REQUIRE(!rlflow::rewrite::parse_rules_text(text, "matrix_k2.rules").empty());
    const std::string binary = rlflow::rewrite::serialize_rules(rlflow::rewrite::parse_rules_text(text, "matrix_k2.rules"));
    CHECK(damage("rule_binary", binary, 64, 128) == 65 + 128);
}

TEST_CASE("checkpoints, cost caches and tensor files cut short or with a byte changed are refused or read") {
    // A small checkpoint and a tensor file, written here by the code that writes them.
    using Cpu = rlflow::nn::backend::Eigen;
    rlflow::nn::Parameter<Cpu> weight("w", rlflow::nn::Tensor<Cpu>(rlflow::Shape{3, 4}, 0.5F));
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "rlflow-fuzz-replay";
    std::filesystem::create_directories(dir);
    rlflow::nn::save_checkpoint(dir / "w.ckpt", std::vector<rlflow::nn::Parameter<Cpu>*>{&weight});
    const std::string checkpoint = read_bytes(dir / "w.ckpt");
    CHECK(damage("checkpoint", checkpoint, 32, 64) == 33 + 64);
    CHECK(damage("cost_cache", checkpoint, 8, 8) == 9 + 8);  // not a cache: ignored
    const rlflow::Tensor t(rlflow::Shape{2, 3});
    const std::string tensor = rlflow::onnx_io::tensor_to_proto(t, "t").SerializeAsString();
    CHECK(damage("tensor_pb", tensor, 16, 64) == 17 + 64);
    std::filesystem::remove_all(dir);
}

TEST_CASE("a tensor whose dimensions multiply past a 64-bit count is refused by name, not overflowed") {
    rlflow::onnx_io::pb::TensorProto t;
    t.set_name("huge");
    t.set_data_type(static_cast<int>(rlflow::DType::Float32));
    constexpr std::int64_t big = std::int64_t{1} << 40;
    t.add_dims(big);
    t.add_dims(big);
    CHECK_THROWS_WITH_AS(static_cast<void>(rlflow::onnx_io::tensor_from_proto(t, "huge.pb")),
                         doctest::Contains("'huge' claims more elements than a 64-bit count holds"), rlflow::onnx_error);
    // Elements that fit, bytes that do not (2^62 float32 elements).
    t.clear_dims();
    t.add_dims(std::int64_t{1} << 62);
    CHECK_THROWS_WITH_AS(static_cast<void>(rlflow::onnx_io::tensor_from_proto(t, "huge.pb")),
                         doctest::Contains("claims more bytes than a 64-bit count holds"), rlflow::onnx_error);
    // The input fuzzing found (tests/fuzz/corpus/tensor_pb): refused the same way.
    rlflow::onnx_io::pb::TensorProto found;
    REQUIRE(found.ParseFromString(read_bytes(source_dir / "tests/fuzz/corpus/tensor_pb/dims_overflow.pb")));
    CHECK_THROWS_AS(static_cast<void>(rlflow::onnx_io::tensor_from_proto(found, "dims_overflow.pb")), rlflow::onnx_error);
}
