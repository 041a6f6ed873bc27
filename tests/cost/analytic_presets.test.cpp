#include <rlflow/cost/analytic.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

using namespace rlflow;
using cost::AnalyticBackend;
using cost::device_preset;
using cost::device_presets;
using cost::DeviceSpec;

namespace {

constexpr std::string_view tf32_suffix = "-tf32";

/// The message AnalyticBackend::preset throws for `name`; empty if it throws nothing.
std::string preset_error(std::string_view name) {
    try {
        (void)AnalyticBackend::preset(name);
    } catch (const precondition_error& e) {
        return e.what();
    }
    return {};
}

}  // namespace

TEST_CASE("every device preset is found by its name, and no two share a name") {
    for (const DeviceSpec& d : device_presets) {
        CAPTURE(d.name);
        const auto found = device_preset(d.name);
        REQUIRE(found.has_value());
        CHECK(found->name == d.name);
        CHECK(found->peak_gflops == d.peak_gflops);
        CHECK(AnalyticBackend::preset(d.name).name() == "analytic:" + std::string(d.name));
        int same_name = 0;
        for (const DeviceSpec& other : device_presets) same_name += other.name == d.name ? 1 : 0;
        CHECK(same_name == 1);
    }
}

TEST_CASE("the Ampere and Hopper presets come in fp32 and tf32, V100 in fp32 only") {
    for (const char* name : {"v100", "a100", "h100", "a100-tf32", "h100-tf32"}) {
        CAPTURE(name);
        CHECK(device_preset(name).has_value());
    }
    CHECK_FALSE(device_preset("v100-tf32").has_value());
}

TEST_CASE("the tf32 presets have datasheet dense TF32 peaks, above their fp32 rows, with the same memory") {
    // NVIDIA's datasheets: A100 TF32 tensor core 156 TFLOP/s dense (312 with sparsity),
    // fp32 19.5; H100 SXM TF32 tensor core 989 TFLOP/s with sparsity, so 494.7 dense, fp32 67.
    CHECK(device_preset("a100-tf32")->peak_gflops == doctest::Approx(156000.0));
    CHECK(device_preset("h100-tf32")->peak_gflops == doctest::Approx(494700.0));
    int tf32_rows = 0;
    for (const DeviceSpec& tf32 : device_presets) {
        if (!tf32.name.ends_with(tf32_suffix)) continue;
        ++tf32_rows;
        const std::string_view fp32_name = tf32.name.substr(0, tf32.name.size() - tf32_suffix.size());
        CAPTURE(tf32.name);
        const auto fp32 = device_preset(fp32_name);
        REQUIRE(fp32.has_value());
        CHECK(tf32.peak_gflops > fp32->peak_gflops);
        CHECK(tf32.bandwidth_gbs == fp32->bandwidth_gbs);
        CHECK(tf32.launch_us == fp32->launch_us);
    }
    CHECK(tf32_rows == 2);
}

TEST_CASE("a large matrix product costs less on a tf32 preset than on its fp32 row") {
    // 4096^3 multiply-adds are compute bound on both rooflines, so the higher peak shows.
    const std::vector<TensorType> inputs{{DType::Float32, Shape{4096, 4096}}, {DType::Float32, Shape{4096, 4096}}};
    const std::vector<TensorType> outputs{{DType::Float32, Shape{4096, 4096}}};
    const Attributes none;
    const cost::OpSignature matmul{OpKind::MatMul, none, inputs, outputs};
    for (const char* part : {"a100", "h100"}) {
        CAPTURE(part);
        const double fp32 = AnalyticBackend::preset(part).op_cost_ms(matmul);
        const double tf32 = AnalyticBackend::preset(std::string(part) + "-tf32").op_cost_ms(matmul);
        CHECK(tf32 > 0.0);
        CHECK(tf32 < fp32);
    }
}

TEST_CASE("an unknown device preset is a precondition_error that lists every preset name") {
    CHECK_THROWS_AS((void)AnalyticBackend::preset("tpu"), precondition_error);
    const std::string message = preset_error("tpu");
    CHECK(message.starts_with("[rlflow.precondition_error] unknown device preset 'tpu' ("));
    for (const DeviceSpec& d : device_presets) {
        CAPTURE(d.name);
        CHECK(message.find(std::string(d.name)) != std::string::npos);
    }
    CHECK(message == "[rlflow.precondition_error] unknown device preset 'tpu' (" + cost::device_preset_names() + ")");
    CHECK(cost::device_preset_names() == "v100, a100, h100, a100-tf32, h100-tf32, cpu");
}
