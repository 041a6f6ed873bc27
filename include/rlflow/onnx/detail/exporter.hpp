#pragma once
/// \file
/// The ONNX exporter's machinery. Names are kept: graph inputs and weights first, then
/// graph outputs (the tensor that a graph output reads takes the output's name), then
/// every other tensor; a collision gets a numbered suffix.

#include <rlflow/core/graph.hpp>
#include <rlflow/onnx/detail/op_mapping.hpp>
#include <rlflow/onnx/detail/types.hpp>
#include <rlflow/onnx/export_options.hpp>
#include <rlflow/onnx/import_options.hpp>
#include <rlflow/onnx/opsets.hpp>

#include <map>

namespace rlflow::onnx_io::detail {

class Exporter {
public:
    Exporter(const Graph& g, const ExportOptions& options) : m_graph(g), m_options(options) {}

    pb::ModelProto run() {
        RLFLOW_EXPECTS(m_options.opset == 0 || supported_opset(m_options.opset), precondition_error,
                       "opset " + std::to_string(m_options.opset) + " cannot be written: rlflow writes opsets "
                           + supported_opset_range());
        m_opset = m_options.opset > 0 ? m_options.opset : graph_opset();
        assign_names();
        pb::GraphProto& graph = *m_model.mutable_graph();
        write_inputs_and_weights(graph);
        for (const NodeId id : m_graph.topological_order()) write_node(graph, m_graph.node(id));
        write_outputs(graph);
        write_model_fields();
        return std::move(m_model);
    }

private:
    std::int64_t graph_opset() const {
        for (const auto& [domain, version] : m_graph.info().opset_imports)
            if (domain.empty() || domain == "ai.onnx") return version;
        constexpr std::int64_t default_opset = 17;
        return default_opset;
    }

    std::string& name_of(TensorRef r) { return m_names[{r.node.value, r.index}]; }

    void assign_names() {
        for (const NodeId id : m_graph.inputs()) name_of({id, 0}) = m_tensor_names.claim(m_graph.node(id).name);
        for (const NodeId id : m_graph.weights()) name_of({id, 0}) = m_tensor_names.claim(m_graph.node(id).name);
        for (std::size_t i = 0; i < m_graph.outputs().size(); ++i) {
            const GraphOutput& o = m_graph.outputs()[i];
            const Node& producer = m_graph.node(o.value.node);
            const bool renamable = !producer.traits().has(op_flag_source) && !m_names.contains({o.value.node.value, o.value.index});
            if (renamable) name_of(o.value) = m_tensor_names.claim(o.name);
            else m_identity_outputs.push_back(i);
        }
        for (const Node& n : m_graph.nodes())
            for (std::uint32_t i = 0; i < n.outputs.size(); ++i)
                if (!m_names.contains({n.id.value, i}))
                    name_of({n.id, i}) = n.outputs[i].name.empty() ? std::string() : m_tensor_names.claim(n.outputs[i].name);
        // An output that reads a graph input, weight or constant under that tensor's own
        // name is written as is; only one under another name needs an Identity.
        for (const std::size_t i : m_identity_outputs) {
            const GraphOutput& o = m_graph.outputs()[i];
            if (name_of(o.value) != o.name) m_identity_names[i] = m_tensor_names.claim(o.name);
        }
    }

    /// A ValueInfo for `name`, with the preserved TypeProto when the import kept one.
    void value_info(pb::ValueInfoProto& v, const std::string& name, const std::string& original, const TensorType& type) {
        v.set_name(name);
        const auto& preserved = m_graph.info().onnx_value_types;
        if (const auto it = preserved.find(original); it != preserved.end()) v.mutable_type()->ParseFromString(it->second);
        else if (type.dtype != DType::Undefined) type_to_proto(type, *v.mutable_type());
    }

    void write_inputs_and_weights(pb::GraphProto& graph) {
        for (const NodeId id : m_graph.inputs()) {
            const Node& n = m_graph.node(id);
            value_info(*graph.add_input(), name_of({id, 0}), n.name, n.outputs[0].type);
        }
        const auto& listed = m_graph.info().onnx_initializer_inputs;
        for (const NodeId id : m_graph.weights()) {
            const Node& n = m_graph.node(id);
            if (n.data) {
                *graph.add_initializer() = tensor_to_proto(*n.data, name_of({id, 0}));
                if (std::find(listed.begin(), listed.end(), n.name) != listed.end())
                    value_info(*graph.add_input(), name_of({id, 0}), n.name, n.outputs[0].type);
                continue;
            }
            pb::ValueInfoProto& v = *graph.add_input();
            value_info(v, name_of({id, 0}), n.name, n.outputs[0].type);
            v.set_doc_string(std::string(weight_marker));
        }
    }

    std::vector<std::string> input_names(const Node& n) {
        std::vector<std::string> names;
        for (const auto& in : n.inputs) names.push_back(in.present() ? name_of(in) : std::string());
        return names;
    }
    std::vector<std::string> output_names(const Node& n) {
        std::vector<std::string> names;
        for (std::uint32_t i = 0; i < n.outputs.size(); ++i) names.push_back(name_of({n.id, i}));
        return names;
    }

    void write_node(pb::GraphProto& graph, const Node& n) {
        if (n.op == OpKind::Input || n.op == OpKind::Weight) return;
        if (n.op == OpKind::Constant) {
            pb::NodeProto& p = *graph.add_node();
            p.set_op_type("Constant");
            p.set_name(m_node_names.claim(n.name));
            p.add_output(name_of({n.id, 0}));
            pb::AttributeProto& a = *p.add_attribute();
            a.set_name("value");
            a.set_type(pb::AttributeProto::TENSOR);
            *a.mutable_t() = tensor_to_proto(*n.data, "");
            return;
        }
        if (n.op == OpKind::Opaque) {
            write_opaque(graph, n);
            return;
        }
        ExportContext c{n, m_opset, m_options.fused_conv_microsoft, input_names(n), output_names(n),
                        m_graph.types_of(n.inputs), graph, m_tensor_names, m_node_names, m_domains, {}};
        for (std::uint32_t i = 0; i < n.outputs.size(); ++i)
            c.outputs_read.push_back(!n.outputs[i].uses.empty() || m_graph.is_graph_output({n.id, i}));
        mapping_for(n.op).write(c);
    }

    void write_opaque(pb::GraphProto& graph, const Node& n) {
        pb::NodeProto& p = *graph.add_node();
        p.set_op_type(n.op_type);
        p.set_domain(n.domain);
        p.set_name(m_node_names.claim(n.name));
        for (const auto& name : input_names(n)) p.add_input(name);
        for (const auto& name : output_names(n)) p.add_output(name);
        for (const auto& [name, value] : n.attributes) attribute_to_proto(name, value, *p.add_attribute());
        if (!n.domain.empty() && n.domain != "ai.onnx") m_domains.insert(n.domain);
        for (std::uint32_t i = 0; i < n.outputs.size(); ++i) {
            const auto& out = n.outputs[i];
            const bool preserved = m_graph.info().onnx_value_types.contains(out.name);
            if (out.name.empty() || (out.type.dtype == DType::Undefined && !preserved) || m_graph.is_graph_output({n.id, i}))
                continue;
            value_info(*graph.add_value_info(), name_of({n.id, i}), out.name, out.type);
        }
    }

    void write_outputs(pb::GraphProto& graph) {
        for (std::size_t i = 0; i < m_graph.outputs().size(); ++i) {
            const GraphOutput& o = m_graph.outputs()[i];
            const auto identity = m_identity_names.find(i);
            const std::string name = identity == m_identity_names.end() ? name_of(o.value) : identity->second;
            if (identity != m_identity_names.end()) {
                pb::NodeProto& p = *graph.add_node();
                p.set_op_type("Identity");
                p.set_name(m_node_names.claim(name + "_identity"));
                p.add_input(name_of(o.value));
                p.add_output(name);
            }
            value_info(*graph.add_output(), name, o.name, m_graph.type(o.value));
        }
    }

    void write_model_fields() {
        const ModelInfo& info = m_graph.info();
        constexpr std::int64_t minimum_ir_version = 7;
        m_model.set_ir_version(std::max(info.ir_version, minimum_ir_version));
        m_model.set_producer_name(info.producer_name);
        m_model.set_producer_version(info.producer_version);
        m_model.set_domain(info.domain);
        m_model.set_model_version(info.model_version);
        m_model.set_doc_string(info.doc_string);
        // The checker requires a graph name; files without one get a neutral one.
        m_model.mutable_graph()->set_name(info.graph_name.empty() ? std::string("graph") : info.graph_name);
        m_model.mutable_graph()->set_doc_string(info.graph_doc_string);
        bool has_default = false;
        for (const auto& [domain, version] : info.opset_imports) {
            auto* o = m_model.add_opset_import();
            o->set_domain(domain);
            const bool is_default = domain.empty() || domain == "ai.onnx";
            o->set_version(is_default ? m_opset : version);
            has_default |= is_default;
            m_domains.erase(domain);
        }
        if (!has_default) {
            auto* o = m_model.add_opset_import();
            o->set_version(m_opset);
        }
        for (const auto& domain : m_domains) {
            auto* o = m_model.add_opset_import();
            o->set_domain(domain);
            o->set_version(1);
        }
        for (const auto& [key, value] : info.metadata_props) {
            auto* p = m_model.add_metadata_props();
            p->set_key(key);
            p->set_value(value);
        }
    }

    const Graph& m_graph;
    const ExportOptions& m_options;
    std::int64_t m_opset = 0;
    pb::ModelProto m_model;
    NameTable m_tensor_names;
    NameTable m_node_names;
    std::set<std::string> m_domains;
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> m_names;
    std::vector<std::size_t> m_identity_outputs;
    std::map<std::size_t, std::string> m_identity_names;
};

}  // namespace rlflow::onnx_io::detail
