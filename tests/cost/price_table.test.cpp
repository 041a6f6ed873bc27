// Recorded price tables: what is recorded is what is priced, what is missing is estimated
// by the fitted roofline and counted, and damaged or foreign files are refused by name.
#include <rlflow/cost.hpp>
#include <rlflow/cost/price_table.hpp>
#include <rlflow/models/zoo.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace rlflow;

namespace {

/// A table of the cpu preset's prices of every op node of `g`, alone.
cost::PriceTable table_of(const Graph& g) {
    cost::PriceTable t;
    t.origin = {"ort-cpu (test)", "test CPU", "none", "", "fp32", "analytic:cpu"};
    t.fit = *cost::device_preset("cpu");
    t.fit.name = "table-fit";
    cost::CostModel<cost::AnalyticBackend> model(cost::AnalyticBackend::preset("cpu"));
    const std::vector<char> constant = weight_only_nodes(g);
    for (const Node& n : g.nodes()) {
        if (n.traits().has(op_flag_source) || constant[n.id.value]) continue;
        const cost::CostModel<cost::AnalyticBackend>::Signature s(g, n, constant);
        // Recorded at twice the preset's price, so a table price and an estimate differ.
        t.prices[cost::signature_key(s.view())] = 2 * model.op_cost(s.view());
        t.ops[cost::signature_key(s.view())] = std::string(n.traits().onnx_name);
    }
    return t;
}

struct TempFile {
    std::filesystem::path path = std::filesystem::temp_directory_path() / ("rlflow-price-table-" + std::to_string(::getpid()) + ".json");
    ~TempFile() { std::filesystem::remove(path); }
};

}  // namespace

TEST_CASE("a price table prices recorded signatures as recorded and estimates the others by its fitted roofline, counting them") {
    const Graph squeeze = models::build_zoo_model("squeezenet1_1");
    const cost::PriceTable table = table_of(squeeze);
    REQUIRE(table.prices.size() > 5);
    cost::CostModel<cost::TableBackend> priced(cost::TableBackend(table, "test"));
    cost::CostModel<cost::AnalyticBackend> preset(cost::AnalyticBackend::preset("cpu"));
    // Every signature of the recorded graph is in the table: twice the preset's sum. (The
    // table holds no fused pairs, so a Conv and its Relu cost their parts, from the table.)
    CHECK(priced.graph_cost(squeeze) == doctest::Approx(2 * preset.graph_cost(squeeze)).epsilon(1e-9));
    CHECK(priced.backend().estimated() == 0);
    CHECK(priced.backend().measured() > 0);
    // Another model's signatures are mostly missing: estimated by the fit (here the cpu
    // preset itself), and counted.
    const Graph resnet = models::build_zoo_model("resnet18");
    const double estimated = priced.graph_cost(resnet);
    CHECK(priced.backend().estimated() > 0);
    CHECK(estimated > 0);
    CHECK(estimated <= 2 * preset.graph_cost(resnet) + 1e-9);
    CHECK(estimated >= preset.graph_cost(resnet) - 1e-9);
    CHECK(priced.name() == "table:test:analytic:cpu");
}

TEST_CASE("a price table survives writing and reading, entries, origin and fit alike") {
    const TempFile file;
    cost::PriceTable table = table_of(models::build_zoo_model("squeezenet1_1"));
    table.fit.peak_gflops = 123.5;
    table.fit_rms_log_error = 0.25;
    cost::save_price_table(table, file.path);
    const cost::PriceTable back = cost::load_price_table(file.path);
    CHECK(back.prices == table.prices);
    CHECK(back.ops == table.ops);
    CHECK(back.origin.target == table.origin.target);
    CHECK(back.origin.backend == table.origin.backend);
    CHECK(back.origin.precision == "fp32");
    CHECK(back.fit.peak_gflops == 123.5);
    CHECK(back.fit.lowering.only_rows_saturate == table.fit.lowering.only_rows_saturate);
    CHECK(back.fit.lowering.im2col_row_ns == table.fit.lowering.im2col_row_ns);
    CHECK(back.fit_rms_log_error == 0.25);
    // Equal tables are equal files.
    CHECK(cost::price_table_json(back) == cost::price_table_json(table));
}

TEST_CASE("a damaged price table, or one of another format version, is refused naming the file") {
    const TempFile file;
    const cost::PriceTable table = table_of(models::build_zoo_model("squeezenet1_1"));
    std::string text = cost::price_table_json(table);
    const auto refused = [&](const std::string& contents, const std::string& why) {
        std::ofstream(file.path, std::ios::binary) << contents;
        CHECK_THROWS_WITH_AS((void)cost::load_price_table(file.path),
                             doctest::Contains((file.path.string() + ": not a usable price table: " + why).c_str()), precondition_error);
    };
    refused(text.substr(0, text.size() / 2), "it is not JSON");
    std::string other = text;
    other.replace(other.find("\"version\": 1"), 12, "\"version\": 7");
    refused(other, "it is version 7; this rlflow reads version 1");
    std::string foreign = text;
    foreign.replace(foreign.find("rlflow-price-table"), 18, "something-else-alto");
    refused(foreign, "its format is not rlflow-price-table");
    std::string bad_key = text;
    bad_key.replace(bad_key.find("\"key\": \"") + 8, 2, "zz");
    refused(bad_key, "an entry's key is not hex");
    std::string no_fit = text;
    no_fit.replace(no_fit.find("\"fit\""), 5, "\"fat\"");
    refused(no_fit, "a field is missing");
    CHECK_THROWS_AS((void)cost::load_price_table(file.path.string() + ".missing"), io_error);
}
