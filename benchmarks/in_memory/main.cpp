// SPDX-License-Identifier: BSL-1.0
//
// bench_in_memory: single-thread throughput of the in-memory RabbitMQ model (core only).
//
// What it measures, on ONE thread, for 256-byte messages:
//
//   broker      the channel API as a user writes it: `basic_qos(100)`, a consumer whose handler
//               acks each delivery (`basic_ack`), and `basic_publish` of a fresh message to a
//               classic queue through the default exchange. No publisher confirms. The broker
//               reads the real (steady) clock, as `broker b(ex)` does by default.
//   transport   the same hand-off through `in_memory::transport` (the `transport` concept adapter):
//               `async_publish` (mandatory, confirm mode) with a completion handler, 100 publishes
//               in flight; a consumer (prefetch 100) whose handler calls `async_ack`. Completion
//               handlers run on a single-threaded `io_context`.
//   floor       what the transport row's contract costs at the least: the broker row's channel
//               path in confirm mode with mandatory publishes, 100 in flight, plus four posts to
//               the io_context per message (the start and the completion of the publish and of
//               the ack) and one copy of the message for the handler, and nothing else.
//   bare        the baseline: a `std::deque` of a message-like struct guarded by a `std::mutex`;
//               push, pop, "ack" = nothing.
//
// Every side builds a fresh 256-byte body per message and reads one byte of what it receives.
// Rates are messages per second of the thread's CPU time (the machine is shared). Each row runs
// model and baseline alternately, `--repeat` times (default 5), and reports the medians.
//
// Usage: bench_in_memory [--messages N] [--repeat R]
#include <letterbox/transport/in_memory.hpp>

#include "../report.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <time.h>

namespace lb = letterbox;
namespace im = letterbox::in_memory;

namespace {

constexpr std::size_t body_size = 256;
constexpr std::uint16_t prefetch = 100;

// A fresh body per message, on every side, so allocation costs are the same.
std::string make_body(std::uint64_t i) {
    return std::string(body_size, static_cast<char>('a' + i % 26));
}

// The message every model side publishes: to the queue `bench` through the default exchange.
lb::message bench_message(std::uint64_t i) {
    lb::message m;
    m.routing_key = "bench";
    m.body = make_body(i);
    return m;
}

// Keeps the compiler from dropping the consumer's work.
volatile std::uint64_t sink = 0;

// Rates come from the thread's CPU time, not wall time: the machine is shared (2 cores), and
// time spent preempted by other processes is not the model's cost. Nothing here sleeps or waits.
double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// -- bare: std::deque + std::mutex -------------------------------------------------------------

// The bare hand-off carries the same `letterbox::message` the model carries (id, type,
// exchange, routing key, headers, 256-byte body, properties), so the ratio prices what the model
// adds: routing, queue state, delivery tags, prefetch, acknowledgement and events.
double run_bare(std::uint64_t n) {
    using bare_message = lb::message;
    std::deque<bare_message> q;
    std::mutex m;
    std::uint64_t seen = 0;
    const double t0 = cpu_now();
    for (std::uint64_t i = 0; i < n; ++i) {
        {
            std::lock_guard lock(m);
            bare_message msg;
            msg.routing_key = "bench";
            msg.body = make_body(i);
            q.push_back(std::move(msg));
        }
        bare_message got;
        {
            std::lock_guard lock(m);
            got = std::move(q.front());
            q.pop_front();
        }
        seen += static_cast<unsigned char>(got.body[0]); // "handle"; ack = nothing
    }
    const double s = cpu_now() - t0;
    sink = sink + seen;
    return static_cast<double>(n) / s;
}

// -- broker: channel API ----------------------------------------------------------------------

double run_broker(std::uint64_t n) {
    boost::asio::io_context io;
    im::broker b(io.get_executor());
    auto conn = b.connect("bench");
    auto ch = conn.open_channel();
    if (ch.queue_declare(lb::topology::queue{.name = "bench"}))
        std::abort();
    ch.basic_qos(prefetch);
    std::uint64_t seen = 0;
    std::uint64_t received = 0;
    std::error_code ec;
    ch.basic_consume(
        "bench",
        [&](const im::basic_delivery& d) {
            seen += static_cast<unsigned char>(d.msg->body[0]);
            ++received;
            ch.basic_ack(d.delivery_tag);
        },
        ec);
    if (ec)
        std::abort();
    const double t0 = cpu_now();
    for (std::uint64_t i = 0; i < n; ++i) {
        ch.basic_publish(bench_message(i));
    }
    const double s = cpu_now() - t0;
    if (received != n || b.counters().acked != n || b.total_ready() != 0 ||
        b.total_unacked() != 0) {
        std::fprintf(stderr, "broker: received %llu of %llu\n",
                     static_cast<unsigned long long>(received), static_cast<unsigned long long>(n));
        std::exit(1);
    }
    sink = sink + seen;
    return static_cast<double>(n) / s;
}

// -- transport: in_memory::transport with completion handlers ---------------------------------

double run_transport(std::uint64_t n) {
    boost::asio::io_context io;
    im::broker b(io.get_executor());
    lb::in_memory::transport t(b, "bench");
    std::error_code first_error;
    auto check = [&](std::error_code ec) {
        if (ec && !first_error)
            first_error = ec;
    };
    t.async_declare(lb::topology::queue{.name = "bench"}, check);
    std::uint64_t seen = 0;
    std::uint64_t received = 0;
    t.async_consume(
        lb::consume_options{.queue = "bench", .prefetch = prefetch},
        [&](lb::delivery d) {
            seen += static_cast<unsigned char>(d.msg.body[0]);
            ++received;
            t.async_ack(d, check);
        },
        [&](std::error_code ec, std::string) { check(ec); });
    io.run();
    io.restart();

    // `prefetch` publish chains: each completion starts the next publish.
    std::uint64_t started = 0;
    std::uint64_t confirmed = 0;
    std::function<void()> publish_next = [&] {
        if (started == n)
            return;
        t.async_publish(bench_message(started++), [&](std::error_code ec) {
            check(ec);
            ++confirmed;
            publish_next();
        });
    };
    const double t0 = cpu_now();
    for (unsigned i = 0; i < prefetch; ++i)
        publish_next();
    io.run();
    const double s = cpu_now() - t0;
    if (first_error || confirmed != n || received != n || b.counters().acked != n) {
        std::fprintf(stderr, "transport: %s; confirmed %llu received %llu of %llu\n",
                     first_error.message().c_str(), static_cast<unsigned long long>(confirmed),
                     static_cast<unsigned long long>(received), static_cast<unsigned long long>(n));
        std::exit(1);
    }
    sink = sink + seen;
    return static_cast<double>(n) / s;
}

// -- floor: the least that the transport row's contract costs --------------------------------

// The channel path with what the transport row asks of the broker (confirm mode, mandatory
// publishes, 100 in flight), plus exactly what the transport's contract adds per message, and
// nothing else: four posts to the io_context (the start and the completion of the publish and
// of the ack: an operation starts after its caller returns, and a completion never runs inside
// the call that started it) and one copy of the message for the handler (the broker keeps its
// own until the ack). No operation state, work guard, cancellation slot or type-erased handler:
// a transport that keeps the contract cannot do less.
double run_floor(std::uint64_t n) {
    boost::asio::io_context io;
    im::broker b(io.get_executor());
    auto conn = b.connect("bench");
    auto ch = conn.open_channel();
    if (ch.queue_declare(lb::topology::queue{.name = "bench"}) || ch.confirm_select())
        std::abort();
    ch.basic_qos(prefetch);
    std::uint64_t seen = 0, received = 0, acked = 0, confirmed = 0, started = 0;
    std::function<void()> publish_next = [&] {
        if (started == n)
            return;
        boost::asio::post(io, [&ch, m = bench_message(started++)]() mutable { // the publish's start
            if (ch.basic_publish(std::move(m), true))
                std::abort();
        });
    };
    ch.on_confirm([&](std::uint64_t, bool ack, bool multiple) {
        if (!ack || multiple)
            std::abort();
        boost::asio::post(io, [&] { // the publish's completion: the next publish of its chain
            ++confirmed;
            publish_next();
        });
    });
    std::error_code ec;
    ch.basic_consume(
        "bench",
        [&](const im::basic_delivery& d) {
            const lb::message copy = *d.msg; // the handler's delivery
            seen += static_cast<unsigned char>(copy.body[0]);
            ++received;
            boost::asio::post(io, [&, tag = d.delivery_tag] { // the ack's start
                if (ch.basic_ack(tag))
                    std::abort();
                boost::asio::post(io, [&] { ++acked; }); // the ack's completion
            });
        },
        ec);
    if (ec)
        std::abort();
    io.run();
    io.restart();
    const double t0 = cpu_now();
    for (unsigned i = 0; i < prefetch; ++i)
        publish_next();
    io.run();
    const double s = cpu_now() - t0;
    if (confirmed != n || received != n || acked != n || b.counters().acked != n) {
        std::fprintf(stderr, "floor: confirmed %llu received %llu acked %llu of %llu\n",
                     static_cast<unsigned long long>(confirmed),
                     static_cast<unsigned long long>(received),
                     static_cast<unsigned long long>(acked), static_cast<unsigned long long>(n));
        std::exit(1);
    }
    sink = sink + seen;
    return static_cast<double>(n) / s;
}

struct row {
    const char* name;
    bench::rounds model;
    bench::rounds bare;
};

} // namespace

int main(int argc, char** argv) {
    std::uint64_t n = 1'000'000;
    int repeat = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--messages") == 0)
            n = std::strtoull(argv[i + 1], nullptr, 10);
        else if (std::strcmp(argv[i], "--repeat") == 0)
            repeat = std::max(1, std::atoi(argv[i + 1]));
    }
    const bench::machine_load load;
    std::printf(
        "bench_in_memory: %llu messages of %zu bytes per run, median of %d runs, one thread\n",
        static_cast<unsigned long long>(n), body_size, repeat);

    // Runs model and baseline alternately, so background load hits both alike.
    auto measure = [&](const char* name, double (*model)(std::uint64_t)) {
        row r{name, {}, {}};
        model(n / 10 + 1); // warm-up
        run_bare(n / 10 + 1);
        for (int i = 0; i < repeat; ++i) {
            r.model.add(model(n));
            r.bare.add(run_bare(n));
        }
        return r;
    };
    const row rows[] = {
        measure("broker (channel: publish, consume prefetch 100, ack)", run_broker),
        measure("in_memory::transport (async_publish, consume, async_ack)", run_transport),
        measure("floor of the transport's contract (channel + 4 posts + copy)", run_floor)};

    std::printf("\n%-58s %12s %6s %9s %12s %6s %8s\n", "path (medians)", "model msg/s", "spread",
                "ns/msg", "bare msg/s", "spread", "ratio");
    for (const auto& r : rows)
        std::printf("%-58s %12.0f %6s %9.0f %12.0f %6s %7.3fx\n", r.name, r.model.mid(),
                    r.model.spread().c_str(), 1e9 / r.model.mid(), r.bare.mid(),
                    r.bare.spread().c_str(), r.model.mid() / r.bare.mid());
    std::printf("\nbare = std::deque<letterbox::message> (256-byte body) + std::mutex: push, pop, "
                "no ack\n");
    const double broker = rows[0].model.mid();
    const double transport = rows[1].model.mid();
    std::printf("targets for the broker row: >= 2000000 msg/s: %s; >= 0.4x bare: %s\n",
                broker >= 2e6 ? "met" : "MISSED",
                broker >= 0.4 * rows[0].bare.mid() ? "met" : "MISSED");
    std::printf("targets for the transport row: >= 2000000 msg/s: %s; >= 0.5x the broker row "
                "(%.3fx): %s\n",
                transport >= 2e6 ? "met" : "MISSED", transport / broker,
                transport >= 0.5 * broker ? "met" : "MISSED");
    const double floor = rows[2].model.mid();
    std::printf("the transport row's floor is %.3fx the broker row; the transport row is %.3fx "
                "its floor\n",
                floor / broker, transport / floor);
    load.end();
    return 0;
}
