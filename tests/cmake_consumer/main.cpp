// Builds a one-op graph through the installed headers and prints its output shape.
#include <rlflow/core/graph.hpp>

#include <iostream>

int main() {
    rlflow::Graph g;
    const auto x = g.add_input("x", {rlflow::DType::Float32, rlflow::Shape{1, 4}});
    const auto r = g.add_node(rlflow::OpKind::Relu, {{x, 0}});
    g.add_output({r, 0}, "y");
    g.validate();
    std::cout << "relu output " << g.type({r, 0}).shape.to_string() << "\n";
    return 0;
}
