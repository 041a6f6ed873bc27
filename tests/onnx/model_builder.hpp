#pragma once
// Builds ONNX models node by node for the import tests.

#include <rlflow/onnx/tensor_io.hpp>

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace onnx_test {

using rlflow::DType;
using rlflow::Tensor;
namespace pb = ::onnx;

/// A typed value (a graph input's or output's ValueInfoProto) named `name`, of `dims` and
/// ONNX element type `elem` (1: float).
inline pb::ValueInfoProto value(const std::string& name, const std::vector<std::int64_t>& dims, int elem = 1) {
    pb::ValueInfoProto v;
    v.set_name(name);
    auto* t = v.mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    for (auto d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
    return v;
}

/// A model built node by node; tensors are named by the caller.
struct ModelBuilder {
    pb::ModelProto model;

    explicit ModelBuilder(std::int64_t opset = 17) {
        model.set_ir_version(8);
        model.add_opset_import()->set_version(opset);
        model.mutable_graph()->set_name("model");
    }
    pb::GraphProto& graph() { return *model.mutable_graph(); }
    ModelBuilder& input(const std::string& name, const std::vector<std::int64_t>& dims, DType dtype = DType::Float32) {
        typed(*graph().add_input(), name, dims, dtype);
        return *this;
    }
    ModelBuilder& constant(const std::string& name, const Tensor& value) {
        *graph().add_initializer() = rlflow::onnx_io::tensor_to_proto(value, name);
        return *this;
    }
    pb::NodeProto& node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out,
                        const std::string& domain = {}) {
        pb::NodeProto& n = *graph().add_node();
        n.set_op_type(op);
        n.set_domain(domain);
        n.set_name(out.front() + "_node");
        for (const auto& i : in) n.add_input(i);
        for (const auto& o : out) n.add_output(o);
        return n;
    }
    ModelBuilder& output(const std::string& name) {
        graph().add_output()->set_name(name);
        return *this;
    }
    /// An output with its type, as a model that passes the ONNX checker declares it.
    ModelBuilder& output(const std::string& name, const std::vector<std::int64_t>& dims, DType dtype = DType::Float32) {
        typed(*graph().add_output(), name, dims, dtype);
        return *this;
    }
    static void typed(pb::ValueInfoProto& v, const std::string& name, const std::vector<std::int64_t>& dims, DType dtype) {
        v.set_name(name);
        auto* t = v.mutable_type()->mutable_tensor_type();
        t->set_elem_type(static_cast<int>(dtype));
        for (const auto d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
    }
};

}  // namespace onnx_test
