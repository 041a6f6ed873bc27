// The module graph as data, and a check that every header under include/rlflow keeps to it:
// a header of module M includes headers of M and of the modules M may include, nothing
// else. docs/architecture.md draws the same graph and says what each module owns.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

/// A module and the modules it depends on directly.
struct ModuleDependencies {
    std::string_view module;
    std::vector<std::string_view> depends_on;
};

/// The module graph: core at the bottom; exec, onnx, models and nn on core; the rewrite
/// engine on exec; rule synthesis on the engine; costs on exec and onnx; search on the
/// engine and costs; the learning agents on the searches and nn; the front door
/// (optimize) on all of them. A module may include its
/// dependencies and whatever they may include.
const std::vector<ModuleDependencies> module_graph = {
    {"core", {}},
    {"exec", {"core"}},
    {"onnx", {"core"}},
    {"models", {"core"}},
    {"nn", {"core"}},
    {"rewrite", {"exec"}},
    {"synth", {"rewrite"}},
    {"cost", {"exec", "onnx"}},
    {"search", {"rewrite", "cost"}},
    // The learning agents in layers: the environment and what every agent shares (its
    // directory, the random policy), the model-free agent, the model-based agent (its
    // controller is trained by the model-free agent's PPO), and the agents' search.
    {"rl/env", {"search", "nn"}},
    {"rl/model_free", {"rl/env"}},
    {"rl/model_based", {"rl/model_free"}},
    {"rl", {"rl/model_based"}},
    {"optimize", {"rl"}},
};

/// The umbrella of everything (rlflow/rlflow.hpp), which may include every module.
constexpr std::string_view everything = "rlflow";

using ModuleSet = std::set<std::string, std::less<>>;

/// The modules `module` may include (itself included), or nothing if it is not in the graph.
ModuleSet allowed_modules(std::string_view module) {
    ModuleSet allowed;
    if (module == everything) {
        for (const ModuleDependencies& m : module_graph) allowed.emplace(m.module);
        allowed.emplace(everything);
        return allowed;
    }
    std::vector<std::string_view> pending{module};
    while (!pending.empty()) {
        const std::string_view next = pending.back();
        pending.pop_back();
        const auto row = std::find_if(module_graph.begin(), module_graph.end(),
                                      [&](const ModuleDependencies& m) { return m.module == next; });
        if (row == module_graph.end() || !allowed.emplace(next).second) continue;
        pending.insert(pending.end(), row->depends_on.begin(), row->depends_on.end());
    }
    return allowed;
}

/// Whether `module` is a row of the module graph.
bool in_graph(std::string_view module) {
    return std::any_of(module_graph.begin(), module_graph.end(), [&](const ModuleDependencies& m) { return m.module == module; });
}

/// The module of a header named by its path under include/: "rlflow/rewrite/rule.hpp" and
/// the umbrella "rlflow/rewrite.hpp" are in "rewrite", "rlflow/rlflow.hpp" in "rlflow";
/// a folder of a module's that is a module of the graph itself is that module
/// ("rlflow/rl/env/env.hpp" is in "rl/env", "rlflow/rl/agent_search.hpp" in "rl").
std::string module_of(std::string_view header) {
    constexpr std::string_view root = "rlflow/";
    if (header.substr(0, root.size()) != root) return {};
    const std::string_view rest = header.substr(root.size());
    const std::size_t end = rest.find_first_of("/.");
    if (end != std::string_view::npos && rest[end] == '/') {
        const std::size_t folder_end = rest.find('/', end + 1);
        if (folder_end != std::string_view::npos && in_graph(rest.substr(0, folder_end))) return std::string(rest.substr(0, folder_end));
    }
    return std::string(rest.substr(0, end));
}

/// One include that breaks the graph.
struct Violation {
    std::string header;
    int line = 0;
    std::string included;
    std::string why;
};

/// The module an `#include <rlflow/...>` line names, or empty for any other line
/// (comments, other libraries, code).
std::string included_module(std::string_view line) {
    const std::size_t hash = line.find_first_not_of(" \t");
    if (hash == std::string_view::npos || line[hash] != '#') return {};
    std::string_view rest = line.substr(hash + 1);
    rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(" \t")));
    constexpr std::string_view directive = "include";
    if (rest.substr(0, directive.size()) != directive) return {};
    rest.remove_prefix(directive.size());
    rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(" \t")));
    if (rest.empty() || (rest.front() != '<' && rest.front() != '"')) return {};
    return module_of(rest.substr(1));
}

/// The includes of `text`, the header `header` (its path under include/), that its module
/// may not make; a header of a module outside the graph is one violation.
std::vector<Violation> check_header(const std::string& header, std::string_view text) {
    const std::string module = module_of(header);
    const ModuleSet allowed = allowed_modules(module);
    if (allowed.empty()) return {{header, 0, module, "module '" + module + "' is not in the module graph"}};
    std::vector<Violation> violations;
    int number = 0;
    for (std::size_t start = 0; start <= text.size(); ++number) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        const std::string included = included_module(text.substr(start, end - start));
        if (!included.empty() && !allowed.contains(included))
            violations.push_back({header, number + 1, included, module + " may not include " + included});
        start = end + 1;
    }
    return violations;
}

/// Every violation in the headers under `include_dir`, and how many headers were read.
std::vector<Violation> check_tree(const std::filesystem::path& include_dir, std::size_t& headers) {
    std::vector<Violation> violations;
    headers = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(include_dir / "rlflow")) {
        if (!entry.is_regular_file()) continue;
        std::ifstream in(entry.path());
        std::stringstream text;
        text << in.rdbuf();
        const std::string header = entry.path().lexically_relative(include_dir).generic_string();
        for (Violation& v : check_header(header, text.str())) violations.push_back(std::move(v));
        ++headers;
    }
    return violations;
}

/// The lines (from 1) of `text` that include a file after the first line of code: the
/// header check compiles a header after a precompiled one it includes, which is the same
/// check only when a header's includes all come before its code (tests/CMakeLists.txt).
/// Comments, blank lines and preprocessor lines are not code.
std::vector<int> includes_after_code(std::string_view text) {
    std::vector<int> late;
    bool code = false;
    bool in_comment = false;
    int number = 0;
    for (std::size_t start = 0; start < text.size(); ++number) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        std::string_view line = text.substr(start, end - start);
        start = end + 1;
        line.remove_prefix(std::min(line.size(), line.find_first_not_of(" \t")));
        if (in_comment) {
            in_comment = line.find("*/") == std::string_view::npos;
            continue;
        }
        if (line.starts_with("/*")) {
            in_comment = line.find("*/") == std::string_view::npos;
            continue;
        }
        if (line.empty() || line.starts_with("//")) continue;
        if (line.front() == '#') {
            std::string_view directive = line.substr(1);
            directive.remove_prefix(std::min(directive.size(), directive.find_first_not_of(" \t")));
            if (code && directive.starts_with("include")) late.push_back(number + 1);
            continue;
        }
        code = true;
    }
    return late;
}

std::string describe(const std::vector<Violation>& violations) {
    std::string out;
    for (const Violation& v : violations) out += "\n  " + v.header + ":" + std::to_string(v.line) + ": " + v.why;
    return out;
}

}  // namespace

TEST_CASE("every header under include/rlflow includes only the modules its module may include") {
    const std::filesystem::path include_dir = std::filesystem::path(RLFLOW_SOURCE_DIR) / "include";
    std::size_t headers = 0;
    const std::vector<Violation> violations = check_tree(include_dir, headers);
    constexpr std::size_t fewest_expected_headers = 100;  // the tree has about 200
    CHECK(headers >= fewest_expected_headers);
    CHECK_MESSAGE(violations.empty(), violations.size() << " includes break the module graph:" << describe(violations));
    // Every module of the graph exists, so the table cannot keep a module that is gone.
    for (const ModuleDependencies& m : module_graph) {
        CAPTURE(m.module);
        CHECK(std::filesystem::is_directory(include_dir / "rlflow" / std::string(m.module)));
    }
}

TEST_CASE("the module graph has no cycle: a module never may include one that may include it") {
    for (const ModuleDependencies& m : module_graph)
        for (const std::string& other : allowed_modules(m.module)) {
            if (other == m.module) continue;
            CAPTURE(m.module);
            CAPTURE(other);
            CHECK_FALSE(allowed_modules(other).contains(m.module));
        }
    // The engine and synthesis, the rule that made synth a module: one way only.
    CHECK(allowed_modules("synth").contains("rewrite"));
    CHECK_FALSE(allowed_modules("rewrite").contains("synth"));
    CHECK_FALSE(allowed_modules("search").contains("synth"));
}

TEST_CASE("the include checker reports a back edge from the rewrite engine to synthesis, naming header and line") {
    const std::string rewrite_header = "#pragma once\n"
                                       "/// \\file\n"
                                       "#include <rlflow/core/graph.hpp>\n"
                                       "#include <rlflow/rewrite/rule.hpp>\n"
                                       "#include <rlflow/synth/prover.hpp>\n"
                                       "#include <vector>\n";
    const std::vector<Violation> violations = check_header("rlflow/rewrite/applier.hpp", rewrite_header);
    REQUIRE(violations.size() == 1);
    CHECK(violations[0].header == "rlflow/rewrite/applier.hpp");
    CHECK(violations[0].line == 5);
    CHECK(violations[0].included == "synth");
    CHECK(violations[0].why == "rewrite may not include synth");
    // The same edge from the umbrella, spelt with quotes and spaces, from a detail header,
    // and from search (which sits above the engine, beside synthesis, not above it).
    CHECK(check_header("rlflow/rewrite.hpp", "#include \"rlflow/synth.hpp\"\n").size() == 1);
    CHECK(check_header("rlflow/rewrite/detail/target.hpp", "  #  include <rlflow/synth/exact.hpp>\n").size() == 1);
    CHECK(check_header("rlflow/search/greedy.hpp", "#include <rlflow/synth/generator.hpp>\n").size() == 1);
    // The edges the graph allows are not reported, nor are comments and other libraries.
    CHECK(check_header("rlflow/synth/prover.hpp", "#include <rlflow/rewrite/rule.hpp>\n#include <rlflow/exec/executor.hpp>\n")
              .empty());
    CHECK(check_header("rlflow/rewrite/rule.hpp", "// #include <rlflow/synth/prover.hpp>\n#include <z3++.h>\n").empty());
    CHECK(check_header("rlflow/rlflow.hpp", "#include <rlflow/synth.hpp>\n#include <rlflow/search.hpp>\n").empty());
    // A header of a module the graph does not know is reported, so a new module must be
    // placed in the graph.
    const std::vector<Violation> unknown = check_header("rlflow/mpi/launch.hpp", "#include <rlflow/nn/tape.hpp>\n");
    REQUIRE(unknown.size() == 1);
    CHECK(unknown[0].why == "module 'mpi' is not in the module graph");
    // The learning agents sit above the searches and nn, and nothing below includes them.
    CHECK(check_header("rlflow/rl/model_free/ppo.hpp", "#include <rlflow/nn/tape.hpp>\n#include <rlflow/search/greedy.hpp>\n").empty());
    CHECK(check_header("rlflow/search/greedy.hpp", "#include <rlflow/rl/env/env.hpp>\n").size() == 1);
    // Within rl, the layers: the environment knows no agent, the model-free agent no
    // model-based one.
    CHECK(check_header("rlflow/rl/env/env.hpp", "#include <rlflow/rl/model_free/policy.hpp>\n").size() == 1);
    CHECK(check_header("rlflow/rl/model_free/trainer.hpp", "#include <rlflow/rl/model_based/dream.hpp>\n").size() == 1);
    CHECK(check_header("rlflow/rl/model_based/dream.hpp", "#include <rlflow/rl/model_free/ppo.hpp>\n").empty());
    CHECK(check_header("rlflow/rl/agent_search.hpp", "#include <rlflow/rl/model_based/policy.hpp>\n").empty());
    CHECK(check_header("rlflow/rl.hpp", "#include <rlflow/rl/agent_search.hpp>\n").empty());
}

TEST_CASE("every header includes before its first line of code, as the header check's precompiled bases need") {
    const std::filesystem::path include_dir = std::filesystem::path(RLFLOW_SOURCE_DIR) / "include";
    std::size_t headers = 0;
    std::string late;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(include_dir / "rlflow")) {
        if (!entry.is_regular_file()) continue;
        std::ifstream in(entry.path());
        std::stringstream text;
        text << in.rdbuf();
        for (const int line : includes_after_code(text.str()))
            late += "\n  " + entry.path().lexically_relative(include_dir).generic_string() + ":" + std::to_string(line);
        ++headers;
    }
    CHECK(headers >= 100);
    CHECK_MESSAGE(late.empty(), "includes after code:" << late);
    // The checker itself: comments, blank lines and directives are not code, and an
    // include of any file after code is found, by its line.
    CHECK(includes_after_code("#pragma once\n/// \\file\n/* a\n   b */\n#include <rlflow/core/graph.hpp>\n#include <vector>\n"
                              "namespace rlflow {}\n")
              .empty());
    CHECK(includes_after_code("#pragma once\nnamespace rlflow {}\n#include <rlflow/core/graph.hpp>\n  #  include <vector>\n") ==
          std::vector<int>{3, 4});
}

