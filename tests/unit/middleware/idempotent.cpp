// SPDX-License-Identifier: BSL-1.0

#include <letterbox/middleware/idempotent.hpp>

#include <letterbox/backoff/fixed.hpp>
#include <letterbox/concepts/handler.hpp>
#include <letterbox/error.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/middleware/compose.hpp>
#include <letterbox/middleware/redelivery.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>
#include <letterbox/virtual_clock.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <latch>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace unit_middleware_idempotent {

namespace {

using letterbox::errc;

// The in-memory stand-in for a business table: a write staged in the unit of work is applied
// by its on_commit callback, so it happens exactly when the unit commits, and never otherwise.
struct ledger {
    std::map<letterbox::message_id, int> effects;

    std::error_code stage(letterbox::in_memory_unit_of_work& u, const letterbox::message& m) {
        return u.on_commit([this, id = m.id] { ++effects[id]; });
    }
};

struct fixture {
    letterbox::virtual_clock clock;
    letterbox::in_memory_inbox_store inbox;
    letterbox::in_memory_outbox_store outbox;
    ledger business;
    letterbox::message_id_generator ids{7};

    letterbox::message message_of(std::string type = "enrollment.confirmed") {
        letterbox::message m;
        m.id = ids();
        m.type = std::move(type);
        return m;
    }
    static auto begin() {
        return [] {
            return letterbox::in_memory_unit_of_work{};
        };
    }
    std::size_t outbox_rows() {
        std::error_code ec;
        return outbox.list({}, ec).size();
    }
};

} // namespace

static_assert(letterbox::handler<decltype(letterbox::idempotent(
                  [](const letterbox::message&, letterbox::in_memory_unit_of_work&) {},
                  std::declval<letterbox::in_memory_inbox_store&>(),
                  [] { return letterbox::in_memory_unit_of_work{}; }, "c",
                  std::declval<letterbox::virtual_clock&>()))>);

// The idempotent unit of work lives in letterbox::middleware; its letterbox:: names are
// using-declarations of the same entities (compatibility names).
static_assert(std::is_same_v<letterbox::idempotent_stats, letterbox::middleware::idempotent_stats>);
using effect_fn = void (*)(const letterbox::message&, letterbox::in_memory_unit_of_work&);
using begin_fn = letterbox::in_memory_unit_of_work (*)();
static_assert(std::is_same_v<
              letterbox::idempotent_handler<letterbox::in_memory_inbox_store, begin_fn, effect_fn,
                                            letterbox::virtual_clock>,
              letterbox::middleware::idempotent_handler<letterbox::in_memory_inbox_store, begin_fn,
                                                        effect_fn, letterbox::virtual_clock>>);
static_assert(std::is_same_v<
              decltype(letterbox::idempotent<letterbox::in_memory_inbox_store, begin_fn, effect_fn,
                                             letterbox::virtual_clock>),
              decltype(letterbox::middleware::idempotent<letterbox::in_memory_inbox_store, begin_fn,
                                                         effect_fn, letterbox::virtual_clock>)>);

TEST_CASE("idempotent applies the effect once, records the key and skips a redelivery",
          "[middleware][idempotent]") {
    fixture f;
    int runs = 0;
    auto h = letterbox::idempotent(
        [&](const letterbox::message& m, letterbox::in_memory_unit_of_work& u) {
            ++runs;
            return f.business.stage(u, m);
        },
        f.inbox, fixture::begin(), "access-service", f.clock);
    const auto m = f.message_of();

    CHECK_FALSE(h(m));
    CHECK_FALSE(h(m)); // the broker redelivers: acked, no second effect
    CHECK_FALSE(h(m));
    CHECK(runs == 1);
    CHECK(f.business.effects[m.id] == 1);
    std::error_code ec;
    CHECK(f.inbox.contains("access-service", m.id, ec));
    CHECK(h.stats() == letterbox::idempotent_stats{1, 2, 0});
}

TEST_CASE("idempotent keys are per consumer", "[middleware][idempotent]") {
    fixture f;
    auto effect = [&](const letterbox::message& m, letterbox::in_memory_unit_of_work& u) {
        return f.business.stage(u, m);
    };
    auto access = letterbox::idempotent(effect, f.inbox, fixture::begin(), "access", f.clock);
    auto billing = letterbox::idempotent(effect, f.inbox, fixture::begin(), "billing", f.clock);
    const auto m = f.message_of();
    CHECK_FALSE(access(m));
    CHECK_FALSE(billing(m));
    CHECK_FALSE(billing(m));
    CHECK(f.business.effects[m.id] == 2); // once per consumer
    CHECK(billing.stats().duplicates == 1);
}

TEST_CASE("idempotent: a failed effect leaves no effect, no inbox record and no outgoing event",
          "[middleware][idempotent]") {
    fixture f;
    bool fail = true;
    bool throw_instead = GENERATE(false, true);
    auto h = letterbox::idempotent(
        [&](const letterbox::message& m, letterbox::in_memory_unit_of_work& u) -> std::error_code {
            REQUIRE_FALSE(f.business.stage(u, m));
            letterbox::outbox_entry out;
            out.msg.id = f.ids();
            out.msg.type = "access.granted";
            REQUIRE_FALSE(f.outbox.add(u, out, f.clock.wall_now()));
            if (fail && throw_instead)
                throw std::runtime_error("database of grades unreachable");
            return fail ? make_error_code(errc::timed_out) : std::error_code{};
        },
        f.inbox, fixture::begin(), "access", f.clock);
    const auto m = f.message_of();

    if (throw_instead)
        CHECK_THROWS_AS(h(m), std::runtime_error);
    else
        CHECK(h(m) == errc::timed_out);
    std::error_code ec;
    CHECK_FALSE(f.inbox.contains("access", m.id, ec));
    CHECK(f.business.effects.empty());
    CHECK(f.outbox_rows() == 0);
    CHECK(h.stats().failed == 1);

    // The redelivery runs the effect again, and this time everything commits together.
    fail = false;
    CHECK_FALSE(h(m));
    CHECK(f.inbox.contains("access", m.id, ec));
    CHECK(f.business.effects[m.id] == 1);
    CHECK(f.outbox_rows() == 1);
}

TEST_CASE("idempotent: a commit that fails applies nothing and reports the error",
          "[middleware][idempotent]") {
    fixture f;
    auto h = letterbox::idempotent(
        [&](const letterbox::message& m, letterbox::in_memory_unit_of_work& u) {
            return f.business.stage(u, m);
        },
        f.inbox, fixture::begin(), "access", f.clock);
    const auto m = f.message_of();
    // Operation 0 is try_record; operation 1 is the commit.
    f.inbox.fail_nth(1, errc::store_full);
    CHECK(h(m) == errc::store_full);
    CHECK(f.business.effects.empty());
    CHECK_FALSE(h(m));
    CHECK(f.business.effects[m.id] == 1);
}

TEST_CASE("idempotent: two copies handled at once by two threads give one effect",
          "[middleware][idempotent][threads]") {
    fixture f;
    std::atomic<int> effects{0};
    auto h = letterbox::idempotent(
        [&](const letterbox::message&, letterbox::in_memory_unit_of_work& u) {
            return u.on_commit([&] { effects.fetch_add(1); });
        },
        f.inbox, fixture::begin(), "access", f.clock);
    // wall_now() of a virtual clock is read-only here, so sharing it between threads is safe.
    std::vector<letterbox::message> messages;
    for (int i = 0; i < 200; ++i)
        messages.push_back(f.message_of());
    std::latch start(2);
    std::atomic<int> errors{0}; // Catch2 v2 assertions are not thread-safe: count, check later
    auto worker = [&] {
        start.arrive_and_wait();
        for (const auto& m : messages)
            if (h(m))
                errors.fetch_add(1);
    };
    std::thread a(worker);
    std::thread b(worker);
    a.join();
    b.join();
    CHECK(errors.load() == 0);
    CHECK(effects.load() == 200);
    CHECK(h.stats().processed == 200);
    CHECK(h.stats().duplicates == 200);
}

namespace {

// Three distinct messages from a publisher that set no message id (the seeds' sendToQueue, the
// README's first program): each carries the nil id.
std::vector<letterbox::message> id_less_messages() {
    std::vector<letterbox::message> out;
    for (const char* body : {"enrol ana", "enrol bia", "enrol caio"}) {
        letterbox::message m;
        m.body = body;
        m.headers.set("x-idempotency-key", std::string("key-") + body);
        out.push_back(m);
    }
    return out;
}

} // namespace

TEST_CASE("idempotent refuses messages without a message id instead of taking them for "
          "duplicates of each other",
          "[middleware][idempotent]") {
    fixture f;
    std::map<std::string, int> effects; // by body: the ids are all nil
    auto h = letterbox::idempotent(
        [&](const letterbox::message& m, letterbox::in_memory_unit_of_work& u) {
            return u.on_commit([&effects, body = m.body] { ++effects[body]; });
        },
        f.inbox, fixture::begin(), "access", f.clock);
    for (const auto& m : id_less_messages())
        CHECK(h(m) == errc::missing_idempotency_key);
    CHECK(effects.empty()); // nothing ran: the refusal comes before the unit of work
    CHECK(h.stats() == letterbox::idempotent_stats{0, 0, 0, 3, 0});
    std::error_code ec;
    CHECK(f.inbox.size(ec) == 0);
}

TEST_CASE("idempotent handles messages without a key without deduplication when told to",
          "[middleware][idempotent]") {
    fixture f;
    std::map<std::string, int> effects;
    auto h =
        letterbox::idempotent(
            [&](const letterbox::message& m, letterbox::in_memory_unit_of_work& u) {
                return u.on_commit([&effects, body = m.body] { ++effects[body]; });
            },
            f.inbox, fixture::begin(), "access", f.clock)
            .on_missing_key(letterbox::idempotency_key::missing_key_action::handle_without_dedup);
    const auto messages = id_less_messages();
    for (const auto& m : messages)
        CHECK_FALSE(h(m));
    CHECK_FALSE(h(messages[0])); // no key, no dedup: a redelivery has its effect again
    CHECK(effects ==
          std::map<std::string, int>{{"enrol ana", 2}, {"enrol bia", 1}, {"enrol caio", 1}});
    CHECK(h.stats() == letterbox::idempotent_stats{0, 0, 0, 0, 4});
    std::error_code ec;
    CHECK(f.inbox.size(ec) == 0);
}

TEST_CASE("idempotent deduplicates on the key a header gives, with or without a message id",
          "[middleware][idempotent]") {
    fixture f;
    std::map<std::string, int> effects;
    auto h = letterbox::idempotent(
                 [&](const letterbox::message& m, letterbox::in_memory_unit_of_work& u) {
                     return u.on_commit([&effects, body = m.body] { ++effects[body]; });
                 },
                 f.inbox, fixture::begin(), "access", f.clock)
                 .with_key(letterbox::idempotency_key::by_header("x-idempotency-key"));
    auto messages = id_less_messages();
    for (const auto& m : messages)
        CHECK_FALSE(h(m));
    for (const auto& m : messages)
        CHECK_FALSE(h(m)); // redeliveries: duplicates
    // A copy with an id of its own is still the same key: the header decides, not the id.
    auto resent = messages[1];
    resent.id = f.ids();
    CHECK_FALSE(h(resent));
    CHECK(effects ==
          std::map<std::string, int>{{"enrol ana", 1}, {"enrol bia", 1}, {"enrol caio", 1}});
    CHECK(h.stats() == letterbox::idempotent_stats{3, 4, 0, 0, 0});
    std::error_code ec;
    CHECK(f.inbox.contains("access", *letterbox::idempotency_key::from_text("key-enrol ana"), ec));

    // A message whose header is missing has no key: refused, never merged with the others.
    letterbox::message bare;
    bare.id = f.ids();
    bare.body = "enrol davi";
    CHECK(h(bare) == errc::missing_idempotency_key);
    CHECK(h.stats().refused == 1);
}

TEST_CASE("idempotent never records the nil id, even when a key function returns it",
          "[middleware][idempotent]") {
    fixture f;
    int runs = 0;
    auto h = letterbox::idempotent(
                 [&](const letterbox::message&, letterbox::in_memory_unit_of_work&) { ++runs; },
                 f.inbox, fixture::begin(), "access", f.clock)
                 .with_key([](const letterbox::message&) {
                     return std::optional<letterbox::message_id>(letterbox::message_id{});
                 });
    const auto m = f.message_of();
    CHECK(h(m) == errc::missing_idempotency_key);
    CHECK(h(m) == errc::missing_idempotency_key);
    CHECK(runs == 0);
}

TEST_CASE("idempotent on a store that begins its own units needs no begin function",
          "[middleware][idempotent]") {
    fixture f;
    auto h = letterbox::idempotent(
        [&](const letterbox::message& m, letterbox::in_memory_unit_of_work& u) {
            return f.business.stage(u, m);
        },
        f.inbox, "access", f.clock);
    const auto m = f.message_of();
    CHECK_FALSE(h(m));
    CHECK_FALSE(h(m));
    CHECK(f.business.effects[m.id] == 1);
    CHECK(h.stats().duplicates == 1);
}

TEST_CASE("idempotent reports its store's retention, so the dedup window is checked by default",
          "[middleware][idempotent]") {
    letterbox::virtual_clock clock;
    letterbox::in_memory_inbox_store inbox({.keep = std::chrono::hours(1)});
    auto effect = [](const letterbox::message&, letterbox::in_memory_unit_of_work&) {
    };
    auto h = letterbox::idempotent(effect, inbox, "access", clock);
    CHECK(h.retention() == std::chrono::hours(1));
    CHECK(h.with_retention(std::chrono::hours(3)).retention() == std::chrono::hours(3));

    const letterbox::topology::retry_topology topo{.queue = "q", .delays = {std::chrono::hours(2)}};
    try {
        (void)letterbox::middleware::compose(
            h, letterbox::middleware::redelivery(
                   letterbox::backoff::fixed(std::chrono::hours(2), 2), topo, clock));
        FAIL("a two-hour redelivery horizon passed a one-hour inbox retention");
    } catch (const letterbox::error& e) {
        CHECK(e.code() == errc::dedup_window_too_short);
    }
    letterbox::in_memory_inbox_store week; // 7 days: the same schedule fits
    CHECK_NOTHROW(letterbox::middleware::compose(
        letterbox::idempotent(effect, week, "access", clock),
        letterbox::middleware::redelivery(letterbox::backoff::fixed(std::chrono::hours(2), 2), topo,
                                          clock)));
}

TEST_CASE("idempotent lets its store purge expired records before each unit of work",
          "[middleware][idempotent]") {
    letterbox::virtual_clock clock;
    letterbox::in_memory_inbox_store inbox(
        {.keep = std::chrono::hours(1), .purge_every = std::chrono::minutes(10)});
    letterbox::message_id_generator ids{9};
    auto h = letterbox::idempotent(
        [](const letterbox::message&, letterbox::in_memory_unit_of_work&) {}, inbox, "c", clock);
    letterbox::message first;
    first.id = ids();
    CHECK_FALSE(h(first));
    std::error_code ec;
    CHECK(inbox.size(ec) == 1);

    clock.advance(std::chrono::hours(2));
    letterbox::message second;
    second.id = ids();
    CHECK_FALSE(h(second)); // purges `first` (two hours old), then records `second`
    CHECK_FALSE(inbox.contains("c", first.id, ec));
    CHECK(inbox.contains("c", second.id, ec));
    CHECK(inbox.size(ec) == 1);
}

} // namespace unit_middleware_idempotent
