// Checkpoints: exact round trips of parameters and Adam state, training that continues
// identically after a reload, every kind of corrupt or mismatched file rejected with a
// message naming the file and the fault (and nothing loaded), and atomic saving.
#include <rlflow/core/error.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn.hpp>
#include <rlflow/nn/optim.hpp>
#include <rlflow/nn/serialize.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <iterator>
#include <string>
#include <system_error>
#include <unistd.h>
#include <vector>

using namespace rlflow;
namespace nn = rlflow::nn;
namespace fs = std::filesystem;
using Float = nn::backend::Eigen;
using Double = nn::backend::EigenDouble;

namespace {

/// A fresh directory, removed with everything in it at the end of the test.
class TemporaryDirectory {
public:
    explicit TemporaryDirectory(const std::string& tag)
        : m_path(fs::temp_directory_path() / ("rlflow_serialize_" + tag + "_" + std::to_string(::getpid()))) {
        fs::remove_all(m_path);
        fs::create_directories(m_path);
    }
    ~TemporaryDirectory() {
        std::error_code ignored;  // best-effort cleanup; a leftover directory fails no test
        fs::remove_all(m_path, ignored);
    }
    TemporaryDirectory(const TemporaryDirectory&) = delete;
    TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
    [[nodiscard]] fs::path operator/(const std::string& name) const { return m_path / name; }
    [[nodiscard]] std::vector<std::string> entries() const {
        std::vector<std::string> names;
        for (const auto& e : fs::directory_iterator(m_path)) names.push_back(e.path().filename().string());
        std::sort(names.begin(), names.end());
        return names;
    }

private:
    fs::path m_path;
};

std::string read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
    REQUIRE(out);
}

/// A small model with an optimiser: an MLP with a layer-normalised output.
struct Model {
    nn::Mlp<Float> mlp;
    nn::Adam<Float> adam;
    explicit Model(std::uint64_t seed) : mlp(make(seed)), adam(mlp.parameters(), {.learning_rate = nn::LearningRateSchedule::constant(0.01)}) {}
    static nn::Mlp<Float> make(std::uint64_t seed) {
        Rng rng(seed);
        return nn::Mlp<Float>("enc", nn::MlpOptions{.sizes = {3, 5, 2}, .activation = nn::Activation::tanh, .layer_norm_output = true}, rng);
    }
    std::vector<nn::Parameter<Float>*> parameters() { return mlp.parameters(); }
    /// One Adam step on a fixed regression batch.
    void train_step() {
        nn::Tape<Float> tape;
        const auto x = nn::Tensor<Float>::from_host(Shape{4, 3}, {1, 0, -1, 0.5f, 2, 0, -1, -1, 1, 0, 0.3f, 0.7f});
        const auto y = nn::Tensor<Float>::from_host(Shape{4, 2}, {1, -1, 0, 1, -1, 0, 0.5f, 0.5f});
        const auto loss = nn::mean(nn::square(nn::sub(mlp(tape, tape.constant(x)), tape.constant(y))));
        adam.zero_grad();
        tape.backward(loss);
        adam.step();
    }
    /// Every parameter's values, then every moment, then the step count (as a float).
    std::vector<std::vector<float>> state() {
        std::vector<std::vector<float>> out;
        for (const auto* p : parameters()) out.push_back(p->value.to_host());
        for (std::size_t i = 0; i < parameters().size(); ++i) {
            out.push_back(adam.first_moment(i).to_host());
            out.push_back(adam.second_moment(i).to_host());
        }
        out.push_back({static_cast<float>(adam.steps())});
        return out;
    }
};

}  // namespace

TEST_CASE("a checkpoint round trip restores parameters and adam state exactly, and training continues identically") {
    TemporaryDirectory dir("round_trip");
    const fs::path path = dir / "model.ckpt";
    Model trained(1);
    for (int i = 0; i < 3; ++i) trained.train_step();
    nn::save_checkpoint(path, trained.parameters(), &trained.adam);

    Model restored(2);  // different initial weights, fresh optimiser
    REQUIRE(restored.state() != trained.state());
    nn::load_checkpoint(path, restored.parameters(), &restored.adam);
    CHECK(restored.state() == trained.state());
    CHECK(restored.adam.steps() == 3);

    // Both take the same next steps, bit for bit.
    trained.train_step();
    restored.train_step();
    trained.train_step();
    restored.train_step();
    CHECK(restored.state() == trained.state());

    // Parameters only: the optimiser section is optional, and ignored when not asked for.
    const fs::path weights = dir / "weights.ckpt";
    nn::save_checkpoint(weights, trained.parameters());
    Model other(3);
    nn::load_checkpoint(weights, other.parameters());
    nn::load_checkpoint(path, other.parameters());  // has Adam state; not loaded
    CHECK(other.adam.steps() == 0);
    Model fresh(4);
    const auto untouched = fresh.state();
    CHECK_THROWS_WITH_AS(nn::load_checkpoint(weights, fresh.parameters(), &fresh.adam),
                         ("[rlflow.checkpoint_error] " + weights.string() + ": has no optimiser state").c_str(), checkpoint_error);
    CHECK(fresh.state() == untouched);
}

TEST_CASE("a float64 model is stored in float32 and reads back rounded to float32") {
    TemporaryDirectory dir("float64");
    const fs::path path = dir / "double.ckpt";
    nn::Parameter<Double> p("p", nn::Tensor<Double>::from_host(Shape{3}, {0.1, -1.0 / 3.0, 1e-3}));
    nn::save_checkpoint<Double>(path, {&p});
    nn::Parameter<Float> as_float("p", nn::Tensor<Float>(Shape{3}));
    nn::load_checkpoint<Float>(path, {&as_float});
    CHECK(as_float.value.to_host() == std::vector<float>{0.1f, -1.0f / 3.0f, 1e-3f});
    nn::Parameter<Double> back("p", nn::Tensor<Double>(Shape{3}));
    nn::load_checkpoint<Double>(path, {&back});
    CHECK(back.value.to_host() == std::vector<double>{double(0.1f), double(-1.0f / 3.0f), double(1e-3f)});
    // magic, version 1, payload length, one tensor of 3 floats, no optimiser, checksum.
    CHECK(read_bytes(path).size() == 8 + 4 + 8 + (4 + 4 + 1 + 4 + 8 + 3 * 4 + 1) + 8);
    CHECK(read_bytes(path).substr(0, 12) == std::string("RLFLOWCK\x01\x00\x00\x00", 12));
}

TEST_CASE("a corrupt checkpoint is rejected naming the file and the fault, and nothing is loaded") {
    TemporaryDirectory dir("corrupt");
    const fs::path good = dir / "good.ckpt";
    const fs::path bad = dir / "bad.ckpt";
    Model source(1);
    source.train_step();
    nn::save_checkpoint(good, source.parameters(), &source.adam);
    const std::string bytes = read_bytes(good);

    Model target(2);
    target.train_step();
    const auto before = target.state();
    const auto rejects = [&](const std::string& corrupt, const std::string& fault) {
        write_bytes(bad, corrupt);
        CHECK_THROWS_WITH_AS(nn::load_checkpoint(bad, target.parameters(), &target.adam),
                             ("[rlflow.checkpoint_error] " + bad.string() + ": " + fault).c_str(), checkpoint_error);
        CHECK(target.state() == before);
    };
    // Truncated inside the magic, the version, the length, the payload and the checksum.
    for (const std::size_t size : {std::size_t{0}, std::size_t{5}, std::size_t{10}, std::size_t{19}, std::size_t{27}}) {
        CAPTURE(size);
        rejects(bytes.substr(0, size), "truncated (" + std::to_string(size) + " bytes, a checkpoint has at least 28)");
    }
    const std::string announced = std::to_string(bytes.size() - 28);
    for (const std::size_t size : {std::size_t{40}, bytes.size() / 2, bytes.size() - 1}) {
        CAPTURE(size);
        rejects(bytes.substr(0, size), "truncated (" + std::to_string(size) + " bytes, the header announces " + announced + " bytes of payload)");
    }
    rejects(bytes + "x", "trailing bytes (" + std::to_string(bytes.size() + 1) + " bytes, the header announces " + announced
                             + " bytes of payload)");

    std::string flipped = bytes;
    flipped[bytes.size() / 2] = static_cast<char>(flipped[bytes.size() / 2] ^ 0x10);
    rejects(flipped, "checksum mismatch (the file is corrupt)");
    std::string bad_checksum = bytes;
    bad_checksum.back() = static_cast<char>(bad_checksum.back() ^ 0x01);
    rejects(bad_checksum, "checksum mismatch (the file is corrupt)");

    std::string magic = bytes;
    magic[3] = 'X';
    rejects(magic, "bad magic (not an rlflow checkpoint)");
    rejects("PK\x03\x04 a zip file", "bad magic (not an rlflow checkpoint)");

    std::string version = bytes;
    version[8] = 7;
    rejects(version, "version 7 not supported (this build reads version 1)");

    // The good file still loads into the same model.
    nn::load_checkpoint(good, target.parameters(), &target.adam);
    CHECK(target.state() == source.state());
}

TEST_CASE("a checkpoint that does not fit the model names the missing, unexpected or reshaped parameter") {
    TemporaryDirectory dir("mismatch");
    const fs::path path = dir / "model.ckpt";
    Rng rng(4);
    nn::Linear<Float> a("enc.0", 3, 4, rng), b("enc.1", 4, 4, rng), wide("enc.0", 4, 4, rng);
    const auto values = [](const std::vector<nn::Parameter<Float>*>& params) {
        std::vector<std::vector<float>> out;
        for (const auto* p : params) out.push_back(p->value.to_host());
        return out;
    };
    float fill_value = 0;
    const auto rejects = [&](std::vector<nn::Parameter<Float>*> params, const std::string& fault, nn::Adam<Float>* adam = nullptr) {
        // Unlike the file's values (saved before the previous fill), so a partial load would show.
        fill_value += 1;
        for (auto* p : params) p->value.fill(fill_value);
        const auto before = values(params);
        const std::int64_t steps = adam != nullptr ? adam->steps() : 0;
        CHECK_THROWS_WITH_AS(nn::load_checkpoint(path, params, adam), ("[rlflow.checkpoint_error] " + path.string() + ": " + fault).c_str(),
                             checkpoint_error);
        CHECK(values(params) == before);
        if (adam != nullptr) CHECK(adam->steps() == steps);
    };

    nn::save_checkpoint<Float>(path, {&a.weight(), &a.bias()});
    rejects({&a.weight(), &a.bias(), &b.weight(), &b.bias()}, "missing parameter 'enc.1.weight' (in the model, not in the file)");
    rejects({&wide.weight(), &wide.bias()}, "parameter 'enc.0.weight' has shape (3,4) in the file, (4,4) in the model");

    nn::save_checkpoint<Float>(path, {&a.weight(), &a.bias(), &b.weight(), &b.bias()});
    rejects({&a.weight(), &a.bias()}, "unexpected parameter 'enc.1.weight' (in the file, not in the model)");

    // Adam state saved for fewer parameters than the loading optimiser steps.
    nn::Adam<Float> partial({&a.weight(), &a.bias()});
    nn::save_checkpoint<Float>(path, {&a.weight(), &a.bias(), &b.weight(), &b.bias()}, &partial);
    nn::Adam<Float> full({&a.weight(), &a.bias(), &b.weight(), &b.bias()});
    rejects({&a.weight(), &a.bias(), &b.weight(), &b.bias()}, "Adam state: missing parameter 'enc.1.weight' (in the model, not in the file)",
            &full);
}

TEST_CASE("loading a file that does not exist is an io_error naming it") {
    TemporaryDirectory dir("missing");
    const fs::path path = dir / "nowhere.ckpt";
    nn::Parameter<Float> p("p", nn::Tensor<Float>(Shape{1}));
    CHECK_THROWS_WITH_AS(nn::load_checkpoint<Float>(path, {&p}), ("[rlflow.io_error] " + path.string() + ": cannot open the checkpoint for reading").c_str(),
                         io_error);
}

TEST_CASE("saving replaces a checkpoint atomically: no temporary is left, and a failed save keeps the old file") {
    TemporaryDirectory dir("atomic");
    const fs::path path = dir / "model.ckpt";
    write_bytes(path, "an older checkpoint");
    Model model(1);
    nn::save_checkpoint(path, model.parameters(), &model.adam);
    CHECK(dir.entries() == std::vector<std::string>{"model.ckpt"});
    const std::string saved = read_bytes(path);
    CHECK(saved.starts_with("RLFLOWCK"));

    // A save that fails before writing (two parameters share a name) keeps the old file.
    nn::Parameter<Float> twin("enc.0.weight", nn::Tensor<Float>(Shape{1}));
    std::vector<nn::Parameter<Float>*> clashing = model.parameters();
    clashing.push_back(&twin);
    CHECK_THROWS_WITH_AS(nn::save_checkpoint(path, clashing),
                         "[rlflow.precondition_error] save_checkpoint: two parameters are named 'enc.0.weight'", precondition_error);
    CHECK(read_bytes(path) == saved);

    // A save into a directory that does not exist fails and creates nothing.
    const fs::path nowhere = dir / "no_such_directory" / "model.ckpt";
    CHECK_THROWS_WITH_AS(nn::save_checkpoint(nowhere, model.parameters()), doctest::Contains(nowhere.string().c_str()), io_error);
    CHECK(dir.entries() == std::vector<std::string>{"model.ckpt"});
}
