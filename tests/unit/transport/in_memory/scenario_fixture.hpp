// SPDX-License-Identifier: BSL-1.0
#pragma once

// Shared helpers of the in-memory broker scenario tests (routing.cpp, consuming.cpp,
// dead_lettering.cpp, ttl_and_limits.cpp, durability_and_faults.cpp). The scenario ids in those
// files (RMQ-RT-01, DLX-06, ...) refer to research/reliability-anchors.md part (a); "§0.3 n"
// refers to the facts observed on a real RabbitMQ 3.10.8 broker, which win over the catalogue.

#include <letterbox/transport/in_memory/broker.hpp>

#include <letterbox/field_table.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/virtual_clock.hpp>

#include <boost/asio/io_context.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace broker_scenarios {

namespace in_memory = letterbox::in_memory;
namespace topology = letterbox::topology;
using letterbox::errc;
using namespace std::chrono_literals;

/// A queue's (total / ready / unacked) counts, as the RabbitMQ suites poll them.
struct counts {
    std::size_t total = 0;
    std::size_t ready = 0;
    std::size_t unacked = 0;
    friend bool operator==(const counts&, const counts&) = default;
};

/// (T/R/U) shorthand for expectations.
inline counts tru(std::size_t t, std::size_t r, std::size_t u) {
    return counts{t, r, u};
}

inline letterbox::message make_message(std::string exchange, std::string routing_key,
                                       std::string body) {
    letterbox::message m;
    m.exchange = std::move(exchange);
    m.routing_key = std::move(routing_key);
    m.body = std::move(body);
    return m;
}

inline std::string body_of(const in_memory::basic_delivery& d) {
    return d.msg ? d.msg->body : std::string("<no message>");
}

/// Records deliveries and cancellations of one consumer.
struct recorder {
    std::vector<in_memory::basic_delivery> deliveries;
    std::vector<std::string> cancelled;

    in_memory::delivery_callback on_delivery() {
        return [this](const in_memory::basic_delivery& d) {
            deliveries.push_back(d);
        };
    }
    in_memory::cancel_handler on_cancel() {
        return [this](const std::string& tag) {
            cancelled.push_back(tag);
        };
    }
    std::vector<std::string> bodies() const {
        std::vector<std::string> out;
        for (const auto& d : deliveries)
            out.push_back(body_of(d));
        return out;
    }
    std::vector<bool> redelivered_flags() const {
        std::vector<bool> out;
        for (const auto& d : deliveries)
            out.push_back(d.redelivered);
        return out;
    }
    std::uint64_t last_tag() const {
        return deliveries.empty() ? 0 : deliveries.back().delivery_tag;
    }
};

/// Records publisher confirms and returns of one channel, in arrival order.
struct confirm_log {
    struct confirm {
        std::uint64_t seq;
        bool ack;
    };
    std::vector<confirm> confirms;
    std::vector<in_memory::returned_message> returns;
    /// "return:<seq>" and "ack:<seq>" / "nack:<seq>" in the order they arrived.
    std::vector<std::string> events;

    void attach(in_memory::channel& ch) {
        ch.on_confirm([this](std::uint64_t seq, bool ack, bool) {
            confirms.push_back({seq, ack});
            events.push_back((ack ? "ack:" : "nack:") + std::to_string(seq));
        });
        ch.on_return([this](const in_memory::returned_message& r) {
            returns.push_back(r);
            events.push_back("return:" + std::to_string(r.publish_seq));
        });
    }
    std::vector<std::uint64_t> acked() const {
        std::vector<std::uint64_t> out;
        for (const auto& c : confirms)
            if (c.ack)
                out.push_back(c.seq);
        return out;
    }
    std::vector<std::uint64_t> nacked() const {
        std::vector<std::uint64_t> out;
        for (const auto& c : confirms)
            if (!c.ack)
                out.push_back(c.seq);
        return out;
    }
};

/// One broker on a single-threaded `io_context` and a `virtual_clock`, with one connection and
/// one channel (`ch`) for the scenario, and a separate observer connection used only to look
/// at queue contents (so that closing `ch` or its connection does not blind the test).
struct broker_fixture {
    explicit broker_fixture(
        in_memory::broker_profile profile = in_memory::broker_profile::rabbitmq_3_10(),
        std::optional<std::size_t> max_message_size = std::nullopt)
        : broker(io.get_executor(), clock, in_memory::broker_options{profile, max_message_size})
        , conn(broker.connect("scenario"))
        , ch(conn.open_channel()) {}

    broker_fixture(const broker_fixture&) = delete;
    broker_fixture& operator=(const broker_fixture&) = delete;

    // Member order matters: the broker's timers post to `io` when they are destroyed.
    boost::asio::io_context io;
    letterbox::virtual_clock clock;
    in_memory::broker broker;
    in_memory::connection conn;
    in_memory::channel ch;

    /// Moves virtual time and runs the expiry timers that became due.
    void advance(std::chrono::milliseconds d) {
        clock.advance(d);
        run();
    }
    /// Runs whatever is ready on the executor (restarting it if an earlier poll ran dry).
    void run() {
        io.restart();
        io.poll();
    }

    in_memory::channel open_channel() { return conn.open_channel(); }

    void declare_queue(const std::string& name, const topology::queue_arguments& args = {},
                       bool durable = true) {
        topology::queue q;
        q.name = name;
        q.durable = durable;
        q.arguments = args.to_table();
        REQUIRE_FALSE(ch.queue_declare(q));
    }
    void declare_exchange(const std::string& name, topology::exchange_type type,
                          bool durable = true) {
        topology::exchange x;
        x.name = name;
        x.type = type;
        x.durable = durable;
        REQUIRE_FALSE(ch.exchange_declare(x));
    }
    void bind(const std::string& queue, const std::string& exchange, const std::string& key,
              letterbox::field_table args = {}) {
        REQUIRE_FALSE(ch.queue_bind(queue, exchange, key, std::move(args)));
    }

    /// `publish(Q, [a, b])` of the catalogue: default exchange, routing key = queue name.
    void publish(const std::string& queue, std::initializer_list<std::string> bodies) {
        for (const auto& b : bodies)
            REQUIRE_FALSE(ch.basic_publish(make_message("", queue, b)));
    }
    void publish(const std::string& queue, const std::string& body) { publish(queue, {body}); }

    /// `get(Q)` with manual ack on `ch`.
    std::optional<in_memory::basic_delivery> get(std::string_view queue, bool no_ack = false) {
        std::error_code ec;
        auto d = ch.basic_get(queue, ec, no_ack);
        REQUIRE_FALSE(ec);
        return d;
    }
    std::string get_body(std::string_view queue) {
        auto d = get(queue);
        REQUIRE(d);
        return body_of(*d);
    }

    in_memory::channel& observer() {
        if (!observer_.is_open()) {
            observer_conn_ = broker.connect("observer");
            observer_ = observer_conn_.open_channel();
        }
        return observer_;
    }

    /// Takes every ready message of `queue` (auto-ack, on the observer) and returns the bodies.
    std::vector<std::string> drain(std::string_view queue) {
        std::vector<std::string> out;
        for (;;) {
            std::error_code ec;
            auto d = observer().basic_get(queue, ec, true);
            REQUIRE_FALSE(ec);
            if (!d)
                return out;
            out.push_back(body_of(*d));
        }
    }
    /// Like `drain`, but returns the whole deliveries.
    std::vector<in_memory::basic_delivery> drain_deliveries(std::string_view queue) {
        std::vector<in_memory::basic_delivery> out;
        for (;;) {
            std::error_code ec;
            auto d = observer().basic_get(queue, ec, true);
            REQUIRE_FALSE(ec);
            if (!d)
                return out;
            out.push_back(std::move(*d));
        }
    }

    /// (T/R/U) of `queue`; fails the test if the queue does not exist.
    counts count(std::string_view queue) const {
        auto info = broker.queue(queue);
        REQUIRE(info);
        return counts{info->total(), info->ready, info->unacked};
    }
    std::size_t ready(std::string_view queue) const { return count(queue).ready; }

private:
    in_memory::connection observer_conn_{};
    in_memory::channel observer_{};
};

/// Queue arguments with a dead-letter exchange (and optionally routing key) and a queue type.
inline topology::queue_arguments
dlx_args(std::string exchange, std::optional<std::string> routing_key = std::nullopt,
         topology::queue_type type = topology::queue_type::classic) {
    topology::queue_arguments a;
    a.dead_letter_exchange = std::move(exchange);
    a.dead_letter_routing_key = std::move(routing_key);
    a.type = type;
    return a;
}

inline topology::queue_arguments of_type(topology::queue_type type) {
    topology::queue_arguments a;
    a.type = type;
    return a;
}

/// The `x-death` array of a message (empty if absent).
inline letterbox::field_array x_death_of(const letterbox::message& m) {
    if (const auto* v = m.headers.find(letterbox::headers::x_death))
        if (const auto* arr = v->get_if<letterbox::field_array>())
            return *arr;
    return {};
}

/// The `queue` field of every `x-death` entry, in order.
inline std::vector<std::string> x_death_queues(const letterbox::message& m) {
    std::vector<std::string> out;
    for (const auto& v : x_death_of(m))
        if (const auto* t = v.get_if<letterbox::field_table>())
            out.push_back(
                t->get<std::string>(letterbox::headers::x_death_field::queue).value_or("?"));
    return out;
}

/// The `x-death` entry at `i` (fails the test when absent).
inline letterbox::field_table x_death_entry(const letterbox::message& m, std::size_t i) {
    auto deaths = x_death_of(m);
    REQUIRE(deaths.size() > i);
    const auto* t = deaths[i].get_if<letterbox::field_table>();
    REQUIRE(t);
    return *t;
}

inline std::vector<std::string> strings_of(const letterbox::field_value* v) {
    std::vector<std::string> out;
    if (!v)
        return out;
    if (const auto* arr = v->get_if<letterbox::field_array>())
        for (const auto& e : *arr)
            out.push_back(e.get_if<std::string>() ? *e.get_if<std::string>()
                                                  : std::string("<not a longstr>"));
    return out;
}

inline const char* type_name(topology::queue_type t) {
    return t == topology::queue_type::quorum ? "quorum" : "classic";
}

/// Bodies "m<from>" .. "m<to>", and publishing them to a queue in that order.
inline std::vector<std::string> numbered(int from, int to) {
    std::vector<std::string> out;
    for (int i = from; i <= to; ++i)
        out.push_back("m" + std::to_string(i));
    return out;
}

inline void publish_numbered(broker_fixture& fx, const std::string& q, int from, int to) {
    for (const auto& b : numbered(from, to))
        fx.publish(q, b);
}

} // namespace broker_scenarios

namespace Catch {
template <>
struct StringMaker<broker_scenarios::counts> {
    static std::string convert(const broker_scenarios::counts& c) {
        return "(" + std::to_string(c.total) + "/" + std::to_string(c.ready) + "/" +
               std::to_string(c.unacked) + ")";
    }
};
} // namespace Catch
