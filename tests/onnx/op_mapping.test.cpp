// How ONNX nodes map onto core ops: forms that a core op does not compute exactly, and
// malformed attribute lists, are carried as opaque nodes (never read out of bounds).
#include "model_builder.hpp"
#include "../tensor_types.hpp"
#include <rlflow/core/statistics.hpp>
#include <rlflow/exec/executor.hpp>
#include <rlflow/onnx/export.hpp>
#include <rlflow/onnx/import.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace rlflow;
using onnx_test::value;
namespace pb = ::onnx;

namespace {

/// A model whose graph reads input `x` of shape `dims` into one node `op` named "n".
struct OneNodeModel {
    pb::ModelProto model;
    pb::NodeProto* node;

    OneNodeModel(std::int64_t opset, const std::string& op, const std::vector<std::int64_t>& dims) {
        model.set_ir_version(8);
        model.add_opset_import()->set_version(opset);
        pb::GraphProto& g = *model.mutable_graph();
        g.set_name("one_node");
        *g.add_input() = value("x", dims);
        node = g.add_node();
        node->set_op_type(op);
        node->set_name("n");
        node->add_input("x");
    }
    OneNodeModel& constant_input(const std::string& name, const Tensor& t) {
        *model.mutable_graph()->add_initializer() = onnx_io::tensor_to_proto(t, name);
        node->add_input(name);
        return *this;
    }
    OneNodeModel& attribute(const std::string& name, std::int64_t v) {
        new_attribute(name, pb::AttributeProto::INT).set_i(v);
        return *this;
    }
    OneNodeModel& attribute(const std::string& name, const std::string& v) {
        new_attribute(name, pb::AttributeProto::STRING).set_s(v);
        return *this;
    }
    OneNodeModel& attribute(const std::string& name, const std::vector<std::int64_t>& v) {
        pb::AttributeProto& a = new_attribute(name, pb::AttributeProto::INTS);
        for (const auto i : v) a.add_ints(i);
        return *this;
    }
    OneNodeModel& float_attribute(const std::string& name, float v) {
        new_attribute(name, pb::AttributeProto::FLOAT).set_f(v);
        return *this;
    }
    pb::AttributeProto& new_attribute(const std::string& name, pb::AttributeProto::AttributeType type) {
        pb::AttributeProto& a = *node->add_attribute();
        a.set_name(name);
        a.set_type(type);
        return a;
    }
    OneNodeModel& output(const std::string& name, const std::vector<std::int64_t>& dims) {
        node->add_output(name);
        *model.mutable_graph()->add_output() = value(name, dims);
        return *this;
    }
};

/// The node named "n" of an imported graph.
const Node& imported_node(const Graph& g) {
    const auto it = std::find_if(g.nodes().begin(), g.nodes().end(), [](const Node& n) { return n.name == "n"; });
    REQUIRE(it != g.nodes().end());
    return *it;
}

}  // namespace

TEST_CASE("a Slice whose axes or steps do not match its starts stays opaque") {
    OneNodeModel axes(13, "Slice", {2, 6});
    axes.constant_input("starts", ints({0, 1})).constant_input("ends", ints({6, 3})).constant_input("axes", ints({1}));
    axes.output("y", {2, 2});
    CHECK(imported_node(onnx_io::import_model(axes.model, {}, "axes.onnx")).op == OpKind::Opaque);

    OneNodeModel steps(13, "Slice", {2, 6});
    steps.constant_input("starts", ints({0, 1})).constant_input("ends", ints({2, 3}));
    steps.constant_input("axes", ints({0, 1})).constant_input("steps", ints({1}));
    steps.output("y", {2, 2});
    CHECK(imported_node(onnx_io::import_model(steps.model, {}, "steps.onnx")).op == OpKind::Opaque);

    OneNodeModel good(13, "Slice", {2, 6});
    good.constant_input("starts", ints({1})).constant_input("ends", ints({3})).constant_input("axes", ints({1}));
    good.output("y", {2, 2});
    const Graph sliced = onnx_io::import_model(good.model, {}, "good.onnx");
    const Node& split = imported_node(sliced);
    CHECK(split.op == OpKind::Split);
    CHECK(split.attributes.get_ints("split") == std::vector<std::int64_t>{1, 2, 3});
}

TEST_CASE("an equal Split along an axis the input lacks stays opaque") {
    OneNodeModel m(13, "Split", {2, 6});
    m.attribute("axis", std::int64_t{7}).output("a", {1, 6}).output("b", {1, 6});
    const Graph g = onnx_io::import_model(m.model, {}, "split.onnx");
    const Node& n = imported_node(g);
    CHECK(n.op == OpKind::Opaque);
    CHECK(n.op_type == "Split");
}

TEST_CASE("Split-1 sizes given as an input are not replaced by an equal split") {
    OneNodeModel m(1, "Split", {2, 6});
    m.constant_input("sizes", ints({2, 4})).attribute("axis", std::int64_t{1}).output("a", {2, 2}).output("b", {2, 4});
    const Graph g = onnx_io::import_model(m.model, {}, "split1.onnx");
    const Node& n = imported_node(g);
    CHECK(n.op == OpKind::Opaque);
    CHECK(n.inputs.size() == 2);
}

TEST_CASE("a Pad in a mode the core op lacks is carried as an opaque node, not an error") {
    OneNodeModel m(19, "Pad", {2, 6});
    m.constant_input("pads", ints({0, 1, 0, 1})).attribute("mode", std::string("wrap")).output("y", {2, 8});
    const Graph g = onnx_io::import_model(m.model, {}, "wrap.onnx");
    const Node& n = imported_node(g);
    CHECK(n.op == OpKind::Opaque);
    CHECK(n.attributes.get<std::string>("mode") == "wrap");
    onnx_io::ExportOptions unchecked;
    unchecked.check = false;  // ONNX 1.12's checker knows opsets up to 17
    const pb::ModelProto written = onnx_io::export_model(g, unchecked);
    REQUIRE(written.graph().node_size() == 1);
    CHECK(written.graph().node(0).op_type() == "Pad");
    CHECK(written.graph().node(0).input_size() == 2);

    OneNodeModel reflect(13, "Pad", {2, 6});
    reflect.constant_input("pads", ints({0, 1, 0, 1})).attribute("mode", std::string("reflect")).output("y", {2, 8});
    CHECK(imported_node(onnx_io::import_model(reflect.model, {}, "reflect.onnx")).op == OpKind::Pad);
}

TEST_CASE("auto_pad with a window that does not cover both spatial axes stays opaque") {
    OneNodeModel pool(13, "MaxPool", {1, 1, 6, 6});
    pool.attribute("kernel_shape", std::vector<std::int64_t>{2}).attribute("auto_pad", std::string("SAME_UPPER"));
    pool.output("y", {1, 1, 6, 6});
    CHECK(imported_node(onnx_io::import_model(pool.model, {}, "pool.onnx")).op == OpKind::Opaque);

    OneNodeModel conv(13, "Conv", {1, 1, 6, 6});
    conv.constant_input("w", Tensor::from_floats(Shape{1, 1, 3, 3}, std::vector<float>(9, 1.0f)));
    conv.attribute("strides", std::vector<std::int64_t>{2}).attribute("auto_pad", std::string("SAME_UPPER"));
    conv.output("y", {1, 1, 3, 3});
    CHECK(imported_node(onnx_io::import_model(conv.model, {}, "conv.onnx")).op == OpKind::Opaque);

    OneNodeModel same(13, "MaxPool", {1, 1, 6, 6});
    same.attribute("kernel_shape", std::vector<std::int64_t>{3, 3}).attribute("auto_pad", std::string("SAME_LOWER"));
    same.output("y", {1, 1, 6, 6});
    const Graph padded = onnx_io::import_model(same.model, {}, "same.onnx");
    const Node& resolved = imported_node(padded);
    CHECK(resolved.op == OpKind::MaxPool);
    CHECK(resolved.attributes.get_ints("pads") == std::vector<std::int64_t>{1, 1, 1, 1});
}

namespace {

/// Runs `g` on x = 0, 1, 2, ... and returns its one output's values.
std::vector<float> run_on_counting_input(const Graph& g) {
    const Shape x = g.node(g.inputs().front()).outputs[0].type.shape;
    std::vector<float> values(static_cast<std::size_t>(x.numel()));
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
    const std::vector<Tensor> inputs{Tensor::from_floats(x, values)};
    const auto outputs = exec::Executor{}.run(g, inputs).outputs;
    REQUIRE(outputs.size() == 1);
    return outputs[0].to_vector<float>();
}

/// The op types of an exported model's nodes, in order.
std::vector<std::string> exported_ops(const Graph& g) {
    const pb::ModelProto model = onnx_io::export_model(g);
    std::vector<std::string> ops;
    for (const auto& n : model.graph().node()) ops.push_back(n.op_type());
    return ops;
}

}  // namespace

TEST_CASE("a Gather of one index of a static tensor is a Split part and a Reshape, written back as a Slice") {
    // x[2, 3, 4] gathered at index -2 of axis 1 (a qkv split): y[2, 4] = x[:, 1, :].
    OneNodeModel m(13, "Gather", {2, 3, 4});
    m.constant_input("i", Tensor::from_values<std::int64_t>(DType::Int64, Shape{}, {-2}));
    m.attribute("axis", std::int64_t{1}).output("y", {2, 4});
    const Graph g = onnx_io::import_model(m.model, {}, "gather.onnx");
    CHECK(graph_statistics(g).opaque_nodes == 0);
    CHECK(imported_node(g).op == OpKind::Split);
    CHECK(run_on_counting_input(g) == std::vector<float>{4, 5, 6, 7, 16, 17, 18, 19});
    const auto ops = exported_ops(g);
    CHECK(ops == std::vector<std::string>{"Slice", "Reshape"});
    CHECK(run_on_counting_input(onnx_io::import_model(onnx_io::export_model(g))) == run_on_counting_input(g));

    // Indices that run up one by one keep their axis: x[:, 1:3, :].
    OneNodeModel range(13, "Gather", {2, 3, 4});
    range.constant_input("i", ints({1, 2})).attribute("axis", std::int64_t{1}).output("y", {2, 2, 4});
    const Graph kept = onnx_io::import_model(range.model, {}, "range.onnx");
    CHECK(graph_statistics(kept).opaque_nodes == 0);
    const auto values = run_on_counting_input(kept);
    REQUIRE(values.size() == 16);
    CHECK(values.front() == 4);
    CHECK(values.back() == 23);
}

TEST_CASE("a Gather of constant indices out of order is a core Gather; out of range it stays opaque") {
    // x[2, 3] = [[0, 1, 2], [3, 4, 5]] along axis 1.
    const std::vector<std::pair<std::vector<std::int64_t>, std::vector<float>>> cases{
        {{2, 1}, {2, 1, 5, 4}}, {{0, 2}, {0, 2, 3, 5}}, {{-1, -1}, {2, 2, 5, 5}}};
    for (const auto& [indices, expected] : cases) {
        OneNodeModel m(13, "Gather", {2, 3});
        m.constant_input("i", ints(indices)).attribute("axis", std::int64_t{1}).output("y", {2, 2});
        CAPTURE(indices.front());
        const Graph g = onnx_io::import_model(m.model, {}, "gather.onnx");
        CHECK(imported_node(g).op == OpKind::Gather);
        CHECK(run_on_counting_input(g) == expected);
        CHECK(exported_ops(g) == std::vector<std::string>{"Gather"});
    }
    OneNodeModel m(13, "Gather", {2, 3});
    m.constant_input("i", ints({3})).attribute("axis", std::int64_t{1}).output("y", {2, 1});
    CHECK(imported_node(onnx_io::import_model(m.model, {}, "gather.onnx")).op == OpKind::Opaque);
}

TEST_CASE("a unit-step Slice over several axes is one Split part per axis, written back as Slices") {
    // x[4, 6][1:3, 2:5]
    OneNodeModel m(13, "Slice", {4, 6});
    m.constant_input("starts", ints({1, 2})).constant_input("ends", ints({3, 5})).constant_input("axes", ints({0, -1}));
    m.output("y", {2, 3});
    const Graph g = onnx_io::import_model(m.model, {}, "box.onnx");
    CHECK(graph_statistics(g).opaque_nodes == 0);
    CHECK(graph_statistics(g).op_histogram.at("Split") == 2);
    CHECK(run_on_counting_input(g) == std::vector<float>{8, 9, 10, 14, 15, 16});
    CHECK(exported_ops(g) == std::vector<std::string>{"Slice", "Slice"});

    OneNodeModel twice(13, "Slice", {4, 6});
    twice.constant_input("starts", ints({1, 2})).constant_input("ends", ints({3, 5})).constant_input("axes", ints({1, 1}));
    twice.output("y", {4, 1});
    CHECK(imported_node(onnx_io::import_model(twice.model, {}, "twice.onnx")).op == OpKind::Opaque);
}

TEST_CASE("Dropout passes its input through at inference and at a constant ratio of 0, and stays opaque otherwise") {
    const auto flag = [](bool on) { return Tensor::from_values<std::uint8_t>(DType::Bool, Shape{}, {on ? std::uint8_t{1} : std::uint8_t{0}}); };
    const auto ratio = [](float r) { return Tensor::from_floats(Shape{}, {r}); };
    OneNodeModel plain(13, "Dropout", {2, 3});
    plain.output("y", {2, 3});
    CHECK(imported_node(onnx_io::import_model(plain.model, {}, "plain.onnx")).op == OpKind::Identity);

    OneNodeModel inference(13, "Dropout", {2, 3});
    inference.constant_input("r", ratio(0.5f)).constant_input("t", flag(false)).output("y", {2, 3});
    CHECK(imported_node(onnx_io::import_model(inference.model, {}, "inference.onnx")).op == OpKind::Identity);

    OneNodeModel zero(13, "Dropout", {2, 3});
    zero.constant_input("r", ratio(0.0f)).constant_input("t", flag(true)).output("y", {2, 3});
    const Graph passed = onnx_io::import_model(zero.model, {}, "zero.onnx");
    CHECK(imported_node(passed).op == OpKind::Identity);
    CHECK(run_on_counting_input(passed) == std::vector<float>{0, 1, 2, 3, 4, 5});

    OneNodeModel training(13, "Dropout", {2, 3});
    training.constant_input("r", ratio(0.5f)).constant_input("t", flag(true)).output("y", {2, 3});
    CHECK(imported_node(onnx_io::import_model(training.model, {}, "training.onnx")).op == OpKind::Opaque);

    OneNodeModel mask(13, "Dropout", {2, 3});
    mask.output("y", {2, 3}).output("mask", {2, 3});
    CHECK(imported_node(onnx_io::import_model(mask.model, {}, "mask.onnx")).op == OpKind::Opaque);
}

TEST_CASE("HardSigmoid, HardSwish and LeakyRelu import as core ops with their attributes, and HardSwish before opset 14 is written as HardSigmoid times x") {
    OneNodeModel sigmoid(13, "HardSigmoid", {2, 3});
    sigmoid.float_attribute("alpha", 0.25f).output("y", {2, 3});
    const Graph sg = onnx_io::import_model(sigmoid.model, {}, "hard_sigmoid.onnx");
    const Node& s = imported_node(sg);
    CHECK(s.op == OpKind::HardSigmoid);
    CHECK(s.attributes.get_float("alpha", 0) == doctest::Approx(0.25));
    CHECK(s.attributes.get_float("beta", 0) == doctest::Approx(0.5));  // ONNX's default, filled in

    OneNodeModel leaky(13, "LeakyRelu", {2, 3});
    leaky.output("y", {2, 3});
    const Graph lg = onnx_io::import_model(leaky.model, {}, "leaky.onnx");
    const Node& l = imported_node(lg);
    CHECK(l.op == OpKind::LeakyRelu);
    CHECK(l.attributes.get_float("alpha", 0) == doctest::Approx(0.01));

    OneNodeModel swish(14, "HardSwish", {2, 3});
    swish.output("y", {2, 3});
    Graph g = onnx_io::import_model(swish.model, {}, "hard_swish.onnx");
    CHECK(imported_node(g).op == OpKind::HardSwish);
    CHECK(exported_ops(g) == std::vector<std::string>{"HardSwish"});
    onnx_io::ExportOptions older;
    older.opset = 13;
    const pb::ModelProto written = onnx_io::export_model(g, older);
    REQUIRE(written.graph().node_size() == 2);
    CHECK(written.graph().node(0).op_type() == "HardSigmoid");
    CHECK(written.graph().node(1).op_type() == "Mul");
    CHECK(run_on_counting_input(onnx_io::import_model(written)) == run_on_counting_input(g));

    OneNodeModel unknown(14, "HardSwish", {2, 3});
    unknown.float_attribute("alpha", 0.5f).output("y", {2, 3});  // HardSwish has no attributes
    CHECK(imported_node(onnx_io::import_model(unknown.model, {}, "odd.onnx")).op == OpKind::Opaque);
}

TEST_CASE("a Slice with steps is a core Slice over every axis that round-trips through export") {
    // x[4, 6][::2, 5:0:-2]: rows 0 and 2, columns 5 and 3 and 1.
    OneNodeModel m(13, "Slice", {4, 6});
    m.constant_input("starts", ints({0, 5})).constant_input("ends", ints({std::numeric_limits<std::int64_t>::max(), 0}));
    m.constant_input("axes", ints({0, 1})).constant_input("steps", ints({2, -2}));
    m.output("y", {2, 3});
    const Graph g = onnx_io::import_model(m.model, {}, "strided.onnx");
    CHECK(graph_statistics(g).opaque_nodes == 0);
    const Node& n = imported_node(g);
    CHECK(n.op == OpKind::Slice);
    CHECK(n.attributes.get_ints("starts") == std::vector<std::int64_t>{0, 5});
    CHECK(n.attributes.get_ints("ends") == std::vector<std::int64_t>{3, 0});
    CHECK(n.attributes.get_ints("steps") == std::vector<std::int64_t>{2, -2});
    CHECK(run_on_counting_input(g) == std::vector<float>{5, 3, 1, 17, 15, 13});
    CHECK(exported_ops(g) == std::vector<std::string>{"Slice"});
    const Graph back = onnx_io::import_model(onnx_io::export_model(g));
    CHECK(imported_node(back).attributes == n.attributes);

    // Reversing a whole axis reaches index 0: its end is written as INT64_MIN, not -1.
    OneNodeModel reversed(13, "Slice", {4, 6});
    reversed.constant_input("starts", ints({-1})).constant_input("ends", ints({-7})).constant_input("axes", ints({1}));
    reversed.constant_input("steps", ints({-1})).output("y", {4, 6});
    const Graph r = onnx_io::import_model(reversed.model, {}, "reversed.onnx");
    const auto values = run_on_counting_input(r);
    REQUIRE(values.size() == 24);
    CHECK(values[0] == 5);
    CHECK(values[5] == 0);
    CHECK(run_on_counting_input(onnx_io::import_model(onnx_io::export_model(r))) == values);

    // A step of 0 is invalid, and a slice that keeps nothing is left to the runtime.
    OneNodeModel zero(13, "Slice", {4, 6});
    zero.constant_input("starts", ints({0})).constant_input("ends", ints({4})).constant_input("axes", ints({0}));
    zero.constant_input("steps", ints({0})).output("y", {4, 6});
    CHECK(imported_node(onnx_io::import_model(zero.model, {}, "zero.onnx")).op == OpKind::Opaque);
    OneNodeModel empty(13, "Slice", {4, 6});
    empty.constant_input("starts", ints({3})).constant_input("ends", ints({1})).constant_input("axes", ints({0}));
    empty.constant_input("steps", ints({2})).output("y", {0, 6});
    CHECK(imported_node(onnx_io::import_model(empty.model, {}, "empty.onnx")).op == OpKind::Opaque);
}

TEST_CASE("ReduceSum takes its axes as a constant input from opset 13, with noop_with_empty_axes an Identity") {
    OneNodeModel m(13, "ReduceSum", {2, 3});
    m.constant_input("axes", ints({-1})).attribute("keepdims", std::int64_t{0}).output("y", {2});
    const Graph g = onnx_io::import_model(m.model, {}, "sum.onnx");
    const Node& n = imported_node(g);
    CHECK(n.op == OpKind::ReduceSum);
    CHECK(n.attributes.get_ints("axes") == std::vector<std::int64_t>{1});
    CHECK(run_on_counting_input(g) == std::vector<float>{3, 12});
    const pb::ModelProto written = onnx_io::export_model(g);
    REQUIRE(written.graph().node_size() == 1);
    CHECK(written.graph().node(0).input_size() == 2);  // axes written as an input again
    CHECK(run_on_counting_input(onnx_io::import_model(written)) == run_on_counting_input(g));

    OneNodeModel all(13, "ReduceSum", {2, 3});
    all.output("y", {1, 1});
    const Graph every = onnx_io::import_model(all.model, {}, "all.onnx");
    CHECK(imported_node(every).op == OpKind::ReduceSum);
    CHECK(run_on_counting_input(every) == std::vector<float>{15});

    OneNodeModel noop(13, "ReduceSum", {2, 3});
    noop.attribute("noop_with_empty_axes", std::int64_t{1}).output("y", {2, 3});
    CHECK(imported_node(onnx_io::import_model(noop.model, {}, "noop.onnx")).op == OpKind::Identity);

    OneNodeModel older(11, "ReduceMax", {2, 3});
    older.attribute("axes", std::vector<std::int64_t>{0}).output("y", {1, 3});
    const Graph max = onnx_io::import_model(older.model, {}, "max.onnx");
    CHECK(imported_node(max).op == OpKind::ReduceMax);
    CHECK(run_on_counting_input(max) == std::vector<float>{3, 4, 5});
}

namespace {

/// A float tensor of `shape` holding `values`.
Tensor shaped_floats(const Shape& shape, std::vector<float> values) { return Tensor::from_floats(shape, std::move(values)); }

/// The op types of a graph's core and opaque nodes (no sources), in id order.
std::vector<std::string> graph_ops(const Graph& g) {
    std::vector<std::string> ops;
    for (const Node& n : g.nodes())
        if (!n.traits().has(op_flag_source)) ops.emplace_back(n.op_label());
    return ops;
}

}  // namespace

TEST_CASE("Resize with constant scales or sizes is a core op, written back with what ONNX Runtime sizes the same") {
    OneNodeModel up(13, "Resize", {1, 1, 2, 2});
    up.constant_input("roi", shaped_floats({0}, {})).constant_input("scales", shaped_floats({4}, {1, 1, 2, 2}));
    up.attribute("mode", std::string("nearest")).attribute("coordinate_transformation_mode", std::string("asymmetric"));
    up.attribute("nearest_mode", std::string("floor")).output("y", {1, 1, 4, 4});
    const Graph g = onnx_io::import_model(up.model, {}, "up.onnx");
    const Node& n = imported_node(g);
    REQUIRE(n.op == OpKind::Resize);
    CHECK(n.attributes.get_ints("sizes") == std::vector<std::int64_t>{1, 1, 4, 4});
    CHECK(run_on_counting_input(g) == std::vector<float>{0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3});
    const pb::ModelProto written = onnx_io::export_model(g);
    REQUIRE(written.graph().node_size() == 1);
    CHECK(written.graph().node(0).input_size() == 3);  // X, no roi, scales
    CHECK(imported_node(onnx_io::import_model(written)).attributes == n.attributes);

    // 11 -> 13 by sizes: the scale 13/11 in float32 times 11 truncates to 12, so sizes are
    // written (ONNX Runtime would size the output 12 from those scales).
    OneNodeModel odd(13, "Resize", {1, 11});
    odd.constant_input("roi", shaped_floats({0}, {})).constant_input("scales", shaped_floats({0}, {}));
    odd.constant_input("sizes", ints({1, 13})).attribute("mode", std::string("linear")).output("y", {1, 13});
    const Graph o = onnx_io::import_model(odd.model, {}, "odd.onnx");
    REQUIRE(imported_node(o).op == OpKind::Resize);
    const pb::ModelProto odd_written = onnx_io::export_model(o);
    REQUIRE(odd_written.graph().node(0).input_size() == 4);
    const Graph back = onnx_io::import_model(odd_written);
    CHECK(imported_node(back).attributes == imported_node(o).attributes);
    CHECK(run_on_counting_input(back) == run_on_counting_input(o));
    onnx_io::ExportOptions opset11;
    opset11.opset = 11;
    CHECK(onnx_io::export_model(o, opset11).graph().node(0).input_size() == 4);  // roi and scales present, empty

    // Forms the core op lacks stay opaque: cubic, tf_crop_and_resize, antialias, Resize-10.
    for (const auto& [attribute, text] : {std::pair{"mode", "cubic"}, std::pair{"coordinate_transformation_mode", "tf_crop_and_resize"}}) {
        OneNodeModel m(13, "Resize", {1, 1, 2, 2});
        m.constant_input("roi", shaped_floats({0}, {})).constant_input("scales", shaped_floats({4}, {1, 1, 2, 2}));
        m.attribute(attribute, std::string(text)).output("y", {1, 1, 4, 4});
        CHECK(imported_node(onnx_io::import_model(m.model, {}, "m.onnx")).op == OpKind::Opaque);
    }
    OneNodeModel smooth(18, "Resize", {1, 1, 4, 4});
    smooth.constant_input("roi", shaped_floats({0}, {})).constant_input("scales", shaped_floats({4}, {1, 1, 0.5f, 0.5f}));
    smooth.attribute("mode", std::string("linear")).attribute("antialias", std::int64_t{1}).output("y", {1, 1, 2, 2});
    CHECK(imported_node(onnx_io::import_model(smooth.model, {}, "smooth.onnx")).op == OpKind::Opaque);
    OneNodeModel ten(10, "Resize", {1, 1, 2, 2});
    ten.constant_input("scales", shaped_floats({4}, {1, 1, 2, 2})).output("y", {1, 1, 4, 4});
    CHECK(imported_node(onnx_io::import_model(ten.model, {}, "ten.onnx")).op == OpKind::Opaque);
}

TEST_CASE("InstanceNormalization imports as a core op and round-trips") {
    OneNodeModel m(13, "InstanceNormalization", {1, 2, 2});
    m.constant_input("scale", shaped_floats({2}, {2, 3})).constant_input("bias", shaped_floats({2}, {1, -1}));
    m.float_attribute("epsilon", 0.0f).output("y", {1, 2, 2});
    const Graph g = onnx_io::import_model(m.model, {}, "in.onnx");
    REQUIRE(imported_node(g).op == OpKind::InstanceNormalization);
    // Planes [0, 1] and [2, 3] normalise to [-1, 1]; then 2x + 1 and 3x - 1.
    CHECK(run_on_counting_input(g) == std::vector<float>{-1, 3, -4, 2});
    CHECK(exported_ops(g) == std::vector<std::string>{"InstanceNormalization"});
}

TEST_CASE("an Einsum that is a matrix product imports as MatMul between transposes and reshapes") {
    // y[b, q, k] = sum_d x[b, q, d] * w[b, k, d], against the sum computed here.
    const Shape xs{2, 3, 4}, ws{2, 5, 4};
    std::vector<float> w(40);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) - 3.0f;
    OneNodeModel m(13, "Einsum", {2, 3, 4});
    m.constant_input("w", shaped_floats(ws, w)).attribute("equation", std::string("bqd, bkd -> bqk")).output("y", {2, 3, 5});
    const Graph g = onnx_io::import_model(m.model, {}, "einsum.onnx");
    CHECK(graph_statistics(g).opaque_nodes == 0);
    CHECK(graph_ops(g) == std::vector<std::string>{"Transpose", "MatMul"});
    std::vector<float> expected;
    for (int b = 0; b < 2; ++b)
        for (int q = 0; q < 3; ++q)
            for (int k = 0; k < 5; ++k) {
                float sum = 0;
                for (int d = 0; d < 4; ++d) sum += static_cast<float>((b * 3 + q) * 4 + d) * w[static_cast<std::size_t>((b * 5 + k) * 4 + d)];
                expected.push_back(sum);
            }
    CHECK(run_on_counting_input(g) == expected);

    // Several row letters and an output in another order: y[j, i, k] = sum_c x[i, j, c] v[c, k].
    OneNodeModel grouped(13, "Einsum", {2, 3, 4});
    grouped.constant_input("v", shaped_floats({4, 2}, {1, 0, 0, 1, 1, 1, 2, -1})).attribute("equation", std::string("ijc,ck->jik"));
    grouped.output("y", {3, 2, 2});
    const Graph gg = onnx_io::import_model(grouped.model, {}, "grouped.onnx");
    CHECK(graph_statistics(gg).opaque_nodes == 0);
    const auto values = run_on_counting_input(gg);
    REQUIRE(values.size() == 12);
    // y[1, 0, :] = x[0, 1, :] . v = (4, 5, 6, 7) . v: k=0: 4 + 6 + 14 = 24, k=1: 5 + 6 - 7 = 4
    CHECK(values[4] == 24);
    CHECK(values[5] == 4);

    // A trace, a letter summed over one operand, an implicit output: opaque.
    for (const char* equation : {"bqd,bkd", "bqd,bkx->bqk", "bqd,bkd->bqkz"}) {
        OneNodeModel odd(13, "Einsum", {2, 3, 4});
        odd.constant_input("w", shaped_floats(ws, w)).attribute("equation", std::string(equation)).output("y", {2, 3, 5});
        CAPTURE(equation);
        CHECK(imported_node(onnx_io::import_model(odd.model, {}, "odd.onnx")).op == OpKind::Opaque);
    }
}

TEST_CASE("Gelu imports from opset 20, is written before it as the Erf form, which imports as Gelu again bit for bit") {
    OneNodeModel m(20, "Gelu", {2, 3});
    m.output("y", {2, 3});
    const Graph g = onnx_io::import_model(m.model, {}, "gelu.onnx");
    REQUIRE(imported_node(g).op == OpKind::Gelu);
    onnx_io::ExportOptions opset17;
    opset17.opset = 17;
    const pb::ModelProto written = onnx_io::export_model(g, opset17);
    std::vector<std::string> ops;
    for (const auto& n : written.graph().node()) ops.push_back(n.op_type());
    CHECK(ops == std::vector<std::string>{"Div", "Erf", "Add", "Mul", "Mul"});
    const Graph fused = onnx_io::import_model(written);
    CHECK(graph_ops(fused) == std::vector<std::string>{"Gelu"});
    CHECK(fused.outputs().front().name == "y");
    CHECK(run_on_counting_input(fused) == run_on_counting_input(g));
    // The pattern as core ops computes the same bits as the fused op.
    Graph plain;
    const TensorRef x{plain.add_input("x", TensorType{DType::Float32, Shape{2, 3}}), 0};
    const auto scalar = [&](float v) { return TensorRef{plain.add_constant("c" + std::to_string(v), shaped_floats({}, {v})), 0}; };
    const NodeId d = plain.add_node(OpKind::Div, {x, scalar(static_cast<float>(std::sqrt(2.0)))});
    const NodeId e = plain.add_node(OpKind::Erf, {{d, 0}});
    const NodeId a = plain.add_node(OpKind::Add, {scalar(1.0f), {e, 0}});
    const NodeId p = plain.add_node(OpKind::Mul, {{a, 0}, x});
    plain.add_output({plain.add_node(OpKind::Mul, {{p, 0}, scalar(0.5f)}), 0}, "y");
    CHECK(run_on_counting_input(plain) == run_on_counting_input(g));

    // tanh form before opset 20: its formula, within float rounding.
    OneNodeModel t(20, "Gelu", {2, 3});
    t.attribute("approximate", std::string("tanh")).output("y", {2, 3});
    const Graph tg = onnx_io::import_model(t.model, {}, "tanh.onnx");
    const auto tanh_values = run_on_counting_input(onnx_io::import_model(onnx_io::export_model(tg, opset17)));
    const auto direct = run_on_counting_input(tg);
    REQUIRE(tanh_values.size() == direct.size());
    for (std::size_t i = 0; i < direct.size(); ++i) CHECK(tanh_values[i] == doctest::Approx(direct[i]).epsilon(1e-6));

    // Gelu before opset 20 is not an ONNX op: opaque.
    OneNodeModel early(17, "Gelu", {2, 3});
    early.output("y", {2, 3});
    CHECK(imported_node(onnx_io::import_model(early.model, {}, "early.onnx")).op == OpKind::Opaque);
}

TEST_CASE("ConvTranspose with explicit pads imports as a core op; output_shape and auto_pad stay opaque") {
    std::vector<float> weight(2 * 3 * 2 * 2);
    for (std::size_t i = 0; i < weight.size(); ++i) weight[i] = static_cast<float>(i % 5) - 2.0f;
    OneNodeModel m(13, "ConvTranspose", {1, 2, 3, 3});
    m.constant_input("w", shaped_floats({2, 3, 2, 2}, weight)).attribute("strides", std::vector<std::int64_t>{2, 2});
    m.attribute("output_padding", std::vector<std::int64_t>{1, 0}).output("y", {1, 3, 7, 6});
    const Graph g = onnx_io::import_model(m.model, {}, "deconv.onnx");
    const Node& n = imported_node(g);
    REQUIRE(n.op == OpKind::ConvTranspose);
    CHECK(n.attributes.get_ints("kernel_shape") == std::vector<std::int64_t>{2, 2});  // from the weight
    CHECK(n.output_type().shape == Shape{1, 3, 7, 6});
    // Stride 2 with a 2x2 kernel: each input pixel owns its own 2x2 block of the output.
    const auto values = run_on_counting_input(g);
    REQUIRE(values.size() == 126);
    CHECK(values[0] == 0 * weight[0] + 9 * weight[12]);  // y[0, 0, 0, 0] = x[0,0,0,0] w[0,0,0,0] + x[0,1,0,0] w[1,0,0,0]
    CHECK(values[6 * 6] == 0.0f);  // the output-padding row gets no input
    CHECK(exported_ops(g) == std::vector<std::string>{"ConvTranspose"});
    CHECK(run_on_counting_input(onnx_io::import_model(onnx_io::export_model(g))) == values);

    OneNodeModel shaped(13, "ConvTranspose", {1, 2, 3, 3});
    shaped.constant_input("w", shaped_floats({2, 3, 2, 2}, weight)).attribute("output_shape", std::vector<std::int64_t>{6, 6});
    shaped.output("y", {1, 3, 6, 6});
    CHECK(imported_node(onnx_io::import_model(shaped.model, {}, "shaped.onnx")).op == OpKind::Opaque);
    OneNodeModel same(13, "ConvTranspose", {1, 2, 3, 3});
    same.constant_input("w", shaped_floats({2, 3, 2, 2}, weight)).attribute("auto_pad", std::string("SAME_UPPER"));
    same.output("y", {1, 3, 3, 3});
    CHECK(imported_node(onnx_io::import_model(same.model, {}, "same.onnx")).op == OpKind::Opaque);
}
