// HostBlockPool and the CPU backend's pooled buffers: size classes, reuse of freed blocks,
// what is not pooled, the per-thread limit, blocks freed on another thread, and that a
// recycled block still gives zeros where zeros are asked for.
#include <rlflow/nn/backend/eigen.hpp>
#include <rlflow/nn/backend/host_pool.hpp>
#include <rlflow/nn/tensor.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

using rlflow::Shape;
using rlflow::nn::backend::HostBlockPool;
namespace nn = rlflow::nn;

TEST_CASE("pool size classes are four per power of two and waste at most a quarter") {
    constexpr std::size_t k = 1024;
    static_assert(HostBlockPool::size_class(64 * k) == 64 * k);
    static_assert(HostBlockPool::size_class(64 * k + 1) == 80 * k);
    static_assert(HostBlockPool::size_class(100000) == 112 * k);
    static_assert(HostBlockPool::size_class(128 * k) == 128 * k);
    for (std::size_t bytes = HostBlockPool::minimum_pooled; bytes < (std::size_t{1} << 30); bytes = bytes * 13 / 10 + 7) {
        const std::size_t size = HostBlockPool::size_class(bytes);
        CHECK(size >= bytes);
        CHECK(size - bytes < bytes / 4 + 1);
        CHECK(HostBlockPool::size_class(size) == size);
    }
}

TEST_CASE("a freed large block is reused for a request of its class, and small ones are not kept") {
    HostBlockPool::release_cached();
    REQUIRE(HostBlockPool::cached_bytes() == 0);
    void* first = HostBlockPool::take(100000);
    CHECK(reinterpret_cast<std::uintptr_t>(first) % 64 == 0);
    HostBlockPool::give(first, 100000);
    CHECK(HostBlockPool::cached_bytes() == HostBlockPool::size_class(100000));
    void* second = HostBlockPool::take(110000);  // the same class
    CHECK(second == first);
    CHECK(HostBlockPool::cached_bytes() == 0);
    HostBlockPool::give(second, 110000);

    void* small = HostBlockPool::take(1000);
    HostBlockPool::give(small, 1000);
    CHECK(HostBlockPool::cached_bytes() == HostBlockPool::size_class(100000));
    HostBlockPool::release_cached();
    CHECK(HostBlockPool::cached_bytes() == 0);
}

TEST_CASE("the pool keeps at most cache_limit bytes per thread, or the most it had live at once, the least recently used released first") {
    HostBlockPool::release_cached();
    // Untouched blocks: address space only, no resident memory.
    const std::size_t half = HostBlockPool::cache_limit / 2 + 1;
    const std::size_t larger = HostBlockPool::cache_limit / 4 * 3;  // another size class, still under the limit
    REQUIRE(HostBlockPool::size_class(half) != HostBlockPool::size_class(larger));
    void* a = HostBlockPool::take(half);
    HostBlockPool::give(a, half);
    void* b = HostBlockPool::take(larger);  // one at a time: the peak stays under the limit
    HostBlockPool::give(b, larger);         // over the limit with what is kept: the older class goes
    CHECK(HostBlockPool::cached_bytes() == HostBlockPool::size_class(larger));
    void* again = HostBlockPool::take(larger);  // the block kept is the one taken now
    CHECK(again == b);
    CHECK(HostBlockPool::cached_bytes() == 0);
    HostBlockPool::give(again, larger);
    HostBlockPool::release_cached();
    // Two blocks live at once, over the limit together: both are kept for the next pass.
    void* c = HostBlockPool::take(half);
    void* d = HostBlockPool::take(half);
    HostBlockPool::give(c, half);
    HostBlockPool::give(d, half);
    CHECK(HostBlockPool::cached_bytes() == 2 * HostBlockPool::size_class(half));
    void* e = HostBlockPool::take(half);  // reused, not allocated again
    CHECK(HostBlockPool::cached_bytes() == HostBlockPool::size_class(half));
    HostBlockPool::give(e, half);
    HostBlockPool::release_cached();
    CHECK(HostBlockPool::cached_bytes() == 0);
}

TEST_CASE("a block freed on another thread joins that thread's lists, which thread exit releases") {
    HostBlockPool::release_cached();
    void* block = HostBlockPool::take(200000);
    std::size_t cached_there = 0, cached_after_take_there = 1;
    std::thread other([&] {
        HostBlockPool::give(block, 200000);
        cached_there = HostBlockPool::cached_bytes();
        void* again = HostBlockPool::take(200000);
        cached_after_take_there = HostBlockPool::cached_bytes();
        HostBlockPool::give(again, 200000);
    });
    other.join();
    CHECK(cached_there == HostBlockPool::size_class(200000));
    CHECK(cached_after_take_there == 0);
    CHECK(HostBlockPool::cached_bytes() == 0);  // this thread kept nothing
}

TEST_CASE("tensors on recycled blocks: zeros when asked for, every value writable otherwise") {
    using Tensor = nn::Tensor<nn::backend::Eigen>;
    const Shape shape{300, 200};  // 240 KB: pooled
    const float* used = nullptr;
    {
        const Tensor dirty(shape, 7.0f);
        used = dirty.data();
    }
    const Tensor zeros(shape);
    CHECK(zeros.data() == used);  // the same block, recycled
    const std::vector<float> values = zeros.to_host();
    CHECK(std::all_of(values.begin(), values.end(), [](float v) { return v == 0.0f; }));
    CHECK(reinterpret_cast<std::uintptr_t>(zeros.data()) % 64 == 0);

    Tensor filled = Tensor::uninitialized(shape);
    CHECK(filled.shape() == shape);
    nn::backend::Eigen::fill(filled.data(), filled.numel(), 2.5f);
    const std::vector<float> written = filled.to_host();
    CHECK(std::all_of(written.begin(), written.end(), [](float v) { return v == 2.5f; }));
}
