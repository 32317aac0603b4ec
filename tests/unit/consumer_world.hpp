// SPDX-License-Identifier: BSL-1.0
// The consumer unit tests' world: an io_context, a broker on a virtual clock and a transport.
#pragma once

#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/transport.hpp>
#include <letterbox/virtual_clock.hpp>

#include "support/simulation.hpp"

#include <catch2/catch.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

namespace unit_consumer_support {

using namespace std::chrono_literals;

struct world {
    boost::asio::io_context io;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{
        io.get_executor()};
    letterbox::virtual_clock clock;
    letterbox::in_memory::broker broker{io.get_executor(), clock};
    letterbox::in_memory::transport transport{broker};
    letterbox::message_id_generator ids{11};

    bool run_until(const std::function<bool()>& done, std::chrono::milliseconds timeout = 5s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!done()) {
            const auto now = std::chrono::steady_clock::now();
            if (now >= deadline)
                return false;
            io.run_one_for(deadline - now);
        }
        return true;
    }

    template <class Op>
    std::error_code await(Op op) {
        std::optional<std::error_code> result;
        op([&result](std::error_code ec) { result = ec; });
        REQUIRE(run_until([&] { return result.has_value(); }));
        return *result;
    }

    void declare_queue_with_dead_letters(const std::string& name);

    std::error_code publish(const std::string& queue, std::string body) {
        letterbox::message m;
        m.id = ids();
        m.routing_key = queue;
        m.body = std::move(body);
        return await([&](auto h) { transport.async_publish(m, h); });
    }

    template <class Consumer>
    std::string start(Consumer& c) {
        std::optional<std::string> tag;
        c.async_start([&](std::error_code ec, std::string t) {
            REQUIRE_FALSE(ec);
            tag = std::move(t);
        });
        REQUIRE(run_until([&] { return tag.has_value(); }));
        return *tag;
    }
};

/// The same on one thread and a virtual clock (`test_support::simulation`), so that the
/// consumer's waits (a store back-off, a retry delay, a handler's timer) cost no real time.
struct sim_world : test_support::simulation {
    letterbox::in_memory::transport transport{broker, "consumer"};
    letterbox::message_id_generator ids{31};

    void declare(const std::string& queue) {
        letterbox::topology::queue q;
        q.name = queue;
        REQUIRE_FALSE(await([&](auto h) { transport.async_declare(q, h); }));
    }
    letterbox::message publish(const std::string& queue, std::string body,
                               letterbox::field_table headers = {}) {
        letterbox::message m;
        m.id = ids();
        m.routing_key = queue;
        m.body = std::move(body);
        m.headers = std::move(headers);
        REQUIRE_FALSE(await([&](auto h) { transport.async_publish(m, h); }));
        return m;
    }
    template <class Consumer>
    void start(Consumer& c) {
        std::optional<std::error_code> started;
        c.async_start([&](std::error_code ec, const std::string&) { started = ec; });
        REQUIRE(drive_until([&] { return started.has_value(); }));
        REQUIRE_FALSE(*started);
    }
    /// Messages the broker still holds for `queue`, ready or delivered and unacknowledged.
    std::size_t held(const std::string& queue) const {
        const auto q = broker.queue(queue);
        return q ? q->ready + q->unacked : 0;
    }
};

/// Declares `<name>.dlq`, then the queue `name` dead-lettering to it, in `w` (either world).
template <class World>
void declare_with_dead_letters(World& w, const std::string& name) {
    letterbox::topology::queue dlq;
    dlq.name = name + ".dlq";
    REQUIRE_FALSE(w.await([&](auto h) { w.transport.async_declare(dlq, h); }));
    letterbox::topology::queue q;
    q.name = name;
    letterbox::topology::queue_arguments args;
    args.dead_letter_exchange = "";
    args.dead_letter_routing_key = name + ".dlq";
    q.arguments = args.to_table();
    REQUIRE_FALSE(w.await([&](auto h) { w.transport.async_declare(q, h); }));
}

inline void world::declare_queue_with_dead_letters(const std::string& name) {
    declare_with_dead_letters(*this, name);
}

} // namespace unit_consumer_support
