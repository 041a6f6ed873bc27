#pragma once
/// \file
/// Graph networks (Battaglia et al. 2018, "Relational inductive biases, deep learning, and
/// graph networks"; thesis §2.3, Algorithm 1) on the nn tape.
///
/// - `HostGraph`: one attributed directed graph in host memory (feature rows, edge lists).
/// - `GraphBatch<B>`: several graphs of different sizes as one disjoint union, the layout
///   graph_nets calls a GraphsTuple: node and edge rows of every graph stacked, sender and
///   receiver indices offset into the stacked nodes, and for each node and edge the graph
///   it belongs to.
/// - `GnBlock<B>`: one full GN block (Algorithm 1): edge, node and global updates, each an
///   Mlp, with sum or mean aggregation.
/// - `GraphNetwork<B>`: graph_nets' encode-process-decode without the decoder: independent
///   encoder MLPs, then several message-passing steps of a core GN block; the latents are
///   the output, and the agents' heads read them.

#include <rlflow/core/error.hpp>
#include <rlflow/core/random.hpp>
#include <rlflow/nn/layers.hpp>
#include <rlflow/nn/ops.hpp>
#include <rlflow/nn/tape.hpp>
#include <rlflow/nn/tensor.hpp>

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rlflow::nn {

/// Widths of a graph's edge, node and global feature vectors.
struct FeatureSizes {
    std::int64_t edge = 0;
    std::int64_t node = 0;
    std::int64_t global = 0;
    friend bool operator==(const FeatureSizes&, const FeatureSizes&) = default;
    [[nodiscard]] std::string to_string() const {
        return "(edge " + std::to_string(edge) + ", node " + std::to_string(node) + ", global " + std::to_string(global) + ")";
    }
};

/// One attributed directed graph in host memory, backend-neutral: what a GraphBatch is
/// built from. Edge k runs from node senders[k] to node receivers[k], numbered within
/// this graph.
struct HostGraph {
    FeatureSizes sizes;
    std::int64_t num_nodes = 0;
    /// num_nodes x sizes.node, row-major.
    std::vector<double> nodes;
    /// num_edges() x sizes.edge, row-major.
    std::vector<double> edges;
    std::vector<std::int32_t> senders;
    std::vector<std::int32_t> receivers;
    /// sizes.global values.
    std::vector<double> globals;

    [[nodiscard]] std::int64_t num_edges() const noexcept { return static_cast<std::int64_t>(senders.size()); }
};

/// A batch's edge (E, fe), node (N, fn) and global (G, fg) features on a tape.
template <TensorBackend B>
struct GraphVars {
    Var<B> edges;
    Var<B> nodes;
    Var<B> globals;
};

namespace detail {

/// The index structure of a batch. It is held through a shared pointer so that its
/// address, which the tape's gather and segment records keep, survives moves and copies
/// of the batch.
template <TensorBackend B>
struct GraphTopology {
    Indices<B> senders;
    Indices<B> receivers;
    Indices<B> node_graph;
    Indices<B> edge_graph;
    /// Where each graph's rows start; one more entry than graphs, the last the total.
    std::vector<std::int64_t> node_offsets;
    std::vector<std::int64_t> edge_offsets;
};

/// Checks graph `g` (number `index` in its batch) against `sizes`; throws
/// precondition_error naming the graph, and the edge for an index out of range.
inline void check_host_graph(const HostGraph& g, std::size_t index, const FeatureSizes& sizes) {
    const std::string where = "graph " + std::to_string(index);
    RLFLOW_EXPECTS(g.sizes == sizes, precondition_error,
                   where + ": feature sizes " + g.sizes.to_string() + " differ from graph 0's " + sizes.to_string());
    RLFLOW_EXPECTS(g.num_nodes >= 0 && static_cast<std::int64_t>(g.nodes.size()) == g.num_nodes * sizes.node, precondition_error,
                   where + ": " + std::to_string(g.nodes.size()) + " node feature values for " + std::to_string(g.num_nodes)
                       + " nodes of " + std::to_string(sizes.node) + " features");
    RLFLOW_EXPECTS(g.senders.size() == g.receivers.size(), precondition_error,
                   where + ": " + std::to_string(g.senders.size()) + " senders but " + std::to_string(g.receivers.size()) + " receivers");
    RLFLOW_EXPECTS(static_cast<std::int64_t>(g.edges.size()) == g.num_edges() * sizes.edge, precondition_error,
                   where + ": " + std::to_string(g.edges.size()) + " edge feature values for " + std::to_string(g.num_edges())
                       + " edges of " + std::to_string(sizes.edge) + " features");
    RLFLOW_EXPECTS(static_cast<std::int64_t>(g.globals.size()) == sizes.global, precondition_error,
                   where + ": " + std::to_string(g.globals.size()) + " global feature values, expected " + std::to_string(sizes.global));
    const auto check_end = [&](std::int32_t node, std::size_t edge, const char* end) {
        RLFLOW_EXPECTS(node >= 0 && node < g.num_nodes, precondition_error,
                       where + ", edge " + std::to_string(edge) + ": " + end + " " + std::to_string(node) + " outside [0, "
                           + std::to_string(g.num_nodes) + ")");
    };
    for (std::size_t k = 0; k < g.senders.size(); ++k) {
        check_end(g.senders[k], k, "sender");
        check_end(g.receivers[k], k, "receiver");
    }
}

/// `values` appended to `out`, converted to the backend's scalar.
template <class Scalar>
void append_converted(std::vector<Scalar>& out, const std::vector<double>& values) {
    for (const double v : values) out.push_back(static_cast<Scalar>(v));
}

/// "name.part", or "part" for an unnamed parent.
[[nodiscard]] inline std::string child_name(const std::string& name, const std::string& part) {
    return name.empty() ? part : name + "." + part;
}

}  // namespace detail

/// Graphs of different sizes as one disjoint union in backend memory: node rows (N, fn),
/// edge rows (E, fe) and global rows (G, fg) of every graph stacked in order, senders
/// and receivers offset into the stacked nodes. The indices are uploaded once, here, and
/// the tape's records point at them: keep the batch (or a copy of it) alive until the
/// tape's backward pass is done.
template <TensorBackend B>
class GraphBatch {
public:
    using Scalar = typename B::Scalar;

    /// Validates and stacks `graphs` (at least one, all of the same feature sizes);
    /// throws precondition_error naming the graph (and edge) at fault.
    explicit GraphBatch(std::span<const HostGraph> graphs) : GraphBatch(pointers(graphs)) {}
    /// The same, over graphs held elsewhere (an agent's observations), copied only once,
    /// into the batch.
    explicit GraphBatch(std::span<const HostGraph* const> graphs) {
        RLFLOW_EXPECTS(!graphs.empty(), precondition_error, "a graph batch needs at least one graph");
        m_sizes = graphs.front()->sizes;
        auto topology = std::make_shared<detail::GraphTopology<B>>();
        std::vector<std::int32_t> senders, receivers, node_graph, edge_graph;
        std::vector<Scalar> nodes, edges, globals;
        // Reserved whole: grown push by push, a 50,000-node graph's arrays were copied
        // and faulted in again at every doubling, a sixth of a forward pass.
        std::size_t all_nodes = 0, all_edges = 0;
        for (const HostGraph* g : graphs) {
            all_nodes += static_cast<std::size_t>(std::max<std::int64_t>(g->num_nodes, 0));
            all_edges += static_cast<std::size_t>(std::max<std::int64_t>(g->num_edges(), 0));
        }
        for (auto* v : {&senders, &receivers, &edge_graph}) v->reserve(all_edges);
        node_graph.reserve(all_nodes);
        nodes.reserve(all_nodes * static_cast<std::size_t>(std::max<std::int64_t>(m_sizes.node, 0)));
        edges.reserve(all_edges * static_cast<std::size_t>(std::max<std::int64_t>(m_sizes.edge, 0)));
        globals.reserve(graphs.size() * static_cast<std::size_t>(std::max<std::int64_t>(m_sizes.global, 0)));
        std::int64_t node_offset = 0, edge_offset = 0;
        for (std::size_t i = 0; i < graphs.size(); ++i) {
            const HostGraph& g = *graphs[i];
            detail::check_host_graph(g, i, m_sizes);
            RLFLOW_EXPECTS(node_offset + g.num_nodes <= index_limit && edge_offset + g.num_edges() <= index_limit, precondition_error,
                           "graph " + std::to_string(i) + ": the batch exceeds " + std::to_string(index_limit) + " nodes or edges");
            topology->node_offsets.push_back(node_offset);
            topology->edge_offsets.push_back(edge_offset);
            for (std::int64_t k = 0; k < g.num_edges(); ++k) {
                const auto kk = static_cast<std::size_t>(k);
                senders.push_back(static_cast<std::int32_t>(node_offset + g.senders[kk]));
                receivers.push_back(static_cast<std::int32_t>(node_offset + g.receivers[kk]));
            }
            node_graph.insert(node_graph.end(), static_cast<std::size_t>(g.num_nodes), static_cast<std::int32_t>(i));
            edge_graph.insert(edge_graph.end(), static_cast<std::size_t>(g.num_edges()), static_cast<std::int32_t>(i));
            detail::append_converted(nodes, g.nodes);
            detail::append_converted(edges, g.edges);
            detail::append_converted(globals, g.globals);
            node_offset += g.num_nodes;
            edge_offset += g.num_edges();
        }
        topology->node_offsets.push_back(node_offset);
        topology->edge_offsets.push_back(edge_offset);
        const auto num_graphs = static_cast<std::int64_t>(graphs.size());
        topology->senders = Indices<B>(std::move(senders), node_offset);
        topology->receivers = Indices<B>(std::move(receivers), node_offset);
        topology->node_graph = Indices<B>(std::move(node_graph), num_graphs);
        topology->edge_graph = Indices<B>(std::move(edge_graph), num_graphs);
        m_nodes = Tensor<B>::from_host(Shape{node_offset, m_sizes.node}, nodes);
        m_edges = Tensor<B>::from_host(Shape{edge_offset, m_sizes.edge}, edges);
        m_globals = Tensor<B>::from_host(Shape{num_graphs, m_sizes.global}, globals);
        m_topology = std::move(topology);
    }
    explicit GraphBatch(const HostGraph& graph) : GraphBatch(std::span<const HostGraph>(&graph, 1)) {}

    [[nodiscard]] const FeatureSizes& sizes() const noexcept { return m_sizes; }
    [[nodiscard]] std::int64_t num_graphs() const noexcept { return m_globals.dim(0); }
    [[nodiscard]] std::int64_t num_nodes() const noexcept { return m_nodes.dim(0); }
    [[nodiscard]] std::int64_t num_edges() const noexcept { return m_edges.dim(0); }

    [[nodiscard]] const Tensor<B>& nodes() const noexcept { return m_nodes; }
    [[nodiscard]] const Tensor<B>& edges() const noexcept { return m_edges; }
    [[nodiscard]] const Tensor<B>& globals() const noexcept { return m_globals; }

    /// Per edge, the stacked index of its sending and receiving node.
    [[nodiscard]] const Indices<B>& senders() const noexcept { return m_topology->senders; }
    [[nodiscard]] const Indices<B>& receivers() const noexcept { return m_topology->receivers; }
    /// Per node and per edge, the graph it belongs to.
    [[nodiscard]] const Indices<B>& node_graph() const noexcept { return m_topology->node_graph; }
    [[nodiscard]] const Indices<B>& edge_graph() const noexcept { return m_topology->edge_graph; }
    /// Graph g's rows are [offsets[g], offsets[g + 1]).
    [[nodiscard]] std::span<const std::int64_t> node_offsets() const noexcept { return m_topology->node_offsets; }
    [[nodiscard]] std::span<const std::int64_t> edge_offsets() const noexcept { return m_topology->edge_offsets; }

    /// The features as constants on `tape` (inputs no gradient flows to).
    [[nodiscard]] GraphVars<B> constants(Tape<B>& tape) const {
        return {tape.constant(m_edges), tape.constant(m_nodes), tape.constant(m_globals)};
    }

private:
    [[nodiscard]] static std::vector<const HostGraph*> pointers(std::span<const HostGraph> graphs) {
        std::vector<const HostGraph*> out;
        for (const HostGraph& g : graphs) out.push_back(&g);
        return out;
    }

    /// Indices are int32 in backend memory.
    static constexpr std::int64_t index_limit = std::numeric_limits<std::int32_t>::max();

    FeatureSizes m_sizes;
    Tensor<B> m_nodes;
    Tensor<B> m_edges;
    Tensor<B> m_globals;
    std::shared_ptr<const detail::GraphTopology<B>> m_topology;
};

/// How a GN block pools a set of edge or node latents (the rho functions of Algorithm 1).
enum class Aggregation : std::uint8_t { sum, mean };

/// Pools the rows of `x` by `segment` (segment_sum or segment_mean); an empty set pools to 0.
template <TensorBackend B>
[[nodiscard]] Var<B> aggregate(Var<B> x, const Indices<B>& segment, Aggregation how) {
    return how == Aggregation::sum ? segment_sum(x, segment) : segment_mean(x, segment);
}

/// Sizes and options of a GnBlock.
struct GnBlockOptions {
    /// Widths of the edge, node and global features the block reads.
    FeatureSizes input;
    /// Widths of the edge, node and global latents it writes.
    FeatureSizes output;
    /// Hidden layer widths of each of the three update MLPs.
    std::vector<std::int64_t> hidden;
    Aggregation aggregation = Aggregation::sum;
    Activation activation = Activation::relu;
    /// As graph_nets' make_mlp_model: activate the last layer, then LayerNorm.
    bool layer_norm = true;
};

/// One full GN block (thesis Algorithm 1, after Battaglia et al. 2018):
///   e'_k = phi_e(e_k, v_{r_k}, v_{s_k}, u_{g(k)})              for every edge k
///   v'_i = phi_v(rho_{e->v}{e'_k : r_k = i}, v_i, u_{g(i)})    for every node i
///   u'_g = phi_u(rho_{e->u}{e'_k in g}, rho_{v->u}{v'_i in g}, u_g)  for every graph g
/// where each phi is an Mlp over the concatenated arguments (in that order, as graph_nets
/// concatenates [edges, receivers, senders, globals]) and each rho is a segment sum or
/// mean. An empty set aggregates to 0.
template <TensorBackend B>
class GnBlock {
public:
    GnBlock() = default;
    /// Parameters are named "<name>.edge.*", "<name>.node.*" and "<name>.global.*".
    GnBlock(const std::string& name, GnBlockOptions options, Rng& rng) : m_name(name), m_options(std::move(options)) {
        const FeatureSizes& in = m_options.input;
        const FeatureSizes& out = m_options.output;
        m_edge = Mlp<B>(detail::child_name(name, "edge"), mlp_options(in.edge + 2 * in.node + in.global, out.edge), rng);
        m_node = Mlp<B>(detail::child_name(name, "node"), mlp_options(out.edge + in.node + in.global, out.node), rng);
        m_global = Mlp<B>(detail::child_name(name, "global"), mlp_options(out.edge + out.node + in.global, out.global), rng);
    }

    /// The updated (edges, nodes, globals) of `batch` given its current features `in`.
    /// Throws shape_error naming the block if `in` does not fit the batch or the block.
    [[nodiscard]] GraphVars<B> operator()(Tape<B>& tape, const GraphBatch<B>& batch, const GraphVars<B>& in) {
        return (*this)(tape, batch, std::span<const GraphVars<B>>(&in, 1));
    }
    /// The same where the features are the concatenation of `parts` along their last
    /// axis (graph_nets' [latent_0, latent_t]), which is never built: each part is a
    /// block of the update MLPs' first layers.
    [[nodiscard]] GraphVars<B> operator()(Tape<B>& tape, const GraphBatch<B>& batch, std::span<const GraphVars<B>> parts) {
        check_inputs(batch, parts);
        const Aggregation how = m_options.aggregation;
        // Each update MLP reads its arguments as blocks of its first layer, which never
        // concatenates them and multiplies gathered nodes and globals before gathering.
        using Block = InputBlock<B>;
        const auto blocks = [&](std::vector<Block>& out, Var<B> GraphVars<B>::*feature, const Indices<B>* rows) {
            for (const GraphVars<B>& part : parts) out.push_back({part.*feature, rows});
        };
        // Algorithm 1, lines 1-3: the edge update.
        std::vector<Block> edge_in;
        blocks(edge_in, &GraphVars<B>::edges, nullptr);
        blocks(edge_in, &GraphVars<B>::nodes, &batch.receivers());
        blocks(edge_in, &GraphVars<B>::nodes, &batch.senders());
        blocks(edge_in, &GraphVars<B>::globals, &batch.edge_graph());
        const Var<B> edges = m_edge(tape, edge_in);
        // Lines 4-8: each node pools the edges it receives, then updates.
        std::vector<Block> node_in{Block{aggregate(edges, batch.receivers(), how)}};
        blocks(node_in, &GraphVars<B>::nodes, nullptr);
        blocks(node_in, &GraphVars<B>::globals, &batch.node_graph());
        const Var<B> nodes = m_node(tape, node_in);
        // Lines 9-13: each graph pools all of its edges and nodes, then updates its globals.
        std::vector<Block> global_in{Block{aggregate(edges, batch.edge_graph(), how)}, Block{aggregate(nodes, batch.node_graph(), how)}};
        blocks(global_in, &GraphVars<B>::globals, nullptr);
        const Var<B> globals = m_global(tape, global_in);
        return {edges, nodes, globals};
    }

    [[nodiscard]] std::vector<Parameter<B>*> parameters() {
        std::vector<Parameter<B>*> out;
        for (Mlp<B>* mlp : {&m_edge, &m_node, &m_global})
            for (Parameter<B>* p : mlp->parameters()) out.push_back(p);
        return out;
    }
    [[nodiscard]] const GnBlockOptions& options() const noexcept { return m_options; }

private:
    [[nodiscard]] MlpOptions mlp_options(std::int64_t in, std::int64_t out) const {
        MlpOptions o;
        o.sizes.push_back(in);
        o.sizes.insert(o.sizes.end(), m_options.hidden.begin(), m_options.hidden.end());
        o.sizes.push_back(out);
        o.activation = m_options.activation;
        o.activate_output = m_options.layer_norm;
        o.layer_norm_output = m_options.layer_norm;
        return o;
    }

    void check_inputs(const GraphBatch<B>& batch, std::span<const GraphVars<B>> parts) const {
        RLFLOW_EXPECTS(!parts.empty(), precondition_error, "gn block '" + m_name + "' on no input features");
        // Every part of `rows` rows, their widths adding up to `width`; the message lists
        // the parts' shapes ("nodes (7,2)+(7,1), expected (7,3)").
        const auto check = [&](Var<B> GraphVars<B>::*feature, std::int64_t rows, std::int64_t width, const char* what) {
            std::int64_t total = 0;
            bool fits = true;
            std::string shapes;
            for (const GraphVars<B>& part : parts) {
                const Shape& s = (part.*feature).shape();
                fits = fits && s.rank() == 2 && s[0] == rows;
                total += s.rank() == 2 ? s[1] : 0;
                shapes += (shapes.empty() ? "" : "+") + s.to_string();
            }
            RLFLOW_EXPECTS(fits && total == width, shape_error,
                           "gn block '" + m_name + "': " + what + " " + shapes + ", expected " + Shape({rows, width}).to_string());
        };
        check(&GraphVars<B>::edges, batch.num_edges(), m_options.input.edge, "edges");
        check(&GraphVars<B>::nodes, batch.num_nodes(), m_options.input.node, "nodes");
        check(&GraphVars<B>::globals, batch.num_graphs(), m_options.input.global, "globals");
    }

    std::string m_name;
    GnBlockOptions m_options;
    Mlp<B> m_edge;
    Mlp<B> m_node;
    Mlp<B> m_global;
};

/// Sizes and options of a GraphNetwork.
struct GraphNetworkOptions {
    /// Widths of the input edge, node and global features.
    FeatureSizes input;
    /// Width of every latent (edges, nodes and globals alike).
    std::int64_t latent = 64;
    /// Message-passing steps of the core block.
    int steps = 3;
    /// One core block applied at every step (graph_nets' EncodeProcessDecode), or one per step.
    bool shared_core = true;
    /// Linear layers per MLP; every hidden layer is `latent` wide.
    int mlp_layers = 2;
    Aggregation aggregation = Aggregation::sum;
    Activation activation = Activation::relu;
};

/// graph_nets' encode-process-decode, less the decoder (the agents' heads decode):
///   latent_0 = encoder(input)                          independent edge, node, global MLPs
///   latent_t = core_t(concat(latent_0, latent_{t-1}))  a GN block, t = 1..steps
/// Feeding latent_0 to every step, as graph_nets does, lets a shared core see the
/// input features however many steps it has run. Returns latent_steps.
template <TensorBackend B>
class GraphNetwork {
public:
    GraphNetwork() = default;
    /// Parameters are named "<name>.encoder.{edge,node,global}.*" and "<name>.core.*"
    /// (shared core) or "<name>.core.<step>.*" (one core per step).
    GraphNetwork(const std::string& name, GraphNetworkOptions options, Rng& rng) : m_options(std::move(options)) {
        RLFLOW_EXPECTS(m_options.latent >= 1 && m_options.steps >= 1 && m_options.mlp_layers >= 1, precondition_error,
                       "graph network '" + name + "' needs latent, steps and mlp_layers of at least 1");
        const std::int64_t latent = m_options.latent;
        const std::vector<std::int64_t> hidden(static_cast<std::size_t>(m_options.mlp_layers - 1), latent);
        const auto encoder = [&](const std::string& part, std::int64_t in) {
            MlpOptions o{.sizes = {in}, .activation = m_options.activation, .activate_output = true, .layer_norm_output = true};
            o.sizes.insert(o.sizes.end(), hidden.begin(), hidden.end());
            o.sizes.push_back(latent);
            return Mlp<B>(detail::child_name(name, "encoder." + part), std::move(o), rng);
        };
        m_encode_edge = encoder("edge", m_options.input.edge);
        m_encode_node = encoder("node", m_options.input.node);
        m_encode_global = encoder("global", m_options.input.global);
        GnBlockOptions core{.input = {2 * latent, 2 * latent, 2 * latent},
                            .output = {latent, latent, latent},
                            .hidden = hidden,
                            .aggregation = m_options.aggregation,
                            .activation = m_options.activation,
                            .layer_norm = true};
        const int cores = m_options.shared_core ? 1 : m_options.steps;
        m_cores.reserve(static_cast<std::size_t>(cores));
        for (int i = 0; i < cores; ++i) {
            const std::string core_name = detail::child_name(name, m_options.shared_core ? "core" : "core." + std::to_string(i));
            m_cores.emplace_back(core_name, core, rng);
        }
    }

    /// The final latents of `batch`'s own features.
    [[nodiscard]] GraphVars<B> operator()(Tape<B>& tape, const GraphBatch<B>& batch) { return (*this)(tape, batch, batch.constants(tape)); }

    /// The final latents of features `input` laid out as `batch`.
    [[nodiscard]] GraphVars<B> operator()(Tape<B>& tape, const GraphBatch<B>& batch, const GraphVars<B>& input) {
        const GraphVars<B> encoded{m_encode_edge(tape, input.edges), m_encode_node(tape, input.nodes), m_encode_global(tape, input.globals)};
        GraphVars<B> latent = encoded;
        for (int step = 0; step < m_options.steps; ++step) {
            GnBlock<B>& core = m_cores[m_options.shared_core ? 0 : static_cast<std::size_t>(step)];
            const GraphVars<B> joined[] = {encoded, latent};  // concatenated, in effect, by the core's first layers
            latent = core(tape, batch, joined);
        }
        return latent;
    }

    [[nodiscard]] std::vector<Parameter<B>*> parameters() {
        std::vector<Parameter<B>*> out;
        for (Mlp<B>* mlp : {&m_encode_edge, &m_encode_node, &m_encode_global})
            for (Parameter<B>* p : mlp->parameters()) out.push_back(p);
        for (GnBlock<B>& core : m_cores)
            for (Parameter<B>* p : core.parameters()) out.push_back(p);
        return out;
    }
    [[nodiscard]] const GraphNetworkOptions& options() const noexcept { return m_options; }

private:
    GraphNetworkOptions m_options;
    Mlp<B> m_encode_edge;
    Mlp<B> m_encode_node;
    Mlp<B> m_encode_global;
    std::vector<GnBlock<B>> m_cores;
};

}  // namespace rlflow::nn
