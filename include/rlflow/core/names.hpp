#pragma once
/// \file
/// One table of names per enum: what the command line, Python and the reports call each
/// value. A string is parsed into the enum once, where it enters (a flag, a keyword
/// argument, a file), and the library passes the enum; the CLI's checks and Python's
/// messages list the same table.

#include <rlflow/core/error.hpp>

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlflow {

/// An enum value and its name.
template <class E>
struct Named {
    E value;
    std::string_view name;
};

/// The names of the values of E, in the order they are listed to users.
template <class E, std::size_t N>
struct NameTable {
    std::array<Named<E>, N> entries;

    /// The name of `value` ("?" for a value the table leaves out).
    [[nodiscard]] constexpr std::string_view name(E value) const noexcept {
        for (const Named<E>& n : entries)
            if (n.value == value) return n.name;
        return "?";
    }
    /// The value `text` names, if any.
    [[nodiscard]] constexpr std::optional<E> find(std::string_view text) const noexcept {
        for (const Named<E>& n : entries)
            if (n.name == text) return n.value;
        return std::nullopt;
    }
    /// Every name, in order (for CLI11's IsMember and Python's checks).
    [[nodiscard]] std::vector<std::string> names() const {
        std::vector<std::string> out;
        for (const Named<E>& n : entries) out.emplace_back(n.name);
        return out;
    }
    /// The names as "a, b or c", for messages.
    [[nodiscard]] std::string listed() const {
        std::string text;
        for (std::size_t i = 0; i < N; ++i) text += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(entries[i].name);
        return text;
    }
    /// The value `text` names; precondition_error "unknown WHAT 'text'; use a, b or c" otherwise.
    [[nodiscard]] E parse(std::string_view text, std::string_view what) const {
        if (const std::optional<E> value = find(text)) return *value;
        throw precondition_error("unknown " + std::string(what) + " '" + std::string(text) + "'; use " + listed());
    }
};

}  // namespace rlflow
