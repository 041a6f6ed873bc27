// Shows how to build a graph by hand, validate it, and run it in the reference executor:
// a 3x3 convolution with a fused ReLU, followed by global average pooling.

#include <rlflow/core/graph.hpp>
#include <rlflow/exec/executor.hpp>
#include <rlflow/exec/random.hpp>

#include <cstdio>

int main() {
    using namespace rlflow;
    Graph g;
    const NodeId image = g.add_input("image", {DType::Float32, Shape{1, 3, 32, 32}});
    const NodeId kernel = g.add_weight("conv.weight", {DType::Float32, Shape{8, 3, 3, 3}});
    const NodeId conv = g.add_node(OpKind::Conv2D, {{image, 0}, {kernel, 0}},
                                   {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}},
                                    {"activation", static_cast<std::int64_t>(Activation::Relu)}},
                                   "conv");
    const NodeId pool = g.add_node(OpKind::GlobalAveragePool, {{conv, 0}}, {}, "pool");
    g.add_output({pool, 0}, "features");
    g.validate();

    exec::fill_random_weights(g, /*seed=*/7);
    const auto inputs = exec::random_inputs(g, /*seed=*/11);
    const exec::RunResult result = exec::Executor{}.run(g, inputs);

    const Tensor& features = result.outputs.at(0);
    std::printf("output %s, peak activations %lld bytes\n", features.shape().to_string().c_str(),
                static_cast<long long>(result.peak_activation_bytes));
    for (float v : features.floats()) std::printf("%.4f ", static_cast<double>(v));
    std::printf("\n");
    return 0;
}
