#pragma once
/// \file
/// ONNX Runtime, reached through a long-lived worker process (tools/ort/worker.js, on
/// the npm package onnxruntime-node): it times ONNX models on the CPU and answers over
/// pipes, one JSON line per request (the protocol is documented in worker.js). The ort
/// cost backend prices one-node models with it, and `rlflow optimize`'s guard times
/// whole candidate models with it, interleaved, before deciding what to write.
///
/// Debian has no ONNX Runtime package; `bash tools/setup.sh` installs Node.js and the
/// npm package into tools/ort. RLFLOW_ORT_DIR (environment variable, else the build's
/// tools/ort or the installed share/rlflow/ort) names the folder holding worker.js.

#include <rlflow/core/error.hpp>
#include <rlflow/cost/detail/worker_process.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#ifndef RLFLOW_ORT_DIR
#define RLFLOW_ORT_DIR ""
#endif

namespace rlflow::cost {

/// The ONNX Runtime settings that change what a model costs: they are part of every
/// price and cache key measured under them.
struct OrtSettings {
    /// Graph optimisation level: disabled, basic, extended or all.
    std::string level = "basic";
    /// Intra-op threads (inter-op threads are 1, execution sequential).
    int threads = 1;

    /// "basic:t1": how names and reports give the settings.
    [[nodiscard]] std::string tag() const { return level + ":t" + std::to_string(threads); }
    /// Throws precondition_error unless the level is known and threads >= 1.
    void validate() const {
        RLFLOW_EXPECTS(level == "disabled" || level == "basic" || level == "extended" || level == "all",
                       precondition_error, "ORT optimisation level must be disabled, basic, extended or all, not '" + level + "'");
        RLFLOW_EXPECTS(threads >= 1, precondition_error, "ORT threads must be >= 1, not " + std::to_string(threads));
    }
};

/// How one batch of models is timed.
struct OrtTimingRequest {
    OrtSettings settings;
    /// Untimed runs of each model first.
    int warmup = 1;
    /// Timed runs of each model; a model's price is their median.
    int runs = 10;
    /// Alternate the models run by run (comparisons), or time each model's runs back to
    /// back (pricing one op with warm caches, as TASO measured).
    bool interleave = true;
    /// Seed of the random inputs; equal seeds feed equal inputs (below 2^53: JSON).
    std::uint64_t seed = 0;
    /// A sample repeats runs until it lasts this long (for ops of a few microseconds).
    double min_run_ms = 0;
    /// Read ORT's profiler trace too: kernel times inside ORT (needs interleave false).
    bool profile = false;
};

/// What one model's timing gave: its runs, or why it could not be timed.
struct ModelTiming {
    double median_ms = 0;
    std::vector<double> runs_ms;
    /// With profiling: the median over runs of the sum of the nodes' kernel times, in
    /// total and by ONNX op type (what the ops cost inside ORT, without the cost of
    /// calling it and copying inputs and outputs across).
    std::optional<double> kernel_ms;
    std::map<std::string, double> kernel_op_ms;
    std::string error;
    [[nodiscard]] bool ok() const noexcept { return error.empty(); }
};

/// Where the worker comes from and how long a request may take.
struct OrtWorkerOptions {
    /// The command that starts the worker; empty: `node <ort dir>/worker.js`.
    std::vector<std::string> command;
    /// Seconds one request may take before the worker is given up as hung.
    double timeout_seconds = 900;
};

/// The folder holding worker.js and node_modules/onnxruntime-node.
[[nodiscard]] inline std::filesystem::path ort_directory() {
    if (const char* dir = std::getenv("RLFLOW_ORT_DIR"); dir != nullptr && *dir != '\0') return dir;
    return RLFLOW_ORT_DIR;
}

/// How to install what the ort backend needs, for error messages.
[[nodiscard]] inline std::string ort_install_hint() {
    return "install Node.js and onnxruntime-node with `bash tools/setup.sh` (or: apt-get install nodejs npm && cd "
           + ort_directory().string() + " && ONNXRUNTIME_NODE_INSTALL=skip npm ci), or set RLFLOW_ORT_DIR";
}

/// Why ONNX Runtime cannot be used here, found without starting it; nullopt when the
/// worker script and the npm package are in place and node is on PATH.
[[nodiscard]] inline std::optional<std::string> ort_unavailable_reason() {
    const std::filesystem::path dir = ort_directory();
    std::error_code ec;
    if (dir.empty() || !std::filesystem::is_regular_file(dir / "worker.js", ec))
        return "the ONNX Runtime worker (worker.js) is not in '" + dir.string() + "'";
    if (!std::filesystem::is_directory(dir / "node_modules" / "onnxruntime-node", ec))
        return "onnxruntime-node is not installed in '" + dir.string() + "'";
    const char* path = std::getenv("PATH");
    std::string rest = path ? path : "";
    for (std::size_t start = 0; start <= rest.size();) {
        const std::size_t end = std::min(rest.find(':', start), rest.size());
        const std::filesystem::path candidate = std::filesystem::path(rest.substr(start, end - start)) / "node";
        if (end > start && ::access(candidate.c_str(), X_OK) == 0) return std::nullopt;
        start = end + 1;
    }
    return "node (Node.js) is not on PATH";
}

/// A worker failed while it was being used (it died, hung or answered nonsense): not
/// the user's input at fault, so not an rlflow::error.
class OrtWorkerError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A running ONNX Runtime worker. Not thread-safe: one request at a time.
class OrtWorker {
public:
    /// Starts the worker and reads its hello. Throws precondition_error with an install
    /// hint when ONNX Runtime is missing, OrtWorkerError when the worker fails otherwise.
    explicit OrtWorker(OrtWorkerOptions options = {}) : m_options(std::move(options)) {
        if (m_options.command.empty()) {
            if (const auto why = ort_unavailable_reason()) throw precondition_error(*why + "; " + ort_install_hint());
            m_options.command = {"node", (ort_directory() / "worker.js").string()};
        }
        try {
            m_process = std::make_unique<detail::WorkerProcess>(m_options.command);
            read_hello();
        } catch (const detail::WorkerFailure& e) {
            throw OrtWorkerError("ONNX Runtime worker (" + command_text() + ") failed to start: " + e.what());
        }
    }

    /// The ONNX Runtime version the worker loaded.
    [[nodiscard]] const std::string& version() const noexcept { return m_version; }

    /// Times `models` (ONNX files) under `request`; one entry per model, in order. A
    /// model the worker cannot load or run gets its error in its entry. Throws
    /// OrtWorkerError when the worker dies, hangs or breaks the protocol.
    [[nodiscard]] std::vector<ModelTiming> time(std::span<const std::filesystem::path> models,
                                                const OrtTimingRequest& request) {
        request.settings.validate();
        nlohmann::json j{{"id", ++m_next_id},       {"cmd", "time"},
                         {"level", request.settings.level}, {"threads", request.settings.threads},
                         {"warmup", request.warmup},    {"runs", request.runs},
                         {"interleave", request.interleave}, {"seed", request.seed},
                         {"min_run_ms", request.min_run_ms}, {"profile", request.profile}};
        j["models"] = nlohmann::json::array();
        for (const auto& m : models) j["models"].push_back(std::filesystem::absolute(m).string());
        const nlohmann::json answer = exchange(j, "timing " + std::to_string(models.size()) + " model(s)");
        const nlohmann::json results = answer.value("results", nlohmann::json());
        if (!results.is_array() || results.size() != models.size())
            throw OrtWorkerError("ONNX Runtime worker answered " + results.dump().substr(0, max_quoted_chars)
                                 + " as the results of " + std::to_string(models.size()) + " model(s)");
        std::vector<ModelTiming> timings;
        for (const auto& r : results) timings.push_back(parse_timing(r));
        return timings;
    }

private:
    [[nodiscard]] std::string command_text() const {
        std::string text;
        for (const auto& a : m_options.command) text += (text.empty() ? "" : " ") + a;
        return text;
    }

    void read_hello() {
        const std::string line = m_process->read_line(m_options.timeout_seconds);
        const nlohmann::json hello = parse(line, "its first line");
        if (!hello.value("ready", false))
            throw precondition_error("ONNX Runtime is not usable: " + hello.value("error", std::string("no reason given")) + "; "
                                     + ort_install_hint());
        if (hello.value("protocol", 0) != protocol_version)
            throw OrtWorkerError("ONNX Runtime worker speaks protocol " + hello.value("protocol", nlohmann::json()).dump()
                                 + ", rlflow speaks " + std::to_string(protocol_version));
        m_version = hello.value("ort_version", std::string("unknown"));
    }

    /// Sends `request`, returns the answer with the same id; throws on death, timeout,
    /// garbage or an error answer.
    nlohmann::json exchange(const nlohmann::json& request, const std::string& what) {
        try {
            m_process->send_line(request.dump());
            for (;;) {
                const nlohmann::json answer = parse(m_process->read_line(m_options.timeout_seconds), "an answer");
                if (!answer.contains("id") || answer["id"] != request["id"]) continue;  // a stale answer
                if (!answer.value("ok", false))
                    throw OrtWorkerError("ONNX Runtime worker refused a request while " + what + ": "
                                         + answer.value("error", std::string("no reason given")));
                return answer;
            }
        } catch (const detail::WorkerFailure& e) {
            throw OrtWorkerError("ONNX Runtime worker (" + command_text() + ") failed while " + what + ": " + e.what());
        }
    }

    [[nodiscard]] nlohmann::json parse(const std::string& line, const std::string& what) const {
        nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object())
            throw OrtWorkerError("ONNX Runtime worker (" + command_text() + ") wrote something that is not JSON as " + what
                                 + ": " + line.substr(0, max_quoted_chars));
        return j;
    }

    [[nodiscard]] static ModelTiming parse_timing(const nlohmann::json& r) {
        ModelTiming t;
        if (r.contains("error")) {
            t.error = r["error"].is_string() ? r["error"].get<std::string>() : r["error"].dump();
            return t;
        }
        if (!r.contains("median_ms") || !r["median_ms"].is_number())
            throw OrtWorkerError("ONNX Runtime worker answered a result without median_ms: " + r.dump().substr(0, max_quoted_chars));
        t.median_ms = r["median_ms"].get<double>();
        if (r.contains("runs_ms")) t.runs_ms = r["runs_ms"].get<std::vector<double>>();
        if (r.contains("kernel_ms") && r["kernel_ms"].is_number()) t.kernel_ms = r["kernel_ms"].get<double>();
        if (r.contains("kernel_op_ms") && r["kernel_op_ms"].is_object())
            for (const auto& [op, ms] : r["kernel_op_ms"].items())
                if (ms.is_number()) t.kernel_op_ms[op] = ms.get<double>();
        return t;
    }

    static constexpr std::size_t max_quoted_chars = 200;
    /// The worker protocol this client speaks (tools/ort/worker.js).
    static constexpr int protocol_version = 1;
    OrtWorkerOptions m_options;
    std::unique_ptr<detail::WorkerProcess> m_process;
    std::string m_version;
    std::int64_t m_next_id = 0;
};

}  // namespace rlflow::cost
