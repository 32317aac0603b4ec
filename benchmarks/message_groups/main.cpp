// SPDX-License-Identifier: BSL-1.0
//
// bench_message_groups: how a consumer with message groups scales with its concurrency, on the
// in-memory RabbitMQ model (core only).
//
// The workload (issue 20): 100 keys x 1,000 messages, published round robin over the keys
// (k0, k1, ..., k99, k0, ...), each carrying its key in `x-letterbox-group`. The handler costs
// 100 us: a coroutine that waits 100 us on a timer, as a call to another service would, so a
// consumer can have several in progress on its one thread. The consumer runs message groups
// (`consumer_options::groups`) with a concurrency of 1, 8 and 32 (prefetch twice that), and
// each run ends when every message is acknowledged.
//
//   groups      messages per second of wall time, from the consumer's start to the last ack (the
//               queue is filled before, and not timed).
//   ceiling     the baseline, measured in the same run: the same number of 100 us waits, in
//               `concurrency` coroutines that each wait on their timer in a loop, on the same
//               kind of io_context, with no broker and no consumer. It is the most any consumer
//               could do at that concurrency on this machine's timers (a timer fires some tens of
//               microseconds late, so one waiter does less than 10,000 waits per second).
//
// It reports each row's median over `--repeat` rounds (groups and ceiling alternately), the
// ratio groups / ceiling, and the scaling from concurrency 1 to 8 and 32, which issue 20 asks to
// be at least 6x from 1 to 8.
//
// With `--url amqp://...` (or LETTERBOX_AMQP_URL) it measures on that RabbitMQ instead, across
// four partitions (`topology::group_partitions`: a consistent-hash exchange and four
// single-active-consumer quorum queues), one consumer per partition with groups at a concurrency
// of 8 each (prefetch 16), 100 keys x `--per-key` messages (default 100 there: the filling is
// confirmed publishes). The baseline, in the same run and on the same partitions: four consumers
// without groups at the same prefetch, whose handlers run with no order at all. The ratio is the
// cost of keeping the order per key.
//
// Usage: bench_message_groups [--keys K] [--per-key N] [--repeat R] [--url amqp://...]
#include <letterbox/amqp.hpp>
#include <letterbox/consumer.hpp>
#include <letterbox/group_key.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/topology/group_partitions.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/transport/async_declare_all.hpp>
#include <letterbox/transport/in_memory.hpp>

#include "../report.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

namespace asio = boost::asio;
namespace lb = letterbox;

namespace {

using namespace std::chrono_literals;
constexpr auto handler_cost = 100us;

struct workload {
    std::size_t keys = 100;
    std::size_t per_key = 1000;
    std::size_t total() const noexcept { return keys * per_key; }
};

// Runs `io` until `done()`, failing after a minute.
template <class Done>
void run_until(asio::io_context& io, Done done) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("bench_message_groups: a run did not finish in a minute");
        io.run_one_for(10ms);
    }
}

template <class Start>
void await(asio::io_context& io, Start start) {
    std::optional<std::error_code> result;
    start([&](std::error_code ec) { result = ec; });
    run_until(io, [&] { return result.has_value(); });
    if (*result)
        throw std::system_error(*result);
}

// One run of the consumer with groups; messages per second of wall time.
double run_groups(const workload& w, std::size_t concurrency) {
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    lb::in_memory::broker broker(io.get_executor());
    lb::in_memory::transport transport(broker, "bench");
    lb::topology::queue q;
    q.name = "orders";
    await(io, [&](auto h) { transport.async_declare(q, h); });
    // Fill the queue through the channel API: faster than confirmed publishes, and not timed.
    {
        auto conn = broker.connect("filler");
        auto ch = conn.open_channel();
        lb::message_id_generator ids(1);
        for (std::size_t i = 0; i < w.total(); ++i) {
            lb::message m;
            m.id = ids();
            m.routing_key = "orders";
            m.body = "order";
            m.headers.set(lb::headers::group, "k" + std::to_string(i % w.keys));
            if (const auto ec = ch.basic_publish(std::move(m)))
                throw std::system_error(ec);
        }
        conn.close();
    }
    auto handle = [](const lb::message&) -> asio::awaitable<void> {
        asio::steady_timer t(co_await asio::this_coro::executor, handler_cost);
        co_await t.async_wait(asio::use_awaitable);
    };
    lb::consumer_options o;
    o.consume.queue = "orders";
    o.consume.prefetch = static_cast<std::uint16_t>(2 * concurrency);
    o.groups.key = lb::group_key::standard{};
    o.groups.concurrency = concurrency;
    lb::consumer c(transport, handle, o);
    const auto start = std::chrono::steady_clock::now();
    bool started = false;
    c.async_start([&](std::error_code ec, const std::string&) {
        if (ec)
            throw std::system_error(ec);
        started = true;
    });
    run_until(io, [&] { return started && c.stats().acked == w.total(); });
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    return static_cast<double>(w.total()) / took.count();
}

// The ceiling: `concurrency` coroutines that wait `handler_cost` in a loop, `total` waits in all.
double run_ceiling(const workload& w, std::size_t concurrency) {
    asio::io_context io;
    std::size_t left = w.total();
    std::size_t done = 0;
    auto waiter = [&]() -> asio::awaitable<void> {
        asio::steady_timer t(co_await asio::this_coro::executor);
        while (left > 0) {
            --left;
            t.expires_after(handler_cost);
            co_await t.async_wait(asio::use_awaitable);
            ++done;
        }
    };
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < concurrency; ++i)
        asio::co_spawn(io, waiter(), asio::detached);
    io.run();
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    return static_cast<double>(done) / took.count();
}

// ---- on RabbitMQ: four consistent-hash partitions ----------------------------------------------

// One run on the broker: fills the four partitions of a fresh layout (not timed), then consumes
// them with four consumers, with groups or without; messages per second of wall time.
double run_partitions(const lb::amqp::url& url, const workload& w, bool groups, int round) {
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    lb::amqp::transport transport(io.get_executor(), url);
    const lb::topology::group_partitions layout{
        .name = "letterbox.bench.groups." + std::to_string(::getpid()) + "." +
                std::to_string(round) + (groups ? ".g" : ".p"),
        .partitions = 4,
        .expires = std::chrono::minutes(1)}; // the broker forgets them a minute after the run
    await(io,
          [&](auto h) { lb::topology::async_declare_all(transport, layout.declarations(), h); });
    {
        lb::message_id_generator ids(1);
        std::size_t confirmed = 0;
        for (std::size_t i = 0; i < w.total(); ++i) {
            lb::message m;
            m.id = ids();
            m.exchange = layout.name;
            m.body = "order";
            m.headers.set(lb::headers::group, "k" + std::to_string(i % w.keys));
            transport.async_publish(std::move(m), [&](std::error_code ec) {
                if (ec)
                    throw std::system_error(ec);
                ++confirmed;
            });
        }
        run_until(io, [&] { return confirmed == w.total(); });
    }
    auto handle = [](const lb::message&) -> asio::awaitable<void> {
        asio::steady_timer t(co_await asio::this_coro::executor, handler_cost);
        co_await t.async_wait(asio::use_awaitable);
    };
    using consumer_type = decltype(lb::consumer(transport, handle, lb::consumer_options{}));
    std::vector<consumer_type> consumers;
    consumers.reserve(layout.partitions);
    std::size_t started = 0;
    const auto start = std::chrono::steady_clock::now();
    for (std::uint32_t i = 0; i < layout.partitions; ++i) {
        lb::consumer_options o;
        o.consume.queue = layout.partition_name(i);
        o.consume.prefetch = 16;
        if (groups) {
            o.groups.key = lb::group_key::standard{};
            o.groups.concurrency = 8;
        }
        consumers.emplace_back(transport, handle, o);
        consumers.back().async_start([&](std::error_code ec, const std::string&) {
            if (ec)
                throw std::system_error(ec);
            ++started;
        });
    }
    auto acked = [&] {
        std::uint64_t n = 0;
        for (const auto& c : consumers)
            n += c.stats().acked;
        return n;
    };
    run_until(io, [&] { return started == layout.partitions && acked() == w.total(); });
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    return static_cast<double>(w.total()) / took.count();
}

int run_on_broker(const std::string& url_text, workload w, int repeat) {
    const auto url = lb::amqp::parse_url(url_text);
    std::printf("bench_message_groups on RabbitMQ (%s): %zu keys x %zu messages over 4 "
                "consistent-hash partitions, handler waits %lld us, median of %d rounds\n",
                url.redacted().c_str(), w.keys, w.per_key,
                static_cast<long long>(handler_cost.count()), repeat);
    const bench::machine_load load;
    bench::rounds grouped, plain;
    for (int i = 0; i < repeat; ++i) {
        grouped.add(run_partitions(url, w, true, i));
        plain.add(run_partitions(url, w, false, i));
    }
    std::printf("\n%-34s %12s %6s\n", "4 partitions, 4 consumers", "msg/s", "spread");
    std::printf("%-34s %12.0f %6s\n", "groups, concurrency 8 each", grouped.mid(),
                grouped.spread().c_str());
    std::printf("%-34s %12.0f %6s\n", "no groups (baseline), prefetch 16", plain.mid(),
                plain.spread().c_str());
    std::printf("\nratio groups / no groups: %.3fx (the cost of the order per key)\n",
                grouped.mid() / plain.mid());
    load.end();
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    workload w;
    int repeat = 3;
    std::string url;
    if (const char* env = std::getenv("LETTERBOX_AMQP_URL"))
        url = env;
    bool per_key_given = false;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--keys") == 0)
            w.keys = std::max<std::size_t>(1, std::strtoull(argv[i + 1], nullptr, 10));
        else if (std::strcmp(argv[i], "--per-key") == 0) {
            w.per_key = std::max<std::size_t>(1, std::strtoull(argv[i + 1], nullptr, 10));
            per_key_given = true;
        } else if (std::strcmp(argv[i], "--repeat") == 0)
            repeat = std::max(1, std::atoi(argv[i + 1]));
        else if (std::strcmp(argv[i], "--url") == 0)
            url = argv[i + 1];
    }
    if (!url.empty()) {
        if (!per_key_given)
            w.per_key = 100;
        return run_on_broker(url, w, repeat);
    }
    const bench::machine_load load;
    std::printf("bench_message_groups: %zu keys x %zu messages, handler waits %lld us, median of "
                "%d rounds, one thread\n",
                w.keys, w.per_key, static_cast<long long>(handler_cost.count()), repeat);

    struct row {
        std::size_t concurrency;
        bench::rounds groups, ceiling;
    };
    std::vector<row> rows;
    for (const std::size_t c : {1, 8, 32}) {
        row r{c, {}, {}};
        for (int i = 0; i < repeat; ++i) {
            r.groups.add(run_groups(w, c));
            r.ceiling.add(run_ceiling(w, c));
        }
        rows.push_back(r);
    }

    std::printf("\n%-12s %12s %6s %12s %6s %8s %9s\n", "concurrency", "groups msg/s", "spread",
                "ceiling/s", "spread", "ratio", "scaling");
    const double one = rows.front().groups.mid();
    for (const auto& r : rows)
        std::printf("%-12zu %12.0f %6s %12.0f %6s %7.3fx %8.2fx\n", r.concurrency, r.groups.mid(),
                    r.groups.spread().c_str(), r.ceiling.mid(), r.ceiling.spread().c_str(),
                    r.groups.mid() / r.ceiling.mid(), r.groups.mid() / one);
    std::printf("\nratio = groups / ceiling (the same waits with no broker and no consumer); "
                "scaling = groups / groups at concurrency 1\n");
    const double eight = rows[1].groups.mid() / one;
    std::printf("target: >= 6x from concurrency 1 to 8: %.2fx, %s\n", eight,
                eight >= 6.0 ? "met" : "NOT met");
    load.end();
    return 0;
}
