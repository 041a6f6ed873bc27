#pragma once
/// \file
/// The graph IR: a DAG of nodes with typed tensors on its edges. Graph inputs, weights
/// (initializers, data optional) and constants are source nodes; graph outputs name
/// tensors. Every edit keeps the use lists consistent and re-runs shape inference where
/// types may change.
///
/// Edits can be recorded and undone exactly (begin_recording, end_recording, undo). Every
/// public edit goes through a few private primitives (core/detail/graph_storage.hpp:
/// append a node, link or unlink a use, write an input slot, erase a node, add or retarget
/// a graph output, rename, retype, replace attributes or data); each primitive notes itself
/// in the journal while recording, so new edits built from them are covered without
/// further work.

#include <rlflow/core/detail/graph_storage.hpp>
#include <rlflow/core/edit_journal.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/core/node.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <ranges>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rlflow {

/// Model-level fields kept for lossless ONNX round trips.
struct ModelInfo {
    std::string graph_name = "rlflow";
    std::string graph_doc_string;
    std::string producer_name = "rlflow";
    std::string producer_version;
    std::string domain;
    std::string doc_string;
    std::int64_t ir_version = 8;
    std::int64_t model_version = 0;
    /// (domain, version); the default domain is "".
    std::vector<std::pair<std::string, std::int64_t>> opset_imports{{"", 17}};
    std::vector<std::pair<std::string, std::string>> metadata_props;
    /// Serialised ONNX TypeProto of graph inputs, outputs and opaque results whose type a
    /// TensorType cannot express exactly (symbolic dims, sequences, optionals), by name.
    std::map<std::string, std::string> onnx_value_types;
    /// Initializers that the ONNX file also listed as graph inputs (overridable defaults,
    /// IR version < 4 style), so export lists them as inputs again.
    std::vector<std::string> onnx_initializer_inputs;
};

/// A computation graph.
///
/// Recording: between begin_recording() and end_recording() every edit is logged in an
/// EditJournal, and undo() of that journal restores the graph exactly (ids, id_bound(),
/// names, attributes, data, types, use-list order, input, weight and output order).
/// Journals are undone newest first. Model-level metadata (info()) is not journaled.
/// Copying a Graph copies all of its state, a recording in progress included: the copy
/// goes on recording into its own journal.
class Graph : private detail::GraphStorage {
public:
    // ---- construction -------------------------------------------------------------------

    /// Adds a graph input (in ONNX input order).
    NodeId add_input(std::string name, TensorType type) {
        return append(make_node(OpKind::Input, std::move(name), {}, {}, {type}));
    }
    /// Adds a weight (initializer). `data`, if given, must match `type`.
    NodeId add_weight(std::string name, TensorType type, TensorPtr data = nullptr) {
        RLFLOW_EXPECTS(!data || data->type() == type, shape_error,
                       "weight '" + name + "': data " + data->type().to_string() + " vs declared " + type.to_string());
        Node n = make_node(OpKind::Weight, std::move(name), {}, {}, {type});
        n.data = std::move(data);
        return append(std::move(n));
    }
    /// Adds a Constant node holding `value`.
    NodeId add_constant(std::string name, Tensor value) {
        const TensorType type = value.type();
        Node n = make_node(OpKind::Constant, std::move(name), {}, {}, {type});
        n.data = std::make_shared<const Tensor>(std::move(value));
        return append(std::move(n));
    }
    /// Adds a core op node; normalises its attributes and infers its output types.
    /// Throws shape_error (naming the node) if the inputs do not fit the op.
    NodeId add_node(OpKind op, std::vector<TensorRef> inputs, Attributes attributes = {}, std::string name = {}) {
        const OpTraits& traits = op_traits(op);
        RLFLOW_EXPECTS(!traits.has(op_flag_source) && !traits.has(op_flag_opaque), graph_error,
                       "add_node cannot create " + std::string(traits.name) + " nodes");
        Node probe;
        probe.id = NodeId{static_cast<std::uint32_t>(m_nodes.size())};
        probe.op = op;
        probe.name = name.empty() ? default_name(op, probe.id) : name;
        check_inputs(probe, inputs);
        const std::vector<TensorType> in_types = types_of(inputs);
        const std::string where = probe.describe();
        traits.normalize(attributes, in_types, where);
        check_attributes(where, traits, attributes);
        const std::vector<TensorType> out = traits.infer(OpContext{attributes, in_types, {}, where});
        return append(make_node(op, std::move(probe.name), std::move(inputs), std::move(attributes), out));
    }
    /// Adds an op rlflow does not interpret, with the output types its importer found.
    NodeId add_opaque(std::string op_type, std::string domain, std::vector<TensorRef> inputs,
                      std::vector<TensorType> output_types, Attributes attributes = {}, std::string name = {}) {
        Node probe;
        probe.id = NodeId{static_cast<std::uint32_t>(m_nodes.size())};
        probe.op = OpKind::Opaque;
        probe.op_type = op_type;
        probe.name = name.empty() ? op_type + "_" + std::to_string(probe.id.value) : name;
        for (const auto& ref : inputs)
            if (ref.present()) check_ref(probe, ref);
        Node n =
            make_node(OpKind::Opaque, std::move(probe.name), std::move(inputs), std::move(attributes), output_types);
        n.op_type = std::move(op_type);
        n.domain = std::move(domain);
        return append(std::move(n));
    }
    /// Marks a tensor as a graph output named `name` (defaults to the tensor's name).
    void add_output(TensorRef value, std::string name = {}) {
        check_ref_exists(value, "graph output");
        append_graph_output({value, name.empty() ? output(value).name : std::move(name)});
    }

    // ---- edits --------------------------------------------------------------------------

    /// Removes a node none of whose outputs is used or is a graph output.
    void remove_node(NodeId id) {
        const Node& n = node(id);
        for (std::size_t i = 0; i < n.outputs.size(); ++i) {
            RLFLOW_EXPECTS(n.outputs[i].uses.empty(), graph_error,
                           n.describe() + ": cannot remove, output " + std::to_string(i) + " is still used");
            RLFLOW_EXPECTS(!is_graph_output({id, static_cast<std::uint32_t>(i)}), graph_error,
                           n.describe() + ": cannot remove a graph output");
        }
        for (std::uint32_t slot_index = 0; slot_index < n.inputs.size(); ++slot_index)
            if (n.inputs[slot_index].present()) unlink(n.inputs[slot_index], {id, slot_index});
        erase_node(id);
    }
    /// Points every consumer of `from` (and any graph output naming it) at `to`.
    /// The two tensors must have the same type.
    void replace_all_uses(TensorRef from, TensorRef to) {
        check_ref_exists(from, "replace_all_uses source");
        check_ref_exists(to, "replace_all_uses target");
        RLFLOW_EXPECTS(type(from) == type(to), shape_error,
                       "replace_all_uses: " + type(from).to_string() + " vs " + type(to).to_string());
        if (from == to) return;
        const std::vector<Use> uses = output(from).uses;
        for (const Use& u : uses) set_input_unchecked(u.node, u.input, to);
        for (std::uint32_t i = 0; i < m_outputs.size(); ++i)
            if (m_outputs[i].value == from) write_graph_output(i, to);
    }
    /// Rewires input `slot` of `id` to `value`, re-infers the node and everything
    /// downstream whose types change.
    void set_input(NodeId id, std::size_t slot_index, TensorRef value) {
        const Node& n = node(id);
        RLFLOW_EXPECTS(slot_index < n.inputs.size(), graph_error,
                       n.describe() + ": no input slot " + std::to_string(slot_index));
        check_ref(n, value);
        set_input_unchecked(id, static_cast<std::uint32_t>(slot_index), value);
        reinfer_downstream(id);
    }
    /// Replaces a node's attributes (normalised), re-inferring it and its dependents.
    void set_attributes(NodeId id, Attributes attributes) {
        Node& n = slot(id);
        const OpTraits& traits = n.traits();
        if (!traits.has(op_flag_opaque)) {
            traits.normalize(attributes, types_of(n.inputs), n.describe());
            check_attributes(n.describe(), traits, attributes);
        }
        replace_attributes(n, std::move(attributes));
        reinfer_downstream(id);
    }
    /// Replaces node `old` by a new core op node that takes over its name, output names,
    /// consumers and graph outputs. Output count and types must match.
    NodeId replace_node(NodeId old, OpKind op, std::vector<TensorRef> inputs, Attributes attributes = {}) {
        const std::string name = node(old).name;
        const NodeId fresh = add_node(op, std::move(inputs), std::move(attributes), name + "~");
        const Node& o = node(old);
        const Node& f = node(fresh);
        RLFLOW_EXPECTS(o.outputs.size() == f.outputs.size(), graph_error,
                       f.describe() + ": cannot replace " + o.describe() + ", output counts differ");
        for (std::uint32_t i = 0; i < o.outputs.size(); ++i) replace_all_uses({old, i}, {fresh, i});
        std::vector<std::string> names;
        for (const auto& out : o.outputs) names.push_back(out.name);
        remove_node(old);
        rename(fresh, name);
        for (std::uint32_t i = 0; i < names.size(); ++i) rename_output({fresh, i}, std::move(names[i]));
        return fresh;
    }
    /// Removes every node from which no graph output is reachable (graph inputs stay).
    /// Returns how many were removed.
    std::size_t remove_dead_nodes() {
        std::vector<char> live(m_nodes.size(), 0);
        std::vector<NodeId> stack;
        for (const auto& o : m_outputs) stack.push_back(o.value.node);
        while (!stack.empty()) {
            const NodeId id = stack.back();
            stack.pop_back();
            if (live[id.value]) continue;
            live[id.value] = 1;
            for (const auto& in : node(id).inputs)
                if (in.present()) stack.push_back(in.node);
        }
        std::size_t removed = 0;
        for (const NodeId id : std::views::reverse(topological_order())) {
            if (live[id.value] || node(id).op == OpKind::Input) continue;
            remove_node(id);
            ++removed;
        }
        return removed;
    }
    /// Renames a node (names are not interpreted, only carried).
    void rename(NodeId id, std::string name) { write_name(id, std::move(name)); }
    /// Renames an output tensor.
    void rename_output(TensorRef ref, std::string name) { write_output_name(ref, std::move(name)); }
    /// Sets the data of a Weight node (must match its type).
    void set_weight_data(NodeId id, TensorPtr data) {
        Node& n = slot(id);
        RLFLOW_EXPECTS(n.op == OpKind::Weight && data && data->type() == n.outputs[0].type, shape_error,
                       n.describe() + ": data does not match " + n.outputs[0].type.to_string());
        replace_data(n, std::move(data));
    }

    // ---- recording and undo (defined in core/detail/graph_storage.hpp) ------------------

    /// Starts logging every edit into a new journal (precondition_error if recording).
    using detail::GraphStorage::begin_recording;
    /// Stops recording and hands out the journal (precondition_error if not recording).
    using detail::GraphStorage::end_recording;
    /// Whether edits are being logged.
    using detail::GraphStorage::recording;
    /// Undoes a journal, restoring the graph exactly as it was at begin_recording().
    using detail::GraphStorage::undo;
    /// Counts mutations of this graph object; never takes the same value twice.
    using detail::GraphStorage::revision;

    // ---- queries ------------------------------------------------------------------------

    /// Whether `id` names a live node.
    using detail::GraphStorage::contains;
    /// The live node `id`; throws graph_error if there is none.
    using detail::GraphStorage::node;
    /// Number of live nodes, source nodes included.
    [[nodiscard]] std::size_t num_nodes() const noexcept { return m_live; }
    /// One past the largest id ever issued (size for id-indexed arrays).
    [[nodiscard]] std::uint32_t id_bound() const noexcept { return static_cast<std::uint32_t>(m_nodes.size()); }
    /// The live nodes in id order.
    [[nodiscard]] auto nodes() const {
        return m_nodes | std::views::filter([](const std::optional<Node>& n) { return n.has_value(); })
               | std::views::transform([](const std::optional<Node>& n) -> const Node& { return *n; });
    }
    [[nodiscard]] const std::vector<NodeId>& inputs() const noexcept { return m_inputs; }
    [[nodiscard]] const std::vector<NodeId>& weights() const noexcept { return m_weights; }
    [[nodiscard]] const std::vector<GraphOutput>& outputs() const noexcept { return m_outputs; }
    [[nodiscard]] const NodeOutput& output(TensorRef ref) const {
        check_ref_exists(ref, "tensor");
        return m_nodes[ref.node.value]->outputs[ref.index];
    }
    [[nodiscard]] const TensorType& type(TensorRef ref) const { return output(ref).type; }
    [[nodiscard]] bool is_graph_output(TensorRef ref) const noexcept {
        return std::any_of(m_outputs.begin(), m_outputs.end(), [&](const GraphOutput& o) { return o.value == ref; });
    }
    /// Types of a list of tensors.
    [[nodiscard]] std::vector<TensorType> types_of(std::span<const TensorRef> refs) const {
        std::vector<TensorType> types;
        types.reserve(refs.size());
        append_types(refs, types);
        return types;
    }
    /// types_of(refs) appended to `out`, for a caller that reuses its storage.
    void append_types(std::span<const TensorRef> refs, std::vector<TensorType>& out) const {
        for (const auto& r : refs) out.push_back(r.present() ? type(r) : TensorType{DType::Undefined, {}});
    }
    /// The id of the graph input named `name`, if any.
    [[nodiscard]] std::optional<NodeId> find_input(std::string_view name) const {
        for (const NodeId id : m_inputs)
            if (node(id).name == name) return id;
        return std::nullopt;
    }

    /// A topological order: Kahn's algorithm taking the smallest ready id first, so the
    /// order is a function of the graph alone, and a graph whose id order is already
    /// topological (an imported one) keeps that order. Throws graph_error naming a node
    /// on a cycle.
    [[nodiscard]] std::vector<NodeId> topological_order() const {
        std::vector<std::uint32_t> pending(m_nodes.size(), 0);
        std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
        for (const Node& n : nodes()) {
            for (const auto& in : n.inputs) pending[n.id.value] += in.present() ? 1u : 0u;
            if (pending[n.id.value] == 0) ready.push(n.id);
        }
        std::vector<NodeId> order;
        order.reserve(m_live);
        while (!ready.empty()) {
            const NodeId id = ready.top();
            ready.pop();
            order.push_back(id);
            for (const auto& out : node(id).outputs)
                for (const Use& u : out.uses)
                    if (--pending[u.node.value] == 0) ready.push(u.node);
        }
        if (order.size() != m_live) {
            for (const Node& n : nodes())
                if (pending[n.id.value] != 0) throw graph_error(n.describe() + ": lies on a cycle");
        }
        return order;
    }

    /// Re-runs shape inference over the whole graph in topological order.
    void infer_shapes() {
        for (const NodeId id : topological_order()) reinfer(id);
    }

    /// Checks every structural invariant; throws graph_error or shape_error naming the node.
    void validate() const;

    /// Model-level metadata (ONNX fields).
    [[nodiscard]] ModelInfo& info() noexcept { return m_info; }
    [[nodiscard]] const ModelInfo& info() const noexcept { return m_info; }

private:
    /// A node with the next id, not yet in the graph.
    [[nodiscard]] Node make_node(OpKind op, std::string name, std::vector<TensorRef> inputs, Attributes attributes,
                                 const std::vector<TensorType>& output_types) const {
        const NodeId id{static_cast<std::uint32_t>(m_nodes.size())};
        Node n;
        n.id = id;
        n.op = op;
        n.name = name.empty() ? default_name(op, id) : std::move(name);
        n.attributes = std::move(attributes);
        n.inputs = std::move(inputs);
        n.outputs.resize(output_types.size());
        for (std::size_t i = 0; i < output_types.size(); ++i) {
            n.outputs[i].type = output_types[i];
            n.outputs[i].name = output_types.size() == 1 ? n.name : n.name + ":" + std::to_string(i);
        }
        return n;
    }
    static std::string default_name(OpKind op, NodeId id) {
        return std::string(op_name(op)) + "_" + std::to_string(id.value);
    }
    void check_ref(const Node& consumer, TensorRef ref) const {
        if (!ref.present() || !contains(ref.node) || ref.index >= m_nodes[ref.node.value]->outputs.size())
            throw graph_error(consumer.describe() + ": input refers to missing tensor #"
                              + std::to_string(ref.node.value) + ":" + std::to_string(ref.index));
    }
    void check_inputs(const Node& n, std::span<const TensorRef> inputs) const {
        const OpTraits& t = n.traits();
        const int count = static_cast<int>(inputs.size());
        if (count < t.min_inputs || (t.max_inputs >= 0 && count > t.max_inputs))
            throw graph_error(n.describe() + ": takes " + std::to_string(t.min_inputs) + ".."
                              + (t.max_inputs < 0 ? std::string("n") : std::to_string(t.max_inputs)) + " inputs, got "
                              + std::to_string(count));
        for (const auto& ref : inputs) check_ref(n, ref);
    }
    static void check_attributes(const std::string& where, const OpTraits& t, const Attributes& attributes) {
        for (const auto& [name, value] : attributes) {
            const auto spec = std::find_if(t.attributes.begin(), t.attributes.end(),
                                           [&](const AttributeSpec& s) { return s.name == name; });
            if (spec == t.attributes.end()) throw graph_error(where + ": unknown attribute '" + name + "'");
            if (value.index() != static_cast<std::size_t>(spec->type))
                throw graph_error(where + ": attribute '" + name + "' must be of type "
                                  + std::string(attribute_type_name(spec->type)));
        }
        for (const auto& spec : t.attributes)
            if (spec.required && !attributes.has(spec.name))
                throw graph_error(where + ": missing required attribute '" + std::string(spec.name) + "'");
    }
    void set_input_unchecked(NodeId id, std::uint32_t slot_index, TensorRef value) {
        const TensorRef previous = node(id).inputs[slot_index];
        if (previous.present()) unlink(previous, {id, slot_index});
        write_input(id, slot_index, value);
        if (value.present()) link(value, {id, slot_index});
    }
    /// Re-infers one node's output types; returns whether they changed.
    bool reinfer(NodeId id) {
        Node& n = slot(id);
        const OpTraits& t = n.traits();
        if (t.has(op_flag_source) || t.has(op_flag_opaque)) return false;
        const std::vector<TensorType> in_types = types_of(n.inputs);
        const std::vector<TensorType> out = t.infer(OpContext{n.attributes, in_types, {}, n.describe()});
        RLFLOW_EXPECTS(out.size() == n.outputs.size(), graph_error, n.describe() + ": output count changed");
        bool changed = false;
        for (std::size_t i = 0; i < out.size(); ++i) changed |= !(n.outputs[i].type == out[i]);
        if (changed) write_output_types(n, out);
        return changed;
    }
    /// Re-infers `start`, then every consumer whose input types changed.
    void reinfer_downstream(NodeId start) {
        std::vector<NodeId> work{start};
        std::size_t steps = 0;
        const std::size_t limit = 4 * m_nodes.size() + 16;
        while (!work.empty()) {
            RLFLOW_EXPECTS(++steps <= limit, graph_error, node(start).describe() + ": edit created a cycle");
            const NodeId id = work.back();
            work.pop_back();
            if (!reinfer(id)) continue;
            for (const auto& out : node(id).outputs)
                for (const Use& u : out.uses) work.push_back(u.node);
        }
    }

    ModelInfo m_info;
};

inline void Graph::validate() const {
    for (const Node& n : nodes()) {
        const OpTraits& t = n.traits();
        if (!t.has(op_flag_opaque)) {
            check_inputs(n, n.inputs);
            check_attributes(n.describe(), t, n.attributes);
        }
        for (std::uint32_t s = 0; s < n.inputs.size(); ++s) {
            const TensorRef in = n.inputs[s];
            if (!in.present()) {
                RLFLOW_EXPECTS(t.has(op_flag_opaque), graph_error, n.describe() + ": input " + std::to_string(s) + " is absent");
                continue;
            }
            check_ref(n, in);
            const auto& uses = output(in).uses;
            RLFLOW_EXPECTS(std::binary_search(uses.begin(), uses.end(), Use{n.id, s}), graph_error,
                           n.describe() + ": input " + std::to_string(s) + " missing from its producer's uses");
        }
        for (const auto& out : n.outputs)
            for (const Use& u : out.uses)
                RLFLOW_EXPECTS(contains(u.node) && u.input < node(u.node).inputs.size(), graph_error,
                               n.describe() + ": output '" + out.name + "' has a dangling use");
        if (n.data)
            RLFLOW_EXPECTS(n.data->type() == n.outputs[0].type, shape_error,
                           n.describe() + ": data " + n.data->type().to_string() + " vs " + n.outputs[0].type.to_string());
        RLFLOW_EXPECTS(n.op != OpKind::Constant || n.data, graph_error, n.describe() + ": constant without data");
        if (t.has(op_flag_source) || t.has(op_flag_opaque)) continue;
        const auto in_types = types_of(n.inputs);
        const auto inferred = t.infer(OpContext{n.attributes, in_types, {}, n.describe()});
        RLFLOW_EXPECTS(inferred.size() == n.outputs.size(), graph_error, n.describe() + ": wrong output count");
        for (std::size_t i = 0; i < inferred.size(); ++i)
            RLFLOW_EXPECTS(inferred[i] == n.outputs[i].type, shape_error,
                           n.describe() + ": output " + std::to_string(i) + " is " + n.outputs[i].type.to_string()
                               + " but inference gives " + inferred[i].to_string());
    }
    for (const auto& o : m_outputs) check_ref_exists(o.value, "graph output '" + o.name + "'");
    (void)topological_order();
}

}  // namespace rlflow
