#pragma once
/// \file
/// Typed node attributes: a small map from name to value, kept sorted by name so that
/// equality, hashing and canonical forms do not depend on insertion order.

#include <rlflow/core/error.hpp>
#include <rlflow/core/tensor.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace rlflow {

/// An attribute this library does not interpret (an ONNX graph or sparse tensor, say),
/// carried as the serialised ONNX AttributeProto so that export can write it back unchanged.
struct OpaqueAttribute {
    std::string serialized;
    friend bool operator==(const OpaqueAttribute&, const OpaqueAttribute&) = default;
};

/// The value of one attribute.
using AttributeValue = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>,
                                    std::vector<double>, std::vector<std::string>, TensorPtr, OpaqueAttribute>;

/// Index of each alternative in AttributeValue, for schemas.
enum class AttributeType : std::uint8_t { Int, Float, String, Ints, Floats, Strings, Tensor, Opaque };

[[nodiscard]] constexpr std::string_view attribute_type_name(AttributeType t) noexcept {
    constexpr std::string_view names[] = {"int", "float", "string", "ints", "floats", "strings", "tensor", "opaque"};
    return names[static_cast<std::size_t>(t)];
}

/// Sorted name → value map.
class Attributes {
public:
    using Entry = std::pair<std::string, AttributeValue>;

    Attributes() = default;
    Attributes(std::initializer_list<Entry> entries) {
        for (const auto& [name, value] : entries) set(name, value);
    }

    [[nodiscard]] bool has(std::string_view name) const noexcept { return find(name) != nullptr; }
    [[nodiscard]] std::size_t size() const noexcept { return m_entries.size(); }
    [[nodiscard]] bool empty() const noexcept { return m_entries.empty(); }
    [[nodiscard]] auto begin() const noexcept { return m_entries.begin(); }
    [[nodiscard]] auto end() const noexcept { return m_entries.end(); }

    /// Sets (or overwrites) an attribute.
    void set(std::string_view name, AttributeValue value) {
        auto it = lower_bound(name);
        if (it != m_entries.end() && it->first == name) it->second = std::move(value);
        else m_entries.emplace(it, std::string(name), std::move(value));
    }
    void erase(std::string_view name) {
        auto it = lower_bound(name);
        if (it != m_entries.end() && it->first == name) m_entries.erase(it);
    }

    /// The value, or nullptr if absent.
    [[nodiscard]] const AttributeValue* find(std::string_view name) const noexcept {
        auto it = std::lower_bound(m_entries.begin(), m_entries.end(), name,
                                   [](const Entry& e, std::string_view n) { return e.first < n; });
        return it != m_entries.end() && it->first == name ? &it->second : nullptr;
    }
    /// The value of type T; throws graph_error if it is absent or of another type.
    template <class T>
    [[nodiscard]] const T& get(std::string_view name) const {
        const AttributeValue* v = find(name);
        if (!v) throw graph_error("missing attribute '" + std::string(name) + "'");
        const T* typed = std::get_if<T>(v);
        if (!typed) throw graph_error("attribute '" + std::string(name) + "' has the wrong type");
        return *typed;
    }
    template <class T>
    [[nodiscard]] T get_or(std::string_view name, T fallback) const {
        const AttributeValue* v = find(name);
        if (!v) return fallback;
        return get<T>(name);
    }
    [[nodiscard]] std::int64_t get_int(std::string_view name, std::int64_t fallback) const {
        return get_or<std::int64_t>(name, fallback);
    }
    [[nodiscard]] double get_float(std::string_view name, double fallback) const {
        return get_or<double>(name, fallback);
    }
    [[nodiscard]] const std::vector<std::int64_t>& get_ints(std::string_view name) const {
        return get<std::vector<std::int64_t>>(name);
    }

    friend bool operator==(const Attributes& a, const Attributes& b) {
        if (a.m_entries.size() != b.m_entries.size()) return false;
        for (std::size_t i = 0; i < a.m_entries.size(); ++i) {
            if (a.m_entries[i].first != b.m_entries[i].first) return false;
            if (!values_equal(a.m_entries[i].second, b.m_entries[i].second)) return false;
        }
        return true;
    }

    /// Deep equality (tensor attributes compare by content, not by pointer).
    [[nodiscard]] static bool values_equal(const AttributeValue& a, const AttributeValue& b) {
        if (a.index() != b.index()) return false;
        if (const auto* ta = std::get_if<TensorPtr>(&a)) {
            const auto& tb = std::get<TensorPtr>(b);
            if (!*ta || !tb) return *ta == tb;
            return **ta == *tb;
        }
        return a == b;
    }

private:
    std::vector<Entry>::iterator lower_bound(std::string_view name) {
        return std::lower_bound(m_entries.begin(), m_entries.end(), name,
                                [](const Entry& e, std::string_view n) { return e.first < n; });
    }

    std::vector<Entry> m_entries;
};

}  // namespace rlflow
