#pragma once
/// \file
/// Recorded price tables: the measured price of every op signature some searches met on
/// some models, on one target, written once where the target is (`rlflow costs record`)
/// and priced from on any machine (`--cost table:FILE`). An agent can then be trained for
/// an H200 on a machine without a GPU, and it says so.
///
/// A signature the table lacks is priced by the analytic roofline fitted to the table's own
/// prices when it was recorded (as the cpu preset was fitted to ONNX Runtime), and counted
/// as an estimate: a report can say how much of a cost was measured.
///
/// Keys are cost::signature_key of each op as a CostModel asks for it: alone, and, for a
/// backend that prices in context (ONNX Runtime's fusions), with the op it fuses with.
///
/// The file is JSON: {"format": "rlflow-price-table", "version": 1, "target", "device",
/// "driver", "libraries", "precision", "backend", "fit": {DeviceSpec fields,
/// "rms_log_error"}, "entries": [{"key": hex of cost::signature_key, "op", "ms"}]}.

#include <rlflow/core/atomic_file.hpp>
#include <rlflow/core/error.hpp>
#include <rlflow/cost/analytic.hpp>
#include <rlflow/cost/cost_backend.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace rlflow::cost {

/// The file format's name and version; a table of another version is refused.
inline constexpr const char* price_table_format = "rlflow-price-table";
inline constexpr int price_table_version = 1;

/// What a table says about where and how it was measured.
struct PriceTableOrigin {
    /// The target, in words (cost::Target::describe).
    std::string target;
    /// The device's name (a CPU's model name, a GPU's).
    std::string device;
    /// The driver or runtime version that ran the ops (ONNX Runtime's, the CUDA driver's).
    std::string driver;
    /// Library versions, in words (cuDNN, cuBLAS; empty where none apply).
    std::string libraries;
    /// The arithmetic: "fp32", "tf32".
    std::string precision = "fp32";
    /// The cost backend that measured (CostModel::name).
    std::string backend;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PriceTableOrigin, target, device, driver, libraries, precision, backend)

/// A recorded price table: signature keys to milliseconds, and the roofline fitted to them.
struct PriceTable {
    PriceTableOrigin origin;
    /// The fitted roofline that prices signatures the table lacks. Its name is "table-fit".
    DeviceSpec fit = device_presets.back();
    /// The fit's root-mean-square log error over the entries.
    double fit_rms_log_error = 0;
    /// cost::signature_key -> measured ms.
    std::unordered_map<std::string, double> prices;
    /// cost::signature_key -> the op's ONNX-like name, for people reading the file.
    std::unordered_map<std::string, std::string> ops;
};

namespace detail {

inline std::string to_hex(const std::string& bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const unsigned char c : bytes) {
        out.push_back(digits[c >> 4]);
        out.push_back(digits[c & 0xF]);
    }
    return out;
}

/// The bytes `hex` spells; nullopt when it is not an even run of hex digits.
inline std::optional<std::string> from_hex(const std::string& hex) {
    if (hex.size() % 2 != 0) return std::nullopt;
    const auto value = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    std::string out;
    out.reserve(hex.size() / 2);
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        const int high = value(hex[i]), low = value(hex[i + 1]);
        if (high < 0 || low < 0) return std::nullopt;
        out.push_back(static_cast<char>(high * 16 + low));
    }
    return out;
}

/// The DeviceSpec fields a table stores, by name, for reading and writing alike.
template <class Spec, class F>
void for_each_spec_field(Spec& d, F&& f) {
    f("peak_gflops", d.peak_gflops);
    f("bandwidth_gbs", d.bandwidth_gbs);
    f("launch_us", d.launch_us);
    f("half_saturation", d.half_saturation);
    f("peak_efficiency", d.peak_efficiency);
    f("vector_efficiency", d.lowering.vector_efficiency);
    f("matrix_product_efficiency", d.lowering.matrix_product_efficiency);
    f("im2col_passes", d.lowering.im2col_passes);
    f("im2col_stride_passes", d.lowering.im2col_stride_passes);
    f("im2col_row_ns", d.lowering.im2col_row_ns);
    f("activation_passes", d.lowering.activation_passes);
    f("cache_mib", d.lowering.cache_mib);
    f("cache_bandwidth_gbs", d.lowering.cache_bandwidth_gbs);
}

}  // namespace detail

/// The table as JSON text.
[[nodiscard]] inline std::string price_table_json(const PriceTable& t) {
    nlohmann::json j = t.origin;
    j["format"] = price_table_format;
    j["version"] = price_table_version;
    nlohmann::json fit;
    fit["only_rows_saturate"] = t.fit.lowering.only_rows_saturate;
    detail::for_each_spec_field(t.fit, [&](const char* name, double value) {
        // JSON has no infinity: a table that could not be read back is never written.
        RLFLOW_EXPECTS(std::isfinite(value), precondition_error, std::string("a price table's fit must be finite; ") + name + " is not");
        fit[name] = value;
    });
    fit["rms_log_error"] = t.fit_rms_log_error;
    j["fit"] = fit;
    // Entries sorted by key: equal tables are equal files.
    std::vector<const std::pair<const std::string, double>*> sorted;
    for (const auto& entry : t.prices) sorted.push_back(&entry);
    std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
    nlohmann::json entries = nlohmann::json::array();
    for (const auto* entry : sorted) {
        RLFLOW_EXPECTS(std::isfinite(entry->second) && entry->second >= 0, precondition_error,
                       "a price table's prices must be finite and non-negative");
        const auto op = t.ops.find(entry->first);
        entries.push_back({{"key", detail::to_hex(entry->first)}, {"op", op == t.ops.end() ? "" : op->second}, {"ms", entry->second}});
    }
    j["entries"] = std::move(entries);
    return j.dump(1) + "\n";
}

/// Writes `t` to `path` atomically (a temporary file, then a rename).
inline void save_price_table(const PriceTable& t, const std::filesystem::path& path) {
    write_file_atomically(path, price_table_json(t));
}

/// Reads the table in `path`; throws io_error when it cannot be read, and
/// precondition_error naming the file when it is not a price table of this version or is
/// damaged.
[[nodiscard]] inline PriceTable load_price_table(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    RLFLOW_EXPECTS(in.good(), io_error, path.string() + ": cannot read the price table");
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    const auto fail = [&](const std::string& what) { throw precondition_error(path.string() + ": not a usable price table: " + what); };
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) fail("it is not JSON (damaged or truncated)");
    if (j.value("format", std::string()) != price_table_format) fail("its format is not " + std::string(price_table_format));
    if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() != price_table_version)
        fail("it is version " + (j.contains("version") ? j["version"].dump() : std::string("(none)")) + "; this rlflow reads version "
             + std::to_string(price_table_version));
    PriceTable t;
    try {
        t.origin = j.get<PriceTableOrigin>();
        const nlohmann::json& fit = j.at("fit");
        t.fit.name = "table-fit";
        t.fit.lowering.only_rows_saturate = fit.at("only_rows_saturate").get<bool>();
        detail::for_each_spec_field(t.fit, [&](const char* name, double& value) { value = fit.at(name).get<double>(); });
        t.fit_rms_log_error = fit.at("rms_log_error").get<double>();
        for (const nlohmann::json& e : j.at("entries")) {
            const auto key = detail::from_hex(e.at("key").get<std::string>());
            if (!key) fail("an entry's key is not hex: " + e.at("key").dump().substr(0, 40));
            const double ms = e.at("ms").get<double>();
            if (!(ms >= 0) || !std::isfinite(ms)) fail("an entry's price is not a finite, non-negative number: " + e.at("ms").dump());
            t.prices[*key] = ms;
            t.ops[*key] = e.value("op", std::string());
        }
    } catch (const nlohmann::json::exception& e) {
        fail(std::string("a field is missing or of the wrong type (") + e.what() + ")");
    }
    if (!(t.fit.peak_gflops > 0 && t.fit.bandwidth_gbs > 0)) fail("its fitted roofline has no positive peak or bandwidth");
    return t;
}

/// Prices ops from a recorded table; a signature it lacks is priced by the table's fitted
/// roofline and counted as an estimate.
class TableBackend {
public:
    /// Prices from the table in `path` (see load_price_table for its errors).
    explicit TableBackend(const std::filesystem::path& path) : TableBackend(load_price_table(path), path.stem().string()) {}

    TableBackend(PriceTable table, std::string label)
        : m_table(std::make_shared<const PriceTable>(std::move(table))), m_label(std::move(label)),
          m_fallback(m_table->fit), m_counts(std::make_shared<Counts>()) {}

    /// Pairs a runtime fuses are priced as recorded (a table of ONNX Runtime's prices holds
    /// them); a pair the table lacks costs its two ops apart.
    static constexpr bool prices_in_context = true;

    [[nodiscard]] double op_cost_ms(const OpSignature& op) {
        const auto found = m_table->prices.find(signature_key(op));
        if (found != m_table->prices.end()) {
            ++m_counts->measured;
            return found->second;
        }
        if (op.producer) {
            OpSignature alone = op;
            alone.producer = nullptr;
            return op_cost_ms(*op.producer) + op_cost_ms(alone);
        }
        ++m_counts->estimated;
        return m_fallback.op_cost_ms(op);
    }

    /// "table:LABEL:BACKEND": the file's stem and the backend that measured, so caches and
    /// agents tell tables apart.
    [[nodiscard]] std::string name() const { return "table:" + m_label + ":" + m_table->origin.backend; }

    [[nodiscard]] const PriceTable& table() const noexcept { return *m_table; }
    /// Signatures priced from the table, and by the fitted roofline, so far (copies of this
    /// backend share the counts).
    [[nodiscard]] std::size_t measured() const noexcept { return m_counts->measured; }
    [[nodiscard]] std::size_t estimated() const noexcept { return m_counts->estimated; }

private:
    struct Counts {
        std::size_t measured = 0;
        std::size_t estimated = 0;
    };
    std::shared_ptr<const PriceTable> m_table;
    std::string m_label;
    AnalyticBackend m_fallback;
    std::shared_ptr<Counts> m_counts;
};
static_assert(CostBackend<TableBackend>);

}  // namespace rlflow::cost
