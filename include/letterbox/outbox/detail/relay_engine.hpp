// SPDX-License-Identifier: BSL-1.0
#pragma once

// The engine of outbox_relay (letterbox/outbox/outbox_relay.hpp), which owns it through a
// shared pointer.
//
// The relay is a callback state machine (Beast-style composed operation, no coroutines): every
// event (the run starting, a publish outcome, the timer, wake, stop) is a handler on the
// relay's executor that updates the state and calls `pump`, which does whatever work the state
// allows and arms the one timer for the next deadline.
//
// Settling confirmed rows: with a store that models `outbox_batch_settler`, a confirmed row
// joins `pending_marks_` and a flush is posted behind the outcomes already queued on the
// executor, so one `mark_published(ids, ...)` call (one transaction) settles all of them; a
// full window flushes at once. Other stores, failures (`record_failure`) and retries after a
// store error settle one row per call (`settle`).
//
// Store calls go through `store_call`: here and now by default, or on
// `relay_options::store_executor`, one at a time, with their result posted back here. While
// one is on its way (`store_busy_`), the relay goes on publishing and collecting outcomes, and
// the store work that comes up waits: settlements in `unsettled_`, marks in `pending_marks_`,
// the claim, the stats and the purge behind their flags; `step` starts the next one.

#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/unique_function.hpp>
#include <letterbox/error.hpp>
#include <letterbox/failpoint.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox/detail/relay_support.hpp>
#include <letterbox/outbox/relay_counters.hpp>
#include <letterbox/outbox/relay_event.hpp>
#include <letterbox/outbox/relay_options.hpp>
#include <letterbox/outbox/relay_point.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/store_time.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// The state of an `outbox_relay` and the handlers that drive it, on the transport's executor
/// (see the top of this file). Held by a shared pointer: the completions of its publishes and
/// timer waits hold weak ones, so they do nothing once the relay is gone.
template <class OutboxStore, class Transport, class Clock>
class relay_engine
    : public std::enable_shared_from_this<relay_engine<OutboxStore, Transport, Clock>> {
public:
    using executor_type = boost::asio::any_io_executor;
    using completion = unique_function<void(std::error_code)>;

    relay_engine(OutboxStore& store, Transport& transport, Clock& clock, relay_options options)
        : store_(store)
        , transport_(transport)
        , clock_(clock)
        , options_(std::move(options))
        , ex_(transport.get_executor())
        , store_ex_(options_.store_executor)
        , timer_(clock.make_timer(ex_))
        , jitter_(options_.seed ? *options_.seed : random_seed()) {}

    relay_engine(const relay_engine&) = delete;
    relay_engine& operator=(const relay_engine&) = delete;

    const executor_type& executor() const noexcept { return ex_; }
    const std::string& owner() const noexcept { return options_.owner; }
    relay_counters counters() const noexcept { return cells_.snapshot(); }

    // -- entry points from any thread: they only post ---------------------------------------

    void post_wake() { post_weak(ex_, this->weak_from_this(), &relay_engine::on_wake); }

    void post_stop() { post_weak(ex_, this->weak_from_this(), &relay_engine::on_stop); }

    std::function<void()> waker() {
        return [ex = ex_, weak = this->weak_from_this()] {
            post_weak(ex, weak, &relay_engine::on_wake);
        };
    }

    // -- on the executor: `async_run`'s start and cancellation -------------------------------

    void start(completion done) {
        if (phase_ != phase::ready) {
            done(phase_ == phase::finished ? errc::closed : errc::precondition_failed);
            return;
        }
        run_done_ = std::move(done);
        if (stop_requested_) {
            finish({});
            return;
        }
        begin();
    }

    // A stop whose `async_run` then completes with `operation_canceled`.
    void cancel_run() {
        run_cancelled_ = true;
        on_stop();
    }

    // -- the relay object's destructor -----------------------------------------------------

    void abort() {
        if (phase_ != phase::finished)
            halt(errc::closed);
    }

private:
    using clock_time = typename Clock::time_point;
    using clock_duration = typename Clock::duration;
    using timer_type = decltype(std::declval<Clock&>().make_timer(
        std::declval<const boost::asio::any_io_executor&>()));

    enum class phase { ready, running, stopping, finished };

    // The store marks confirmed rows in batches (see the top of this file).
    static constexpr bool batch_marks = outbox_batch_settler<OutboxStore>;

    // A row whose outcome arrived but whose settlement the store refused with a store error;
    // retried while the relay runs.
    struct settlement {
        outbox_record row;
        std::error_code outcome;
    };

    static void post_weak(const executor_type& ex, std::weak_ptr<relay_engine> weak,
                          void (relay_engine::*member)()) {
        boost::asio::post(ex, [weak = std::move(weak), member] {
            if (auto self = weak.lock())
                ((*self).*member)();
        });
    }

    template <class Duration>
    static clock_duration to_clock(Duration d) {
        return std::chrono::ceil<clock_duration>(d);
    }
    template <class Duration>
    static store_time::duration to_store(Duration d) {
        return std::chrono::ceil<store_time::duration>(d);
    }

    bool active() const noexcept { return phase_ == phase::running || phase_ == phase::stopping; }

    std::size_t window() const noexcept { return probing_ ? 1 : options_.window; }

    // -- handlers ----------------------------------------------------------------------------

    void begin() {
        phase_ = phase::running;
        const auto now = clock_.now();
        next_poll_ = now + to_clock(options_.poll_interval);
        if (options_.retention)
            next_purge_ = now + to_clock(options_.purge_interval);
        claim_allowed_ = true;
        refresh_lag();
        pump();
    }

    void on_wake() {
        if (phase_ != phase::running)
            return;
        claim_allowed_ = true;
        pump();
    }

    void on_stop() {
        if (phase_ == phase::ready) {
            stop_requested_ = true;
            return;
        }
        if (phase_ != phase::running)
            return;
        phase_ = phase::stopping;
        stop_deadline_ = clock_.now() + to_clock(options_.stop_timeout);
        // Rows claimed but not sent: abandoned under their lease. The settlements the store
        // refused earlier get one last try (`step`).
        cells_.add(cells_.abandoned, queue_.size());
        queue_.clear();
        pump();
    }

    void on_flush() {
        flush_posted_ = false;
        if (!active())
            return; // halted or finished: confirmed rows not marked stay pending, as in a crash
        flush_marks();
        pump();
    }

    void on_timer(std::uint64_t generation) {
        if (generation != timer_generation_)
            return; // a wait that was cancelled or superseded
        armed_ = false;
        pump();
    }

    void on_outcome(const std::shared_ptr<outbox_record>& held, std::error_code ec);

    // -- the work ----------------------------------------------------------------------------

    void observe(relay_event::kind k, const outbox_record& row) {
        if (options_.on_event)
            options_.on_event(relay_event{k, row, clock_.wall_now()});
    }

    void pump() {
        if (!active())
            return;
        if (pumping_) {
            pump_again_ = true;
            return;
        }
        pumping_ = true;
        do {
            pump_again_ = false;
            step();
        } while (pump_again_ && active());
        pumping_ = false;
        if (active())
            arm_timer();
    }

    void step();

    // Whether a claim may start: when the window has room; with a store executor, also while
    // it is full (but not while probing), so that the store claims the next batch while the
    // transport publishes this one.
    bool room_to_claim() const noexcept {
        return in_flight_.size() < window() || (store_ex_ && !probing_);
    }

    // -- the store -----------------------------------------------------------------------------

    // Makes one store call, `call()`, and hands its result to `then` on the relay's executor.
    // Without a store executor, both run here and now. With one, `call` runs there while the
    // relay goes on, `then` is posted back, and `store_busy_` holds until it runs, so the
    // relay's store calls never overlap; a result that comes back after the relay ended is
    // dropped, and only then does `async_run` complete. The relay's executor counts the call
    // as work, so its `run` does not return while a result is on its way.
    template <class Call, class Then>
    void store_call(Call call, Then then);

    void claim();

    template <class Rows>
    void on_claimed(std::error_code ec, Rows rows);

    void send_queued();

    // The message's group (`headers::group`, docs/message-groups.md): its aggregate's,
    // `<type>/<id>`, unless the producer named one. A consumer with message groups then keeps the
    // events of one aggregate in order, as the relay published them.
    static void name_group(outbox_record& row);

    // Settles `s` with one store call: marks its row published, or records its failure. A
    // settlement the store refuses with a store error is kept for a retry (`keep_unsettled`);
    // one that has to wait for a busy store waits in `unsettled_`.
    void settle(settlement s);

    // The store's answer `ec` to settlement `s`; `parks` when the failure it records parks the
    // row, which is otherwise due again after `wait`.
    void on_settled(settlement s, std::error_code ec, bool parks, clock_duration wait);

    // Counts the store's answer `result` to the settlement of `row` (publish outcome
    // `outcome`; `parks` when the failure it records parks the row), for `settle` and
    // `flush_marks` alike; each acts on a store error in its own way.
    enum class settled { done, lease_lost, store_error };

    settled count_settled(const outbox_record& row, std::error_code outcome, std::error_code result,
                          bool parks) {
        if (result == errc::lease_lost || result == errc::record_not_found) {
            cells_.add(cells_.lease_lost);
            return settled::lease_lost;
        }
        if (result)
            return settled::store_error;
        if (outcome) {
            cells_.add(cells_.failed);
            if (parks)
                cells_.add(cells_.parked);
            return settled::done;
        }
        cells_.add(cells_.published);
        // The aggregate's next event (if any) became claimable.
        if (!row.aggregate_id.empty())
            claim_allowed_ = true;
        return settled::done;
    }

    // A store call that settled nothing for a store error: counted once per call, and the
    // relay pauses.
    void count_store_failure() {
        cells_.add(cells_.store_errors);
        back_off(store_failures_in_a_row_);
    }

    // A settlement the store refused: retried on its own while the relay runs, abandoned when
    // it is stopping.
    void keep_unsettled(settlement s) {
        if (phase_ == phase::stopping)
            cells_.add(cells_.abandoned);
        else if (phase_ == phase::running)
            unsettled_.push_back(std::move(s));
    }

    // Settles what waits in `unsettled_`, one store call at a time while the store is free.
    // False when it stopped early: the relay halted, or, while running, the store refused one
    // (the relay pauses). While stopping, a refused one is abandoned and the rest go on.
    bool settle_unsettled() {
        const phase in = phase_;
        while (!unsettled_.empty() && !store_busy_) {
            auto s = std::move(unsettled_.front());
            unsettled_.pop_front();
            settle(std::move(s));
            if (phase_ != in || (in == phase::running && paused_until_))
                return false;
        }
        return true;
    }

    // Whether the outcome of row `id` is known and its settlement in the store is pending.
    bool awaits_settlement(const message_id& id) const {
        const auto same = [&id](const outbox_record& r) {
            return r.msg.id == id;
        };
        return std::any_of(pending_marks_.begin(), pending_marks_.end(), same) ||
               std::any_of(unsettled_.begin(), unsettled_.end(),
                           [&same](const settlement& s) { return same(s.row); });
    }

    // A confirmed row waits for the next batch of marks: the flush posted behind the outcomes
    // already queued, or at once when a window's worth is waiting.
    void queue_mark(outbox_record row) {
        pending_marks_.push_back(std::move(row));
        if (pending_marks_.size() >= options_.window) {
            flush_marks();
            return;
        }
        if (!flush_posted_) {
            flush_posted_ = true;
            post_weak(ex_, this->weak_from_this(), &relay_engine::on_flush);
        }
    }

    // Marks the rows of `pending_marks_` published with one store call, a window's worth at
    // most (the rest waits for the store). Each row is then handled as `settle` handles one:
    // published (and `after_mark`), lease lost, or, after a store error, kept for a retry of its
    // own while the relay runs (abandoned when stopping).
    void flush_marks();

    void on_marked(std::vector<outbox_record> batch, std::error_code ec,
                   std::vector<std::error_code> results) {
        if constexpr (batch_marks) {
            if (!ec && results.size() != batch.size())
                ec = errc::internal_error; // a store that broke the contract: retry row by row
            if (ec)
                results.assign(batch.size(), ec);
            bool store_failed = static_cast<bool>(ec);
            for (std::size_t i = 0; i < batch.size(); ++i) {
                if (count_settled(batch[i], {}, results[i], false) == settled::store_error) {
                    // A store error for this row: retried on its own, as a failed mark is.
                    store_failed = true;
                    keep_unsettled(settlement{std::move(batch[i]), {}});
                }
            }
            if (store_failed)
                count_store_failure();
            else
                store_failures_in_a_row_ = 0;
            // Every row of the batch is counted before the first hook runs: a halt at one of
            // them leaves the counters matching the store.
            for (std::size_t i = 0; i < batch.size(); ++i)
                if (!results[i] && failpoint(relay_point::after_mark, batch[i]))
                    return;
        }
    }

    // Back in line, in creation order, for a republish after the pause.
    void requeue(outbox_record row) {
        auto at = std::upper_bound(
            queue_.begin(), queue_.end(), row.sequence,
            [](std::uint64_t seq, const outbox_record& r) { return seq < r.sequence; });
        queue_.insert(at, std::move(row));
    }

    // Pauses sending, claiming and settlement retries. Failures that arrive during a pause
    // (e.g. every publish of the window failing at once) do not lengthen it.
    void back_off(std::uint32_t& failures_in_a_row) {
        const auto now = clock_.now();
        if (paused_until_ && now < *paused_until_)
            return;
        ++failures_in_a_row;
        paused_until_ = now + to_clock(backoff_wait(options_.transport_retry, failures_in_a_row,
                                                    jitter_.next()));
        cells_.add(cells_.backoffs);
    }

    // One housekeeping call, `call(ec)`, whose value goes to `use`: skipped while the store is
    // busy (`due` stays set, and `step` tries again), a store error counted.
    template <class Call, class Use>
    void housekeep(bool& due, Call call, Use use);

    // The stats for `relay_counters::lag`; with a busy store, `lag_due_` stays set.
    void refresh_lag();

    // Purges published rows past the retention; with a busy store, `purge_due_` stays set.
    void purge();

    bool failpoint(relay_point point, const outbox_record& row) {
        if constexpr (!failpoints_enabled)
            return false;
        if (!options_.failpoint || !options_.failpoint(point, row))
            return false;
        halt(errc::internal_error);
        return true;
    }

    // -- the one timer -------------------------------------------------------------------------

    void arm_timer();

    // -- ending --------------------------------------------------------------------------------

    // Graceful end: what is still in flight is abandoned (its outcome will be ignored).
    void finish(std::error_code ec) {
        cells_.add(cells_.abandoned, in_flight_.size());
        end(ec);
    }

    // Abrupt end, as if the process died here: nothing more is called, leases stay held.
    void halt(std::error_code ec) { end(ec); }

    void end(std::error_code ec) {
        phase_ = phase::finished;
        ++timer_generation_;
        armed_ = false;
        timer_.cancel();
        // The containers are left alone: this may run inside a failpoint hook, while a caller
        // up the stack still refers to one of their rows. Outcomes that arrive later are
        // ignored.
        cells_.set_in_flight(0);
        end_ec_ = ec;
        if (!store_busy_)
            complete_run(); // otherwise when the store call returns (`store_call`)
    }

    void complete_run() {
        if (run_done_) {
            auto done = std::move(run_done_);
            run_done_ = nullptr;
            done(run_cancelled_ && !end_ec_ ? std::make_error_code(std::errc::operation_canceled)
                                            : end_ec_);
        }
    }

    OutboxStore& store_;
    Transport& transport_;
    Clock& clock_;
    const relay_options options_;
    executor_type ex_;
    executor_type store_ex_; // empty: store calls are made on ex_, synchronously
    timer_type timer_;
    jitter_source jitter_;
    relay_counter_cells cells_;

    phase phase_ = phase::ready;
    bool stop_requested_ = false;
    bool run_cancelled_ = false;
    completion run_done_;
    std::error_code end_ec_;

    std::deque<outbox_record> queue_; // claimed, not sent yet, creation order
    std::map<message_id, std::shared_ptr<outbox_record>> in_flight_; // sent, outcome awaited
    std::deque<settlement> unsettled_;         // outcome known, store refused to settle
    std::vector<outbox_record> pending_marks_; // confirmed, waiting for the next batch of marks
    bool flush_posted_ = false;                // an on_flush is queued on the executor
    bool store_busy_ = false;                  // a store call is on the store executor
    bool lag_due_ = false;                     // the stats are to be read
    bool purge_due_ = false;                   // published rows are to be purged
    bool claim_allowed_ = false;
    bool probing_ = false;
    std::uint32_t transport_failures_in_a_row_ = 0;
    std::uint32_t store_failures_in_a_row_ = 0;
    std::optional<clock_time> paused_until_;

    clock_time next_poll_{};
    std::optional<clock_time> next_purge_;
    std::priority_queue<clock_time, std::vector<clock_time>, std::greater<>> retry_due_;
    clock_time stop_deadline_{};

    bool armed_ = false;
    clock_time armed_at_{};
    std::uint64_t timer_generation_ = 0;
    bool pumping_ = false;
    bool pump_again_ = false;
};

} // namespace letterbox::detail

#include <letterbox/outbox/detail/impl/relay_engine.hpp>
