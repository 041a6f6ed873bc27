#pragma once
// rlflow.Graph: a model loaded from ONNX (a file or bytes) or built from the zoo, with
// info(), save(), to_bytes() and run() on the reference executor.

#include "common.hpp"

#include <rlflow/core/statistics.hpp>
#include <rlflow/exec/executor.hpp>
#include <rlflow/exec/random.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/onnx/export.hpp>
#include <rlflow/onnx/import.hpp>

#include "rlflow/command_info.hpp"
#include "rlflow/model_source.hpp"

#include <filesystem>
#include <optional>
#include <string>

namespace rlflow::python {

/// A graph and where it came from. Python never edits it in place: every optimisation or
/// episode works on a copy, so `file` stays the ONNX file the graph is.
struct PyGraph {
    Graph graph;
    /// What it was loaded from: a path, "zoo:NAME", "<bytes>", or what made it.
    std::string source;
    /// The ONNX file the graph was read from, unchanged since.
    std::optional<std::filesystem::path> file;
};

/// How ONNX input is read (keyword arguments of load()).
struct LoadArguments {
    std::map<std::string, std::int64_t> dims;
    std::vector<std::string> data_inputs;
    bool fold = true;
    std::size_t max_nodes = onnx_io::default_max_nodes;
};

inline onnx_io::ImportOptions import_options(const LoadArguments& a) {
    onnx_io::ImportOptions import;
    import.fold_constants = a.fold;
    import.dim_values = a.dims;
    import.data_inputs = a.data_inputs;
    import.max_nodes = a.max_nodes;
    return import;
}

/// Loads ONNX bytes, a path (str or os.PathLike) or "zoo:NAME".
inline PyGraph load_graph(const py::object& source, const LoadArguments& a) {
    if (py::isinstance<py::bytes>(source) || py::isinstance<py::bytearray>(source)) {
        const std::string bytes = py::isinstance<py::bytes>(source) ? std::string(source.cast<py::bytes>())
                                                                    : std::string(source.cast<py::bytearray>());
        const py::gil_scoped_release unlocked;
        const onnx_io::pb::ModelProto model = onnx_io::parse_model(bytes, "<bytes>");
        return {onnx_io::import_model(model, import_options(a), "<bytes>"), "<bytes>", std::nullopt};
    }
    const std::string path = py::str(py::module_::import("os").attr("fspath")(source));
    cli::ModelOptions options;
    options.dims = a.dims;
    options.data_inputs = a.data_inputs;
    options.no_fold = !a.fold;
    options.max_nodes = a.max_nodes;
    const py::gil_scoped_release unlocked;
    Graph g = cli::load_model(path, options);
    const bool is_file = !path.starts_with(cli::zoo_prefix);
    return {std::move(g), path, is_file ? std::optional<std::filesystem::path>(path) : std::nullopt};
}

/// Builds zoo model `name` with seeded random weights (or none, `weight_free`).
inline PyGraph zoo_graph(const std::string& name, std::int64_t batch, std::uint64_t seed, bool weight_free) {
    cli::ModelOptions options;
    options.batch = batch;
    options.seed = seed;
    options.weight_free = weight_free;
    const std::string source = std::string(cli::zoo_prefix) + name;
    return {cli::load_model(source, options), source, std::nullopt};
}

/// A float32 tensor as a NumPy array (copied: tensors own aligned buffers).
inline py::array_t<float> tensor_to_numpy(const Tensor& t) {
    const std::span<const std::int64_t> dims = t.shape().dims();
    py::array_t<float> out(std::vector<py::ssize_t>(dims.begin(), dims.end()));
    const std::span<const float> values = t.floats();
    std::copy(values.begin(), values.end(), out.mutable_data());
    return out;
}

/// The graph's inputs by name: those given in `inputs` (float32 arrays), the rest drawn
/// as exec::random_inputs draws them under `seed`.
inline std::map<std::string, Tensor> bind_inputs(const Graph& g, const py::dict& inputs, std::uint64_t seed) {
    std::vector<Tensor> drawn = exec::random_inputs(g, seed);
    std::map<std::string, Tensor> bound;
    for (std::size_t i = 0; i < g.inputs().size(); ++i) bound[g.node(g.inputs()[i]).name] = std::move(drawn[i]);
    for (const auto& [key, value] : inputs) {
        const std::string name = py::str(key);
        const auto array = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(value);
        RLFLOW_EXPECTS(array, precondition_error, "input '" + name + "' is not convertible to a float32 array");
        const std::vector<std::int64_t> dims(array.shape(), array.shape() + array.ndim());
        bound[name] = Tensor::from_floats(Shape(std::span<const std::int64_t>(dims)),
                                          std::vector<float>(array.data(), array.data() + array.size()));
    }
    return bound;
}

/// Runs `g` on the reference executor; returns {output name: array}.
inline py::dict run_graph(const PyGraph& g, const py::dict& inputs, std::uint64_t seed) {
    const std::map<std::string, Tensor> bound = bind_inputs(g.graph, inputs, seed);
    exec::RunResult result;
    {
        const py::gil_scoped_release unlocked;
        result = exec::Executor{}.run(g.graph, bound);
    }
    py::dict out;
    for (std::size_t i = 0; i < result.outputs.size(); ++i)
        out[py::str(g.graph.outputs()[i].name)] = tensor_to_numpy(result.outputs[i]);
    return out;
}

inline py::dict random_input_arrays(const PyGraph& g, std::uint64_t seed) {
    const std::vector<Tensor> drawn = exec::random_inputs(g.graph, seed);
    py::dict out;
    for (std::size_t i = 0; i < drawn.size(); ++i)
        if (drawn[i].dtype() == DType::Float32) out[py::str(g.graph.node(g.graph.inputs()[i]).name)] = tensor_to_numpy(drawn[i]);
    return out;
}

inline std::vector<std::string> input_names(const Graph& g) {
    std::vector<std::string> names;
    for (const NodeId id : g.inputs()) names.push_back(g.node(id).name);
    return names;
}

inline std::vector<std::string> output_names(const Graph& g) {
    std::vector<std::string> names;
    for (const GraphOutput& o : g.outputs()) names.push_back(o.name);
    return names;
}

inline void bind_graph(py::module_& m) {
    py::class_<PyGraph>(m, "Graph", "A computation graph: load it with rlflow.load or rlflow.zoo.")
        .def("info", [](const PyGraph& g) { return to_python(cli::info_json(g.source, g.graph, graph_statistics(g.graph))); },
             "Node, op, parameter, FLOP and memory counts, as `rlflow info --json` gives them.")
        .def("save", [](const PyGraph& g, const py::object& path, bool fused_conv_ms) {
                 onnx_io::ExportOptions options;
                 options.fused_conv_microsoft = fused_conv_ms;
                 const std::string file = py::str(py::module_::import("os").attr("fspath")(path));
                 const py::gil_scoped_release unlocked;
                 onnx_io::save_onnx(g.graph, file, options);  // checked, then written through a rename
             },
             py::arg("path"), py::kw_only(), py::arg("fused_conv_ms") = false,
             "Writes the graph as an ONNX file (checked by the ONNX checker; never a partial file).")
        .def("to_bytes", [](const PyGraph& g) {
                 std::string bytes;
                 {
                     const py::gil_scoped_release unlocked;
                     bytes = onnx_io::export_model(g.graph).SerializeAsString();
                 }
                 return py::bytes(bytes);
             },
             "The graph as serialised ONNX, for onnx.load_from_string or onnxruntime.InferenceSession.")
        .def("run", &run_graph, py::arg("inputs") = py::dict(), py::kw_only(), py::arg("seed") = 0,
             "Runs the graph on rlflow's reference executor. Inputs not given are drawn at random under `seed`; "
             "returns {output name: numpy array}.")
        .def("random_inputs", &random_input_arrays, py::arg("seed") = 0,
             "The float inputs run() draws under `seed`, as {name: numpy array}.")
        .def_property_readonly("num_nodes", [](const PyGraph& g) { return g.graph.num_nodes(); })
        .def_property_readonly("inputs", [](const PyGraph& g) { return input_names(g.graph); })
        .def_property_readonly("outputs", [](const PyGraph& g) { return output_names(g.graph); })
        .def_property_readonly("source", [](const PyGraph& g) { return g.source; })
        .def("__repr__", [](const PyGraph& g) {
            return "<rlflow.Graph " + g.source + ": " + std::to_string(g.graph.num_nodes()) + " nodes>";
        });
    m.def("load", [](const py::object& source, const std::map<std::string, std::int64_t>& dims,
                     const std::vector<std::string>& data_inputs, bool fold, std::size_t max_nodes) {
              return load_graph(source, {dims, data_inputs, fold, max_nodes});
          },
          py::arg("source"), py::kw_only(), py::arg("dims") = std::map<std::string, std::int64_t>(),
          py::arg("data_inputs") = std::vector<std::string>(), py::arg("fold") = true,
          py::arg("max_nodes") = onnx_io::default_max_nodes,
          "Loads a model: a path to an .onnx file (str or os.PathLike), 'zoo:NAME', or ONNX bytes. `dims` binds "
          "symbolic dimensions, `data_inputs` names the inputs that carry data (the rest are weights).");
    m.def("zoo", &zoo_graph, py::arg("name"), py::kw_only(), py::arg("batch") = 1, py::arg("seed") = 0,
          py::arg("weight_free") = false, "Builds a zoo model (see rlflow.zoo_names()) with seeded random weights.");
    m.def("zoo_names", [] {
        std::vector<std::string> names;
        for (const models::ZooEntry& e : models::zoo_entries()) names.emplace_back(e.name);
        return names;
    });
}

}  // namespace rlflow::python
