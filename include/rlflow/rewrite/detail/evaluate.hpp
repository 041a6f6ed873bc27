#pragma once
/// \file
/// Evaluation of a rule's attribute expressions, integer terms and constraints against a
/// (complete) match.

#include <rlflow/core/graph.hpp>
#include <rlflow/rewrite/location.hpp>
#include <rlflow/rewrite/rule.hpp>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <vector>

namespace rlflow::rewrite::detail {

/// The symbol values a match has bound so far.
class SymbolTable {
public:
    void reset(std::size_t count) {
        m_values.resize(count);
        m_bound.assign(count, 0);
    }
    [[nodiscard]] bool bound(std::uint32_t s) const noexcept { return m_bound[s] != 0; }
    [[nodiscard]] const AttributeValue& value(std::uint32_t s) const noexcept { return m_values[s]; }
    void bind(std::uint32_t s, const AttributeValue& v) {
        m_values[s] = v;
        m_bound[s] = 1;
    }
    void unbind(std::uint32_t s) noexcept { m_bound[s] = 0; }

private:
    std::vector<AttributeValue> m_values;
    std::vector<char> m_bound;
};

/// What evaluation reads: the graph, the match, and its symbols.
struct EvalContext {
    const Graph& graph;
    const Location& location;
    const SymbolTable& symbols;

    [[nodiscard]] const Shape& shape(PatternRef ref) const { return graph.type(location.tensor(ref)).shape; }
};

/// The value attribute `name` of graph node `n` has as the pattern sees it (computed into
/// `scratch` for a Constant): a one-element Constant's "value" is its element; any
/// float32 Constant's "shape" is its dims, and a uniform or identity one (constant_form)
/// has a "fill" and a "value". nullptr if there is none.
[[nodiscard]] inline const AttributeValue* pattern_view(const Node& n, std::string_view name, AttributeValue& scratch) {
    if (n.op != OpKind::Constant) return n.attributes.find(name);
    if (!n.data || n.data->dtype() != DType::Float32) return nullptr;
    if (name == "shape") {
        const auto dims = n.data->shape().dims();
        scratch = std::vector<std::int64_t>(dims.begin(), dims.end());
        return &scratch;
    }
    if (name == "value" && n.data->numel() == 1) {
        scratch = static_cast<double>(n.data->floats()[0]);
        return &scratch;
    }
    if (name != "value" && name != "fill") return nullptr;
    const std::optional<ConstantForm> form = constant_form(*n.data);
    if (!form) return nullptr;
    if (name == "value") scratch = form->value;
    else scratch = std::string(constant_fill_name(form->fill));
    return &scratch;
}

/// Whether graph Constant `n` is of the kind pattern Constant `p` is: a pattern with no
/// "shape" is a scalar and matches one-element constants only.
[[nodiscard]] inline bool constant_kind_fits(const PatternNode& p, const Node& n) {
    if (p.op != OpKind::Constant) return true;
    const bool tensor = std::any_of(p.attributes.begin(), p.attributes.end(), [](const PatternAttribute& a) { return a.name == "shape"; });
    return tensor || (n.data && n.data->numel() == 1);
}

[[nodiscard]] inline std::optional<std::int64_t> symbol_int(const EvalContext& c, std::uint32_t s) {
    if (!c.symbols.bound(s)) return std::nullopt;
    const auto* v = std::get_if<std::int64_t>(&c.symbols.value(s));
    return v ? std::optional(*v) : std::nullopt;
}

/// base / divisor + offset; nullopt if a symbol is unbound, an axis is out of range, a
/// dimension is unknown or the division leaves a remainder.
[[nodiscard]] inline std::optional<std::int64_t> evaluate(const IntTerm& t, const EvalContext& c) {
    std::int64_t base = 0;
    switch (t.kind) {
        case IntTerm::Kind::literal: break;
        case IntTerm::Kind::symbol: {
            const auto v = symbol_int(c, t.symbol);
            if (!v) return std::nullopt;
            base = *v;
            break;
        }
        case IntTerm::Kind::dim: {
            const Shape& s = c.shape(t.tensor);
            std::int64_t axis = t.axis;
            if (t.axis_from_symbol) {
                const auto v = symbol_int(c, t.symbol);
                if (!v) return std::nullopt;
                axis = *v;
            }
            if (axis < 0) axis += s.rank();
            if (axis < 0 || axis >= s.rank() || s[static_cast<int>(axis)] < 0) return std::nullopt;
            base = s[static_cast<int>(axis)];
            break;
        }
        case IntTerm::Kind::rank: base = c.shape(t.tensor).rank(); break;
    }
    if (base % t.divisor != 0) return std::nullopt;
    return base / t.divisor + t.offset;
}

[[nodiscard]] inline const std::vector<std::int64_t>* symbol_ints(const EvalContext& c, std::uint32_t s) {
    return c.symbols.bound(s) ? std::get_if<std::vector<std::int64_t>>(&c.symbols.value(s)) : nullptr;
}

/// Transpose by `inner` then by `outer` is one transpose by result[j] = inner[outer[j]].
[[nodiscard]] inline std::optional<std::vector<std::int64_t>> compose_permutations(const std::vector<std::int64_t>& inner,
                                                                                 const std::vector<std::int64_t>& outer) {
    if (inner.size() != outer.size()) return std::nullopt;
    std::vector<std::int64_t> result(outer.size());
    for (std::size_t j = 0; j < outer.size(); ++j) {
        if (outer[j] < 0 || static_cast<std::size_t>(outer[j]) >= inner.size()) return std::nullopt;
        result[j] = inner[static_cast<std::size_t>(outer[j])];
    }
    return result;
}

/// The value of an expression, or nullopt if it cannot be computed for this match.
[[nodiscard]] inline std::optional<AttributeValue> evaluate(const AttrExpr& e, const EvalContext& c) {
    switch (e.kind) {
        case AttrExpr::Kind::literal: return e.literal;
        case AttrExpr::Kind::symbol:
            return c.symbols.bound(e.symbol) ? std::optional(c.symbols.value(e.symbol)) : std::nullopt;
        case AttrExpr::Kind::integer: {
            const auto v = evaluate(e.terms[0], c);
            return v ? std::optional<AttributeValue>(*v) : std::nullopt;
        }
        case AttrExpr::Kind::ints: {
            std::vector<std::int64_t> values;
            values.reserve(e.terms.size());
            for (const IntTerm& t : e.terms) {
                const auto v = evaluate(t, c);
                if (!v) return std::nullopt;
                values.push_back(*v);
            }
            return AttributeValue(std::move(values));
        }
        case AttrExpr::Kind::composed_permutation: {
            const auto* inner = symbol_ints(c, e.symbol);
            const auto* outer = symbol_ints(c, e.second_symbol);
            if (!inner || !outer) return std::nullopt;
            auto composed = compose_permutations(*inner, *outer);
            return composed ? std::optional<AttributeValue>(std::move(*composed)) : std::nullopt;
        }
    }
    return std::nullopt;
}

/// ONNX unidirectional broadcasting: `from` can be stretched to `to`.
[[nodiscard]] inline bool broadcasts_to(const Shape& from, const Shape& to) noexcept {
    if (from.rank() > to.rank()) return false;
    for (int i = 1; i <= from.rank(); ++i) {
        const std::int64_t a = from[from.rank() - i];
        if (a != 1 && a != to[to.rank() - i]) return false;
    }
    return true;
}

/// See Constraint::Kind::kernel_enlargeable.
[[nodiscard]] inline bool kernel_enlargeable(const std::vector<std::int64_t>& k1, const std::vector<std::int64_t>& p1,
                                             const std::vector<std::int64_t>& k2, const std::vector<std::int64_t>& p2) {
    constexpr std::size_t spatial = 2;
    if (k1.size() != spatial || k2.size() != spatial || p1.size() != 2 * spatial || p2.size() != 2 * spatial) return false;
    bool grows = false;
    for (std::size_t i = 0; i < spatial; ++i) {
        const std::int64_t extra = k2[i] - k1[i];
        if (extra < 0 || extra % 2 != 0) return false;
        const std::int64_t side = extra / 2;
        if (p2[i] - p1[i] != side || p2[i + spatial] - p1[i + spatial] != side) return false;
        grows = grows || extra > 0;
    }
    return grows;
}

[[nodiscard]] inline bool is_identity_permutation(const std::vector<std::int64_t>& p) noexcept {
    for (std::size_t i = 0; i < p.size(); ++i)
        if (p[i] != static_cast<std::int64_t>(i)) return false;
    return true;
}

/// Whether constraint `k` holds for the match.
[[nodiscard]] inline bool holds(const Constraint& k, const EvalContext& c) {
    using Kind = Constraint::Kind;
    switch (k.kind) {
        case Kind::rank_equals: return c.shape(k.tensors[0]).rank() == k.value;
        case Kind::same_shape: return c.shape(k.tensors[0]) == c.shape(k.tensors[1]);
        case Kind::broadcasts_to: return broadcasts_to(c.shape(k.tensors[0]), c.shape(k.tensors[1]));
        case Kind::permutation_is_identity:
        case Kind::permutation_not_identity: {
            const auto* inner = symbol_ints(c, k.symbols[0]);
            const auto* outer = symbol_ints(c, k.symbols[1]);
            if (!inner || !outer) return false;
            const auto composed = compose_permutations(*inner, *outer);
            if (!composed) return false;
            return is_identity_permutation(*composed) == (k.kind == Kind::permutation_is_identity);
        }
        case Kind::kernel_enlargeable: {
            // kernel, pads, enlarged kernel, enlarged pads
            std::array<const std::vector<std::int64_t>*, 4> args{};
            static_assert(args.size() == constraint_spec(Constraint::Kind::kernel_enlargeable).symbols);
            for (std::size_t i = 0; i < args.size(); ++i)
                if (!(args[i] = symbol_ints(c, k.symbols[i]))) return false;
            return kernel_enlargeable(*args[0], *args[1], *args[2], *args[3]);
        }
        case Kind::is_scalar: return c.shape(k.tensors[0]).numel() == 1;
    }
    return false;
}

}  // namespace rlflow::rewrite::detail
