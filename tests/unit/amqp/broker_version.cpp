// SPDX-License-Identifier: BSL-1.0
// The broker's version, read from connection.start's server properties: amqp::broker_info,
// amqp::connection::info::broker, amqp::transport::broker() with its observer events
// (transport_options::on_event), and what ops::connection_check shows of it. Against the
// scripted fake server of fake_server.hpp; every wait has a deadline. The real broker's version
// is checked in tests/integration/amqp_broker_version.cpp.

#include <letterbox/amqp/broker_info.hpp>
#include <letterbox/amqp/connection.hpp>
#include <letterbox/amqp/transport.hpp>
#include <letterbox/amqp/transport_event.hpp>
#include <letterbox/amqp/transport_options.hpp>
#include <letterbox/ops/connection_check.hpp>

#include "fake_server.hpp"

#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <variant>
#include <vector>

namespace unit_amqp_broker_version {

static_assert(letterbox::ops::broker_version_reporter<letterbox::amqp::transport>);

namespace {

using namespace std::chrono_literals;
using letterbox::field_table;
using letterbox::amqp::broker_info;
using letterbox::amqp::transport_event;
namespace codec = letterbox::amqp::codec;

constexpr codec::connection_tune tune{.channel_max = 16, .frame_max = 131072, .heartbeat = 0};

field_table rabbitmq(const std::string& version) {
    return field_table{{"product", std::string("RabbitMQ")}, {"version", version}};
}

/// An event as the observer saw it, copied (the event's references last for the call only).
struct seen {
    transport_event::kind what;
    std::string version;
    std::string profile;
    std::string text;
    std::string previous_version;
};

struct client_loop {
    boost::asio::io_context io{};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{
        io.get_executor()};
    std::vector<seen> events;

    bool run_until(const std::function<bool()>& done,
                   std::chrono::milliseconds timeout = std::chrono::seconds{10}) {
        return amqp_test::run_until(io, done, timeout);
    }

    letterbox::amqp::transport_options options() {
        letterbox::amqp::transport_options o;
        o.reconnect_delay_min = 60s; // nothing in these tests waits for a backoff
        o.reconnect_delay_max = 60s;
        o.shuffle_endpoints = false;
        o.on_event = [this](const transport_event& e) {
            events.push_back({e.what, e.broker.version, std::string(e.broker.profile.name),
                              std::string(e.text),
                              e.previous != nullptr ? e.previous->version : std::string()});
        };
        return o;
    }
};

} // namespace

TEST_CASE("broker_info reads RabbitMQ's product and version and picks the version's profile",
          "[amqp][broker_version]") {
    const auto b = broker_info::from_server_properties(rabbitmq("4.0.5"));
    CHECK(b.product == "RabbitMQ");
    CHECK(b.version == "4.0.5");
    CHECK(b.profile.name == "4.0");
    CHECK(b.exact);
    CHECK(b.note.empty());
    CHECK(b.describe() == "RabbitMQ 4.0.5 (broker profile 4.0)");
    // No product: taken for RabbitMQ.
    const auto bare = broker_info::from_server_properties(field_table{{"version", "3.13.1"}});
    CHECK(bare.profile.name == "3.13.0");
    CHECK(bare.exact);
    CHECK(bare.describe() == "the broker 3.13.1 (broker profile 3.13.0)");
}

TEST_CASE("broker_info falls back to the 3.10 baseline, with a note, when the version is "
          "missing, not a string, or not RabbitMQ's",
          "[amqp][broker_version]") {
    const auto missing =
        broker_info::from_server_properties(field_table{{"product", std::string("RabbitMQ")}});
    CHECK(missing.profile.name == "3.10");
    CHECK_FALSE(missing.exact);
    CHECK(missing.note.find("did not announce its version") != std::string::npos);
    CHECK(missing.describe() == "RabbitMQ of an unknown version (broker profile 3.10)");

    const auto number = broker_info::from_server_properties(
        field_table{{"product", std::string("RabbitMQ")}, {"version", std::int32_t{4}}});
    CHECK(number.version.empty());
    CHECK_FALSE(number.exact);

    const auto other = broker_info::from_server_properties(
        field_table{{"product", "LavinMQ"}, {"version", "4.3.0"}});
    CHECK(other.profile.name == "3.10");
    CHECK_FALSE(other.exact);
    CHECK(other.note == "the broker is LavinMQ 4.3.0, not RabbitMQ: letterbox assumes RabbitMQ "
                        "3.10's behaviour, its baseline");
    // The product is compared without case.
    CHECK(broker_info::from_server_properties(
              field_table{{"product", "rabbitmq"}, {"version", "4.3.0"}})
              .exact);
}

TEST_CASE("broker_info keeps a hostile product and version printable and short",
          "[amqp][broker_version]") {
    const auto b = broker_info::from_server_properties(
        field_table{{"product", std::string("Rabbit\xc3\x28MQ\r\n") + std::string(500, 'p')},
                    {"version", std::string("\x1b[31m3.10.8") + std::string(500, 'v')}});
    CHECK(b.product.size() == broker_info::max_version_size);
    CHECK(b.version.size() == broker_info::max_version_size);
    for (const char c : b.describe() + b.note) {
        CHECK(c >= 0x20);
        CHECK(c <= 0x7e);
    }
    CHECK_FALSE(b.exact);
}

TEST_CASE("amqp connection: info names the broker that connection.start announced",
          "[amqp][connection][broker_version]") {
    amqp_test::scripted_server server;
    server.server_properties_ = rabbitmq("3.12.14");
    std::optional<bool> served;
    std::jthread server_thread(
        [&] { served = server.handshake(tune) && amqp_test::serve_close(server); });
    amqp_test::client c;
    REQUIRE(c.connect(server.port()) == std::error_code{});
    std::optional<letterbox::amqp::connection::info> info;
    c.conn.async_info([&](std::error_code ec, letterbox::amqp::connection::info i) {
        if (!ec)
            info = std::move(i);
    });
    REQUIRE(c.run_until([&] { return info.has_value(); }));
    const auto b = info->broker();
    CHECK(b.version == "3.12.14");
    CHECK(b.profile.name == "3.10");
    CHECK(b.exact);
    std::optional<std::error_code> closed;
    c.conn.async_close([&](std::error_code ec) { closed = ec; });
    REQUIRE(c.run_until([&] { return closed.has_value(); }));
    server_thread.join();
    CHECK(served == true);
}

TEST_CASE("amqp transport: broker() gives the version and profile of connection.start, the "
          "observer hears of it, and the readiness check shows it",
          "[amqp][transport][broker_version]") {
    amqp_test::scripted_server server;
    server.server_properties_ = rabbitmq("4.0.5");
    std::optional<bool> served;
    std::jthread server_thread(
        [&] { served = server.handshake(tune) && amqp_test::serve_close(server); });

    client_loop c;
    letterbox::amqp::transport t(c.io.get_executor(), amqp_test::loopback_url(server.port()),
                                 c.options());
    const auto check = letterbox::ops::connection_check(t);
    CHECK_FALSE(t.broker());
    CHECK(check().detail == "not connected to the broker");
    REQUIRE(c.run_until([&] { return t.is_connected() && !c.events.empty(); }));
    const auto b = t.broker();
    REQUIRE(b);
    CHECK(b->product == "RabbitMQ");
    CHECK(b->version == "4.0.5");
    CHECK(b->profile.name == "4.0");
    CHECK(b->exact);
    REQUIRE(c.events.size() == 1);
    CHECK(c.events[0].what == transport_event::kind::broker_identified);
    CHECK(c.events[0].profile == "4.0");
    CHECK(c.events[0].text == "connected to RabbitMQ 4.0.5 (broker profile 4.0) at 127.0.0.1:" +
                                  std::to_string(server.port()));
    const auto ready = check();
    CHECK(ready.ok);
    CHECK(ready.detail == "connected to RabbitMQ 4.0.5 (broker profile 4.0)");

    CHECK(amqp_test::close_transport(c, t) == std::error_code{});
    // Kept after the connection is gone: the broker the pipeline last talked to.
    CHECK(t.broker()->version == "4.0.5");
    CHECK(check().detail == "not connected to the broker");
    server_thread.join();
    CHECK(served == true);
}

TEST_CASE("amqp transport: a broker that announces no version gets the 3.10 baseline, and the "
          "observer and the readiness check are warned",
          "[amqp][transport][broker_version]") {
    amqp_test::scripted_server server;
    server.server_properties_ = field_table{{"product", std::string("RabbitMQ")}};
    std::optional<bool> served;
    std::jthread server_thread(
        [&] { served = server.handshake(tune) && amqp_test::serve_close(server); });

    client_loop c;
    auto options = c.options();
    // An observer that throws does not stop the transport.
    options.on_event = [inner = options.on_event](const transport_event& e) {
        inner(e);
        throw std::runtime_error("an observer that throws");
    };
    letterbox::amqp::transport t(c.io.get_executor(), amqp_test::loopback_url(server.port()),
                                 options);
    REQUIRE(c.run_until([&] { return t.is_connected() && c.events.size() >= 2; }));
    CHECK(t.broker()->profile.name == "3.10");
    CHECK_FALSE(t.broker()->exact);
    REQUIRE(c.events.size() == 2);
    CHECK(c.events[0].what == transport_event::kind::broker_identified);
    CHECK(c.events[1].what == transport_event::kind::broker_version_not_recognised);
    const std::string note = "the broker did not announce its version: letterbox assumes "
                             "RabbitMQ 3.10's behaviour, its baseline";
    CHECK(c.events[1].text == note);
    const auto ready = letterbox::ops::connection_check(t)();
    CHECK(ready.ok); // the broker works: the warning does not make the pipeline unready
    CHECK(ready.detail ==
          "connected to RabbitMQ of an unknown version (broker profile 3.10); warning: " + note);
    CHECK(amqp_test::close_transport(c, t) == std::error_code{});
    server_thread.join();
    CHECK(served == true);
}

TEST_CASE("amqp transport: after a failover to a node of another version, broker() names the "
          "new one and the observer is warned of the change",
          "[amqp][transport][broker_version][failover]") {
    auto first = std::make_unique<amqp_test::scripted_server>();
    amqp_test::scripted_server second;
    first->server_properties_ = rabbitmq("3.10.8");
    second.server_properties_ = rabbitmq("4.3.1");
    auto u = amqp_test::loopback_url(first->port());
    u.set_endpoints({{"127.0.0.1", first->port()}, {"127.0.0.1", second.port()}});
    std::optional<bool> first_served;
    std::optional<bool> closed_cleanly;
    std::atomic<bool> drop_first{false};
    std::jthread server_thread([&] {
        first_served = first->handshake(tune);
        while (!drop_first.load())
            std::this_thread::sleep_for(1ms);
        first.reset(); // the node dies: its socket closes under the connection
        closed_cleanly = second.handshake(tune) && amqp_test::serve_close(second);
    });

    client_loop c;
    letterbox::amqp::transport t(c.io.get_executor(), u, c.options());
    REQUIRE(c.run_until([&] { return t.is_connected() && !c.events.empty(); }));
    CHECK(t.broker()->version == "3.10.8");
    drop_first = true;
    REQUIRE(c.run_until([&] { return c.events.size() >= 3; }));
    REQUIRE(c.events.size() == 3);
    CHECK(c.events[0].what == transport_event::kind::broker_identified);
    CHECK(c.events[0].version == "3.10.8");
    CHECK(c.events[1].what == transport_event::kind::broker_identified);
    CHECK(c.events[1].version == "4.3.1");
    CHECK(c.events[2].what == transport_event::kind::broker_version_changed);
    CHECK(c.events[2].previous_version == "3.10.8");
    CHECK(c.events[2].profile == "4.3");
    CHECK(c.events[2].text == "the broker at 127.0.0.1:" + std::to_string(second.port()) +
                                  " is RabbitMQ 4.3.1 (broker profile 4.3), and the previous "
                                  "connection's was RabbitMQ 3.10.8 (broker profile 3.10)");
    CHECK(t.broker()->profile.name == "4.3");
    CHECK(amqp_test::close_transport(c, t) == std::error_code{});
    server_thread.join();
    CHECK(first_served == true);
    CHECK(closed_cleanly == true);
}

TEST_CASE("amqp transport: the broker version example of docs/amqp.md compiles and reads the "
          "version a broker announced",
          "[amqp][transport][broker_version]") {
    amqp_test::scripted_server server;
    server.server_properties_ = rabbitmq("3.13.7");
    std::optional<bool> served;
    std::jthread server_thread(
        [&] { served = server.handshake(tune) && amqp_test::serve_close(server); });
    client_loop c;
    auto& io = c.io;
    const auto u = amqp_test::loopback_url(server.port());
    std::vector<std::string> log;
    //[amqp_broker_version
    letterbox::amqp::transport_options options;
    // Each connection's broker, and the warnings: no profile for its version, or another
    // version than the previous connection's (a failover, an upgrade).
    options.on_event = [&log](const letterbox::amqp::transport_event& e) {
        log.push_back(std::string(e.is_warning() ? "warning: " : "") + std::string(e.text));
    };
    letterbox::amqp::transport t(io.get_executor(), u, options);
    // ... later, once connected (from any thread): what the pipeline may rely on.
    if (auto broker = t.broker()) {
        const letterbox::in_memory::broker_profile& profile = broker->profile;
        if (!profile.client_x_death_is_history)
            std::printf("%s ignores an x-death header set by a client\n",
                        broker->describe().c_str());
    }
    //]
    REQUIRE(c.run_until([&] { return t.is_connected() && !log.empty(); }));
    CHECK(log == std::vector<std::string>{"connected to RabbitMQ 3.13.7 (broker profile 3.13) at " +
                                          u.endpoints().front().to_string()});
    CHECK(t.broker()->profile.client_x_death_is_history);
    CHECK(amqp_test::close_transport(c, t) == std::error_code{});
    server_thread.join();
    CHECK(served == true);
}

} // namespace unit_amqp_broker_version
