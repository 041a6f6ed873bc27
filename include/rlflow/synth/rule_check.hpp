#pragma once
/// \file
/// Numeric checking of one rule: its source pattern is built as a small graph for each of a
/// few concrete instances (shapes for the variables, values for the symbols), the rule is
/// applied there by the matcher and the applier, and both graphs run in the reference
/// executor on seeded random inputs. This checks the rule exactly as rewriting uses it
/// (matching, derived attributes, constraints and target instantiation included), which is
/// why the prover validates its own axioms with it too.
///
/// Instances can be written as text, one per line or separated by ';':
/// ```
/// x=(2,4,5,5) w=(4,4,3,3) $k=[3,3] $s=[1,1] $p=[1,1,1,1] $d=[1,1] $g=1
/// ```
/// A variable takes a shape (`()` is a scalar, `(3,)` or `(3)` a vector); a `$symbol` a
/// value typed by the attribute that binds it: `1`, `1.5`, `"text"`, `[1, 2]`. An
/// attribute the source pattern leaves open (`src r = Reshape(x)` has no `shape`) may be
/// given as `label.attribute=value` (`r.shape=[2, 3]`), kept under that key in `symbols`.

#include <rlflow/core/canonical.hpp>
#include <rlflow/rewrite/applier.hpp>
#include <rlflow/rewrite/detail/evaluate.hpp>
#include <rlflow/rewrite/detail/rule_text_cursor.hpp>
#include <rlflow/rewrite/detail/rule_text_writer.hpp>
#include <rlflow/rewrite/graph_index.hpp>
#include <rlflow/rewrite/matcher.hpp>
#include <rlflow/rewrite/rule.hpp>
#include <rlflow/rewrite/rule_set.hpp>
#include <rlflow/rewrite/soundness.hpp>
#include <rlflow/synth/detail/rewrite_names.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rlflow::synth {

/// Concrete values for one check of a rule: a type for each rule variable (by index) and a
/// value for each $symbol the source leaves open (by symbol name). A source attribute the
/// pattern does not mention at all may be given under "label.attribute".
struct RuleInstance {
    std::vector<TensorType> variable_types;
    std::map<std::string, AttributeValue> symbols;
};

/// The verdict of check_rule_numerically.
struct RuleCheckReport {
    /// No instance told the sides apart.
    bool equal = true;
    /// Instances that fitted and were run.
    std::size_t instances_checked = 0;
    /// Instances whose source fitted but where the rule has no location covering it (its
    /// target does not instantiate there, or an `order` pair fails). Not counted as checked.
    std::size_t instances_not_applicable = 0;
    double max_abs_diff = 0;
    /// Which instance and which output differed.
    std::string detail;
};

namespace detail {

/// The type of each symbol: that of the first source attribute binding it (nullopt for a
/// symbol no plain `$symbol` attribute binds, which validate_rule rejects).
[[nodiscard]] inline std::vector<std::optional<AttributeType>> symbol_types(const Rule& rule) {
    std::vector<std::optional<AttributeType>> types(rule.symbols.size());
    for (const PatternNode& n : rule.source)
        for (const PatternAttribute& a : n.attributes)
            if (a.value.kind == AttrExpr::Kind::symbol && !types[a.value.symbol])
                types[a.value.symbol] = pattern_attribute_type(n.op, a.name);
    return types;
}

/// An instantiated source: the graph and where its pattern nodes and variables are.
struct SourceGraph {
    Graph graph;
    Location location;
};

/// Whether every tensor `expression` measures is a variable or one of the first `built`
/// source nodes (an expression over a later node cannot be computed yet).
[[nodiscard]] inline bool measures_built_tensors(const AttrExpr& expression, std::size_t built) {
    return std::all_of(expression.terms.begin(), expression.terms.end(), [&](const IntTerm& t) {
        const bool measures = t.kind == IntTerm::Kind::dim || t.kind == IntTerm::Kind::rank;
        return !measures || t.tensor.is_variable() || t.tensor.index < built;
    });
}

/// The key under which an instance gives attribute `attribute` of source node `label`, which
/// the pattern leaves open.
[[nodiscard]] inline std::string open_attribute_key(std::string_view label, std::string_view attribute) {
    return std::string(label) + "." + std::string(attribute);
}

/// Whether pattern node `node` mentions attribute `name`.
[[nodiscard]] inline bool mentions(const PatternNode& node, std::string_view name) {
    return std::any_of(node.attributes.begin(), node.attributes.end(), [&](const PatternAttribute& a) { return a.name == name; });
}

/// The attributes of source node `node` (the `built`-th) for one instance, open ones the
/// instance gives included; nullopt if a symbol has no value or an expression cannot be
/// computed.
[[nodiscard]] inline std::optional<Attributes> source_attributes(const PatternNode& node, const EvalContext& context,
                                                                 std::size_t built, const RuleInstance& instance) {
    Attributes attributes;
    for (const PatternAttribute& a : node.attributes) {
        if (!measures_built_tensors(a.value, built)) return std::nullopt;
        auto value = evaluate(a.value, context);
        if (!value) return std::nullopt;
        attributes.set(a.name, std::move(*value));
    }
    for (const AttributeSpec& spec : op_traits(node.op).attributes) {
        const auto it = instance.symbols.find(open_attribute_key(node.label, spec.name));
        if (it == instance.symbols.end() || mentions(node, spec.name)) continue;
        if (it->second.index() != static_cast<std::size_t>(spec.type)) return std::nullopt;
        attributes.set(spec.name, it->second);
    }
    return attributes;
}

/// Whether node `id` shows every attribute as given: normalisation kept the values, so the
/// instance is canonical and the matcher will bind the same values.
[[nodiscard]] inline bool keeps_attributes(const Node& node, const Attributes& given) {
    AttributeValue scratch;
    for (const auto& [name, value] : given) {
        const AttributeValue* actual = pattern_view(node, name, scratch);
        if (!actual || !Attributes::values_equal(value, *actual)) return false;
    }
    return true;
}

/// Adds source node `node` with `attributes` to `graph`; nullopt if it does not fit.
[[nodiscard]] inline std::optional<NodeId> add_source_node(Graph& graph, const PatternNode& node, const Location& location,
                                                           Attributes attributes) {
    if (node.op == OpKind::Constant) {
        if (!std::get_if<double>(attributes.find("value")) || !constant_shape(attributes)) return std::nullopt;
        const NodeId id = graph.add_constant(node.label, constant_value(attributes));
        return keeps_attributes(graph.node(id), attributes) ? std::optional(id) : std::nullopt;
    }
    std::vector<TensorRef> inputs;
    for (const PatternRef& r : node.inputs) inputs.push_back(location.tensor(r));
    try {
        const NodeId id = graph.add_node(node.op, std::move(inputs), attributes, node.label);
        const Node& added = graph.node(id);
        if (added.outputs.size() != node.num_outputs || !keeps_attributes(added, attributes)) return std::nullopt;
        return id;
    } catch (const shape_error&) {
        return std::nullopt;  // the instance's shapes or values do not fit the op
    } catch (const graph_error&) {
        return std::nullopt;  // an attribute value of the wrong type, or a required one left open
    }
}

/// Binds the instance's symbol values; false if a value has another type than its symbol.
[[nodiscard]] inline bool bind_instance_symbols(const Rule& rule, const RuleInstance& instance, SymbolTable& symbols) {
    symbols.reset(rule.symbols.size());
    const auto types = symbol_types(rule);
    for (std::uint32_t s = 0; s < rule.symbols.size(); ++s) {
        const auto it = instance.symbols.find(rule.symbols[s]);
        if (it == instance.symbols.end()) continue;
        if (!types[s] || it->second.index() != static_cast<std::size_t>(*types[s])) return false;
        symbols.bind(s, it->second);
    }
    return true;
}

/// The source of `rule` built for `instance`, or nullopt if the instance does not fit.
[[nodiscard]] inline std::optional<SourceGraph> build_source(const Rule& rule, const RuleInstance& instance) {
    if (instance.variable_types.size() != rule.variables.size()) return std::nullopt;
    SourceGraph out;
    for (std::size_t v = 0; v < rule.variables.size(); ++v)
        out.location.variables[v]
            = {out.graph.add_input(rule.variables[v], {DType::Float32, instance.variable_types[v].shape}), 0};
    SymbolTable symbols;
    if (!bind_instance_symbols(rule, instance, symbols)) return std::nullopt;
    const EvalContext context{out.graph, out.location, symbols};
    for (std::size_t q = 0; q < rule.source.size(); ++q) {
        auto attributes = source_attributes(rule.source[q], context, q, instance);
        if (!attributes) return std::nullopt;
        const auto id = add_source_node(out.graph, rule.source[q], out.location, std::move(*attributes));
        if (!id) return std::nullopt;
        out.location.nodes[q] = *id;
    }
    for (const Constraint& c : rule.constraints)
        if (!holds(c, context)) return std::nullopt;
    for (const OutputMapping& m : rule.outputs) {
        const std::string label = rule.source[m.source.index].label;
        out.graph.add_output(out.location.tensor(m.source), label + ":" + std::to_string(m.source.output));
    }
    return out;
}

/// `value` in the instance text form (numbers and strings as the rule text form writes them).
[[nodiscard]] inline std::string instance_value_text(const AttributeValue& value) {
    const auto list = [](const auto& items, auto write) {
        std::string s = "[";
        for (std::size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + write(items[i]);
        return s + "]";
    };
    const auto integer = [](std::int64_t v) { return std::to_string(v); };
    if (const auto* i = std::get_if<std::int64_t>(&value)) return integer(*i);
    if (const auto* f = std::get_if<double>(&value)) return shortest_double(*f);
    if (const auto* s = std::get_if<std::string>(&value)) return quoted_string(*s);
    if (const auto* ints = std::get_if<std::vector<std::int64_t>>(&value)) return list(*ints, integer);
    if (const auto* floats = std::get_if<std::vector<double>>(&value)) return list(*floats, shortest_double);
    return "<" + std::string(attribute_type_name(static_cast<AttributeType>(value.index()))) + ">";
}

/// Reads one value of attribute type `type` at the cursor.
[[nodiscard]] inline AttributeValue read_instance_value(TextCursor& c, AttributeType type) {
    switch (type) {
        case AttributeType::Int: return c.integer();
        case AttributeType::Float: return c.number();
        case AttributeType::String: return c.quoted();
        case AttributeType::Ints: {
            std::vector<std::int64_t> values;
            c.for_each_item('[', ']', [&] { values.push_back(c.integer()); });
            return values;
        }
        case AttributeType::Floats: {
            std::vector<double> values;
            c.for_each_item('[', ']', [&] { values.push_back(c.number()); });
            return values;
        }
        default: c.fail("symbols of type " + std::string(attribute_type_name(type)) + " cannot be given");
    }
}

/// Reads `(d0, d1, ...)`; a trailing comma is allowed, as Shape::to_string writes one.
[[nodiscard]] inline Shape read_instance_shape(TextCursor& c) {
    std::vector<std::int64_t> dims;
    c.expect('(');
    for (c.skip_spaces(); !c.accept(')'); c.skip_spaces()) {
        dims.push_back(c.integer());
        c.skip_spaces();
        if (!c.accept(',')) {
            c.expect(')');
            break;
        }
    }
    return Shape(std::span<const std::int64_t>(dims));
}

/// The type of open attribute `attribute` of the source node labelled `label`; fails unless
/// the node exists, has such an attribute and its pattern leaves it open.
[[nodiscard]] inline AttributeType open_attribute_type(const Rule& rule, std::string_view label, std::string_view attribute,
                                                      const TextCursor& c) {
    const auto node = std::find_if(rule.source.begin(), rule.source.end(), [&](const PatternNode& n) { return n.label == label; });
    if (node == rule.source.end()) c.fail("rule '" + rule.name + "' has no source node '" + std::string(label) + "'");
    const auto type = pattern_attribute_type(node->op, attribute);
    if (!type || mentions(*node, attribute))
        c.fail("'" + std::string(label) + "." + std::string(attribute) + "' is not an open attribute of rule '" + rule.name + "'");
    return *type;
}

/// Reads `$symbol=value` or `label.attribute=value` into `instance`.
inline void read_instance_symbol(const Rule& rule, TextCursor& c, bool dollar, std::string_view name, RuleInstance& instance) {
    if (!dollar) {
        const std::string attribute(c.name("an attribute name"));
        const AttributeType type = open_attribute_type(rule, name, attribute, c);
        c.expect_spaced("=");
        instance.symbols[open_attribute_key(name, attribute)] = read_instance_value(c, type);
        return;
    }
    const auto index = static_cast<std::size_t>(std::find(rule.symbols.begin(), rule.symbols.end(), name) - rule.symbols.begin());
    if (index == rule.symbols.size()) c.fail("rule '" + rule.name + "' has no symbol '$" + std::string(name) + "'");
    const auto type = symbol_types(rule)[index];
    if (!type) c.fail("symbol '$" + std::string(name) + "' is bound by no source attribute");
    c.expect_spaced("=");
    instance.symbols[std::string(name)] = read_instance_value(c, *type);
}

/// Reads one instance (one line or ';'-separated piece) of `rule`.
[[nodiscard]] inline RuleInstance read_instance(const Rule& rule, std::string_view text, const std::string& where) {
    TextCursor c(text, where);
    RuleInstance instance;
    std::vector<std::optional<Shape>> shapes(rule.variables.size());
    while (!c.at_end()) {
        const bool dollar = c.accept('$');
        const std::string name(c.name(dollar ? "a symbol name" : "a variable or source label"));
        if (dollar || c.accept('.')) {
            read_instance_symbol(rule, c, dollar, name, instance);
            continue;
        }
        const auto index = static_cast<std::size_t>(std::find(rule.variables.begin(), rule.variables.end(), name) - rule.variables.begin());
        if (index == rule.variables.size()) c.fail("rule '" + rule.name + "' has no variable '" + name + "'");
        c.expect_spaced("=");
        shapes[index] = read_instance_shape(c);
    }
    for (std::size_t v = 0; v < shapes.size(); ++v) {
        if (!shapes[v]) c.fail("no shape for variable '" + rule.variables[v] + "'");
        instance.variable_types.push_back({DType::Float32, *shapes[v]});
    }
    return instance;
}

/// The locations of rule 0 of `rules` that cover exactly the nodes of `source` (one, or
/// two where a commutative op binds its inputs either way).
[[nodiscard]] inline std::vector<Location> covering_locations(const RuleSet& rules, const SourceGraph& source) {
    std::vector<Location> covering;
    const auto count = static_cast<std::ptrdiff_t>(rules[0].source.size());
    for (const Location& l : find_locations(rules, 0, source.graph))
        if (std::equal(l.nodes.begin(), l.nodes.begin() + count, source.location.nodes.begin())) covering.push_back(l);
    return covering;
}

}  // namespace detail

/// The instances written in `text` (format in the file comment) for `rule`. Every variable
/// needs a shape; symbols may be left out. Throws rule_error naming the rule and instance.
[[nodiscard]] inline std::vector<RuleInstance> parse_rule_instances(const Rule& rule, std::string_view text) {
    std::vector<RuleInstance> instances;
    for (std::size_t start = 0; start <= text.size();) {
        const std::size_t end = std::min(text.find_first_of(";\n", start), text.size());
        const std::string_view piece = text.substr(start, end - start);
        if (piece.find_first_not_of(" \t\r") != std::string_view::npos)
            instances.push_back(detail::read_instance(
                rule, piece, "rule '" + rule.name + "' instance " + std::to_string(instances.size())));
        start = end + 1;
    }
    return instances;
}

/// `instance` in the text form parse_rule_instances reads.
[[nodiscard]] inline std::string to_text(const Rule& rule, const RuleInstance& instance) {
    std::string out;
    for (std::size_t v = 0; v < rule.variables.size() && v < instance.variable_types.size(); ++v)
        out += (out.empty() ? "" : " ") + rule.variables[v] + "=" + instance.variable_types[v].shape.to_string();
    for (const auto& [name, value] : instance.symbols)
        out += (name.find('.') == std::string::npos ? " $" : " ") + name + "=" + detail::instance_value_text(value);
    return out;
}

/// The rule's source pattern as a graph: variables become float32 graph inputs named after
/// the variables, nodes get their literal/symbol attribute values (and derived ones), and the
/// source's mapped outputs become graph outputs, named `label:output`. nullopt if the
/// instance does not fit: a variable type is missing, shape inference fails, a symbol is
/// missing or of another type, a value is not in the normalised form a graph holds (a
/// negative axis, say), or a constraint or derived attribute fails.
[[nodiscard]] inline std::optional<Graph> instantiate_source(const Rule& rule, const RuleInstance& instance) {
    auto source = detail::build_source(rule, instance);
    if (!source) return std::nullopt;
    return std::move(source->graph);
}

/// The first rule of `known` that does what `rule` does at `instance`: it has a location
/// covering exactly the instantiated source nodes, and applying it there leaves the same
/// graph (equal canonical forms) as applying `rule` does. nullopt if no rule of `known`
/// does, or if the instance does not fit. Next to such a rule, `rule` adds nothing.
[[nodiscard]] inline std::optional<std::uint32_t> known_rule_doing(const Rule& rule, const RuleInstance& instance,
                                                                   const RuleSet& known) {
    const auto source = detail::build_source(rule, instance);
    if (!source) return std::nullopt;
    const RuleSet self(std::vector<Rule>{rule});
    std::vector<CanonicalForm> targets;
    for (const Location& l : detail::covering_locations(self, *source))
        targets.push_back(canonical_form(apply_copy(source->graph, self, 0, l)));
    if (targets.empty()) return std::nullopt;
    const auto count = static_cast<std::ptrdiff_t>(rule.source.size());
    const GraphIndex index(source->graph);
    Matcher matcher(known, source->graph, index);
    std::vector<Location> found;
    for (std::uint32_t k = 0; k < known.size(); ++k) {
        if (known[k].source.size() != rule.source.size()) continue;
        found.clear();
        matcher.find_all(k, found);
        for (const Location& l : found) {
            if (!std::is_permutation(l.nodes.begin(), l.nodes.begin() + count, source->location.nodes.begin())) continue;
            const CanonicalForm result = canonical_form(apply_copy(source->graph, known, k, l));
            if (std::find(targets.begin(), targets.end(), result) != targets.end()) return k;
        }
    }
    return std::nullopt;
}

/// Instantiates the source for each instance, finds the rule's locations covering exactly
/// the instantiated source nodes, applies each (apply_copy) and compares both graphs with
/// check_equivalence. Instances that do not fit are skipped (not counted); the first
/// difference stops the check. Throws rule_error if the rule is malformed.
[[nodiscard]] inline RuleCheckReport check_rule_numerically(const Rule& rule, std::span<const RuleInstance> instances,
                                                            const EquivalenceOptions& options = {}) {
    const RuleSet rules(std::vector<Rule>{rule});
    RuleCheckReport report;
    for (std::size_t i = 0; i < instances.size(); ++i) {
        const auto source = detail::build_source(rule, instances[i]);
        if (!source) continue;
        const std::vector<Location> locations = detail::covering_locations(rules, *source);
        if (locations.empty()) {
            ++report.instances_not_applicable;
            continue;
        }
        ++report.instances_checked;
        for (const Location& location : locations) {
            const EquivalenceReport verdict = check_equivalence(source->graph, apply_copy(source->graph, rules, 0, location), options);
            report.max_abs_diff = std::max(report.max_abs_diff, verdict.max_abs_diff);
            if (verdict.equal) continue;
            report.equal = false;
            const std::size_t output = verdict.mismatched_output.value_or(0);
            const std::string name = output < source->graph.outputs().size() ? source->graph.outputs()[output].name : "?";
            report.detail = "rule '" + rule.name + "', instance " + std::to_string(i) + " (" + to_text(rule, instances[i])
                            + "): output '" + name + "' differs: " + verdict.detail;
            return report;
        }
    }
    return report;
}

}  // namespace rlflow::synth
