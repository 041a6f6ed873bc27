// rlflow_calibrate_cpu: fits the analytic `cpu` preset's constants to ONNX Runtime's op
// times on this machine, and prints the fit. A measurement driver, not installed.
//
//   rlflow_calibrate_cpu [--sources FILE.onnx|ZOO_NAME ...] [--walks N] [--steps N]
//                        [--focused-walks N] [--seed S] [--runs R] [--warmup W]
//                        [--repeats N] [--cache FILE] [--samples FILE.tsv] [--machine LABEL]
//
// 1. Graphs: every source (a weight-free ONNX export, `input` its data input, or a zoo
//    model), each with seeded random weights, plus --walks random walks over the default
//    rules and --focused-walks walks over the rewrites that change a convolution's or
//    MatMul's arithmetic (tools/variant_walks.hpp), of 1 to --steps rewrites.
// 2. Signatures: every distinct op signature those graphs run (weight-only ops, sources
//    and views excluded, as CostModel prices them).
// 3. Measurement: each signature timed by the ort backend (ONNX Runtime, level basic, one
//    thread: how the end-to-end guard times models) --repeats times, keeping the least
//    median; the --cache file keeps the prices, so a refit after changing the model
//    measures nothing again (delete it to measure afresh).
// 4. Fit: the constants of the cpu preset that minimise a robust (Huber) loss of the log
//    ratio of predicted to measured time over all signatures (Levenberg-Marquardt,
//    tools/preset_fit.hpp), printed as a preset row to paste into cost/analytic.hpp, with
//    the median absolute percentage error and Spearman's rho of the fitted and of the
//    shipped preset, overall and per op kind.
//
// --samples writes one line per signature (features, measured and predicted ms) as TSV.
// Timings are only as quiet as the machine: run it when nothing else is.
//
// The shipped cpu preset was fitted with the committed exports and three depthwise CNNs
// exported into the build folder (one command per line, wrapped here):
//
//   /usr/bin/python3 tools/export_models.py --out build/calibration --opsets 13
//       --models mobilenet_v2 shufflenet_v2_x1_0 efficientnet_b0
//   cmake --build build --target rlflow_calibrate_cpu   # not built by `all`
//   build/tools/rlflow_calibrate_cpu --sources tests/data/resnet18_op13.onnx
//       tests/data/resnext50_32x4d_op13.onnx tests/data/squeezenet1_1_op13.onnx
//       tests/data/inception_v3_op13.onnx tests/data/transformer_op13.onnx
//       build/calibration/mobilenet_v2_op13.onnx build/calibration/shufflenet_v2_x1_0_op13.onnx
//       build/calibration/efficientnet_b0_op13.onnx
//       --cache build/calibration/prices.txt --samples build/calibration/samples.tsv

#include "fit_report.hpp"
#include "op_samples.hpp"
#include "preset_fit.hpp"
#include "variant_walks.hpp"

#include <rlflow/core/atomic_file.hpp>
#include <rlflow/cost.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iomanip>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace rlflow;

struct Options {
    std::vector<std::string> sources{RLFLOW_SOURCE_DIR "/tests/data/resnet18_op13.onnx",
                                     RLFLOW_SOURCE_DIR "/tests/data/resnext50_32x4d_op13.onnx",
                                     RLFLOW_SOURCE_DIR "/tests/data/squeezenet1_1_op13.onnx",
                                     RLFLOW_SOURCE_DIR "/tests/data/inception_v3_op13.onnx",
                                     RLFLOW_SOURCE_DIR "/tests/data/transformer_op13.onnx"};
    std::size_t walks = 2;
    std::size_t focused_walks = 4;
    std::size_t steps = 12;
    std::uint64_t seed = 0;
    int runs = 9;
    int warmup = 2;
    std::size_t repeats = 3;
    std::filesystem::path cache;
    std::filesystem::path samples;
    std::string machine;
};

/// The sources and their variants (step 1 above).
std::vector<tools::NamedGraph> calibration_graphs(const Options& options) {
    const auto all_rules = std::make_shared<const rewrite::RuleSet>(rewrite::default_rules());
    const std::vector<std::size_t> focused = tools::rule_ids(*all_rules, tools::focused_rule_names());
    std::mt19937_64 rng(options.seed);
    std::uniform_int_distribution<std::size_t> length(1, std::max<std::size_t>(options.steps, 1));
    std::vector<tools::NamedGraph> graphs;
    for (const std::string& source : options.sources) {
        tools::NamedGraph base = tools::load_source(source, options.seed);
        for (std::size_t w = 0; w < options.walks + options.focused_walks; ++w) {
            const bool is_focused = w >= options.walks;
            std::size_t applied = 0;
            Graph g = tools::random_walk(base.graph, all_rules, is_focused ? focused : std::vector<std::size_t>{},
                                         length(rng), rng, applied);
            graphs.push_back({base.name + (is_focused ? "_focused" : "_walk") + std::to_string(w), std::move(g)});
        }
        graphs.push_back(std::move(base));
    }
    return graphs;
}

/// Measured prices by signature key, kept in a text file: the backend's name on the first
/// line (a file measured with another ORT, level or thread count is not read), then a hex
/// key, a tab and milliseconds per line.
using Prices = std::map<std::string, double>;

Prices load_prices(const std::filesystem::path& path, const std::string& backend) {
    Prices prices;
    std::ifstream in(path);
    std::string hex;
    if (!std::getline(in, hex) || hex != backend) {
        if (in) std::fprintf(stderr, "%s holds prices of %s, not %s: not read\n", path.c_str(), hex.c_str(), backend.c_str());
        return prices;
    }
    double ms = 0;
    while (in >> hex >> ms) {
        std::string key;
        constexpr int base = 16;
        for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
            key.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, base)));
        prices[key] = ms;
    }
    return prices;
}

void save_prices(const std::filesystem::path& path, const std::string& backend, const Prices& prices) {
    std::ostringstream out;
    out << backend << '\n' << std::hex << std::setfill('0');
    for (const auto& [key, ms] : prices) {
        for (const char c : key) out << std::setw(2) << static_cast<int>(static_cast<unsigned char>(c));
        out << std::dec << '\t' << std::setprecision(17) << ms << std::hex << '\n';
    }
    write_file_atomically(path, out.str());
}

/// Times `todo` --repeats times, a batch of signatures per worker request, and keeps each
/// signature's least median: on a machine that other work shares, a median taken while
/// the core was taken away is too high, never too low.
void time_signatures(const std::vector<const tools::OpSample*>& todo, cost::OrtBackend& ort, const Options& options,
                     Prices& prices) {
    constexpr std::size_t batch = 64;
    for (std::size_t pass = 0; pass < options.repeats; ++pass)
        for (std::size_t start = 0; start < todo.size(); start += batch) {
            std::vector<cost::OpSignature> views;
            for (std::size_t i = start; i < std::min(start + batch, todo.size()); ++i) views.push_back(todo[i]->signature.view());
            const std::vector<double> ms = ort.op_costs_ms(views);
            for (std::size_t i = 0; i < views.size(); ++i) {
                const std::string key = cost::signature_key(views[i]);
                const auto it = prices.find(key);
                prices[key] = pass == 0 || it == prices.end() ? ms[i] : std::min(it->second, ms[i]);
            }
            std::fprintf(stderr, "pass %zu: %zu of %zu signatures timed\n", pass + 1, std::min(start + batch, todo.size()),
                         todo.size());
        }
}

/// Every distinct signature of `graphs` that ORT can run alone, priced (steps 2 and 3).
std::vector<tools::OpSample> measure(const std::vector<tools::NamedGraph>& graphs, cost::OrtBackend& ort,
                                     const Options& options) {
    std::map<std::string, tools::OpSample> unique;
    for (const tools::NamedGraph& named : graphs) tools::collect_signatures(named.graph, named.name, unique);
    Prices prices = options.cache.empty() ? Prices{} : load_prices(options.cache, ort.name());
    std::vector<const tools::OpSample*> todo;
    for (const auto& [key, sample] : unique)
        if (cost::detail::runs_alone_in_ort(sample.signature.view()) && !prices.contains(key)) todo.push_back(&sample);
    std::fprintf(stderr, "%zu signatures, %zu to time\n", unique.size(), todo.size());
    time_signatures(todo, ort, options, prices);
    if (!options.cache.empty()) save_prices(options.cache, ort.name(), prices);
    std::vector<tools::OpSample> samples;
    for (auto& [key, sample] : unique) {
        if (!cost::detail::runs_alone_in_ort(sample.signature.view())) continue;
        sample.measured_ms = prices.at(key);
        samples.push_back(std::move(sample));
    }
    return samples;
}

/// Writes the samples with their features and both presets' predictions as TSV.
void write_samples(const std::filesystem::path& path, const std::vector<tools::OpSample>& samples,
                   const cost::DeviceSpec& shipped, const cost::DeviceSpec& fitted) {
    std::ostringstream out;
    out << tools::feature_header() << "\tmeasured_ms\tshipped_ms\tfitted_ms\n";
    const cost::AnalyticBackend before(shipped), after(fitted);
    for (const tools::OpSample& s : samples)
        out << tools::feature_row(s) << '\t' << s.measured_ms << '\t' << before.op_cost_ms(s.signature.view()) << '\t'
            << after.op_cost_ms(s.signature.view()) << '\n';
    write_file_atomically(path, out.str());
}

void run(const Options& options) {
    cost::OrtBackendOptions ort_options;
    ort_options.settings = {"basic", 1};
    ort_options.runs = options.runs;
    ort_options.warmup = options.warmup;
    ort_options.seed = options.seed;
    ort_options.machine = options.machine;
    cost::OrtBackend ort(ort_options);
    std::fprintf(stderr, "timing op signatures with %s\n", ort.name().c_str());
    const std::vector<tools::OpSample> samples = measure(calibration_graphs(options), ort, options);
    if (ort.fallback_count() > 0)
        std::fprintf(stderr, "warning: ORT could not run %zu signatures, priced by their bytes instead\n", ort.fallback_count());
    const cost::DeviceSpec shipped = *cost::device_preset("cpu");
    const tools::PresetFit fit = tools::fit_preset(shipped, tools::cpu_fitted_fields(), samples);
    std::printf("%zu op signatures measured with %s, %zu times each\n\n", samples.size(), ort.name().c_str(), options.repeats);
    tools::print_fit(fit, shipped, samples);
    if (!options.samples.empty()) write_samples(options.samples, samples, shipped, fit.device);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Fit the analytic cpu preset to ONNX Runtime op times measured on this machine"};
    Options options;
    app.add_option("--sources", options.sources, "weight-free ONNX exports (input: `input`) or zoo model names")
        ->capture_default_str();
    app.add_option("--walks", options.walks, "random walks over the default rules per source")->capture_default_str();
    app.add_option("--focused-walks", options.focused_walks, "walks over the arithmetic-changing rules per source")
        ->capture_default_str();
    app.add_option("--steps", options.steps, "most rewrites per walk (each walk draws 1..steps)")->capture_default_str();
    app.add_option("--seed", options.seed, "seed of the walks, weights and inputs")->capture_default_str();
    app.add_option("--runs", options.runs, "timed ORT runs per signature")->capture_default_str();
    app.add_option("--warmup", options.warmup, "untimed ORT runs per signature")->capture_default_str();
    app.add_option("--repeats", options.repeats, "times each signature is timed; its least median is kept")
        ->capture_default_str();
    app.add_option("--cache", options.cache, "price file: signatures priced there are not timed again");
    app.add_option("--samples", options.samples, "write the signatures, features and prices as TSV");
    app.add_option("--machine", options.machine, "label of this machine in the ort backend's name");
    CLI11_PARSE(app, argc, argv);
    try {
        run(options);
    } catch (const rlflow::error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
    } catch (const cost::OrtWorkerError& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
    }
    return 0;
}
