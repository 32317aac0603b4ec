// SPDX-License-Identifier: BSL-1.0
#pragma once

// The world of the dead-letter tests: an in-memory broker on a single-threaded io_context and
// a virtual clock, a work exchange and queue that dead-letter into `work.dlq`, and bounded ways
// to drive them. No sleeps: time moves only when the driver moves it.

#include <letterbox/delivery.hpp>
#include <letterbox/detail/rfc3339.hpp>
#include <letterbox/error.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/transport.hpp>
#include <letterbox/virtual_clock.hpp>

#include "support/simulation.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace dlq_test {

using namespace std::chrono_literals;
namespace headers = letterbox::headers;

inline constexpr const char* work_exchange = "work";
inline constexpr const char* work_key = "job";
inline constexpr const char* work_queue = "work.q";
inline constexpr const char* dlq_name = "work.dlq";

/// A fixed wall time for the fault headers of explicitly dead-lettered messages.
inline std::chrono::system_clock::time_point at(int minute) {
    return letterbox::virtual_clock::default_wall_epoch - std::chrono::hours{24} +
           std::chrono::minutes{minute};
}

inline std::string rfc3339(std::chrono::system_clock::time_point t) {
    return letterbox::detail::format_rfc3339(t);
}

/// What explicit dead-lettering writes (what letterbox's dead-letter middleware records).
struct fault {
    std::string reason = "handler_failed";
    std::string exception_type = "std::runtime_error";
    std::string exception_message = "boom";
    std::int64_t attempts = 5;
    int first_minute = 0;
    int last_minute = 10;
    int dead_lettered_minute = 11;
    std::string original_exchange = work_exchange;
    std::string original_routing_key = work_key;
    std::string original_queue = work_queue;
    std::string consumer_id = "billing";
};

struct world : test_support::simulation {
    letterbox::in_memory::transport transport{broker, "dlq-tests"};
    letterbox::message_id_generator ids{4242};

    world() { declare_topology(); }

    /// `work` (direct) -> `work.q` by `job`; `work.q` dead-letters to `work.dlq` through the
    /// default exchange.
    void declare_topology() {
        letterbox::topology::exchange x;
        x.name = work_exchange;
        x.type = letterbox::topology::exchange_type::direct;
        REQUIRE_FALSE(await([&](auto h) { transport.async_declare(x, h); }));
        letterbox::topology::queue dlq;
        dlq.name = dlq_name;
        REQUIRE_FALSE(await([&](auto h) { transport.async_declare(dlq, h); }));
        letterbox::topology::queue q;
        q.name = work_queue;
        letterbox::topology::queue_arguments args;
        args.dead_letter_exchange = "";
        args.dead_letter_routing_key = dlq_name;
        q.arguments = args.to_table();
        REQUIRE_FALSE(await([&](auto h) { transport.async_declare(q, h); }));
        letterbox::topology::binding b;
        b.source = work_exchange;
        b.destination = work_queue;
        b.routing_key = work_key;
        REQUIRE_FALSE(await([&](auto h) { transport.async_bind(b, h); }));
    }

    letterbox::message make_message(std::string type, std::string body) {
        letterbox::message m;
        m.id = ids();
        m.type = std::move(type);
        m.body = std::move(body);
        m.properties.content_type = "application/json";
        return m;
    }

    void publish(letterbox::message m) {
        REQUIRE_FALSE(await([&](auto h) { transport.async_publish(m, h); }));
    }

    /// (a) Native dead-lettering: published to the work exchange, fetched from the work queue
    /// and rejected without requeue; the broker moves it to the DLQ with `x-death`. Returns
    /// its id.
    letterbox::message_id dead_letter_natively(std::string type = "order.placed",
                                               std::string body = R"({"order":1})",
                                               letterbox::field_table extra = {}) {
        auto m = make_message(std::move(type), std::move(body));
        m.exchange = work_exchange;
        m.routing_key = work_key;
        for (const auto& [name, value] : extra)
            m.headers.set(name, value);
        const auto id = m.id;
        const auto before = broker.queue(dlq_name)->ready;
        publish(std::move(m));
        auto got = await2<std::optional<letterbox::delivery>>(
            [&](auto h) { transport.async_get(work_queue, h); });
        REQUIRE_FALSE(got.first);
        REQUIRE(got.second.has_value());
        REQUIRE(got.second->msg.id == id);
        REQUIRE_FALSE(await([&](auto h) { transport.async_reject(*got.second, false, h); }));
        REQUIRE(drive_until([&] { return broker.queue(dlq_name)->ready == before + 1; }));
        return id;
    }

    /// (b) Explicit dead-lettering: published straight to the DLQ with letterbox's fault
    /// headers. Returns its id.
    letterbox::message_id dead_letter_explicitly(const fault& f = {},
                                                 std::string type = "order.placed",
                                                 std::string body = R"({"order":2})",
                                                 letterbox::field_table extra = {}) {
        auto m = make_message(std::move(type), std::move(body));
        m.routing_key = dlq_name;
        auto& h = m.headers;
        h.set(headers::death_reason, f.reason);
        h.set(headers::exception_type, f.exception_type);
        h.set(headers::exception_message, f.exception_message);
        h.set(headers::attempts, f.attempts);
        h.set(headers::first_failure_time, rfc3339(at(f.first_minute)));
        h.set(headers::last_failure_time, rfc3339(at(f.last_minute)));
        h.set(headers::dead_lettered_time, rfc3339(at(f.dead_lettered_minute)));
        h.set(headers::original_exchange, f.original_exchange);
        h.set(headers::original_routing_key, f.original_routing_key);
        h.set(headers::original_queue, f.original_queue);
        h.set(headers::consumer_id, f.consumer_id);
        for (const auto& [name, value] : extra)
            h.set(name, value);
        const auto id = m.id;
        publish(std::move(m));
        return id;
    }

    /// Takes every ready message of `queue` (acking them), in queue order.
    std::vector<letterbox::message> drain(const std::string& queue) {
        std::vector<letterbox::message> out;
        for (;;) {
            auto got = await2<std::optional<letterbox::delivery>>(
                [&](auto h) { transport.async_get(queue, h); });
            REQUIRE_FALSE(got.first);
            if (!got.second)
                return out;
            REQUIRE_FALSE(await([&](auto h) { transport.async_ack(*got.second, h); }));
            out.push_back(std::move(got.second->msg));
        }
    }

    std::size_t ready(const std::string& queue) const { return broker.queue(queue)->ready; }
    std::size_t unacked(const std::string& queue) const { return broker.queue(queue)->unacked; }
};

} // namespace dlq_test
