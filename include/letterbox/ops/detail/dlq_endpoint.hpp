// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/dlq/dead_letter_entry.hpp>
#include <letterbox/dlq/dead_letter_filter.hpp>
#include <letterbox/dlq/dead_letter_queue.hpp>
#include <letterbox/dlq/dead_letter_queue_options.hpp>
#include <letterbox/dlq/page.hpp>
#include <letterbox/dlq/replay_result.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/strand.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

using strand_type = boost::asio::strand<boost::asio::any_io_executor>;

/// One registered dead-letter queue, with its Transport erased. Every completion runs on the
/// server's strand. Scans (browse, replay, purge) run one at a time: a scan started while
/// another runs waits for it (the dead-letter queue's rule: a concurrent scan would see the
/// messages the other holds as missing). Used on the strand only.
class dlq_endpoint {
public:
    using browse_done = std::function<void(std::error_code, std::vector<dlq::dead_letter_entry>)>;
    using replay_done = std::function<void(std::error_code, dlq::replay_result)>;
    using purge_done = std::function<void(std::error_code, std::size_t)>;
    using depth_done = std::function<void(std::error_code, std::uint32_t)>;

    dlq_endpoint(std::string queue, strand_type strand)
        : queue_(std::move(queue))
        , strand_(std::move(strand)) {}
    dlq_endpoint(const dlq_endpoint&) = delete;
    dlq_endpoint& operator=(const dlq_endpoint&) = delete;
    virtual ~dlq_endpoint() = default;

    const std::string& queue() const noexcept { return queue_; }

    void browse(dlq::dead_letter_filter f, dlq::page p, browse_done done) {
        exclusive([this, f = std::move(f), p, done = std::move(done)](auto release) mutable {
            start_browse(std::move(f), p, [release, done](std::error_code ec, auto entries) {
                release();
                done(ec, std::move(entries));
            });
        });
    }
    void replay(dlq::dead_letter_filter f, replay_done done) {
        exclusive([this, f = std::move(f), done = std::move(done)](auto release) mutable {
            start_replay(std::move(f), [release, done](std::error_code ec, dlq::replay_result r) {
                release();
                done(ec, std::move(r));
            });
        });
    }
    void purge(dlq::dead_letter_filter f, purge_done done) {
        exclusive([this, f = std::move(f), done = std::move(done)](auto release) mutable {
            start_purge(std::move(f), [release, done](std::error_code ec, std::size_t n) {
                release();
                done(ec, n);
            });
        });
    }
    /// Not a scan: runs at once.
    virtual void depth(depth_done done) = 0;

protected:
    virtual void start_browse(dlq::dead_letter_filter f, dlq::page p, browse_done done) = 0;
    virtual void start_replay(dlq::dead_letter_filter f, replay_done done) = 0;
    virtual void start_purge(dlq::dead_letter_filter f, purge_done done) = 0;

    const strand_type& strand() const noexcept { return strand_; }

private:
    using release_fn = std::function<void()>;

    // Runs `op(release)` now if no scan runs, else after the ones queued before it; `release`
    // must be called once the scan has completed.
    template <class Op>
    void exclusive(Op op) {
        waiting_.push_back([this, op = std::move(op)]() mutable {
            op(release_fn{[this] {
                busy_ = false;
                next();
            }});
        });
        next();
    }
    void next() {
        if (busy_ || waiting_.empty())
            return;
        busy_ = true;
        auto op = std::move(waiting_.front());
        waiting_.pop_front();
        op();
    }

    std::string queue_;
    strand_type strand_;
    bool busy_ = false;
    std::deque<std::function<void()>> waiting_;
};

/// The `dlq_endpoint` of a `dead_letter_queue<Transport>`.
template <queue_reader Transport>
class dlq_endpoint_for final : public dlq_endpoint {
public:
    dlq_endpoint_for(Transport& transport, std::string queue, dlq::dead_letter_queue_options o,
                     strand_type strand)
        : dlq_endpoint(queue, std::move(strand))
        , dlq_(transport, std::move(queue), std::move(o)) {}

    void depth(depth_done done) override {
        dlq_.async_depth(boost::asio::bind_executor(strand(), std::move(done)));
    }

private:
    void start_browse(dlq::dead_letter_filter f, dlq::page p, browse_done done) override {
        dlq_.async_browse(std::move(f), p, boost::asio::bind_executor(strand(), std::move(done)));
    }
    void start_replay(dlq::dead_letter_filter f, replay_done done) override {
        dlq_.async_replay(std::move(f), boost::asio::bind_executor(strand(), std::move(done)));
    }
    void start_purge(dlq::dead_letter_filter f, purge_done done) override {
        dlq_.async_purge(std::move(f), boost::asio::bind_executor(strand(), std::move(done)));
    }

    dlq::dead_letter_queue<Transport> dlq_;
};

} // namespace letterbox::ops::detail
