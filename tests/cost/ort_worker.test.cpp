// The ONNX Runtime worker protocol (cost/ort_worker.hpp): the client against scripted
// fake workers that die, hang, refuse or answer garbage, and, where ONNX Runtime is
// installed, against the real worker and the ort cost backend.
#include <rlflow/cost/cost_model.hpp>
#include <rlflow/cost/ort_backend.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace rlflow;

namespace {

/// A shell script in a fresh temporary folder, run as a fake worker.
struct FakeWorker {
    std::filesystem::path folder;
    std::filesystem::path script;
    explicit FakeWorker(const std::string& body) {
        static int counter = 0;
        folder = std::filesystem::temp_directory_path() / ("rlflow-fake-worker-" + std::to_string(::getpid()) + "-"
                                                           + std::to_string(counter++));
        std::filesystem::create_directories(folder);
        script = folder / "worker.sh";
        std::ofstream(script) << "#!/bin/sh\n" << body << "\n";
    }
    ~FakeWorker() { std::filesystem::remove_all(folder); }
    [[nodiscard]] cost::OrtWorkerOptions options(double timeout_seconds = 30) const {
        return {{"sh", script.string()}, timeout_seconds};
    }
};

constexpr const char* hello = R"(echo '{"ready":true,"protocol":1,"ort_version":"9.9.9"}')";

/// One timing request for a file that need not exist (fake workers never open it).
std::vector<cost::ModelTiming> time_one(cost::OrtWorker& worker) {
    const std::filesystem::path files[] = {"/nonexistent/model.onnx"};
    return worker.time(files, {});
}

std::string what_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

bool ort_installed() {
    if (const auto why = cost::ort_unavailable_reason()) {
        MESSAGE("skipped: ", *why);
        return false;
    }
    return true;
}

}  // namespace

TEST_CASE("a worker that dies mid-request gives a clear error naming its exit status and last words") {
    const FakeWorker fake(std::string(hello) + "\nread line\necho 'out of memory' >&2\nexit 7");
    cost::OrtWorker worker(fake.options());
    CHECK(worker.version() == "9.9.9");
    const auto start = std::chrono::steady_clock::now();
    const std::string message = what_of([&] { (void)time_one(worker); });
    // EOF is noticed, not waited out: the worker's timeout is 30 s, and a dead shell's EOF
    // arrives in milliseconds, so 10 s separates the two on any machine, however loaded.
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
    CHECK(message.find("failed while timing 1 model(s)") != std::string::npos);
    CHECK(message.find("exit status 7") != std::string::npos);
    CHECK(message.find("out of memory") != std::string::npos);
    // Using it again fails the same way instead of hanging or crashing on a closed pipe.
    CHECK_THROWS_AS((void)time_one(worker), cost::OrtWorkerError);
}

TEST_CASE("a worker runs in a process group of its own, so a terminal's Ctrl-C to the caller's group does not reach it") {
    // The fake worker writes its process group (field 5 of /proc/self/stat) before it says hello.
    const FakeWorker fake(std::string("cut -d' ' -f5 /proc/$$/stat > \"$(dirname \"$0\")/group\"\n") + hello + "\nread line");
    cost::OrtWorker worker(fake.options());
    std::ifstream in(fake.folder / "group");
    long group = 0;
    in >> group;
    REQUIRE(static_cast<bool>(in));
    CHECK(group > 0);
    CHECK(group != static_cast<long>(::getpgrp()));
}

TEST_CASE("a worker that hangs is given up after the timeout") {
    const FakeWorker fake(std::string(hello) + "\nread line\nsleep 60");
    cost::OrtWorker worker(fake.options(0.5));
    const auto start = std::chrono::steady_clock::now();
    const std::string message = what_of([&] { (void)time_one(worker); });
    CHECK(message.find("no answer within") != std::string::npos);
    // Given up at the 0.5 s timeout, not after the worker's 60 s sleep: 20 s is 40x the
    // one and a third of the other.
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
}

TEST_CASE("a worker without ONNX Runtime is reported with how to install it") {
    const FakeWorker fake(R"(echo '{"ready":false,"protocol":1,"error":"onnxruntime-node is not installed"}'; exit 3)");
    const std::string message = what_of([&] { cost::OrtWorker worker(fake.options()); });
    CHECK(message.find("[rlflow.precondition_error]") == 0);
    CHECK(message.find("onnxruntime-node is not installed") != std::string::npos);
    CHECK(message.find("tools/setup.sh") != std::string::npos);
}

TEST_CASE("a worker that cannot start, speaks another protocol or writes garbage is an error, not a hang") {
    CHECK(what_of([] { cost::OrtWorker worker({{"/nonexistent/node"}, 5}); }).find("cannot start") != std::string::npos);
    const FakeWorker other(R"(echo '{"ready":true,"protocol":2,"ort_version":"1"}')");
    CHECK(what_of([&] { cost::OrtWorker worker(other.options()); }).find("protocol 2") != std::string::npos);
    const FakeWorker garbage(std::string(hello) + "\nread line\necho 'Segmentation fault'\nsleep 60");
    cost::OrtWorker worker(garbage.options());
    CHECK(what_of([&] { (void)time_one(worker); }).find("not JSON") != std::string::npos);
}

TEST_CASE("the client reads per-model timings and errors, skipping answers to other requests") {
    const FakeWorker fake(std::string(hello) + R"(
read line
echo '{"id":0,"ok":true}'
echo '{"id":1,"ok":true,"results":[{"median_ms":2.5,"runs_ms":[2,2.5,3]}]}'
read line
echo '{"id":2,"ok":true,"results":[{"error":"m.onnx: cannot load"}]}'
read line
echo '{"id":3,"ok":false,"error":"bad level"}'
read line)");
    cost::OrtWorker worker(fake.options());
    const auto first = time_one(worker);
    REQUIRE(first.size() == 1);
    CHECK(first[0].ok());
    CHECK(first[0].median_ms == 2.5);
    CHECK(first[0].runs_ms == std::vector<double>{2, 2.5, 3});
    const auto second = time_one(worker);
    CHECK_FALSE(second[0].ok());
    CHECK(second[0].error == "m.onnx: cannot load");
    CHECK(what_of([&] { (void)time_one(worker); }).find("refused a request") != std::string::npos);
}

TEST_CASE("the ort backend prices an op by the median of separate sessions, so one slow session does not set it") {
    // Three passes over a one-op batch: 3 ms, then 9 ms (the machine was busy), then 4 ms;
    // a failed session in the next request leaves the other two.
    const FakeWorker fake(std::string(hello) + R"(
read line
echo '{"id":1,"ok":true,"results":[{"median_ms":3,"runs_ms":[3],"kernel_ms":3},{"median_ms":9,"runs_ms":[9],"kernel_ms":9},{"median_ms":4,"runs_ms":[4],"kernel_ms":4}]}'
read line
echo '{"id":2,"ok":true,"results":[{"median_ms":2,"runs_ms":[2],"kernel_ms":2},{"error":"m.onnx: cannot load"},{"median_ms":5,"runs_ms":[5],"kernel_ms":5}]}'
read line)");
    cost::OrtBackendOptions options;
    options.worker = fake.options();
    CHECK(options.passes == 3);
    cost::OrtBackend backend(options);
    const Attributes none;
    const TensorType x{DType::Float32, Shape{8, 64}}, w{DType::Float32, Shape{64, 64}};
    const TensorType in[] = {x, w}, out[] = {x};
    const char constant[] = {0, 1};
    CHECK(backend.op_cost_ms(cost::OpSignature{OpKind::MatMul, none, in, out, constant}) == doctest::Approx(4));
    CHECK(backend.op_cost_ms(cost::OpSignature{OpKind::MatMul, none, in, out, constant}) == doctest::Approx(3.5));
    CHECK(backend.fallback_count() == 0);
    options.passes = 0;
    CHECK_THROWS_AS(cost::OrtBackend{options}, precondition_error);
}

TEST_CASE("bad ORT settings are refused before anything runs") {
    cost::OrtSettings settings;
    settings.level = "fast";
    CHECK_THROWS_AS(settings.validate(), precondition_error);
    settings = {};
    settings.threads = 0;
    CHECK_THROWS_AS(settings.validate(), precondition_error);
}

TEST_CASE("the real worker times a model, and the ort backend's name and cache key hold its settings") {
    if (!ort_installed()) return;
    cost::OrtBackendOptions one;
    one.runs = 3;
    cost::OrtBackendOptions all = one;
    all.settings.level = "all";
    cost::OrtBackendOptions two = one;
    two.settings.threads = 2;
    cost::CostModel<cost::OrtBackend> basic_t1{cost::OrtBackend(one)};
    const std::string name = basic_t1.name();
    CHECK(name.find("ort:") == 0);
    CHECK(name.find(":basic:t1") != std::string::npos);
    CHECK(cost::OrtBackend(all).name().find(":all:t1") != std::string::npos);
    CHECK(cost::OrtBackend(two).name().find(":basic:t2") != std::string::npos);
    cost::OrtBackendOptions fused = one;
    fused.fused_conv_microsoft = true;
    cost::CostModel<cost::OrtBackend> fused_model{cost::OrtBackend(fused)};
    CHECK(fused_model.name().find(":basic:t1:fusedconv") != std::string::npos);
    CHECK(basic_t1.name().find("fusedconv") == std::string::npos);

    // A fused Conv + Relu written as com.microsoft.FusedConv runs in ORT: a price, not the
    // bytes fallback.
    Graph conv;
    const NodeId image = conv.add_input("x", TensorType{DType::Float32, Shape{1, 8, 16, 16}});
    const NodeId kernel = conv.add_weight("w", TensorType{DType::Float32, Shape{8, 8, 3, 3}},
                                          std::make_shared<const Tensor>(Shape{8, 8, 3, 3}));
    conv.add_output({conv.add_node(OpKind::Conv2D, {{image, 0}, {kernel, 0}},
                                   {{"kernel_shape", std::vector<std::int64_t>{3, 3}},
                                    {"pads", std::vector<std::int64_t>{1, 1, 1, 1}},
                                    {"activation", std::int64_t{1}}}),
                     0});
    CHECK(fused_model.graph_cost(conv) > 0);
    CHECK(fused_model.backend().fallback_count() == 0);

    // A 256x256 float matrix product with a constant right operand: a real op.
    const Attributes none;
    const TensorType a{DType::Float32, Shape{64, 256}}, b{DType::Float32, Shape{256, 256}}, y{DType::Float32, Shape{64, 256}};
    const TensorType in[] = {a, b}, out[] = {y};
    const char constant[] = {0, 1};
    const double ms = basic_t1.op_cost(cost::OpSignature{OpKind::MatMul, none, in, out, constant});
    CHECK(ms > 0);
    // 8.4 MFLOP take under 10 ms even at 1 GFLOP/s: 1 s catches a wrong unit, not a slow
    // machine.
    CHECK(ms < 1000);
    CHECK(basic_t1.backend().fallback_count() == 0);

    // The cache file of one setting is not read under another.
    const std::filesystem::path cache = std::filesystem::temp_directory_path() / ("rlflow-ort-cache-" + std::to_string(::getpid()));
    basic_t1.save_cache(cache);
    cost::CostModel<cost::OrtBackend> other{cost::OrtBackend(two)};
    CHECK_FALSE(other.load_cache(cache));
    cost::CostModel<cost::OrtBackend> same{cost::OrtBackend(one)};
    CHECK(same.load_cache(cache));
    CHECK(same.cache_size() == 1);
    std::filesystem::remove(cache);
}
