// SPDX-License-Identifier: BSL-1.0
// outbox_relay over in_memory_outbox_store, in_memory::transport and the in-memory broker, on a
// single-threaded io_context and a virtual clock: deterministic, every loop bounded, and time
// only moves when a test moves it (to the next deadline, within a limit).

#include <letterbox/outbox/outbox_relay.hpp>

#include <letterbox/detail/unique_function.hpp>
#include <letterbox/error.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>
#include <letterbox/outbox/relay_counters.hpp>
#include <letterbox/outbox/relay_options.hpp>
#include <letterbox/outbox/relay_point.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/steady_clock.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/transport.hpp>
#include <letterbox/virtual_clock.hpp>

#include "support/outbox_store_spy.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace unit_outbox_outbox_relay {

namespace {

using namespace std::chrono_literals;
using letterbox::errc;
using letterbox::message_id;
using letterbox::outbox_status;
using letterbox::relay_point;
namespace in_memory = letterbox::in_memory;

using relay = letterbox::outbox_relay<letterbox::in_memory_outbox_store,
                                      letterbox::in_memory::transport, letterbox::virtual_clock>;

constexpr const char* exchange_name = "orders";
constexpr const char* queue_name = "orders.all";
constexpr const char* unroutable_key = "nowhere.at.all";

/// Options for tests: fixed seed, one-second polls, short back-offs, no purge.
letterbox::relay_options test_options(std::string owner = "relay-a") {
    letterbox::relay_options o;
    o.owner = std::move(owner);
    o.batch_size = 100;
    o.window = 64;
    o.lease = 30s;
    o.poll_interval = 1s;
    o.row_retry = {1s, 2.0, 1min, 0.0};
    o.max_attempts = 5;
    o.transport_retry = {100ms, 2.0, 5s, 0.2};
    o.stop_timeout = 5s;
    o.retention = std::nullopt;
    o.seed = 1234;
    return o;
}

/// A broker with a topic exchange `orders` bound to the queue `orders.all` by `order.#`, a
/// transport, an in-memory outbox, and bounded ways to drive them.
struct world {
    boost::asio::io_context io;
    letterbox::virtual_clock clock;
    in_memory::broker broker{io.get_executor(), clock};
    letterbox::in_memory::transport transport{broker, "relay"};
    letterbox::in_memory_outbox_store store;
    letterbox::message_id_generator ids{99};
    std::vector<message_id> rows; // every row added, in order

    world() {
        auto conn = broker.connect("setup");
        auto ch = conn.open_channel();
        letterbox::topology::exchange x;
        x.name = exchange_name;
        x.type = letterbox::topology::exchange_type::topic;
        REQUIRE_FALSE(ch.exchange_declare(x));
        letterbox::topology::queue q;
        q.name = queue_name;
        REQUIRE_FALSE(ch.queue_declare(q));
        REQUIRE_FALSE(ch.queue_bind(queue_name, exchange_name, "order.#"));
        conn.close();
    }

    /// Runs every ready handler (and those they post); fails if that does not end.
    std::size_t run_ready(std::size_t bound = 500'000) {
        io.restart();
        std::size_t n = 0;
        while (n < bound && io.poll_one() != 0)
            ++n;
        REQUIRE(n < bound);
        return n;
    }

    /// Runs until `done()` holds, moving virtual time to the next deadline whenever nothing is
    /// ready, but never further than `limit` from now. Returns the last `done()`.
    bool run_until(const std::function<bool()>& done, std::chrono::nanoseconds limit = 10min) {
        const auto end = clock.now() + limit;
        for (int steps = 0; steps < 100'000; ++steps) {
            run_ready();
            if (done())
                return true;
            const auto next = clock.next_deadline();
            if (!next || *next > end)
                return false;
            clock.advance_to(*next);
        }
        FAIL("run_until: too many steps");
        return false;
    }

    /// Runs for `d` of virtual time (everything due in it happens).
    void run_for(std::chrono::nanoseconds d) {
        const auto end = clock.now() + d;
        run_until([] { return false; }, d);
        clock.advance_to(end);
        run_ready();
    }

    /// Adds one row in its own unit of work: an event of `aggregate` (empty: unordered) with
    /// the body "<aggregate>:<index>".
    message_id add(const std::string& aggregate, int index = 0,
                   std::string routing_key = "order.created",
                   std::function<void()> on_commit = {}) {
        letterbox::in_memory_unit_of_work uow;
        letterbox::outbox_entry e;
        e.msg.id = ids();
        e.msg.type = "order.event";
        e.msg.exchange = exchange_name;
        e.msg.routing_key = std::move(routing_key);
        e.msg.body = aggregate + ":" + std::to_string(index);
        e.aggregate_type = "order";
        e.aggregate_id = aggregate;
        REQUIRE_FALSE(store.add(uow, e, clock.wall_now()));
        if (on_commit)
            REQUIRE_FALSE(uow.on_commit(std::move(on_commit)));
        REQUIRE_FALSE(uow.commit());
        rows.push_back(e.msg.id);
        return e.msg.id;
    }

    std::vector<message_id> add_many(int n, const std::string& aggregate = {}) {
        std::vector<message_id> out;
        for (int i = 0; i < n; ++i)
            out.push_back(add(aggregate, i));
        return out;
    }

    letterbox::outbox_record row(const message_id& id) {
        std::error_code ec;
        auto r = store.find(id, ec);
        REQUIRE_FALSE(ec);
        REQUIRE(r);
        return *r;
    }

    std::size_t count(outbox_status status) {
        std::error_code ec;
        letterbox::outbox_query q;
        q.status = status;
        q.limit = 1'000'000;
        auto rows = store.list(q, ec);
        REQUIRE_FALSE(ec);
        return rows.size();
    }

    bool all_published(std::size_t n) { return count(outbox_status::published) == n; }

    /// Takes every message waiting in `orders.all` (auto-ack, on a connection of its own).
    std::vector<letterbox::message> take_all() {
        auto conn = broker.connect("observer");
        auto ch = conn.open_channel();
        std::vector<letterbox::message> out;
        for (;;) {
            std::error_code ec;
            auto d = ch.basic_get(queue_name, ec, true);
            REQUIRE_FALSE(ec);
            if (!d)
                break;
            out.push_back(*d->msg);
        }
        conn.close();
        return out;
    }

    /// Deliveries per message id of what is waiting in the queue.
    std::map<message_id, int> deliveries_by_id() {
        std::map<message_id, int> n;
        for (const auto& m : take_all())
            ++n[m.id];
        return n;
    }
};

/// The outcome of `async_run`.
struct run_result {
    std::optional<std::error_code> ec;
    bool done() const { return ec.has_value(); }
};

template <class Relay>
void start(Relay& r, run_result& result) {
    r.async_run([&result](std::error_code ec) { result.ec = ec; });
}

/// `start`, with `signal`'s slot bound to the run's token.
template <class Relay>
void start(Relay& r, run_result& result, boost::asio::cancellation_signal& signal) {
    r.async_run(boost::asio::bind_cancellation_slot(
        signal.slot(), [&result](std::error_code ec) { result.ec = ec; }));
}

/// A failpoint hook that records every point it sees (and halts nothing).
struct trace {
    struct entry {
        relay_point point;
        message_id id;
        std::chrono::nanoseconds at;
        friend bool operator==(const entry&, const entry&) = default;
    };
    std::vector<entry> entries;

    std::function<bool(relay_point, const letterbox::outbox_record&)>
    hook(letterbox::virtual_clock& clock) {
        return [this, &clock](relay_point p, const letterbox::outbox_record& r) {
            entries.push_back({p, r.msg.id, clock.now().time_since_epoch()});
            return false;
        };
    }
    std::vector<std::chrono::nanoseconds> times(relay_point p) const {
        std::vector<std::chrono::nanoseconds> out;
        for (const auto& e : entries)
            if (e.point == p)
                out.push_back(e.at);
        return out;
    }
    std::size_t count(relay_point p) const { return times(p).size(); }
};

/// A transport that forwards to an in_memory::transport but, while `hold` is set, keeps the
/// completions of publishes instead of delivering them: a confirm that never comes.
struct holding_transport {
    using transport_concept = letterbox::transport_tag;
    using executor_type = letterbox::in_memory::transport::executor_type;

    letterbox::in_memory::transport* inner;
    bool hold = false;
    std::vector<letterbox::detail::unique_function<void(std::error_code)>> held{};

    executor_type get_executor() const { return inner->get_executor(); }
    template <class Token>
    auto async_declare(const letterbox::topology::exchange& x, Token&& t) {
        return inner->async_declare(x, std::forward<Token>(t));
    }
    template <class Token>
    auto async_declare(const letterbox::topology::queue& q, Token&& t) {
        return inner->async_declare(q, std::forward<Token>(t));
    }
    template <class Token>
    auto async_bind(const letterbox::topology::binding& b, Token&& t) {
        return inner->async_bind(b, std::forward<Token>(t));
    }
    template <class Token>
    auto async_publish(const letterbox::message& m, Token&& token) {
        return boost::asio::async_initiate<Token, void(std::error_code)>(
            [this](auto handler, letterbox::message msg) {
                inner->async_publish(msg,
                                     [this, h = std::move(handler)](std::error_code ec) mutable {
                                         if (hold)
                                             held.emplace_back(std::move(h));
                                         else
                                             std::move(h)(ec);
                                     });
            },
            token, m);
    }
    template <class Token>
    auto async_consume(const letterbox::consume_options& o,
                       std::function<void(letterbox::delivery)> f, Token&& t) {
        return inner->async_consume(o, std::move(f), std::forward<Token>(t));
    }
    template <class Token>
    auto async_cancel(const std::string& tag, Token&& t) {
        return inner->async_cancel(tag, std::forward<Token>(t));
    }
    template <class Token>
    auto async_ack(const letterbox::delivery& d, Token&& t) {
        return inner->async_ack(d, std::forward<Token>(t));
    }
    template <class Token>
    auto async_nack(const letterbox::delivery& d, bool requeue, Token&& t) {
        return inner->async_nack(d, requeue, std::forward<Token>(t));
    }
    template <class Token>
    auto async_reject(const letterbox::delivery& d, bool requeue, Token&& t) {
        return inner->async_reject(d, requeue, std::forward<Token>(t));
    }
    template <class Token>
    auto async_close(Token&& t) {
        return inner->async_close(std::forward<Token>(t));
    }
};
static_assert(letterbox::transport<holding_transport>);

/// An in_memory_outbox_store behind a spy that counts the marks. It models
/// `outbox_batch_settler` only when `Batch` is true; otherwise the relay marks row by row.
template <bool Batch>
struct counting_store : test_support::outbox_store_spy<letterbox::in_memory_outbox_store, Batch> {
    std::size_t single_marks = 0;
    std::size_t batch_marks = 0;
    std::size_t batch_rows = 0;
    std::size_t largest_batch = 0;

    explicit counting_store(letterbox::in_memory_outbox_store* inner)
        : test_support::outbox_store_spy<letterbox::in_memory_outbox_store, Batch>{inner} {
        this->before = [this](test_support::outbox_call call, std::size_t rows) {
            if (call == test_support::outbox_call::mark_one) {
                ++single_marks;
            } else if (call == test_support::outbox_call::mark_batch) {
                ++batch_marks;
                batch_rows += rows;
                largest_batch = std::max(largest_batch, rows);
            }
        };
    }
    counting_store(const counting_store&) = delete;
    counting_store& operator=(const counting_store&) = delete;
};
static_assert(letterbox::outbox_store<counting_store<true>>);
static_assert(letterbox::outbox_batch_settler<counting_store<true>>);
static_assert(letterbox::outbox_store<counting_store<false>>);
static_assert(!letterbox::outbox_batch_settler<counting_store<false>>);

template <bool Batch>
using counting_relay =
    letterbox::outbox_relay<counting_store<Batch>, letterbox::in_memory::transport,
                            letterbox::virtual_clock>;

} // namespace

TEST_CASE("outbox_relay constrains its parameters by the concepts", "[outbox][outbox_relay]") {
    STATIC_REQUIRE(letterbox::outbox_store<letterbox::in_memory_outbox_store>);
    STATIC_REQUIRE(letterbox::transport<letterbox::in_memory::transport>);
    STATIC_REQUIRE(letterbox::clock<letterbox::virtual_clock>);
    STATIC_REQUIRE(std::is_constructible_v<relay, letterbox::in_memory_outbox_store&,
                                           letterbox::in_memory::transport&,
                                           letterbox::virtual_clock&, letterbox::relay_options>);
}

TEST_CASE("relay_options: defaults, a unique owner, and invalid values refused",
          "[outbox][outbox_relay]") {
    const letterbox::relay_options a, b;
    CHECK(a.owner.rfind("relay-", 0) == 0);
    CHECK(a.owner.size() == 6 + 36);
    CHECK(a.owner != b.owner);
    CHECK(a.batch_size == 100);
    CHECK(a.window == 64);
    CHECK(a.lease == 30s);
    CHECK(a.poll_interval == 1s);
    CHECK(a.max_attempts == 10);
    CHECK(a.retention == std::chrono::milliseconds(7 * 24h));
    CHECK_FALSE(a.seed);
    CHECK_FALSE(a.failpoint);
    CHECK(letterbox::to_string(relay_point::after_publish_sent) == "after_publish_sent");

    world w;
    auto refused = [&](auto change) {
        auto o = test_options();
        change(o);
        try {
            relay r(w.store, w.transport, w.clock, o);
        } catch (const letterbox::error& e) {
            return e.code() == errc::precondition_failed;
        }
        return false;
    };
    CHECK(refused([](auto& o) { o.owner.clear(); }));
    CHECK(refused([](auto& o) { o.window = 0; }));
    CHECK(refused([](auto& o) { o.batch_size = 0; }));
    CHECK(refused([](auto& o) { o.lease = 0s; }));
    CHECK(refused([](auto& o) { o.poll_interval = 0s; }));
    CHECK(refused([](auto& o) { o.max_attempts = 0; }));
    CHECK(refused([](auto& o) { o.row_retry.multiplier = 0.5; }));
    CHECK(refused([](auto& o) { o.transport_retry.jitter = 1.0; }));
    CHECK(refused([](auto& o) { o.transport_retry.max = 1ms; }));
    // Waits become nanosecond deadlines: "no cap" spelled as a huge duration is refused.
    CHECK(refused([](auto& o) { o.transport_retry.max = std::chrono::milliseconds::max(); }));
    CHECK(refused([](auto& o) { o.lease = std::chrono::hours(24 * 366); }));
    CHECK_FALSE(refused([](auto&) {}));
}

TEST_CASE("the relay publishes 1000 rows pipelined, each marked once and delivered once",
          "[outbox][outbox_relay]") {
    world w;
    const auto ids = w.add_many(1000);
    relay r(w.store, w.transport, w.clock, test_options());
    run_result result;
    start(r, result);
    const auto t0 = w.clock.now();
    w.run_ready();

    // No time had to pass: full batches are claimed back to back.
    CHECK(w.clock.now() == t0);
    CHECK(w.all_published(1000));
    const auto c = r.counters();
    CHECK(c.published == 1000);
    CHECK(c.claimed == 1000);
    CHECK(c.publish_attempts == 1000);
    CHECK(c.claims == 11); // ten full batches, then an empty one
    CHECK(c.failed == 0);
    CHECK(c.transport_failures == 0);
    CHECK(c.in_flight == 0);
    // Pipelined: the whole window was in flight at once, not one round trip per row.
    CHECK(c.max_in_flight == 64);
    CHECK(w.broker.counters().confirms_acked == 1000);

    const auto delivered = w.deliveries_by_id();
    REQUIRE(delivered.size() == 1000);
    for (const auto& id : ids)
        CHECK(delivered.at(id) == 1);
    for (const auto& id : ids)
        CHECK(w.row(id).published_at == w.clock.wall_now());

    r.stop();
    w.run_ready();
    REQUIRE(result.done());
    CHECK_FALSE(*result.ec);
}

TEST_CASE("cancelling async_run stops the relay gracefully and completes with operation_canceled",
          "[outbox][outbox_relay][cancellation]") {
    world w;
    w.add_many(10);
    relay r(w.store, w.transport, w.clock, test_options());
    boost::asio::cancellation_signal signal;
    run_result result;
    start(r, result, signal);
    w.run_ready();
    CHECK(w.all_published(10));
    CHECK_FALSE(result.done());
    // A partial or total signal asks for what a stop cannot promise: ignored.
    signal.emit(boost::asio::cancellation_type::partial);
    w.run_ready();
    CHECK_FALSE(result.done());

    signal.emit(boost::asio::cancellation_type::terminal);
    w.run_ready();
    REQUIRE(result.done());
    CHECK(*result.ec == std::errc::operation_canceled);
    CHECK_FALSE(signal.slot().has_handler());
    // Stopped: a row added now stays pending.
    w.add("late");
    w.run_for(5s);
    CHECK(w.count(outbox_status::pending) == 1);
}

TEST_CASE("async_run cancelled before it starts runs nothing",
          "[outbox][outbox_relay][cancellation]") {
    world w;
    w.add_many(3);
    relay r(w.store, w.transport, w.clock, test_options());
    boost::asio::cancellation_signal signal;
    run_result result;
    start(r, result, signal);
    signal.emit(boost::asio::cancellation_type::terminal);
    w.run_ready();
    REQUIRE(result.done());
    CHECK(*result.ec == std::errc::operation_canceled);
    CHECK(r.counters().claims == 0);
    CHECK(w.count(outbox_status::pending) == 3);
}

namespace {

// Consumes the test queue into `got` from now on (the delivery handler keeps a reference).
void consume_into(world& w, std::vector<letterbox::delivery>& got) {
    std::optional<std::error_code> consumed;
    letterbox::consume_options o;
    o.queue = queue_name;
    w.transport.async_consume(
        o, [&got](letterbox::delivery d) { got.push_back(std::move(d)); },
        [&](std::error_code ec, std::string) { consumed = ec; });
    w.run_ready();
    REQUIRE(consumed);
    REQUIRE_FALSE(*consumed);
}

} // namespace

TEST_CASE("the delivered message is the row's message, with its aggregate named as its group: "
          "the message id is published unchanged",
          "[outbox][outbox_relay]") {
    world w;
    letterbox::in_memory_unit_of_work uow;
    letterbox::outbox_entry e;
    e.msg.id = w.ids();
    e.msg.type = "order.placed";
    e.msg.exchange = exchange_name;
    e.msg.routing_key = "order.placed";
    e.msg.body = R"({"order":42})";
    e.msg.properties.content_type = "application/json";
    e.msg.properties.correlation_id = "corr-1";
    e.msg.headers.set("x-tenant", std::string("acme"));
    e.aggregate_type = "order";
    e.aggregate_id = "42";
    REQUIRE_FALSE(w.store.add(uow, e, w.clock.wall_now()));
    REQUIRE_FALSE(uow.commit());

    std::vector<letterbox::delivery> got;
    consume_into(w, got);

    relay r(w.store, w.transport, w.clock, test_options());
    run_result result;
    start(r, result);
    REQUIRE(w.run_until([&] { return got.size() == 1; }));
    CHECK(got[0].msg.id == e.msg.id);
    // The relay adds one header: the group a consumer with message groups keeps in order.
    auto expected = e.msg;
    expected.headers.set(letterbox::headers::group, std::string("order/42"));
    CHECK(got[0].msg == expected);
    CHECK(w.row(e.msg.id).status == outbox_status::published);
}

TEST_CASE("the relay keeps a group the producer named, and names none for an event without an "
          "aggregate",
          "[outbox][outbox_relay]") {
    world w;
    letterbox::in_memory_unit_of_work uow;
    letterbox::outbox_entry named;
    named.msg.id = w.ids();
    named.msg.exchange = exchange_name;
    named.msg.routing_key = "order.placed";
    named.msg.headers.set(letterbox::headers::group, std::string("customer-7"));
    named.aggregate_type = "order";
    named.aggregate_id = "42";
    letterbox::outbox_entry loose;
    loose.msg.id = w.ids();
    loose.msg.exchange = exchange_name;
    loose.msg.routing_key = "order.placed";
    REQUIRE_FALSE(w.store.add(uow, named, w.clock.wall_now()));
    REQUIRE_FALSE(w.store.add(uow, loose, w.clock.wall_now()));
    REQUIRE_FALSE(uow.commit());

    std::vector<letterbox::delivery> got;
    consume_into(w, got);
    relay r(w.store, w.transport, w.clock, test_options());
    run_result result;
    start(r, result);
    REQUIRE(w.run_until([&] { return got.size() == 2; }));
    CHECK(got[0].msg.headers.get<std::string>(letterbox::headers::group) == "customer-7");
    CHECK_FALSE(got[1].msg.headers.contains(letterbox::headers::group));
}

TEST_CASE("an unroutable row is retried with back-off, then parked with the no_route reason",
          "[outbox][outbox_relay]") {
    world w;
    const auto id = w.add("o-1", 0, unroutable_key);
    const auto fine = w.add("o-2", 0);
    auto o = test_options();
    o.max_attempts = 4;
    trace t;
    o.failpoint = t.hook(w.clock);
    relay r(w.store, w.transport, w.clock, o);
    run_result result;
    start(r, result);
    const auto t0 = w.clock.now().time_since_epoch();

    REQUIRE(w.run_until([&] { return w.row(id).status == outbox_status::parked; }));
    w.run_for(10min); // and nothing more happens to it

    const auto parked = w.row(id);
    CHECK(parked.attempts == 4);
    CHECK(parked.last_error.find("no route") != std::string::npos);
    CHECK(parked.lease_owner.empty());
    CHECK_FALSE(parked.published_at);
    CHECK(w.row(fine).status == outbox_status::published);

    // Attempts at 0, 1, 3 and 7 seconds: the row back-off (1 s, doubling), not the poll.
    std::vector<std::chrono::nanoseconds> attempts;
    for (const auto& e : t.entries)
        if (e.point == relay_point::before_publish && e.id == id)
            attempts.push_back(e.at - t0);
    CHECK(attempts == std::vector<std::chrono::nanoseconds>{0s, 1s, 3s, 7s});

    const auto c = r.counters();
    CHECK(c.returned == 4);
    CHECK(c.failed == 4);
    CHECK(c.parked == 1);
    CHECK(c.published == 1);
    CHECK(c.transport_failures == 0);
    CHECK(w.broker.counters().returned == 4);
    CHECK(w.deliveries_by_id().size() == 1);
}

TEST_CASE("a nacked publish is a row failure with its reason, and is published on retry",
          "[outbox][outbox_relay]") {
    world w;
    const auto id = w.add("o-1");
    w.broker.nack_nth_publish(1);
    trace t;
    auto o = test_options();
    o.failpoint = t.hook(w.clock);
    relay r(w.store, w.transport, w.clock, o);
    run_result result;
    start(r, result);
    const auto t0 = w.clock.now().time_since_epoch();

    w.run_ready();
    auto failed = w.row(id);
    CHECK(failed.status == outbox_status::pending);
    CHECK(failed.attempts == 1);
    CHECK(failed.last_error.find("nack") != std::string::npos);
    CHECK(failed.last_failure_at == w.clock.wall_now());
    CHECK(failed.next_attempt_at == w.clock.wall_now() + 1s);

    REQUIRE(w.run_until([&] { return w.all_published(1); }));
    CHECK(w.clock.now().time_since_epoch() - t0 == 1s);
    CHECK(w.row(id).attempts == 1);
    const auto c = r.counters();
    CHECK(c.nacked == 1);
    CHECK(c.failed == 1);
    CHECK(c.parked == 0);
    CHECK(c.published == 1);
    CHECK(t.count(relay_point::before_publish) == 2);
    CHECK(w.deliveries_by_id().at(id) == 1);
}

TEST_CASE("while the broker is down the relay backs off without spinning, parks nothing, and "
          "publishes everything when it returns",
          "[outbox][outbox_relay]") {
    world w;
    const auto ids = w.add_many(50);
    trace t;
    auto o = test_options();
    o.failpoint = t.hook(w.clock);
    relay r(w.store, w.transport, w.clock, o);
    run_result result;
    w.broker.go_down();
    start(r, result);
    const auto t0 = w.clock.now().time_since_epoch();

    w.run_for(10min);

    const auto during = r.counters();
    CHECK(during.published == 0);
    CHECK(during.failed == 0);
    CHECK(during.parked == 0);
    CHECK(w.count(outbox_status::parked) == 0);
    // The first window failed at once and caused one back-off; after that, one probe per
    // back-off: 100 ms doubling (less up to 20 % jitter) up to 5 s, so 120 to 165 back-offs
    // in 10 minutes.
    CHECK(during.transport_failures == during.publish_attempts);
    CHECK(during.backoffs >= 120);
    CHECK(during.backoffs <= 165);
    CHECK(during.publish_attempts >= 49 + during.backoffs);
    CHECK(during.publish_attempts <= 50 + during.backoffs);
    // Leases ran out every 30 s, so the held rows were dropped and claimed again: bounded too.
    CHECK(during.leases_expired > 0);
    CHECK(during.claims <= 25);
    CHECK(w.broker.refused_connections() <= during.publish_attempts + 1);

    // The schedule: each wait is the next back-off step, shortened by at most 20 %.
    const auto times = t.times(relay_point::before_publish);
    REQUIRE(times.size() == during.publish_attempts);
    REQUIRE(times.size() > 50);
    CHECK(times[49] == t0);
    for (std::size_t k = 1; 49 + k < times.size(); ++k) {
        const auto gap = times[49 + k] - times[49 + k - 1];
        const auto nominal = std::min<std::chrono::nanoseconds>(
            5s, 100ms * (std::int64_t{1} << std::min<std::size_t>(k - 1, 20)));
        INFO("probe " << k << " waited " << gap.count() << " ns");
        CHECK(gap <= nominal);
        CHECK(gap >= nominal * 8 / 10);
    }

    w.broker.come_back();
    REQUIRE(w.run_until([&] { return w.all_published(50); }, 10s));
    const auto c = r.counters();
    CHECK(c.published == 50);
    CHECK(c.failed == 0);
    CHECK(c.parked == 0);
    for (const auto& id : ids)
        CHECK(w.row(id).attempts == 0);
    const auto delivered = w.deliveries_by_id();
    CHECK(delivered.size() == 50);
    for (const auto& [id, n] : delivered)
        CHECK(n == 1);
}

TEST_CASE("the broker going down mid-window: nothing lost, nothing parked",
          "[outbox][outbox_relay]") {
    world w;
    const auto ids = w.add_many(200);
    auto o = test_options();
    int sent = 0;
    o.failpoint = [&](relay_point p, const letterbox::outbox_record&) {
        if (p == relay_point::after_mark && ++sent == 40)
            w.broker.go_down();
        return false;
    };
    relay r(w.store, w.transport, w.clock, o);
    run_result result;
    start(r, result);
    w.run_for(2min);
    CHECK(r.counters().transport_failures > 0);
    CHECK(w.count(outbox_status::published) < 200);
    w.broker.come_back();
    REQUIRE(w.run_until([&] { return w.all_published(200); }, 1min));
    CHECK(w.count(outbox_status::parked) == 0);
    CHECK(r.counters().failed == 0);
    const auto delivered = w.deliveries_by_id();
    CHECK(delivered.size() == 200); // at least once each (an unknown outcome may duplicate)
}

TEST_CASE("the same seed gives the same trace", "[outbox][outbox_relay]") {
    auto scenario = [](std::uint64_t seed) {
        world w;
        w.add_many(20);
        trace t;
        auto o = test_options();
        o.seed = seed;
        o.failpoint = t.hook(w.clock);
        relay r(w.store, w.transport, w.clock, o);
        run_result result;
        w.broker.go_down();
        start(r, result);
        w.run_for(1min);
        w.broker.come_back();
        REQUIRE(w.run_until([&] { return w.all_published(20); }, 1min));
        return t.entries;
    };
    const auto first = scenario(7);
    CHECK(first == scenario(7));
    CHECK(first != scenario(8)); // the jitter differs
}

TEST_CASE("events of one aggregate are delivered in order, with failures injected",
          "[outbox][outbox_relay]") {
    world w;
    constexpr int aggregates = 4;
    constexpr int events = 8;
    for (int i = 0; i < events; ++i)
        for (int a = 0; a < aggregates; ++a)
            w.add("agg-" + std::to_string(a), i);

    auto o = test_options();
    int attempt = 0;
    o.failpoint = [&](relay_point p, const letterbox::outbox_record&) {
        if (p != relay_point::before_publish)
            return false;
        switch (++attempt) {
        case 3:
        case 9:
            w.broker.nack_nth_publish(1); // this publish is refused
            break;
        case 6:
            w.broker.lose_nth_confirm(1); // stored, but the outcome is unknown
            break;
        case 14:
            w.broker.sever_all();
            break;
        case 20:
            w.broker.restart();
            break;
        default:
            break;
        }
        return false;
    };
    relay r(w.store, w.transport, w.clock, o);
    run_result result;
    start(r, result);
    REQUIRE(w.run_until([&] { return w.all_published(aggregates * events); }));
    w.run_ready();
    CHECK(r.counters().nacked == 2);
    CHECK(r.counters().transport_failures > 0);

    // The queue keeps the order messages reached it (no consumer: nothing is requeued).
    std::map<std::string, std::vector<int>> seen;
    for (const auto& m : w.take_all()) {
        const auto& b = m.body;
        const auto colon = b.find(':');
        seen[b.substr(0, colon)].push_back(std::stoi(b.substr(colon + 1)));
    }
    REQUIRE(seen.size() == aggregates);
    for (const auto& [aggregate, order] : seen) {
        INFO(aggregate);
        // Never a later event before an earlier one; a duplicate only right after itself.
        CHECK(std::is_sorted(order.begin(), order.end()));
        std::vector<int> first(order.begin(), order.end());
        first.erase(std::unique(first.begin(), first.end()), first.end());
        std::vector<int> expected(events);
        for (int i = 0; i < events; ++i)
            expected[static_cast<std::size_t>(i)] = i;
        CHECK(first == expected);
    }
}

TEST_CASE("wake publishes a committed row at once, the poll interval is the fallback",
          "[outbox][outbox_relay]") {
    world w;
    auto o = test_options();
    o.poll_interval = 1h;
    relay r(w.store, w.transport, w.clock, o);
    run_result result;
    start(r, result);
    w.run_ready();
    const auto t0 = w.clock.now();

    SECTION("a row committed with on_commit(relay.waker()) is published without waiting") {
        const auto id = w.add("o-1", 0, "order.created", r.waker());
        w.run_ready();
        CHECK(w.clock.now() == t0);
        CHECK(w.row(id).status == outbox_status::published);
        // wake() itself, from the test, works the same way.
        const auto id2 = w.add("o-2");
        r.wake();
        w.run_ready();
        CHECK(w.row(id2).status == outbox_status::published);
    }
    SECTION("a row added without a wake is published by the next poll") {
        const auto id = w.add("o-1");
        w.run_ready();
        w.run_for(59min);
        CHECK(w.row(id).status == outbox_status::pending);
        REQUIRE(w.run_until([&] { return w.row(id).status == outbox_status::published; }));
        CHECK(w.clock.now() - t0 == 1h);
    }
    SECTION("a waker outliving its relay does nothing") {
        auto waker = r.waker();
        {
            relay other(w.store, w.transport, w.clock, test_options("relay-b"));
            waker = other.waker();
        }
        // Called after its relay is gone, it reaches no relay: not freed memory (ASan), and not
        // the relay still running, which leaves a row added without a wake to its next poll.
        const auto id = w.add("o-1");
        waker();
        w.run_ready();
        CHECK(w.row(id).status == outbox_status::pending);
        r.waker()();
        w.run_ready();
        CHECK(w.row(id).status == outbox_status::published);
    }
}

TEST_CASE("two relays on one store publish each row once while both are healthy",
          "[outbox][outbox_relay]") {
    world w;
    const auto ids = w.add_many(300);
    letterbox::in_memory::transport transport_b(w.broker, "relay-b");
    auto oa = test_options("relay-a");
    auto ob = test_options("relay-b");
    oa.batch_size = ob.batch_size = 10;
    oa.window = ob.window = 4;
    relay a(w.store, w.transport, w.clock, oa);
    relay b(w.store, transport_b, w.clock, ob);
    run_result ra, rb;
    start(a, ra);
    start(b, rb);
    REQUIRE(w.run_until([&] { return w.all_published(300); }));

    CHECK(a.counters().published > 0);
    CHECK(b.counters().published > 0);
    CHECK(a.counters().published + b.counters().published == 300);
    CHECK(a.counters().lease_lost + b.counters().lease_lost == 0);
    const auto delivered = w.deliveries_by_id();
    CHECK(delivered.size() == 300);
    for (const auto& [id, n] : delivered)
        CHECK(n == 1);
}

TEST_CASE("when one of two relays dies mid-flight, the other publishes its rows after the "
          "lease expires",
          "[outbox][outbox_relay]") {
    world w;
    w.add_many(100);
    letterbox::in_memory::transport transport_b(w.broker, "relay-b");
    auto oa = test_options("relay-a");
    auto ob = test_options("relay-b");
    oa.batch_size = ob.batch_size = 10;
    oa.window = ob.window = 4;
    std::set<message_id> sent_by_a, marked_by_a;
    const bool abort_by_destruction = GENERATE(false, true);
    INFO((abort_by_destruction ? "destroyed" : "halted at a failpoint"));
    oa.failpoint = [&](relay_point p, const letterbox::outbox_record& row) {
        if (p == relay_point::after_publish_sent)
            sent_by_a.insert(row.msg.id);
        if (p == relay_point::after_mark)
            marked_by_a.insert(row.msg.id);
        return !abort_by_destruction && sent_by_a.size() == 15 &&
               p == relay_point::after_publish_sent;
    };
    std::optional<relay> a;
    a.emplace(w.store, w.transport, w.clock, oa);
    relay b(w.store, transport_b, w.clock, ob);
    run_result ra, rb;
    start(*a, ra);
    start(b, rb);
    const auto t0 = w.clock.now();
    if (abort_by_destruction) {
        w.io.restart();
        for (int i = 0; i < 60 && w.io.poll_one() != 0; ++i) {
        }
        REQUIRE(sent_by_a.size() > marked_by_a.size()); // mid-flight
        a.reset();
        w.run_ready();
        REQUIRE(ra.done());
        CHECK(*ra.ec == errc::closed);
    } else {
        w.run_ready();
        REQUIRE(ra.done());
        CHECK(*ra.ec == errc::internal_error);
    }
    // B cannot take A's leased rows before the lease expires.
    const auto stuck = 100 - w.count(outbox_status::published);
    CHECK(stuck > 0);
    REQUIRE(w.run_until([&] { return w.all_published(100); }));
    CHECK(w.clock.now() - t0 >= 30s);
    CHECK(w.clock.now() - t0 <= 32s);

    const auto delivered = w.deliveries_by_id();
    CHECK(delivered.size() == 100);
    for (const auto& [id, n] : delivered) {
        // A duplicate only for a row A had sent but not marked.
        if (n > 1) {
            CHECK(n == 2);
            CHECK(sent_by_a.contains(id));
            CHECK_FALSE(marked_by_a.contains(id));
        }
    }
}

TEST_CASE("a relay whose lease was taken over counts lease_lost when its late confirm arrives",
          "[outbox][outbox_relay]") {
    world w;
    const auto id = w.add("o-1");
    holding_transport held{&w.transport};
    held.hold = true;
    using holding_relay = letterbox::outbox_relay<letterbox::in_memory_outbox_store,
                                                  holding_transport, letterbox::virtual_clock>;
    auto slow_options = test_options("relay-slow");
    slow_options.poll_interval = 1h; // it will not claim the row again by itself
    holding_relay slow(w.store, held, w.clock, slow_options);
    run_result slow_result;
    start(slow, slow_result);
    w.run_ready();
    REQUIRE(held.held.size() == 1); // its confirm is stuck

    relay other(w.store, w.transport, w.clock, test_options("relay-other"));
    run_result other_result;
    start(other, other_result);
    // The other relay takes the row over once the lease expired, and publishes it.
    REQUIRE(w.run_until([&] { return w.all_published(1); }, 1min));
    CHECK(w.row(id).lease_owner.empty());
    CHECK(other.counters().published == 1);

    // The stuck confirm finally arrives: the mark is refused, counted, and nothing else.
    held.held.front()(std::error_code{});
    held.held.clear();
    w.run_ready();
    const auto c = slow.counters();
    CHECK(c.lease_lost == 1);
    CHECK(c.published == 0);
    CHECK(c.store_errors == 0);
    CHECK(c.in_flight == 0);
    CHECK(w.deliveries_by_id().at(id) == 2); // at-least-once: same id twice
}

TEST_CASE("a row whose lease expires while its publish is stuck is claimed and published again",
          "[outbox][outbox_relay]") {
    world w;
    const auto id = w.add("o-1");
    holding_transport held{&w.transport};
    held.hold = true;
    using holding_relay = letterbox::outbox_relay<letterbox::in_memory_outbox_store,
                                                  holding_transport, letterbox::virtual_clock>;
    holding_relay r(w.store, held, w.clock, test_options());
    run_result result;
    start(r, result);
    w.run_ready();
    REQUIRE(held.held.size() == 1);
    // At the first poll after the lease ran out, the relay claims its own row again and gives
    // up on the stuck publish: it publishes again instead of renewing the lease forever.
    REQUIRE(w.run_until([&] { return held.held.size() == 2; }, 1min));
    CHECK(w.clock.now().time_since_epoch() == 30s);
    CHECK(r.counters().leases_expired == 1);
    CHECK(r.counters().in_flight == 1);
    held.hold = false;
    for (auto& h : held.held)
        h(std::error_code{}); // the stale outcome is ignored, the new one marks the row
    held.held.clear();
    w.run_ready();
    CHECK(w.row(id).status == outbox_status::published);
    const auto c = r.counters();
    CHECK(c.published == 1);
    CHECK(c.lease_lost == 0);
    CHECK(c.in_flight == 0);
    CHECK(w.deliveries_by_id().at(id) == 2);
}

TEST_CASE("a relay halted at any crash point is replaced by a fresh one that publishes "
          "everything, each row marked once",
          "[outbox][outbox_relay]") {
    const auto point = GENERATE(relay_point::after_claim, relay_point::before_publish,
                                relay_point::after_publish_sent, relay_point::after_confirm,
                                relay_point::after_mark);
    const std::size_t window = GENERATE(std::size_t{1}, std::size_t{8});
    INFO("halt at " << letterbox::to_string(point) << ", window " << window);

    world w;
    constexpr std::size_t rows = 30;
    for (std::size_t i = 0; i < rows; ++i)
        w.add(i % 3 == 0 ? std::string() : "agg-" + std::to_string(i % 5), static_cast<int>(i));

    // Relay 1 halts the 4th time it reaches `point`.
    std::set<message_id> sent, marked;
    std::optional<message_id> halted_on;
    int reached = 0;
    auto o1 = test_options("relay-1");
    o1.window = window;
    o1.failpoint = [&](relay_point p, const letterbox::outbox_record& row) {
        if (p == point && ++reached == 4) {
            halted_on = row.msg.id;
            return true;
        }
        if (p == relay_point::after_publish_sent)
            sent.insert(row.msg.id);
        if (p == relay_point::after_mark)
            marked.insert(row.msg.id);
        return false;
    };
    letterbox::relay_counters c1;
    std::size_t published_by_1 = 0;
    {
        relay r1(w.store, w.transport, w.clock, o1);
        run_result result;
        start(r1, result);
        w.run_ready();
        REQUIRE(result.done());
        CHECK(*result.ec == errc::internal_error);
        c1 = r1.counters();
        // Halted: no further calls, even for outcomes that arrive later.
        const auto ops = w.store.operation_count();
        w.run_for(1s);
        CHECK(w.store.operation_count() == ops);
        published_by_1 = w.count(outbox_status::published);
    }
    REQUIRE(halted_on);
    if (point == relay_point::after_publish_sent)
        sent.insert(*halted_on);
    if (point == relay_point::after_confirm)
        sent.insert(*halted_on); // its publish was sent before the outcome came
    if (point == relay_point::after_mark)
        marked.insert(*halted_on);

    // A fresh relay (new owner, new connection) on the same store and broker.
    letterbox::in_memory::transport transport2(w.broker, "relay-2");
    relay r2(w.store, transport2, w.clock, test_options("relay-2"));
    run_result result2;
    start(r2, result2);
    REQUIRE(w.run_until([&] { return w.all_published(rows); }, 2min));
    const auto c2 = r2.counters();
    // Each row marked published exactly once, over both relays.
    CHECK(c1.published + c2.published == rows);
    // Relay 1's counter matches what the store has. Its marks go in batches, so a halt at
    // `after_mark` may come before the hooks of rows the same call marked: with a window of
    // one, a batch holds one row and the hooks match the counter exactly.
    CHECK(c1.published == published_by_1);
    CHECK(c1.published >= marked.size());
    if (window == 1)
        CHECK(c1.published == marked.size());
    CHECK(c2.lease_lost == 0);

    const auto delivered = w.deliveries_by_id();
    CHECK(delivered.size() == rows); // every row delivered at least once
    std::set<message_id> duplicated;
    for (const auto& [id, n] : delivered) {
        CHECK(n <= 2);
        if (n == 2)
            duplicated.insert(id);
    }
    // Duplicates only for rows whose publish was sent and not marked before the halt.
    for (const auto& id : duplicated) {
        CHECK(sent.contains(id));
        CHECK_FALSE(marked.contains(id));
    }
    if (window == 1) {
        // One row in flight at a time: exactly the halted row is duplicated, and only when
        // the halt came after its publish was sent and before it was marked.
        const bool after_send =
            point == relay_point::after_publish_sent || point == relay_point::after_confirm;
        CHECK(duplicated.size() == (after_send ? 1u : 0u));
        if (after_send && !duplicated.empty())
            CHECK(*duplicated.begin() == *halted_on);
    }
}

TEST_CASE("graceful stop waits for the publishes in flight and abandons the unsent rows",
          "[outbox][outbox_relay]") {
    world w;
    w.add_many(100);
    auto o = test_options("relay-1");
    o.batch_size = 50;
    o.window = 10;
    auto r = std::make_optional<relay>(w.store, w.transport, w.clock, o);
    run_result result;
    start(*r, result);
    // Run a few handlers: a batch is claimed and a window of publishes is under way.
    w.io.restart();
    for (int i = 0; i < 3 && w.io.poll_one() != 0; ++i) {
    }
    REQUIRE(r->counters().in_flight > 0);
    r->stop();
    r->stop(); // idempotent
    w.run_ready();
    REQUIRE(result.done());
    CHECK_FALSE(*result.ec);
    const auto c = r->counters();
    CHECK(c.in_flight == 0);
    CHECK(c.published == c.publish_attempts); // the window completed and was settled
    CHECK(c.abandoned == c.claimed - c.published);
    CHECK(c.abandoned > 0);
    const auto published = c.published;
    CHECK(w.count(outbox_status::published) == published);
    // Stopped: nothing more happens.
    w.run_for(1min);
    CHECK(r->counters().publish_attempts == c.publish_attempts);
    r.reset();

    // The abandoned rows are still pending and leased; the next relay takes them over.
    letterbox::in_memory::transport transport2(w.broker, "relay-2");
    relay r2(w.store, transport2, w.clock, test_options("relay-2"));
    run_result result2;
    start(r2, result2);
    REQUIRE(w.run_until([&] { return w.all_published(100); }, 2min));
    const auto delivered = w.deliveries_by_id();
    CHECK(delivered.size() == 100);
    for (const auto& [id, n] : delivered)
        CHECK(n == 1);
}

TEST_CASE("graceful stop gives up on a confirm that never comes after stop_timeout",
          "[outbox][outbox_relay]") {
    world w;
    const auto ids = w.add_many(3);
    holding_transport held{&w.transport};
    held.hold = true;
    auto o = test_options("relay-1");
    o.stop_timeout = 5s;
    using holding_relay = letterbox::outbox_relay<letterbox::in_memory_outbox_store,
                                                  holding_transport, letterbox::virtual_clock>;
    holding_relay r(w.store, held, w.clock, o);
    run_result result;
    start(r, result);
    w.run_ready();
    REQUIRE(r.counters().in_flight == 3);
    REQUIRE(held.held.size() == 3);
    const auto t0 = w.clock.now();
    r.stop();
    w.run_for(4s);
    CHECK_FALSE(result.done());
    REQUIRE(w.run_until([&] { return result.done(); }, 2s));
    CHECK(w.clock.now() - t0 == 5s);
    CHECK_FALSE(*result.ec);
    CHECK(r.counters().abandoned == 3);
    CHECK(r.counters().in_flight == 0);
    // Late confirms are ignored: the rows stay pending, leased to the stopped relay.
    for (auto& h : held.held)
        h(std::error_code{});
    held.held.clear();
    w.run_ready();
    for (const auto& id : ids) {
        const auto row = w.row(id);
        CHECK(row.status == outbox_status::pending);
        CHECK(row.lease_owner == "relay-1");
    }

    relay r2(w.store, w.transport, w.clock, test_options("relay-2"));
    run_result result2;
    start(r2, result2);
    REQUIRE(w.run_until([&] { return w.all_published(3); }, 1min));
    // Delivered twice (once by each relay), same message ids: an inbox absorbs them.
    for (const auto& [id, n] : w.deliveries_by_id())
        CHECK(n == 2);
}

TEST_CASE("async_run runs once, stop before run, and destruction, complete it",
          "[outbox][outbox_relay]") {
    world w;
    SECTION("stop before async_run: it completes at once with success") {
        relay r(w.store, w.transport, w.clock, test_options());
        r.stop();
        run_result result;
        start(r, result);
        w.run_ready();
        REQUIRE(result.done());
        CHECK_FALSE(*result.ec);
        CHECK(r.counters().claims == 0);
        run_result again;
        start(r, again);
        w.run_ready();
        REQUIRE(again.done());
        CHECK(*again.ec == errc::closed);
    }
    SECTION("a second async_run while running is refused") {
        relay r(w.store, w.transport, w.clock, test_options());
        run_result first, second;
        start(r, first);
        start(r, second);
        w.run_ready();
        REQUIRE(second.done());
        CHECK(*second.ec == errc::precondition_failed);
        CHECK_FALSE(first.done());
        r.stop();
        w.run_ready();
        REQUIRE(first.done());
        CHECK_FALSE(*first.ec);
    }
    SECTION("destroyed before it started: completes with closed") {
        run_result result;
        {
            relay r(w.store, w.transport, w.clock, test_options());
            start(r, result);
        }
        w.run_ready();
        REQUIRE(result.done());
        CHECK(*result.ec == errc::closed);
    }
}

TEST_CASE("the relay survives store failures on any operation and publishes everything once",
          "[outbox][outbox_relay]") {
    // Beast-style fault matrix: the n-th store operation from the relay's start fails once.
    auto scenario = [](std::optional<std::size_t> fail_at, std::size_t& operations) {
        world w;
        std::vector<message_id> ids;
        for (int i = 0; i < 12; ++i)
            ids.push_back(w.add(i % 2 == 0 ? std::string() : "agg-" + std::to_string(i % 3), i));
        const auto bad = w.add("agg-bad", 0, unroutable_key);
        auto o = test_options();
        o.batch_size = 5;
        o.window = 3;
        o.max_attempts = 2;
        relay r(w.store, w.transport, w.clock, o);
        const auto before = w.store.operation_count();
        if (fail_at)
            w.store.fail_nth(*fail_at);
        run_result result;
        start(r, result);
        // Watch the relay's counters, not the store: reading the store would count as an
        // operation and could take the injected failure.
        REQUIRE(w.run_until([&] {
            const auto c = r.counters();
            return c.published == 12 && c.parked == 1;
        }));
        operations = w.store.operation_count() - before;
        w.store.fail_nth(1'000'000); // disarmed, if the relay did not hit it
        CHECK(w.all_published(12));
        CHECK(w.row(bad).status == outbox_status::parked);
        const auto c = r.counters();
        CHECK(c.published == 12);
        CHECK(c.returned == 2); // a failed record_failure is retried, not the publish
        CHECK(c.store_errors == (fail_at ? 1u : 0u));
        CHECK(w.row(bad).attempts == 2);
        const auto delivered = w.deliveries_by_id();
        CHECK(delivered.size() == 12);
        for (const auto& [id, n] : delivered)
            CHECK(n == 1); // a failed mark is retried under the lease, not republished
    };
    std::size_t clean_ops = 0;
    scenario(std::nullopt, clean_ops);
    REQUIRE(clean_ops > 10);
    for (std::size_t n = 0; n < clean_ops; ++n) {
        INFO("store operation " << n << " of " << clean_ops << " fails");
        std::size_t ops = 0;
        scenario(n, ops);
    }
}

TEST_CASE("the relay purges published rows after the retention period", "[outbox][outbox_relay]") {
    world w;
    w.add_many(10);
    const auto bad = w.add("agg-bad", 0, unroutable_key);
    auto o = test_options();
    o.retention = 1min;
    o.purge_interval = 10s;
    o.max_attempts = 1;
    relay r(w.store, w.transport, w.clock, o);
    run_result result;
    start(r, result);
    w.run_ready();
    REQUIRE(w.all_published(10));
    w.run_for(60s);
    CHECK(w.count(outbox_status::published) == 10); // not older than a minute yet
    w.run_for(10s);
    CHECK(w.count(outbox_status::published) == 0);
    CHECK(r.counters().purged == 10);
    CHECK(w.row(bad).status == outbox_status::parked); // never purged
}

TEST_CASE("the lag counter reports the age of the oldest pending row", "[outbox][outbox_relay]") {
    world w;
    w.broker.go_down();
    auto o = test_options();
    relay r(w.store, w.transport, w.clock, o);
    run_result result;
    start(r, result);
    w.run_ready();
    CHECK(r.counters().lag == 0s);
    w.add_many(3);
    w.run_for(90s);
    CHECK(r.counters().lag >= 89s);
    CHECK(r.counters().lag <= 90s);
    w.broker.come_back();
    REQUIRE(w.run_until([&] { return w.all_published(3); }, 10s));
    w.run_for(1s);
    CHECK(r.counters().lag == 0s);
}

TEST_CASE("with the steady clock, wake, stop and counters work from another thread",
          "[outbox][outbox_relay][threads]") {
    boost::asio::io_context io;
    letterbox::steady_clock clock;
    in_memory::broker broker(io.get_executor(), clock);
    letterbox::in_memory::transport transport(broker, "threads");
    letterbox::in_memory_outbox_store store;
    {
        // Topology, on the broker's thread before it starts.
        auto conn = broker.connect("setup");
        auto ch = conn.open_channel();
        letterbox::topology::queue q;
        q.name = "work";
        REQUIRE_FALSE(ch.queue_declare(q));
    }
    letterbox::relay_options o;
    o.poll_interval = 1h; // only wakes publish in time
    o.retention = std::nullopt;
    letterbox::outbox_relay r(store, transport, clock, o);
    std::atomic<bool> stopped{false};
    std::error_code run_ec;
    r.async_run([&](std::error_code ec) {
        run_ec = ec;
        stopped = true;
    });
    auto work = boost::asio::make_work_guard(io);
    std::thread runner([&] { io.run(); });

    letterbox::message_id_generator ids(5);
    constexpr int n = 200;
    for (int i = 0; i < n; ++i) {
        letterbox::in_memory_unit_of_work uow;
        letterbox::outbox_entry e;
        e.msg.id = ids();
        e.msg.routing_key = "work";
        e.aggregate_id = "agg-" + std::to_string(i % 7);
        REQUIRE_FALSE(store.add(uow, e, clock.wall_now()));
        REQUIRE_FALSE(uow.on_commit(r.waker()));
        REQUIRE_FALSE(uow.commit());
    }
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (r.counters().published < n && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    CHECK(r.counters().published == n);
    r.stop();
    while (!stopped && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    CHECK(stopped);
    work.reset();
    io.stop();
    runner.join();
    CHECK_FALSE(run_ec);
}

TEST_CASE("with a batch-settling store, confirmed rows are marked in a few calls, not one each",
          "[outbox][outbox_relay]") {
    world w;
    constexpr std::size_t rows = 1000;
    const auto ids = w.add_many(static_cast<int>(rows));
    counting_store<true> store{&w.store};
    trace t;
    auto o = test_options();
    o.failpoint = t.hook(w.clock);
    counting_relay<true> r(store, w.transport, w.clock, o);
    run_result result;
    start(r, result);
    const auto ops_before = w.store.operation_count();
    w.run_ready();

    REQUIRE(w.all_published(rows));
    CHECK(store.single_marks == 0);
    CHECK(store.batch_rows == rows);
    CHECK(store.largest_batch <= o.window);
    CHECK(store.batch_marks * 10 <= rows); // in practice a window's worth per call
    // The in-memory store counts a batch as one operation: a dozen claims and the marks.
    CHECK(w.store.operation_count() - ops_before < rows / 10);
    const auto c = r.counters();
    CHECK(c.published == rows);
    CHECK(c.lease_lost == 0);
    CHECK(c.store_errors == 0);
    // The hooks still run per row: each row confirmed, then marked.
    CHECK(t.count(relay_point::after_confirm) == rows);
    CHECK(t.count(relay_point::after_mark) == rows);
    std::map<message_id, int> seen;
    for (const auto& e : t.entries) {
        if (e.point == relay_point::after_confirm)
            CHECK(seen[e.id]++ == 0);
        if (e.point == relay_point::after_mark)
            CHECK(seen[e.id]++ == 1);
    }
    for (const auto& id : ids)
        CHECK(w.row(id).published_at == w.clock.wall_now());
    for (const auto& [id, n] : w.deliveries_by_id())
        CHECK(n == 1);

    r.stop();
    w.run_ready();
    REQUIRE(result.done());
    CHECK_FALSE(*result.ec);
}

TEST_CASE("with a batch-settling store, an aggregate's next event follows its marked one",
          "[outbox][outbox_relay]") {
    world w;
    for (int i = 0; i < 5; ++i)
        for (int a = 0; a < 3; ++a)
            w.add("agg-" + std::to_string(a), i);
    counting_store<true> store{&w.store};
    counting_relay<true> r(store, w.transport, w.clock, test_options());
    run_result result;
    start(r, result);
    const auto t0 = w.clock.now();
    w.run_ready();
    // The batch that marks an aggregate's event lets the next one be claimed, with no poll.
    CHECK(w.clock.now() == t0);
    CHECK(w.all_published(15));
    CHECK(store.single_marks == 0);
    CHECK(store.batch_rows == 15);
    std::map<std::string, std::vector<int>> seen;
    for (const auto& m : w.take_all()) {
        const auto colon = m.body.find(':');
        seen[m.body.substr(0, colon)].push_back(std::stoi(m.body.substr(colon + 1)));
    }
    REQUIRE(seen.size() == 3);
    for (const auto& [aggregate, order] : seen)
        CHECK(order == std::vector<int>{0, 1, 2, 3, 4});
}

TEST_CASE("a graceful stop marks the confirmed rows waiting for their batch before completing",
          "[outbox][outbox_relay]") {
    world w;
    const auto ids = w.add_many(3);
    counting_store<true> store{&w.store};
    holding_transport held{&w.transport};
    held.hold = true;
    using holding_relay =
        letterbox::outbox_relay<counting_store<true>, holding_transport, letterbox::virtual_clock>;
    holding_relay r(store, held, w.clock, test_options());
    run_result result;
    start(r, result);
    w.run_ready();
    REQUIRE(held.held.size() == 3);
    r.stop();
    w.run_ready();
    CHECK_FALSE(result.done()); // waiting for the three outcomes
    // The confirms arrive together: two wait for their batch, the last one ends the stop.
    for (auto& h : held.held)
        h(std::error_code{});
    held.held.clear();
    CHECK(store.batch_marks == 1); // marked before the stop completed
    w.run_ready(); // the completion, and the flush posted for the first confirm (a no-op)
    REQUIRE(result.done());
    CHECK_FALSE(*result.ec);
    CHECK(store.batch_marks == 1);
    CHECK(store.batch_rows == 3);
    for (const auto& id : ids)
        CHECK(w.row(id).status == outbox_status::published);
    const auto c = r.counters();
    CHECK(c.published == 3);
    CHECK(c.abandoned == 0);
}

TEST_CASE("a store without the batch capability is settled with one mark_published per row",
          "[outbox][outbox_relay]") {
    world w;
    constexpr std::size_t rows = 200;
    for (std::size_t i = 0; i < rows; ++i)
        w.add(i % 2 == 0 ? std::string() : "agg-" + std::to_string(i % 7), static_cast<int>(i));
    const auto bad = w.add("agg-bad", 0, unroutable_key);
    counting_store<false> store{&w.store};
    trace t;
    auto o = test_options();
    o.max_attempts = 2;
    o.failpoint = t.hook(w.clock);
    counting_relay<false> r(store, w.transport, w.clock, o);
    run_result result;
    start(r, result);
    REQUIRE(w.run_until([&] {
        const auto c = r.counters();
        return c.published == rows && c.parked == 1;
    }));
    CHECK(w.all_published(rows));
    CHECK(w.row(bad).status == outbox_status::parked);
    CHECK(store.single_marks == rows);
    CHECK(t.count(relay_point::after_mark) == rows);
    for (const auto& [id, n] : w.deliveries_by_id())
        CHECK(n == 1);

    r.stop();
    w.run_ready();
    REQUIRE(result.done());
    CHECK_FALSE(*result.ec);
}

TEST_CASE("a batch of marks that the store fails is retried while the relay holds the rows",
          "[outbox][outbox_relay]") {
    world w;
    const auto ids = w.add_many(10);
    counting_store<true> store{&w.store};
    auto o = test_options();
    o.window = 4;
    counting_relay<true> r(store, w.transport, w.clock, o);
    // Operations: stats (0), claim (1); the first batch of marks (2) fails.
    const auto before = w.store.operation_count();
    w.store.fail_nth(2, errc::timed_out);
    run_result result;
    start(r, result);
    REQUIRE(w.run_until([&] { return r.counters().published == 10; }, 1min));
    CHECK(w.store.operation_count() > before);
    CHECK(w.all_published(10));
    const auto c = r.counters();
    CHECK(c.store_errors == 1);
    CHECK(c.backoffs == 1);
    CHECK(c.lease_lost == 0);
    CHECK(c.publish_attempts == 10); // marks are retried, rows are not republished
    CHECK(store.single_marks > 0);   // the failed batch's rows, retried one by one
    for (const auto& [id, n] : w.deliveries_by_id())
        CHECK(n == 1);
}

} // namespace unit_outbox_outbox_relay
