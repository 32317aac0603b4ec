// SPDX-License-Identifier: BSL-1.0
// The projection runner over the in-memory stores, on a virtual clock: exactly-once batches with
// their checkpoint, two runners of one projection, rebuilds, waking by notify instead of a poll,
// read-your-writes waits with a timeout, the lag, and crashes at the two failpoints.

#include <letterbox/event_sourcing/projection_runner.hpp>

#include <letterbox/event_sourcing/in_memory_checkpoint_store.hpp>
#include <letterbox/event_sourcing/in_memory_event_store.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/virtual_clock.hpp>

#include "account.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace unit_event_sourcing_projection_runner {

using namespace std::chrono_literals;
namespace lb = letterbox;
using unit_event_sourcing::movement;

namespace {

/// Balances per stream, kept in memory and written through the unit of work, so that a
/// rollback undoes them; it counts how many times it saw each event id, to catch a duplicate.
class balances {
public:
    using unit_of_work_type = lb::in_memory_unit_of_work;

    lb::in_memory_unit_of_work begin() { return {}; }

    std::error_code apply(lb::in_memory_unit_of_work& u, const lb::recorded_event& e) {
        if (fail_on_ && *fail_on_ == e.position)
            return lb::errc::internal_error;
        const auto amount = nlohmann::json::parse(e.data).at("amount").get<std::int64_t>();
        const auto delta = e.type == "withdrawn" ? -amount : amount;
        return u.stage(core_, e.stream, nullptr, [this, stream = e.stream, delta, id = e.id] {
            balance_[stream] += delta;
            ++seen_[lb::to_string(id)];
        });
    }

    std::error_code reset(lb::in_memory_unit_of_work& u) {
        return u.stage(core_, "*", nullptr, [this] {
            balance_.clear();
            seen_.clear();
        });
    }

    std::map<std::string, std::int64_t> balance() {
        std::lock_guard lock(core_.mutex);
        return balance_;
    }
    std::map<std::string, int> seen() {
        std::lock_guard lock(core_.mutex);
        return seen_;
    }

    std::optional<std::uint64_t> fail_on_; // apply fails for the event at this position
    lb::detail::in_memory_participant core_;

private:
    std::map<std::string, std::int64_t> balance_;
    std::map<std::string, int> seen_;
};

using runner_type = lb::projection_runner<lb::in_memory_event_store, lb::in_memory_checkpoint_store,
                                          balances, lb::virtual_clock>;

struct world {
    boost::asio::io_context io;
    lb::virtual_clock clock;
    lb::in_memory_event_store events;
    lb::in_memory_checkpoint_store checkpoints;
    balances read_model;
    lb::message_id_generator ids{5};

    std::unique_ptr<runner_type> runner(lb::projection_options options = {.name = "balances"}) {
        return std::make_unique<runner_type>(io.get_executor(), events, checkpoints, read_model,
                                             clock, std::move(options));
    }

    /// Appends one deposit (`amount` > 0) or withdrawal to `stream`; returns its position.
    std::uint64_t append(std::string stream, std::int64_t amount,
                         std::function<void()> on_commit = {}) {
        lb::append_result r;
        auto u = events.begin();
        const std::vector<lb::event_data> e{
            movement(ids, amount > 0 ? "deposited" : "withdrawn", amount > 0 ? amount : -amount)};
        REQUIRE_FALSE(
            events.append(u, stream, lb::expected_version::any(), e, clock.wall_now(), r));
        if (on_commit)
            REQUIRE_FALSE(u.on_commit(std::move(on_commit)));
        REQUIRE_FALSE(u.commit());
        return r.position;
    }

    std::uint64_t checkpoint(std::string_view name = "balances") {
        std::error_code ec;
        const auto p = checkpoints.position(name, ec);
        REQUIRE_FALSE(ec);
        return p;
    }

    void settle() {
        io.restart();
        io.poll();
    }
};

} // namespace

TEST_CASE("a catch-up applies every event once, in batches, each with its checkpoint",
          "[event_sourcing][projection_runner]") {
    world w;
    for (int i = 1; i <= 10; ++i)
        w.append(i % 2 ? "account-1" : "account-2", i);
    std::vector<std::uint64_t> batch_ends;
    auto runner =
        w.runner({.name = "balances", .batch = 3, .on_batch = [&](const lb::projection_batch& b) {
                      CHECK(b.projection == "balances");
                      batch_ends.push_back(b.events.back().position);
                  }});
    std::error_code ec;
    CHECK(runner->catch_up(ec) == 10);
    CHECK_FALSE(ec);
    CHECK(batch_ends == std::vector<std::uint64_t>{3, 6, 9, 10});
    CHECK(w.checkpoint() == 10);
    CHECK(runner->position() == 10);
    CHECK(w.read_model.balance() ==
          std::map<std::string, std::int64_t>{{"account-1", 25}, {"account-2", 30}});
    CHECK(runner->catch_up(ec) == 0); // nothing twice
    for (const auto& [id, n] : w.read_model.seen())
        CHECK(n == 1);
    const auto s = runner->stats(ec);
    CHECK(s.applied == 10);
    CHECK(s.batches == 4);
    CHECK(s.lag_events == 0);
}

TEST_CASE("a failing projection applies nothing of its batch, and the checkpoint stays",
          "[event_sourcing][projection_runner]") {
    world w;
    for (int i = 1; i <= 5; ++i)
        w.append("account-1", 10);
    w.read_model.fail_on_ = 4;
    auto runner = w.runner({.name = "balances", .batch = 3});
    std::error_code ec;
    CHECK(runner->catch_up(ec) == 3);
    CHECK(ec == lb::errc::internal_error);
    CHECK(w.checkpoint() == 3);
    CHECK(w.read_model.balance().at("account-1") == 30);
    CHECK(runner->stats(ec).errors == 1);
    w.read_model.fail_on_.reset();
    CHECK(runner->catch_up(ec) == 2);
    CHECK(w.read_model.balance().at("account-1") == 50);
}

TEST_CASE("of two runners of one projection, only one moves the checkpoint",
          "[event_sourcing][projection_runner]") {
    world w;
    for (int i = 1; i <= 4; ++i)
        w.append("account-1", 1);
    auto a = w.runner();
    auto b = w.runner();
    // Runner b commits a batch while a's batch is open: a's commit conflicts and rolls back.
    bool once = true;
    w.read_model.fail_on_.reset();
    auto interleaved =
        w.runner({.name = "balances",
                  .batch = 2,
                  .on_batch = {},
                  .failpoint = [&](lb::failpoint p, const lb::message_id&) {
                      if (p == lb::failpoint::after_projection_apply_before_commit && once) {
                          once = false;
                          std::error_code e;
                          CHECK(b->step(e) == 4);
                      }
                      return false;
                  }});
    std::error_code ec;
    if constexpr (lb::failpoints_enabled) {
        CHECK(interleaved->step(ec) == 0);
        CHECK(ec == lb::errc::concurrency_conflict);
        CHECK(interleaved->stats(ec).conflicts == 1);
    }
    CHECK(a->catch_up(ec) == (lb::failpoints_enabled ? 0 : 4));
    CHECK(w.checkpoint() == 4);
    CHECK(w.read_model.balance().at("account-1") == 4);
    for (const auto& [id, n] : w.read_model.seen())
        CHECK(n == 1);
}

TEST_CASE("a reset empties the read model and a catch-up rebuilds it equal",
          "[event_sourcing][projection_runner]") {
    world w;
    for (int i = 1; i <= 7; ++i)
        w.append("account-" + std::to_string(i % 3), i * 10 - 25);
    auto runner = w.runner({.name = "balances", .batch = 2});
    std::error_code ec;
    runner->catch_up(ec);
    const auto live = w.read_model.balance();
    REQUIRE_FALSE(runner->reset());
    CHECK(w.read_model.balance().empty());
    CHECK(w.checkpoint() == 0);
    CHECK(runner->position() == 0);
    CHECK(runner->catch_up(ec) == 7);
    CHECK(w.read_model.balance() == live);
}

TEST_CASE("async_run catches up when notified and never polls",
          "[event_sourcing][projection_runner]") {
    world w;
    auto runner = w.runner();
    std::optional<lb::error_code> ended;
    boost::asio::cancellation_signal stop;
    runner->async_run(
        boost::asio::bind_cancellation_slot(stop.slot(), [&](lb::error_code e) { ended = e; }));
    w.append("account-1", 5); // before the run started: its first round finds it
    w.settle();
    CHECK(w.read_model.balance().at("account-1") == 5);

    // An append nobody reports is not seen, however long the clock runs: no polling.
    w.append("account-1", 7);
    w.clock.advance(1h);
    w.settle();
    CHECK(w.read_model.balance().at("account-1") == 5);

    // The append's commit wakes it.
    w.append("account-1", 11, runner->waker());
    w.settle();
    CHECK(w.read_model.balance().at("account-1") == 23);
    CHECK_FALSE(ended);

    // A second run is refused while the first one runs.
    std::optional<lb::error_code> second;
    runner->async_run([&](lb::error_code e) { second = e; });
    w.settle();
    REQUIRE(second);
    CHECK(*second == lb::errc::invalid_state);

    stop.emit(boost::asio::cancellation_type::terminal);
    w.settle();
    REQUIRE(ended);
    CHECK(*ended == boost::asio::error::operation_aborted);
}

TEST_CASE("async_run polls only when a fallback poll is set, and retries a failed round",
          "[event_sourcing][projection_runner]") {
    world w;
    auto runner = w.runner({.name = "balances", .fallback_poll = 500ms, .retry_delay = 2s});
    boost::asio::cancellation_signal stop;
    runner->async_run(boost::asio::bind_cancellation_slot(stop.slot(), [](lb::error_code) {}));
    w.settle();
    w.append("account-1", 5);
    w.clock.advance(499ms);
    w.settle();
    CHECK(w.read_model.balance().empty());
    w.clock.advance(1ms);
    w.settle();
    CHECK(w.read_model.balance().at("account-1") == 5);

    w.read_model.fail_on_ = 2;
    w.append("account-1", 6);
    w.clock.advance(500ms);
    w.settle();
    std::error_code ec;
    CHECK(runner->stats(ec).errors == 1);
    w.read_model.fail_on_.reset();
    w.clock.advance(1999ms); // the retry comes after retry_delay, not the poll
    w.settle();
    CHECK(w.read_model.balance().at("account-1") == 5);
    w.clock.advance(1ms);
    w.settle();
    CHECK(w.read_model.balance().at("account-1") == 11);
    stop.emit(boost::asio::cancellation_type::terminal);
    w.settle();
}

TEST_CASE("a read waits for its own write, woken by the projection's progress",
          "[event_sourcing][projection_runner]") {
    world w;
    auto runner = w.runner();
    boost::asio::cancellation_signal stop;
    runner->async_run(boost::asio::bind_cancellation_slot(stop.slot(), [](lb::error_code) {}));
    w.settle();

    const auto at = w.append("account-1", 40); // appended, not reported yet
    std::optional<lb::error_code> waited;
    runner->async_wait(at, 2s, [&](lb::error_code e) { waited = e; });
    w.settle();
    CHECK_FALSE(waited); // not there yet
    runner->notify();
    w.settle();
    REQUIRE(waited);
    CHECK_FALSE(*waited);
    CHECK(w.read_model.balance().at("account-1") == 40); // the read sees the write

    // Already reached: at once.
    waited.reset();
    runner->async_wait(at, 0s, [&](lb::error_code e) { waited = e; });
    w.settle();
    REQUIRE(waited);
    CHECK_FALSE(*waited);

    // Never reached: timed out on the clock.
    waited.reset();
    const auto later = w.append("account-1", 1);
    runner->async_wait(later, 2s, [&](lb::error_code e) { waited = e; });
    w.settle();
    w.clock.advance(1999ms);
    w.settle();
    CHECK_FALSE(waited);
    w.clock.advance(1ms);
    w.settle();
    REQUIRE(waited);
    CHECK(*waited == lb::errc::timed_out);

    // Cancelled through its slot.
    waited.reset();
    boost::asio::cancellation_signal cancel;
    runner->async_wait(
        later + 1, 1h,
        boost::asio::bind_cancellation_slot(cancel.slot(), [&](lb::error_code e) { waited = e; }));
    w.settle();
    cancel.emit(boost::asio::cancellation_type::total);
    w.settle();
    REQUIRE(waited);
    CHECK(*waited == boost::asio::error::operation_aborted);

    stop.emit(boost::asio::cancellation_type::terminal);
    w.settle();
}

TEST_CASE("stats report the lag behind the head in events and in time",
          "[event_sourcing][projection_runner]") {
    world w;
    auto runner = w.runner({.name = "balances", .batch = 2});
    w.append("account-1", 1);
    w.clock.advance(3s);
    w.append("account-1", 1);
    w.append("account-1", 1);
    w.clock.advance(2s);
    std::error_code ec;
    auto s = runner->stats(ec);
    CHECK_FALSE(ec);
    CHECK(s.position == 0);
    CHECK(s.head == 3);
    CHECK(s.lag_events == 3);
    CHECK(s.lag_time == 5s); // the oldest event not applied waited since the first append
    CHECK(runner->step(ec) == 2);
    s = runner->stats(ec);
    CHECK(s.lag_events == 1);
    CHECK(s.lag_time == 2s);
    runner->step(ec);
    s = runner->stats(ec);
    CHECK(s.lag_events == 0);
    CHECK(s.lag_time == 0s);
}

TEST_CASE("a runner that dies at a failpoint loses and duplicates nothing",
          "[event_sourcing][projection_runner]") {
    if constexpr (!lb::failpoints_enabled) {
        SUCCEED("failpoints are not compiled in");
        return;
    }
    for (const auto point : {lb::failpoint::after_projection_apply_before_commit,
                             lb::failpoint::after_projection_commit_before_wake}) {
        INFO(lb::to_string(point));
        world w;
        for (int i = 1; i <= 6; ++i)
            w.append("account-1", i);
        int batches = 0;
        auto dying = w.runner({.name = "balances",
                               .batch = 4,
                               .on_batch = {},
                               .failpoint = [&](lb::failpoint p, const lb::message_id&) {
                                   return p == point && ++batches == 1;
                               }});
        std::error_code ec;
        CHECK_THROWS_AS(dying->catch_up(ec), lb::failpoint_halt);
        const bool committed = point == lb::failpoint::after_projection_commit_before_wake;
        CHECK(w.checkpoint() == (committed ? 4u : 0u));
        // The next process starts a runner of its own.
        auto next = w.runner({.name = "balances", .batch = 4});
        CHECK(next->catch_up(ec) == (committed ? 2u : 6u));
        CHECK(w.read_model.balance().at("account-1") == 21);
        for (const auto& [id, n] : w.read_model.seen())
            CHECK(n == 1);
    }
}

TEST_CASE("async_run catches up one batch per handler, so a wait is served between batches",
          "[event_sourcing][projection_runner]") {
    world w;
    for (int i = 1; i <= 12; ++i)
        w.append("account-1", 1);
    auto runner = w.runner({.name = "balances", .batch = 3});
    std::optional<lb::error_code> waited;
    runner->async_wait(3, 1s, [&](lb::error_code e) { waited = e; });
    boost::asio::cancellation_signal stop;
    runner->async_run(boost::asio::bind_cancellation_slot(stop.slot(), [](lb::error_code) {}));
    // Each handler applies at most one batch: the wait completes before the catch-up ends.
    w.io.restart();
    while (!waited && w.io.run_one() > 0) {
    }
    REQUIRE(waited);
    CHECK_FALSE(*waited);
    CHECK(w.checkpoint() < 12);
    w.settle();
    CHECK(w.checkpoint() == 12);
    stop.emit(boost::asio::cancellation_type::terminal);
    w.settle();
}

TEST_CASE("a batch committed before a reset does not count after it",
          "[event_sourcing][projection_runner]") {
    if constexpr (!lb::failpoints_enabled) {
        SUCCEED("failpoints are not compiled in");
        return;
    }
    world w;
    for (int i = 1; i <= 5; ++i)
        w.append("account-1", 1);
    std::unique_ptr<runner_type> runner;
    bool once = true;
    runner = w.runner({.name = "balances",
                       .batch = 5,
                       .on_batch = {},
                       .failpoint = [&](lb::failpoint p, const lb::message_id&) {
                           // The batch committed; a reset runs before the runner notes it.
                           if (p == lb::failpoint::after_projection_commit_before_wake && once) {
                               once = false;
                               CHECK_FALSE(runner->reset());
                           }
                           return false;
                       }});
    std::error_code ec;
    CHECK(runner->step(ec) == 5);
    CHECK(w.checkpoint() == 0);
    CHECK(runner->position() == 0); // not 5: the read model is empty
    std::optional<lb::error_code> waited;
    runner->async_wait(5, 1s, [&](lb::error_code e) { waited = e; });
    w.settle();
    CHECK_FALSE(waited);
    runner->catch_up(ec);
    w.settle();
    REQUIRE(waited);
    CHECK_FALSE(*waited);
    CHECK(w.read_model.balance().at("account-1") == 5);
}

TEST_CASE("a checkpoint reset by another runner lowers the position this one reports",
          "[event_sourcing][projection_runner]") {
    world w;
    for (int i = 1; i <= 4; ++i)
        w.append("account-1", 1);
    auto a = w.runner();
    auto b = w.runner();
    std::error_code ec;
    a->catch_up(ec);
    CHECK(a->position() == 4);
    REQUIRE_FALSE(b->reset());
    CHECK(a->step(ec) == 4); // it reads the checkpoint at 0, and applies from there
    CHECK(a->position() == 4);
    CHECK(w.read_model.balance().at("account-1") == 4);
}

TEST_CASE("a checkpoint beyond the event store's head is an error, not a caught-up projection",
          "[event_sourcing][projection_runner]") {
    world w;
    {
        auto u = w.checkpoints.begin();
        REQUIRE_FALSE(w.checkpoints.save(u, "balances", 0, 9));
        REQUIRE_FALSE(u.commit());
    }
    w.append("account-1", 1);
    auto runner = w.runner();
    std::error_code ec;
    CHECK(runner->step(ec) == 0);
    CHECK(ec == lb::errc::invalid_state);
    CHECK(runner->position() == 0);
}

TEST_CASE("destroying the runner completes its operations as aborted, and its waker does nothing",
          "[event_sourcing][projection_runner]") {
    world w;
    auto runner = w.runner();
    std::optional<lb::error_code> ran, waited;
    runner->async_run([&](lb::error_code e) { ran = e; });
    runner->async_wait(1, 1h, [&](lb::error_code e) { waited = e; });
    w.settle();
    auto wake = runner->waker();
    runner.reset();
    wake();
    w.settle();
    REQUIRE(ran);
    CHECK(*ran == boost::asio::error::operation_aborted);
    REQUIRE(waited);
    CHECK(*waited == boost::asio::error::operation_aborted);
}

TEST_CASE("a runner that halts at a failpoint in async_run does nothing more",
          "[event_sourcing][projection_runner]") {
    if constexpr (!lb::failpoints_enabled) {
        SUCCEED("failpoints are not compiled in");
        return;
    }
    world w;
    w.append("account-1", 1);
    auto runner = w.runner({.name = "balances",
                            .batch = 10,
                            .on_batch = {},
                            .failpoint = [](lb::failpoint p, const lb::message_id&) {
                                return p == lb::failpoint::after_projection_apply_before_commit;
                            }});
    runner->async_run([](lb::error_code) {});
    w.io.restart();
    CHECK_THROWS_AS(w.io.poll(), lb::failpoint_halt);
    w.append("account-1", 2);
    runner->notify();
    w.settle(); // the dead runner applies nothing, and throws nothing
    CHECK(w.checkpoint() == 0);
    CHECK(w.read_model.balance().empty());
}

TEST_CASE("a projection without a name is refused", "[event_sourcing][projection_runner]") {
    world w;
    CHECK_THROWS_AS(w.runner({.name = ""}), lb::error);
}

} // namespace unit_event_sourcing_projection_runner
