// SPDX-License-Identifier: BSL-1.0
// A slowloris client against http_server on loopback, with the default options: more sockets
// than max_connections, some sending nothing, some sending a header byte per second, some idle
// keep-alive connections, each reopened whenever the server closes it. Meanwhile a probe asks
// /health/live every 700 ms, as a Kubernetes liveness probe would, and every probe must get its
// 200 within 2 s. Before, the capped server closed the probes' connections unanswered for as
// long as the attack lasted.

#include <letterbox/ops/http_server.hpp>
#include <letterbox/ops/http_server_options.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace integration_ops_slowloris {

namespace {

using namespace std::chrono_literals;
using tcp = boost::asio::ip::tcp;

enum class kind { silent, slow, idle };

/// One attacking socket: connects, behaves as its kind says, and reconnects when the server
/// closes it, while `reconnects_left` lasts.
struct attacker : std::enable_shared_from_this<attacker> {
    boost::asio::io_context& io;
    tcp::endpoint target;
    kind k;
    std::size_t& reconnects_left;
    std::size_t& open;
    tcp::socket sock{io};
    boost::asio::steady_timer pause{io};
    std::array<char, 1024> chunk{};
    std::string received;
    std::size_t sent_bytes = 0;
    bool connected = false;
    bool stopped = false;
    const std::string slow_request =
        "GET /queues HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + std::string(2000, 'a') + "\r\n\r\n";
    const std::string idle_request = "GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

    attacker(boost::asio::io_context& i, tcp::endpoint t, kind kk, std::size_t& left,
             std::size_t& o)
        : io(i)
        , target(t)
        , k(kk)
        , reconnects_left(left)
        , open(o) {}

    void connect() {
        if (stopped)
            return;
        sock = tcp::socket(io);
        received.clear();
        sent_bytes = 0;
        sock.async_connect(target, [self = shared_from_this()](boost::system::error_code ec) {
            self->on_connect(ec);
        });
    }
    void on_connect(boost::system::error_code ec) {
        if (ec)
            return again();
        connected = true;
        ++open;
        if (k == kind::idle)
            boost::asio::async_write(
                sock, boost::asio::buffer(idle_request),
                [self = shared_from_this()](boost::system::error_code, std::size_t) {});
        read();
    }
    void read() {
        sock.async_read_some(
            boost::asio::buffer(chunk),
            [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                self->received.append(self->chunk.data(), n);
                if (ec)
                    return self->again(); // closed by the server: open another
                self->read();
            });
    }
    /// A slow one sends its next header byte (called once a second).
    void tick() {
        if (k != kind::slow || !connected || sent_bytes >= slow_request.size() - 4)
            return;
        boost::asio::async_write(
            sock, boost::asio::buffer(slow_request.data() + sent_bytes, 1),
            [self = shared_from_this()](boost::system::error_code, std::size_t) {});
        ++sent_bytes;
    }
    void again() {
        if (connected) {
            connected = false;
            --open;
        }
        boost::system::error_code ignored;
        sock.close(ignored);
        if (stopped || reconnects_left == 0)
            return;
        --reconnects_left;
        // A moment later, as attack tools do (at once, the attackers would only take each
        // other's places as fast as the loop runs).
        pause.expires_after(200ms);
        pause.async_wait([self = shared_from_this()](boost::system::error_code ec) {
            if (!ec)
                self->connect();
        });
    }
    void stop() {
        stopped = true;
        pause.cancel();
        boost::system::error_code ignored;
        sock.close(ignored);
    }
};

/// One liveness probe: a new connection, GET /health/live, the status and how long it took.
struct probe_result {
    std::optional<int> status;
    std::chrono::milliseconds took{};
    std::string error;
};

struct probe : std::enable_shared_from_this<probe> {
    boost::asio::io_context& io;
    tcp::endpoint target;
    tcp::socket sock{io};
    boost::asio::steady_timer deadline{io};
    std::array<char, 1024> chunk{};
    std::string received;
    std::string request;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    std::optional<probe_result> result;

    probe(boost::asio::io_context& i, tcp::endpoint t)
        : io(i)
        , target(t)
        , request("GET /health/live HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(t.port()) +
                  "\r\nConnection: close\r\n\r\n") {}

    void run(std::chrono::milliseconds limit) {
        deadline.expires_after(limit);
        deadline.async_wait([self = shared_from_this()](boost::system::error_code ec) {
            if (!ec)
                self->finish("no answer within the deadline");
        });
        sock.async_connect(target, [self = shared_from_this()](boost::system::error_code ec) {
            if (ec)
                return self->finish("connect: " + ec.message());
            boost::asio::async_write(self->sock, boost::asio::buffer(self->request),
                                     [self](boost::system::error_code e, std::size_t) {
                                         if (e)
                                             return self->finish("write: " + e.message());
                                         self->read();
                                     });
        });
    }
    void read() {
        sock.async_read_some(boost::asio::buffer(chunk), [self = shared_from_this()](
                                                             boost::system::error_code ec,
                                                             std::size_t n) {
            self->received.append(self->chunk.data(), n);
            if (self->received.find("\r\n\r\n") != std::string::npos && self->received.size() >= 12)
                return self->finish({});
            if (ec)
                return self->finish(self->received.empty()
                                        ? "the connection was closed without a response (" +
                                              ec.message() + ")"
                                        : "incomplete response");
            self->read();
        });
    }
    void finish(std::string error) {
        if (result)
            return;
        probe_result r;
        r.took = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - start);
        r.error = std::move(error);
        if (r.error.empty())
            r.status = std::stoi(received.substr(9, 3));
        result = std::move(r);
        deadline.cancel();
        boost::system::error_code ignored;
        sock.close(ignored);
    }
};

} // namespace

TEST_CASE("ops http under a slowloris attack: /health/live answers every probe within 2 s",
          "[integration][ops][slowloris]") {
    boost::asio::io_context io;
    letterbox::ops::http_server_options o; // the defaults, as deployed
    o.port = 0;
    o.token = "slowloris-test-token";
    std::size_t cap_log_lines = 0;
    o.log = [&](std::string_view line) {
        if (line.find("max_connections") != std::string_view::npos)
            ++cap_log_lines;
    };
    const auto cap = o.max_connections;
    letterbox::ops::http_server server(io.get_executor(), o);
    REQUIRE_FALSE(server.listen());
    const tcp::endpoint target(boost::asio::ip::make_address("127.0.0.1"),
                               server.local_endpoint().port());

    // 35 silent, 35 slow and 30 idle keep-alive sockets: 100, over the cap of 64.
    std::size_t reconnects_left = 50'000;
    std::size_t open = 0;
    std::vector<std::shared_ptr<attacker>> attackers;
    for (std::size_t i = 0; i < 100; ++i) {
        const kind k = i < 35 ? kind::silent : i < 70 ? kind::slow : kind::idle;
        attackers.push_back(std::make_shared<attacker>(io, target, k, reconnects_left, open));
        attackers.back()->connect();
    }
    boost::asio::steady_timer ticker(io);
    std::function<void(boost::system::error_code)> tick = [&](boost::system::error_code ec) {
        if (ec)
            return;
        for (auto& a : attackers)
            a->tick();
        ticker.expires_after(1s);
        ticker.async_wait(tick);
    };
    ticker.expires_after(1s);
    ticker.async_wait(tick);

    const auto run_for = [&](std::chrono::milliseconds d, const std::function<bool()>& done) {
        const auto end = std::chrono::steady_clock::now() + d;
        for (std::size_t step = 0; step < 10'000'000; ++step) {
            if (done() || std::chrono::steady_clock::now() >= end)
                return;
            io.restart();
            io.run_one_for(5ms);
        }
    };
    // The attack takes hold before the first probe.
    run_for(3s, [&] { return open >= cap; });
    INFO("attacking sockets open: " << open);
    CHECK(open >= cap);

    // Probes for 8 s: longer than the read and idle timeouts, so the attackers' sockets are
    // also closed and reopened by those while it lasts.
    std::vector<probe_result> results;
    for (int i = 0; i < 12; ++i) {
        auto p = std::make_shared<probe>(io, target);
        p->run(2s);
        run_for(3s, [&] { return p->result.has_value(); });
        REQUIRE(p->result.has_value());
        results.push_back(*p->result);
        run_for(700ms, [] { return false; });
    }
    const auto still_open = open;

    for (auto& a : attackers)
        a->stop();
    ticker.cancel();
    server.stop();
    run_for(2s, [] { return false; });

    for (std::size_t i = 0; i < results.size(); ++i) {
        INFO("probe " << i << ": " << (results[i].status ? std::to_string(*results[i].status) : "-")
                      << " after " << results[i].took.count() << " ms " << results[i].error);
        CHECK(results[i].status == 200);
        CHECK(results[i].took < 2s);
    }
    INFO("attacking sockets open at the end: " << still_open << ", reconnections left "
                                               << reconnects_left);
    CHECK(still_open >= cap / 2); // the attack was still held
    CHECK(cap_log_lines > 0);     // and the cap was reached
}

} // namespace integration_ops_slowloris
