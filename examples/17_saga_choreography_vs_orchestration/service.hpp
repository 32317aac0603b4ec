// SPDX-License-Identifier: BSL-1.0
//
// Example 17's plumbing, the same in both styles: what a service is, and the world it runs in.
//
// A service has its own SQLite database, which holds its tables, its outbox and its inbox. A
// relay publishes its outbox. Each of its consumers runs an effect that commits, in one
// transaction, the inbox record of the message it handles, the service's own writes and what it
// sends. Before the effect, a handling spends the service's working time on the virtual clock
// (its call to a warehouse, a payment provider, a mail server), so that a flow's latency means
// something. Nothing here knows the order flow: choreography/ and orchestration/ build it.
#pragma once

#include <letterbox/letterbox.hpp>
#include <letterbox/sqlite.hpp>
#include <letterbox/testing/simulation.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace example {

namespace lb = letterbox;
using ms = std::chrono::milliseconds;

/// Each style runs without and with the e-mail step in one program; this switch chooses, as a
/// feature flag would. The lines it selects are marked `// ?email` (see source_change.hpp).
inline bool email_step = false;

/// How long each service works on one message, the same in both styles.
namespace work_time {
inline constexpr ms orders{10};      // write the order's new status
inline constexpr ms stock{20};       // ask the warehouse
inline constexpr ms payment{150};    // call the payment provider
inline constexpr ms email{80};       // hand the e-mail to the mail server
inline constexpr ms orchestrator{5}; // read the saga, write its move and its next command
} // namespace work_time

/// Throws when `ec` holds an error: the example stops with `MISMATCH:` (main.cpp).
inline void must(std::error_code ec, const char* what) {
    if (ec)
        throw lb::error(ec, what);
}

class service;

/// One run of one style: one thread, one virtual clock and the in-memory broker (a
/// `testing::simulation`), the services' databases in `dir`, the topology they need, and what
/// their relays published.
struct world {
    explicit world(std::filesystem::path directory)
        : dir(std::move(directory)) {}

    lb::testing::simulation sim{17};
    lb::in_memory::transport transport{sim.broker(), "example-17"};
    lb::message_id_generator ids{17, sim.clock()};
    std::filesystem::path dir;
    std::vector<service*> services;
    /// The exchanges, queues and bindings the services asked for; `start` declares them.
    std::vector<lb::topology::declaration> topology;
    /// What every relay published and the broker confirmed: the history a trace is read from.
    std::vector<lb::message> history;
};

class service {
public:
    using unit_of_work = lb::sqlite::unit_of_work;

    /// A service called `name`, whose database `dir/<name>.db` gets the tables of `schema`.
    service(world& w, const std::string& name, const char* schema)
        : world_(w)
        , db_(lb::sqlite::database::open((w.dir / (name + ".db")).string()))
        , outbox_(db_)
        , inbox_(db_)
        , relay_(outbox_, w.transport, w.sim.clock(), relay_options(w)) {
        auto u = db_.begin();
        must(u.connection().exec(schema), "create the tables");
        must(u.commit(), "commit the tables");
        w.services.push_back(this);
        relay_.async_run([this](std::error_code) { stopped_ = true; });
    }
    service(const service&) = delete;
    service& operator=(const service&) = delete;

    /// The first column of the first row of `sql`, or -1: for the program's own checks.
    std::int64_t number(const std::string& sql) {
        auto u = db_.begin();
        std::error_code ec;
        auto st = u.connection().prepare(sql, ec);
        return !ec && st->step(ec) ? st->column_int64(0) : -1;
    }
    std::string text(const std::string& sql) {
        auto u = db_.begin();
        std::error_code ec;
        auto st = u.connection().prepare(sql, ec);
        return !ec && st->step(ec) ? std::string(st->column_text(0)) : std::string();
    }

    void start_consumers();
    void stop_consumers();
    bool stop_relay() {
        relay_.stop();
        return world_.sim.drive_until([this] { return stopped_; });
    }

protected:
    lb::message_id_generator& ids() noexcept { return world_.ids; }
    lb::sqlite::database& database() noexcept { return db_; }
    lb::sqlite::outbox_store& outbox() noexcept { return outbox_; }
    unit_of_work begin() { return db_.begin(); }

    /// Runs `sql` in `u`, with ?1 = `id` and, when given, ?2 = `text`.
    static void exec(unit_of_work& u, const char* sql, std::int64_t id,
                     std::string_view text = {}) {
        std::error_code ec;
        auto st = u.connection().prepare(sql, ec);
        must(ec, sql);
        st->bind_int64(1, id);
        if (!text.empty())
            st->bind_text(2, text);
        must(st->execute(), sql);
    }

    /// Sends `m` through the outbox, in `u`: published once `u` commits.
    std::error_code send(unit_of_work& u, const lb::message& m, int order_id) {
        if (auto ec = outbox_.add(u, {m, "order", std::to_string(order_id)},
                                  world_.sim.clock().wall_now()))
            return ec;
        return publish_on_commit(u);
    }
    /// Wakes the relay when `u` commits, for what was added to the outbox in it.
    std::error_code publish_on_commit(unit_of_work& u) { return u.on_commit(relay_.waker()); }

    /// Asks for the bindings that route `events` (their types) from `exchange` to `queue`.
    void bind(const std::string& queue, std::string_view exchange,
              const std::vector<std::string_view>& events) {
        for (const auto event : events)
            world_.topology.push_back(
                lb::topology::binding{std::string(exchange), queue, std::string(event)});
    }

    /// Handles the messages of `queue`: each first takes `work` of virtual time, then
    /// `effect(message, unit_of_work)` runs and commits with the message's inbox record. The work
    /// is made before the transaction (`after_call`), as a call to a payment provider would be,
    /// so no lock is held while it lasts; immediate retries absorb a failed attempt.
    template <class Effect>
    void consume(const std::string& queue, ms work, Effect effect) {
        auto endpoint = lb::receive_endpoint(world_.transport, world_.sim.clock(), {.queue = queue})
                            .retry(lb::backoff::immediate(3));
        for (auto& q : endpoint.topology().queues())
            world_.topology.push_back(std::move(q));
        auto& clock = world_.sim.clock();
        auto working = [&clock, work](const lb::message&) {
            return spend(clock, work);
        };
        auto c = endpoint.consume(inbox_, lb::middleware::after_call(working, std::move(effect)));
        consumers_.push_back({[c](auto done) mutable { c.async_start(std::move(done)); },
                              [c](const std::string& tag, auto done) mutable {
                                  c.async_shutdown(tag, std::move(done));
                              }});
    }

private:
    struct consumer_handle {
        std::function<void(std::function<void(std::error_code, std::string)>)> start;
        std::function<void(const std::string&, std::function<void(std::error_code)>)> shutdown;
        std::string tag{};
    };

    static lb::relay_options relay_options(world& w) {
        lb::relay_options options;
        options.seed = 17;
        options.on_event = [&history = w.history](const lb::relay_event& e) {
            if (e.what == lb::relay_event::kind::confirmed)
                history.push_back(e.record.msg);
        };
        return options;
    }

    // A coroutine takes its arguments by value, except the clock, which outlives every run.
    static boost::asio::awaitable<void> spend(lb::virtual_clock& clock, ms work) {
        auto timer = clock.make_timer(co_await boost::asio::this_coro::executor);
        timer.expires_after(work);
        co_await timer.async_wait(boost::asio::use_awaitable);
    }

    world& world_;
    lb::sqlite::database db_;
    lb::sqlite::outbox_store outbox_;
    lb::sqlite::inbox_store inbox_;
    lb::outbox_relay<lb::sqlite::outbox_store, lb::in_memory::transport, lb::virtual_clock> relay_;
    std::vector<consumer_handle> consumers_;
    bool stopped_ = false;
};

inline void service::start_consumers() {
    for (auto& c : consumers_) {
        std::optional<std::error_code> started;
        c.start([&](std::error_code ec, std::string tag) {
            started = ec;
            c.tag = std::move(tag);
        });
        world_.sim.drive_until([&] { return started.has_value(); });
        must(started.value_or(lb::errc::internal_error), "start a consumer");
    }
}

inline void service::stop_consumers() {
    for (auto& c : consumers_) {
        std::optional<std::error_code> stopped;
        c.shutdown(c.tag, [&](std::error_code ec) { stopped = ec; });
        world_.sim.drive_until([&] { return stopped.has_value(); });
        must(stopped.value_or(lb::errc::internal_error), "shut a consumer down");
    }
}

/// Declares the topology the services asked for (exchanges, then queues, then bindings), then
/// starts their consumers.
inline void start(world& w) {
    std::stable_sort(w.topology.begin(), w.topology.end(),
                     [](const auto& a, const auto& b) { return a.index() < b.index(); });
    std::optional<std::error_code> declared;
    lb::topology::async_declare_all(w.transport, w.topology,
                                    [&](std::error_code ec) { declared = ec; });
    w.sim.drive_until([&] { return declared.has_value(); });
    must(declared.value_or(lb::errc::internal_error), "declare the topology");
    for (auto* s : w.services)
        s->start_consumers();
}

/// Shuts the consumers down, then stops the relays.
inline void stop(world& w) {
    for (auto* s : w.services)
        s->stop_consumers();
    for (auto* s : w.services)
        if (!s->stop_relay())
            throw lb::error(lb::errc::internal_error, "a relay did not stop");
}

} // namespace example
