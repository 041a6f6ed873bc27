// The CUDA plugin (rlflow/cost/cuda_plugin_loader.hpp): a CPU-only run maps no CUDA library, the
// plugin loads and answers where it is built, and --cost cudnn without a GPU is refused
// by name.

#include "support.hpp"

#include <rlflow/core/error.hpp>
#include <rlflow/cost/cuda_plugin_loader.hpp>

#include <string>

using namespace rlflow;
using namespace rlflow::cli_test;

namespace {

/// The shared libraries the dynamic loader opened for `rlflow <arguments>` (LD_DEBUG=libs).
std::string libraries_opened(const std::string& arguments) {
    return run_cli(arguments, true, "LD_DEBUG=libs").output;
}

bool mentions_cuda(const std::string& text) {
    for (const char* library : {"libcudart", "libcublas", "libcudnn", "rlflow_cuda_plugin"})
        if (text.find(library) != std::string::npos) return true;
    return false;
}

}  // namespace

TEST_CASE("rlflow --version and info open no CUDA library") {
    const std::string version = libraries_opened("--version");
    CHECK(version.find("libstdc++") != std::string::npos);  // LD_DEBUG did list what was opened
    CHECK_FALSE(mentions_cuda(version));
    const Result info = run_cli("info zoo:squeezenet1_1", true, "LD_DEBUG=libs");
    CHECK(info.exit_code == 0);
    CHECK(info.output.find("libz3") != std::string::npos);
    CHECK_FALSE(mentions_cuda(info.output));
}

TEST_CASE("the CUDA plugin loads, counts devices and reports a missing device as an rlflow error") {
    if (!cost::cuda_plugin_built) {
        MESSAGE("skipped: rlflow was built without CUDA, so there is no plugin");
        return;
    }
    const cost::LoadedCudaPlugin plugin = cost::open_cuda_plugin();  // found where it was built
    REQUIRE_MESSAGE(plugin.api != nullptr, plugin.reason);
    CHECK(plugin.api->version == cost::CudaPluginApi::current_version);
    const int devices = plugin.api->device_count();
    CHECK(devices >= 0);
    if (devices == 0) {
        CHECK_THROWS_AS((void)plugin.api->make_profiler(0), rlflow::error);
    } else {
        const std::unique_ptr<cost::GpuCostBackend> profiler = plugin.api->make_profiler(0);
        CHECK(profiler->name().starts_with("cudnn:"));
    }
    ::setenv("RLFLOW_CUDA_PLUGIN", "/nonexistent/librlflow_cuda_plugin.so", 1);
    CHECK(cost::cuda_plugin_candidates().front() == "/nonexistent/librlflow_cuda_plugin.so");  // the variable comes first
    ::unsetenv("RLFLOW_CUDA_PLUGIN");
}

TEST_CASE("--cost cudnn on a machine with no GPU exits 2 and says why") {
    if (cost::gpu_device_node_present()) {
        MESSAGE("skipped: this machine shows an NVIDIA GPU");
        return;
    }
    ScratchDir dir("rlflow_cuda_plugin_test");
    const Result r = run_cli("optimize zoo:squeezenet1_1 -o " + dir.file("out.onnx") + " --cost cudnn --budget 1");
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("--cost cudnn needs a GPU") != std::string::npos);
    CHECK((r.output.find("no NVIDIA GPU") != std::string::npos || r.output.find("without CUDA") != std::string::npos));
    CHECK_FALSE(std::filesystem::exists(dir.file("out.onnx")));
}
