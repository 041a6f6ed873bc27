#pragma once
/// \file
/// The ONNX importer's machinery: one pass over the nodes in dependency order that folds
/// static subgraphs, maps default-domain ops onto core ops where that is exact, and
/// carries everything else as opaque nodes.

#include <rlflow/core/graph.hpp>
#include <rlflow/onnx/detail/folding.hpp>
#include <rlflow/onnx/detail/inference.hpp>
#include <rlflow/onnx/detail/node_order.hpp>
#include <rlflow/onnx/detail/op_mapping.hpp>
#include <rlflow/onnx/detail/patterns.hpp>
#include <rlflow/onnx/detail/types.hpp>
#include <rlflow/onnx/import_options.hpp>

#include <unordered_map>
#include <utility>
#include <unordered_set>

namespace rlflow::onnx_io::detail {

/// How many times the importer imports a model at most, each pass with the types the
/// previous one let inference find (Importer::run).
inline constexpr int max_import_passes = 16;

class Importer {
public:
    Importer(const pb::ModelProto& model, const ImportOptions& options, std::string source)
        : m_model(model), m_options(options), m_source(std::move(source)), m_opset(default_opset(model)) {}
    /// An importer that may release the model's initializer data once it has been read,
    /// so that a large model is not held twice.
    Importer(pb::ModelProto& model, const ImportOptions& options, std::string source)
        : Importer(std::as_const(model), options, std::move(source)) {
        m_releasable = &model;
    }

    Graph run() {
        check_size();
        m_structure = structure_only(m_model);
        read_initializers();
        collect_inferred_types(m_structure);
        // Shapes that only folding reveals (a Reshape target computed from Shape) type the
        // opaque nodes after them only once inference sees the folded values, and those types
        // let folding go further: import, infer again with what the import learnt, and
        // import again while inference types something new (a fixed point, as onnxsim's
        // repeated fold-and-infer).
        for (int pass = 1;; ++pass) {
            import_pass();
            if (!m_options.fold_constants || pass == max_import_passes) break;
            const InferenceOutcome again = infer_shapes(learnt_structure(), false);
            if (!again.ok || !types_more(again.model)) break;
            collect_types(again.model);
        }
        add_graph_outputs();
        fuse_erf_gelu(m_graph);
        keep_unread_initializers();
        try {
            m_graph.validate();
        } catch (const rlflow::error& e) {
            throw onnx_error(m_source + ": " + e.what());
        }
        return std::move(m_graph);
    }

private:
    enum class Origin { Initializer, ConstantNode, Folded };
    struct Known {
        /// Shared with the weight or constant node it becomes, so large weights are
        /// never copied.
        TensorPtr value;
        Origin origin;
        std::string node_name;
    };

    static std::int64_t default_opset(const pb::ModelProto& model) {
        for (const auto& o : model.opset_import())
            if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
        return 1;
    }
    static bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }
    std::string where(const pb::NodeProto& n) const {
        return m_source + ": node '" + n.name() + "' (" + n.op_type() + ")";
    }

    void check_size() const {
        const auto nodes = static_cast<std::size_t>(m_model.graph().node_size());
        if (m_options.max_nodes > 0 && nodes > m_options.max_nodes)
            throw onnx_error(m_source + ": " + std::to_string(nodes) + " nodes, more than the limit of "
                             + std::to_string(m_options.max_nodes) + " (--max-nodes)");
    }

    void copy_model_info() {
        ModelInfo& info = m_graph.info();
        info.graph_name = m_model.graph().name();
        info.graph_doc_string = m_model.graph().doc_string();
        info.producer_name = m_model.producer_name();
        info.producer_version = m_model.producer_version();
        info.domain = m_model.domain();
        info.doc_string = m_model.doc_string();
        info.ir_version = m_model.ir_version();
        info.model_version = m_model.model_version();
        info.opset_imports.clear();
        for (const auto& o : m_model.opset_import()) info.opset_imports.emplace_back(o.domain(), o.version());
        for (const auto& p : m_model.metadata_props()) info.metadata_props.emplace_back(p.key(), p.value());
    }

    /// Types of intermediate tensors from ONNX shape inference, used for opaque nodes.
    /// Inference is best effort: models with custom-domain ops cannot be inferred in
    /// full, and their opaque results then keep the types the file itself declares. The
    /// same holds where libonnx crashes on a malformed model (detail::infer_shapes).
    void collect_inferred_types(const pb::ModelProto& structure) {
        InferenceOutcome inferred = infer_shapes(structure, false);
        collect_types(inferred.ok ? inferred.model : structure);
    }
    void collect_types(const pb::ModelProto& model) {
        const auto& g = model.graph();
        for (const auto* list : {&g.value_info(), &g.input(), &g.output()})
            for (const auto& v : *list)
                if (v.has_type()) m_types[v.name()] = v.type();
    }

    /// Every initializer's tensor, read once (a later pass reuses them; the model's own
    /// bytes may already be released).
    void read_initializers() {
        for (int i = 0; i < m_model.graph().initializer_size(); ++i) {
            const auto& init = m_model.graph().initializer(i);
            m_initializers.emplace_back(init.name(), std::make_shared<const Tensor>(tensor_from_proto(init, m_source)));
            if (m_releasable) std::string().swap(*m_releasable->mutable_graph()->mutable_initializer(i)->mutable_raw_data());
        }
        if (m_model.graph().sparse_initializer_size() > 0)
            throw onnx_error(m_source + ": sparse initializers are not supported");
    }

    /// One import of every node, from scratch, with the types inferred so far.
    void import_pass() {
        m_graph = Graph();
        m_tensors.clear();
        m_constants.clear();
        m_reads.clear();
        copy_model_info();
        add_graph_inputs();
        for (const auto& [name, value] : m_initializers) m_constants[name] = {value, Origin::Initializer, {}};
        count_reads();
        if (m_order.empty()) m_order = dependency_order(m_model.graph(), m_source);
        for (const int i : m_order) import_node(m_model.graph().node(i));
    }

    /// The structure with what the last pass learnt: nodes that folded replaced by their
    /// values (small ones with data, as structure_only keeps), and the static type of every
    /// tensor the graph knows, symbolic dimensions bound.
    pb::ModelProto learnt_structure() const {
        pb::ModelProto learnt = m_structure;
        pb::GraphProto& g = *learnt.mutable_graph();
        std::unordered_set<std::string> initializers;
        for (const auto& init : g.initializer()) initializers.insert(init.name());
        auto folded = [this](const pb::NodeProto& n) {
            return std::all_of(n.output().begin(), n.output().end(),
                               [this](const std::string& o) { return o.empty() || m_constants.contains(o); });
        };
        pb::GraphProto kept;
        for (const auto& n : g.node()) {
            if (!folded(n)) {
                *kept.add_node() = n;
                continue;
            }
            for (const auto& o : n.output()) {
                if (o.empty() || initializers.contains(o)) continue;
                const Tensor& value = *m_constants.at(o).value;
                if (value.raw().size() <= structure_data_limit) {
                    *g.add_initializer() = tensor_to_proto(value, o);
                    continue;
                }
                pb::TensorProto& t = *g.add_initializer();
                t.set_name(o);
                t.set_data_type(static_cast<int>(value.dtype()));
                for (const auto d : value.shape().dims()) t.add_dims(d);
            }
        }
        g.mutable_node()->Swap(kept.mutable_node());
        std::unordered_set<std::string> inputs;
        for (auto& input : *g.mutable_input()) {
            inputs.insert(input.name());
            if (const auto type = known_type(input.name()); type && type->shape.is_static())
                type_to_proto(*type, *input.mutable_type());
        }
        g.clear_value_info();
        for (const auto& [name, ref] : m_tensors) {
            const TensorType& type = m_graph.type(ref);
            if (type.dtype == DType::Undefined || !type.shape.is_static() || inputs.contains(name)) continue;
            auto* v = g.add_value_info();
            v->set_name(name);
            type_to_proto(type, *v->mutable_type());
        }
        return learnt;
    }

    /// True when `inferred` gives a static type to an opaque node's output that the graph
    /// does not know statically yet.
    bool types_more(const pb::ModelProto& inferred) const {
        std::unordered_map<std::string, const pb::TypeProto*> types;
        for (const auto& v : inferred.graph().value_info()) types[v.name()] = &v.type();
        for (const auto& [name, ref] : m_tensors) {
            if (m_graph.node(ref.node).op != OpKind::Opaque) continue;
            const TensorType& now = m_graph.type(ref);
            if (now.dtype != DType::Undefined && now.shape.is_static()) continue;
            const auto it = types.find(name);
            if (it == types.end()) continue;
            bool exact = true;
            const TensorType learnt = type_from_proto(*it->second, m_options.dim_values, exact);
            if (exact && learnt.dtype != DType::Undefined && learnt.shape.is_static()) return true;
        }
        return false;
    }

    void add_graph_inputs() {
        std::unordered_set<std::string> initializers;
        for (const auto& init : m_model.graph().initializer()) initializers.insert(init.name());
        for (const auto& v : m_model.graph().input()) {
            if (initializers.contains(v.name())) {
                m_graph.info().onnx_initializer_inputs.push_back(v.name());
                continue;
            }
            if (v.name().empty()) throw onnx_error(m_source + ": a graph input has no name");
            const TensorType type = declared_type(v.name(), v.type());
            const auto& data = m_options.data_inputs;
            const bool weight = v.doc_string() == weight_marker
                                || (!data.empty() && std::find(data.begin(), data.end(), v.name()) == data.end());
            const NodeId id = weight ? m_graph.add_weight(v.name(), type) : m_graph.add_input(v.name(), type);
            m_tensors[v.name()] = {id, 0};
        }
    }

    /// The TensorType of a declared value; records the TypeProto when it says more.
    TensorType declared_type(const std::string& name, const pb::TypeProto& proto) {
        bool exact = true;
        const TensorType type = type_from_proto(proto, m_options.dim_values, exact);
        if (!exact || !type.shape.is_static()) m_graph.info().onnx_value_types[name] = proto.SerializeAsString();
        return type;
    }

    void count_reads() {
        for (const auto& n : m_model.graph().node())
            for (const auto& name : node_reads(n)) ++m_reads[name];
        for (const auto& o : m_model.graph().output()) ++m_reads[o.name()];
    }

    /// The graph tensor called `name`, creating the weight or constant node for a known
    /// value on first use.
    TensorRef materialize(const std::string& name, const std::string& context) {
        if (const auto it = m_tensors.find(name); it != m_tensors.end()) return it->second;
        const auto known = m_constants.find(name);
        if (known == m_constants.end())
            throw onnx_error(context + ": input '" + name + "' is not produced by any node, initializer or graph input");
        NodeId id;
        if (known->second.origin == Origin::ConstantNode) {
            id = m_graph.add_constant(name, *known->second.value);
            if (!known->second.node_name.empty()) m_graph.rename(id, known->second.node_name);
        } else {
            id = m_graph.add_weight(name, known->second.value->type(), known->second.value);
        }
        return m_tensors[name] = {id, 0};
    }

    void import_node(const pb::NodeProto& n);
    bool import_constant(const pb::NodeProto& n);
    bool fold(const pb::NodeProto& n);
    bool import_core(const pb::NodeProto& n);
    void import_opaque(const pb::NodeProto& n);
    std::optional<TensorType> known_type(const std::string& name) const;

    void add_graph_outputs() {
        for (const auto& v : m_model.graph().output()) {
            const TensorRef ref = materialize(v.name(), m_source + ": graph output '" + v.name() + "'");
            m_graph.add_output(ref, v.name());
            bool exact = true;
            const TensorType declared = type_from_proto(v.type(), m_options.dim_values, exact);
            if (!exact || !(declared == m_graph.type(ref)))
                m_graph.info().onnx_value_types[v.name()] = v.type().SerializeAsString();
        }
    }

    /// Initializers nothing reads stay in the model: an import drops nothing.
    void keep_unread_initializers() {
        for (const auto& init : m_model.graph().initializer())
            if (!m_reads.contains(init.name())) (void)materialize(init.name(), m_source);
    }

    const pb::ModelProto& m_model;
    pb::ModelProto* m_releasable = nullptr;
    const ImportOptions& m_options;
    std::string m_source;
    std::int64_t m_opset;
    Graph m_graph;
    std::unordered_map<std::string, TensorRef> m_tensors;
    std::unordered_map<std::string, Known> m_constants;
    std::unordered_map<std::string, pb::TypeProto> m_types;
    std::unordered_map<std::string, std::size_t> m_reads;
    pb::ModelProto m_structure;
    std::vector<std::pair<std::string, TensorPtr>> m_initializers;
    /// The nodes in dependency order, found by the first pass.
    std::vector<int> m_order;
};

/// The exact type of a tensor, if known (a type whose dtype is Undefined stands for one
/// the IR cannot express, e.g. rank > 6, and is not known).
inline std::optional<TensorType> Importer::known_type(const std::string& name) const {
    if (const auto it = m_tensors.find(name); it != m_tensors.end()) {
        const TensorType& t = m_graph.type(it->second);
        if (t.dtype == DType::Undefined) return std::nullopt;
        return t;
    }
    if (const auto it = m_constants.find(name); it != m_constants.end()) return it->second.value->type();
    return std::nullopt;
}

inline void Importer::import_node(const pb::NodeProto& n) {
    const std::string context = where(n);
    for (const auto& in : n.input())
        if (!in.empty() && !m_tensors.contains(in) && !m_constants.contains(in))
            throw onnx_error(context + ": input '" + in + "' is not produced by any node, initializer or graph input");
    if (is_default_domain(n.domain()) && n.op_type() == "Constant" && import_constant(n)) return;
    if (m_options.fold_constants && is_default_domain(n.domain()) && fold(n)) return;
    if (is_default_domain(n.domain()) && import_core(n)) return;
    import_opaque(n);
}

/// A Constant node with a tensor (or scalar/list) value becomes a known constant.
inline bool Importer::import_constant(const pb::NodeProto& n) {
    if (n.output_size() != 1 || n.attribute_size() != 1) return false;
    const auto& a = n.attribute(0);
    std::optional<Tensor> value;
    if (a.name() == "value" && a.type() == pb::AttributeProto::TENSOR && a.t().data_type() != static_cast<int>(DType::String))
        value = tensor_from_proto(a.t(), where(n));
    else if (a.name() == "value_float") value = Tensor::from_floats(Shape{}, {a.f()});
    else if (a.name() == "value_floats")
        value = Tensor::from_floats(Shape{a.floats_size()}, {a.floats().begin(), a.floats().end()});
    else if (a.name() == "value_int") value = Tensor::from_values<std::int64_t>(DType::Int64, Shape{}, {a.i()});
    else if (a.name() == "value_ints")
        value = Tensor::from_values<std::int64_t>(DType::Int64, Shape{a.ints_size()}, {a.ints().begin(), a.ints().end()});
    if (!value) return false;
    m_constants[n.output(0)] = {std::make_shared<const Tensor>(std::move(*value)), Origin::ConstantNode, n.name()};
    return true;
}

inline bool Importer::fold(const pb::NodeProto& n) {
    if (!is_foldable(n.op_type())) return false;
    std::vector<FoldInput> inputs;
    for (const auto& name : n.input()) {
        FoldInput in;
        if (!name.empty()) {
            if (const auto it = m_constants.find(name); it != m_constants.end()) in.value = it->second.value.get();
            in.type = known_type(name);
        }
        inputs.push_back(in);
    }
    auto outputs = fold_node(n, inputs, m_opset, m_source);
    if (!outputs || outputs->size() != static_cast<std::size_t>(n.output_size())) return false;
    std::size_t in_bytes = 0, out_bytes = 0;
    for (const auto& in : inputs) in_bytes += in.value != nullptr ? in.value->raw().size() : 0;
    for (const auto& out : *outputs) out_bytes += out.raw().size();
    if (out_bytes > fold_bytes_limit && out_bytes > in_bytes) return false;  // kept as the op
    for (int i = 0; i < n.output_size(); ++i)
        if (!n.output(i).empty())
            m_constants[n.output(i)] = {std::make_shared<const Tensor>(std::move((*outputs)[static_cast<std::size_t>(i)])),
                                        Origin::Folded, n.name()};
    return true;
}

inline bool Importer::import_core(const pb::NodeProto& n) {
    const ImportFn import = import_for(n.op_type());
    if (!import) return false;
    std::vector<ImportOperand> operands;
    for (const auto& name : n.input()) {
        ImportOperand o{name, name.empty() ? std::nullopt : known_type(name), nullptr};
        if (const auto it = m_constants.find(name); !name.empty() && it != m_constants.end()) o.constant = it->second.value.get();
        operands.push_back(std::move(o));
    }
    const std::string context = where(n);
    const auto spec = import(ImportContext{n, m_opset, operands, context});
    if (!spec) return false;
    // Core ops compute on static tensors of the element types they hold; anything else
    // stays opaque, and so does a node that lacks an input the core op reads (a Clip with
    // no inputs at all).
    if (operand_problem(*spec, operands, context)) return false;
    // Which ONNX output each core output carries (-1: an internal part of a Split).
    std::vector<int> carried;
    const std::size_t core_outputs = spec->op == OpKind::Split ? spec->attributes.get_ints("split").size() : 1;
    for (std::size_t i = 0; i < core_outputs; ++i)
        carried.push_back(spec->selected_output ? (i == *spec->selected_output ? 0 : -1) : static_cast<int>(i));
    const int mapped = spec->selected_output ? 1 : static_cast<int>(core_outputs);
    if (mapped > n.output_size()) return false;
    for (int i = mapped; i < n.output_size(); ++i)
        if (!n.output(i).empty() && m_reads.contains(n.output(i))) return false;  // e.g. a read MaxPool Indices
    std::vector<TensorRef> inputs;
    for (const std::size_t i : spec->tensor_inputs) inputs.push_back(materialize(operands[i].name, context));
    NodeId id;
    try {
        for (std::size_t k = 0; k < spec->before.size() && k < inputs.size(); ++k)
            for (std::size_t j = 0; j < spec->before[k].size(); ++j) {
                const CoreNodeSpec& stage = spec->before[k][j];
                const std::string name =
                    n.name().empty() ? std::string() : n.name() + "/in" + std::to_string(k) + "_" + std::to_string(j + 1);
                inputs[k] = {m_graph.add_node(stage.op, {inputs[k]}, stage.attributes, name), stage.selected_output.value_or(0)};
            }
        id = m_graph.add_node(spec->op, std::move(inputs), spec->attributes, n.name());
    } catch (const rlflow::error& e) {
        throw onnx_error(context + ": " + e.what());
    }
    if (!spec->then.empty()) {  // one ONNX output, through the later stages
        RLFLOW_ASSERT(mapped == 1);
        TensorRef ref{id, spec->selected_output.value_or(0)};
        try {
            for (std::size_t k = 0; k < spec->then.size(); ++k) {
                const CoreNodeSpec& stage = spec->then[k];
                const std::string name = n.name().empty() ? std::string() : n.name() + "/" + std::to_string(k + 1);
                const NodeId next = m_graph.add_node(stage.op, {ref}, stage.attributes, name);
                ref = {next, stage.selected_output.value_or(0)};
            }
        } catch (const rlflow::error& e) {
            throw onnx_error(context + ": " + e.what());
        }
        m_graph.rename_output(ref, n.output(0));
        m_tensors[n.output(0)] = ref;
        return true;
    }
    for (std::size_t i = 0; i < core_outputs; ++i) {
        if (carried[i] < 0) continue;
        const TensorRef ref{id, static_cast<std::uint32_t>(i)};
        m_graph.rename_output(ref, n.output(carried[i]));
        m_tensors[n.output(carried[i])] = ref;
    }
    return true;
}

inline void Importer::import_opaque(const pb::NodeProto& n) {
    const std::string context = where(n);
    std::vector<TensorRef> inputs;
    for (const auto& name : n.input()) inputs.push_back(name.empty() ? TensorRef{} : materialize(name, context));
    std::vector<TensorType> types;
    for (const auto& out : n.output()) {
        const auto it = m_types.find(out);
        types.push_back(it == m_types.end() || out.empty() ? TensorType{DType::Undefined, {}}
                                                            : declared_type(out, it->second));
        if (it == m_types.end() && !out.empty()) m_graph.info().onnx_value_types.erase(out);
    }
    Attributes attributes;
    for (const auto& a : n.attribute()) attributes.set(a.name(), attribute_from_proto(a, context));
    const NodeId id = m_graph.add_opaque(n.op_type(), n.domain(), std::move(inputs), std::move(types),
                                         std::move(attributes), n.name());
    for (int i = 0; i < n.output_size(); ++i) {
        m_graph.rename_output({id, static_cast<std::uint32_t>(i)}, n.output(i));
        if (!n.output(i).empty()) m_tensors[n.output(i)] = {id, static_cast<std::uint32_t>(i)};
    }
}

}  // namespace rlflow::onnx_io::detail
