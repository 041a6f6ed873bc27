#pragma once
/// \file
/// Independent work items on a few threads: ThreadPool keeps its threads between calls
/// (so what they cache per thread, such as nn's pooled buffers, stays warm), and
/// parallel_for runs one batch of items on threads made for it.
///
/// Items are handed out in order as threads become free, so which thread runs an item
/// depends on timing: work whose result must not depend on the thread count computes
/// each item from the item alone (its own inputs, its own random stream) and writes only
/// the item's own outputs.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rlflow {

/// The threads to use by default: the hardware's, at least one.
[[nodiscard]] inline unsigned default_jobs() noexcept { return std::max(1u, std::thread::hardware_concurrency()); }

/// A fixed set of threads that run batches of items; the calling thread works too, as
/// worker 0. One batch at a time: run() is not reentrant and serves one caller.
class ThreadPool {
public:
    using Work = std::function<void(std::size_t item, unsigned worker)>;
    using Progress = std::function<void(std::size_t done)>;

    /// A pool of `threads` workers in all (the caller and threads - 1 more), at least one.
    explicit ThreadPool(unsigned threads = default_jobs()) : m_errors(std::max(1u, threads)) {
        for (unsigned w = 1; w < m_errors.size(); ++w) m_threads.emplace_back([this, w] { serve(w); });
    }
    ~ThreadPool() {
        {
            const std::lock_guard lock(m_mutex);
            m_stopping = true;
        }
        m_wake.notify_all();
        for (std::thread& t : m_threads) t.join();
    }
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    [[nodiscard]] unsigned size() const noexcept { return static_cast<unsigned>(m_errors.size()); }

    /// Runs `work(i, w)` for i in [0, count), calling `progress(done)`, when given, from
    /// the calling thread's share as items finish and once at the end. The first exception
    /// of any worker stops the handing out of items and is rethrown once every worker has
    /// stopped.
    void run(std::size_t count, const Work& work, const Progress& progress = {}) {
        if (count == 0) return;
        std::fill(m_errors.begin(), m_errors.end(), nullptr);
        m_count = count;
        m_next = 0;
        m_done = 0;
        m_work = &work;
        m_progress = &progress;
        {
            const std::lock_guard lock(m_mutex);
            m_busy = static_cast<unsigned>(m_threads.size());
            ++m_batch;
        }
        m_wake.notify_all();
        take_items(0);
        {
            std::unique_lock lock(m_mutex);
            m_finished.wait(lock, [this] { return m_busy == 0; });
        }
        m_work = nullptr;
        m_progress = nullptr;
        for (const std::exception_ptr& e : m_errors)
            if (e) std::rethrow_exception(e);
        if (progress) progress(count);
    }

private:
    void serve(unsigned w) {
        std::uint64_t seen = 0;
        for (;;) {
            {
                std::unique_lock lock(m_mutex);
                m_wake.wait(lock, [&] { return m_stopping || m_batch != seen; });
                if (m_stopping) return;
                seen = m_batch;
            }
            take_items(w);
            {
                const std::lock_guard lock(m_mutex);
                --m_busy;
            }
            m_finished.notify_one();
        }
    }
    void take_items(unsigned w) {
        try {
            for (std::size_t i = m_next++; i < m_count; i = m_next++) {
                (*m_work)(i, w);
                ++m_done;
                if (w == 0 && *m_progress) (*m_progress)(m_done.load());
            }
        } catch (...) {
            m_errors[w] = std::current_exception();  // rethrown by run(), after every worker stopped
            m_next = m_count;
        }
    }

    std::vector<std::exception_ptr> m_errors;  // one per worker
    std::vector<std::thread> m_threads;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::condition_variable m_finished;
    std::uint64_t m_batch = 0;
    unsigned m_busy = 0;
    bool m_stopping = false;
    const Work* m_work = nullptr;
    const Progress* m_progress = nullptr;
    std::size_t m_count = 0;
    std::atomic<std::size_t> m_next{0};
    std::atomic<std::size_t> m_done{0};
};

/// Runs `work(i, w)` for i in [0, count) on `pool`, or in order on the calling thread
/// (as worker 0) when there is no pool.
inline void run_items(ThreadPool* pool, std::size_t count, const ThreadPool::Work& work) {
    if (pool != nullptr) return pool->run(count, work);
    for (std::size_t i = 0; i < count; ++i) work(i, 0);
}

/// Runs `work(i, w)` for i in [0, count) on `jobs` threads made for the call (w is the
/// thread's number, 0 the calling thread), as ThreadPool::run does.
inline void parallel_for(std::size_t count, unsigned jobs, const ThreadPool::Work& work,
                         const ThreadPool::Progress& progress = {}) {
    ThreadPool pool(static_cast<unsigned>(std::clamp<std::size_t>(count, 1, std::max(1u, jobs))));
    pool.run(count, work, progress);
    if (count == 0 && progress) progress(0);
}

}  // namespace rlflow
