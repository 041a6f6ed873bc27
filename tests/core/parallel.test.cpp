// parallel_for and ThreadPool: every item runs once, on at most the threads asked for,
// pools are reused, and a worker's exception reaches the caller after every thread stopped.
#include <rlflow/core/parallel.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace rlflow;

TEST_CASE("parallel_for runs every item once and reports progress to the end") {
    for (const unsigned jobs : {1u, 2u, 5u}) {
        std::vector<std::atomic<int>> runs(37);
        std::atomic<unsigned> highest_worker{0};
        std::size_t last_progress = 0;
        parallel_for(
            runs.size(), jobs,
            [&](std::size_t i, unsigned w) {
                ++runs[i];
                unsigned seen = highest_worker.load();
                while (w > seen && !highest_worker.compare_exchange_weak(seen, w)) {}
            },
            [&](std::size_t done) { last_progress = done; });
        for (const auto& r : runs) CHECK(r.load() == 1);
        CHECK(highest_worker.load() < jobs);
        CHECK(last_progress == runs.size());
    }
    int calls = 0;
    parallel_for(0, 4, [&](std::size_t, unsigned) { ++calls; });
    CHECK(calls == 0);
}

TEST_CASE("parallel_for rethrows a worker's exception") {
    std::atomic<int> after{0};
    CHECK_THROWS_AS(parallel_for(100, 2,
                                 [&](std::size_t i, unsigned) {
                                     if (i == 3) throw std::runtime_error("item 3");
                                     ++after;
                                 }),
                    std::runtime_error);
    CHECK(after.load() < 100);
}

TEST_CASE("a thread pool runs batch after batch on the same threads, and survives an exception") {
    ThreadPool pool(3);
    CHECK(pool.size() == 3);
    std::vector<std::thread::id> ids;
    std::mutex m;
    for (int batch = 0; batch < 50; ++batch) {
        std::vector<int> out(batch % 7, 0);
        pool.run(out.size(), [&](std::size_t i, unsigned) {
            out[i] = static_cast<int>(i) * 2;
            const std::lock_guard lock(m);
            if (std::find(ids.begin(), ids.end(), std::this_thread::get_id()) == ids.end())
                ids.push_back(std::this_thread::get_id());
        });
        for (std::size_t i = 0; i < out.size(); ++i) CHECK(out[i] == static_cast<int>(i) * 2);
    }
    CHECK(ids.size() <= 3);  // never more threads than the pool has
    CHECK_THROWS_AS(pool.run(10, [](std::size_t i, unsigned) {
        if (i == 2) throw std::runtime_error("item 2");
    }),
                    std::runtime_error);
    std::atomic<int> count{0};
    pool.run(20, [&](std::size_t, unsigned) { ++count; });
    CHECK(count.load() == 20);
    // Without a pool, items run in order on the calling thread.
    std::vector<std::size_t> order;
    run_items(nullptr, 4, [&](std::size_t i, unsigned w) {
        CHECK(w == 0);
        order.push_back(i);
    });
    CHECK(order == std::vector<std::size_t>{0, 1, 2, 3});
}
