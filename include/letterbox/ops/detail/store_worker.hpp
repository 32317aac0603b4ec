// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/unique_function.hpp>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

/// The threads on which `http_server` calls the outbox store, so that a store call that
/// blocks (a database file locked by another process waits for its busy timeout) never blocks
/// the server's I/O. A few threads, so that reads (which SQLite's WAL serves without the
/// lock) are not queued behind a blocked write.
///
/// Tasks must not own, once they have run, anything whose last release would destroy this
/// worker: they hand their results to the server's strand by moving them into the handler
/// they post there. `shutdown()` drops the tasks that have not started (on the calling
/// thread) and waits for the running ones.
///
/// Thread safety: `post` and `shutdown` from any thread.
class store_worker {
public:
    using task = letterbox::detail::unique_function<void()>;

    explicit store_worker(std::size_t threads) {
        threads_.reserve(threads);
        for (std::size_t i = 0; i < threads; ++i)
            threads_.emplace_back([this] { run(); });
    }
    store_worker(const store_worker&) = delete;
    store_worker& operator=(const store_worker&) = delete;
    ~store_worker() { shutdown(); }

    /// Queues `t`; false (and `t` is dropped) after `shutdown()`.
    bool post(task t) {
        {
            std::lock_guard lock(mutex_);
            if (stopping_)
                return false;
            queue_.push_back(std::move(t));
        }
        wake_.notify_one();
        return true;
    }

    /// Drops the queued tasks and waits for the running ones. Idempotent.
    void shutdown() {
        std::deque<task> dropped;
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
            dropped.swap(queue_);
        }
        wake_.notify_all();
        dropped.clear(); // outside the lock: a task's captures may do anything when destroyed
        for (auto& t : threads_) {
            if (!t.joinable())
                continue;
            // Never join the calling thread (it cannot happen when tasks keep the rule
            // above; if it did, joining would deadlock).
            if (t.get_id() == std::this_thread::get_id())
                t.detach();
            else
                t.join();
        }
    }

private:
    void run() {
        for (;;) {
            task t;
            {
                std::unique_lock lock(mutex_);
                wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
                if (stopping_)
                    return;
                t = std::move(queue_.front());
                queue_.pop_front();
            }
            t();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<task> queue_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

} // namespace letterbox::ops::detail
