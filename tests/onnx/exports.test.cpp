// Real PyTorch/torchvision exports (tests/data, made by tools/export_models.py with
// export_params=False): they import fully into core ops after folding, survive an
// export/import round trip unchanged, and run to the same outputs before and after.
#include <rlflow/core/canonical.hpp>
#include <rlflow/core/statistics.hpp>
#include <rlflow/exec/executor.hpp>
#include <rlflow/exec/random.hpp>
#include <rlflow/onnx/export.hpp>
#include <rlflow/onnx/import.hpp>
#include <rlflow/onnx/weights.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

using namespace rlflow;
namespace fs = std::filesystem;

namespace {

const fs::path data_dir = fs::path(RLFLOW_SOURCE_DIR) / "tests" / "data";

std::vector<fs::path> exports() {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(data_dir))
        if (e.path().extension() == ".onnx") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
}

Graph import_export(const fs::path& file) {
    onnx_io::ImportOptions options;
    options.data_inputs = {"input"};
    return onnx_io::load_onnx(file, options);
}

}  // namespace

TEST_CASE("every real export imports into core ops only, with static reshape targets") {
    const auto files = exports();
    REQUIRE(files.size() >= 12);
    for (const auto& file : files) {
        CAPTURE(file.filename().string());
        const Graph g = import_export(file);
        const GraphStatistics s = graph_statistics(g);
        CHECK(s.opaque_nodes == 0);  // Shape/Gather/Slice/Unsqueeze subgraphs were folded
        CHECK(g.inputs().size() == 1);
        CHECK(g.node(g.inputs()[0]).name == "input");
        CHECK(g.outputs().size() == 1);
        CHECK(g.outputs()[0].name == "output");
        for (const Node& n : g.nodes())
            if (n.op == OpKind::Reshape) CHECK(g.type({n.id, 0}).shape.is_static());
    }
}

TEST_CASE("the transformer exports keep twelve attention blocks after folding") {
    for (const char* name : {"transformer_op13.onnx", "transformer_op17.onnx"}) {
        CAPTURE(name);
        const GraphStatistics s = graph_statistics(import_export(data_dir / name));
        CHECK(s.op_histogram.at("Softmax") == 12);
        CHECK(s.op_histogram.at("MatMul") == 60);  // 2 attention + 3 projections per layer
        CHECK(s.op_histogram.count("Shape") == 0);
    }
}

TEST_CASE("real exports round-trip to an identical canonical form and identical outputs") {
    for (const auto& file : exports()) {
        CAPTURE(file.filename().string());
        Graph g = import_export(file);
        exec::fill_random_weights(g, 11);
        const Graph back = onnx_io::import_model(onnx_io::export_model(g), {}, file.string());
        CHECK(canonical_form(back) == canonical_form(g));
        const auto inputs = exec::random_inputs(g, 12);
        const auto before = exec::Executor{}.run(g, inputs).outputs;
        const auto after = exec::Executor{}.run(back, inputs).outputs;
        REQUIRE(before.size() == after.size());
        CHECK(before[0].floats().size() == after[0].floats().size());
        // Bit for bit, on any CPU: the round trip gives the same graph (the canonical forms
        // agree), so the same kernels run on the same values.
        bool identical = true, finite = true;
        for (std::size_t i = 0; i < before[0].floats().size(); ++i) {
            identical = identical && before[0].floats()[i] == after[0].floats()[i];
            finite = finite && std::isfinite(before[0].floats()[i]);
        }
        CHECK(identical);
        CHECK(finite);
    }
}

TEST_CASE("attach_weights turns parameter inputs into initializers and nothing else") {
    const fs::path file = data_dir / "squeezenet1_1_op13.onnx";
    onnx_io::pb::ModelProto model = onnx_io::parse_model(onnx_io::read_file(file), file.string());
    const int nodes = model.graph().node_size();
    Graph g = import_export(file);
    exec::fill_random_weights(g, 1);
    const std::size_t attached = onnx_io::attach_weights(model, g);
    CHECK(attached == g.weights().size());
    CHECK(model.graph().input_size() == 1);
    CHECK(model.graph().initializer_size() == static_cast<int>(attached));
    CHECK(model.graph().node_size() == nodes);
    const Graph full = onnx_io::import_model(model, {}, file.string());
    CHECK(canonical_form(full) == canonical_form(g));
}
