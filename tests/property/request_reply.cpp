// SPDX-License-Identifier: BSL-1.0
// Property (issue 20, request/reply): over random interleavings on the virtual clock (replies
// early, late, duplicated or lost, stray replies, cancellations, lost connections), every
// request of a `request_client` ends exactly once, a reply is only ever handed to the request
// whose correlation id it carries and only before that request's timeout, a request that
// times out ends at its timeout exactly, nothing is left waiting, and the client's counters
// account for every request.

#include <letterbox/error.hpp>
#include <letterbox/request_client.hpp>
#include <letterbox/transport/in_memory/transport.hpp>

#include "support/check_property.hpp"
#include "support/simulation.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace property_request_reply {

namespace {

using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;

struct request_plan {
    int send_at = 0;                   // ms
    int timeout = 100;                 // ms
    std::vector<int> reply_delays{};   // ms after the request reached the responder; empty: lost
    std::optional<int> cancel_after{}; // ms after the send (a cancel before the start of the
                                       // operation leaves no trace, not even a count)
};

struct plan {
    bool direct = true; // direct reply-to, or a reply queue
    std::vector<request_plan> requests;
    std::vector<int> losses; // ms: broker.sever_all()
    std::vector<int> strays; // ms: a reply with a correlation id nobody issued
};

// Between `low` and `high - 1` values drawn from `g`.
template <class T>
rc::Gen<std::vector<T>> some(int low, int high, rc::Gen<T> g) {
    return rc::gen::mapcat(rc::gen::inRange(low, high), [g](int n) {
        return rc::gen::container<std::vector<T>>(static_cast<std::size_t>(n), g);
    });
}

rc::Gen<request_plan> request_gen() {
    return rc::gen::build<request_plan>(
        rc::gen::set(&request_plan::send_at, rc::gen::inRange(0, 1'000)),
        rc::gen::set(&request_plan::timeout, rc::gen::inRange(1, 500)),
        rc::gen::set(&request_plan::reply_delays, some(0, 3, rc::gen::inRange(0, 700))),
        rc::gen::set(&request_plan::cancel_after,
                     rc::gen::weightedOneOf<std::optional<int>>(
                         {{4, rc::gen::just(std::optional<int>{})},
                          {1, rc::gen::map(rc::gen::inRange(1, 700),
                                           [](int t) { return std::optional<int>(t); })}})));
}

rc::Gen<plan> plan_gen() {
    return rc::gen::build<plan>(
        rc::gen::set(&plan::direct, rc::gen::arbitrary<bool>()),
        rc::gen::set(&plan::requests, some(1, 13, request_gen())),
        rc::gen::set(&plan::losses, some(0, 3, rc::gen::inRange(0, 1'200))),
        rc::gen::set(&plan::strays, some(0, 3, rc::gen::inRange(0, 1'200))));
}

struct ending {
    int count = 0;
    letterbox::error_code ec{};
    std::string body{};
    ms at{};
};

void run(const plan& p) {
    test_support::simulation sim;
    letterbox::in_memory::transport transport(sim.broker, "requester");
    letterbox::in_memory::transport responder(sim.broker, "responder");
    const auto start = sim.clock.now();
    auto elapsed = [&] {
        return std::chrono::duration_cast<ms>(sim.clock.now() - start);
    };

    letterbox::topology::queue q;
    q.name = "work";
    RC_ASSERT_FALSE(sim.await([&](auto h) { transport.async_declare(q, h); }));

    letterbox::request_client client(transport, sim.clock,
                                     {.route = p.direct ? letterbox::reply_route::direct_reply_to
                                                        : letterbox::reply_route::reply_queue});
    RC_ASSERT_FALSE(sim.await([&](auto h) { client.async_start(h); }));

    // The scripted responder: each request it receives is answered at the planned delays
    // (none: the reply is lost), with its body naming the request.
    // A deque: a timer with a pending wait is never moved.
    std::deque<decltype(sim.clock.make_timer(sim.io.get_executor()))> timers;
    int published_replies = 0;
    std::string last_address; // the reply_to of the last request the responder saw
    auto reply_later = [&](letterbox::message reply, int delay) {
        timers.push_back(sim.clock.make_timer(sim.io.get_executor()));
        timers.back().expires_after(ms(delay));
        timers.back().async_wait([&, reply](boost::system::error_code ec) {
            if (ec)
                return;
            ++published_replies;
            responder.async_publish(reply, [](letterbox::error_code) {});
        });
    };
    letterbox::consume_options o;
    o.queue = "work";
    o.no_ack = true;
    RC_ASSERT_FALSE(sim.await2<std::string>([&](auto h) {
                           responder.async_consume(
                               o,
                               [&](letterbox::delivery d) {
                                   const auto i = std::stoul(d.msg.body);
                                   last_address = d.msg.properties.reply_to.value_or("");
                                   letterbox::message reply;
                                   reply.routing_key = d.msg.properties.reply_to.value_or("");
                                   reply.properties.correlation_id =
                                       d.msg.properties.correlation_id;
                                   reply.body = "reply:" + d.msg.body;
                                   for (int delay : p.requests[i].reply_delays)
                                       reply_later(reply, delay);
                               },
                               h);
                       })
                        .first);

    // The requests, the cancellations, the losses and the strays, each at its time.
    std::vector<ending> endings(p.requests.size());
    std::vector<boost::asio::cancellation_signal> cancels(p.requests.size());
    auto at = [&](int when, auto f) {
        timers.push_back(sim.clock.make_timer(sim.io.get_executor()));
        timers.back().expires_after(ms(when));
        timers.back().async_wait([f](boost::system::error_code ec) mutable {
            if (!ec)
                f();
        });
    };
    for (std::size_t i = 0; i < p.requests.size(); ++i) {
        const auto& r = p.requests[i];
        at(r.send_at, [&, i, timeout = r.timeout] {
            letterbox::message m;
            m.routing_key = "work";
            m.body = std::to_string(i);
            client.async_request(
                m, ms(timeout),
                boost::asio::bind_cancellation_slot(
                    cancels[i].slot(), [&, i](letterbox::error_code ec, letterbox::message reply) {
                        auto& e = endings[i];
                        ++e.count;
                        e.ec = ec;
                        e.body = reply.body;
                        e.at = elapsed();
                    }));
        });
        if (r.cancel_after)
            at(r.send_at + *r.cancel_after,
               [&, i] { cancels[i].emit(boost::asio::cancellation_type::terminal); });
    }
    for (int t : p.losses)
        at(t, [&] { sim.broker.sever_all(); });
    // A stray goes to the last reply address the responder saw (with direct reply-to there
    // is none before the first request).
    int published_strays = 0;
    for (int t : p.strays)
        at(t, [&] {
            if (last_address.empty())
                return;
            letterbox::message stray;
            stray.routing_key = last_address;
            stray.properties.correlation_id = "not-ours:1";
            ++published_strays;
            responder.async_publish(stray, [](letterbox::error_code) {});
        });

    sim.run_for(5s);

    // Every request ended exactly once, the way its plan allows.
    std::size_t ok = 0, timed_out = 0, cancelled = 0, failed = 0;
    for (std::size_t i = 0; i < p.requests.size(); ++i) {
        const auto& r = p.requests[i];
        const auto& e = endings[i];
        RC_ASSERT(e.count == 1);
        RC_ASSERT(e.at >= ms(r.send_at));
        if (!e.ec) {
            ++ok;
            RC_ASSERT(e.body == "reply:" + std::to_string(i));
            RC_ASSERT(!r.reply_delays.empty());
            RC_ASSERT(e.at < ms(r.send_at + r.timeout));
        } else if (e.ec == letterbox::errc::timed_out) {
            ++timed_out;
            RC_ASSERT(e.at == ms(r.send_at + r.timeout));
        } else if (e.ec == boost::asio::error::operation_aborted) {
            ++cancelled;
            RC_ASSERT(r.cancel_after.has_value());
            RC_ASSERT(e.at == ms(r.send_at + *r.cancel_after));
        } else {
            ++failed;
            RC_ASSERT(!p.losses.empty());
            RC_ASSERT((e.ec == letterbox::errc::connection_closed ||
                       e.ec == letterbox::errc::outcome_unknown));
        }
    }
    const auto s = client.stats();
    RC_ASSERT(s.requests == p.requests.size());
    RC_ASSERT(s.replied == ok);
    RC_ASSERT(s.timed_out == timed_out);
    RC_ASSERT(s.cancelled == cancelled);
    RC_ASSERT(s.failed == failed);
    // Every reply the client saw is accounted for, once.
    RC_ASSERT(s.replied + s.late_replies <= static_cast<std::uint64_t>(published_replies));
    RC_ASSERT(s.unknown_replies <= static_cast<std::uint64_t>(published_strays));
    if (p.losses.empty()) {
        RC_ASSERT(s.replied + s.late_replies == static_cast<std::uint64_t>(published_replies));
        RC_ASSERT(s.unknown_replies == static_cast<std::uint64_t>(published_strays));
    }
}

} // namespace

} // namespace property_request_reply

namespace rc {
template <>
struct Arbitrary<property_request_reply::plan> {
    static Gen<property_request_reply::plan> arbitrary() {
        return property_request_reply::plan_gen();
    }
};
} // namespace rc

namespace property_request_reply {

TEST_CASE("property: every request ends once, with its own reply or a clear error",
          "[property][request_reply]") {
    test_support::check_property("request/reply interleavings", 200, [](const plan& p) { run(p); });
}

} // namespace property_request_reply
