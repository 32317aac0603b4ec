// SPDX-License-Identifier: BSL-1.0
// request_client and responder on the in-memory broker and a virtual clock.

#include <letterbox/caused_by.hpp>
#include <letterbox/consumer.hpp>
#include <letterbox/request_client.hpp>
#include <letterbox/responder.hpp>
#include <letterbox/trace_context.hpp>

#include "consumer_world.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

namespace unit_request_reply {

namespace {

using namespace std::chrono_literals;
using letterbox::errc;
using letterbox::message;
using unit_consumer_support::sim_world;

using client_type =
    letterbox::request_client<letterbox::in_memory::transport, letterbox::virtual_clock>;

// The in-memory transport tells the client when its connection is lost.
static_assert(letterbox::connection_watcher<letterbox::in_memory::transport>);

struct outcome {
    std::error_code ec;
    message reply;
};

// A request client started on `w`'s transport, and a way to send requests and see them end.
struct requester {
    explicit requester(sim_world& w,
                       letterbox::reply_route route = letterbox::reply_route::automatic)
        : world(&w)
        , client(w.transport, w.clock, {.route = route}) {
        REQUIRE_FALSE(w.await([&](auto h) { client.async_start(h); }));
    }

    std::shared_ptr<std::optional<outcome>> request(const std::string& queue, std::string body,
                                                    std::chrono::milliseconds timeout) {
        auto result = std::make_shared<std::optional<outcome>>();
        message m;
        m.routing_key = queue;
        m.body = std::move(body);
        client.async_request(std::move(m), timeout, [result](std::error_code ec, message r) {
            result->emplace(outcome{ec, std::move(r)});
        });
        return result;
    }

    outcome wait(const std::shared_ptr<std::optional<outcome>>& r) {
        REQUIRE(world->drive_until([&] { return r->has_value(); }));
        return **r;
    }

    sim_world* world;
    client_type client;
};

auto echo_responder(sim_world& w) {
    return letterbox::responder(w.transport, [](const message& request) {
        message reply;
        reply.body = "re: " + request.body;
        return reply;
    });
}

template <class Handler>
auto serve(sim_world& w, const std::string& queue, Handler h) {
    w.declare(queue);
    letterbox::consumer_options o;
    o.consume.queue = queue;
    return letterbox::consumer(w.transport, std::move(h), w.clock, o);
}

} // namespace

bool is_direct(const std::string& address) {
    return address == letterbox::topology::direct_reply_to;
}

TEST_CASE("request_client: a request completes with the reply that carries its correlation id",
          "[request_reply]") {
    sim_world w;
    auto worker = serve(w, "quotes", echo_responder(w));
    w.start(worker);
    const auto route =
        GENERATE(letterbox::reply_route::automatic, letterbox::reply_route::reply_queue);
    requester r(w, route);
    // Automatic takes direct reply-to, which the in-memory transport offers.
    CHECK(is_direct(r.client.reply_to()) == (route == letterbox::reply_route::automatic));
    auto a = r.request("quotes", "A-1", 5s);
    auto b = r.request("quotes", "B-2", 5s);
    const auto ra = r.wait(a);
    const auto rb = r.wait(b);
    REQUIRE_FALSE(ra.ec);
    REQUIRE_FALSE(rb.ec);
    CHECK(ra.reply.body == "re: A-1");
    CHECK(rb.reply.body == "re: B-2");
    CHECK(ra.reply.properties.correlation_id != rb.reply.properties.correlation_id);
    if (is_direct(r.client.reply_to()))
        CHECK(ra.reply.routing_key.starts_with(letterbox::topology::direct_reply_to_prefix));
    else
        CHECK(ra.reply.routing_key == r.client.reply_to());
    CHECK_FALSE(ra.reply.properties.persistent);
    const auto s = r.client.stats();
    CHECK(s.requests == 2);
    CHECK(s.replied == 2);
    CHECK(s.timed_out + s.cancelled + s.failed + s.late_replies + s.unknown_replies == 0);
    // The responder counts a reply once its confirm came, after the requester had it.
    CHECK(w.drive_until([&] { return worker.handler().stats().replied == 2; }));
}

TEST_CASE("request_client: no reply times out on the clock, and the late reply is dropped",
          "[request_reply]") {
    sim_world w;
    w.declare("slow");
    requester r(w,
                GENERATE(letterbox::reply_route::automatic, letterbox::reply_route::reply_queue));
    const auto sent = w.clock.now();
    auto pending = r.request("slow", "late", 2s);
    const auto result = r.wait(pending);
    CHECK(result.ec == errc::timed_out);
    CHECK(w.clock.now() - sent == 2s);
    CHECK(r.client.stats().timed_out == 1);

    // The responder answers now: the reply finds no request and is counted, not delivered.
    auto worker = serve(w, "slow", echo_responder(w));
    w.start(worker);
    REQUIRE(w.drive_until([&] { return r.client.stats().late_replies == 1; }));
    CHECK(r.client.stats().replied == 0);
    CHECK(w.drive_until([&] { return worker.handler().stats().replied == 1; }));
}

TEST_CASE("request_client: a reply with a correlation id the client never issued is dropped",
          "[request_reply]") {
    sim_world w;
    requester r(w, letterbox::reply_route::reply_queue);
    message stray;
    stray.routing_key = r.client.reply_to();
    stray.properties.correlation_id = "someone-else:1";
    REQUIRE_FALSE(w.await([&](auto h) { w.transport.async_publish(stray, h); }));
    message none;
    none.routing_key = r.client.reply_to();
    REQUIRE_FALSE(w.await([&](auto h) { w.transport.async_publish(none, h); }));
    REQUIRE(w.drive_until([&] { return r.client.stats().unknown_replies == 2; }));
}

TEST_CASE("request_client: a request cancelled through its slot ends at once and its reply is late",
          "[request_reply]") {
    sim_world w;
    w.declare("held");
    requester r(w,
                GENERATE(letterbox::reply_route::automatic, letterbox::reply_route::reply_queue));
    boost::asio::cancellation_signal cancel;
    std::optional<letterbox::error_code> result;
    message m;
    m.routing_key = "held";
    r.client.async_request(
        m, 10s,
        boost::asio::bind_cancellation_slot(
            cancel.slot(), [&](letterbox::error_code ec, message) { result = ec; }));
    w.run_for(1s);
    REQUIRE_FALSE(result);
    cancel.emit(boost::asio::cancellation_type::terminal);
    REQUIRE(w.drive_until([&] { return result.has_value(); }));
    CHECK(*result == boost::asio::error::operation_aborted);
    CHECK(r.client.stats().cancelled == 1);
    auto worker = serve(w, "held", echo_responder(w));
    w.start(worker);
    REQUIRE(w.drive_until([&] { return r.client.stats().late_replies == 1; }));
}

TEST_CASE("request_client: a lost connection fails every waiting request, then requests work again",
          "[request_reply]") {
    sim_world w;
    w.declare("nowhere");
    requester r(w,
                GENERATE(letterbox::reply_route::automatic, letterbox::reply_route::reply_queue));
    auto first = r.request("nowhere", "1", 30s);
    auto second = r.request("nowhere", "2", 30s);
    w.run_for(10ms);
    w.broker.sever_all();
    CHECK(r.wait(first).ec == errc::connection_closed);
    CHECK(r.wait(second).ec == errc::connection_closed);
    CHECK(r.client.stats().failed == 2);

    // The reply queue and its consumer come back with the next connection.
    auto worker = serve(w, "quotes", echo_responder(w));
    w.start(worker);
    std::optional<outcome> again;
    for (int attempt = 0; attempt < 50 && !(again && !again->ec); ++attempt) {
        w.run_for(100ms);
        again = r.wait(r.request("quotes", "3", 5s));
    }
    REQUIRE(again);
    REQUIRE_FALSE(again->ec);
    CHECK(again->reply.body == "re: 3");
}

TEST_CASE("request_client: a second client on one transport falls back to a reply queue",
          "[request_reply]") {
    sim_world w;
    auto worker = serve(w, "quotes", echo_responder(w));
    w.start(worker);
    requester first(w);
    requester second(w);
    CHECK(is_direct(first.client.reply_to()));
    CHECK(second.client.reply_to().starts_with("letterbox.reply."));
    auto a = first.request("quotes", "1", 5s);
    auto b = second.request("quotes", "2", 5s);
    CHECK(first.wait(a).reply.body == "re: 1");
    CHECK(second.wait(b).reply.body == "re: 2");

    // Asking for direct reply-to only: refused, as the transport already has its consumer.
    client_type third(w.transport, w.clock, {.route = letterbox::reply_route::direct_reply_to});
    CHECK(w.await([&](auto h) { third.async_start(h); }) == errc::precondition_failed);
}

TEST_CASE("request_client: requests before the start, or after the stop, are refused",
          "[request_reply]") {
    sim_world w;
    client_type client(w.transport, w.clock);
    auto [early, unused] =
        w.await2<message>([&](auto h) { client.async_request(message{}, 1s, h); });
    CHECK(early == errc::precondition_failed);
    REQUIRE_FALSE(w.await([&](auto h) { client.async_start(h); }));
    w.declare("void");
    std::optional<std::error_code> pending;
    message m;
    m.routing_key = "void";
    client.async_request(m, 1min, [&](std::error_code ec, message) { pending = ec; });
    w.run_for(1ms);
    REQUIRE_FALSE(w.await([&](auto h) { client.async_stop(h); }));
    REQUIRE(w.drive_until([&] { return pending.has_value(); }));
    CHECK(*pending == errc::closed);
    auto [late, unused2] =
        w.await2<message>([&](auto h) { client.async_request(message{}, 1s, h); });
    CHECK(late == errc::closed);
}

TEST_CASE("request_client: a stop during the start leaves no reply consumer behind",
          "[request_reply]") {
    sim_world w;
    client_type client(w.transport, w.clock,
                       {.route = letterbox::reply_route::reply_queue, .reply_queue = "replies"});
    std::optional<std::error_code> started, stopped;
    client.async_start([&](std::error_code ec) { started = ec; });
    // Stopped once the reply queue is declared, while its consumer is being made.
    REQUIRE(w.drive_until([&] { return w.broker.queue("replies").has_value(); }));
    client.async_stop([&](std::error_code ec) { stopped = ec; });
    REQUIRE(w.drive_until([&] { return started.has_value() && stopped.has_value(); }));
    CHECK(*started == errc::closed);
    CHECK_FALSE(*stopped);
    // The consumer that the start made was cancelled, so the auto-delete queue went with it.
    REQUIRE(w.drive_until([&] { return !w.broker.queue("replies"); }));
}

TEST_CASE("responder: a request without reply_to is refused as a permanent failure",
          "[request_reply]") {
    sim_world w;
    bool called = false;
    auto respond = letterbox::responder(w.transport, [&](const message&) {
        called = true;
        return message{};
    });
    message request;
    request.body = "no address";
    std::optional<std::error_code> result;
    respond(request, [&](std::error_code ec) { result = ec; });
    REQUIRE(w.drive_until([&] { return result.has_value(); }));
    CHECK(*result == errc::missing_reply_to);
    CHECK_FALSE(called);
    CHECK(respond.stats().refused == 1);
    CHECK(letterbox::middleware::intrinsic_death_reason(*result) == "missing-reply-to");

    // A reply whose queue is gone is not a failure: nobody waits for it.
    request.properties.reply_to = "gone";
    result.reset();
    respond(request, [&](std::error_code ec) { result = ec; });
    REQUIRE(w.drive_until([&] { return result.has_value(); }));
    CHECK_FALSE(*result);
    CHECK(respond.stats().unroutable == 1);
}

TEST_CASE("responder: a reply joins its request's trace and conversation, and names it as cause",
          "[request_reply][tracing]") {
    sim_world w;
    w.declare("replies");
    auto respond = echo_responder(w);
    message request;
    request.id = w.ids();
    request.body = "A-1";
    request.properties.reply_to = "replies";
    letterbox::begin_conversation(request);
    std::optional<std::error_code> result;
    respond(request, [&](std::error_code ec) { result = ec; });
    REQUIRE(w.drive_until([&] { return result.has_value(); }));
    REQUIRE_FALSE(*result);

    std::optional<letterbox::delivery> got;
    REQUIRE_FALSE(w.await([&](auto h) {
        w.transport.async_get("replies", [&got, h](std::error_code ec, auto d) mutable {
            got = std::move(d);
            h(ec);
        });
    }));
    REQUIRE(got);
    const message& reply = got->msg;
    CHECK(reply.body == "re: A-1");
    CHECK_FALSE(reply.id.is_nil()); // given one: its span is made from it
    const auto text = [&](std::string_view name) {
        return reply.headers.get<std::string>(name).value_or("(none)");
    };
    CHECK(text(letterbox::headers::causation_id) == letterbox::to_string(request.id));
    CHECK(text(letterbox::headers::conversation_id) == letterbox::to_string(request.id));
    REQUIRE(letterbox::trace_context_of(reply));
    CHECK(letterbox::trace_context_of(reply)->trace_id ==
          letterbox::trace_context_of(request)->trace_id);
}

} // namespace unit_request_reply
