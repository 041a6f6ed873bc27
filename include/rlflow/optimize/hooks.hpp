#pragma once
/// \file
/// How `rlflow::optimize` talks to whoever called it while it works: progress of its long
/// phases, lines for a person (the plan, notes, warnings) and a flag that cancels it.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace rlflow::opt {

/// A long piece of work's progress: a phase ("search", "guard all", ...), how much of it
/// is done, and a line of text; `finished` once it ends.
struct ProgressUpdate {
    std::string phase;
    std::size_t done = 0;
    std::size_t total = 1;
    std::string text;
    bool finished = false;
};

/// Where progress goes (a bar on a terminal, a log line; nowhere when empty).
using ProgressHook = std::function<void(const ProgressUpdate&)>;

/// Reports `update` to `hook`, if there is one.
inline void report_progress(const ProgressHook& hook, const ProgressUpdate& update) {
    if (hook) hook(update);
}

/// `ms` as "12.35 ms" (four significant digits), as consoles and progress lines print it.
[[nodiscard]] inline std::string format_ms(double ms) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g ms", ms);
    return buf;
}

/// `ratio` as "1.234x".
[[nodiscard]] inline std::string format_ratio(double ratio) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3fx", ratio);
    return buf;
}

/// What a line for a person is: the plan (target, prices and guard, once at the start), a
/// note, or a warning.
enum class MessageKind : std::uint8_t { plan, note, warning };

/// Where lines for a person go.
using MessageHook = std::function<void(MessageKind, const std::string&)>;

/// Prints notes and warnings on stderr and leaves the plan out: the default MessageHook.
inline void print_message(MessageKind kind, const std::string& text) {
    if (kind == MessageKind::plan) return;
    std::fprintf(stderr, "%s\n", text.c_str());
    std::fflush(stderr);
}

/// Sends `text` to `hook`, if there is one.
inline void tell(const MessageHook& hook, MessageKind kind, const std::string& text) {
    if (hook) hook(kind, text);
}

}  // namespace rlflow::opt
