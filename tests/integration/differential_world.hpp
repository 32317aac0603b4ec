// SPDX-License-Identifier: BSL-1.0
#pragma once

// The two worlds a differential scenario runs in, and the session that drives a transport in
// either one while writing down what it observes.
//
// A scenario is a function template over a world. It runs once against the in-memory RabbitMQ
// model (`model_world`: the broker on a virtual clock, time moves only when the scenario waits)
// and once against the real broker LETTERBOX_AMQP_URL names (`broker_world`: amqp::transport on
// an io_context driven with deadlines). Each run returns a trace, one line per observation, and
// the test asserts that the two traces are equal.
//
// What a trace leaves out, because it legitimately differs between the worlds: delivery tags
// and channel ids, consumer tags the transport generated, `message_count` of a get (optional
// in the concept), timestamps (an `x-death` time is written as `T`), the order of the entries
// of a header table (AMQP tables are maps; arrays keep their order), and the run's unique name
// prefix (written as `~`). What it keeps: every operation's outcome as an error code, and every
// delivery's queue, body, message id, exchange, routing key, redelivered flag, expiration,
// delivery mode and headers, with the AMQP type of every header value.

#include <letterbox/amqp/transport.hpp>
#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/transport/in_memory/in_memory_transport.hpp>

#include "amqp_broker.hpp"
#include "support/simulation.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace differential {

using namespace std::chrono_literals;
using trace = std::vector<std::string>;

// ---- the two worlds --------------------------------------------------------------------------

/// The in-memory model on a virtual clock. Waiting runs what is ready and moves virtual time
/// in small steps only while the awaited condition does not hold, so TTLs fire as they would
/// in real time, without sleeping.
class model_world {
public:
    using transport_type = letterbox::in_memory_transport;

    transport_type make_transport() { return transport_type(sim_.broker, "differential"); }

    /// Runs until `done()` holds or `timeout` of virtual time has passed.
    bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
        const auto deadline = sim_.clock.now() + timeout;
        for (int step = 0; step < 100'000; ++step) {
            sim_.run_for(0ns);
            if (done())
                return true;
            if (sim_.clock.now() >= deadline)
                return false;
            sim_.run_for(step_);
        }
        return done();
    }

    /// Lets `d` of virtual time pass, firing what falls due.
    void pause(std::chrono::milliseconds d) { sim_.run_for(d); }

private:
    static constexpr std::chrono::milliseconds step_{5};
    test_support::simulation sim_;
};

using amqp_test::broker_url;

/// A real RabbitMQ, reached through a single-threaded io_context that runs only while the
/// scenario waits, on the test's thread.
class broker_world {
public:
    using transport_type = letterbox::amqp::transport;

    transport_type make_transport() { return transport_type(io_.get_executor(), url_); }

    /// Runs handlers until `done()` holds or `timeout` has passed.
    bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!done()) {
            const auto now = std::chrono::steady_clock::now();
            if (now >= deadline)
                return false;
            io_.run_one_for(deadline - now);
        }
        return true;
    }

    /// Lets `d` pass while running handlers (a TTL needs real time to pass).
    void pause(std::chrono::milliseconds d) { io_.run_for(d); }

private:
    std::string url_ = broker_url();
    boost::asio::io_context io_{};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
        io_.get_executor()};
};

// ---- rendering -------------------------------------------------------------------------------

inline std::string describe(std::error_code ec) {
    if (!ec)
        return "ok";
    return ec.message() + " [" + ec.category().name() + ":" + std::to_string(ec.value()) + "]";
}

std::string render(const letterbox::field_value& v);

/// A table with its entries sorted by name: a field table is a map on the wire.
inline std::string render(const letterbox::field_table& t) {
    std::vector<std::string> entries;
    for (const auto& [name, value] : t)
        entries.push_back(name + "=" + render(value));
    std::sort(entries.begin(), entries.end());
    std::string out = "{";
    for (std::size_t i = 0; i < entries.size(); ++i)
        out += (i == 0 ? "" : ", ") + entries[i];
    return out + "}";
}

/// A value with its AMQP type letter, so that a long and an int do not look alike.
inline std::string render(const letterbox::field_value& v) {
    return std::visit(
        [](const auto& x) -> std::string {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, std::monostate>)
                return "V";
            else if constexpr (std::is_same_v<T, bool>)
                return std::string("t:") + (x ? "true" : "false");
            else if constexpr (std::is_same_v<T, std::int8_t>)
                return "b:" + std::to_string(x);
            else if constexpr (std::is_same_v<T, std::uint8_t>)
                return "B:" + std::to_string(x);
            else if constexpr (std::is_same_v<T, std::int16_t>)
                return "s:" + std::to_string(x);
            else if constexpr (std::is_same_v<T, std::uint16_t>)
                return "u:" + std::to_string(x);
            else if constexpr (std::is_same_v<T, std::int32_t>)
                return "I:" + std::to_string(x);
            else if constexpr (std::is_same_v<T, std::uint32_t>)
                return "i:" + std::to_string(x);
            else if constexpr (std::is_same_v<T, std::int64_t>)
                return "l:" + std::to_string(x);
            else if constexpr (std::is_same_v<T, float>)
                return "f:" + std::to_string(x);
            else if constexpr (std::is_same_v<T, double>)
                return "d:" + std::to_string(x);
            else if constexpr (std::is_same_v<T, letterbox::decimal>)
                return "D:" + std::to_string(x.value) + "e-" + std::to_string(x.scale);
            else if constexpr (std::is_same_v<T, std::string>)
                return "S:" + x;
            else if constexpr (std::is_same_v<T, letterbox::timestamp>)
                return "T"; // when it happened differs between the worlds
            else if constexpr (std::is_same_v<T, letterbox::byte_array>)
                return "x:" + std::to_string(x.size()) + " bytes";
            else if constexpr (std::is_same_v<T, letterbox::field_array>) {
                std::string out = "A[";
                for (std::size_t i = 0; i < x.size(); ++i)
                    out += (i == 0 ? "" : ", ") + render(x[i]);
                return out + "]";
            } else {
                static_assert(std::is_same_v<T, letterbox::field_table>);
                return "F" + render(x);
            }
        },
        v.variant());
}

inline std::string render(const letterbox::delivery& d) {
    const auto& m = d.msg;
    std::string out = "queue=" + d.queue + " body=" + m.body + " id=" + letterbox::to_string(m.id) +
                      " exchange='" + m.exchange + "' key='" + m.routing_key + "'" +
                      " redelivered=" + (d.redelivered ? "yes" : "no");
    out += " expiration=" + m.properties.expiration.value_or("-");
    out += std::string(" persistent=") + (m.properties.persistent ? "yes" : "no");
    out += " headers=" + render(m.headers);
    return out;
}

// ---- the session -----------------------------------------------------------------------------

/// A run-unique name prefix, the same for both worlds of one comparison (queues and exchanges
/// of the real broker are left to `x-expires` and auto-delete, so every run needs new names).
inline std::string run_prefix(std::string_view scenario) {
    static const std::string run = [] {
        std::random_device device;
        const std::uint64_t value = (std::uint64_t{device()} << 32U) ^ device();
        static constexpr char hex[] = "0123456789abcdef";
        std::string s;
        for (int shift = 44; shift >= 0; shift -= 4)
            s.push_back(hex[(value >> static_cast<unsigned>(shift)) & 0xfU]);
        return s;
    }();
    return "letterbox.diff." + run + "." + std::string(scenario);
}

/// A consumer's deliveries, in arrival order, and its tag.
struct consumer {
    std::shared_ptr<std::vector<letterbox::delivery>> deliveries =
        std::make_shared<std::vector<letterbox::delivery>>();
    std::string tag;
    std::size_t size() const { return deliveries->size(); }
    const letterbox::delivery& operator[](std::size_t i) const { return (*deliveries)[i]; }
};

/// One transport in one world, and the trace it writes. Every operation waits for its
/// completion (at most `operation_timeout`) and writes its outcome; names are written with the
/// run's prefix replaced by `~`.
template <class World>
class session {
public:
    using transport_type = typename World::transport_type;
    static constexpr std::chrono::milliseconds operation_timeout{20'000};
    /// How long an asynchronous effect (a dead letter, an expiry, a requeue) may take to show.
    static constexpr std::chrono::milliseconds effect_timeout{5'000};
    /// Every queue asks the broker to forget it ten minutes after its last use.
    static constexpr std::int64_t queue_expires_ms = 600'000;
    static constexpr std::chrono::milliseconds poll_interval{20};

    session(World& w, std::string prefix, trace& out)
        : world_(&w)
        , transport_(w.make_transport())
        , prefix_(std::move(prefix))
        , out_(&out) {}

    session(const session&) = delete;
    session& operator=(const session&) = delete;

    World& world() { return *world_; }
    transport_type& transport() { return transport_; }

    /// The scenario's name for `stem`: unique to this run.
    std::string name(std::string_view stem) const { return prefix_ + "." + std::string(stem); }

    /// Appends `line` to the trace.
    void note(std::string line) {
        for (auto at = line.find(prefix_); at != std::string::npos; at = line.find(prefix_, at))
            line.replace(at, prefix_.size(), "~");
        out_->push_back(std::move(line));
    }

    // -- waiting ---------------------------------------------------------------------------

    /// Starts `op` with a `void(std::error_code)` completion and waits for it.
    template <class Op>
    std::error_code await(Op op) {
        auto result = std::make_shared<std::optional<std::error_code>>();
        op([result](std::error_code ec) { *result = ec; });
        if (!world_->wait_for([&] { return result->has_value(); }, operation_timeout))
            return make_error_code(letterbox::errc::timed_out);
        return **result;
    }

    /// The same for a `void(std::error_code, R)` completion.
    template <class R, class Op>
    std::pair<std::error_code, R> await2(Op op) {
        auto result = std::make_shared<std::optional<std::pair<std::error_code, R>>>();
        op([result](std::error_code ec, R r) { result->emplace(ec, std::move(r)); });
        if (!world_->wait_for([&] { return result->has_value(); }, operation_timeout))
            return {make_error_code(letterbox::errc::timed_out), R{}};
        return std::move(**result);
    }

    /// Waits until `done()` holds, at most `effect_timeout`; false if it never did.
    bool wait_for(const std::function<bool()>& done) {
        return world_->wait_for(done, effect_timeout);
    }

    // -- topology --------------------------------------------------------------------------

    void declare_exchange(const std::string& name, letterbox::topology::exchange_type type) {
        letterbox::topology::exchange x;
        x.name = name;
        x.type = type;
        x.durable = false;
        x.auto_delete = true; // gone with its last binding, i.e. when its queues expire
        const auto ec = await([&](auto done) { transport_.async_declare(x, done); });
        note("declare exchange " + name + " (" + std::string(to_string(type)) +
             "): " + describe(ec));
    }

    /// Declares `name` with `args`; always non-durable (durable for a quorum queue, which must
    /// be) and with `x-expires`.
    void declare_queue(const std::string& name, letterbox::topology::queue_arguments args = {}) {
        letterbox::topology::queue q;
        q.name = name;
        q.durable = args.type == letterbox::topology::queue_type::quorum;
        q.arguments = args.to_table();
        q.arguments.set("x-expires", queue_expires_ms);
        const auto ec = await([&](auto done) { transport_.async_declare(q, done); });
        note("declare queue " + name + ": " + describe(ec));
    }

    void bind(
        const std::string& queue, const std::string& exchange, const std::string& key,
        letterbox::field_table arguments = {},
        letterbox::topology::destination_kind kind = letterbox::topology::destination_kind::queue) {
        letterbox::topology::binding b;
        b.source = exchange;
        b.destination = queue;
        b.routing_key = key;
        b.arguments = std::move(arguments);
        b.kind = kind;
        const auto ec = await([&](auto done) { transport_.async_bind(b, done); });
        note("bind " + queue + " to " + exchange + " key '" + key + "' " + render(b.arguments) +
             ": " + describe(ec));
    }

    // -- publishing ------------------------------------------------------------------------

    /// Publishes `body` (non-persistent unless `tweak` says otherwise); ids come from a
    /// generator seeded the same in both worlds, so they are part of the trace.
    std::error_code publish(const std::string& exchange, const std::string& key,
                            const std::string& body,
                            const std::function<void(letterbox::message&)>& tweak = {}) {
        letterbox::message m;
        m.id = ids_();
        m.exchange = exchange;
        m.routing_key = key;
        m.body = body;
        m.properties.persistent = false;
        if (tweak)
            tweak(m);
        const auto ec = await([&](auto done) { transport_.async_publish(m, done); });
        note("publish " + body + " to '" + exchange + "' key '" + key + "': " + describe(ec));
        return ec;
    }

    // -- reading ---------------------------------------------------------------------------

    std::optional<letterbox::delivery> get(const std::string& queue) {
        auto [ec, d] = await2<std::optional<letterbox::delivery>>(
            [&](auto done) { transport_.async_get(queue, done); });
        if (ec)
            note("get " + queue + ": " + describe(ec));
        else if (!d)
            note("get " + queue + ": empty");
        else
            note("get: " + render(*d));
        return d;
    }

    /// Gets and acks every ready message of `queue` (at most 200).
    void drain(const std::string& queue) {
        for (int i = 0; i < 200; ++i) {
            auto d = get(queue);
            if (!d)
                return;
            ack(*d);
        }
    }

    std::uint32_t depth(const std::string& queue) {
        auto [ec, n] =
            await2<std::uint32_t>([&](auto done) { transport_.async_queue_depth(queue, done); });
        note("depth " + queue + ": " + (ec ? describe(ec) : std::to_string(n)));
        return n;
    }

    /// Polls the depth of `queue` until it is `want` (at most `effect_timeout`), then writes
    /// it. Dead-lettering, expiry and requeues after a closed channel happen asynchronously on
    /// a real broker.
    std::uint32_t await_depth(const std::string& queue, std::uint32_t want) {
        std::uint32_t n = 0;
        std::error_code ec;
        std::chrono::milliseconds waited{0};
        for (int poll = 0; poll < 10'000; ++poll) {
            std::tie(ec, n) = await2<std::uint32_t>(
                [&](auto done) { transport_.async_queue_depth(queue, done); });
            if (ec || n == want || waited >= effect_timeout)
                break;
            world_->pause(poll_interval);
            waited += poll_interval;
        }
        note("depth " + queue + ": " + (ec ? describe(ec) : std::to_string(n)));
        return n;
    }

    /// Starts a consumer on `queue` with `prefetch`; its deliveries collect in the result.
    consumer consume(const std::string& queue, std::uint16_t prefetch) {
        consumer c;
        letterbox::consume_options o;
        o.queue = queue;
        o.prefetch = prefetch;
        auto [ec, tag] = await2<std::string>([&](auto done) {
            transport_.async_consume(
                o, [sink = c.deliveries](letterbox::delivery d) { sink->push_back(std::move(d)); },
                done);
        });
        c.tag = tag;
        note("consume " + queue + " prefetch " + std::to_string(prefetch) + ": " + describe(ec));
        return c;
    }

    /// Waits until `c` has `n` deliveries (at most `effect_timeout`) and writes how many it has.
    void await_deliveries(const consumer& c, std::size_t n) {
        wait_for([&] { return c.size() >= n; });
        note("consumer has " + std::to_string(c.size()) + " deliveries");
    }

    /// Writes the deliveries of `c` from index `from` on.
    void note_deliveries(const consumer& c, std::size_t from = 0) {
        for (std::size_t i = from; i < c.size(); ++i)
            note("delivery " + std::to_string(i) + ": " + render(c[i]));
    }

    void cancel(const consumer& c) {
        const auto ec = await([&](auto done) { transport_.async_cancel(c.tag, done); });
        note("cancel: " + describe(ec));
    }

    // -- settling --------------------------------------------------------------------------
    // The delivery is taken by value: a consumer's vector may grow (and move its elements)
    // while the operation is awaited.

    std::error_code ack(letterbox::delivery d) {
        const auto ec = await([&](auto done) { transport_.async_ack(d, done); });
        note("ack " + d.msg.body + ": " + describe(ec));
        return ec;
    }
    std::error_code nack(letterbox::delivery d, bool requeue) {
        const auto ec = await([&](auto done) { transport_.async_nack(d, requeue, done); });
        note("nack " + d.msg.body + (requeue ? " requeue" : "") + ": " + describe(ec));
        return ec;
    }
    std::error_code reject(letterbox::delivery d, bool requeue) {
        const auto ec = await([&](auto done) { transport_.async_reject(d, requeue, done); });
        note("reject " + d.msg.body + (requeue ? " requeue" : "") + ": " + describe(ec));
        return ec;
    }

    void close() {
        const auto ec = await([&](auto done) { transport_.async_close(done); });
        note("close: " + describe(ec));
    }

private:
    World* world_;
    transport_type transport_;
    std::string prefix_;
    trace* out_;
    letterbox::message_id_generator ids_{20240601};
};

// ---- comparing -------------------------------------------------------------------------------

inline std::string joined(const trace& t) {
    std::string out;
    for (std::size_t i = 0; i < t.size(); ++i)
        out += std::to_string(i) + ": " + t[i] + "\n";
    return out;
}

/// Asserts that the model's trace equals the broker's, line by line, so that a failure names
/// the first lines that differ; prints both traces in full when they do.
inline void check_same(const trace& model, const trace& broker) {
    INFO("in-memory model trace:\n" << joined(model));
    INFO("RabbitMQ trace:\n" << joined(broker));
    REQUIRE_FALSE(model.empty());
    const auto n = std::max(model.size(), broker.size());
    int reported = 0;
    for (std::size_t i = 0; i < n && reported < 10; ++i) {
        const std::string m = i < model.size() ? model[i] : "<missing>";
        const std::string b = i < broker.size() ? broker[i] : "<missing>";
        if (m != b) {
            ++reported;
            INFO("line " << i);
            CHECK(m == b);
        }
    }
    CHECK(model.size() == broker.size());
}

/// Runs `scenario(world, prefix) -> trace` in the model, then on the real broker, and asserts
/// that the traces are equal. Returns the model's trace for further checks.
template <class Scenario>
trace compare(std::string_view stem, Scenario scenario) {
    const auto prefix = run_prefix(stem);
    trace model;
    {
        model_world w;
        model = scenario(w, prefix);
    }
    trace broker;
    {
        broker_world w;
        broker = scenario(w, prefix);
    }
    check_same(model, broker);
    return model;
}

} // namespace differential
