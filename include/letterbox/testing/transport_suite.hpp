// SPDX-License-Identifier: BSL-1.0
#pragma once

// The universal conformance suite of `letterbox::transport`: watermill's Pub/Sub test suite
// (reliability-anchors part (b), WM-01..WM-15), its adapter checklist, and the semantics the
// `transport` concept states in words. Run it against a model with a fixture (see
// `LETTERBOX_TRANSPORT_SUITE` at the end, and docs/concepts/transport.md).
//
// Every piece is a function template constrained by `letterbox::transport` (the `async_get` and
// `async_queue_depth` helpers by `letterbox::queue_reader`), so tests/archetypes/transport.cpp
// can instantiate it with `transport_archetype` (and `queue_reader_archetype`): the suite uses
// nothing the concepts do not promise.

#include <letterbox/concepts/transport.hpp>
#include <letterbox/consume_options.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/testing/detail/describe.hpp>
#include <letterbox/testing/transport_features.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include <boost/asio/steady_timer.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace letterbox::testing {

// ---- the fixture ---------------------------------------------------------------------------

/// A fixture that runs the transport suite against one `transport` model.
///
/// The suite default-constructs one fixture per test case (a fresh in-memory broker, or fresh
/// connection settings for a real one) and calls, from one thread:
/// 1. `f.make()`: a new transport, connected or connecting, by value;
/// 2. `f.run_until(done, timeout)`: runs the transports' completion handlers until `done()`
///    returns true or `timeout` passes, and returns the last `done()`. `done` reads state that
///    completion handlers write, so it must not run concurrently with them: run the
///    `io_context` on the calling thread, as the in-memory fixture does, or evaluate `done` on
///    the executor. Other threads may initiate operations meanwhile (the `[threads]` cases);
/// 3. `f.unique_name(stem)`: a queue or exchange name no other call, test case, process or
///    earlier run returns, so cases can share one real broker (watermill's `TestID`);
/// 4. `f.restart_broker()`, only when `features.restartable`: restarts the broker and returns
///    when it accepts connections again; called between calls to `run_until`;
/// 5. `F::features`, a `static constexpr transport_features`.
///
/// Example: tests/conformance/in_memory_transport.cpp.
template <class F>
concept transport_suite_fixture = std::default_initializable<F> &&
    requires(F& f, const std::function<bool()>& done, std::chrono::milliseconds timeout,
             std::string_view stem) {
    { f.make() } -> transport;
    { f.run_until(done, timeout) } -> std::same_as<bool>;
    { f.unique_name(stem) } -> std::convertible_to<std::string>;
    { F::features } -> std::convertible_to<transport_features>;
};

/// What each check of the suite is given: the fixture's operations, type-erased, so that a
/// check is a function template of the transport type alone.
template <transport Transport>
struct transport_harness {
    /// A new transport.
    std::function<Transport()> make;
    /// Runs completion handlers until `done()` or the timeout; returns the last `done()`.
    std::function<bool(const std::function<bool()>&, std::chrono::milliseconds)> run_until;
    /// A name unique to the call.
    std::function<std::string(std::string_view)> unique_name;
    /// Restarts the broker; empty when the fixture cannot.
    std::function<void()> restart_broker;
    transport_features features{};

    /// Runs until `done()`, for at most `features.timeout`; returns whether `done()` held.
    bool wait(const std::function<bool()>& done) { return run_until(done, features.timeout); }
    /// Runs for `features.quiet_period`, to see that something does not happen.
    void quiet() {
        run_until([] { return false; }, features.quiet_period);
    }
};

/// Generates names unique to this object and to this run: `<prefix>.<random>.<stem>.<n>`,
/// the random part drawn once per object from `std::random_device`. A fixture holds one.
///
/// Thread safety: calls may come from several threads.
class unique_names {
public:
    explicit unique_names(std::string prefix = "letterbox.suite")
        : prefix_(std::move(prefix)) {
        std::random_device device;
        const auto high = static_cast<std::uint64_t>(device());
        const auto low = static_cast<std::uint64_t>(device());
        const std::uint64_t run = (high << 32U) ^ low;
        static constexpr char hex[] = "0123456789abcdef";
        for (int shift = 44; shift >= 0; shift -= 4)
            run_.push_back(hex[(run >> static_cast<unsigned>(shift)) & 0xfU]);
    }

    std::string operator()(std::string_view stem) {
        const auto n = next_.fetch_add(1, std::memory_order_relaxed);
        return prefix_ + "." + run_ + "." + std::string(stem) + "." + std::to_string(n);
    }

private:
    std::string prefix_;
    std::string run_;
    std::atomic<std::uint64_t> next_{1};
};

// ---- reusable pieces -----------------------------------------------------------------------

using letterbox::testing::detail::describe;
using letterbox::testing::detail::success;

/// `n` messages for `exchange` and `routing_key`, each with a fresh id, a body holding its
/// index and two headers: `x-suite-index` (its index) and `x-suite-test` (a fresh UUID, as
/// watermill's metadata check does).
inline std::vector<message> make_messages(std::size_t n, std::string_view exchange,
                                          std::string_view routing_key) {
    message_id_generator ids;
    std::vector<message> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        message m;
        m.id = ids();
        m.type = "letterbox.suite.message";
        m.exchange = std::string(exchange);
        m.routing_key = std::string(routing_key);
        m.headers.set("x-suite-index", static_cast<std::int64_t>(i));
        m.headers.set("x-suite-test", letterbox::to_string(ids()));
        m.body = std::to_string(i);
        m.properties.content_type = "text/plain";
        out.push_back(std::move(m));
    }
    return out;
}

/// The ids of `messages`, in order.
inline std::vector<message_id> ids_of(const std::vector<message>& messages) {
    std::vector<message_id> ids;
    ids.reserve(messages.size());
    for (const auto& m : messages)
        ids.push_back(m.id);
    return ids;
}

/// A queue declaration for the suite: durable, with `x-expires` when the features ask.
inline topology::queue suite_queue(const transport_features& features, std::string name) {
    topology::queue q;
    q.name = std::move(name);
    if (features.queue_expires)
        q.arguments.set(topology::args::expires,
                        static_cast<std::int64_t>(features.queue_expires->count()));
    return q;
}

/// Starts an operation with a `void(std::error_code)` completion and runs until it completes.
/// Returns its error, or `errc::timed_out`.
template <transport Transport, class Initiate>
std::error_code await_completion(transport_harness<Transport>& h, Initiate&& initiate) {
    auto result = std::make_shared<std::optional<std::error_code>>();
    std::forward<Initiate>(initiate)([result](std::error_code ec) { *result = ec; });
    if (!h.wait([&] { return result->has_value(); }))
        return make_error_code(errc::timed_out);
    return **result;
}

template <transport Transport>
std::error_code declare(transport_harness<Transport>& h, Transport& t, const topology::queue& q) {
    return await_completion(h, [&](auto done) { t.async_declare(q, std::move(done)); });
}

template <transport Transport>
std::error_code declare(transport_harness<Transport>& h, Transport& t,
                        const topology::exchange& x) {
    return await_completion(h, [&](auto done) { t.async_declare(x, std::move(done)); });
}

template <transport Transport>
std::error_code bind(transport_harness<Transport>& h, Transport& t, const topology::binding& b) {
    return await_completion(h, [&](auto done) { t.async_bind(b, std::move(done)); });
}

/// Declares a fresh queue named after `stem` (see `suite_queue`), requires success, and
/// returns its name.
template <transport Transport>
std::string declare_fresh_queue(transport_harness<Transport>& h, Transport& t,
                                std::string_view stem) {
    auto name = h.unique_name(stem);
    REQUIRE(describe(declare(h, t, suite_queue(h.features, name))) == success);
    return name;
}

/// Publishers for the concurrent checks (WM-02, WM-11): one transport per publishing thread
/// (the concept promises that distinct objects may be used concurrently, not one object), each
/// with its own batch of messages for `queue`, and every message id in publish order.
template <transport Transport>
struct publisher_fleet {
    std::deque<Transport> publishers;
    std::vector<std::vector<message>> batches;
    std::vector<message_id> ids;
};

template <transport Transport>
publisher_fleet<Transport> make_publisher_fleet(transport_harness<Transport>& h,
                                                const std::string& queue, std::size_t publishers,
                                                std::size_t per_publisher) {
    publisher_fleet<Transport> fleet;
    for (std::size_t p = 0; p < publishers; ++p) {
        fleet.publishers.emplace_back(h.make());
        fleet.batches.push_back(make_messages(per_publisher, "", queue));
        for (const auto& m : fleet.batches.back())
            fleet.ids.push_back(m.id);
    }
    return fleet;
}

template <transport Transport>
std::error_code publish(transport_harness<Transport>& h, Transport& t, const message& m) {
    return await_completion(h, [&](auto done) { t.async_publish(m, std::move(done)); });
}

/// Starts every publish at once (pipelined, in order) and runs until all complete. Returns
/// one outcome per message; `errc::timed_out` for any that did not complete.
template <transport Transport>
std::vector<std::error_code> publish_all(transport_harness<Transport>& h, Transport& t,
                                         const std::vector<message>& messages) {
    auto results = std::make_shared<std::vector<std::optional<std::error_code>>>(messages.size());
    auto completed = std::make_shared<std::size_t>(0);
    for (std::size_t i = 0; i < messages.size(); ++i)
        t.async_publish(messages[i], [results, completed, i](std::error_code ec) {
            (*results)[i] = ec;
            ++*completed;
        });
    h.wait([&] { return *completed == messages.size(); });
    std::vector<std::error_code> out;
    out.reserve(messages.size());
    for (const auto& r : *results)
        out.push_back(r.value_or(make_error_code(errc::timed_out)));
    return out;
}

/// `publish_all`, requiring every publish to succeed.
template <transport Transport>
void require_published(transport_harness<Transport>& h, Transport& t,
                       const std::vector<message>& messages) {
    const auto results = publish_all(h, t, messages);
    std::size_t failed = 0;
    std::error_code first{};
    for (const auto& ec : results)
        if (ec && failed++ == 0)
            first = ec;
    INFO("first failure: " << describe(first));
    REQUIRE(failed == 0);
}

template <transport Transport>
std::error_code close(transport_harness<Transport>& h, Transport& t) {
    return await_completion(h, [&](auto done) { t.async_close(std::move(done)); });
}

template <transport Transport>
std::error_code cancel(transport_harness<Transport>& h, Transport& t, const std::string& tag) {
    return await_completion(h, [&](auto done) { t.async_cancel(tag, std::move(done)); });
}

template <transport Transport>
std::error_code ack(transport_harness<Transport>& h, Transport& t, const delivery& d) {
    return await_completion(h, [&](auto done) { t.async_ack(d, std::move(done)); });
}

template <transport Transport>
std::error_code nack(transport_harness<Transport>& h, Transport& t, const delivery& d,
                     bool requeue) {
    return await_completion(h, [&](auto done) { t.async_nack(d, requeue, std::move(done)); });
}

/// What `async_get` completed with.
struct get_result {
    std::error_code ec;
    std::optional<delivery> d;
};

/// `async_get` on a `queue_reader`, run until it completes (`errc::timed_out` otherwise).
template <queue_reader Transport>
get_result get(transport_harness<Transport>& h, Transport& t, const std::string& queue) {
    auto result = std::make_shared<std::optional<get_result>>();
    t.async_get(queue, [result](std::error_code ec, std::optional<delivery> d) {
        *result = get_result{ec, std::move(d)};
    });
    if (!h.wait([&] { return result->has_value(); }))
        return {make_error_code(errc::timed_out), std::nullopt};
    return std::move(**result);
}

/// What `async_queue_depth` completed with.
struct depth_result {
    std::error_code ec;
    std::uint32_t ready = 0;
};

/// `async_queue_depth` on a `queue_reader`, run until it completes.
template <queue_reader Transport>
depth_result queue_depth(transport_harness<Transport>& h, Transport& t, const std::string& queue) {
    auto result = std::make_shared<std::optional<depth_result>>();
    t.async_queue_depth(queue, [result](std::error_code ec, std::uint32_t ready) {
        *result = depth_result{ec, ready};
    });
    if (!h.wait([&] { return result->has_value(); }))
        return {make_error_code(errc::timed_out), 0};
    return **result;
}

/// The queue's depth once it reads `expected`, polled until `features.timeout`. For a depth
/// that a settle on another channel changes: RabbitMQ applies a requeue asynchronously, so a
/// depth asked on another channel right after the nack may not count it yet.
template <transport Transport>
depth_result queue_depth_settled(transport_harness<Transport>& h, Transport& t,
                                 const std::string& queue, std::uint32_t expected) {
    const auto deadline = std::chrono::steady_clock::now() + h.features.timeout;
    auto depth = queue_depth(h, t, queue);
    for (int polls = 0; polls < 1000 && !depth.ec && depth.ready != expected &&
                        std::chrono::steady_clock::now() < deadline;
         ++polls) {
        h.run_until([] { return false; }, std::chrono::milliseconds{10});
        depth = queue_depth(h, t, queue);
    }
    return depth;
}

/// What a consumer's delivery handler does with a delivery.
enum class settle_action { ack, nack_requeue, nack_drop, reject_requeue, reject_drop, hold };

/// What one consumer started by the suite has seen. Written by its delivery handler and by
/// settle completions, on the transport's executor.
struct consumer_log {
    /// Every delivery, in arrival order, duplicates included.
    std::vector<delivery> deliveries;
    /// Deliveries per message id.
    std::map<message_id, std::size_t> delivered;
    /// Successful acks per message id.
    std::map<message_id, std::size_t> acked;
    /// Settle completions, and the ones that failed.
    std::size_t settled = 0;
    std::vector<std::error_code> settle_errors;
    /// The `async_consume` completion, once it came.
    std::optional<std::error_code> consume_result;
    std::string consumer_tag;
    /// Deliveries that reached the handler before the consume completed.
    std::size_t early_deliveries = 0;
    /// Deliveries that reached the handler while it was running (a re-entered handler).
    std::size_t reentered = 0;
    bool in_handler = false;

    std::size_t unique() const noexcept { return delivered.size(); }
    std::size_t times(const message_id& id) const {
        const auto it = delivered.find(id);
        return it == delivered.end() ? 0 : it->second;
    }
};

/// Decides what to do with each delivery; it sees the log *after* the delivery was recorded.
using settle_policy = std::function<settle_action(const delivery&, const consumer_log&)>;

inline settle_policy ack_all() {
    return [](const delivery&, const consumer_log&) {
        return settle_action::ack;
    };
}

inline settle_policy hold_all() {
    return [](const delivery&, const consumer_log&) {
        return settle_action::hold;
    };
}

/// Nacks (with requeue) the first `n` deliveries, then applies `then`.
inline settle_policy nack_first(std::size_t n, settle_action then = settle_action::ack) {
    return [n, then](const delivery&, const consumer_log& log) {
        return log.deliveries.size() <= n ? settle_action::nack_requeue : then;
    };
}

/// Settles `d` on `t` as `action` says, recording the completion in `log`.
template <transport Transport>
void settle(Transport& t, const std::shared_ptr<consumer_log>& log, const delivery& d,
            settle_action action) {
    auto done = [log, id = d.msg.id, action](std::error_code ec) {
        ++log->settled;
        if (ec)
            log->settle_errors.push_back(ec);
        else if (action == settle_action::ack)
            ++log->acked[id];
    };
    switch (action) {
    case settle_action::ack:
        t.async_ack(d, std::move(done));
        break;
    case settle_action::nack_requeue:
        t.async_nack(d, true, std::move(done));
        break;
    case settle_action::nack_drop:
        t.async_nack(d, false, std::move(done));
        break;
    case settle_action::reject_requeue:
        t.async_reject(d, true, std::move(done));
        break;
    case settle_action::reject_drop:
        t.async_reject(d, false, std::move(done));
        break;
    case settle_action::hold:
        break;
    }
}

/// Starts a consumer on `t` without waiting for it: each delivery is recorded in the returned
/// log and settled as `policy` says. `t` must stay where it is while the consumer runs.
template <transport Transport>
std::shared_ptr<consumer_log> begin_consume(Transport& t, const consume_options& options,
                                            settle_policy policy) {
    auto log = std::make_shared<consumer_log>();
    Transport* tp = &t;
    t.async_consume(
        options,
        [log, tp, policy = std::move(policy)](delivery d) {
            if (log->in_handler)
                ++log->reentered;
            log->in_handler = true;
            if (!log->consume_result)
                ++log->early_deliveries;
            ++log->delivered[d.msg.id];
            log->deliveries.push_back(d);
            settle(*tp, log, d, policy(d, *log));
            log->in_handler = false;
        },
        [log](std::error_code ec, std::string tag) {
            log->consume_result = ec;
            log->consumer_tag = std::move(tag);
        });
    return log;
}

/// Options for consuming `queue` with `prefetch`.
inline consume_options consume_from(std::string queue, std::uint16_t prefetch = 32) {
    consume_options o;
    o.queue = std::move(queue);
    o.prefetch = prefetch;
    return o;
}

/// Starts a consumer and runs until it started; requires success.
template <transport Transport>
std::shared_ptr<consumer_log> consume(transport_harness<Transport>& h, Transport& t,
                                      const consume_options& options, settle_policy policy) {
    auto log = begin_consume(t, options, std::move(policy));
    REQUIRE(h.wait([&] { return log->consume_result.has_value(); }));
    REQUIRE(describe(*log->consume_result) == success);
    return log;
}

/// Runs until `done()` holds, for at most the features' timeout (watermill's bulk read).
template <transport Transport, class Predicate>
bool collect_until(transport_harness<Transport>& h, Predicate done) {
    return h.wait(std::function<bool()>(std::move(done)));
}

/// Whether the logs together hold at least `n` distinct message ids in their `delivered` (or
/// `acked`) counts. Cheap while they are short of `n`: the run loop asks after every handler.
inline bool holds_distinct(const std::vector<std::shared_ptr<consumer_log>>& logs, std::size_t n,
                           bool acked) {
    std::size_t upper = 0;
    for (const auto& log : logs)
        upper += (acked ? log->acked : log->delivered).size();
    if (upper < n)
        return false;
    if (logs.size() == 1)
        return true;
    std::set<message_id> ids;
    for (const auto& log : logs)
        for (const auto& [id, times] : acked ? log->acked : log->delivered)
            ids.insert(id);
    return ids.size() >= n;
}

/// Runs until the logs together hold `n` distinct message ids.
template <transport Transport>
bool collect_unique(transport_harness<Transport>& h,
                    const std::vector<std::shared_ptr<consumer_log>>& logs, std::size_t n) {
    return collect_until(h, [&] { return holds_distinct(logs, n, false); });
}

/// Runs until the logs together acked `n` distinct message ids.
template <transport Transport>
bool collect_acked(transport_harness<Transport>& h,
                   const std::vector<std::shared_ptr<consumer_log>>& logs, std::size_t n) {
    return collect_until(h, [&] { return holds_distinct(logs, n, true); });
}

/// What `check_ids` compares: which log counts to use.
enum class id_source { delivered, acked };

/// watermill's `AssertAllMessagesReceived`: the logs together hold exactly the ids of
/// `expected` (reporting the missing and the extra ones); each at most once unless
/// `duplicates_allowed`.
inline void check_ids(const std::vector<message_id>& expected,
                      const std::vector<std::shared_ptr<consumer_log>>& logs, id_source source,
                      bool duplicates_allowed) {
    std::map<message_id, std::size_t> got;
    for (const auto& log : logs)
        for (const auto& [id, times] : source == id_source::acked ? log->acked : log->delivered)
            got[id] += times;
    const std::set<message_id> want(expected.begin(), expected.end());
    std::vector<std::string> missing;
    std::vector<std::string> extra;
    std::vector<std::string> twice;
    for (const auto& id : want)
        if (!got.contains(id))
            missing.push_back(letterbox::to_string(id));
    for (const auto& [id, times] : got) {
        if (!want.contains(id))
            extra.push_back(letterbox::to_string(id));
        else if (times > 1)
            twice.push_back(letterbox::to_string(id));
    }
    INFO((source == id_source::acked ? "acked" : "delivered")
         << ": " << got.size() << " distinct ids of " << want.size() << " expected; missing "
         << missing.size() << (missing.empty() ? "" : " (first " + missing.front() + ")")
         << ", extra " << extra.size() << (extra.empty() ? "" : " (first " + extra.front() + ")")
         << ", more than once " << twice.size());
    CHECK(missing.empty());
    CHECK(extra.empty());
    if (!duplicates_allowed)
        CHECK(twice.empty());
}

/// The message of `messages` with id `id`, or null.
inline const message* find_message(const std::vector<message>& messages, const message_id& id) {
    const auto it = std::find_if(messages.begin(), messages.end(),
                                 [&](const message& m) { return m.id == id; });
    return it == messages.end() ? nullptr : &*it;
}

} // namespace letterbox::testing

// ---- the checks ----------------------------------------------------------------------------

// Internal: skips the rest of a check, saying why (Catch2 v2 has no SKIP).
#define LETTERBOX_DETAIL_SKIP(reason)                                                              \
    do {                                                                                           \
        WARN("skipped: " << reason);                                                               \
        return;                                                                                    \
    } while (false)

namespace letterbox::testing::detail {

using std::chrono::milliseconds;

/// Adapter checklist: publish/subscribe round trip.
template <transport Transport>
void transport_check_round_trip(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "round-trip");

    message m;
    m.id = message_id_generator{}();
    m.type = "letterbox.suite.round_trip";
    m.routing_key = queue;
    m.headers.set("x-suite-text", "text");
    m.headers.set("x-suite-count", std::int64_t{7});
    m.headers.set("x-suite-flag", true);
    m.headers.set("x-suite-table", field_table{{"nested", std::int64_t{1}}, {"name", "n"}});
    m.body = std::string("body\0with a NUL", 15) + "\xff\xfe binary tail";
    m.properties.content_type = "application/octet-stream";
    m.properties.content_encoding = "identity";
    m.properties.correlation_id = "correlation-1";
    m.properties.reply_to = "reply-queue";
    m.properties.timestamp = timestamp{std::chrono::seconds{1767225600}};
    m.properties.priority = 3;
    m.properties.app_id = "letterbox-suite";
    // Not set: `expiration` (it is a TTL, which another check would have to wait out) and
    // `user_id` (RabbitMQ refuses one that differs from the connection's user).
    m.properties.persistent = true;

    REQUIRE(describe(publish(h, t, m)) == success);
    auto log = consume(h, t, consume_from(queue), ack_all());
    REQUIRE(collect_unique(h, {log}, 1));

    const auto& d = log->deliveries.front();
    CHECK(d.msg.id == m.id);
    CHECK(d.msg.type == m.type);
    CHECK(d.msg.exchange == m.exchange);
    CHECK(d.msg.routing_key == m.routing_key);
    CHECK(d.msg.headers == m.headers);
    CHECK(d.msg.body == m.body);
    CHECK(d.msg.properties == m.properties);
    CHECK(d.msg == m);
    CHECK_FALSE(d.redelivered);
    CHECK(d.queue == queue);
    CHECK(d.consumer_tag == log->consumer_tag);
    CHECK(d.delivery_tag != 0);
    REQUIRE(collect_until(h, [&] { return log->settled == 1; }));
    CHECK(log->settle_errors.empty());
}

/// A message published with the nil id is published with a fresh id (message.hpp): no message
/// leaves letterbox without one, since an inbox deduplicates on it. Two such publishes get two
/// ids, and the caller's message is left as it was.
template <transport Transport>
void transport_check_publish_assigns_an_id_to_the_nil_id(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "nil-id");
    message m;
    m.routing_key = queue;
    for (const char* body : {"first", "second"}) {
        m.body = body;
        REQUIRE(describe(publish(h, t, m)) == success);
    }
    CHECK(m.id.is_nil());
    auto log = consume(h, t, consume_from(queue), ack_all());
    REQUIRE(collect_unique(h, {log}, 2));
    REQUIRE(log->deliveries.size() >= 2);
    CHECK_FALSE(log->deliveries[0].msg.id.is_nil());
    CHECK_FALSE(log->deliveries[1].msg.id.is_nil());
    CHECK(log->deliveries[0].msg.id != log->deliveries[1].msg.id);
    REQUIRE(collect_until(h, [&] { return log->settled >= 2; }));
}

/// WM-01 TestPublishSubscribe: what was published before anyone subscribed is all received.
template <transport Transport>
void transport_check_publish_subscribe(transport_harness<Transport>& h) {
    const auto n = sizes_for(h.features.size).messages;
    auto publisher = h.make();
    auto subscriber = h.make();
    const auto queue = declare_fresh_queue(h, publisher, "wm01");
    const auto messages = make_messages(n, "", queue);
    require_published(h, publisher, messages);

    auto log = consume(h, subscriber, consume_from(queue), ack_all());
    CHECK(collect_acked(h, {log}, n));
    check_ids(ids_of(messages), {log}, id_source::acked, !h.features.exactly_once_delivery);
    for (const auto& d : log->deliveries) {
        const auto* m = find_message(messages, d.msg.id);
        REQUIRE(m != nullptr);
        CHECK(d.msg.body == m->body);
        CHECK(d.msg.headers == m->headers);
    }

    // After closing, the consumer gets nothing more.
    CHECK(describe(close(h, subscriber)) == success);
    CHECK(describe(close(h, publisher)) == success);
    const auto seen = log->deliveries.size();
    auto late = h.make();
    REQUIRE(describe(publish(h, late, make_messages(1, "", queue).front())) == success);
    h.quiet();
    CHECK(log->deliveries.size() == seen);
}

/// WM-02 TestConcurrentSubscribe (with WM-11's concurrent publishers): several threads
/// publish, several competing consumers consume; nothing is lost.
template <transport Transport>
void transport_check_concurrent_publishers_competing_consumers(transport_harness<Transport>& h) {
    const auto sizes = sizes_for(h.features.size);
    auto admin = h.make();
    const auto queue = declare_fresh_queue(h, admin, "wm02");

    auto fleet = make_publisher_fleet(h, queue, sizes.publishers, sizes.messages_per_publisher);
    auto& publishers = fleet.publishers;
    auto& batches = fleet.batches;
    auto& all = fleet.ids;
    struct outcome {
        std::mutex mutex;
        std::size_t completed = 0;
        std::vector<std::error_code> failures;
    };
    auto out = std::make_shared<outcome>();
    {
        std::vector<std::thread> threads;
        for (std::size_t p = 0; p < sizes.publishers; ++p)
            threads.emplace_back([&, p] {
                for (const auto& m : batches[p])
                    publishers[p].async_publish(m, [out](std::error_code ec) {
                        std::lock_guard lock(out->mutex);
                        ++out->completed;
                        if (ec)
                            out->failures.push_back(ec);
                    });
            });
        h.wait([&] {
            std::lock_guard lock(out->mutex);
            return out->completed == all.size();
        });
        for (auto& thread : threads)
            thread.join();
    }
    {
        std::lock_guard lock(out->mutex);
        INFO("first failure: " << (out->failures.empty() ? std::string(success)
                                                         : describe(out->failures.front())));
        REQUIRE(out->completed == all.size());
        REQUIRE(out->failures.empty());
    }

    std::deque<Transport> consumers;
    std::vector<std::shared_ptr<consumer_log>> logs;
    for (std::size_t c = 0; c < sizes.consumers; ++c) {
        consumers.emplace_back(h.make());
        logs.push_back(consume(h, consumers.back(), consume_from(queue, 8), ack_all()));
    }
    CHECK(collect_acked(h, logs, all.size()));
    check_ids(all, logs, id_source::acked, !h.features.exactly_once_delivery);
}

/// WM-03 TestConcurrentSubscribeMultipleTopics: many queues at once, each gets exactly its own
/// copies of the same messages (the same ids in every queue are not de-duplicated across them).
template <transport Transport>
void transport_check_many_queues_at_once(transport_harness<Transport>& h) {
    const auto sizes = sizes_for(h.features.size);
    auto t = h.make();
    auto subscriber = h.make();
    std::vector<std::string> queues;
    auto declared = std::make_shared<std::vector<std::error_code>>();
    for (std::size_t i = 0; i < sizes.queues; ++i) {
        queues.push_back(h.unique_name("wm03"));
        t.async_declare(suite_queue(h.features, queues.back()),
                        [declared](std::error_code ec) { declared->push_back(ec); });
    }
    REQUIRE(h.wait([&] { return declared->size() == queues.size(); }));
    for (const auto& ec : *declared)
        REQUIRE(describe(ec) == success);

    const auto originals = make_messages(sizes.messages_per_queue, "", "");
    std::vector<message> all;
    for (const auto& q : queues)
        for (auto m : originals) {
            m.routing_key = q;
            all.push_back(std::move(m));
        }
    // Consumers first, then every publish at once: consuming and publishing interleave.
    std::vector<std::shared_ptr<consumer_log>> logs;
    for (const auto& q : queues)
        logs.push_back(begin_consume(subscriber, consume_from(q), ack_all()));
    const auto results = publish_all(h, t, all);
    CHECK(std::all_of(results.begin(), results.end(), [](std::error_code ec) { return !ec; }));

    for (std::size_t i = 0; i < queues.size(); ++i) {
        INFO("queue " << queues[i]);
        CHECK(collect_acked(h, {logs[i]}, originals.size()));
        REQUIRE(logs[i]->consume_result.has_value());
        CHECK(describe(*logs[i]->consume_result) == success);
        check_ids(ids_of(originals), {logs[i]}, id_source::acked,
                  !h.features.exactly_once_delivery);
        for (const auto& d : logs[i]->deliveries) {
            CHECK(d.queue == queues[i]);
            CHECK(d.msg.routing_key == queues[i]);
        }
    }
}

/// WM-04 TestPublishSubscribeInOrder: per key, messages arrive in publish order.
template <transport Transport>
void transport_check_publish_subscribe_in_order(transport_harness<Transport>& h) {
    if (!h.features.guaranteed_order)
        LETTERBOX_DETAIL_SKIP("the transport does not guarantee order");
    const auto n = sizes_for(h.features.size).ordered_messages;
    constexpr std::size_t keys = 16;
    auto publisher = h.make();
    const auto queue = declare_fresh_queue(h, publisher, "wm04");
    auto messages = make_messages(n, "", queue);
    for (std::size_t i = 0; i < n; ++i)
        messages[i].body = std::to_string(i % keys);
    require_published(h, publisher, messages);

    const std::size_t subscribers = h.features.guaranteed_order_with_single_subscriber ? 1 : 10;
    std::deque<Transport> transports;
    std::vector<std::shared_ptr<consumer_log>> logs;
    // Every consumer's deliveries, in the order the suite saw them.
    auto arrivals = std::make_shared<std::vector<delivery>>();
    for (std::size_t s = 0; s < subscribers; ++s) {
        transports.emplace_back(h.make());
        logs.push_back(consume(h, transports.back(), consume_from(queue),
                               [arrivals](const delivery& d, const consumer_log&) {
                                   arrivals->push_back(d);
                                   return settle_action::ack;
                               }));
    }
    CHECK(collect_acked(h, logs, n));
    check_ids(ids_of(messages), logs, id_source::acked, !h.features.exactly_once_delivery);

    std::map<std::string, std::vector<message_id>> published;
    for (const auto& m : messages)
        published[m.body].push_back(m.id);
    std::map<std::string, std::vector<message_id>> received;
    std::set<message_id> seen;
    for (const auto& d : *arrivals)
        if (seen.insert(d.msg.id).second)
            received[d.msg.body].push_back(d.msg.id);
    for (const auto& [key, ids] : published) {
        INFO("key " << key);
        CHECK(received[key] == ids);
    }
}

/// WM-05 TestResendOnError: nacked messages come back; none is lost.
template <transport Transport>
void transport_check_resend_on_nack(transport_harness<Transport>& h) {
    if (!h.features.redelivery_on_nack)
        LETTERBOX_DETAIL_SKIP("the transport does not redeliver after a nack");
    const auto n = sizes_for(h.features.size).messages;
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "wm05");
    const auto messages = make_messages(n, "", queue);
    require_published(h, t, messages);

    auto log = consume(h, t, consume_from(queue), nack_first(2));
    CHECK(collect_acked(h, {log}, n));
    check_ids(ids_of(messages), {log}, id_source::acked, !h.features.exactly_once_delivery);
    REQUIRE(log->deliveries.size() >= 2);
    for (std::size_t i = 0; i < 2; ++i) {
        const auto& nacked = log->deliveries[i];
        INFO("nacked delivery " << i);
        CHECK(log->times(nacked.msg.id) >= 2);
    }
    CHECK(log->settle_errors.empty());
}

/// Adapter checklist: redelivery after nack (and reject) has the redelivered flag.
template <transport Transport>
void transport_check_redelivery_is_flagged(transport_harness<Transport>& h) {
    if (!h.features.redelivery_on_nack)
        LETTERBOX_DETAIL_SKIP("the transport does not redeliver after a nack");
    auto t = h.make();
    for (const auto first : {settle_action::nack_requeue, settle_action::reject_requeue}) {
        INFO((first == settle_action::nack_requeue ? "nack" : "reject") << " with requeue");
        const auto queue = declare_fresh_queue(h, t, "redelivered");
        const auto messages = make_messages(1, "", queue);
        require_published(h, t, messages);
        auto log =
            consume(h, t, consume_from(queue), [first](const delivery&, const consumer_log& l) {
                return l.deliveries.size() == 1 ? first : settle_action::ack;
            });
        REQUIRE(collect_until(h, [&] { return log->deliveries.size() >= 2; }));
        const auto& a = log->deliveries[0];
        const auto& b = log->deliveries[1];
        CHECK_FALSE(a.redelivered);
        CHECK(b.redelivered);
        CHECK(b.msg.id == messages.front().id);
        CHECK(b.msg.type == messages.front().type);
        CHECK(b.msg.body == messages.front().body);
        REQUIRE(collect_until(h, [&] { return log->settled >= 2; }));
        CHECK(log->settle_errors.empty());
    }
}

/// Adapter checklist: ack and nack. An ack, or a nack or reject without requeue, settles the
/// message for good (no dead-letter exchange: it is dropped).
template <transport Transport>
void transport_check_ack_and_nack_settle(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "settle");
    auto messages = make_messages(3, "", queue);
    require_published(h, t, messages);
    // Message 0 is acked, 1 nacked without requeue, 2 rejected without requeue.
    auto log = consume(h, t, consume_from(queue), [](const delivery& d, const consumer_log&) {
        return d.msg.body == "0"   ? settle_action::ack
               : d.msg.body == "1" ? settle_action::nack_drop
                                   : settle_action::reject_drop;
    });
    REQUIRE(collect_until(h, [&] { return log->settled >= 3; }));
    CHECK(log->settle_errors.empty());
    h.quiet();
    check_ids(ids_of(messages), {log}, id_source::delivered, false);

    auto other = h.make();
    auto late = consume(h, other, consume_from(queue), ack_all());
    h.quiet();
    CHECK(late->deliveries.empty());
}

/// WM-06 TestNoAck: with prefetch 1 the next message waits for the held one, and an acked
/// message does not come back.
template <transport Transport>
void transport_check_held_delivery_blocks_the_next(transport_harness<Transport>& h) {
    if (!h.features.guaranteed_order)
        LETTERBOX_DETAIL_SKIP("the transport does not guarantee order");
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "wm06");
    const auto messages = make_messages(2, "", queue);
    require_published(h, t, messages);

    auto log = consume(h, t, consume_from(queue, 1), hold_all());
    REQUIRE(collect_until(h, [&] { return log->deliveries.size() >= 1; }));
    CHECK(log->deliveries.front().msg.id == messages[0].id);
    h.quiet();
    CHECK(log->deliveries.size() == 1);

    REQUIRE(describe(ack(h, t, log->deliveries.front())) == success);
    REQUIRE(collect_until(h, [&] { return log->deliveries.size() >= 2; }));
    CHECK(log->deliveries[1].msg.id == messages[1].id);
    h.quiet();
    CHECK(log->times(messages[0].id) == 1);
    CHECK(describe(ack(h, t, log->deliveries[1])) == success);
}

/// WM-07 TestContinueAfterSubscribeClose: consumers that stop mid-stream (closing with
/// unacknowledged deliveries) lose nothing.
template <transport Transport>
void transport_check_no_loss_when_consumers_stop(transport_harness<Transport>& h) {
    if (!h.features.persistent)
        LETTERBOX_DETAIL_SKIP("the transport is not persistent");
    if (h.features.exactly_once_delivery)
        LETTERBOX_DETAIL_SKIP("exactly-once transports redeliver nothing to check");
    const auto sizes = sizes_for(h.features.size);
    auto publisher = h.make();
    const auto queue = declare_fresh_queue(h, publisher, "wm07");
    const auto messages = make_messages(sizes.resumed_messages, "", queue);
    require_published(h, publisher, messages);

    std::vector<std::shared_ptr<consumer_log>> logs;
    const auto all_acked = [&] {
        return holds_distinct(logs, messages.size(), true);
    };
    for (std::size_t round = 0; round < sizes.rounds && !all_acked(); ++round) {
        INFO("round " << round);
        auto t = h.make();
        const auto batch = sizes.batch;
        auto log =
            consume(h, t, consume_from(queue), [batch](const delivery&, const consumer_log& l) {
                return l.deliveries.size() <= batch ? settle_action::ack : settle_action::hold;
            });
        logs.push_back(log);
        REQUIRE(collect_until(h, [&] { return log->acked.size() >= batch || all_acked(); }));
        // Stop mid-stream: what is held unacknowledged goes back to the queue.
        CHECK(describe(close(h, t)) == success);
    }
    auto catch_up = h.make();
    logs.push_back(consume(h, catch_up, consume_from(queue), ack_all()));
    CHECK(collect_until(h, all_acked));
    check_ids(ids_of(messages), logs, id_source::acked, true);
}

/// WM-08 TestConcurrentClose: consumers started and closed all at once break nothing.
template <transport Transport>
void transport_check_concurrent_close(transport_harness<Transport>& h) {
    constexpr std::size_t racers = 10;
    constexpr std::size_t n = 50;
    auto admin = h.make();
    const auto queue = declare_fresh_queue(h, admin, "wm08");
    std::deque<Transport> transports;
    std::vector<std::shared_ptr<consumer_log>> logs;
    auto closed = std::make_shared<std::vector<std::error_code>>();
    for (std::size_t i = 0; i < racers; ++i) {
        transports.emplace_back(h.make());
        logs.push_back(begin_consume(transports.back(), consume_from(queue), ack_all()));
        transports.back().async_close([closed](std::error_code ec) { closed->push_back(ec); });
    }
    REQUIRE(h.wait([&] {
        return closed->size() == racers && std::all_of(logs.begin(), logs.end(), [](const auto& l) {
                   return l->consume_result.has_value();
               });
    }));
    for (const auto& ec : *closed)
        CHECK(describe(ec) == success);

    auto publisher = h.make();
    const auto messages = make_messages(n, "", queue);
    require_published(h, publisher, messages);
    auto reader = h.make();
    auto log = consume(h, reader, consume_from(queue), ack_all());
    CHECK(collect_acked(h, {log}, n));
    check_ids(ids_of(messages), {log}, id_source::acked, !h.features.exactly_once_delivery);
    for (const auto& l : logs)
        CHECK(l->acked.empty());
}

/// WM-09 TestContinueAfterErrors: consumers that nack again and again, then stop, lose
/// nothing.
template <transport Transport>
void transport_check_continue_after_nacks(transport_harness<Transport>& h) {
    if (!h.features.redelivery_on_nack)
        LETTERBOX_DETAIL_SKIP("the transport does not redeliver after a nack");
    const auto sizes = sizes_for(h.features.size);
    constexpr std::size_t n = 50;
    auto publisher = h.make();
    const auto queue = declare_fresh_queue(h, publisher, "wm09");
    const auto messages = make_messages(n, "", queue);
    require_published(h, publisher, messages);

    for (std::size_t s = 0; s < sizes.nacking_subscribers; ++s) {
        INFO("nacking subscriber " << s);
        auto t = h.make();
        auto log =
            consume(h, t, consume_from(queue), nack_first(sizes.nacks_each, settle_action::hold));
        CHECK(collect_until(h, [&] { return log->settled >= sizes.nacks_each; }));
        CHECK(log->settle_errors.empty());
        CHECK(describe(close(h, t)) == success);
    }
    auto reader = h.make();
    auto log = consume(h, reader, consume_from(queue), ack_all());
    CHECK(collect_acked(h, {log}, n));
    check_ids(ids_of(messages), {log}, id_source::acked, !h.features.exactly_once_delivery);
}

/// WM-10 TestConsumerGroups: each group (a queue bound to the exchange) gets every message.
template <transport Transport>
void transport_check_consumer_groups(transport_harness<Transport>& h) {
    constexpr std::size_t n = 50;
    auto t = h.make();
    topology::exchange x;
    x.name = h.unique_name("wm10");
    x.type = topology::exchange_type::fanout;
    x.auto_delete = h.features.queue_expires.has_value();
    REQUIRE(describe(declare(h, t, x)) == success);
    std::vector<std::string> groups;
    for (const auto* stem : {"wm10-group-a", "wm10-group-b"}) {
        groups.push_back(declare_fresh_queue(h, t, stem));
        topology::binding b;
        b.source = x.name;
        b.destination = groups.back();
        REQUIRE(describe(bind(h, t, b)) == success);
    }
    const auto messages = make_messages(n, x.name, "");
    require_published(h, t, messages);
    auto subscriber = h.make();
    for (const auto& group : groups) {
        INFO("group " << group);
        auto log = consume(h, subscriber, consume_from(group), ack_all());
        CHECK(collect_acked(h, {log}, n));
        check_ids(ids_of(messages), {log}, id_source::acked, !h.features.exactly_once_delivery);
    }
}

/// WM-11 TestPublisherClose: publishers on several threads close right after their last
/// publish; every publish completes, none with success that then goes missing.
template <transport Transport>
void transport_check_publisher_close_after_concurrent_publishes(transport_harness<Transport>& h) {
    const auto sizes = sizes_for(h.features.size);
    auto admin = h.make();
    const auto queue = declare_fresh_queue(h, admin, "wm11");
    auto fleet = make_publisher_fleet(h, queue, sizes.publishers, sizes.messages_per_publisher);
    auto& publishers = fleet.publishers;
    auto& batches = fleet.batches;
    auto& all = fleet.ids;
    struct outcome {
        std::mutex mutex;
        std::map<message_id, std::vector<std::error_code>> publishes;
        std::vector<std::error_code> closes;
        std::size_t completed = 0;
    };
    auto out = std::make_shared<outcome>();
    {
        std::vector<std::thread> threads;
        for (std::size_t p = 0; p < sizes.publishers; ++p)
            threads.emplace_back([&, p] {
                for (const auto& m : batches[p])
                    publishers[p].async_publish(m, [out, id = m.id](std::error_code ec) {
                        std::lock_guard lock(out->mutex);
                        out->publishes[id].push_back(ec);
                        ++out->completed;
                    });
                publishers[p].async_close([out](std::error_code ec) {
                    std::lock_guard lock(out->mutex);
                    out->closes.push_back(ec);
                });
            });
        h.wait([&] {
            std::lock_guard lock(out->mutex);
            return out->completed == all.size() && out->closes.size() == sizes.publishers;
        });
        for (auto& thread : threads)
            thread.join();
    }
    std::vector<message_id> succeeded;
    {
        std::lock_guard lock(out->mutex);
        REQUIRE(out->completed == all.size());
        REQUIRE(out->closes.size() == sizes.publishers);
        for (const auto& ec : out->closes)
            CHECK(describe(ec) == success);
        for (const auto& id : all) {
            const auto& outcomes = out->publishes[id];
            INFO("message " << letterbox::to_string(id));
            REQUIRE(outcomes.size() == 1);
            const auto ec = outcomes.front();
            CHECK((!ec || ec == errc::outcome_unknown));
            if (!ec)
                succeeded.push_back(id);
        }
    }
    INFO(succeeded.size() << " of " << all.size() << " publishes succeeded");
    auto reader = h.make();
    auto log = consume(h, reader, consume_from(queue), ack_all());
    CHECK(collect_acked(h, {log}, succeeded.size()));
    // Outcome-unknown publishes may or may not have arrived: the log holds every success and
    // nothing that was not published.
    for (const auto& id : succeeded)
        CHECK(log->acked.contains(id));
    const std::set<message_id> published(all.begin(), all.end());
    for (const auto& [id, times] : log->delivered)
        CHECK(published.contains(id));
}

/// WM-12 TestTopic: a message goes only where its routing key leads.
template <transport Transport>
void transport_check_routing_isolates_queues(transport_harness<Transport>& h) {
    auto t = h.make();
    topology::exchange x;
    x.name = h.unique_name("wm12");
    x.type = topology::exchange_type::direct;
    x.auto_delete = h.features.queue_expires.has_value();
    REQUIRE(describe(declare(h, t, x)) == success);
    std::vector<std::string> queues;
    std::vector<message> messages;
    for (const auto* key : {"topic-a", "topic-b"}) {
        queues.push_back(declare_fresh_queue(h, t, key));
        topology::binding b;
        b.source = x.name;
        b.destination = queues.back();
        b.routing_key = key;
        REQUIRE(describe(bind(h, t, b)) == success);
        messages.push_back(make_messages(1, x.name, key).front());
    }
    require_published(h, t, messages);
    auto subscriber = h.make();
    std::vector<std::shared_ptr<consumer_log>> logs;
    for (const auto& q : queues)
        logs.push_back(consume(h, subscriber, consume_from(q), ack_all()));
    REQUIRE(collect_until(h, [&] { return logs[0]->unique() >= 1 && logs[1]->unique() >= 1; }));
    h.quiet();
    for (std::size_t i = 0; i < 2; ++i) {
        INFO("queue " << queues[i]);
        check_ids({messages[i].id}, {logs[i]}, id_source::delivered,
                  !h.features.exactly_once_delivery);
    }
}

/// WM-13 TestMessageCtx, in transport terms: an ack completes with success; once the
/// transport is closed, its deliveries can no longer be settled, and the unsettled one comes
/// back to another consumer.
template <transport Transport>
void transport_check_settling_after_close_fails(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "wm13");
    const auto messages = make_messages(2, "", queue);
    require_published(h, t, messages);
    auto log = consume(h, t, consume_from(queue), hold_all());
    REQUIRE(collect_until(h, [&] { return log->deliveries.size() >= 2; }));
    CHECK(describe(ack(h, t, log->deliveries[0])) == success);
    CHECK(describe(close(h, t)) == success);
    CHECK(describe(ack(h, t, log->deliveries[1])) != success);

    auto other = h.make();
    auto log2 = consume(h, other, consume_from(queue), ack_all());
    REQUIRE(collect_acked(h, {log2}, 1));
    h.quiet();
    check_ids({log->deliveries[1].msg.id}, {log2}, id_source::acked,
              !h.features.exactly_once_delivery);
    CHECK(log2->deliveries.front().redelivered);
}

/// WM-14 TestSubscribeCtx, in transport terms: a consumer cancelled at once, whose deliveries
/// are nacked, leaves every message to the next consumer.
template <transport Transport>
void transport_check_cancel_right_after_consume(transport_harness<Transport>& h) {
    if (!h.features.redelivery_on_nack)
        LETTERBOX_DETAIL_SKIP("the transport does not redeliver after a nack");
    constexpr std::size_t n = 20;
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "wm14");
    const auto messages = make_messages(n, "", queue);
    require_published(h, t, messages);

    auto options = consume_from(queue);
    options.consumer_tag = h.unique_name("wm14-consumer");
    auto first = begin_consume(t, options, [](const delivery&, const consumer_log&) {
        return settle_action::nack_requeue;
    });
    auto cancelled = std::make_shared<std::optional<std::error_code>>();
    auto seen_at_cancel = std::make_shared<std::size_t>(0);
    t.async_cancel(options.consumer_tag, [cancelled, seen_at_cancel, first](std::error_code ec) {
        *cancelled = ec;
        *seen_at_cancel = first->deliveries.size();
    });
    REQUIRE(h.wait([&] { return cancelled->has_value() && first->consume_result.has_value(); }));
    CHECK(describe(*first->consume_result) == success);
    CHECK(describe(**cancelled) == success);
    REQUIRE(h.wait([&] { return first->settled == first->deliveries.size(); }));
    CHECK(first->settle_errors.empty());
    h.quiet();
    CHECK(first->deliveries.size() == *seen_at_cancel);

    auto second = consume(h, t, consume_from(queue), ack_all());
    CHECK(collect_acked(h, {second}, n));
    check_ids(ids_of(messages), {second}, id_source::acked, !h.features.exactly_once_delivery);
}

/// WM-15 TestReconnect: the broker restarts twice during a publish stream; every publish that
/// completed with success is received. Failed publishes are retried with the same id, after a
/// back-off, until they succeed; outcome-unknown ones may therefore arrive twice.
template <transport Transport>
void transport_check_publish_through_broker_restarts(transport_harness<Transport>& h) {
    if (!h.features.restartable)
        LETTERBOX_DETAIL_SKIP("the fixture cannot restart the broker");
    if (!h.features.persistent)
        LETTERBOX_DETAIL_SKIP("the transport is not persistent");
    REQUIRE(h.restart_broker);
    const auto sizes = sizes_for(h.features.size);
    auto publisher = h.make();
    auto subscriber = h.make();
    const auto queue = declare_fresh_queue(h, publisher, "wm15");
    auto log = consume(h, subscriber, consume_from(queue), ack_all());

    struct stream {
        Transport* t = nullptr;
        std::vector<std::vector<message>> lanes;
        std::vector<std::size_t> next;
        std::vector<std::unique_ptr<boost::asio::steady_timer>> timers;
        std::vector<std::chrono::steady_clock::time_point> first_attempt;
        std::vector<milliseconds> backoff;
        std::map<message_id, std::vector<std::error_code>> outcomes;
        std::set<message_id> succeeded;
        std::vector<message_id> given_up;
        std::size_t lanes_done = 0;
        milliseconds give_up_after{};

        static void send(const std::shared_ptr<stream>& s, std::size_t lane) {
            if (s->next[lane] == s->lanes[lane].size()) {
                ++s->lanes_done;
                return;
            }
            const auto& m = s->lanes[lane][s->next[lane]];
            if (s->backoff[lane] == milliseconds{0})
                s->first_attempt[lane] = std::chrono::steady_clock::now();
            std::weak_ptr<stream> weak = s;
            s->t->async_publish(m, [weak, lane, id = m.id](std::error_code ec) {
                auto s = weak.lock();
                if (!s)
                    return;
                s->outcomes[id].push_back(ec);
                if (!ec) {
                    s->succeeded.insert(id);
                } else if (std::chrono::steady_clock::now() - s->first_attempt[lane] <
                           s->give_up_after) {
                    // Retry the same message after a back-off that doubles up to 250 ms.
                    s->backoff[lane] = std::min(milliseconds{250},
                                                std::max(milliseconds{1}, 2 * s->backoff[lane]));
                    auto& timer = *s->timers[lane];
                    timer.expires_after(s->backoff[lane]);
                    timer.async_wait([weak, lane](const boost::system::error_code& wait_ec) {
                        if (auto s = weak.lock(); s && !wait_ec)
                            send(s, lane);
                    });
                    return;
                } else {
                    s->given_up.push_back(id);
                }
                s->backoff[lane] = milliseconds{0};
                ++s->next[lane];
                send(s, lane);
            });
        }
    };
    auto s = std::make_shared<stream>();
    s->t = &publisher;
    s->give_up_after = h.features.timeout;
    std::vector<message_id> all;
    for (std::size_t lane = 0; lane < sizes.lanes; ++lane) {
        s->lanes.push_back(make_messages(sizes.messages_per_lane, "", queue));
        for (const auto& m : s->lanes.back())
            all.push_back(m.id);
        s->timers.push_back(std::make_unique<boost::asio::steady_timer>(publisher.get_executor()));
    }
    s->next.assign(sizes.lanes, 0);
    s->first_attempt.resize(sizes.lanes);
    s->backoff.assign(sizes.lanes, milliseconds{0});
    for (std::size_t lane = 0; lane < sizes.lanes; ++lane)
        stream::send(s, lane);

    // watermill restarts the broker when a third and when half of the messages are through.
    for (const auto fraction : {3, 2}) {
        const auto target = all.size() / static_cast<std::size_t>(fraction);
        CHECK(collect_until(h, [&] { return s->succeeded.size() >= target; }));
        INFO("restart at " << s->succeeded.size() << " of " << all.size());
        h.restart_broker();
    }
    REQUIRE(collect_until(h, [&] { return s->lanes_done == sizes.lanes; }));
    CHECK(s->given_up.empty());
    std::size_t failures = 0;
    for (const auto& [id, outcomes] : s->outcomes)
        failures += static_cast<std::size_t>(std::count_if(
            outcomes.begin(), outcomes.end(), [](std::error_code ec) { return !!ec; }));
    INFO(s->succeeded.size() << " of " << all.size() << " succeeded, after " << failures
                             << " failed attempts");
    CHECK(collect_until(h, [&] {
        return std::all_of(s->succeeded.begin(), s->succeeded.end(),
                           [&](const message_id& id) { return log->acked.contains(id); });
    }));
    std::size_t missing = 0;
    for (const auto& id : s->succeeded)
        missing += log->acked.contains(id) ? 0 : 1;
    CHECK(missing == 0);
    const std::set<message_id> published(all.begin(), all.end());
    for (const auto& [id, times] : log->delivered)
        CHECK(published.contains(id));
}

/// Concept: `async_close` is idempotent.
template <transport Transport>
void transport_check_close_is_idempotent(transport_harness<Transport>& h) {
    auto t = h.make();
    auto results = std::make_shared<std::vector<std::error_code>>();
    t.async_close([results](std::error_code ec) { results->push_back(ec); });
    t.async_close([results](std::error_code ec) { results->push_back(ec); });
    REQUIRE(h.wait([&] { return results->size() == 2; }));
    CHECK(describe((*results)[0]) == success);
    CHECK(describe((*results)[1]) == success);
    CHECK(describe(close(h, t)) == success);
}

/// Concept: `async_close` completes publishes still awaiting their confirm with
/// `outcome_unknown` (or success, if the confirm came first); each completes exactly once,
/// and every success is in the queue.
template <transport Transport>
void transport_check_close_completes_pending_publishes(transport_harness<Transport>& h) {
    const auto n = sizes_for(h.features.size).messages;
    auto admin = h.make();
    const auto queue = declare_fresh_queue(h, admin, "close-pending");
    auto t = h.make();
    const auto messages = make_messages(n, "", queue);
    auto outcomes = std::make_shared<std::map<message_id, std::vector<std::error_code>>>();
    auto completed = std::make_shared<std::size_t>(0);
    for (const auto& m : messages)
        t.async_publish(m, [outcomes, completed, id = m.id](std::error_code ec) {
            (*outcomes)[id].push_back(ec);
            ++*completed;
        });
    auto closed = std::make_shared<std::optional<std::error_code>>();
    t.async_close([closed](std::error_code ec) { *closed = ec; });
    REQUIRE(h.wait([&] { return closed->has_value() && *completed >= n; }));
    CHECK(describe(**closed) == success);
    h.quiet();
    CHECK(*completed == n);
    std::vector<message_id> succeeded;
    for (const auto& m : messages) {
        const auto& o = (*outcomes)[m.id];
        REQUIRE(o.size() == 1);
        CHECK((!o.front() || o.front() == errc::outcome_unknown));
        if (!o.front())
            succeeded.push_back(m.id);
    }
    auto log = consume(h, admin, consume_from(queue), ack_all());
    CHECK(collect_acked(h, {log}, succeeded.size()));
    for (const auto& id : succeeded)
        CHECK(log->acked.contains(id));
}

/// Concept: `async_close` requeues unacknowledged deliveries; they come back marked
/// redelivered, and the closed transport's consumer gets nothing more.
template <transport Transport>
void transport_check_close_requeues_unacked(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "close-requeue");
    const auto messages = make_messages(2, "", queue);
    require_published(h, t, messages);
    auto held = consume(h, t, consume_from(queue), hold_all());
    REQUIRE(collect_until(h, [&] { return held->deliveries.size() >= 2; }));
    REQUIRE(describe(close(h, t)) == success);

    auto other = h.make();
    auto log = consume(h, other, consume_from(queue), ack_all());
    CHECK(collect_acked(h, {log}, 2));
    check_ids(ids_of(messages), {log}, id_source::acked, !h.features.exactly_once_delivery);
    for (const auto& d : log->deliveries)
        CHECK(d.redelivered);
    REQUIRE(describe(publish(h, other, make_messages(1, "", queue).front())) == success);
    CHECK(collect_acked(h, {log}, 3));
    CHECK(held->deliveries.size() == 2);
}

/// Concept: a consumer cancel keeps its unacknowledged deliveries settleable, and stops
/// further deliveries to it.
template <transport Transport>
void transport_check_cancel_keeps_deliveries_settleable(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "cancel");
    const auto messages = make_messages(3, "", queue);
    require_published(h, t, messages);
    auto held = consume(h, t, consume_from(queue), hold_all());
    REQUIRE(collect_until(h, [&] { return held->deliveries.size() >= 3; }));
    REQUIRE(describe(cancel(h, t, held->consumer_tag)) == success);
    for (const auto& d : held->deliveries)
        CHECK(describe(ack(h, t, d)) == success);

    const auto later = make_messages(1, "", queue);
    require_published(h, t, later);
    auto log = consume(h, t, consume_from(queue), ack_all());
    CHECK(collect_acked(h, {log}, 1));
    h.quiet();
    CHECK(held->deliveries.size() == 3);
    check_ids(ids_of(later), {log}, id_source::acked, false);
}

/// Concept: an unroutable publish completes with `errc::no_route`, and the transport keeps
/// publishing.
template <transport Transport>
void transport_check_unroutable_publish_is_no_route(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "no-route");
    const auto nowhere = make_messages(1, "", h.unique_name("no-such-queue"));
    CHECK(describe(publish(h, t, nowhere.front())) == describe(errc::no_route));
    const auto routed = make_messages(1, "", queue);
    CHECK(describe(publish(h, t, routed.front())) == success);
}

/// Concept: a publish to a missing exchange completes with `errc::not_found`, and the
/// transport keeps publishing (after the channel error it must use a new channel).
template <transport Transport>
void transport_check_publish_to_missing_exchange_is_not_found(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "not-found");
    const auto lost = make_messages(1, h.unique_name("no-such-exchange"), "key");
    CHECK(describe(publish(h, t, lost.front())) == describe(errc::not_found));
    const auto routed = make_messages(3, "", queue);
    require_published(h, t, routed);
    auto log = consume(h, t, consume_from(queue), ack_all());
    CHECK(collect_acked(h, {log}, routed.size()));
}

/// Concept: consuming a missing queue completes with `errc::not_found`, and the transport keeps
/// consuming.
template <transport Transport>
void transport_check_consume_from_missing_queue_is_not_found(transport_harness<Transport>& h) {
    auto t = h.make();
    auto missing = begin_consume(t, consume_from(h.unique_name("no-such-queue")), ack_all());
    REQUIRE(h.wait([&] { return missing->consume_result.has_value(); }));
    CHECK(describe(*missing->consume_result) == describe(errc::not_found));

    const auto queue = declare_fresh_queue(h, t, "after-not-found");
    const auto messages = make_messages(2, "", queue);
    require_published(h, t, messages);
    auto log = consume(h, t, consume_from(queue), ack_all());
    CHECK(collect_acked(h, {log}, messages.size()));
}

/// Concept: declaring the same exchange, queue and binding again is idempotent.
template <transport Transport>
void transport_check_redeclaring_is_idempotent(transport_harness<Transport>& h) {
    auto t = h.make();
    topology::exchange x;
    x.name = h.unique_name("redeclare");
    x.type = topology::exchange_type::topic;
    x.auto_delete = h.features.queue_expires.has_value();
    const auto q = suite_queue(h.features, h.unique_name("redeclare"));
    topology::binding b;
    b.source = x.name;
    b.destination = q.name;
    b.routing_key = "suite.#";
    for (int i = 0; i < 2; ++i) {
        INFO("declaration " << i + 1);
        CHECK(describe(declare(h, t, x)) == success);
        CHECK(describe(declare(h, t, q)) == success);
        CHECK(describe(bind(h, t, b)) == success);
    }
    const auto messages = make_messages(1, x.name, "suite.redeclared");
    require_published(h, t, messages);
    auto log = consume(h, t, consume_from(q.name), ack_all());
    CHECK(collect_acked(h, {log}, 1));
    h.quiet();
    CHECK(log->deliveries.size() == 1);
}

/// Concept: `on_delivery` runs only after `async_consume` completed, one delivery at a time.
template <transport Transport>
void transport_check_deliveries_follow_consume_completion(transport_harness<Transport>& h) {
    auto t = h.make();
    const auto queue = declare_fresh_queue(h, t, "consume-order");
    const auto messages = make_messages(5, "", queue);
    require_published(h, t, messages);
    auto log = consume(h, t, consume_from(queue), ack_all());
    CHECK(collect_acked(h, {log}, messages.size()));
    CHECK(log->early_deliveries == 0);
    CHECK(log->reentered == 0);
}

/// Concept (at-least-once, RabbitMQ's requeue loop): a consumer that nacks every delivery
/// with requeue gets the message again and again, and other consumers keep working meanwhile.
template <transport Transport>
void transport_check_requeue_loop_does_not_starve_others(transport_harness<Transport>& h) {
    if (!h.features.redelivery_on_nack)
        LETTERBOX_DETAIL_SKIP("the transport does not redeliver after a nack");
    auto looping = h.make();
    const auto poison = declare_fresh_queue(h, looping, "requeue-loop");
    require_published(h, looping, make_messages(1, "", poison));
    auto loop = consume(h, looping, consume_from(poison), [](const delivery&, const consumer_log&) {
        return settle_action::nack_requeue;
    });
    REQUIRE(collect_until(h, [&] { return loop->deliveries.size() >= 3; }));

    auto other = h.make();
    const auto queue = declare_fresh_queue(h, other, "beside-the-loop");
    const auto messages = make_messages(3, "", queue);
    require_published(h, other, messages);
    auto log = consume(h, other, consume_from(queue), ack_all());
    CHECK(collect_acked(h, {log}, messages.size()));
    CHECK(describe(close(h, looping)) == success);
    for (std::size_t i = 1; i < loop->deliveries.size(); ++i)
        CHECK(loop->deliveries[i].redelivered);
}

// ---- queue_reader: async_get and async_queue_depth (run only for models of queue_reader) ----

/// queue_reader: gets hand out the queue's messages in order, each once, with manual
/// acknowledgement; an empty queue answers `std::nullopt`; acked messages are gone.
template <transport Transport>
void transport_check_get_fetches_in_order_until_empty(transport_harness<Transport>& h) {
    if constexpr (!queue_reader<Transport>) {
        LETTERBOX_DETAIL_SKIP("the transport does not model queue_reader");
    } else {
        auto t = h.make();
        const auto queue = declare_fresh_queue(h, t, "get-order");
        const auto empty = get(h, t, queue);
        CHECK(describe(empty.ec) == success);
        CHECK_FALSE(empty.d.has_value());

        const auto messages = make_messages(3, "", queue);
        require_published(h, t, messages);
        std::vector<delivery> got;
        for (std::size_t i = 0; i < messages.size(); ++i) {
            INFO("get " << i);
            auto r = get(h, t, queue);
            REQUIRE(describe(r.ec) == success);
            REQUIRE(r.d.has_value());
            got.push_back(std::move(*r.d));
        }
        const auto after = get(h, t, queue);
        CHECK(describe(after.ec) == success);
        CHECK_FALSE(after.d.has_value());

        for (std::size_t i = 0; i < got.size(); ++i) {
            INFO("delivery " << i);
            if (h.features.guaranteed_order)
                CHECK(got[i].msg.id == messages[i].id);
            const auto* m = find_message(messages, got[i].msg.id);
            REQUIRE(m != nullptr);
            CHECK(got[i].msg == *m);
            CHECK(got[i].queue == queue);
            CHECK(got[i].consumer_tag.empty());
            CHECK_FALSE(got[i].redelivered);
            CHECK(describe(ack(h, t, got[i])) == success);
        }
        const auto depth = queue_depth(h, t, queue);
        CHECK(describe(depth.ec) == success);
        CHECK(depth.ready == 0);
        h.quiet();
        const auto later = get(h, t, queue);
        CHECK_FALSE(later.d.has_value());
    }
}

/// queue_reader: a fetched message nacked with requeue comes back marked redelivered (at its
/// original position when the transport guarantees order); one rejected without requeue is
/// gone.
template <transport Transport>
void transport_check_get_then_nack_requeues(transport_harness<Transport>& h) {
    if constexpr (!queue_reader<Transport>) {
        LETTERBOX_DETAIL_SKIP("the transport does not model queue_reader");
    } else {
        if (!h.features.redelivery_on_nack)
            LETTERBOX_DETAIL_SKIP("the transport does not redeliver after a nack");
        auto t = h.make();
        const auto queue = declare_fresh_queue(h, t, "get-nack");
        const auto messages = make_messages(3, "", queue);
        require_published(h, t, messages);

        auto first = get(h, t, queue);
        REQUIRE(describe(first.ec) == success);
        REQUIRE(first.d.has_value());
        auto second = get(h, t, queue);
        REQUIRE(describe(second.ec) == success);
        REQUIRE(second.d.has_value());
        // Back in reverse order: a classic queue still restores the original order.
        CHECK(describe(nack(h, t, *second.d, true)) == success);
        CHECK(describe(nack(h, t, *first.d, true)) == success);

        std::vector<delivery> again;
        for (std::size_t i = 0; i < messages.size(); ++i) {
            auto r = get(h, t, queue);
            REQUIRE(describe(r.ec) == success);
            REQUIRE(r.d.has_value());
            again.push_back(std::move(*r.d));
        }
        std::set<message_id> ids;
        for (const auto& d : again)
            ids.insert(d.msg.id);
        const auto published = ids_of(messages);
        CHECK(ids == std::set<message_id>(published.begin(), published.end()));
        for (const auto& d : again) {
            const bool was_fetched = d.msg.id == first.d->msg.id || d.msg.id == second.d->msg.id;
            CHECK(d.redelivered == was_fetched);
        }
        if (h.features.guaranteed_order)
            for (std::size_t i = 0; i < messages.size(); ++i)
                CHECK(again[i].msg.id == messages[i].id);

        auto reject = await_completion(
            h, [&](auto done) { t.async_reject(again[0], false, std::move(done)); });
        CHECK(describe(reject) == success);
        CHECK(describe(ack(h, t, again[1])) == success);
        CHECK(describe(nack(h, t, again[2], true)) == success);
        const auto depth = queue_depth_settled(h, t, queue, 1);
        CHECK(describe(depth.ec) == success);
        CHECK(depth.ready == 1);
    }
}

/// queue_reader: fetched messages that were never settled return to the queue when the
/// transport closes, marked redelivered.
template <transport Transport>
void transport_check_unsettled_gets_return_on_close(transport_harness<Transport>& h) {
    if constexpr (!queue_reader<Transport>) {
        LETTERBOX_DETAIL_SKIP("the transport does not model queue_reader");
    } else {
        auto admin = h.make();
        const auto queue = declare_fresh_queue(h, admin, "get-close");
        const auto messages = make_messages(2, "", queue);
        require_published(h, admin, messages);

        auto t = h.make();
        for (std::size_t i = 0; i < messages.size(); ++i) {
            auto r = get(h, t, queue);
            REQUIRE(describe(r.ec) == success);
            REQUIRE(r.d.has_value());
        }
        const auto held = queue_depth(h, admin, queue);
        CHECK(describe(held.ec) == success);
        CHECK(held.ready == 0); // unacknowledged messages are not ready
        REQUIRE(describe(close(h, t)) == success);

        // The requeue may trail the close's completion on a real broker: look a few times.
        std::uint32_t ready = 0;
        for (int attempt = 0; attempt < 20 && ready < messages.size(); ++attempt) {
            if (attempt != 0)
                h.quiet();
            ready = queue_depth(h, admin, queue).ready;
        }
        CHECK(ready == messages.size());
        auto log = consume(h, admin, consume_from(queue), ack_all());
        CHECK(collect_acked(h, {log}, messages.size()));
        check_ids(ids_of(messages), {log}, id_source::acked, !h.features.exactly_once_delivery);
        for (const auto& d : log->deliveries)
            CHECK(d.redelivered);
    }
}

/// queue_reader: the depth counts ready messages; a missing queue is `errc::not_found` for
/// both operations, and neither the transport nor the deliveries it holds from other queues
/// suffer from it.
template <transport Transport>
void transport_check_depth_and_missing_queues(transport_harness<Transport>& h) {
    if constexpr (!queue_reader<Transport>) {
        LETTERBOX_DETAIL_SKIP("the transport does not model queue_reader");
    } else {
        auto t = h.make();
        const auto queue = declare_fresh_queue(h, t, "depth");
        const auto zero = queue_depth(h, t, queue);
        CHECK(describe(zero.ec) == success);
        CHECK(zero.ready == 0);
        const auto messages = make_messages(3, "", queue);
        require_published(h, t, messages);
        const auto three = queue_depth(h, t, queue);
        CHECK(describe(three.ec) == success);
        CHECK(three.ready == 3);

        auto held = get(h, t, queue);
        REQUIRE(describe(held.ec) == success);
        REQUIRE(held.d.has_value());

        const auto missing = h.unique_name("no-such-queue");
        CHECK(describe(queue_depth(h, t, missing).ec) == describe(errc::not_found));
        CHECK(describe(get(h, t, missing).ec) == describe(errc::not_found));

        const auto two = queue_depth(h, t, queue);
        CHECK(describe(two.ec) == success);
        CHECK(two.ready == 2);
        // The held delivery is still settleable: the failures did not close its channel.
        CHECK(describe(ack(h, t, *held.d)) == success);
        auto next = get(h, t, queue);
        CHECK(describe(next.ec) == success);
        CHECK(next.d.has_value());
        if (next.d)
            CHECK(describe(ack(h, t, *next.d)) == success);
        const auto one = queue_depth(h, t, queue);
        CHECK(describe(one.ec) == success);
        CHECK(one.ready == 1);
    }
}

/// queue_reader: a get right after fetched messages were nacked with requeue fetches them
/// again, and its message count (when the transport gives one) counts the rest. A dead-letter
/// scan right after a browse gave everything back takes its bound from that count. Repeated,
/// because on a real broker the wrong answer is a race.
template <transport Transport>
void transport_check_get_sees_own_requeues(transport_harness<Transport>& h) {
    if constexpr (!queue_reader<Transport>) {
        LETTERBOX_DETAIL_SKIP("the transport does not model queue_reader");
    } else {
        if (!h.features.redelivery_on_nack)
            LETTERBOX_DETAIL_SKIP("the transport does not redeliver after a nack");
        auto t = h.make();
        const auto queue = declare_fresh_queue(h, t, "get-requeue");
        const auto messages = make_messages(3, "", queue);
        require_published(h, t, messages);
        for (int round = 0; round < 50; ++round) {
            INFO("round " << round);
            std::vector<delivery> held;
            for (std::size_t i = 0; i < messages.size(); ++i) {
                auto r = get(h, t, queue);
                REQUIRE(describe(r.ec) == success);
                REQUIRE(r.d.has_value());
                if (r.d->message_count)
                    CHECK(*r.d->message_count == messages.size() - 1 - i);
                held.push_back(std::move(*r.d));
            }
            for (const auto& d : held)
                REQUIRE(describe(nack(h, t, d, true)) == success);
        }
        const auto depth = queue_depth_settled(h, t, queue, 3);
        CHECK(depth.ready == messages.size());
    }
}

} // namespace letterbox::testing::detail

#undef LETTERBOX_DETAIL_SKIP

namespace letterbox::testing::detail {

/// The transport type a fixture makes.
template <class Fixture>
using fixture_transport_t = std::remove_cvref_t<decltype(std::declval<Fixture&>().make())>;

/// Runs one check against a fresh fixture.
template <class Fixture>
void run_transport_check(void (*check)(transport_harness<fixture_transport_t<Fixture>>&)) {
    static_assert(transport<fixture_transport_t<Fixture>>,
                  "the fixture's make() must return a model of letterbox::transport");
    static_assert(transport_suite_fixture<Fixture>,
                  "a transport suite fixture needs make(), run_until(done, timeout), "
                  "unique_name(stem) and static constexpr transport_features features");
    Fixture fixture;
    transport_harness<fixture_transport_t<Fixture>> h{
        [&fixture] { return fixture.make(); },
        [&fixture](const std::function<bool()>& done, std::chrono::milliseconds timeout) {
            return fixture.run_until(done, timeout);
        },
        [&fixture](std::string_view stem) { return std::string(fixture.unique_name(stem)); },
        {},
        Fixture::features};
    if constexpr (requires { fixture.restart_broker(); })
        h.restart_broker = [&fixture] {
            fixture.restart_broker();
        };
    check(h);
}

} // namespace letterbox::testing::detail

/// Expands the `transport` conformance suite: one Catch2 `TEMPLATE_LIST_TEST_CASE` per check,
/// each run once per fixture in the `std::tuple` named by `fixtures` (see
/// `letterbox::testing::transport_suite_fixture`). Every case gets a fresh fixture and its
/// own queue and exchange names.
///
/// Names are "transport conformance: <check> - <fixtures> - <index>", so give the tuple a
/// name specific to the model (`amqp_transport_fixtures`). Tags: `[conformance][transport]`,
/// plus `[threads]` on the cases that start threads (the ThreadSanitizer job runs those),
/// `[reconnect]` on the broker-restart case, and `[queue_reader]` on the `async_get` and
/// `async_queue_depth` cases, which skip (with a warning) for a transport that does not model
/// `letterbox::queue_reader`.
///
/// Example:
///
///     using my_transport_fixtures = std::tuple<my_fixture>;
///     LETTERBOX_TRANSPORT_SUITE(my_transport_fixtures)
#define LETTERBOX_TRANSPORT_SUITE(fixtures) LETTERBOX_TRANSPORT_SUITE_WITH_TAGS(fixtures, "")

/// `LETTERBOX_TRANSPORT_SUITE`, with `extra_tags` (a string literal) on every case: for a real
/// broker, `"[.integration][amqp]"` hides the cases from a default run.
#define LETTERBOX_TRANSPORT_SUITE_WITH_TAGS(fixtures, extra_tags)                                  \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags,                                                                      \
        "a published message arrives with its id, type, headers, body and properties", "",         \
        transport_check_round_trip)                                                                \
    LETTERBOX_DETAIL_TRANSPORT_CASE(fixtures, extra_tags,                                          \
                                    "a message published with the nil id arrives with a fresh id", \
                                    "", transport_check_publish_assigns_an_id_to_the_nil_id)       \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags, "WM-01 messages published before subscribing are all received", "",  \
        transport_check_publish_subscribe)                                                         \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags, "WM-02 concurrent publishers and competing consumers lose nothing",  \
        "[threads]", transport_check_concurrent_publishers_competing_consumers)                    \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags, "WM-03 many queues at once each receive exactly their own messages", \
        "", transport_check_many_queues_at_once)                                                   \
    LETTERBOX_DETAIL_TRANSPORT_CASE(fixtures, extra_tags,                                          \
                                    "WM-04 messages with one key arrive in order", "",             \
                                    transport_check_publish_subscribe_in_order)                    \
    LETTERBOX_DETAIL_TRANSPORT_CASE(fixtures, extra_tags, "WM-05 nacked messages are redelivered", \
                                    "", transport_check_resend_on_nack)                            \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags,                                                                      \
        "a message nacked or rejected with requeue comes back marked redelivered", "",             \
        transport_check_redelivery_is_flagged)                                                     \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags,                                                                      \
        "ack, and nack or reject without requeue, settle a message for good", "",                  \
        transport_check_ack_and_nack_settle)                                                       \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags,                                                                      \
        "WM-06 with prefetch 1 the next message waits for the held one's ack", "",                 \
        transport_check_held_delivery_blocks_the_next)                                             \
    LETTERBOX_DETAIL_TRANSPORT_CASE(fixtures, extra_tags,                                          \
                                    "WM-07 consumers that stop mid-stream lose no message", "",    \
                                    transport_check_no_loss_when_consumers_stop)                   \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags, "WM-08 consumers started and closed all at once break nothing", "",  \
        transport_check_concurrent_close)                                                          \
    LETTERBOX_DETAIL_TRANSPORT_CASE(fixtures, extra_tags,                                          \
                                    "WM-09 consumers that nack and stop lose no message", "",      \
                                    transport_check_continue_after_nacks)                          \
    LETTERBOX_DETAIL_TRANSPORT_CASE(fixtures, extra_tags,                                          \
                                    "WM-10 every queue bound to an exchange gets every message",   \
                                    "", transport_check_consumer_groups)                           \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags,                                                                      \
        "WM-11 publishers closing after concurrent publishes lose no success", "[threads]",        \
        transport_check_publisher_close_after_concurrent_publishes)                                \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags, "WM-12 a message reaches only the queue its routing key leads to",   \
        "", transport_check_routing_isolates_queues)                                               \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags,                                                                      \
        "WM-13 deliveries of a closed transport cannot be settled and come back", "",              \
        transport_check_settling_after_close_fails)                                                \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags,                                                                      \
        "WM-14 a consumer cancelled at once leaves every message to the next", "",                 \
        transport_check_cancel_right_after_consume)                                                \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags, "WM-15 every successful publish survives broker restarts",           \
        "[reconnect]", transport_check_publish_through_broker_restarts)                            \
    LETTERBOX_DETAIL_TRANSPORT_CASE(fixtures, extra_tags, "async_close is idempotent", "",         \
                                    transport_check_close_is_idempotent)                           \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags,                                                                      \
        "async_close completes pending publishes with success or outcome_unknown", "",             \
        transport_check_close_completes_pending_publishes)                                         \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags, "async_close requeues unacknowledged deliveries as redelivered", "", \
        transport_check_close_requeues_unacked)                                                    \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags,                                                                      \
        "a cancelled consumer's unacknowledged deliveries can still be settled", "",               \
        transport_check_cancel_keeps_deliveries_settleable)                                        \
    LETTERBOX_DETAIL_TRANSPORT_CASE(fixtures, extra_tags,                                          \
                                    "an unroutable publish completes with no_route", "",           \
                                    transport_check_unroutable_publish_is_no_route)                \
    LETTERBOX_DETAIL_TRANSPORT_CASE(fixtures, extra_tags,                                          \
                                    "a publish to a missing exchange completes with not_found",    \
                                    "", transport_check_publish_to_missing_exchange_is_not_found)  \
    LETTERBOX_DETAIL_TRANSPORT_CASE(fixtures, extra_tags,                                          \
                                    "consuming from a missing queue completes with not_found", "", \
                                    transport_check_consume_from_missing_queue_is_not_found)       \
    LETTERBOX_DETAIL_TRANSPORT_CASE(fixtures, extra_tags,                                          \
                                    "declaring an exchange, queue and binding again succeeds", "", \
                                    transport_check_redeclaring_is_idempotent)                     \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags, "deliveries start after async_consume completes, one at a time", "", \
        transport_check_deliveries_follow_consume_completion)                                      \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags,                                                                      \
        "a consumer that requeues every delivery does not starve other consumers", "",             \
        transport_check_requeue_loop_does_not_starve_others)                                       \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags,                                                                      \
        "async_get fetches in order, unacknowledged, until the queue is empty", "[queue_reader]",  \
        transport_check_get_fetches_in_order_until_empty)                                          \
    LETTERBOX_DETAIL_TRANSPORT_CASE(fixtures, extra_tags,                                          \
                                    "a fetched message nacked with requeue comes back",            \
                                    "[queue_reader]", transport_check_get_then_nack_requeues)      \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags, "fetched messages never settled return when the transport closes",   \
        "[queue_reader]", transport_check_unsettled_gets_return_on_close)                          \
    LETTERBOX_DETAIL_TRANSPORT_CASE(                                                               \
        fixtures, extra_tags,                                                                      \
        "async_queue_depth counts ready messages, a missing queue is not_found", "[queue_reader]", \
        transport_check_depth_and_missing_queues)                                                  \
    LETTERBOX_DETAIL_TRANSPORT_CASE(fixtures, extra_tags,                                          \
                                    "a get right after nacks with requeue fetches them again",     \
                                    "[queue_reader]", transport_check_get_sees_own_requeues)

#define LETTERBOX_DETAIL_TRANSPORT_CASE(fixtures, extra_tags, name, tags, check)                   \
    TEMPLATE_LIST_TEST_CASE("transport conformance: " name,                                        \
                            "[conformance][transport]" extra_tags tags, fixtures) {                \
        ::letterbox::testing::detail::run_transport_check<TestType>(                               \
            &::letterbox::testing::detail::check);                                                 \
    }
