// SPDX-License-Identifier: BSL-1.0
#pragma once

// The reusable pieces of the transport conformance suite: messages, awaited operations,
// consumers that log what they see, and the comparisons the checks make. They are public
// (namespace letterbox::testing), for tests that go beyond the suite, and constrained by
// `letterbox::transport` (the `async_get` and `async_queue_depth` helpers by
// `letterbox::queue_reader`), so that tests/archetypes/transport.cpp can instantiate them with
// the archetypes. Included by letterbox/testing/transport_suite.hpp.

#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/consume_options.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/testing/detail/describe.hpp>
#include <letterbox/testing/detail/transport_harness.hpp>
#include <letterbox/testing/transport_features.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

// Internal: skips the rest of a check, saying why (Catch2 v2 has no SKIP). Every
// transport_*_checks.hpp uses it.
#define LETTERBOX_DETAIL_SKIP(reason)                                                              \
    do {                                                                                           \
        WARN("skipped: " << reason);                                                               \
        return;                                                                                    \
    } while (false)

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

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
/// An exchange declaration for the suite: of `type`, auto-deleted when the features ask queues
/// to expire (so that runs against a shared broker leave nothing behind).
inline topology::exchange suite_exchange(const transport_features& features, std::string name,
                                         topology::exchange_type type) {
    topology::exchange x;
    x.name = std::move(name);
    x.type = type;
    x.auto_delete = features.queue_expires.has_value();
    return x;
}

/// A binding of `destination` to `source` with `routing_key`.
inline topology::binding suite_binding(std::string source, std::string destination,
                                       std::string routing_key = {}) {
    topology::binding b;
    b.source = std::move(source);
    b.destination = std::move(destination);
    b.routing_key = std::move(routing_key);
    return b;
}

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

/// Declares an exchange of `type` with a name unique to the call, made from `stem`; requires
/// success. Returns the declaration.
template <transport Transport>
topology::exchange declare_fresh_exchange(transport_harness<Transport>& h, Transport& t,
                                          std::string_view stem, topology::exchange_type type) {
    auto x = suite_exchange(h.features, h.unique_name(stem), type);
    REQUIRE(describe(declare(h, t, x)) == success);
    return x;
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

/// Starts one thread per publisher of `fleet`, which calls `publish_batch(publisher, batch)`
/// with its own batch; runs completion handlers until `done()` (or the timeout), then joins
/// the threads.
template <transport Transport, class PublishBatch>
void publish_from_threads(transport_harness<Transport>& h, publisher_fleet<Transport>& fleet,
                          PublishBatch publish_batch, const std::function<bool()>& done) {
    std::vector<std::thread> threads;
    for (std::size_t p = 0; p < fleet.publishers.size(); ++p)
        threads.emplace_back([&, p] { publish_batch(fleet.publishers[p], fleet.batches[p]); });
    h.wait(done);
    for (auto& thread : threads)
        thread.join();
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

/// Makes `n` new messages for `queue` (through the default exchange) and publishes them on `t`,
/// which must all succeed (`require_published`). Returns them.
template <transport Transport>
std::vector<message> publish_new_messages(transport_harness<Transport>& h, Transport& t,
                                          const std::string& queue, std::size_t n) {
    auto messages = make_messages(n, "", queue);
    require_published(h, t, messages);
    return messages;
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

/// `get` that must succeed and fetch a message: returns the delivery.
template <queue_reader Transport>
delivery require_get(transport_harness<Transport>& h, Transport& t, const std::string& queue) {
    auto r = get(h, t, queue);
    REQUIRE(describe(r.ec) == success);
    REQUIRE(r.d.has_value());
    return std::move(*r.d);
}

/// Checks that a `get` of `queue` succeeds and finds it empty.
template <queue_reader Transport>
void check_get_finds_empty(transport_harness<Transport>& h, Transport& t,
                           const std::string& queue) {
    const auto r = get(h, t, queue);
    CHECK(describe(r.ec) == success);
    CHECK_FALSE(r.d.has_value());
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

/// Checks that `depth` was read and counts `ready` ready messages.
inline void check_ready(const depth_result& depth, std::uint32_t ready) {
    CHECK(describe(depth.ec) == success);
    CHECK(depth.ready == ready);
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

/// Consumes with `options` on `t`, holding every delivery unsettled, until at least `n`
/// arrived (required). Returns the consumer's log.
template <transport Transport>
std::shared_ptr<consumer_log> consume_held(transport_harness<Transport>& h, Transport& t,
                                           const consume_options& options, std::size_t n) {
    auto log = consume(h, t, options, hold_all());
    REQUIRE(collect_until(h, [&] { return log->deliveries.size() >= n; }));
    return log;
}

/// Consumes `queue` on `t`, acknowledging every delivery, and checks that `n` distinct
/// messages were acknowledged (`collect_acked`). Returns the consumer's log.
template <transport Transport>
std::shared_ptr<consumer_log> consume_acked(transport_harness<Transport>& h, Transport& t,
                                            const std::string& queue, std::size_t n) {
    auto log = consume(h, t, consume_from(queue), ack_all());
    CHECK(collect_acked(h, {log}, n));
    return log;
}

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

/// Checks that every message `log` received is one of `published` (where some publishes had
/// an unknown outcome, and may or may not have arrived).
inline void check_only_published(const std::vector<message_id>& published,
                                 const consumer_log& log) {
    const std::set<message_id> known(published.begin(), published.end());
    for (const auto& [id, times] : log.delivered)
        CHECK(known.contains(id));
}

/// `consume_acked` for `messages`, then checks that the consumer acknowledged exactly them
/// (`check_ids`; one message twice only where the features allow duplicates). Returns the
/// consumer's log.
template <transport Transport>
std::shared_ptr<consumer_log> consume_checked(transport_harness<Transport>& h, Transport& t,
                                              const std::string& queue,
                                              const std::vector<message>& messages) {
    auto log = consume_acked(h, t, queue, messages.size());
    check_ids(ids_of(messages), {log}, id_source::acked, !h.features.exactly_once_delivery);
    return log;
}

/// The message of `messages` with id `id`, or null.
inline const message* find_message(const std::vector<message>& messages, const message_id& id) {
    const auto it = std::find_if(messages.begin(), messages.end(),
                                 [&](const message& m) { return m.id == id; });
    return it == messages.end() ? nullptr : &*it;
}

} // namespace letterbox::testing
