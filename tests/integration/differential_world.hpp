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
// Some scenarios also need what a transport does not offer: a reply text, a connection-level
// error, global qos, raw message properties. Each world therefore also makes a `raw` client, a
// bare AMQP channel (in_memory::channel in the model, amqp::detail::channel_core on the broker)
// with the same small API, which also plays a publisher from outside letterbox.
//
// What a trace leaves out, because it legitimately differs between the worlds: delivery tags
// and channel ids, consumer tags the transport generated, `message_count` of a get (optional
// in the concept), timestamps (an `x-death` time is written as `T`), the order of the entries
// of a header table (AMQP tables are maps; arrays keep their order), and the run's unique name
// prefix (written as `~`). What it keeps: every operation's outcome as an error code, and every
// delivery's queue, body, message id, exchange, routing key, redelivered flag, expiration,
// delivery mode and headers, with the AMQP type of every header value.

#include <letterbox/amqp/codec/message_mapping.hpp>
#include <letterbox/amqp/detail/connection_core.hpp>
#include <letterbox/amqp/transport.hpp>
#include <letterbox/basic_properties.hpp>
#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/message.hpp>
#include <letterbox/steady_clock.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/transport/in_memory/transport.hpp>

#include "amqp_broker.hpp"
#include "support/simulation.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

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

namespace codec = letterbox::amqp::codec;
using namespace std::chrono_literals;
using trace = std::vector<std::string>;

inline std::string describe(std::error_code ec) {
    if (!ec)
        return "ok";
    return ec.message() + " [" + ec.category().name() + ":" + std::to_string(ec.value()) + "]";
}

/// How a raw publish ended, in the same words for both clients: "acked", "nacked" or "no
/// confirm", after "returned, " when the broker returned it first.
inline std::string publish_outcome(bool returned, std::optional<bool> confirm) {
    const std::string out = returned ? "returned, " : "";
    if (!confirm)
        return out + "no confirm";
    return out + (*confirm ? "acked" : "nacked");
}

/// What a raw `basic.get` gave: its outcome ("ok", "empty", or how the channel or connection
/// closed), and for "ok" the message (mapped with `letterbox::to_message`), the redelivered flag,
/// the reply's message count and the delivery tag.
struct raw_get {
    std::string outcome;
    std::optional<letterbox::message> msg{};
    bool redelivered = false;
    std::uint32_t message_count = 0;
    std::uint64_t tag = 0;
};

/// A raw AMQP channel on the in-memory broker: `in_memory::channel`, in confirm mode. After a
/// channel or connection error the next operation opens a new channel (and connection).
class model_raw_client {
public:
    explicit model_raw_client(letterbox::in_memory::broker& b)
        : broker_(&b) {}
    // Not movable: the channel's handlers point at the object.
    model_raw_client(const model_raw_client&) = delete;
    model_raw_client& operator=(const model_raw_client&) = delete;

    std::string exchange_declare(const letterbox::topology::exchange& x) {
        return outcome(channel().exchange_declare(x));
    }
    std::string exchange_delete(const std::string& name, bool if_unused) {
        return outcome(channel().exchange_delete(name, if_unused));
    }
    std::string queue_declare(const letterbox::topology::queue& q, bool passive = false) {
        std::error_code ec;
        const auto ok = channel().queue_declare(q, ec, passive);
        if (ec)
            return outcome(ec);
        return "ok: " + std::to_string(ok.message_count) + " messages, " +
               std::to_string(ok.consumer_count) + " consumers";
    }
    std::string queue_delete(const std::string& name, bool if_unused, bool if_empty) {
        std::error_code ec;
        const auto n = channel().queue_delete(name, ec, if_unused, if_empty);
        return ec ? outcome(ec) : "ok: " + std::to_string(n) + " messages";
    }
    std::string queue_bind(const std::string& queue, const std::string& exchange,
                           const std::string& key) {
        return outcome(channel().queue_bind(queue, exchange, key));
    }
    std::string queue_unbind(const std::string& queue, const std::string& exchange,
                             const std::string& key) {
        return outcome(channel().queue_unbind(queue, exchange, key));
    }
    std::string basic_qos(std::uint16_t prefetch, bool global) {
        return outcome(channel().basic_qos(prefetch, global));
    }
    std::string basic_consume(const std::string& queue, bool exclusive = false,
                              bool no_ack = false) {
        std::error_code ec;
        letterbox::in_memory::basic_consume_options o;
        o.exclusive = exclusive;
        o.no_ack = no_ack;
        channel().basic_consume(
            queue,
            [n = deliveries_, got = received_](const letterbox::in_memory::basic_delivery& d) {
                ++*n;
                got->push_back(*d.msg);
            },
            ec, o);
        return outcome(ec);
    }
    std::string basic_recover(bool requeue) { return outcome(channel().basic_recover(requeue)); }

    /// Publishes `body` with raw `properties` and waits for its confirm.
    std::string publish(const std::string& exchange, const std::string& key,
                        const letterbox::basic_properties& properties, const std::string& body,
                        bool mandatory = false) {
        auto& ch = channel();
        confirm_.reset();
        returned_ = false;
        const auto ec = ch.basic_publish(exchange, key, properties, body, mandatory);
        if (ec)
            return outcome(ec);
        return publish_outcome(returned_, confirm_);
    }

    raw_get get(const std::string& queue) {
        std::error_code ec;
        auto d = channel().basic_get(queue, ec);
        raw_get r;
        if (ec) {
            r.outcome = outcome(ec);
            return r;
        }
        if (!d) {
            r.outcome = "empty";
            return r;
        }
        r.outcome = "ok";
        r.msg = *d->msg;
        r.redelivered = d->redelivered;
        r.message_count = d->message_count.value_or(0);
        r.tag = d->delivery_tag;
        return r;
    }
    std::string ack(std::uint64_t tag) { return outcome(channel().basic_ack(tag)); }
    std::string nack(std::uint64_t tag, bool requeue) {
        return outcome(channel().basic_nack(tag, false, requeue));
    }
    std::string reject(std::uint64_t tag, bool requeue) {
        return outcome(channel().basic_reject(tag, requeue));
    }
    /// Deliveries to consumers started with `basic_consume`.
    std::size_t deliveries() const { return *deliveries_; }
    /// Their messages (with the delivery's exchange and routing key), in arrival order.
    const std::vector<letterbox::message>& received() const { return *received_; }
    /// "ok" while the channel (opened by an earlier operation) is open, else how it or its
    /// connection closed; never opens a new one.
    std::string channel_outcome() const {
        return ch_.is_open() ? "ok" : outcome(make_error_code(letterbox::errc::channel_closed));
    }

    void close() {
        if (conn_.is_open())
            conn_.close();
    }

private:
    letterbox::in_memory::channel& channel() {
        if (!conn_.is_open())
            conn_ = broker_->connect("differential-raw");
        if (!ch_.is_open()) {
            ch_ = conn_.open_channel();
            ch_.confirm_select();
            ch_.on_confirm([this](std::uint64_t, bool ack, bool) { confirm_ = ack; });
            ch_.on_return(
                [this](const letterbox::in_memory::returned_message&) { returned_ = true; });
        }
        return ch_;
    }

    std::string outcome(std::error_code ec) const {
        if (!ec)
            return "ok";
        if (!conn_.is_open())
            return "connection closed: " + describe(conn_.close_reason().code) + " " +
                   conn_.close_reason().text;
        if (!ch_.is_open())
            return "channel closed: " + describe(ch_.close_reason().code) + " " +
                   ch_.close_reason().text;
        return describe(ec);
    }

    letterbox::in_memory::broker* broker_;
    letterbox::in_memory::connection conn_{};
    letterbox::in_memory::channel ch_{};
    std::optional<bool> confirm_{};
    bool returned_ = false;
    std::shared_ptr<std::size_t> deliveries_ = std::make_shared<std::size_t>(0);
    std::shared_ptr<std::vector<letterbox::message>> received_ =
        std::make_shared<std::vector<letterbox::message>>();
};

// ---- the two worlds --------------------------------------------------------------------------

/// Broker configuration a scenario needs other than the default, the same in both worlds: the
/// model's broker has it in its profile; the real broker is given it with `rabbitmqctl eval`
/// (application environment) for the run, and what it had before afterwards. The real side
/// needs LETTERBOX_RABBITMQ_DIR (`amqp_test::broker_is_controllable`), and a scenario that uses
/// it changes the broker for everyone, so its test case is `[disruptive]` (run alone).
struct broker_settings {
    /// `consumer_timeout`, with `channel_tick_interval`; unset: the broker's own.
    std::optional<std::chrono::milliseconds> consumer_timeout{};
    std::chrono::milliseconds channel_tick_interval{60'000};
};

/// The in-memory model on a virtual clock. Waiting runs what is ready and moves virtual time
/// in small steps only while the awaited condition does not hold, so TTLs fire as they would
/// in real time, without sleeping.
class model_world {
public:
    using transport_type = letterbox::in_memory::transport;
    using raw_type = model_raw_client;

    model_world() = default;
    explicit model_world(const broker_settings& settings)
        : sim_(options_for(settings)) {}

    /// The world's time: virtual.
    std::chrono::nanoseconds now() const { return sim_.clock.now().time_since_epoch(); }

    transport_type make_transport() { return transport_type(sim_.broker, "differential"); }
    raw_type make_raw() { return raw_type(sim_.broker); }

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

    /// The world's clock, for components that wait on one (a request's timeout).
    letterbox::virtual_clock& clock() { return sim_.clock; }

private:
    static letterbox::in_memory::broker_options options_for(const broker_settings& settings) {
        letterbox::in_memory::broker_options o;
        if (settings.consumer_timeout) {
            o.profile.consumer_timeout = settings.consumer_timeout;
            o.profile.channel_tick_interval = settings.channel_tick_interval;
        }
        return o;
    }

    static constexpr std::chrono::milliseconds step_{5};
    test_support::simulation sim_;
};

using amqp_test::broker_url;

/// A raw AMQP channel on the real broker: amqp::detail::connection_core and channel_core, driven
/// on the world's io_context (on the test's thread), in confirm mode, with the same API and the
/// same outcome texts as `model_raw_client`.
class broker_raw_client {
public:
    broker_raw_client(boost::asio::io_context& io, const std::string& url)
        : io_(&io)
        , url_(letterbox::amqp::parse_url(url)) {}

    // Not movable: the channel's handlers point at the object.
    broker_raw_client(const broker_raw_client&) = delete;
    broker_raw_client& operator=(const broker_raw_client&) = delete;
    ~broker_raw_client() { close(); }

    std::string exchange_declare(const letterbox::topology::exchange& x) {
        codec::exchange_declare m;
        m.exchange = x.name;
        m.type = std::string(to_string(x.type));
        m.durable = x.durable;
        m.auto_delete = x.auto_delete;
        m.internal = x.internal;
        m.arguments = x.arguments;
        return outcome(call(m, &is<codec::exchange_declare_ok>).first);
    }
    std::string exchange_delete(const std::string& name, bool if_unused) {
        codec::exchange_delete m;
        m.exchange = name;
        m.if_unused = if_unused;
        return outcome(call(m, &is<codec::exchange_delete_ok>).first);
    }
    std::string queue_declare(const letterbox::topology::queue& q, bool passive = false) {
        codec::queue_declare m;
        m.queue = q.name;
        m.passive = passive;
        m.durable = q.durable;
        m.exclusive = q.exclusive;
        m.auto_delete = q.auto_delete;
        m.arguments = q.arguments;
        auto [ec, reply] = call(m, &is<codec::queue_declare_ok>);
        if (ec)
            return outcome(ec);
        const auto& ok = std::get<codec::queue_declare_ok>(reply.method);
        return "ok: " + std::to_string(ok.message_count) + " messages, " +
               std::to_string(ok.consumer_count) + " consumers";
    }
    std::string queue_delete(const std::string& name, bool if_unused, bool if_empty) {
        codec::queue_delete m;
        m.queue = name;
        m.if_unused = if_unused;
        m.if_empty = if_empty;
        auto [ec, reply] = call(m, &is<codec::queue_delete_ok>);
        if (ec)
            return outcome(ec);
        return "ok: " +
               std::to_string(std::get<codec::queue_delete_ok>(reply.method).message_count) +
               " messages";
    }
    std::string queue_bind(const std::string& queue, const std::string& exchange,
                           const std::string& key) {
        codec::queue_bind m;
        m.queue = queue;
        m.exchange = exchange;
        m.routing_key = key;
        return outcome(call(m, &is<codec::queue_bind_ok>).first);
    }
    std::string queue_unbind(const std::string& queue, const std::string& exchange,
                             const std::string& key) {
        codec::queue_unbind m;
        m.queue = queue;
        m.exchange = exchange;
        m.routing_key = key;
        return outcome(call(m, &is<codec::queue_unbind_ok>).first);
    }
    std::string basic_qos(std::uint16_t prefetch, bool global) {
        codec::basic_qos m;
        m.prefetch_count = prefetch;
        m.global = global;
        return outcome(call(m, &is<codec::basic_qos_ok>).first);
    }
    std::string basic_consume(const std::string& queue, bool exclusive = false,
                              bool no_ack = false) {
        codec::basic_consume m;
        m.queue = queue;
        m.exclusive = exclusive;
        m.no_ack = no_ack;
        return outcome(call(m, &is<codec::basic_consume_ok>).first);
    }
    std::string basic_recover(bool requeue) {
        codec::basic_recover m;
        m.requeue = requeue;
        return outcome(call(m, &is<codec::basic_recover_ok>).first);
    }

    /// Publishes `body` with raw `properties` and waits for its confirm.
    std::string publish(const std::string& exchange, const std::string& key,
                        const letterbox::basic_properties& properties, const std::string& body,
                        bool mandatory = false) {
        if (auto ec = ensure())
            return outcome(ec);
        confirm_.reset();
        returned_ = false;
        codec::basic_publish p;
        p.exchange = exchange;
        p.routing_key = key;
        p.mandatory = mandatory;
        std::error_code ec;
        on_strand([&] { ec = ch_->publish(p, properties, body); });
        if (ec)
            return outcome(ec);
        run([&] { return confirm_.has_value() || !ch_->is_open(); });
        if (!ch_->is_open())
            return outcome(ch_->close_error());
        return publish_outcome(returned_, confirm_);
    }

    raw_get get(const std::string& queue) {
        codec::basic_get m;
        m.queue = queue;
        auto [ec, reply] = call(m, &is<codec::basic_get_ok, codec::basic_get_empty>);
        raw_get r;
        if (ec) {
            r.outcome = outcome(ec);
            return r;
        }
        const auto* ok = std::get_if<codec::basic_get_ok>(&reply.method);
        if (ok == nullptr) {
            r.outcome = "empty";
            return r;
        }
        r.outcome = "ok";
        r.redelivered = ok->redelivered;
        r.message_count = ok->message_count;
        r.tag = ok->delivery_tag;
        std::error_code me;
        r.msg = codec::to_message(std::move(reply), me);
        return r;
    }
    std::string ack(std::uint64_t tag) { return settle(codec::basic_ack{tag, false}); }
    std::string nack(std::uint64_t tag, bool requeue) {
        return settle(codec::basic_nack{tag, false, requeue});
    }
    std::string reject(std::uint64_t tag, bool requeue) {
        return settle(codec::basic_reject{tag, requeue});
    }
    std::size_t deliveries() const { return deliveries_; }
    const std::vector<letterbox::message>& received() const { return received_; }
    /// "ok" while the channel (opened by an earlier operation) is open, else how it or its
    /// connection closed, as far as the io_context has run; never opens a new one.
    std::string channel_outcome() const {
        if (ch_ && ch_->is_open() && conn_ && conn_->is_open())
            return "ok";
        return outcome(ch_ ? ch_->close_error() : make_error_code(letterbox::errc::channel_closed));
    }

    void close() {
        if (!conn_)
            return;
        auto c = std::move(conn_);
        ch_.reset();
        auto done = std::make_shared<bool>(false);
        boost::asio::post(c->strand(), [c, done] {
            if (c->is_open())
                c->close([done](std::error_code) { *done = true; });
            else
                *done = true;
        });
        run([&] { return *done; });
    }

private:
    template <class... M>
    static bool is(const codec::method& m) {
        return (std::holds_alternative<M>(m) || ...);
    }

    bool run(const std::function<bool()>& done) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{20};
        while (!done()) {
            const auto now = std::chrono::steady_clock::now();
            if (now >= deadline)
                return false;
            io_->run_one_for(deadline - now);
        }
        return true;
    }

    template <class F>
    void on_strand(F f) {
        bool ran = false;
        boost::asio::post(conn_->strand(), [&] {
            f();
            ran = true;
        });
        run([&] { return ran; });
    }

    // Connects and opens a confirm-mode channel when there is none (after a channel or
    // connection error).
    std::error_code ensure() {
        if (!conn_ || !conn_->is_open()) {
            conn_ = std::make_shared<letterbox::amqp::detail::connection_core>(
                boost::asio::make_strand(io_->get_executor()), "letterbox-differential-raw");
            ch_.reset();
            std::optional<std::error_code> r;
            on_strand([&] { conn_->connect(url_, [&r](std::error_code ec) { r = ec; }); });
            if (!run([&] { return r.has_value(); }))
                return make_error_code(letterbox::errc::timed_out);
            if (*r)
                return *r;
        }
        if (!ch_ || !ch_->is_open()) {
            close_text_.clear();
            std::optional<std::error_code> r;
            on_strand([&] {
                conn_->open_channel(
                    [this, &r](std::error_code ec,
                               std::shared_ptr<letterbox::amqp::detail::channel_core> ch) {
                        r = ec;
                        ch_ = std::move(ch);
                        if (!ch_)
                            return;
                        ch_->on_command = [this](codec::command&& c) {
                            on_command(std::move(c));
                        };
                        ch_->on_close = [this](std::error_code, const std::string& text) {
                            close_text_ = text;
                        };
                    });
            });
            if (!run([&] { return r.has_value(); }))
                return make_error_code(letterbox::errc::timed_out);
            if (*r)
                return *r;
            auto [ec, reply] =
                call_now(codec::confirm_select{false}, &is<codec::confirm_select_ok>);
            if (ec)
                return ec;
        }
        return {};
    }

    void on_command(codec::command&& c) {
        if (std::holds_alternative<codec::basic_ack>(c.method))
            confirm_ = true;
        else if (std::holds_alternative<codec::basic_nack>(c.method))
            confirm_ = false;
        else if (std::holds_alternative<codec::basic_return>(c.method))
            returned_ = true;
        else if (std::holds_alternative<codec::basic_deliver>(c.method)) {
            ++deliveries_;
            std::error_code ec;
            received_.push_back(codec::to_message(std::move(c), ec));
        }
    }

    std::pair<std::error_code, codec::command>
    call_now(codec::method m, letterbox::amqp::detail::channel_core::reply_filter f) {
        std::optional<std::pair<std::error_code, codec::command>> r;
        on_strand([&] {
            ch_->call(std::move(m), f,
                      [&r](std::error_code ec, codec::command c) { r.emplace(ec, std::move(c)); });
        });
        if (!run([&] { return r.has_value(); }))
            return {make_error_code(letterbox::errc::timed_out), codec::command{}};
        // A channel.close or connection.close is handled in the same turn as the failed
        // call's completion; let it finish (the reply text arrives through on_close).
        io_->poll();
        return std::move(*r);
    }

    std::pair<std::error_code, codec::command>
    call(codec::method m, letterbox::amqp::detail::channel_core::reply_filter f) {
        if (auto ec = ensure())
            return {ec, codec::command{}};
        return call_now(std::move(m), f);
    }

    std::string settle(codec::method m) {
        if (auto ec = ensure())
            return outcome(ec);
        std::error_code ec;
        on_strand([&] { ec = ch_->send(m); });
        // A settle has no reply: an unknown tag closes the channel a moment later. A
        // basic.qos round trip after it shows whether it did.
        if (!ec) {
            codec::basic_qos probe;
            probe.prefetch_count = 0;
            ec = call_now(probe, &is<codec::basic_qos_ok>).first;
        }
        return outcome(ec);
    }

    std::string outcome(std::error_code ec) const {
        if (!ec)
            return "ok";
        if (conn_ && !conn_->is_open() && !conn_->close_text().empty())
            return "connection closed: " + describe(conn_->error()) + " " + conn_->close_text();
        if (ch_ && !ch_->is_open() && !close_text_.empty())
            return "channel closed: " + describe(ch_->close_error()) + " " + close_text_;
        return describe(ec);
    }

    boost::asio::io_context* io_;
    letterbox::amqp::url url_;
    std::shared_ptr<letterbox::amqp::detail::connection_core> conn_{};
    std::shared_ptr<letterbox::amqp::detail::channel_core> ch_{};
    std::string close_text_{};
    std::optional<bool> confirm_{};
    bool returned_ = false;
    std::size_t deliveries_ = 0;
    std::vector<letterbox::message> received_{};
};

/// A real RabbitMQ, reached through a single-threaded io_context that runs only while the
/// scenario waits, on the test's thread.
class broker_world {
public:
    using transport_type = letterbox::amqp::transport;
    using raw_type = broker_raw_client;

    broker_world() = default;
    /// Gives the broker `settings` until the world is destroyed.
    explicit broker_world(const broker_settings& settings) {
        if (!settings.consumer_timeout)
            return;
        // What the broker has now, to put back: {{ok,1800000},{ok,60000}} on a default 3.10.
        const auto before =
            amqp_test::rabbitmqctl_eval("{application:get_env(rabbit, consumer_timeout), "
                                        "application:get_env(rabbit, channel_tick_interval)}.");
        REQUIRE(before);
        restore_ = "application:" + env_restore("consumer_timeout", *before, 0) +
                   ", application:" + env_restore("channel_tick_interval", *before, 1) + ".";
        REQUIRE(amqp_test::rabbitmqctl_eval(
            "application:set_env(rabbit, consumer_timeout, " +
            std::to_string(settings.consumer_timeout->count()) +
            "), application:set_env(rabbit, channel_tick_interval, " +
            std::to_string(settings.channel_tick_interval.count()) + ")."));
    }
    broker_world(const broker_world&) = delete;
    broker_world& operator=(const broker_world&) = delete;
    ~broker_world() {
        if (!restore_.empty() && !amqp_test::rabbitmqctl_eval(restore_))
            WARN("could not restore the broker's environment: " << restore_);
    }

    /// The world's time: the steady clock's.
    std::chrono::nanoseconds now() const {
        return std::chrono::steady_clock::now().time_since_epoch();
    }

    transport_type make_transport() { return transport_type(io_.get_executor(), url_); }
    raw_type make_raw() { return raw_type(io_, url_); }

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

    letterbox::steady_clock& clock() { return clock_; }

private:
    // `set_env(rabbit, Key, N)` for the `index`th `{ok,N}` of `printed`, or `unset_env` when
    // there is none (the key was undefined).
    static std::string env_restore(const std::string& key, const std::string& printed,
                                   std::size_t index) {
        std::size_t at = 0;
        for (std::size_t i = 0; i <= index; ++i) {
            at = printed.find("{ok,", at);
            if (at == std::string::npos)
                return "unset_env(rabbit, " + key + ")";
            at += 4;
        }
        const auto end = printed.find('}', at);
        return "set_env(rabbit, " + key + ", " + printed.substr(at, end - at) + ")";
    }

    std::string url_ = broker_url();
    letterbox::steady_clock clock_{};
    std::string restore_{};
    boost::asio::io_context io_{};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
        io_.get_executor()};
};

// ---- rendering -------------------------------------------------------------------------------

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

/// Every member of a message, properties included (for the foreign-publisher comparison).
inline std::string render_message(const letterbox::message& m) {
    const auto& p = m.properties;
    auto opt = [](const std::optional<std::string>& v) {
        return v ? "'" + *v + "'" : "-";
    };
    std::string out = "id=" + letterbox::to_string(m.id) + " type='" + m.type + "' exchange='" +
                      m.exchange + "' key='" + m.routing_key + "' body='" + m.body + "'";
    out += " headers=" + render(m.headers);
    out += " content_type=" + opt(p.content_type) + " content_encoding=" + opt(p.content_encoding);
    out += " correlation_id=" + opt(p.correlation_id) + " reply_to=" + opt(p.reply_to);
    out += " expiration=" + opt(p.expiration);
    out += " timestamp=" +
           (p.timestamp ? std::to_string(p.timestamp->time_since_epoch().count()) : "-");
    out += std::string(" persistent=") + (p.persistent ? "yes" : "no");
    out += " priority=" + (p.priority ? std::to_string(*p.priority) : "-");
    out += " app_id=" + opt(p.app_id) + " user_id=" + opt(p.user_id);
    return out;
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

    void declare_exchange(const std::string& name, letterbox::topology::exchange_type type,
                          letterbox::field_table arguments = {}) {
        letterbox::topology::exchange x;
        x.name = name;
        x.type = type;
        x.durable = false;
        x.auto_delete = true; // gone with its last binding, i.e. when its queues expire
        x.arguments = std::move(arguments);
        const auto ec = await([&](auto done) { transport_.async_declare(x, done); });
        note("declare exchange " + name + " (" + std::string(to_string(type)) + ") " +
             render(x.arguments) + ": " + describe(ec));
    }

    /// Declares `name` with `args`; always non-durable (durable for a quorum queue, which must
    /// be) and with `x-expires` (`queue_expires_ms` unless `args` has one).
    void declare_queue(const std::string& name, letterbox::topology::queue_arguments args = {}) {
        letterbox::topology::queue q;
        q.name = name;
        q.durable = args.type == letterbox::topology::queue_type::quorum;
        if (!args.expires)
            args.expires = std::chrono::milliseconds{queue_expires_ms};
        q.arguments = args.to_table();
        const auto ec = await([&](auto done) { transport_.async_declare(q, done); });
        note("declare queue " + name + ": " + describe(ec));
    }

    /// Declares `name` with the raw `arguments` (for those `queue_arguments` does not know,
    /// such as `x-single-active-consumer`), `durable` or not, and with `x-expires`
    /// (`queue_expires_ms` unless `arguments` has one).
    void declare_queue_with(const std::string& name, letterbox::field_table arguments,
                            bool durable) {
        letterbox::topology::queue q;
        q.name = name;
        q.durable = durable;
        if (!arguments.contains(letterbox::topology::args::expires))
            arguments.set(letterbox::topology::args::expires, queue_expires_ms);
        q.arguments = std::move(arguments);
        const auto ec = await([&](auto done) { transport_.async_declare(q, done); });
        note("declare queue " + name + " " + render(q.arguments) + ": " + describe(ec));
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

    /// A get that also writes the reply's message count (basic.get-ok `message-count`).
    std::optional<letterbox::delivery> get_counted(const std::string& queue) {
        auto [ec, d] = await2<std::optional<letterbox::delivery>>(
            [&](auto done) { transport_.async_get(queue, done); });
        if (ec)
            note("get " + queue + ": " + describe(ec));
        else if (!d)
            note("get " + queue + ": empty");
        else
            note("get: " + render(*d) +
                 " message_count=" + (d->message_count ? std::to_string(*d->message_count) : "-"));
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

/// Runs `scenario(world, prefix) -> trace` in the model, then on the real broker, both with
/// `settings`, and asserts that the traces are equal. Returns the model's trace for further
/// checks.
template <class Scenario>
trace compare(std::string_view stem, const broker_settings& settings, Scenario scenario) {
    const auto prefix = run_prefix(stem);
    trace model;
    {
        model_world w(settings);
        model = scenario(w, prefix);
    }
    trace broker;
    {
        broker_world w(settings);
        broker = scenario(w, prefix);
    }
    check_same(model, broker);
    return model;
}

/// The same with the brokers' default settings.
template <class Scenario>
trace compare(std::string_view stem, Scenario scenario) {
    return compare(stem, broker_settings{}, std::move(scenario));
}

} // namespace differential
