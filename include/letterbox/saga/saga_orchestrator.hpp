// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/clock.hpp>
#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/concepts/saga_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/saga/saga_definition.hpp>
#include <letterbox/saga/saga_stats.hpp>
#include <letterbox/saga/saga_view.hpp>
#include <letterbox/saga_instance.hpp>
#include <letterbox/store_time.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// Runs the instances of one orchestrated saga (`saga_definition`): it starts them, moves them
/// on with their participants' replies and with their timeouts, and compensates them, each
/// move in **one transaction** of the caller's unit of work: the instance's new state in the
/// saga store, the commands it sends in the outbox, and (when the orchestrator is the effect of
/// an idempotent consumer) the reply's inbox record. A crash between any two of these leaves
/// the whole move or nothing; the reply is then delivered again, and the move happens once.
///
/// - **Commands** go through the outbox, with the saga's headers (`headers::saga_*`), the
///   instance id as `correlation_id`, `reply_to` as their reply address, and the instance as
///   their aggregate, so the relay publishes one instance's commands in order.
/// - **Replies** (`saga_reply`) find their instance by the saga id they carry. A reply for the
///   step or the phase the instance waits for moves it; any other is ignored and counted:
///   `unknown` (no such instance, or purged), `for_finished`, `stale` (a late reply, or a
///   second reply to a compensation sent again). A reply without the saga's headers, or for
///   another saga, is `errc::payload_malformed`, so the pipeline dead-letters it with that
///   reason at once.
/// - **Compensation.** When a step fails (its reply says so, or its timeout fires), the
///   compensations of the steps that succeeded run in reverse order, one at a time, each after
///   the previous one's success reply; then the saga ends `failed`. A step that timed out may
///   have happened (its command in flight, or its reply lost), so it is compensated first: a
///   compensation must be harmless for a command never applied, and a participant must refuse
///   a command that comes after its compensation (docs/sagas.md). A compensation that fails
///   (or whose reply does not come within the step's timeout) is sent again after the delay
///   `compensation_retry` decides; once that policy gives up, the saga is parked in
///   `compensation_failed` with the reason, and stays there, visible, for an operator.
/// - **Timeouts** are stored with the instance (`saga_instance::timeouts`), so they survive a
///   restart. `fire_due_timeouts` fires those due on the clock. A timeout of a step that has
///   already ended is gone from the instance: it does nothing.
/// - **Concurrency.** Two moves of one instance at once (two replies, a reply and a timeout)
///   race on its version: one commits, and the other's unit fails with
///   `errc::concurrency_conflict`, which the pipeline retries (the store never overwrites).
///
/// `Sagas` and `Outbox` share one unit of work type. The orchestrator keeps pointers to the
/// stores and the clock, which must outlive it. Copies share their statistics.
///
/// Thread safety: every member function may be called concurrently.
template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
class saga_orchestrator {
public:
    using unit_of_work_type = typename Sagas::unit_of_work_type;
    static_assert(std::same_as<unit_of_work_type, typename Outbox::unit_of_work_type>,
                  "saga_orchestrator: the saga store and the outbox must share one unit of work "
                  "type, so that a saga's step and its commands commit together");

    /// An orchestrator of `definition`'s instances in `sagas`, sending commands through
    /// `outbox`, reading the time from `clock`. Replies come back to `reply_to` (the queue its
    /// consumer reads); `compensation_retry` decides how often, and after what delays, a
    /// failed compensation is sent again. The ids it makes (of instances, and of commands
    /// whose `invoke` or `compensate` gave none) are random; `id_seed` is for simulations and
    /// tests only, so that a run replays exactly: a seeded generator gives the same ids again
    /// in every process that uses the seed, and participants would drop the repeated commands
    /// as duplicates. Throws `letterbox::error`
    /// (`errc::invalid_argument`) for an empty `reply_to`.
    saga_orchestrator(saga_definition<Data> definition, Sagas& sagas, Outbox& outbox, Clock& clock,
                      std::string reply_to, Policy compensation_retry,
                      std::optional<std::uint64_t> id_seed = std::nullopt);

    /// Starts an instance for `correlation` (an order id) with `data`, in `u`: the instance,
    /// in the first step's state, and that step's command, commit with `u`. Returns
    /// `errc::concurrency_conflict` when the saga already has an instance for `correlation`
    /// (nothing written, `u` usable), or the stores' errors. A saga without steps starts
    /// `completed`.
    [[nodiscard]] std::error_code start(unit_of_work_type& u, std::string_view correlation,
                                        const Data& data);

    /// The same, for a start caused by `cause` (the message being handled, an `order-placed`
    /// event, say): the saga's messages join its trace and its conversation (`caused_by`).
    /// Without a cause, the first command begins a conversation of its own.
    [[nodiscard]] std::error_code start(unit_of_work_type& u, std::string_view correlation,
                                        const Data& data, const message& cause);

    /// Applies a participant's reply, in `u`: the transactional effect of the consumer of
    /// `reply_to` (`idempotent(orchestrator, inbox, ...)`), which records the reply in the
    /// inbox and commits. Returns `errc::payload_malformed` for a reply that is not this saga's,
    /// `errc::concurrency_conflict` or a store's error when the move cannot be written (the
    /// unit must not commit: the reply is retried), and success otherwise, ignored replies
    /// included. An exception from the definition's functions propagates.
    [[nodiscard]] std::error_code operator()(const message& reply, unit_of_work_type& u);

    /// Fires the timeouts of this saga's instances that are due on the clock, each in a unit of
    /// its own from `begin()`, which it commits; at most `limit` are looked at. Returns how many
    /// fired. A timeout whose instance moved meanwhile (a conflict, or the step ended) is
    /// skipped. `ec` holds the first store error, after which it stops; an instance whose data
    /// cannot be read (`errc::store_corrupt`) is skipped, and reported in `ec` at the end.
    template <class Begin>
    std::size_t fire_due_timeouts(Begin&& begin, std::error_code& ec, std::size_t limit = 100);

    /// Fires the due timeouts (`fire_due_timeouts`, with `begin`) at once, then every
    /// `interval` of the orchestrator's clock, until cancelled: the timer a saga's timeouts
    /// need. The rounds run on a strand of `ex`: for a store whose calls block (SQLite), give a
    /// thread pool's executor, never the one of the I/O thread. A round that fails (a store
    /// error, a unit that could not begin, an exception) is counted in
    /// `stats().timeout_round_errors`, and the next round tries again. Completes with
    /// `void(boost::system::error_code)`, `operation_aborted`, once cancelled through the
    /// token's cancellation slot (`terminal`, `partial` or `total`: stopping leaves no trace).
    /// It runs until stopped, so it does not count as outstanding work (as a relay's
    /// `async_run`). The orchestrator's stores and clock must outlive it: stop it, and wait for
    /// its completion, first.
    ///
    ///     asio::cancellation_signal stop;
    ///     orchestrator.async_run_timeouts(pool.get_executor(), begin_unit, 1s,
    ///                                     asio::bind_cancellation_slot(stop.slot(), on_end));
    template <class Begin, class Token>
    auto async_run_timeouts(boost::asio::any_io_executor ex, Begin begin,
                            std::chrono::milliseconds interval, Token&& token);

    /// The instance started for `correlation`, decoded, if the store holds it.
    std::optional<saga_view<Data>> find(std::string_view correlation, std::error_code& ec);

    /// What it has done so far (all copies together).
    saga_stats stats() const;

    const saga_definition<Data>& definition() const noexcept { return definition_; }

private:
    enum class phase { invoke, compensate };

    // Where an instance is: waiting for step `step`'s reply, or for its compensation's.
    struct position {
        phase what;
        std::size_t step;
    };

    // The saga's own bookkeeping around the user's data, in `saga_instance::data`: why it failed,
    // how often the current compensation was tried, and the last command it sent (its id and
    // trace), which is the cause of what a timeout makes it send.
    struct record {
        Data data{};
        std::string reason{};
        std::uint32_t attempts = 0;
        std::string conversation{};
        message last{};
    };

    // One move of one instance: what will be written, sent and counted if it commits.
    struct transition {
        saga_instance instance;
        record state;
        std::vector<message> commands{};
        saga_stats counts{};
        store_time now{};
        const message* cause = nullptr; // the reply, or the start's cause
    };

    struct shared {
        explicit shared(std::optional<std::uint64_t> seed)
            : ids(seed ? message_id_generator(*seed) : message_id_generator()) {}
        std::mutex mutex;
        saga_stats stats;
        message_id_generator ids;
    };

    std::optional<position> where(std::string_view state) const;
    std::error_code read(const saga_instance& instance, record& out) const;
    std::string encode(const record& r) const;

    void enter(transition& m, std::size_t step);
    void finish(transition& m, std::string state, std::uint64_t saga_stats::*count);
    void compensate_below(transition& m, std::size_t failed_step);
    void compensation_failed(transition& m, std::size_t step, std::string_view reason);
    void send(transition& m, std::size_t step, phase what);
    std::vector<saga_timeout> timeout_of(std::size_t step, std::string name, store_time now) const;
    std::error_code apply_reply(transition& m, const position& at, bool success,
                                const message& reply);
    bool apply_timeout(transition& m, const position& at, const saga_timeout_due& due);
    std::error_code write(unit_of_work_type& u, transition& m, bool insert);
    std::error_code ignore(unit_of_work_type& u, std::uint64_t saga_stats::*count);
    std::error_code begin(unit_of_work_type& u, std::string_view correlation, const Data& data,
                          const message* cause);

    saga_definition<Data> definition_;
    Sagas* sagas_;
    Outbox* outbox_;
    Clock* clock_;
    std::string reply_to_;
    Policy retry_;
    std::shared_ptr<shared> shared_;
};

} // namespace letterbox

#include <letterbox/saga/impl/saga_orchestrator.hpp>
