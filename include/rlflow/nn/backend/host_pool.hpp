#pragma once
/// \file
/// Host memory for the CPU backend's buffers, recycled per thread.
///
/// A forward and backward pass allocates and frees the same large buffers every step
/// (edge inputs of a few hundred KB for a zoo graph). The C allocator serves blocks that
/// large with mmap and returns them with munmap, so each step pays page faults and the
/// kernel's zeroing again: about an eighth of a graph-network pass. `HostBlockPool` keeps
/// freed blocks of at least `minimum_pooled` bytes on the freeing thread's free lists, by
/// size class (four classes per power of two, so at most a quarter of a block is slack),
/// up to `cache_limit` bytes per thread, or up to the most pooled bytes the thread had
/// taken and not yet given back at once, if that is more (a caching allocator's
/// high-water mark: a pass over a 50,000-node graph frees over 256 MB at its end, and
/// without it those blocks went back to the allocator and were faulted in again at every
/// pass, 22x its time). When a freed block would pass that limit, the blocks of the size
/// classes used least recently go back to the allocator first, and the freed block only
/// when no other class is left: a thread that moves from one graph size to another
/// keeps the new size's blocks rather than the old one's (run after a 50,000-node pass,
/// a 100,000-node pass otherwise gave back and faulted in its overflow at every pass,
/// 7x its time). Smaller blocks go back to the allocator at once. Blocks are 64-byte
/// aligned.
///
/// A block freed on another thread than the one that took it joins that thread's lists,
/// which is safe: the lists own plain memory. A block freed after its thread's lists are
/// destroyed (a static tensor outliving thread exit) is released directly.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <type_traits>
#include <utility>
#include <unordered_map>
#include <vector>

namespace rlflow::nn::backend {

class HostBlockPool {
public:
    /// Blocks smaller than this are not pooled: the C allocator keeps them on its own lists.
    static constexpr std::size_t minimum_pooled = std::size_t{64} << 10;
    /// At least this many bytes of freed blocks may be kept per thread (more after a peak).
    static constexpr std::size_t cache_limit = std::size_t{256} << 20;
    /// Requests beyond this are not pooled either (and size classes cannot overflow).
    static constexpr std::size_t maximum_pooled = std::size_t{1} << 40;
    static constexpr std::align_val_t alignment{64};

    /// A block of at least `bytes` bytes.
    [[nodiscard]] static void* take(std::size_t bytes) {
        if (!pooled(bytes)) return ::operator new(bytes, alignment);
        const std::size_t size = size_class(bytes);
        Lists& lists = thread_lists();
        lists.last_use[size] = ++lists.clock;
        auto found = lists.free.find(size);
        void* block = nullptr;
        if (found != lists.free.end() && !found->second.empty()) {
            block = found->second.back();
            found->second.pop_back();
            lists.cached -= size;
        } else {
            block = ::operator new(size, alignment);
        }
        lists.live += size;
        lists.peak_live = std::max(lists.peak_live, lists.live);
        return block;
    }

    /// Returns a block from `take(bytes)`.
    static void give(void* block, std::size_t bytes) noexcept {
        if (block == nullptr) return;
        if (!pooled(bytes)) {
            ::operator delete(block, alignment);
            return;
        }
        const std::size_t size = size_class(bytes);
        Lists& lists = thread_lists();
        lists.live -= std::min(lists.live, size);  // a block taken on another thread was not counted here
        const std::size_t limit = std::max(cache_limit, lists.peak_live);
        while (lists.cached + size > limit && lists.release_least_recent(size)) {
        }
        if (lists.cached + size > limit) {
            ::operator delete(block, alignment);
            return;
        }
        try {
            lists.last_use[size] = ++lists.clock;
        } catch (const std::bad_alloc&) {
            ::operator delete(block, alignment);
            return;
        }
        try {
            lists.free[size].push_back(block);
            lists.cached += size;
        } catch (const std::bad_alloc&) {  // no memory for the list entry: release the block instead
            ::operator delete(block, alignment);
        }
    }

    /// The bytes of freed blocks this thread keeps.
    [[nodiscard]] static std::size_t cached_bytes() { return status() == Status::destroyed ? 0 : thread_lists().cached; }

    /// Releases every block this thread keeps, and forgets its high-water mark.
    static void release_cached() {
        if (status() == Status::destroyed) return;
        thread_lists().release();
    }

    /// The size a request of `bytes` (in [minimum_pooled, maximum_pooled]) is rounded up to:
    /// the smallest multiple of 2^(e-2) at or above it, where 2^e < bytes ≤ 2^(e+1).
    [[nodiscard]] static constexpr std::size_t size_class(std::size_t bytes) noexcept {
        int e = 0;
        while ((std::size_t{2} << e) < bytes) ++e;
        const std::size_t step = std::size_t{1} << (e - 2);
        return (bytes + step - 1) / step * step;
    }

private:
    enum class Status : std::uint8_t { unused, alive, destroyed };

    [[nodiscard]] static bool pooled(std::size_t bytes) noexcept {
        return bytes >= minimum_pooled && bytes <= maximum_pooled && status() != Status::destroyed;
    }

    struct Lists {
        std::unordered_map<std::size_t, std::vector<void*>> free;
        std::size_t cached = 0;
        /// Pooled bytes taken on this thread and not given back, and their most at once.
        std::size_t live = 0;
        std::size_t peak_live = 0;
        /// When each size class was last taken or given (a counter), for releasing the
        /// least recently used first.
        std::unordered_map<std::size_t, std::uint64_t> last_use;
        std::uint64_t clock = 0;

        /// Releases one cached block of the size class used least recently, other than
        /// `keep`; false when there is none.
        bool release_least_recent(std::size_t keep) noexcept {
            std::size_t oldest = 0;
            std::uint64_t when = std::numeric_limits<std::uint64_t>::max();
            for (const auto& [size, blocks] : free) {
                if (size == keep || blocks.empty()) continue;
                const auto it = last_use.find(size);
                const std::uint64_t used = it == last_use.end() ? 0 : it->second;
                if (used < when) {
                    when = used;
                    oldest = size;
                }
            }
            if (oldest == 0) return false;
            std::vector<void*>& blocks = free.find(oldest)->second;
            ::operator delete(blocks.back(), alignment);
            blocks.pop_back();
            cached -= oldest;
            return true;
        }

        Lists() { status() = Status::alive; }
        Lists(const Lists&) = delete;
        Lists& operator=(const Lists&) = delete;
        ~Lists() {
            release();
            status() = Status::destroyed;
        }
        void release() noexcept {
            for (auto& [size, blocks] : free)
                for (void* block : blocks) ::operator delete(block, alignment);
            free.clear();
            cached = 0;
            peak_live = live;
        }
    };

    /// Trivially destructible, so it can still be read after this thread's lists are gone.
    [[nodiscard]] static Status& status() noexcept {
        thread_local Status value = Status::unused;
        return value;
    }
    [[nodiscard]] static Lists& thread_lists() {
        thread_local Lists lists;
        return lists;
    }
};

/// A standard allocator over `HostBlockPool`.
template <class T>
struct PooledAllocator {
    using value_type = T;

    PooledAllocator() noexcept = default;
    template <class U>
    PooledAllocator(const PooledAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor): allocators rebind implicitly

    [[nodiscard]] T* allocate(std::size_t n) { return static_cast<T*>(HostBlockPool::take(n * sizeof(T))); }
    void deallocate(T* p, std::size_t n) noexcept { HostBlockPool::give(p, n * sizeof(T)); }

    /// Default-initialisation: `std::vector<float, PooledAllocator<float>>(n)` leaves its
    /// values unset (for buffers about to be overwritten) instead of zeroing them.
    template <class U>
    void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }

    friend bool operator==(const PooledAllocator&, const PooledAllocator&) noexcept { return true; }
};

}  // namespace rlflow::nn::backend
