// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of the larger members of detail::relay_engine
// (letterbox/outbox/detail/relay_engine.hpp); included at its end.

#include <letterbox/config.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/outbox/detail/relay_engine.hpp>

#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <span>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

template <class OutboxStore, class Transport, class Clock>
void relay_engine<OutboxStore, Transport, Clock>::on_outcome(
    const std::shared_ptr<outbox_record>& held, std::error_code ec) {
    auto it = in_flight_.find(held->msg.id);
    if (it == in_flight_.end() || it->second != held || !active())
        return; // abandoned, or the relay halted or stopped: the outcome is ignored
    outbox_record row = std::move(*it->second);
    in_flight_.erase(it);
    cells_.set_in_flight(in_flight_.size());

    if (letterbox::is_transport_failure(ec)) {
        cells_.add(cells_.transport_failures);
        if (phase_ == phase::stopping) {
            cells_.add(cells_.abandoned);
        } else {
            requeue(std::move(row));
            // Probe with one publish at a time until one gets through.
            probing_ = true;
            back_off(transport_failures_in_a_row_);
        }
        pump();
        return;
    }
    transport_failures_in_a_row_ = 0;
    probing_ = false;
    if (ec == errc::no_route)
        cells_.add(cells_.returned);
    else if (ec == errc::publish_nacked)
        cells_.add(cells_.nacked);
    if (!ec)
        observe(relay_event::kind::confirmed, row);
    else if (ec == errc::no_route)
        observe(relay_event::kind::returned, row);
    else if (ec == errc::publish_nacked)
        observe(relay_event::kind::nacked, row);
    if (failpoint(relay_point::after_confirm, row))
        return;
    if constexpr (batch_marks) {
        if (!ec) {
            queue_mark(std::move(row));
            pump();
            return;
        }
    }
    settle(settlement{std::move(row), ec});
    pump();
}

template <class OutboxStore, class Transport, class Clock>
void relay_engine<OutboxStore, Transport, Clock>::step() {
    const auto now = clock_.now();
    if (phase_ == phase::stopping) {
        // One last try for each settlement the store refused earlier (refused again, it is
        // abandoned); then what was confirmed is marked before the stop completes.
        if (!settle_unsettled() || store_busy_)
            return;
        if (in_flight_.empty() || now >= stop_deadline_) {
            flush_marks();
            if (phase_ == phase::stopping && !store_busy_)
                finish({});
        }
        return;
    }
    if (now >= next_poll_) {
        next_poll_ = now + to_clock(options_.poll_interval);
        claim_allowed_ = true;
        lag_due_ = true;
    }
    while (!retry_due_.empty() && retry_due_.top() <= now) {
        retry_due_.pop();
        claim_allowed_ = true;
    }
    if (next_purge_ && now >= *next_purge_) {
        next_purge_ = now + to_clock(options_.purge_interval);
        purge_due_ = true;
    }
    if (lag_due_)
        refresh_lag();
    if (purge_due_)
        purge();
    // Confirmed rows that waited for a busy store (with no flush posted, nothing else
    // would mark them).
    if (!flush_posted_ && !pending_marks_.empty())
        flush_marks();
    if (phase_ != phase::running)
        return;
    if (paused_until_) {
        if (now < *paused_until_)
            return;
        paused_until_.reset();
    }
    if (!settle_unsettled())
        return;
    send_queued();
    if (phase_ != phase::running)
        return;
    if (queue_.empty() && claim_allowed_ && !store_busy_ && room_to_claim())
        claim();
}

template <class OutboxStore, class Transport, class Clock>
template <class Call, class Then>
void relay_engine<OutboxStore, Transport, Clock>::store_call(Call call, Then then) {
    if (!store_ex_) {
        then(call());
        return;
    }
    store_busy_ = true;
    auto back = boost::asio::prefer(ex_, boost::asio::execution::outstanding_work.tracked);
    boost::asio::post(store_ex_, [self = this->shared_from_this(), back = std::move(back),
                                  call = std::move(call), then = std::move(then)]() mutable {
        auto result = call();
        boost::asio::post(back, [self = std::move(self), result = std::move(result),
                                 then = std::move(then)]() mutable {
            self->store_busy_ = false;
            if (self->phase_ == phase::finished) {
                self->complete_run();
                return;
            }
            then(std::move(result));
            self->pump();
        });
    });
}

template <class OutboxStore, class Transport, class Clock>
void relay_engine<OutboxStore, Transport, Clock>::claim() {
    cells_.add(cells_.claims);
    // Taken now: a wake that comes while the claim is in the store asks for another one.
    claim_allowed_ = false;
    const auto now = clock_.wall_now();
    store_call(
        [this, now] {
            std::error_code ec;
            auto rows = store_.claim(options_.owner, options_.batch_size, to_store(options_.lease),
                                     now, ec);
            return std::pair(ec, std::move(rows));
        },
        [this](auto result) { this->on_claimed(result.first, std::move(result.second)); });
}

template <class OutboxStore, class Transport, class Clock>
template <class Rows>
void relay_engine<OutboxStore, Transport, Clock>::on_claimed(std::error_code ec, Rows rows) {
    if (ec) {
        claim_allowed_ = true; // again, after the pause
        cells_.add(cells_.store_errors);
        back_off(store_failures_in_a_row_);
        return;
    }
    store_failures_in_a_row_ = 0;
    cells_.add(cells_.claimed, rows.size());
    // A short batch means the store has nothing more that is due; claim again only when
    // something may have changed (a wake, a poll, a retry coming due, an aggregate's event
    // marked published, which lets its next event through).
    if (rows.size() >= options_.batch_size)
        claim_allowed_ = true;
    for (auto& row : rows) {
        if (failpoint(relay_point::after_claim, row))
            return;
        // Our own row again, already confirmed and waiting to be settled (its lease expired
        // in between): the claim renewed our lease, and the pending settlement will settle
        // it. Publishing it again would only make a duplicate.
        if (awaits_settlement(row.msg.id))
            continue;
        // The relay began to stop while the claim was in the store: the row stays leased.
        if (phase_ != phase::running) {
            if (!in_flight_.contains(row.msg.id))
                cells_.add(cells_.abandoned);
            continue;
        }
        // Our own row again: its lease expired while its publish was still in flight, and
        // this claim took it over. The lease was the publish's deadline: give up on that
        // publish (its late outcome is ignored) and publish the row again, rather than
        // renew the lease forever for a confirm that may never come.
        if (auto it = in_flight_.find(row.msg.id); it != in_flight_.end()) {
            in_flight_.erase(it);
            cells_.set_in_flight(in_flight_.size());
            cells_.add(cells_.leases_expired);
        }
        queue_.push_back(std::move(row));
    }
    if (!queue_.empty())
        pump_again_ = true;
}

template <class OutboxStore, class Transport, class Clock>
void relay_engine<OutboxStore, Transport, Clock>::send_queued() {
    const auto now = clock_.wall_now();
    while (!queue_.empty() && in_flight_.size() < window()) {
        outbox_record row = std::move(queue_.front());
        queue_.pop_front();
        // A row whose lease ran out may be another relay's now; claim brings it back if not.
        if (now >= row.lease_expires_at) {
            cells_.add(cells_.leases_expired);
            continue;
        }
        if (failpoint(relay_point::before_publish, row))
            return;
        // The completion shares the row, so the message stays alive until the transport is
        // done with it, even if the relay is gone by then.
        auto held = std::make_shared<outbox_record>(std::move(row));
        name_group(*held);
        in_flight_.insert_or_assign(held->msg.id, held);
        cells_.set_in_flight(in_flight_.size());
        cells_.add(cells_.publish_attempts);
        observe(relay_event::kind::published, *held);
        transport_.async_publish(held->msg,
                                 [weak = this->weak_from_this(), held](std::error_code ec) {
                                     if (auto self = weak.lock())
                                         self->on_outcome(held, ec);
                                 });
        if (failpoint(relay_point::after_publish_sent, *held))
            return;
    }
}

template <class OutboxStore, class Transport, class Clock>
void relay_engine<OutboxStore, Transport, Clock>::name_group(outbox_record& row) {
    if (row.aggregate_id.empty() || row.msg.headers.contains(headers::group))
        return;
    row.msg.headers.set(headers::group, row.aggregate_type.empty()
                                            ? row.aggregate_id
                                            : row.aggregate_type + "/" + row.aggregate_id);
}

template <class OutboxStore, class Transport, class Clock>
void relay_engine<OutboxStore, Transport, Clock>::settle(settlement s) {
    if (store_busy_) {
        unsettled_.push_back(std::move(s));
        return;
    }
    const auto now = clock_.wall_now();
    if (!s.outcome) {
        store_call([this, id = s.row.msg.id,
                    now] { return store_.mark_published(id, options_.owner, now); },
                   [this, s = std::move(s)](std::error_code ec) mutable {
                       on_settled(std::move(s), ec, false, {});
                   });
        return;
    }
    const std::uint32_t attempt = s.row.attempts + 1;
    const auto wait = backoff_wait(options_.row_retry, attempt, jitter_.next());
    const bool parks = attempt >= options_.max_attempts;
    store_call(
        [this, id = s.row.msg.id, reason = failure_reason(s.outcome), next = now + to_store(wait),
         now] {
            return store_.record_failure(id, options_.owner, reason, next, options_.max_attempts,
                                         now);
        },
        [this, s = std::move(s), parks, wait](std::error_code ec) mutable {
            on_settled(std::move(s), ec, parks, to_clock(wait));
        });
}

template <class OutboxStore, class Transport, class Clock>
void relay_engine<OutboxStore, Transport, Clock>::on_settled(settlement s, std::error_code ec,
                                                             bool parks, clock_duration wait) {
    switch (count_settled(s.row, s.outcome, ec, parks)) {
    case settled::lease_lost:
        return;
    case settled::store_error:
        count_store_failure();
        keep_unsettled(std::move(s));
        return;
    case settled::done:
        break;
    }
    store_failures_in_a_row_ = 0;
    if (s.outcome) {
        if (!parks)
            retry_due_.push(clock_.now() + wait);
    } else {
        failpoint(relay_point::after_mark, s.row);
    }
}

template <class OutboxStore, class Transport, class Clock>
void relay_engine<OutboxStore, Transport, Clock>::flush_marks() {
    if constexpr (batch_marks) {
        if (pending_marks_.empty() || store_busy_)
            return;
        std::vector<outbox_record> batch;
        if (pending_marks_.size() <= options_.window) {
            batch.swap(pending_marks_);
        } else {
            const auto end = pending_marks_.begin() + static_cast<std::ptrdiff_t>(options_.window);
            batch.assign(std::make_move_iterator(pending_marks_.begin()),
                         std::make_move_iterator(end));
            pending_marks_.erase(pending_marks_.begin(), end);
        }
        std::vector<message_id> ids;
        ids.reserve(batch.size());
        for (const auto& row : batch)
            ids.push_back(row.msg.id);
        store_call(
            [this, ids = std::move(ids), now = clock_.wall_now()] {
                std::vector<std::error_code> results;
                auto ec = store_.mark_published(std::span<const message_id>(ids), options_.owner,
                                                now, results);
                return std::pair(ec, std::move(results));
            },
            [this, batch = std::move(batch)](auto result) mutable {
                this->on_marked(std::move(batch), result.first, std::move(result.second));
            });
    }
}

template <class OutboxStore, class Transport, class Clock>
template <class Call, class Use>
void relay_engine<OutboxStore, Transport, Clock>::housekeep(bool& due, Call call, Use use) {
    if (store_busy_)
        return;
    due = false;
    store_call(
        [call = std::move(call)] {
            std::error_code ec;
            auto value = call(ec);
            return std::pair(ec, value);
        },
        [this, use = std::move(use)](auto result) {
            if (result.first)
                cells_.add(cells_.store_errors);
            else
                use(result.second);
        });
}

template <class OutboxStore, class Transport, class Clock>
void relay_engine<OutboxStore, Transport, Clock>::refresh_lag() {
    housekeep(
        lag_due_,
        [this, now = clock_.wall_now()](std::error_code& ec) {
            return store_.stats(now, ec).oldest_pending_age.count();
        },
        [this](auto age) { cells_.lag.store(age, std::memory_order_relaxed); });
}

template <class OutboxStore, class Transport, class Clock>
void relay_engine<OutboxStore, Transport, Clock>::purge() {
    housekeep(
        purge_due_,
        [this, before = clock_.wall_now() - to_store(*options_.retention)](std::error_code& ec) {
            return store_.purge_published(before, ec);
        },
        [this](std::size_t purged) { cells_.add(cells_.purged, purged); });
}

template <class OutboxStore, class Transport, class Clock>
void relay_engine<OutboxStore, Transport, Clock>::arm_timer() {
    clock_time deadline = next_poll_;
    if (phase_ == phase::stopping) {
        deadline = stop_deadline_;
    } else {
        if (paused_until_)
            deadline = std::min(deadline, *paused_until_);
        if (!retry_due_.empty())
            deadline = std::min(deadline, retry_due_.top());
        if (next_purge_)
            deadline = std::min(deadline, *next_purge_);
    }
    // A wait that fires no later is good enough: the pump it runs re-arms.
    if (armed_ && armed_at_ <= deadline)
        return;
    const auto now = clock_.now();
    using timer_duration = typename timer_type::duration;
    const auto wait =
        deadline > now ? std::chrono::ceil<timer_duration>(deadline - now) : timer_duration::zero();
    const std::uint64_t generation = ++timer_generation_;
    timer_.expires_after(wait);
    armed_ = true;
    armed_at_ = deadline;
    timer_.async_wait([weak = this->weak_from_this(), generation](boost::system::error_code) {
        if (auto self = weak.lock())
            self->on_timer(generation);
    });
}

} // namespace letterbox::detail
