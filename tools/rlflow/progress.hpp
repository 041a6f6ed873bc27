#pragma once
// Progress of long work on stderr: on a terminal, a bar redrawn at most every 100 ms; piped
// into a log, one line every 5 s (RLFLOW_PROGRESS_INTERVAL seconds: elapsed time, count,
// best so far), so work that ends within 5 s leaves a log clean. And number formats the reports share.

#include <rlflow/optimize/hooks.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace rlflow::cli {

// The number formats of the library's progress lines, which the commands' consoles share.
using opt::format_ms;
using opt::format_ratio;

/// The items joined with `separator` between them.
inline std::string join(const std::vector<std::string>& items, const std::string& separator) {
    std::string text;
    for (const std::string& item : items) text += (text.empty() ? "" : separator) + item;
    return text;
}

/// `label [#####.....] done/total  text`, on one redrawn line; or, when stderr is not a
/// terminal, `label: done/total after S s  text` lines every log_interval.
class ProgressBar {
public:
    /// A bar that shows nothing unless `shown` (e.g. on MPI ranks other than 0).
    ProgressBar(std::string label, std::size_t total, bool shown = true)
        : m_label(std::move(label)), m_total(std::max<std::size_t>(total, 1)), m_terminal(isatty(STDERR_FILENO) != 0),
          m_shown(shown), m_start(std::chrono::steady_clock::now()), m_last(m_start) {}

    void update(std::size_t done, const std::string& text) {
        if (!m_shown) return;
        const auto now = std::chrono::steady_clock::now();
        if (!m_terminal) {
            if (now - m_last < m_log_interval) return;
            m_last = now;
            const double seconds = std::chrono::duration<double>(now - m_start).count();
            std::fprintf(stderr, "%s: %zu/%zu after %.0f s  %s\n", m_label.c_str(), done, m_total, seconds, text.c_str());
            std::fflush(stderr);
            return;
        }
        if (m_drawn && now - m_last < redraw_interval && done < m_total) return;
        m_last = now;
        m_drawn = true;
        const std::size_t filled = std::min(width, done * width / m_total);
        std::fprintf(stderr, "\r%s [%s%s] %zu/%zu  %s\x1b[K", m_label.c_str(), std::string(filled, '#').c_str(),
                     std::string(width - filled, '.').c_str(), done, m_total, text.c_str());
        std::fflush(stderr);
    }
    /// Ends the line if anything was drawn.
    void finish() {
        if (m_terminal && m_drawn) std::fputc('\n', stderr);
        m_drawn = false;
    }

private:
    static constexpr std::size_t width = 30;
    static constexpr std::chrono::milliseconds redraw_interval{100};
    /// Seconds between log lines: 5, or RLFLOW_PROGRESS_INTERVAL.
    static std::chrono::duration<double> log_interval() {
        constexpr double default_seconds = 5;
        const char* text = std::getenv("RLFLOW_PROGRESS_INTERVAL");
        char* end = nullptr;
        const double seconds = text ? std::strtod(text, &end) : default_seconds;
        return std::chrono::duration<double>(text && end != text && seconds > 0 ? seconds : default_seconds);
    }

    std::string m_label;
    std::size_t m_total;
    bool m_terminal;
    bool m_shown;
    bool m_drawn = false;
    std::chrono::steady_clock::time_point m_start;
    std::chrono::steady_clock::time_point m_last;
    std::chrono::duration<double> m_log_interval = log_interval();
};

}  // namespace rlflow::cli
