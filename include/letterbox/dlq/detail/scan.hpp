// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/detail/unique_function.hpp>
#include <letterbox/dlq/dead_letter_entry.hpp>
#include <letterbox/dlq/dead_letter_filter.hpp>
#include <letterbox/dlq/dead_letter_queue_options.hpp>
#include <letterbox/dlq/detail/entry_handle.hpp>
#include <letterbox/dlq/detail/replay_message.hpp>
#include <letterbox/dlq/page.hpp>
#include <letterbox/dlq/replay_result.hpp>
#include <letterbox/error.hpp>
#include <letterbox/failpoint.hpp>
#include <letterbox/message.hpp>
#include <letterbox/steady_clock.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ios>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::dlq::detail {

/// What a scan does with each message it fetches.
enum class scan_kind { browse, export_lines, purge, replay };

/// One dead-letter operation: gets the queue's messages one at a time with manual
/// acknowledgement, at most as many as were ready at its first get (and at most
/// `max_messages`), and deals with each as its kind says. What it does not remove it holds
/// unacknowledged, so the next get returns the next message instead of the same one again; at the
/// end it nacks everything it holds with requeue, in the order it fetched them, and the queue gets
/// each back in its original position (RabbitMQ classic queues, and the model).
///
/// Everything runs on the transport's executor: start it there.
template <class Transport>
class scan : public std::enable_shared_from_this<scan<Transport>> {
public:
    struct outcome {
        std::vector<dead_letter_entry> entries{}; // browse
        replay_result replay{};                   // replay
        std::size_t count = 0;                    // purge: removed; export: written
    };
    using completion = letterbox::detail::unique_function<void(std::error_code, outcome)>;

    scan(Transport& transport, std::string queue, scan_kind kind, dead_letter_filter filter,
         std::shared_ptr<const dead_letter_queue_options> options, completion done)
        : transport_(transport)
        , queue_(std::move(queue))
        , kind_(kind)
        , filter_(std::move(filter))
        , options_(std::move(options))
        , done_(std::move(done)) {}

    /// For browse: which matches to return.
    void set_page(page p) noexcept { page_ = p; }
    /// For export: where to write (must outlive the operation).
    void set_output(std::ostream* out) noexcept { out_ = out; }

    void start() {
        if (kind_ == scan_kind::browse && page_.limit == 0)
            return finish({});
        next();
    }

    /// The operation was cancelled: the step under way finishes, nothing more is fetched, what
    /// is held goes back, and the scan completes with `operation_canceled` and what it did.
    void cancel() noexcept { cancelled_ = true; }

private:
    void next() {
        if (cancelled_ && !error_)
            error_ = std::make_error_code(std::errc::operation_canceled);
        if (enough_ || cancelled_ || (bounded_ && fetched_ >= budget_))
            return release();
        transport_.async_get(queue_, [self = this->shared_from_this()](std::error_code ec,
                                                                       std::optional<delivery> d) {
            self->on_get(ec, std::move(d));
        });
    }

    void on_get(std::error_code ec, std::optional<delivery> d) {
        if (ec) {
            error_ = ec;
            return release();
        }
        if (!d)
            return release(); // the queue is empty, or ran dry early (someone else took)
        ++fetched_;
        if (bounded_)
            return handle(std::move(*d));
        // The bound is what was ready at the first get: what the scan nacks back at the end,
        // and what arrives meanwhile (a replay may even route into this queue), is never
        // fetched again, so a scan always ends. It comes from the get's own count, not from a
        // depth asked first: the transport orders a get after the requeues of an earlier scan
        // (a browse just before a replay), while RabbitMQ may answer a depth ahead of them.
        if (d->message_count)
            return set_bound(1 + std::size_t{*d->message_count}, std::move(*d));
        transport_.async_queue_depth(queue_,
                                     [self = this->shared_from_this(), first = std::move(*d)](
                                         std::error_code e, std::uint32_t ready) mutable {
                                         self->on_depth(e, ready, std::move(first));
                                     });
    }

    // For a transport whose gets carry no count: what is ready besides the first message.
    void on_depth(std::error_code ec, std::uint32_t ready, delivery first) {
        if (ec) {
            error_ = ec;
            held_.push_back(std::move(first));
            return release();
        }
        set_bound(1 + std::size_t{ready}, std::move(first));
    }

    void set_bound(std::size_t ready, delivery first) {
        bounded_ = true;
        budget_ = std::min<std::size_t>(ready, options_->max_messages);
        handle(std::move(first));
    }

    void handle(delivery d) {
        auto entry = dead_letter_entry::from(d.msg);
        // Every scan fetches from the head in queue order, so the n-th copy of identical
        // content gets the same number in each: the handle a browse showed names the same
        // entry in the purge or replay that follows.
        entry.handle = handles_.next(std::move(entry.handle));
        const bool match = filter_.matches(entry);
        switch (kind_) {
        case scan_kind::browse:
            held_.push_back(std::move(d));
            if (match && matched_++ >= page_.offset) {
                page_bytes_ += entry.msg.body.size();
                result_.entries.push_back(std::move(entry));
                enough_ = result_.entries.size() >= page_.limit || page_bytes_ >= page_.max_bytes;
            }
            return next();
        case scan_kind::export_lines:
            held_.push_back(std::move(d));
            if (match && !write(entry))
                return release();
            return next();
        case scan_kind::purge:
            if (!match) {
                held_.push_back(std::move(d));
                return next();
            }
            current_ = std::move(d);
            transport_.async_ack(*current_, [self = this->shared_from_this()](std::error_code e) {
                self->on_purged(e);
            });
            return;
        case scan_kind::replay:
            if (!match) {
                ++result_.replay.skipped;
                held_.push_back(std::move(d));
                return next();
            }
            return replay(std::move(d), std::move(entry));
        }
    }

    bool write(const dead_letter_entry& entry) {
        try {
            *out_ << entry.to_json().dump() << '\n';
        } catch (...) {
            out_->setstate(std::ios_base::badbit);
        }
        if (!*out_) {
            error_ = std::make_error_code(std::errc::io_error);
            return false;
        }
        ++result_.count;
        return true;
    }

    void on_purged(std::error_code ec) {
        if (ec) {
            error_ = ec;
            return release();
        }
        ++result_.count;
        current_.reset();
        next();
    }

    // -- replay: one message at a time, in queue order ---------------------------------------

    void replay(delivery d, dead_letter_entry entry) {
        if (entry.original_exchange.empty() && entry.original_routing_key.empty()) {
            // Nowhere to send it: the default exchange has no queue named "".
            fail(entry, make_error_code(errc::invalid_argument));
            held_.push_back(std::move(d));
            return next();
        }
        current_ = std::move(d);
        current_entry_ = std::move(entry);
        const auto now = options_->wall_clock ? options_->wall_clock() : steady_clock{}.wall_now();
        copy_ = make_replay_message(current_entry_, now);
        transport_.async_publish(copy_, [self = this->shared_from_this()](std::error_code ec) {
            self->on_republished(ec);
        });
    }

    void on_republished(std::error_code ec) {
        if (ec) {
            // Not republished (or not known to be): the original stays, and goes back.
            fail(current_entry_, ec);
            held_.push_back(std::move(*current_));
            current_.reset();
            if (letterbox::is_transport_failure(ec)) {
                error_ = ec;
                return release();
            }
            return next();
        }
        if (failpoints_enabled && options_->after_republish_before_remove) {
            try {
                options_->after_republish_before_remove(current_entry_);
            } catch (...) {
                return abandon();
            }
        }
        // Only now, with the copy confirmed and routed, is the original removed.
        transport_.async_ack(*current_, [self = this->shared_from_this()](std::error_code e) {
            self->on_removed(e);
        });
    }

    void on_removed(std::error_code ec) {
        current_.reset();
        if (ec) {
            // The copy is out but the original was not removed: it is back in the queue (its
            // channel is gone), a duplicate for the consumer's inbox to absorb.
            fail(current_entry_, ec);
            error_ = ec;
            return release();
        }
        ++result_.replay.replayed;
        next();
    }

    void fail(const dead_letter_entry& entry, std::error_code ec) {
        ++result_.replay.failed;
        result_.replay.failures.push_back({entry.id, entry.handle, ec});
    }

    // -- ending --------------------------------------------------------------------------------

    // Gives back everything held, in fetch order, then completes.
    void release() {
        if (held_.empty())
            return finish(error_);
        pending_nacks_ = held_.size();
        for (const auto& d : held_)
            transport_.async_nack(d, true, [self = this->shared_from_this()](std::error_code ec) {
                if (ec && !self->nack_error_)
                    self->nack_error_ = ec;
                if (--self->pending_nacks_ == 0)
                    self->finish(self->error_ ? self->error_ : self->nack_error_);
            });
    }

    // As if the process died here: nothing more is settled.
    void abandon() { finish(make_error_code(errc::internal_error)); }

    void finish(std::error_code ec) {
        if (!done_)
            return;
        auto done = std::move(done_);
        done_ = nullptr;
        done(ec, std::move(result_));
    }

    Transport& transport_;
    const std::string queue_;
    const scan_kind kind_;
    const dead_letter_filter filter_;
    const std::shared_ptr<const dead_letter_queue_options> options_;
    completion done_;
    page page_{};
    std::ostream* out_ = nullptr;

    bool bounded_ = false;
    std::size_t budget_ = 0;
    std::size_t fetched_ = 0;
    std::size_t matched_ = 0;
    std::size_t page_bytes_ = 0; // browse: the bodies of the entries returned so far
    bool enough_ = false;
    bool cancelled_ = false;
    handle_numbering handles_{};
    std::vector<delivery> held_{};
    std::optional<delivery> current_{};
    dead_letter_entry current_entry_{};
    message copy_{};
    std::size_t pending_nacks_ = 0;
    std::error_code error_{};
    std::error_code nack_error_{};
    outcome result_{};
};

} // namespace letterbox::dlq::detail
