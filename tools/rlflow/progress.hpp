#pragma once
// A progress bar for long work, drawn on stderr only when stderr is a terminal (so logs and
// pipes stay clean), redrawn at most every 100 ms; and number formats the reports share.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace rlflow::cli {

inline std::string format_ms(double ms) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g ms", ms);
    return buf;
}

inline std::string format_ratio(double ratio) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3fx", ratio);
    return buf;
}

/// The items joined with `separator` between them.
inline std::string join(const std::vector<std::string>& items, const std::string& separator) {
    std::string text;
    for (const std::string& item : items) text += (text.empty() ? "" : separator) + item;
    return text;
}

/// `label [#####.....] done/total  text`, on one redrawn line.
class ProgressBar {
public:
    ProgressBar(std::string label, std::size_t total)
        : m_label(std::move(label)), m_total(std::max<std::size_t>(total, 1)), m_enabled(isatty(STDERR_FILENO) != 0) {}

    void update(std::size_t done, const std::string& text) {
        if (!m_enabled) return;
        const auto now = std::chrono::steady_clock::now();
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
        if (m_enabled && m_drawn) std::fputc('\n', stderr);
        m_drawn = false;
    }

private:
    static constexpr std::size_t width = 30;
    static constexpr std::chrono::milliseconds redraw_interval{100};

    std::string m_label;
    std::size_t m_total;
    bool m_enabled;
    bool m_drawn = false;
    std::chrono::steady_clock::time_point m_last{};
};

}  // namespace rlflow::cli
