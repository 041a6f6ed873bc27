// Shows how to import an ONNX model, look at what became core ops and what stayed
// opaque, and write it back. Usage: example_onnx_round_trip in.onnx out.onnx
// (without arguments it exports zoo:squeezenet1_1 and imports that instead).

#include <rlflow/core/statistics.hpp>
#include <rlflow/exec/random.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/onnx/export.hpp>
#include <rlflow/onnx/import.hpp>

#include <cstdio>
#include <filesystem>

int main(int argc, char** argv) {
    using namespace rlflow;
    const std::filesystem::path scratch = std::filesystem::temp_directory_path() / "rlflow_example.onnx";
    std::filesystem::path in = argc > 1 ? std::filesystem::path(argv[1]) : scratch;
    const std::filesystem::path out = argc > 2 ? std::filesystem::path(argv[2]) : scratch;
    try {
        if (argc <= 1) {
            Graph zoo = models::build_zoo_model("squeezenet1_1");
            exec::fill_random_weights(zoo, /*seed=*/1);
            onnx_io::save_onnx(zoo, in);
        }
        const Graph g = onnx_io::load_onnx(in);
        const GraphStatistics s = graph_statistics(g);
        std::printf("%s: %zu ops (%zu opaque), %lld parameters\n", in.c_str(), s.op_nodes, s.opaque_nodes,
                    static_cast<long long>(s.parameters));
        onnx_io::save_onnx(g, out);  // checked by the ONNX checker, written atomically
        std::printf("wrote %s\n", out.c_str());
    } catch (const rlflow::error& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
    }
    return 0;
}
