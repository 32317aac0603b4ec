// SPDX-License-Identifier: BSL-1.0
// dead_letter_queue over the in-memory broker: browse, replay, purge, export and depth, with
// messages dead-lettered both by the broker (x-death) and explicitly (letterbox's headers).

#include <letterbox/dlq/dead_letter_queue.hpp>

#include <letterbox/dlq/dead_letter_entry.hpp>
#include <letterbox/dlq/dead_letter_filter.hpp>
#include <letterbox/dlq/dead_letter_queue_options.hpp>
#include <letterbox/dlq/page.hpp>
#include <letterbox/dlq/replay_result.hpp>
#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>
#include <letterbox/transport/in_memory/transport.hpp>

#include "dlq_world.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace unit_dlq_dead_letter_queue {

namespace {

using namespace dlq_test;
using letterbox::errc;
using letterbox::message_id;
using letterbox::dlq::dead_letter_entry;
using letterbox::dlq::dead_letter_filter;
using letterbox::dlq::page;
using letterbox::dlq::replay_result;
using dlq_type = letterbox::dlq::dead_letter_queue<letterbox::in_memory::transport>;

static_assert(letterbox::queue_reader<letterbox::in_memory::transport>);

/// A DLQ holding, in this order: two native dead letters (order.placed, then
/// payment.requested) and three explicit ones (std::runtime_error for tenant acme at minute
/// 11; std::invalid_argument, reason poison, at minute 21; std::runtime_error for tenant
/// globex at minute 31).
struct populated : world {
    std::vector<message_id> ids;
    dlq_type dlq{transport, dlq_name, options()};

    letterbox::dlq::dead_letter_queue_options options() {
        letterbox::dlq::dead_letter_queue_options o;
        o.wall_clock = [this] {
            return clock.wall_now();
        };
        return o;
    }

    populated() {
        ids.push_back(dead_letter_natively("order.placed", R"({"order":1})"));
        ids.push_back(
            dead_letter_natively("payment.requested", R"({"payment":1})", {{"x-tenant", "acme"}}));
        fault a;
        ids.push_back(dead_letter_explicitly(a, "order.placed", R"({"order":2})",
                                             {{"x-tenant", "acme"}, {"x-priority", 1}}));
        fault b;
        b.reason = "poison";
        b.exception_type = "std::invalid_argument";
        b.first_minute = 20;
        b.last_minute = 20;
        b.dead_lettered_minute = 21;
        ids.push_back(dead_letter_explicitly(b, "order.cancelled", R"({"order":3})"));
        fault c;
        c.first_minute = 30;
        c.last_minute = 30;
        c.dead_lettered_minute = 31;
        ids.push_back(dead_letter_explicitly(c, "order.placed", std::string("\x00\xff", 2),
                                             {{"x-tenant", "globex"}, {"x-priority", 2}}));
        REQUIRE(ready(dlq_name) == 5);
        REQUIRE(ready(work_queue) == 0);
    }

    std::pair<std::error_code, std::vector<dead_letter_entry>> browse(dead_letter_filter f = {},
                                                                      page p = {}) {
        return await2<std::vector<dead_letter_entry>>([&](auto h) { dlq.async_browse(f, p, h); });
    }
    std::vector<message_id> browse_ids(dead_letter_filter f = {}, page p = {}) {
        auto [ec, entries] = browse(std::move(f), p);
        REQUIRE_FALSE(ec);
        std::vector<message_id> out;
        for (const auto& e : entries)
            out.push_back(e.msg.id);
        return out;
    }
    std::pair<std::error_code, replay_result> replay(dead_letter_filter f = {}) {
        return await2<replay_result>([&](auto h) { dlq.async_replay(f, h); });
    }
    std::pair<std::error_code, std::size_t> purge(dead_letter_filter f = {}) {
        return await2<std::size_t>([&](auto h) { dlq.async_purge(f, h); });
    }

    std::vector<message_id> pick(std::initializer_list<std::size_t> which) const {
        std::vector<message_id> out;
        for (auto i : which)
            out.push_back(ids[i]);
        return out;
    }
};

std::vector<message_id> ids_of(const std::vector<letterbox::message>& ms) {
    std::vector<message_id> out;
    for (const auto& m : ms)
        out.push_back(m.id);
    return out;
}

} // namespace

// ---- browse ----------------------------------------------------------------------------------

TEST_CASE("browse returns every entry in queue order and leaves depth and order unchanged",
          "[dlq]") {
    populated w;
    auto [ec, entries] = w.browse();
    REQUIRE_FALSE(ec);
    REQUIRE(entries.size() == 5);
    CHECK(entries[0].reason == "rejected");
    CHECK(entries[0].original_routing_key == work_key);
    CHECK(entries[2].exception_type == "std::runtime_error");
    CHECK(w.ready(dlq_name) == 5);
    CHECK(w.unacked(dlq_name) == 0);
    // A second browse reads the queue as the first one left it: same order.
    CHECK(w.browse_ids() == w.ids);
    CHECK(w.drain(dlq_name).size() == 5);
}

TEST_CASE("a replay cancelled midway stops after a whole step: nothing lost, nothing doubled",
          "[dlq][cancellation]") {
    populated w;
    boost::asio::cancellation_signal signal;
    std::optional<std::pair<std::error_code, replay_result>> done;
    w.dlq.async_replay({}, boost::asio::bind_cancellation_slot(
                               signal.slot(), [&](std::error_code ec, replay_result r) {
                                   done.emplace(ec, std::move(r));
                               }));
    // Once the first copy is in the work queue, cancel.
    REQUIRE(w.drive_until([&] { return w.ready(work_queue) >= 1; }));
    signal.emit(boost::asio::cancellation_type::terminal);
    REQUIRE(w.drive_until([&] { return done.has_value(); }));
    CHECK(done->first == std::errc::operation_canceled);
    const auto replayed = done->second.replayed;
    CHECK(replayed >= 1);
    CHECK(replayed < 5);
    CHECK(w.ready(work_queue) == replayed); // each copy's original was removed, no more
    CHECK(w.ready(dlq_name) == 5 - replayed);
    CHECK(w.unacked(dlq_name) == 0); // what the scan held went back
    CHECK_FALSE(signal.slot().has_handler());
}

TEST_CASE("a browse cancelled before it starts fetches nothing", "[dlq][cancellation]") {
    populated w;
    boost::asio::cancellation_signal signal;
    std::optional<std::error_code> done;
    w.dlq.async_browse({}, {},
                       boost::asio::bind_cancellation_slot(
                           signal.slot(), [&](std::error_code ec, auto) { done = ec; }));
    signal.emit(boost::asio::cancellation_type::total);
    REQUIRE(w.drive_until([&] { return done.has_value(); }));
    CHECK(*done == std::errc::operation_canceled);
    CHECK(w.ready(dlq_name) == 5);
    CHECK(w.unacked(dlq_name) == 0);
}

TEST_CASE("purge, export and depth cancelled before they start do nothing", "[dlq][cancellation]") {
    populated w;
    std::ostringstream out;
    int completed = 0;
    auto expect_cancelled = [&](auto initiate) {
        boost::asio::cancellation_signal signal;
        std::optional<std::error_code> done;
        initiate(boost::asio::bind_cancellation_slot(signal.slot(),
                                                     [&](std::error_code ec, auto) { done = ec; }));
        signal.emit(boost::asio::cancellation_type::terminal);
        REQUIRE(w.drive_until([&] { return done.has_value(); }));
        CHECK(*done == std::errc::operation_canceled);
        ++completed;
    };
    expect_cancelled([&](auto token) { w.dlq.async_purge({}, token); });
    expect_cancelled([&](auto token) { w.dlq.async_export({}, out, token); });
    expect_cancelled([&](auto token) { w.dlq.async_depth(token); });
    CHECK(completed == 3);
    CHECK(out.str().empty());
    CHECK(w.ready(dlq_name) == 5);
}

TEST_CASE("the queue's order after a browse is its order before", "[dlq]") {
    populated w;
    dead_letter_filter f;
    f.message_type = "order.placed";
    CHECK(w.browse_ids(f) == w.pick({0, 2, 4}));
    CHECK(w.ready(dlq_name) == 5);
    CHECK(ids_of(w.drain(dlq_name)) == w.ids);
}

TEST_CASE("browse filters by reason, exception type, message type, times, headers and ids",
          "[dlq]") {
    populated w;
    dead_letter_filter f;
    f.reason = "rejected";
    CHECK(w.browse_ids(f) == w.pick({0, 1}));

    f = {};
    f.exception_type = "std::runtime_error";
    CHECK(w.browse_ids(f) == w.pick({2, 4}));

    f = {};
    f.message_type = "payment.requested";
    CHECK(w.browse_ids(f) == w.pick({1}));

    f = {};
    f.since = at(20);
    f.until = at(31);
    CHECK(w.browse_ids(f) == w.pick({3}));
    f.until = at(32);
    CHECK(w.browse_ids(f) == w.pick({3, 4}));
    // The native ones were dead-lettered at the broker's (virtual) now, a day after at(0).
    f = {};
    f.since = w.clock.wall_now() - 1min;
    CHECK(w.browse_ids(f) == w.pick({0, 1}));

    f = {};
    f.headers = {{"x-tenant", "acme"}};
    CHECK(w.browse_ids(f) == w.pick({1, 2}));
    f.headers = {{"x-tenant", "acme"}, {"x-priority", "1"}};
    CHECK(w.browse_ids(f) == w.pick({2}));

    f = {};
    f.ids = {letterbox::to_string(w.ids[3]), letterbox::to_string(w.ids[0])};
    CHECK(w.browse_ids(f) == w.pick({0, 3}));

    CHECK(w.ready(dlq_name) == 5);
    CHECK(ids_of(w.drain(dlq_name)) == w.ids);
}

TEST_CASE("browse pages over matching entries", "[dlq]") {
    populated w;
    CHECK(w.browse_ids({}, {0, 2}) == w.pick({0, 1}));
    CHECK(w.browse_ids({}, {2, 2}) == w.pick({2, 3}));
    CHECK(w.browse_ids({}, {4, 2}) == w.pick({4}));
    CHECK(w.browse_ids({}, {5, 2}).empty());
    CHECK(w.browse_ids({}, {0, 0}).empty());
    dead_letter_filter f;
    f.message_type = "order.placed";
    CHECK(w.browse_ids(f, {1, 1}) == w.pick({2}));
    CHECK(w.browse_ids(f, {1, 10}) == w.pick({2, 4}));
    CHECK(ids_of(w.drain(dlq_name)) == w.ids);
}

TEST_CASE("browse fetches no more than max_messages", "[dlq]") {
    populated w;
    letterbox::dlq::dead_letter_queue_options o;
    o.max_messages = 3;
    dlq_type small(w.transport, dlq_name, o);
    auto result =
        w.await2<std::vector<dead_letter_entry>>([&](auto h) { small.async_browse({}, {}, h); });
    REQUIRE_FALSE(result.first);
    CHECK(result.second.size() == 3);
    CHECK(ids_of(w.drain(dlq_name)) == w.ids);
}

TEST_CASE("max_messages must be positive", "[dlq]") {
    world w;
    letterbox::dlq::dead_letter_queue_options o;
    o.max_messages = 0;
    CHECK_THROWS_AS(dlq_type(w.transport, dlq_name, o), letterbox::error);
}

TEST_CASE("operations on a missing queue complete with not_found", "[dlq]") {
    world w;
    dlq_type missing(w.transport, "no.such.dlq");
    auto browsed =
        w.await2<std::vector<dead_letter_entry>>([&](auto h) { missing.async_browse({}, {}, h); });
    CHECK(browsed.first == errc::not_found);
    auto depth = w.await2<std::uint32_t>([&](auto h) { missing.async_depth(h); });
    CHECK(depth.first == errc::not_found);
    // The transport is still fine.
    dlq_type real(w.transport, dlq_name);
    depth = w.await2<std::uint32_t>([&](auto h) { real.async_depth(h); });
    CHECK_FALSE(depth.first);
    CHECK(depth.second == 0);
}

// ---- replay ----------------------------------------------------------------------------------

TEST_CASE("replay all puts every message back on its original exchange and key, clean", "[dlq]") {
    populated w;
    auto [ec, r] = w.replay();
    REQUIRE_FALSE(ec);
    CHECK(r.replayed == 5);
    CHECK(r.failed == 0);
    CHECK(r.skipped == 0);
    CHECK(r.failures.empty());
    CHECK(w.ready(dlq_name) == 0);
    CHECK(w.unacked(dlq_name) == 0);

    const auto replayed = w.drain(work_queue);
    REQUIRE(ids_of(replayed) == w.ids); // same ids, in DLQ order
    for (const auto& m : replayed) {
        INFO("message " << letterbox::to_string(m.id));
        const auto& h = m.headers;
        CHECK(m.exchange == work_exchange);
        CHECK(m.routing_key == work_key);
        CHECK_FALSE(h.contains(headers::attempts));
        CHECK_FALSE(h.contains(headers::x_death));
        CHECK_FALSE(h.contains(headers::x_first_death_reason));
        CHECK_FALSE(h.contains(headers::x_first_death_queue));
        CHECK_FALSE(h.contains(headers::x_first_death_exchange));
        CHECK_FALSE(h.contains(headers::death_reason));
        CHECK_FALSE(h.contains(headers::exception_type));
        CHECK_FALSE(h.contains(headers::exception_message));
        CHECK_FALSE(h.contains(headers::first_failure_time));
        CHECK_FALSE(h.contains(headers::last_failure_time));
        CHECK_FALSE(h.contains(headers::dead_lettered_time));
        CHECK(h.get<std::int64_t>(headers::replay_count) == 1);
        CHECK(h.get<std::string>(headers::replayed_time) == rfc3339(w.clock.wall_now()));
    }
    // Native ones carry their x-death history, moved.
    for (std::size_t i : {0, 1}) {
        const auto* history = replayed[i].headers.find(headers::death_history);
        REQUIRE(history != nullptr);
        const auto* entries = history->get_if<letterbox::field_array>();
        REQUIRE(entries != nullptr);
        REQUIRE(entries->size() == 1);
        const auto* death = entries->front().get_if<letterbox::field_table>();
        REQUIRE(death != nullptr);
        CHECK(death->get<std::string>(headers::x_death_field::reason) == "rejected");
        CHECK(death->get<std::string>(headers::x_death_field::queue) == work_queue);
    }
    // Explicit ones keep their original_* headers and consumer id.
    for (std::size_t i : {2, 3, 4}) {
        const auto& h = replayed[i].headers;
        CHECK_FALSE(h.contains(headers::death_history));
        CHECK(h.get<std::string>(headers::original_queue) == work_queue);
        CHECK(h.get<std::string>(headers::original_exchange) == work_exchange);
        CHECK(h.get<std::string>(headers::consumer_id) == "billing");
    }
    CHECK(replayed[1].headers.get<std::string>("x-tenant") == "acme");
    CHECK(replayed[4].body == std::string("\x00\xff", 2));
}

TEST_CASE("a filtered replay moves the matches and leaves the rest in place", "[dlq]") {
    populated w;
    dead_letter_filter f;
    f.exception_type = "std::runtime_error";
    auto [ec, r] = w.replay(f);
    REQUIRE_FALSE(ec);
    CHECK(r.replayed == 2);
    CHECK(r.skipped == 3);
    CHECK(r.failed == 0);
    CHECK(ids_of(w.drain(work_queue)) == w.pick({2, 4}));
    CHECK(ids_of(w.drain(dlq_name)) == w.pick({0, 1, 3}));
}

TEST_CASE("replay by ids", "[dlq]") {
    populated w;
    dead_letter_filter f;
    f.ids = {letterbox::to_string(w.ids[4]), letterbox::to_string(w.ids[1])};
    auto [ec, r] = w.replay(f);
    REQUIRE_FALSE(ec);
    CHECK(r.replayed == 2);
    CHECK(r.skipped == 3);
    CHECK(ids_of(w.drain(work_queue)) == w.pick({1, 4}));
    CHECK(ids_of(w.drain(dlq_name)) == w.pick({0, 2, 3}));
}

TEST_CASE("a replayed message that fails again and is replayed again counts two replays", "[dlq]") {
    populated w;
    dead_letter_filter f;
    f.ids = {letterbox::to_string(w.ids[0])};
    REQUIRE(w.replay(f).second.replayed == 1);
    // It fails again on the work queue: the broker dead-letters it with a new x-death.
    auto got = w.await2<std::optional<letterbox::delivery>>(
        [&](auto h) { w.transport.async_get(work_queue, h); });
    REQUIRE(got.second.has_value());
    REQUIRE_FALSE(w.await([&](auto h) { w.transport.async_reject(*got.second, false, h); }));
    REQUIRE(w.drive_until([&] { return w.ready(dlq_name) == 5; }));

    auto [ec, entries] = w.browse(f);
    REQUIRE_FALSE(ec);
    REQUIRE(entries.size() == 1);
    CHECK(entries[0].replay_count == 1);
    CHECK(entries[0].attempts == 1); // the fresh x-death only, not the history

    REQUIRE(w.replay(f).second.replayed == 1);
    const auto again = w.drain(work_queue);
    REQUIRE(again.size() == 1);
    CHECK(again[0].headers.get<std::int64_t>(headers::replay_count) == 2);
    const auto* history = again[0].headers.find(headers::death_history);
    REQUIRE(history != nullptr);
    CHECK(history->get_if<letterbox::field_array>()->size() == 2);
}

TEST_CASE("replaying an unroutable original counts it failed and keeps it in the DLQ", "[dlq]") {
    populated w;
    fault nowhere;
    nowhere.original_routing_key = "no.binding.for.this";
    const auto lost = w.dead_letter_explicitly(nowhere, "order.placed");
    fault no_exchange;
    no_exchange.original_exchange = "no.such.exchange";
    const auto missing = w.dead_letter_explicitly(no_exchange, "order.placed");

    auto [ec, r] = w.replay();
    REQUIRE_FALSE(ec);
    CHECK(r.replayed == 5);
    CHECK(r.failed == 2);
    REQUIRE(r.failures.size() == 2);
    CHECK(r.failures[0].id == letterbox::to_string(lost));
    CHECK(r.failures[0].error == errc::no_route);
    CHECK(r.failures[1].id == letterbox::to_string(missing));
    CHECK(r.failures[1].error == errc::not_found);
    CHECK(ids_of(w.drain(dlq_name)) == std::vector<message_id>{lost, missing});
    CHECK(ids_of(w.drain(work_queue)) == w.ids);
}

TEST_CASE("an entry with no original destination is not published", "[dlq]") {
    world w;
    dlq_type dlq(w.transport, dlq_name);
    auto m = w.make_message("order.placed", "{}");
    m.routing_key = dlq_name;
    w.publish(m);
    auto [ec, r] = w.await2<replay_result>([&](auto h) { dlq.async_replay({}, h); });
    REQUIRE_FALSE(ec);
    CHECK(r.failed == 1);
    REQUIRE(r.failures.size() == 1);
    CHECK(r.failures[0].error == errc::invalid_argument);
    CHECK(w.ready(dlq_name) == 1);
}

TEST_CASE("a replay interrupted after the republish and before the removal loses nothing",
          "[dlq]") {
    populated w;
    letterbox::dlq::dead_letter_queue_options o;
    o.wall_clock = [&w] {
        return w.clock.wall_now();
    };
    std::size_t calls = 0;
    o.after_republish_before_remove = [&calls](const dead_letter_entry&) {
        if (++calls == 2)
            throw std::runtime_error("crash between the confirm and the ack");
    };
    dlq_type crashing(w.transport, dlq_name, o);
    auto [ec, r] = w.await2<replay_result>([&](auto h) { crashing.async_replay({}, h); });
    CHECK(ec == errc::internal_error);
    CHECK(r.replayed == 1);
    // The second message is republished and still held, unacknowledged.
    CHECK(w.ready(work_queue) == 2);
    CHECK(w.unacked(dlq_name) == 1);

    // The process "dies": its connection closes and the broker requeues what it held.
    REQUIRE_FALSE(w.await([&](auto h) { w.transport.async_close(h); }));
    CHECK(w.unacked(dlq_name) == 0);
    letterbox::in_memory::transport after(w.broker, "after-crash");
    w.transport = std::move(after);
    // Both copies of the interrupted message exist: nothing is lost; the duplicate is for the
    // consumer's inbox to absorb.
    CHECK(ids_of(w.drain(work_queue)) == w.pick({0, 1}));
    CHECK(ids_of(w.drain(dlq_name)) == w.pick({1, 2, 3, 4}));
}

TEST_CASE("replay stops with the error when the connection is lost", "[dlq]") {
    populated w;
    w.broker.lose_nth_confirm(2);
    auto [ec, r] = w.replay();
    CHECK(ec == errc::outcome_unknown);
    CHECK(r.replayed == 1);
    CHECK(r.failed == 1);
    REQUIRE(w.drive_until([&] { return w.unacked(dlq_name) == 0; }));
    // The lost confirm's message was stored: it is both republished and back in the DLQ.
    CHECK(w.ready(dlq_name) == 4);
    CHECK(ids_of(w.drain(work_queue)) == w.pick({0, 1}));
    CHECK(ids_of(w.drain(dlq_name)) == w.pick({1, 2, 3, 4}));
}

// ---- purge, export, depth ----------------------------------------------------------------------

TEST_CASE("purge removes the matches and keeps the rest in order", "[dlq]") {
    populated w;
    dead_letter_filter f;
    f.headers = {{"x-tenant", "acme"}};
    auto [ec, purged] = w.purge(f);
    REQUIRE_FALSE(ec);
    CHECK(purged == 2);
    CHECK(w.ready(dlq_name) == 3);
    CHECK(w.ready(work_queue) == 0);
    CHECK(w.browse_ids() == w.pick({0, 3, 4}));

    auto rest = w.purge();
    REQUIRE_FALSE(rest.first);
    CHECK(rest.second == 3);
    CHECK(w.ready(dlq_name) == 0);
}

TEST_CASE("export writes one valid JSON object per matching message and removes nothing", "[dlq]") {
    populated w;
    std::ostringstream out;
    auto [ec, written] = w.await2<std::size_t>([&](auto h) { w.dlq.async_export({}, out, h); });
    REQUIRE_FALSE(ec);
    CHECK(written == 5);
    std::istringstream in(out.str());
    std::vector<nlohmann::json> lines;
    for (std::string line; std::getline(in, line);)
        lines.push_back(nlohmann::json::parse(line));
    REQUIRE(lines.size() == 5);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        INFO("line " << i);
        CHECK(lines[i].at("id") == letterbox::to_string(w.ids[i]));
        CHECK(lines[i].at("original_exchange") == work_exchange);
        CHECK(lines[i].at("original_routing_key") == work_key);
    }
    CHECK(lines[0].at("reason") == "rejected");
    CHECK(lines[0].at("attempts") == 1);
    CHECK(lines[0].at("headers").contains(std::string(headers::x_death)));
    CHECK(lines[0].at("body") == R"({"order":1})");
    CHECK(lines[2].at("exception").at("type") == "std::runtime_error");
    CHECK(lines[2].at("dead_lettered_time") == rfc3339(at(11)));
    CHECK(lines[4].at("body_encoding") == "base64");
    CHECK(lines[4].at("body") == "AP8=");
    CHECK(ids_of(w.drain(dlq_name)) == w.ids);
}

TEST_CASE("a filtered export writes only the matches", "[dlq]") {
    populated w;
    dead_letter_filter f;
    f.reason = "poison";
    std::ostringstream out;
    auto [ec, written] = w.await2<std::size_t>([&](auto h) { w.dlq.async_export(f, out, h); });
    REQUIRE_FALSE(ec);
    CHECK(written == 1);
    CHECK(nlohmann::json::parse(out.str()).at("id") == letterbox::to_string(w.ids[3]));
    CHECK(w.ready(dlq_name) == 5);
}

TEST_CASE("an export to a failed stream stops with io_error and gives everything back", "[dlq]") {
    populated w;
    std::ostringstream out;
    out.setstate(std::ios_base::badbit);
    auto [ec, written] = w.await2<std::size_t>([&](auto h) { w.dlq.async_export({}, out, h); });
    CHECK(ec == std::errc::io_error);
    CHECK(written == 0);
    CHECK(w.ready(dlq_name) == 5);
    CHECK(ids_of(w.drain(dlq_name)) == w.ids);
}

TEST_CASE("depth counts the ready messages", "[dlq]") {
    populated w;
    auto [ec, depth] = w.await2<std::uint32_t>([&](auto h) { w.dlq.async_depth(h); });
    REQUIRE_FALSE(ec);
    CHECK(depth == 5);
    CHECK(w.dlq.queue() == dlq_name);
}

namespace {

/// The in-memory transport with gets that carry no message count (`delivery::message_count`
/// is optional in `queue_reader`), counting the depths asked.
class countless_transport : public letterbox::in_memory::transport {
public:
    using letterbox::in_memory::transport::transport;

    template <class Token>
    auto async_get(const std::string& queue, Token&& token) {
        return boost::asio::async_initiate<Token, void(std::error_code,
                                                       std::optional<letterbox::delivery>)>(
            [this](auto handler, const std::string& q) {
                letterbox::in_memory::transport::async_get(
                    q, [h = std::move(handler)](std::error_code ec,
                                                std::optional<letterbox::delivery> d) mutable {
                        if (d)
                            d->message_count.reset();
                        std::move(h)(ec, std::move(d));
                    });
            },
            token, queue);
    }

    template <class Token>
    auto async_queue_depth(const std::string& queue, Token&& token) {
        ++depths_asked;
        return letterbox::in_memory::transport::async_queue_depth(queue,
                                                                  std::forward<Token>(token));
    }

    int depths_asked = 0;
};

static_assert(letterbox::queue_reader<countless_transport>);

} // namespace

TEST_CASE("a scan takes its bound from the first get's message count, or from a depth without one",
          "[dlq]") {
    populated w;
    // The model's gets carry a count: a browse asks no depth, and still sees all five.
    CHECK(w.browse_ids() == w.ids);

    countless_transport countless{w.broker, "countless"};
    letterbox::dlq::dead_letter_queue dlq(countless, dlq_name);
    auto browsed =
        w.await2<std::vector<dead_letter_entry>>([&](auto h) { dlq.async_browse({}, {}, h); });
    REQUIRE_FALSE(browsed.first);
    CHECK(browsed.second.size() == 5);
    CHECK(countless.depths_asked == 1);
    // The bound counts the first message besides the depth behind it: a purge takes all five.
    auto purged = w.await2<std::size_t>([&](auto h) { dlq.async_purge({}, h); });
    REQUIRE_FALSE(purged.first);
    CHECK(purged.second == 5);
    CHECK(w.ready(dlq_name) == 0);
    // An empty queue needs no depth at all.
    purged = w.await2<std::size_t>([&](auto h) { dlq.async_purge({}, h); });
    CHECK(purged.second == 0);
    CHECK(countless.depths_asked == 2);
}

// ---- the examples of docs/dead-letter-operations.md ------------------------------------------

namespace {

//[dlq_replay
// The bug behind the std::invalid_argument failures is fixed and deployed: replay those
// messages, and only those, to where they were consumed.
void replay_fixed(letterbox::in_memory::transport& transport, std::ostream& report) {
    letterbox::dlq::dead_letter_queue dlq(transport, "work.dlq");
    letterbox::dlq::dead_letter_filter fixed;
    fixed.exception_type = "std::invalid_argument";
    dlq.async_replay(fixed, [&report](std::error_code ec, letterbox::dlq::replay_result r) {
        if (ec)
            report << "replay stopped early: " << ec.message() << '\n';
        report << r.replayed << " replayed, " << r.failed << " failed, " << r.skipped
               << " left in place\n";
        for (const auto& failure : r.failures)
            report << failure.id << ": " << failure.error.message() << '\n';
    });
    // The operation keeps what it needs: `dlq` may go out of scope before it completes.
}
//]

//[dlq_browse_json
// An HTTP endpoint's "list dead letters": the filter comes as JSON in the request, the answer
// is one page of entries as a JSON array.
void list_dead_letters(letterbox::dlq::dead_letter_queue<letterbox::in_memory::transport>& dlq,
                       const std::string& request, std::size_t page_number,
                       std::function<void(std::error_code, nlohmann::json)> respond) {
    // Throws letterbox::error (errc::invalid_argument) with a message for the client.
    const auto filter =
        letterbox::dlq::dead_letter_filter::from_json(nlohmann::json::parse(request));
    const letterbox::dlq::page page{.offset = page_number * 20, .limit = 20};
    dlq.async_browse(
        filter, page,
        [respond = std::move(respond)](std::error_code ec,
                                       std::vector<letterbox::dlq::dead_letter_entry> entries) {
            auto body = nlohmann::json::array();
            for (const auto& entry : entries)
                body.push_back(entry.to_json());
            respond(ec, std::move(body));
        });
}
//]

} // namespace

TEST_CASE("docs: replay the messages a deployed fix can now handle", "[dlq]") {
    populated w;
    std::ostringstream report;
    replay_fixed(w.transport, report);
    REQUIRE(w.drive_until([&] { return !report.str().empty(); }));
    CHECK(report.str() == "1 replayed, 0 failed, 4 left in place\n");
    CHECK(ids_of(w.drain(work_queue)) == w.pick({3}));
}

TEST_CASE("docs: a filter from an HTTP request's JSON, browsed one page at a time", "[dlq]") {
    populated w;
    std::optional<nlohmann::json> answer;
    list_dead_letters(w.dlq, R"({
        "message_type": "order.placed",
        "headers": {"x-tenant": "acme"},
        "since": "2025-12-31T00:00:00Z"
    })",
                      0, [&](std::error_code ec, nlohmann::json body) {
                          CHECK_FALSE(ec);
                          answer = std::move(body);
                      });
    REQUIRE(w.drive_until([&] { return answer.has_value(); }));
    REQUIRE(answer->size() == 1);
    CHECK(answer->at(0).at("id") == letterbox::to_string(w.ids[2]));
    CHECK_THROWS_AS(list_dead_letters(w.dlq, R"({"colour": "red"})", 0, {}), letterbox::error);
}

// ---- entries without a message id ------------------------------------------------------------

namespace {

/// A DLQ holding ten messages of a foreign publisher that set no message-id (the nil id), in
/// this order: bodies o0..o6 dead-lettered by the broker, then three identical copies of one
/// more ("same"), put into the DLQ on the default exchange.
struct id_less : world {
    dlq_type dlq{transport, dlq_name};

    void publish_raw(letterbox::message m) {
        auto conn = broker.connect("foreign-publisher");
        auto ch = conn.open_channel();
        REQUIRE_FALSE(ch.basic_publish(std::move(m)));
        conn.close();
    }

    id_less() {
        for (int i = 0; i < 7; ++i) {
            letterbox::message m;
            m.exchange = work_exchange;
            m.routing_key = work_key;
            m.body = "o" + std::to_string(i);
            publish_raw(std::move(m));
            auto got = await2<std::optional<letterbox::delivery>>(
                [&](auto h) { transport.async_get(work_queue, h); });
            REQUIRE(got.second);
            REQUIRE(got.second->msg.id.is_nil());
            REQUIRE_FALSE(await([&](auto h) { transport.async_reject(*got.second, false, h); }));
        }
        for (int i = 0; i < 3; ++i) {
            letterbox::message m;
            m.routing_key = dlq_name;
            m.body = "same";
            publish_raw(std::move(m));
        }
        REQUIRE(drive_until([&] { return ready(dlq_name) == 10; }));
    }

    std::vector<dead_letter_entry> browse() {
        auto [ec, entries] =
            await2<std::vector<dead_letter_entry>>([&](auto h) { dlq.async_browse({}, {}, h); });
        REQUIRE_FALSE(ec);
        return entries;
    }
    static dead_letter_filter one(const std::string& handle) {
        return dead_letter_filter::from_json({{"ids", {handle}}});
    }
    std::vector<std::string> bodies() {
        std::vector<std::string> out;
        for (const auto& e : browse())
            out.push_back(e.msg.body);
        return out;
    }
};

} // namespace

TEST_CASE("entries without a message id have no id and a handle each, stable from one browse "
          "to the next",
          "[dlq][handle]") {
    id_less w;
    const auto first = w.browse();
    REQUIRE(first.size() == 10);
    std::set<std::string> handles;
    for (const auto& e : first) {
        CHECK(e.id.empty());
        CHECK(e.to_json()["id"].is_null());
        CHECK(e.to_json()["handle"] == e.handle);
        CHECK(e.handle.starts_with("content-"));
        handles.insert(e.handle);
    }
    CHECK(handles.size() == 10); // identical copies are numbered
    CHECK(first[7].handle.size() == 40);
    CHECK(first[8].handle == first[7].handle + "-2");
    CHECK(first[9].handle == first[7].handle + "-3");
    const auto second = w.browse();
    REQUIRE(second.size() == 10);
    for (std::size_t i = 0; i < 10; ++i)
        CHECK(second[i].handle == first[i].handle);
}

TEST_CASE("purging one entry without a message id by its handle removes that one message",
          "[dlq][handle]") {
    id_less w;
    const auto entries = w.browse();
    auto [ec, removed] = w.await2<std::size_t>(
        [&](auto h) { w.dlq.async_purge(id_less::one(entries[3].handle), h); });
    REQUIRE_FALSE(ec);
    CHECK(removed == 1);
    CHECK(w.ready(dlq_name) == 9);
    CHECK(w.bodies() ==
          std::vector<std::string>{"o0", "o1", "o2", "o4", "o5", "o6", "same", "same", "same"});

    // One of three identical copies: one goes, and the two left are numbered 1 and 2 again.
    auto [ec2, removed2] = w.await2<std::size_t>(
        [&](auto h) { w.dlq.async_purge(id_less::one(entries[9].handle), h); });
    REQUIRE_FALSE(ec2);
    CHECK(removed2 == 1);
    const auto after = w.browse();
    REQUIRE(after.size() == 8);
    CHECK(after[6].handle == entries[7].handle);
    CHECK(after[7].handle == entries[8].handle);
}

TEST_CASE("replaying one entry without a message id by its handle replays that one message",
          "[dlq][handle]") {
    id_less w;
    const auto entries = w.browse();
    auto [ec, r] = w.await2<replay_result>(
        [&](auto h) { w.dlq.async_replay(id_less::one(entries[5].handle), h); });
    REQUIRE_FALSE(ec);
    CHECK(r.replayed == 1);
    CHECK(r.skipped == 9);
    CHECK(w.ready(dlq_name) == 9);
    const auto back = w.drain(work_queue);
    REQUIRE(back.size() == 1);
    CHECK(back[0].body == "o5");
}

TEST_CASE("a filter refuses the nil id, which would select every entry without an id",
          "[dlq][handle]") {
    try {
        (void)dead_letter_filter::from_json({{"ids", {"00000000-0000-0000-0000-000000000000"}}});
        FAIL("the nil id was accepted");
    } catch (const letterbox::error& e) {
        CHECK(e.code() == errc::invalid_argument);
        CHECK_THAT(e.what(), Catch::Contains("handle"));
    }
    for (const char* bad : {"content-", "content-0123", "content-0123456789abcdef0123456789ABCDEF",
                            "content-0123456789abcdef0123456789abcdef-1",
                            "content-0123456789abcdef0123456789abcdef-02",
                            "content-0123456789abcdef0123456789abcdef-x"}) {
        INFO(bad);
        CHECK_THROWS_AS(dead_letter_filter::from_json({{"ids", {bad}}}), letterbox::error);
    }
    const auto f =
        dead_letter_filter::from_json({{"ids", {"content-0123456789abcdef0123456789abcdef-12"}}});
    CHECK(f.has_criterion());
}

TEST_CASE("a failed replay of an entry without a message id names it by its handle",
          "[dlq][handle]") {
    id_less w;
    const auto entries = w.browse();
    // The copies put straight into the DLQ name no original destination: not republished.
    auto [ec, r] = w.await2<replay_result>(
        [&](auto h) { w.dlq.async_replay(id_less::one(entries[8].handle), h); });
    REQUIRE_FALSE(ec);
    CHECK(r.failed == 1);
    REQUIRE(r.failures.size() == 1);
    CHECK(r.failures[0].id.empty());
    CHECK(r.failures[0].handle == entries[8].handle);
    CHECK(r.failures[0].error == errc::invalid_argument);
    const auto j = r.to_json();
    CHECK(j["failures"][0]["id"].is_null());
    CHECK(j["failures"][0]["handle"] == entries[8].handle);
    CHECK(j["replayed"] == 0);
    CHECK(j["skipped"] == 9);
    CHECK(w.ready(dlq_name) == 10);
}

} // namespace unit_dlq_dead_letter_queue
