// The libFuzzer program of every target of targets.hpp: the environment variable
// RLFLOW_FUZZ_TARGET names the one it runs (tools/fuzz.sh sets it), so that the heavy
// headers compile once (tests/fuzz/CMakeLists.txt, RLFLOW_FUZZ=ON, clang 16).
#include "targets.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
const rlflow::fuzz::Target* chosen = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
    const char* name = std::getenv("RLFLOW_FUZZ_TARGET");
    for (const rlflow::fuzz::Target& t : rlflow::fuzz::targets())
        if (name != nullptr && std::strcmp(t.name, name) == 0) chosen = &t;
    if (chosen == nullptr) {
        std::fprintf(stderr, "rlflow_fuzz: set RLFLOW_FUZZ_TARGET to one of:");
        for (const rlflow::fuzz::Target& t : rlflow::fuzz::targets()) std::fprintf(stderr, " %s", t.name);
        std::fprintf(stderr, "\n");
        std::exit(2);
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { return chosen->run(data, size); }
