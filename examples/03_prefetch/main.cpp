// SPDX-License-Identifier: BSL-1.0
//
// Example: what prefetch does to throughput and to how work is shared between workers.
//
// Three workers consume one queue holding 1,000 messages; each message takes 10 ms of
// simulated work. A worker holds at most `prefetch` unacknowledged messages (`basic.qos`),
// works through them one at a time, and acks each when it is done. The example runs that at
// prefetch 1, 10 and 100, in three settings:
//
//   A. the seed's setup as stated: three equally fast workers, and a broker with no network
//      delay (the in-memory model delivers and acks instantly);
//   B. the same workers behind a 2 ms network round trip: each ack takes 1 ms to reach the
//      broker and each delivery 1 ms to reach the worker;
//   C. no network delay, but one slow worker: 30 ms per message instead of 10.
//
// For each run it prints the time to drain the queue, the throughput, how many messages each
// worker processed and its deviation from an even split (1000 / 3), then one line per
// (setting, prefetch, worker) for plotting:
//
//   prefetch-distribution scenario=A prefetch=10 worker=2 messages=333
//
// It runs on the virtual clock, so 30 seconds of simulated work take milliseconds and the
// numbers are the same on every run. The checks compare ratios of throughputs and
// deviations, never absolute times. Needs: the core only.
#include <letterbox/letterbox.hpp>
#include <letterbox/virtual_clock.hpp>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

using namespace letterbox;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t message_count = 1000;
constexpr std::size_t worker_count = 3;
constexpr std::array<std::uint16_t, 3> prefetches = {1, 10, 100};

struct setting {
    const char* name;
    const char* description;
    std::array<std::chrono::milliseconds, worker_count> work; // per message, per worker
    std::chrono::milliseconds round_trip;                     // broker <-> worker, both ways
};

struct run_result {
    std::uint16_t prefetch = 0;
    double seconds = 0;
    double throughput = 0; // messages per second
    std::array<std::size_t, worker_count> processed{};
    std::array<double, worker_count> deviation{}; // percent of an even split
    double max_deviation = 0;                     // the largest |deviation|
};

// One worker: the broker pushes up to `prefetch` deliveries; the worker processes them one at
// a time, in order, and acks each after its work. Network delay is modelled on the virtual
// clock: a delivery reaches the worker, and an ack reaches the broker, half a round trip
// after it was sent.
class worker {
public:
    worker(boost::asio::io_context& io, virtual_clock& clock, in_memory::broker& broker,
           std::string name, std::chrono::milliseconds work, std::chrono::milliseconds latency,
           std::function<void()> on_done)
        : io_(io)
        , clock_(clock)
        , transport_(broker, std::move(name))
        , work_(work)
        , latency_(latency)
        , on_done_(std::move(on_done)) {}

    void start(std::uint16_t prefetch, std::function<void(std::error_code)> started) {
        transport_.async_consume(
            {.queue = "work", .prefetch = prefetch},
            [this](delivery d) { after(latency_, [this, d = std::move(d)] { arrived(d); }); },
            [started = std::move(started)](std::error_code ec, std::string) { started(ec); });
    }

    std::size_t processed() const noexcept { return processed_; }

private:
    // Runs `f` on the executor after `d` of virtual time (at once when `d` is zero).
    template <class F>
    void after(std::chrono::milliseconds d, F f) {
        if (d == 0ms) {
            f();
            return;
        }
        auto timer = std::make_shared<virtual_clock::timer_type<>>(
            clock_.make_timer(boost::asio::any_io_executor(io_.get_executor())));
        timer->expires_after(d);
        timer->async_wait([timer, f = std::move(f)](boost::system::error_code ec) mutable {
            if (!ec)
                f();
        });
    }

    void arrived(delivery d) {
        buffer_.push_back(std::move(d));
        if (!busy_)
            work_on_next();
    }

    void work_on_next() {
        if (buffer_.empty()) {
            busy_ = false;
            return;
        }
        busy_ = true;
        after(work_, [this] {
            delivery d = std::move(buffer_.front());
            buffer_.pop_front();
            ++processed_;
            // The ack travels to the broker while the worker goes on with its next message.
            after(latency_, [this, d = std::move(d)] {
                transport_.async_ack(d, [](std::error_code ec) {
                    if (ec)
                        std::fprintf(stderr, "ack failed: %s\n", ec.message().c_str());
                });
            });
            on_done_();
            work_on_next();
        });
    }

    boost::asio::io_context& io_;
    virtual_clock& clock_;
    in_memory::transport transport_;
    std::chrono::milliseconds work_;
    std::chrono::milliseconds latency_;
    std::function<void()> on_done_;
    std::deque<delivery> buffer_;
    bool busy_ = false;
    std::size_t processed_ = 0;
};

// Runs ready handlers; when none is ready, jumps virtual time to the next timer. Bounded.
bool drive_until(boost::asio::io_context& io, virtual_clock& clock,
                 const std::function<bool()>& done, std::size_t max_steps = 5'000'000) {
    for (std::size_t step = 0; step < max_steps && !done(); ++step) {
        io.restart();
        if (io.poll_one() == 0 && !clock.advance_to_next())
            break;
    }
    return done();
}

// Fills the queue, starts the workers together, and measures until every message is done.
std::optional<run_result> run(const setting& s, std::uint16_t prefetch) {
    boost::asio::io_context io;
    virtual_clock clock;
    in_memory::broker broker{io.get_executor(), clock};
    in_memory::transport publisher{broker, "publisher"};

    bool declared = false;
    publisher.async_declare(topology::queue{.name = "work"},
                            [&](std::error_code ec) { declared = !ec; });
    if (!drive_until(io, clock, [&] { return declared; }))
        return std::nullopt;
    message_id_generator ids{3};
    std::size_t confirmed = 0;
    for (std::size_t i = 0; i < message_count; ++i) {
        message m;
        m.id = ids();
        m.routing_key = "work";
        m.body = std::to_string(i);
        publisher.async_publish(m, [&](std::error_code ec) { confirmed += ec ? 0 : 1; });
    }
    if (!drive_until(io, clock, [&] { return confirmed == message_count; }))
        return std::nullopt;

    std::size_t done = 0;
    std::optional<virtual_clock::time_point> finished;
    auto on_done = [&] {
        if (++done == message_count)
            finished = clock.now();
    };
    std::vector<std::unique_ptr<worker>> workers;
    for (std::size_t w = 0; w < worker_count; ++w)
        workers.push_back(std::make_unique<worker>(io, clock, broker,
                                                   "worker-" + std::to_string(w + 1), s.work[w],
                                                   s.round_trip / 2, on_done));
    const auto start = clock.now();
    std::size_t started = 0;
    for (auto& w : workers)
        w->start(prefetch, [&](std::error_code ec) { started += ec ? 0 : 1; });
    if (!drive_until(io, clock, [&] { return finished.has_value(); }))
        return std::nullopt;
    // Let the last acks reach the broker.
    if (!drive_until(io, clock, [&] { return broker.total_unacked() == 0; }) ||
        started != worker_count)
        return std::nullopt;

    run_result r;
    r.prefetch = prefetch;
    r.seconds = std::chrono::duration<double>(*finished - start).count();
    r.throughput = static_cast<double>(message_count) / r.seconds;
    const double even = static_cast<double>(message_count) / worker_count;
    for (std::size_t w = 0; w < worker_count; ++w) {
        r.processed[w] = workers[w]->processed();
        r.deviation[w] = (static_cast<double>(r.processed[w]) - even) / even * 100.0;
        r.max_deviation = std::max(r.max_deviation, std::fabs(r.deviation[w]));
    }
    return r;
}

std::optional<std::array<run_result, 3>> run_setting(const setting& s) {
    std::printf("\nsetting %s: %s\n", s.name, s.description);
    std::printf("  prefetch  drain time  throughput   worker 1      worker 2      worker 3      "
                "max deviation\n");
    std::array<run_result, 3> results;
    for (std::size_t i = 0; i < prefetches.size(); ++i) {
        auto r = run(s, prefetches[i]);
        if (!r)
            return std::nullopt;
        results[i] = *r;
        std::printf("  %8u  %8.3f s  %6.1f msg/s", r->prefetch, r->seconds, r->throughput);
        for (std::size_t w = 0; w < worker_count; ++w)
            std::printf("  %4zu (%+5.1f%%)", r->processed[w], r->deviation[w]);
        std::printf("  %5.1f%%\n", r->max_deviation);
    }
    for (const auto& r : results)
        for (std::size_t w = 0; w < worker_count; ++w)
            std::printf("prefetch-distribution scenario=%s prefetch=%u worker=%zu messages=%zu\n",
                        s.name, r.prefetch, w + 1, r.processed[w]);
    for (const auto& r : results)
        std::printf("prefetch-throughput scenario=%s prefetch=%u messages_per_second=%.1f "
                    "max_deviation_percent=%.1f\n",
                    s.name, r.prefetch, r.throughput, r.max_deviation);
    return results;
}

// Prints one verdict, `printf`-formatted; returns whether it holds.
bool verdict(bool holds, const char* format, ...) {
    std::array<char, 256> text{};
    std::va_list args;
    va_start(args, format);
    std::vsnprintf(text.data(), text.size(), format, args);
    va_end(args);
    std::printf("  %s: %s\n", text.data(), holds ? "yes" : "no");
    return holds;
}

} // namespace

int main() {
    const setting a{
        "A", "three equal workers (10 ms per message), no network delay", {10ms, 10ms, 10ms}, 0ms};
    const setting b{"B",
                    "three equal workers (10 ms per message), 2 ms network round trip",
                    {10ms, 10ms, 10ms},
                    2ms};
    const setting c{"C",
                    "worker 3 is slow (30 ms per message, the others 10 ms), no network delay",
                    {10ms, 10ms, 30ms},
                    0ms};
    std::printf("1000 messages, 3 workers, prefetch 1 / 10 / 100 (virtual time)\n");
    const auto ra = run_setting(a);
    const auto rb = run_setting(b);
    const auto rc = run_setting(c);
    if (!ra || !rb || !rc) {
        std::fprintf(stderr, "MISMATCH: a run did not finish\n");
        return 1;
    }
    // x's throughput over y's.
    auto ratio = [](const run_result& x, const run_result& y) {
        return x.throughput / y.throughput;
    };
    const auto &a1 = (*ra)[0], &a10 = (*ra)[1], &a100 = (*ra)[2];
    const auto &b1 = (*rb)[0], &b10 = (*rb)[1], &b100 = (*rb)[2];
    const auto &c1 = (*rc)[0], &c100 = (*rc)[2];

    std::printf("\nthe seed's expectations, measured:\n");
    bool ok = verdict(a1.max_deviation <= 10.0, "A: prefetch 1 max deviation %.1f%% <= 10%%",
                      a1.max_deviation);
    // Reported, not required: the model does not reproduce these two (see README.md).
    verdict(ratio(a100, a1) >= 3.0, "A: prefetch 100 throughput / prefetch 1 = %.2fx (seed: >= 3x)",
            ratio(a100, a1));
    verdict(a100.max_deviation > 30.0, "A: prefetch 100 max deviation %.1f%% (seed: > 30%%)",
            a100.max_deviation);

    std::printf("\nwhat the model shows instead:\n");
    // A: no delay and equal workers: prefetch changes nothing.
    ok &=
        verdict(std::fabs(ratio(a100, a1) - 1.0) <= 0.02 && std::fabs(ratio(a10, a1) - 1.0) <= 0.02,
                "A: throughput equal at every prefetch (within 2%%)");
    // B: at prefetch 1 each worker waits a round trip per message: (10 + 2) / 10 = 1.2x.
    ok &=
        verdict(ratio(b10, b1) >= 1.15,
                "B: prefetch 10 hides the round trip: %.2fx prefetch 1 (>= 1.15x)", ratio(b10, b1));
    ok &= verdict(std::fabs(ratio(b100, b10) - 1.0) <= 0.02,
                  "B: prefetch 100 adds nothing over prefetch 10: %.2fx (within 2%%)",
                  ratio(b100, b10));
    ok &= verdict(b1.max_deviation <= 10.0, "B: prefetch 1 max deviation %.1f%% <= 10%%",
                  b1.max_deviation);
    // C: prefetch 1 hands work out by speed; prefetch 100 commits 100 messages to the slow
    // worker, which then finishes long after the others.
    ok &= verdict(ratio(c100, c1) < 0.9,
                  "C: prefetch 100 is slower than prefetch 1: %.2fx (< 0.9x)", ratio(c100, c1));
    ok &= verdict(c1.processed[2] * 2 < c1.processed[0] && c1.processed[2] * 4 > c1.processed[0],
                  "C: at prefetch 1 the slow worker gets about a third of a fast one's share "
                  "(%zu vs %zu)",
                  c1.processed[2], c1.processed[0]);
    ok &= verdict(c100.max_deviation < c1.max_deviation,
                  "C: prefetch 100 deviates less from an even split (%.1f%%) than prefetch 1 "
                  "(%.1f%%)",
                  c100.max_deviation, c1.max_deviation);
    if (!ok) {
        std::fprintf(stderr, "MISMATCH: a check did not hold\n");
        return 1;
    }
    return 0;
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   setting A: three equal workers
//   prefetch-distribution scenario=A prefetch=1 worker=1 messages=[0-9]+
//   prefetch-distribution scenario=A prefetch=100 worker=3 messages=[0-9]+
//   setting B: three equal workers \(10 ms per message\), 2 ms network round trip
//   prefetch-throughput scenario=B prefetch=100 messages_per_second=[0-9.]+
//   setting C: worker 3 is slow
//   prefetch-distribution scenario=C prefetch=10 worker=2 messages=[0-9]+
//   A: prefetch 1 max deviation [0-9.]+% <= 10%: yes
//   A: prefetch 100 throughput / prefetch 1 = [0-9.]+x \(seed: >= 3x\): no
//   A: prefetch 100 max deviation [0-9.]+% \(seed: > 30%\): no
//   A: throughput equal at every prefetch \(within 2%\): yes
//   B: prefetch 10 hides the round trip: [0-9.]+x prefetch 1 \(>= 1\.15x\): yes
//   B: prefetch 100 adds nothing over prefetch 10: [0-9.]+x \(within 2%\): yes
//   B: prefetch 1 max deviation [0-9.]+% <= 10%: yes
//   C: prefetch 100 is slower than prefetch 1: 0\.[0-9]+x \(< 0\.9x\): yes
//   the slow worker gets about a third of a fast one's share \([0-9]+ vs [0-9]+\): yes
//   deviates less from an even split \([0-9.]+%\) than prefetch 1 \([0-9.]+%\): yes
