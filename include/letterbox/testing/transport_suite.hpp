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
#include <letterbox/config.hpp>
#include <letterbox/testing/detail/transport_harness.hpp>
#include <letterbox/testing/detail/transport_suite_support.hpp>
#include <letterbox/testing/transport_features.hpp>

#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

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

} // namespace letterbox::testing

// ---- the checks ----------------------------------------------------------------------------

#include <letterbox/testing/detail/transport_lifecycle_checks.hpp>
#include <letterbox/testing/detail/transport_publish_checks.hpp>
#include <letterbox/testing/detail/transport_queue_reader_checks.hpp>
#include <letterbox/testing/detail/transport_settle_checks.hpp>
#include <letterbox/testing/detail/transport_topology_checks.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

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
