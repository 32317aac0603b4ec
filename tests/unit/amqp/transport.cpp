// SPDX-License-Identifier: BSL-1.0
// amqp::transport without a broker: failover across the endpoints of its URL, against loopback
// listeners and the scripted fake server of fake_server.hpp. Every wait has a deadline. The
// transport with a real RabbitMQ is tested in tests/integration/ (amqp_transport.cpp,
// amqp_recovery.cpp, amqp_failover.cpp).

#include <letterbox/amqp/transport.hpp>

#include "fake_server.hpp"

#include <letterbox/amqp/detail/endpoint_order.hpp>
#include <letterbox/amqp/endpoint.hpp>
#include <letterbox/amqp/transport_options.hpp>
#include <letterbox/amqp/url.hpp>
#include <letterbox/concepts/transport.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/queue.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <variant>
#include <vector>

namespace unit_amqp_transport {

static_assert(letterbox::transport<letterbox::amqp::transport>);

namespace {

using namespace std::chrono_literals;
using letterbox::errc;
using letterbox::amqp::endpoint;
namespace codec = letterbox::amqp::codec;
namespace ip = boost::asio::ip;

/// A TCP port on 127.0.0.1 that nothing listens on: bound, then released.
std::uint16_t closed_port() {
    boost::asio::io_context io;
    ip::tcp::acceptor a(io, ip::tcp::endpoint(ip::address_v4::loopback(), 0));
    return a.local_endpoint().port();
}

/// A listener on 127.0.0.1 that accepts every connection, records when, and closes it at
/// once: to the transport, an endpoint whose every connect fails during the handshake.
struct slamming_listener {
    struct accepted {
        std::size_t listener = 0;
        std::chrono::steady_clock::time_point at{};
    };

    slamming_listener(boost::asio::io_context& io, std::size_t index,
                      std::shared_ptr<std::vector<accepted>> log)
        : acceptor_(io, ip::tcp::endpoint(ip::address_v4::loopback(), 0))
        , index_(index)
        , log_(std::move(log)) {
        accept();
    }

    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

private:
    void accept() {
        acceptor_.async_accept([this](boost::system::error_code ec, ip::tcp::socket s) {
            if (ec)
                return;
            log_->push_back({index_, std::chrono::steady_clock::now()});
            boost::system::error_code ignored;
            s.close(ignored);
            accept();
        });
    }

    ip::tcp::acceptor acceptor_;
    std::size_t index_;
    std::shared_ptr<std::vector<accepted>> log_;
};

/// The transport's side: an io_context run on the test's thread, with a deadline per wait.
struct client_loop {
    boost::asio::io_context io{};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{
        io.get_executor()};

    bool run_until(const std::function<bool()>& done,
                   std::chrono::milliseconds timeout = std::chrono::seconds{10}) {
        return amqp_test::run_until(io, done, timeout);
    }
};

letterbox::amqp::url loopback_endpoints(const std::vector<std::uint16_t>& ports) {
    auto u = amqp_test::loopback_url(ports.front());
    std::vector<endpoint> list;
    for (const auto port : ports)
        list.push_back(endpoint{"127.0.0.1", port});
    u.set_endpoints(std::move(list));
    return u;
}

/// Options whose backoff is far longer than any wait of these tests: an attempt that comes in
/// time came without it.
letterbox::amqp::transport_options no_backoff_in_time() {
    letterbox::amqp::transport_options o;
    o.reconnect_delay_min = 60s;
    o.reconnect_delay_max = 60s;
    o.shuffle_endpoints = false;
    return o;
}

constexpr codec::connection_tune tune{.channel_max = 16, .frame_max = 131072, .heartbeat = 0};

/// Plays the broker's part for a channel.open and returns the channel it was on.
std::optional<std::uint16_t> serve_channel_open(amqp_test::scripted_server& s) {
    std::uint16_t channel = 0;
    auto m = s.read_method(&channel);
    if (!m || !std::holds_alternative<codec::channel_open>(*m) ||
        !s.send_method(codec::channel_open_ok{}, channel))
        return std::nullopt;
    return channel;
}

/// Reads a queue.declare on a new channel and answers declare-ok; the queue's name.
std::optional<std::string> serve_queue_declare(amqp_test::scripted_server& s) {
    const auto channel = serve_channel_open(s);
    if (!channel)
        return std::nullopt;
    auto m = s.read_method();
    const auto* declare = m ? std::get_if<codec::queue_declare>(&*m) : nullptr;
    if (declare == nullptr ||
        !s.send_method(codec::queue_declare_ok{.queue = declare->queue}, *channel))
        return std::nullopt;
    return declare->queue;
}

} // namespace

TEST_CASE("amqp transport: with a fixed seed, connects try the endpoints in the seeded order, "
          "back to back within a round and with the backoff only between rounds",
          "[amqp][transport][failover]") {
    client_loop c;
    auto log = std::make_shared<std::vector<slamming_listener::accepted>>();
    std::vector<std::unique_ptr<slamming_listener>> listeners;
    std::vector<std::uint16_t> ports;
    for (std::size_t i = 0; i < 4; ++i) {
        listeners.push_back(std::make_unique<slamming_listener>(c.io, i, log));
        ports.push_back(listeners.back()->port());
    }
    const auto u = loopback_endpoints(ports);
    letterbox::amqp::transport_options o;
    o.endpoint_shuffle_seed = 20240611;
    o.reconnect_delay_min = 1500ms;
    o.reconnect_delay_max = 1500ms;
    // The order the transport must follow: the seeded shuffle (whose permutation for this seed
    // tests/unit/amqp/detail/endpoint_order.cpp pins), as listener indices.
    std::vector<std::size_t> expected;
    for (const auto& e :
         letterbox::amqp::detail::endpoint_order(u.endpoints(), true, o.endpoint_shuffle_seed))
        for (std::size_t i = 0; i < ports.size(); ++i)
            if (e.port == ports[i])
                expected.push_back(i);
    REQUIRE(expected.size() == 4);
    REQUIRE(expected != std::vector<std::size_t>{0, 1, 2, 3}); // the seed does shuffle

    letterbox::amqp::transport t(c.io.get_executor(), u, o);
    // A publish waits for the whole first round and fails with its outcome: not at the first
    // endpoint refused.
    std::optional<std::error_code> published;
    std::size_t attempts_when_published = 0;
    letterbox::message m;
    m.routing_key = "q";
    t.async_publish(m, [&](std::error_code ec) {
        published = ec;
        attempts_when_published = log->size();
    });
    REQUIRE(c.run_until([&] { return log->size() >= 8; }, 20s));
    CHECK_FALSE(t.is_connected());
    CHECK_FALSE(t.connected_endpoint());

    std::vector<std::size_t> order;
    for (const auto& a : *log)
        order.push_back(a.listener);
    const std::vector<std::size_t> first(order.begin(), order.begin() + 4);
    const std::vector<std::size_t> second(order.begin() + 4, order.begin() + 8);
    CHECK(first == expected);
    CHECK(second == expected);
    REQUIRE(published.has_value());
    INFO("the publish completed with: " << published->message());
    CHECK(*published == errc::connection_closed);
    CHECK(attempts_when_published == 4);
    // Within a round, the next endpoint is tried at once (well under the backoff); between
    // rounds, the backoff is waited in full.
    const auto gap = [&](std::size_t i) {
        return (*log)[i + 1].at - (*log)[i].at;
    };
    for (std::size_t i : {0U, 1U, 2U, 4U, 5U, 6U}) {
        INFO("between attempts " << i << " and " << i + 1);
        CHECK(gap(i) < 1000ms);
    }
    CHECK(gap(3) >= 1500ms);
    CHECK(amqp_test::close_transport(c, t) == std::error_code{});
}

TEST_CASE("amqp transport: a refused endpoint fails over to the next at once, and "
          "connected_endpoint names the one in use",
          "[amqp][transport][failover]") {
    amqp_test::scripted_server server;
    const auto refused = closed_port();
    const auto u = loopback_endpoints({refused, server.port()});
    std::optional<bool> served;
    std::jthread server_thread(
        [&] { served = server.handshake(tune) && amqp_test::serve_close(server); });

    client_loop c;
    letterbox::amqp::transport t(c.io.get_executor(), u, no_backoff_in_time());
    CHECK_FALSE(t.connected_endpoint());
    // The backoff is a minute: connecting in time means the refused endpoint cost none.
    REQUIRE(c.run_until([&] { return t.is_connected(); }));
    CHECK(t.connected_endpoint() == endpoint{"127.0.0.1", server.port()});
    CHECK(amqp_test::close_transport(c, t) == std::error_code{});
    CHECK_FALSE(t.connected_endpoint());
    server_thread.join();
    CHECK(served == true);
    // Credentials and vhost are the URL's, whichever endpoint serves.
    CHECK(server.open_.virtual_host == "tests");
}

TEST_CASE("amqp transport: a lost connection moves on to the next endpoint at once and "
          "declares the topology again there",
          "[amqp][transport][failover]") {
    auto first = std::make_unique<amqp_test::scripted_server>();
    amqp_test::scripted_server second;
    const auto u = loopback_endpoints({first->port(), second.port()});
    std::optional<std::string> declared_first;
    std::optional<std::string> declared_second;
    bool closed_cleanly = false;
    std::jthread server_thread([&] {
        if (first->handshake(tune))
            declared_first = serve_queue_declare(*first);
        first.reset(); // the node dies: its socket closes under the connection
        if (second.handshake(tune)) {
            declared_second = serve_queue_declare(second);
            closed_cleanly = amqp_test::serve_close(second);
        }
    });

    client_loop c;
    letterbox::amqp::transport t(c.io.get_executor(), u, no_backoff_in_time());
    letterbox::topology::queue q;
    q.name = "failover.orders";
    std::optional<std::error_code> declared;
    t.async_declare(q, [&](std::error_code ec) { declared = ec; });
    REQUIRE(c.run_until([&] { return declared.has_value(); }));
    CHECK(*declared == std::error_code{});
    REQUIRE(c.run_until([&] {
        return t.connected_endpoint() == endpoint{"127.0.0.1", second.port()};
    }));
    CHECK(t.is_connected());
    CHECK(amqp_test::close_transport(c, t) == std::error_code{});
    server_thread.join();
    CHECK(declared_first == q.name);
    CHECK(declared_second == q.name);
    CHECK(closed_cleanly);
}

TEST_CASE("amqp transport: shuffle_endpoints false keeps the order written",
          "[amqp][transport][failover]") {
    client_loop c;
    auto log = std::make_shared<std::vector<slamming_listener::accepted>>();
    std::vector<std::unique_ptr<slamming_listener>> listeners;
    std::vector<std::uint16_t> ports;
    for (std::size_t i = 0; i < 3; ++i) {
        listeners.push_back(std::make_unique<slamming_listener>(c.io, i, log));
        ports.push_back(listeners.back()->port());
    }
    auto o = no_backoff_in_time();
    letterbox::amqp::transport t(c.io.get_executor(), loopback_endpoints(ports), o);
    REQUIRE(c.run_until([&] { return log->size() >= 3; }));
    CHECK((*log)[0].listener == 0);
    CHECK((*log)[1].listener == 1);
    CHECK((*log)[2].listener == 2);
    CHECK(amqp_test::close_transport(c, t) == std::error_code{});
}

TEST_CASE("amqp transport: the failover example of docs/amqp.md compiles and lists its endpoints",
          "[amqp][transport][failover]") {
    boost::asio::io_context io; // never run: nothing connects
    //[amqp_failover_endpoints
    // Three nodes of one cluster: credentials, vhost and query are shared; each port
    // defaults to the scheme's.
    auto u =
        letterbox::amqp::parse_url("amqp://ops:s3cret@rabbit-1,rabbit-2:5673,[fd00::3]/orders");
    // The same through the API; `host` and `port` remain the first endpoint.
    u.set_endpoints({{"rabbit-1", 5672}, {"rabbit-2", 5673}, {"fd00::3", 5672}});

    letterbox::amqp::transport_options options;
    options.shuffle_endpoints = true;   // the default: clients spread over the nodes
    options.endpoint_shuffle_seed = 42; // for a test or a drill: the same order every run
    letterbox::amqp::transport t(io.get_executor(), u, options);
    // ... later, for a log line or a readiness probe:
    if (auto in_use = t.connected_endpoint())
        std::printf("connected to %s\n", in_use->to_string().c_str());
    //]
    CHECK(u.endpoints().size() == 3);
    CHECK(u.redacted() == "amqp://ops:***@rabbit-1:5672,rabbit-2:5673,[fd00::3]:5672/orders");
    CHECK_FALSE(t.connected_endpoint());
}

} // namespace unit_amqp_transport
