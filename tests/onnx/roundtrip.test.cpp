// Import/export round trips, lossless pass-through of unknown ops, and error reporting.
#include "model_builder.hpp"
#include <rlflow/core/canonical.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/core/statistics.hpp>
#include <rlflow/exec/executor.hpp>
#include <rlflow/exec/random.hpp>
#include <rlflow/models/zoo.hpp>
#include <rlflow/onnx/export.hpp>
#include <rlflow/onnx/import.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

using namespace rlflow;
using onnx_test::value;
namespace pb = ::onnx;

namespace {

float max_abs_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    REQUIRE(a.size() == b.size());
    float worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        REQUIRE(a[i].shape() == b[i].shape());
        for (std::size_t j = 0; j < a[i].floats().size(); ++j)
            worst = std::max(worst, std::abs(a[i].floats()[j] - b[i].floats()[j]));
    }
    return worst;
}

pb::NodeProto& node(pb::GraphProto& g, const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                    const std::string& name, const std::string& domain = "") {
    pb::NodeProto& n = *g.add_node();
    n.set_op_type(op);
    n.set_name(name);
    n.set_domain(domain);
    for (auto& i : in) n.add_input(i);
    for (auto& o : out) n.add_output(o);
    return n;
}

/// x -> Relu -> custom.Frobnicate(alpha=0.5, mode="fast", sub=graph) -> Sigmoid -> y
pb::ModelProto model_with_custom_op() {
    pb::ModelProto m;
    m.set_ir_version(8);
    m.set_producer_name("unit-test");
    m.set_producer_version("4.2");
    m.set_doc_string("a model");
    auto* o = m.add_opset_import();
    o->set_version(13);
    auto* custom = m.add_opset_import();
    custom->set_domain("custom.domain");
    custom->set_version(3);
    auto* meta = m.add_metadata_props();
    meta->set_key("author");
    meta->set_value("tests");
    pb::GraphProto& g = *m.mutable_graph();
    g.set_name("custom_graph");
    *g.add_input() = value("data_in", {2, 3});
    node(g, "Relu", {"data_in"}, {"r"}, "relu_node");
    pb::NodeProto& f = node(g, "Frobnicate", {"r"}, {"f"}, "frob", "custom.domain");
    auto* alpha = f.add_attribute();
    alpha->set_name("alpha");
    alpha->set_type(pb::AttributeProto::FLOAT);
    alpha->set_f(0.5f);
    auto* mode = f.add_attribute();
    mode->set_name("mode");
    mode->set_type(pb::AttributeProto::STRING);
    mode->set_s("fast");
    auto* sub = f.add_attribute();
    sub->set_name("body");
    sub->set_type(pb::AttributeProto::GRAPH);
    sub->mutable_g()->set_name("inner");
    *g.add_value_info() = value("f", {2, 3});
    node(g, "Sigmoid", {"f"}, {"data_out"}, "sig");
    *g.add_output() = value("data_out", {2, 3});
    return m;
}

}  // namespace

TEST_CASE("zoo models round-trip through ONNX to an identical canonical form and equal outputs") {
    for (const char* name : {"resnet18", "squeezenet1_1", "inception_v3", "bert", "nasrnn"}) {
        CAPTURE(name);
        Graph g = models::build_zoo_model(name);
        exec::fill_random_weights(g, 3);
        const pb::ModelProto model = onnx_io::export_model(g);  // checked by the ONNX checker
        const Graph back = onnx_io::import_model(model, {}, name);
        // The import fuses the Erf form of GELU (BERT's) into Gelu ops of the same bits.
        Graph fused = g;
        onnx_io::detail::fuse_erf_gelu(fused);
        CHECK(canonical_form(back) == canonical_form(fused));
        const auto inputs = exec::random_inputs(g, 5);
        const auto before = exec::Executor{}.run(g, inputs).outputs;
        const auto after = exec::Executor{}.run(back, inputs).outputs;
        // Bit for bit, on any CPU: the round trip gives the same graph (the canonical forms
        // agree), so the same kernels run on the same values.
        CHECK(max_abs_difference(before, after) == 0.0f);
    }
}

TEST_CASE("weights without data are written as marked inputs and read back as weights") {
    const Graph g = models::build_zoo_model("resnet18");
    const pb::ModelProto model = onnx_io::export_model(g);
    CHECK(model.graph().initializer_size() == 0);
    CHECK(model.graph().input(0).name() == g.node(g.inputs()[0]).name);
    CHECK(model.graph().input(1).doc_string() == onnx_io::weight_marker);
    const Graph back = onnx_io::import_model(model);
    CHECK(back.weights().size() == g.weights().size());
    CHECK(back.inputs().size() == 1);
    CHECK(canonical_form(back) == canonical_form(g));
}

TEST_CASE("unknown ops, their attributes, names, opsets and model fields pass through unchanged") {
    const pb::ModelProto original = model_with_custom_op();
    const Graph g = onnx_io::import_model(original, {}, "custom.onnx");
    CHECK(g.num_nodes() == 4);
    const auto opaque = std::find_if(g.nodes().begin(), g.nodes().end(), [](const Node& n) { return n.op == OpKind::Opaque; });
    REQUIRE(opaque != g.nodes().end());
    CHECK((*opaque).op_type == "Frobnicate");
    CHECK((*opaque).domain == "custom.domain");
    CHECK((*opaque).outputs[0].type == TensorType{DType::Float32, Shape{2, 3}});
    const pb::ModelProto written = onnx_io::export_model(g);
    CHECK(written.producer_name() == "unit-test");
    CHECK(written.producer_version() == "4.2");
    CHECK(written.doc_string() == "a model");
    CHECK(written.graph().name() == "custom_graph");
    CHECK(written.metadata_props(0).value() == "tests");
    CHECK(written.graph().input(0).name() == "data_in");
    CHECK(written.graph().output(0).name() == "data_out");
    REQUIRE(written.opset_import_size() == 2);
    CHECK(written.opset_import(1).domain() == "custom.domain");
    CHECK(written.opset_import(1).version() == 3);
    const auto& frob = written.graph().node(1);
    CHECK(frob.op_type() == "Frobnicate");
    CHECK(frob.name() == "frob");
    REQUIRE(frob.attribute_size() == 3);
    // Attributes come back with the same content (sorted by name).
    CHECK(frob.attribute(0).name() == "alpha");
    CHECK(frob.attribute(0).f() == 0.5f);
    CHECK(frob.attribute(1).g().name() == "inner");
    CHECK(frob.attribute(2).s() == "fast");
    CHECK(canonical_form(onnx_io::import_model(written)) == canonical_form(g));
}

TEST_CASE("a fused convolution is written as Conv + Relu, or as FusedConv on request") {
    Graph g;
    const auto x = g.add_input("x", {DType::Float32, Shape{1, 2, 5, 5}});
    const auto w = g.add_weight("w", {DType::Float32, Shape{3, 2, 3, 3}});
    const auto c = g.add_node(OpKind::Conv2D, {{x, 0}, {w, 0}}, {{"activation", std::int64_t{1}}}, "conv");
    g.add_output({c, 0}, "y");
    exec::fill_random_weights(g, 1);
    const pb::ModelProto standard = onnx_io::export_model(g);
    REQUIRE(standard.graph().node_size() == 2);
    CHECK(standard.graph().node(0).op_type() == "Conv");
    CHECK(standard.graph().node(1).op_type() == "Relu");
    CHECK(standard.graph().node(1).output(0) == "y");
    onnx_io::ExportOptions fused;
    fused.fused_conv_microsoft = true;
    const pb::ModelProto ms = onnx_io::export_model(g, fused);
    REQUIRE(ms.graph().node_size() == 1);
    CHECK(ms.graph().node(0).op_type() == "FusedConv");
    CHECK(ms.graph().node(0).domain() == "com.microsoft");
    // The standard form imports back as two core ops computing the same values, bit for
    // bit on any CPU: the same convolution kernel, then a ReLU, which is exact whether
    // fused or not.
    const Graph back = onnx_io::import_model(standard);
    const auto inputs = exec::random_inputs(g, 2);
    CHECK(max_abs_difference(exec::Executor{}.run(g, inputs).outputs, exec::Executor{}.run(back, inputs).outputs) == 0.0f);
}

TEST_CASE("a merged grouped-conv kernel is written as Concat and a mask, and runs the same after import") {
    // Equal bit for bit, on any CPU, in both subcases: the merged kernel is the same
    // whether MergeGConv or Concat and a 0/1 mask builds it (copies, and products by 0 and
    // 1, are exact), and the same convolution kernel then runs on it.
    // x -> Conv(MergeGConv(w, count 2, group 4), group 2) -> y
    Graph g;
    const auto x = g.add_input("x", {DType::Float32, Shape{1, 8, 6, 6}});
    const auto w = g.add_weight("w", {DType::Float32, Shape{8, 2, 3, 3}});
    const auto merged = g.add_node(OpKind::MergeGConv, {{w, 0}}, {{"count", std::int64_t{2}}, {"group", std::int64_t{4}}},
                                   "merge");
    const auto c = g.add_node(OpKind::Conv2D, {{x, 0}, {merged, 0}},
                              {{"group", std::int64_t{2}}, {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}}, "conv");
    g.add_output({c, 0}, "y");
    const auto inputs = exec::random_inputs(g, 4);

    SUBCASE("with weight data, import folds the transform back into one kernel") {
        exec::fill_random_weights(g, 3);
        const pb::ModelProto model = onnx_io::export_model(g);  // checked by the ONNX checker
        REQUIRE(model.graph().node_size() == 3);
        CHECK(model.graph().node(0).op_type() == "Concat");
        CHECK(model.graph().node(0).input_size() == 2);
        CHECK(model.graph().node(1).op_type() == "Mul");
        CHECK(model.graph().node(2).op_type() == "Conv");
        const Graph back = onnx_io::import_model(model);
        CHECK(max_abs_difference(exec::Executor{}.run(g, inputs).outputs, exec::Executor{}.run(back, inputs).outputs)
              == 0.0f);
    }
    SUBCASE("without weight data, the transform comes back as core Concat and Mul") {
        Graph back = onnx_io::import_model(onnx_io::export_model(g));
        const GraphStatistics s = graph_statistics(back);
        CHECK(s.opaque_nodes == 0);
        CHECK(s.op_histogram.at("Concat") == 1);
        CHECK(s.op_histogram.at("Mul") == 1);
        exec::fill_random_weights(g, 3);
        exec::fill_random_weights(back, 3);  // the same data: it depends on the seed, name and type
        CHECK(max_abs_difference(exec::Executor{}.run(g, inputs).outputs, exec::Executor{}.run(back, inputs).outputs)
              == 0.0f);
    }
}

TEST_CASE("pools written at an old opset leave out the attributes it lacks, and refuse what it cannot express") {
    // ceil_mode came with MaxPool-10 and AveragePool-10, MaxPool's dilations with
    // MaxPool-10: an opset-9 model (such as an old PyTorch export) has neither.
    const auto pools = [](std::int64_t ceil_mode) {
        Graph g;
        const auto x = g.add_input("x", {DType::Float32, Shape{1, 2, 6, 6}});
        const Attributes window{{"kernel_shape", std::vector<std::int64_t>{2, 2}}, {"ceil_mode", ceil_mode}};
        const auto max = g.add_node(OpKind::MaxPool, {{x, 0}}, window, "max");
        g.add_output({g.add_node(OpKind::AveragePool, {{max, 0}}, window, "average"), 0}, "y");
        g.info().opset_imports = {{"", 9}};
        return g;
    };
    const pb::ModelProto model = onnx_io::export_model(pools(0));  // checked by the ONNX checker
    REQUIRE(model.graph().node_size() == 2);
    for (const auto& n : model.graph().node()) {
        CAPTURE(n.op_type());
        std::vector<std::string> names;
        for (const auto& a : n.attribute()) names.push_back(a.name());
        CHECK(std::find(names.begin(), names.end(), "ceil_mode") == names.end());
        CHECK(std::find(names.begin(), names.end(), "dilations") == names.end());
        CHECK(std::find(names.begin(), names.end(), "kernel_shape") != names.end());
    }
    CHECK(model.graph().node(1).op_type() == "AveragePool");
    CHECK(model.graph().node(1).attribute_size() == 4);  // kernel_shape, strides, pads, count_include_pad
    const Graph back = onnx_io::import_model(model);
    CHECK(canonical_form(back) == canonical_form(pools(0)));
    CHECK_THROWS_WITH_AS((void)onnx_io::export_model(pools(1)),
                         "[rlflow.onnx_error] MaxPool node 'max' (#1): ceil_mode other than its default needs opset 10",
                         onnx_error);
    onnx_io::ExportOptions newer;
    newer.opset = 11;
    CHECK_NOTHROW((void)onnx_io::export_model(pools(1), newer));
}

TEST_CASE("garbage and truncated files are onnx errors naming the file") {
    CHECK_THROWS_WITH_AS((void)onnx_io::parse_model("\xff\xff\xff garbage", "bad.onnx"),
                         doctest::Contains("bad.onnx: not a valid ONNX model"), onnx_error);
    Graph g = models::build_zoo_model("squeezenet1_1");
    exec::fill_random_weights(g, 1);
    const std::string bytes = onnx_io::export_model(g).SerializeAsString();
    for (const std::size_t cut : {bytes.size() / 3, bytes.size() / 2, bytes.size() - 7}) {
        CAPTURE(cut);
        CHECK_THROWS_AS((void)onnx_io::import_model(onnx_io::parse_model(bytes.substr(0, cut), "cut.onnx"), {}, "cut.onnx"),
                        onnx_error);
    }
}

TEST_CASE("a missing input and a cycle are onnx errors naming the node") {
    pb::ModelProto m = model_with_custom_op();
    m.mutable_graph()->mutable_node(2)->set_input(0, "nowhere");
    CHECK_THROWS_WITH_AS((void)onnx_io::import_model(m, {}, "m.onnx"),
                         "[rlflow.onnx_error] m.onnx: node 'sig' (Sigmoid): input 'nowhere' is not produced by any node, "
                         "initializer or graph input",
                         onnx_error);
    pb::ModelProto cyclic = model_with_custom_op();
    cyclic.mutable_graph()->mutable_node(0)->set_input(0, "data_out");
    CHECK_THROWS_WITH_AS((void)onnx_io::import_model(cyclic, {}, "c.onnx"), doctest::Contains("lies on a cycle"), onnx_error);
}

TEST_CASE("a model with more nodes than the limit is refused before anything is built") {
    const auto relu_chain = [](int length) {
        pb::ModelProto m;
        m.set_ir_version(8);
        m.add_opset_import()->set_version(13);
        pb::GraphProto& g = *m.mutable_graph();
        *g.add_input() = value("v0", {1, 4});
        for (int i = 0; i < length; ++i) {
            pb::NodeProto& n = *g.add_node();
            n.set_op_type("Relu");
            n.add_input("v" + std::to_string(i));
            n.add_output("v" + std::to_string(i + 1));
        }
        *g.add_output() = value("v" + std::to_string(length), {1, 4});
        return m;
    };
    onnx_io::ImportOptions options;
    options.max_nodes = 10;
    CHECK_NOTHROW((void)onnx_io::import_model(relu_chain(10), options, "ten.onnx"));
    CHECK_THROWS_WITH_AS((void)onnx_io::import_model(relu_chain(11), options, "eleven.onnx"),
                         "[rlflow.onnx_error] eleven.onnx: 11 nodes, more than the limit of 10 (--max-nodes)", onnx_error);
    // The default limit: a million nodes.
    const int over = static_cast<int>(onnx_io::default_max_nodes) + 1;
    CHECK_THROWS_WITH_AS((void)onnx_io::import_model(relu_chain(over), {}, "big.onnx"), doctest::Contains("more than the limit of 1000000"),
                         onnx_error);
}

TEST_CASE("save_onnx writes atomically and leaves nothing behind on failure") {
    Graph g = models::build_zoo_model("nasrnn");
    exec::fill_random_weights(g, 1);
    const auto dir = std::filesystem::temp_directory_path() / "rlflow_onnx_save_test";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    onnx_io::save_onnx(g, dir / "out.onnx");
    CHECK(canonical_form(onnx_io::load_onnx(dir / "out.onnx")) == canonical_form(g));
    CHECK(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator{}) == 1);
    CHECK_THROWS_AS(onnx_io::save_onnx(g, dir / "missing" / "out.onnx"), io_error);
    std::filesystem::remove_all(dir);
}

TEST_CASE("corrupted models are rejected with rlflow errors, never a crash or a foreign exception") {
    const std::string path = std::string(RLFLOW_SOURCE_DIR) + "/tests/data/squeezenet1_1_op13.onnx";
    const std::string original = onnx_io::read_file(path);
    constexpr int trials = 150;
    constexpr int max_flips = 8;
    Rng rng(2024);
    int rejected = 0, accepted = 0;
    for (int trial = 0; trial < trials; ++trial) {
        std::string bytes = original;
        const auto flips = 1 + rng.below(max_flips);
        for (std::uint64_t f = 0; f < flips; ++f)
            bytes[rng.below(bytes.size())] = static_cast<char>(rng.below(256));
        try {
            const Graph g = onnx_io::import_model(onnx_io::parse_model(bytes, "mutated.onnx"), {}, "mutated.onnx");
            onnx_io::ExportOptions options;
            options.check = false;
            (void)onnx_io::export_model(g, options);
            ++accepted;
        } catch (const rlflow::error& e) {
            CHECK(std::string(e.what()).find("mutated.onnx") != std::string::npos);
            ++rejected;
        }
    }
    CHECK(rejected > 0);  // most corruptions must be noticed...
    CHECK(accepted > 0);  // ...while flips inside weight bytes are legitimately accepted
}

TEST_CASE("models that crash libonnx's shape inference are imported or refused by name, never a crash") {
    // Found by fuzzing: libonnx 1.12 dereferences a missing input's type (EyeLike reading an
    // undefined tensor), and indexes past a kernel shape (ConvTranspose with a rank-2
    // weight on rank-3 data). Inference runs in a child process, so the crash is the child's.
    const std::filesystem::path corpus = std::filesystem::path(RLFLOW_SOURCE_DIR) / "tests/fuzz/corpus";
    CHECK_THROWS_AS(onnx_io::load_onnx(corpus / "onnx_import_nofold/undefined_input_eyelike.onnx"), onnx_error);
    const std::filesystem::path conv = corpus / "onnx_roundtrip/convtranspose_rank_mismatch.onnx";
    const Graph g = onnx_io::load_onnx(conv);
    CHECK(g.num_nodes() > 0);
    try {
        (void)onnx_io::export_model(g);
        FAIL("the ONNX checker should refuse a ConvTranspose whose weight rank differs from its input's");
    } catch (const onnx_error& e) {
        CHECK(std::string(e.what()).find("crashed") != std::string::npos);
    }
}

TEST_CASE("a packed QKV weight sliced in the graph becomes three plain weights") {
    // x (2,4) @ Slice(W_qkv (4,12), [0:4], [4:8], [8:12] on axis 1) -> q, k, v
    pb::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(13);
    pb::GraphProto& g = *m.mutable_graph();
    *g.add_input() = value("x", {2, 4});
    std::vector<float> packed(48);
    for (std::size_t i = 0; i < packed.size(); ++i) packed[i] = static_cast<float>(i);
    *g.add_initializer() = onnx_io::tensor_to_proto(Tensor::from_floats(Shape{4, 12}, packed), "in_proj_weight");
    const auto ints = [](std::vector<std::int64_t> v) {
        return Tensor::from_values<std::int64_t>(DType::Int64, Shape{static_cast<std::int64_t>(v.size())}, v);
    };
    *g.add_initializer() = onnx_io::tensor_to_proto(ints({1}), "axis1");
    for (int part = 0; part < 3; ++part) {
        const std::string p = std::to_string(part);
        *g.add_initializer() = onnx_io::tensor_to_proto(ints({4 * part}), "start" + p);
        *g.add_initializer() = onnx_io::tensor_to_proto(ints({4 * part + 4}), "end" + p);
        node(g, "Slice", {"in_proj_weight", "start" + p, "end" + p, "axis1"}, {"w" + p}, "slice" + p);
        node(g, "MatMul", {"x", "w" + p}, {"y" + p}, "matmul" + p);
        *g.add_output() = value("y" + p, {2, 4});
    }
    const Graph imported = onnx_io::import_model(m, {}, "qkv.onnx");
    int matmuls = 0, weights = 0;
    for (const Node& n : imported.nodes()) {
        CHECK(n.op != OpKind::Opaque);
        matmuls += n.op == OpKind::MatMul ? 1 : 0;
        if (n.op == OpKind::Weight) {
            ++weights;
            REQUIRE(n.data);
            CHECK(n.data->shape() == Shape{4, 4});
        }
    }
    CHECK(matmuls == 3);
    CHECK(weights == 3);  // the packed tensor was absorbed by folding
    // The middle slice holds columns 4..7 of the packed matrix.
    const Node& w1 = imported.node(imported.node(imported.outputs()[1].value.node).inputs[1].node);
    CHECK(w1.data->floats()[0] == 4.0f);
    CHECK(w1.data->floats()[4] == 16.0f);
}

TEST_CASE("graph outputs that read a graph input or an initializer directly keep their names") {
    pb::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(13);
    pb::GraphProto& g = *m.mutable_graph();
    g.set_name("pass_through");
    *g.add_input() = value("x", {2, 3});
    *g.add_initializer() = onnx_io::tensor_to_proto(Tensor::from_floats(Shape{2}, {1, 2}), "w");
    node(g, "Relu", {"x"}, {"y"}, "relu");
    for (const char* name : {"y", "x"}) *g.add_output() = value(name, {2, 3});
    *g.add_output() = value("w", {2});
    const pb::ModelProto written = onnx_io::export_model(onnx_io::import_model(m, {}, "pass.onnx"));  // checked
    REQUIRE(written.graph().output_size() == 3);
    CHECK(written.graph().output(0).name() == "y");
    CHECK(written.graph().output(1).name() == "x");
    CHECK(written.graph().output(2).name() == "w");
    REQUIRE(written.graph().node_size() == 1);  // no Identity was needed
    CHECK(written.graph().node(0).op_type() == "Relu");
    // An output of the same input under another name still gets an Identity.
    Graph direct;
    const NodeId x = direct.add_input("x", {DType::Float32, Shape{2, 3}});
    direct.add_output({x, 0}, "x");
    direct.add_output({x, 0}, "x_copy");
    const pb::ModelProto copied = onnx_io::export_model(direct);
    REQUIRE(copied.graph().output_size() == 2);
    CHECK(copied.graph().output(0).name() == "x");
    CHECK(copied.graph().output(1).name() == "x_copy");
    REQUIRE(copied.graph().node_size() == 1);
    CHECK(copied.graph().node(0).op_type() == "Identity");
    CHECK(copied.graph().node(0).input(0) == "x");
}

TEST_CASE("initializers that were also graph inputs are listed as inputs again on export") {
    pb::ModelProto m;
    m.set_ir_version(3);
    m.add_opset_import()->set_version(11);
    pb::GraphProto& g = *m.mutable_graph();
    *g.add_input() = value("x", {2});
    *g.add_input() = value("bias", {2});
    *g.add_initializer() = onnx_io::tensor_to_proto(Tensor::from_floats(Shape{2}, {1, 2}), "bias");
    node(g, "Add", {"x", "bias"}, {"y"}, "add");
    *g.add_output() = value("y", {2});
    const Graph imported = onnx_io::import_model(m, {}, "old_ir.onnx");
    CHECK(imported.inputs().size() == 1);
    CHECK(imported.weights().size() == 1);
    const pb::ModelProto written = onnx_io::export_model(imported);
    REQUIRE(written.graph().input_size() == 2);
    CHECK(written.graph().input(0).name() == "x");
    CHECK(written.graph().input(1).name() == "bias");
    CHECK(written.graph().initializer(0).name() == "bias");
}
