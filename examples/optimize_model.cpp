// Optimises a zoo model through the library's front door, as `rlflow optimize` does: the
// target's own prices (ONNX Runtime on this CPU where it is installed), the guard timing
// the best candidates against the input, and the result checked on random inputs before
// it is written. Usage: example_optimize_model [ZOO_MODEL] [OUT.onnx]

#include <rlflow/exec/random.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/optimize.hpp>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
    using namespace rlflow;
    const std::string name = argc > 1 ? argv[1] : "squeezenet1_1";
    Graph model = models::build_zoo_model(name);
    exec::fill_random_weights(model, /*seed=*/1);

    OptimizeRequest request;  // taso's search, the target's own prices, the guard on
    request.input.name = "zoo:" + name;
    const OptimizeResult result = optimize(model, request);

    const OptimizeReport& r = result.report;
    std::printf("%s for %s: cost %.3f -> %.3f ms; guard: %s\n", r.model.c_str(), r.target_description.c_str(), r.cost_before_ms,
                r.cost_after_ms, r.guard.reason.c_str());
    write_result(result, request, argc > 2 ? argv[2] : "optimized.onnx");  // refuses an unverified graph
    std::printf("wrote %s (%s)\n", argc > 2 ? argv[2] : "optimized.onnx", result.is_input() ? "the input, unchanged" : "optimised");
    return 0;
}
