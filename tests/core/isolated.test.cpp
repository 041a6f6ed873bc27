// run_isolated: work in a child process returns its bytes or its exception's message, and a
// child that crashes, aborts, exits early or hangs is reported as such, never taking the
// caller down.
#include <rlflow/core/isolated.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

using namespace rlflow;
using namespace std::chrono_literals;
using Status = IsolatedResult::Status;

namespace {
constexpr auto generous = 30s;  // far above what any of these children takes
}

TEST_CASE("isolated work returns its bytes, binary ones and large ones included") {
    const std::string binary("a\0b\xff", 4);
    const IsolatedResult small = run_isolated([&] { return binary; }, generous);
    CHECK(small.status == Status::Ok);
    CHECK(small.bytes == binary);
    // More than a pipe holds at once (64 KiB on Linux): the parent reads while the child writes.
    const std::size_t large_size = 3 << 20;
    const IsolatedResult large = run_isolated([&] { return std::string(large_size, 'x'); }, generous);
    CHECK(large.status == Status::Ok);
    CHECK(large.bytes.size() == large_size);
}

TEST_CASE("an exception in isolated work comes back as its message") {
    const IsolatedResult r = run_isolated([]() -> std::string { throw std::runtime_error("no such op"); }, generous);
    CHECK(r.status == Status::Failed);
    CHECK(r.bytes == "no such op");
}

TEST_CASE("a child that crashes, aborts or exits without a result is reported as crashed") {
    const IsolatedResult segv = run_isolated([]() -> std::string { std::raise(SIGSEGV); return "unreached"; }, generous);
    CHECK(segv.status == Status::Crashed);
    const IsolatedResult aborted = run_isolated([]() -> std::string { std::abort(); }, generous);
    CHECK(aborted.status == Status::Crashed);
    const IsolatedResult exited = run_isolated([]() -> std::string { std::_Exit(3); }, generous);
    CHECK(exited.status == Status::Crashed);
    CHECK(segv.bytes.empty());
    // The parent goes on as before.
    CHECK(run_isolated([] { return std::string("after"); }, generous).bytes == "after");
}

TEST_CASE("a child that runs past the limit is killed and reported as timed out") {
    const auto start = std::chrono::steady_clock::now();
    const IsolatedResult r = run_isolated(
        []() -> std::string {
            std::this_thread::sleep_for(60s);
            return "too late";
        },
        200ms);
    CHECK(r.status == Status::TimedOut);
    CHECK(std::chrono::steady_clock::now() - start < generous);
}
