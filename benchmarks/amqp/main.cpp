// SPDX-License-Identifier: BSL-1.0
//
// bench_amqp: throughput of `amqp::transport` against a real RabbitMQ, with rabbitmq-c as the
// baseline measured in the same run, on the same broker, with the same parameters.
//
// Both workloads move N (default 100,000) persistent (delivery-mode 2) 256-byte messages, each
// with a message-id, through the default exchange to one durable classic queue:
//
//   publish   publisher confirms, pipelined: at most 1,000 publishes unconfirmed (mandatory).
//             letterbox: `async_publish`, 1,000 chains where each completion starts the next
//             publish (`transport_options::publish_window` 1,000). rabbitmq-c 0.11 has no
//             confirm API: confirm.select, then `amqp_basic_publish` while fewer than 1,000 are
//             unconfirmed, reading basic.ack frames (multiple or single) when the window is full
//             and whenever some are already buffered. Timed from the first publish to the last
//             confirm.
//   consume   manual acknowledgement at prefetch 100, one basic.ack per message. letterbox:
//             `async_consume` whose handler calls `async_ack`. rabbitmq-c: basic.qos,
//             basic.consume, `amqp_consume_message` + `amqp_basic_ack`. Timed from the start of
//             the consumer (channel, qos, consume) to the Nth ack.
//
//   group     letterbox only (issue 19): a `letterbox::consumer` at prefetch 200 with group commit
//             of 100, its idempotent handler recording each message in the SQLite inbox with a
//             one-row effect, against the same consumer acking each delivery without any store.
//             Targets: >= 0.9x, and >= 20,000 msg/s. Each side consumes N messages published for
//             it (not timed), into a fresh database file.
//
// Each client consumes the messages it published. A round runs both clients (publish, then
// consume), alternating which goes first; a warm-up round of N/10 messages comes first. The
// rates are wall-clock messages per second (the broker is another process and the network a
// loopback); the client's own CPU time per message (`CLOCK_THREAD_CPUTIME_ID`: both clients do
// all their work on the main thread, letterbox on an io_context that thread runs) is printed
// next to each. The table shows the medians over the rounds and
// the ratio letterbox / rabbitmq-c.
//
// Every run checks its result: the queue is empty before a publish run and holds exactly N
// messages before a consume run (so a consume run that leaves an ack unsent is caught by the
// next publish run), every publish was confirmed (no nack, no return), every delivery has a
// 256-byte body. Any mismatch exits with status 1.
//
// The broker: LETTERBOX_AMQP_URL (tests/tools/rabbitmq.sh exports it; see docs/benchmarks.md).
// Without it the program says so and exits with status 0 (nothing measured).
// Without rabbitmq-c (librabbitmq-dev) at configure time, only letterbox's figures are printed.
//
// Usage: bench_amqp [--messages N] [--rounds R] [--client both|letterbox|rabbitmq-c]
//        (N also from LETTERBOX_BENCH_MESSAGES)
#include <letterbox/amqp/transport.hpp>
#include <letterbox/amqp/transport_options.hpp>
#include <letterbox/amqp/url.hpp>
#include <letterbox/consumer.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/sqlite.hpp>
#include <letterbox/steady_clock.hpp>

#include "../report.hpp"

#include <boost/asio/io_context.hpp>

#if defined(LETTERBOX_BENCH_WITH_RABBITMQ_C)
#include <amqp.h>
#include <amqp_tcp_socket.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <time.h>
#include <unistd.h>

namespace lb = letterbox;
using wall = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t body_size = 256;
constexpr std::uint64_t publish_window = 1000;
constexpr std::uint16_t prefetch = 100;
// No run may take longer than this (a broker that stopped answering ends the benchmark).
constexpr auto run_deadline = 600s;
constexpr const char* queue_name = "letterbox.bench.amqp";

// The fastest other clients on this hardware (the issue): rabbitmq-c, amqplib, amqp091-go.
constexpr double publish_target = 23'000;
constexpr double consume_target = 30'000;

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "bench_amqp: %s\n", what.c_str());
    std::exit(1);
}

// A fresh body per message on both sides, so both pay the same allocation.
std::string make_body(std::uint64_t i) {
    return std::string(body_size, static_cast<char>('a' + i % 26));
}

// Keeps the consumers' reads of the body from being optimised away.
volatile std::uint64_t sink = 0;

double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct result {
    double rate = 0;   // messages per second of wall time
    double cpu_us = 0; // client CPU microseconds per message
};

class stopwatch {
public:
    stopwatch()
        : wall0_(wall::now())
        , cpu0_(cpu_now()) {}
    result stop(std::uint64_t n) const {
        const double w = std::chrono::duration<double>(wall::now() - wall0_).count();
        const double c = cpu_now() - cpu0_;
        return {static_cast<double>(n) / w, c * 1e6 / static_cast<double>(n)};
    }

private:
    wall::time_point wall0_;
    double cpu0_;
};

// -- letterbox: amqp::transport -----------------------------------------------------------------

// One transport on a single-threaded io_context run by this thread.
class letterbox_client {
public:
    explicit letterbox_client(const lb::amqp::url& u)
        : transport_(io_.get_executor(), u, options()) {
        bool declared = false;
        transport_.async_declare(lb::topology::queue{.name = queue_name, .durable = true},
                                 [&](std::error_code ec) {
                                     check(ec);
                                     declared = true;
                                 });
        run_until([&] { return declared; }, "queue.declare");
    }
    ~letterbox_client() {
        bool closed = false;
        transport_.async_close([&](std::error_code) { closed = true; });
        run_until([&] { return closed; }, "close");
    }
    letterbox_client(const letterbox_client&) = delete;
    letterbox_client& operator=(const letterbox_client&) = delete;

    std::uint32_t depth() {
        std::optional<std::uint32_t> depth;
        transport_.async_queue_depth(queue_name, [&](std::error_code ec, std::uint32_t d) {
            check(ec);
            depth = d;
        });
        run_until([&] { return depth.has_value(); }, "queue depth");
        return *depth;
    }

    result publish(std::uint64_t n) {
        lb::message_id_generator ids; // time-ordered, as a publisher's default generator gives
        std::uint64_t started = 0;
        std::uint64_t confirmed = 0;
        std::function<void()> publish_next = [&] {
            if (started == n)
                return;
            lb::message m;
            m.id = ids();
            m.routing_key = queue_name;
            m.body = make_body(started++);
            transport_.async_publish(m, [&](std::error_code ec) {
                check(ec);
                ++confirmed;
                publish_next();
            });
        };
        const stopwatch sw;
        for (std::uint64_t i = 0; i < publish_window; ++i)
            publish_next();
        run_until([&] { return confirmed == n; }, "publish");
        return sw.stop(n);
    }

    /// Consumes the `n` messages of the queue through a `letterbox::consumer` running `h` with
    /// `o`, timed from its start to the last ack, then shuts it down.
    template <class Handler>
    result consume_through(std::uint64_t n, Handler h, const lb::consumer_options& o) {
        lb::consumer c(transport_, std::move(h), o);
        std::string tag;
        const stopwatch sw;
        c.async_start([&](std::error_code ec, std::string t) {
            check(ec);
            tag = std::move(t);
        });
        run_until([&] { return c.stats().acked == n; }, "consumer");
        const auto r = sw.stop(n);
        bool stopped = false;
        c.async_shutdown(tag, [&](std::error_code ec) {
            check(ec);
            stopped = true;
        });
        run_until([&] { return stopped; }, "consumer shutdown");
        if (c.stats().delivered != n)
            fail("letterbox: the consumer received " + std::to_string(c.stats().delivered) +
                 " of " + std::to_string(n));
        return r;
    }

    result consume(std::uint64_t n) {
        std::uint64_t received = 0;
        std::uint64_t acked = 0;
        std::uint64_t seen = 0;
        std::string tag;
        const stopwatch sw;
        transport_.async_consume(
            lb::consume_options{.queue = queue_name, .prefetch = prefetch},
            [&](lb::delivery d) {
                if (d.msg.body.size() != body_size)
                    fail("letterbox: a delivery with a body of " +
                         std::to_string(d.msg.body.size()) + " bytes");
                seen += static_cast<unsigned char>(d.msg.body[0]);
                ++received;
                transport_.async_ack(d, [&](std::error_code ec) {
                    check(ec);
                    ++acked;
                });
            },
            [&](std::error_code ec, std::string t) {
                check(ec);
                tag = std::move(t);
            });
        run_until([&] { return acked == n; }, "consume");
        const auto r = sw.stop(n);
        sink = sink + seen;
        bool cancelled = false;
        transport_.async_cancel(tag, [&](std::error_code ec) {
            check(ec);
            cancelled = true;
        });
        run_until([&] { return cancelled; }, "basic.cancel");
        if (received != n)
            fail("letterbox: received " + std::to_string(received) + " of " + std::to_string(n));
        return r;
    }

private:
    static lb::amqp::transport_options options() {
        lb::amqp::transport_options o;
        o.publish_window = publish_window;
        o.connection_name = "letterbox bench_amqp";
        return o;
    }

    void check(std::error_code ec) {
        if (ec)
            fail("letterbox: " + ec.message());
    }

    void run_until(const std::function<bool()>& done, const char* what) {
        const auto deadline = wall::now() + run_deadline;
        while (!done()) {
            if (wall::now() > deadline)
                fail(std::string("letterbox: ") + what + " did not finish in time");
            if (io_.stopped())
                io_.restart();
            io_.run_one_for(100ms);
        }
    }

    boost::asio::io_context io_;
    lb::amqp::transport transport_;
};

result letterbox_publish(const lb::amqp::url& u, std::uint64_t n) {
    letterbox_client c(u);
    if (const auto d = c.depth(); d != 0)
        fail("the queue holds " + std::to_string(d) + " messages before a publish run");
    return c.publish(n);
}

result letterbox_consume(const lb::amqp::url& u, std::uint64_t n) {
    letterbox_client c(u);
    if (const auto d = c.depth(); d != n)
        fail("the queue holds " + std::to_string(d) + " messages, not " + std::to_string(n) +
             ", before a consume run");
    return c.consume(n);
}

// The `group` workload: N messages published (not timed), then consumed by a consumer with group
// commit of 100 at prefetch 200: with the SQLite inbox and a one-row effect, or acking each
// delivery without any store.
result letterbox_group_commit(const lb::amqp::url& u, std::uint64_t n, bool with_store) {
    letterbox_client c(u);
    if (const auto d = c.depth(); d != 0)
        fail("the queue holds " + std::to_string(d) + " messages before a group run");
    (void)c.publish(n);
    lb::consumer_options o;
    o.consume = {.queue = queue_name, .prefetch = 200};
    o.group_commit = {.max_messages = 100, .max_delay = 5ms};
    if (!with_store)
        return c.consume_through(
            n, [](const lb::message&) {}, o);
    const auto file = std::filesystem::temp_directory_path() /
                      ("letterbox-bench-amqp-" + std::to_string(::getpid()) + ".db");
    std::filesystem::remove(file);
    result r;
    {
        auto db = lb::sqlite::database::open(file.string());
        {
            auto setup = db.begin();
            if (setup.connection().exec("CREATE TABLE grants(message_id TEXT NOT NULL)") ||
                setup.commit())
                fail("the grants table");
        }
        lb::sqlite::inbox_store inbox(db);
        lb::steady_clock clock;
        auto grant = [](const lb::message& m, lb::sqlite::unit_of_work& uow) -> std::error_code {
            std::error_code ec;
            auto st = uow.connection().prepare("INSERT INTO grants(message_id) VALUES (?1)", ec);
            if (ec)
                return ec;
            st->bind_text(1, lb::to_string(m.id));
            return st->execute();
        };
        auto h = lb::idempotent(grant, inbox, "bench", clock);
        r = c.consume_through(n, h, o);
        if (h.stats().processed != n)
            fail("group: " + std::to_string(h.stats().processed) + " effects of " +
                 std::to_string(n));
    }
    std::filesystem::remove(file);
    std::filesystem::remove(file.string() + "-wal");
    std::filesystem::remove(file.string() + "-shm");
    return r;
}

// -- baseline: rabbitmq-c -------------------------------------------------------------------------

#if defined(LETTERBOX_BENCH_WITH_RABBITMQ_C)

constexpr bool have_baseline = true;

// One rabbitmq-c connection with channel 1 open, the queue declared.
class rabbitmq_c_client {
public:
    explicit rabbitmq_c_client(const lb::amqp::url& u)
        : state_(amqp_new_connection()) {
        if (u.tls)
            fail("rabbitmq-c: this benchmark does not set up TLS");
        auto* socket = amqp_tcp_socket_new(state_);
        if (!socket)
            fail("rabbitmq-c: amqp_tcp_socket_new failed");
        if (const int rc = amqp_socket_open(socket, u.host.c_str(), u.port); rc != AMQP_STATUS_OK)
            fail(std::string("rabbitmq-c: connect: ") + amqp_error_string2(rc));
        // channel_max 0 (the server's), frame_max 128 KiB (as letterbox), no heartbeats.
        check(amqp_login(state_, u.vhost.c_str(), 0, 131072, 0, AMQP_SASL_METHOD_PLAIN,
                         u.user.c_str(), u.password.c_str()),
              "login");
        amqp_channel_open(state_, channel);
        check(amqp_get_rpc_reply(state_), "channel.open");
        declare(false);
    }
    ~rabbitmq_c_client() {
        amqp_channel_close(state_, channel, AMQP_REPLY_SUCCESS);
        amqp_connection_close(state_, AMQP_REPLY_SUCCESS);
        amqp_destroy_connection(state_);
    }
    rabbitmq_c_client(const rabbitmq_c_client&) = delete;
    rabbitmq_c_client& operator=(const rabbitmq_c_client&) = delete;

    std::uint32_t depth() { return declare(true); }

    void delete_queue() {
        amqp_queue_delete(state_, channel, amqp_cstring_bytes(queue_name), 0, 0);
        check(amqp_get_rpc_reply(state_), "queue.delete");
    }

    result publish(std::uint64_t n) {
        amqp_confirm_select(state_, channel);
        check(amqp_get_rpc_reply(state_), "confirm.select");
        acked_.assign(n + 1, 0);
        lowest_unconfirmed_ = 1;
        confirmed_ = 0;
        amqp_basic_properties_t props{};
        props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG;
        props.delivery_mode = 2;
        char id[48];
        const stopwatch sw;
        for (std::uint64_t i = 0; i < n; ++i) {
            while (i - confirmed_ >= publish_window)
                read_confirm(true);
            const auto body = make_body(i);
            // A message-id of the same length as letterbox's (a UUID's text).
            std::snprintf(id, sizeof id, "00000000-0000-4000-8000-%012llx",
                          static_cast<unsigned long long>(i % 1'000'000'000'000));
            props.message_id = amqp_bytes_t{36, id};
            const int rc = amqp_basic_publish(
                state_, channel, amqp_empty_bytes, amqp_cstring_bytes(queue_name), 1, 0, &props,
                amqp_bytes_t{body.size(), const_cast<char*>(body.data())});
            if (rc != AMQP_STATUS_OK)
                fail(std::string("rabbitmq-c: basic.publish: ") + amqp_error_string2(rc));
            // Confirms already read from the socket (amqp_basic_publish reads what is there).
            while (amqp_frames_enqueued(state_) || amqp_data_in_buffer(state_))
                if (!read_confirm(false))
                    break;
        }
        while (confirmed_ < n)
            read_confirm(true);
        return sw.stop(n);
    }

    result consume(std::uint64_t n) {
        std::uint64_t seen = 0;
        const stopwatch sw;
        amqp_basic_qos(state_, channel, 0, prefetch, 0);
        check(amqp_get_rpc_reply(state_), "basic.qos");
        amqp_basic_consume(state_, channel, amqp_cstring_bytes(queue_name), amqp_empty_bytes, 0, 0,
                           0, amqp_empty_table);
        check(amqp_get_rpc_reply(state_), "basic.consume");
        timeval timeout{30, 0};
        for (std::uint64_t i = 0; i < n; ++i) {
            amqp_maybe_release_buffers(state_);
            amqp_envelope_t envelope;
            check(amqp_consume_message(state_, &envelope, &timeout, 0), "consume");
            if (envelope.message.body.len != body_size)
                fail("rabbitmq-c: a delivery with a body of " +
                     std::to_string(envelope.message.body.len) + " bytes");
            seen += *static_cast<const unsigned char*>(envelope.message.body.bytes);
            if (const int rc = amqp_basic_ack(state_, channel, envelope.delivery_tag, 0);
                rc != AMQP_STATUS_OK)
                fail(std::string("rabbitmq-c: basic.ack: ") + amqp_error_string2(rc));
            amqp_destroy_envelope(&envelope);
        }
        const auto r = sw.stop(n);
        sink = sink + seen;
        return r;
    }

private:
    static constexpr amqp_channel_t channel = 1;

    std::uint32_t declare(bool passive) {
        auto* ok = amqp_queue_declare(state_, channel, amqp_cstring_bytes(queue_name), passive, 1,
                                      0, 0, amqp_empty_table);
        check(amqp_get_rpc_reply(state_), "queue.declare");
        return ok->message_count;
    }

    // Reads one frame (blocking, or only if one is there) and counts the confirms in it.
    // Returns false when none was there.
    bool read_confirm(bool block) {
        amqp_frame_t frame;
        timeval zero{0, 0};
        const int rc = block ? amqp_simple_wait_frame(state_, &frame)
                             : amqp_simple_wait_frame_noblock(state_, &frame, &zero);
        if (rc == AMQP_STATUS_TIMEOUT && !block)
            return false;
        if (rc != AMQP_STATUS_OK)
            fail(std::string("rabbitmq-c: reading confirms: ") + amqp_error_string2(rc));
        if (frame.frame_type != AMQP_FRAME_METHOD)
            fail("rabbitmq-c: unexpected frame while waiting for confirms");
        switch (frame.payload.method.id) {
        case AMQP_BASIC_ACK_METHOD: {
            const auto* ack = static_cast<const amqp_basic_ack_t*>(frame.payload.method.decoded);
            const auto tag = std::min<std::uint64_t>(ack->delivery_tag, acked_.size() - 1);
            if (ack->multiple) {
                for (std::uint64_t t = lowest_unconfirmed_; t <= tag; ++t)
                    mark(t);
            } else {
                mark(tag);
            }
            while (lowest_unconfirmed_ < acked_.size() && acked_[lowest_unconfirmed_])
                ++lowest_unconfirmed_;
            return true;
        }
        case AMQP_BASIC_NACK_METHOD:
            fail("rabbitmq-c: a publish was nacked");
        case AMQP_BASIC_RETURN_METHOD:
            fail("rabbitmq-c: a publish was returned (no route)");
        default:
            fail("rabbitmq-c: unexpected method while waiting for confirms");
        }
    }
    void mark(std::uint64_t tag) {
        if (tag == 0 || acked_[tag])
            return;
        acked_[tag] = 1;
        ++confirmed_;
    }

    void check(const amqp_rpc_reply_t& r, const char* what) {
        switch (r.reply_type) {
        case AMQP_RESPONSE_NORMAL:
            return;
        case AMQP_RESPONSE_LIBRARY_EXCEPTION:
            fail(std::string("rabbitmq-c: ") + what + ": " + amqp_error_string2(r.library_error));
        case AMQP_RESPONSE_SERVER_EXCEPTION:
            fail(std::string("rabbitmq-c: ") + what + ": the broker closed the channel or " +
                 "connection");
        default:
            fail(std::string("rabbitmq-c: ") + what + ": no reply");
        }
    }

    amqp_connection_state_t state_;
    std::vector<unsigned char> acked_;
    std::uint64_t lowest_unconfirmed_ = 1;
    std::uint64_t confirmed_ = 0;
};

result baseline_publish(const lb::amqp::url& u, std::uint64_t n) {
    rabbitmq_c_client c(u);
    if (const auto d = c.depth(); d != 0)
        fail("the queue holds " + std::to_string(d) + " messages before a publish run");
    return c.publish(n);
}

result baseline_consume(const lb::amqp::url& u, std::uint64_t n) {
    rabbitmq_c_client c(u);
    if (const auto d = c.depth(); d != n)
        fail("the queue holds " + std::to_string(d) + " messages, not " + std::to_string(n) +
             ", before a consume run");
    return c.consume(n);
}

// The queue is deleted before the first run (a clean start) and after the last.
void delete_queue(const lb::amqp::url& u) {
    rabbitmq_c_client c(u);
    c.delete_queue();
}

#else

constexpr bool have_baseline = false;

result baseline_publish(const lb::amqp::url&, std::uint64_t) {
    return {};
}
result baseline_consume(const lb::amqp::url&, std::uint64_t) {
    return {};
}
void delete_queue(const lb::amqp::url&) {}

#endif

// -- the rounds ---------------------------------------------------------------------------------

double median(std::vector<double> v) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const auto k = v.size() / 2;
    return v.size() % 2 ? v[k] : (v[k - 1] + v[k]) / 2;
}

struct series {
    std::vector<double> rate;
    std::vector<double> cpu_us;
    void add(const result& r) {
        rate.push_back(r.rate);
        cpu_us.push_back(r.cpu_us);
    }
};

} // namespace

int main(int argc, char** argv) {
    std::uint64_t n = 100'000;
    if (const char* env = std::getenv("LETTERBOX_BENCH_MESSAGES"))
        n = std::strtoull(env, nullptr, 10);
    int rounds = 5;
    std::string client = "both";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--messages") == 0)
            n = std::strtoull(argv[i + 1], nullptr, 10);
        else if (std::strcmp(argv[i], "--rounds") == 0)
            rounds = std::max(1, std::atoi(argv[i + 1]));
        else if (std::strcmp(argv[i], "--client") == 0)
            client = argv[i + 1];
        else
            fail(std::string("unknown option ") + argv[i] +
                 " (--messages N, --rounds R, --client both|letterbox|rabbitmq-c)");
    }
    if (n == 0)
        fail("--messages must be at least 1");
    if (client != "both" && client != "letterbox" && client != "rabbitmq-c")
        fail("--client must be both, letterbox or rabbitmq-c");
    // Without a broker there is nothing to measure: say so and succeed, as the integration
    // tests do, so that `make bench` (which runs every bench_*) still runs the others.
    const char* url_text = std::getenv("LETTERBOX_AMQP_URL");
    if (!url_text || !*url_text) {
        std::printf("bench_amqp: SKIPPED: LETTERBOX_AMQP_URL is not set. Run it with a broker:\n"
                    "  tests/tools/rabbitmq.sh run -- build/release/benchmarks/bench_amqp\n"
                    "(docs/benchmarks.md, section \"AMQP transport\")\n");
        return 0;
    }
    std::string why;
    const auto u = lb::amqp::try_parse_url(url_text, why);
    if (!u)
        fail("LETTERBOX_AMQP_URL: " + why);
    const bool run_letterbox = client != "rabbitmq-c";
    const bool run_baseline = have_baseline && client != "letterbox";
    if (!have_baseline && client == "rabbitmq-c")
        fail("built without rabbitmq-c (install librabbitmq-dev and configure again)");

    const bench::machine_load load;
    std::printf("bench_amqp: %llu persistent messages of %zu bytes to the durable queue '%s' on "
                "%s\n",
                static_cast<unsigned long long>(n), body_size, queue_name, u->redacted().c_str());
    std::printf("publish: confirms, window %llu, time-ordered message ids (version 7); consume: "
                "manual ack, prefetch %u; %d rounds (+ a warm-up of %llu), medians\n",
                static_cast<unsigned long long>(publish_window), unsigned{prefetch}, rounds,
                static_cast<unsigned long long>(n / 10 + 1));
    if (!have_baseline)
        std::printf("baseline: none (built without rabbitmq-c; install librabbitmq-dev and "
                    "configure again)\n");

    delete_queue(*u);
    series lb_pub, lb_con, base_pub, base_con, group_store, group_plain;
    for (int round = 0; round <= rounds; ++round) {
        const bool warm_up = round == 0;
        const auto count = warm_up ? n / 10 + 1 : n;
        auto run_letterbox_side = [&] {
            if (!run_letterbox)
                return;
            const auto p = letterbox_publish(*u, count);
            const auto c = letterbox_consume(*u, count);
            if (warm_up)
                return;
            lb_pub.add(p);
            lb_con.add(c);
            std::printf("  round %d letterbox : publish %8.0f msg/s (%5.1f us cpu/msg)  consume "
                        "%8.0f msg/s (%5.1f us cpu/msg)\n",
                        round, p.rate, p.cpu_us, c.rate, c.cpu_us);
            const auto gs = letterbox_group_commit(*u, count, true);
            const auto gp = letterbox_group_commit(*u, count, false);
            group_store.add(gs);
            group_plain.add(gp);
            std::printf("  round %d group     : inbox + effect %8.0f msg/s, no store %8.0f msg/s\n",
                        round, gs.rate, gp.rate);
        };
        auto run_baseline_side = [&] {
            if (!run_baseline)
                return;
            const auto p = baseline_publish(*u, count);
            const auto c = baseline_consume(*u, count);
            if (warm_up)
                return;
            base_pub.add(p);
            base_con.add(c);
            std::printf("  round %d rabbitmq-c: publish %8.0f msg/s (%5.1f us cpu/msg)  consume "
                        "%8.0f msg/s (%5.1f us cpu/msg)\n",
                        round, p.rate, p.cpu_us, c.rate, c.cpu_us);
        };
        // Alternate who goes first, so a slow phase of the machine hits both alike.
        if (round % 2 == 0) {
            run_letterbox_side();
            run_baseline_side();
        } else {
            run_baseline_side();
            run_letterbox_side();
        }
        std::fflush(stdout);
    }
    delete_queue(*u);

    std::printf("\n%-36s %14s %10s %14s %10s %8s\n", "workload (medians)", "letterbox msg/s",
                "cpu us/msg", "rabbitmq-c msg/s", "cpu us/msg", "ratio");
    std::vector<std::string> plots;
    auto print_row = [&](const char* name, const char* plot_label, const series& l, const series& b,
                         double target) {
        const double lr = median(l.rate);
        const double br = median(b.rate);
        if (run_baseline && run_letterbox)
            std::printf("%-36s %14.0f %10.1f %16.0f %10.1f %7.2fx\n", name, lr, median(l.cpu_us),
                        br, median(b.cpu_us), lr / br);
        else
            std::printf("%-36s %14.0f %10.1f %16.0f %10.1f %8s\n", name, lr, median(l.cpu_us), br,
                        median(b.cpu_us), "-");
        for (const auto* s : {&l, &b})
            if (!s->rate.empty())
                std::printf("    %s: spread of the rounds %s\n",
                            s == &l ? "letterbox" : "rabbitmq-c",
                            bench::rounds{s->rate}.spread().c_str());
        if (run_letterbox)
            std::printf("    target >= %.0f msg/s (the fastest other client): %s\n", target,
                        lr >= target ? "met" : "MISSED");
        if (run_baseline && run_letterbox) // for benchmarks/plots/plot.sh
            plots.push_back(std::string("plot throughput ") + plot_label + " " +
                            std::to_string(static_cast<long long>(lr)) + " " +
                            std::to_string(static_cast<long long>(br)));
    };
    print_row("publish, confirms, window 1000", "publish(confirms)", lb_pub, base_pub,
              publish_target);
    print_row("consume, manual ack, prefetch 100", "consume(manual-ack)", lb_con, base_con,
              consume_target);
    if (run_letterbox) {
        const bench::rounds gs{group_store.rate};
        const bench::rounds gp{group_plain.rate};
        const double ratio = gs.mid() / gp.mid();
        std::printf("\n%-36s %14s %6s %14s %6s %8s\n", "group commit 100, prefetch 200",
                    "inbox+effect", "spread", "no store", "spread", "ratio");
        std::printf("%-36s %14.0f %6s %14.0f %6s %7.2fx\n", "letterbox::consumer (medians)",
                    gs.mid(), gs.spread().c_str(), gp.mid(), gp.spread().c_str(), ratio);
        std::printf("    targets: >= 0.9x the consumer without a store: %s; >= 20000 msg/s: %s\n",
                    ratio >= 0.9 ? "met" : "MISSED", gs.mid() >= 20000 ? "met" : "MISSED");
    }
    std::printf("\n");
    for (const auto& line : plots)
        std::printf("%s\n", line.c_str());
    std::printf("\n");
    load.end();
    return 0;
}
