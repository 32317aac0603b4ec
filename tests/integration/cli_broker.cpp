// SPDX-License-Identifier: BSL-1.0
// How `letterbox` reaches the broker, run as a child process: a server that is not an AMQP
// broker (exit code 3 with a hint, not 5), and the password from --password-file or
// $LETTERBOX_AMQP_PASSWORD instead of the command line (against the real broker).

#include <letterbox/amqp/url.hpp>
#include <letterbox/testing/temp_directory.hpp>

#include "cli_support.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace integration_cli_broker {

namespace {

using namespace cli_test;
namespace asio = boost::asio;

/// A TCP server on 127.0.0.1 that is no AMQP broker: for each connection it reads what the
/// client sends first (the AMQP protocol header), then answers `reply` (nothing: it closes at
/// once) and closes. It runs on its own thread for at most two minutes.
class not_a_broker {
public:
    explicit not_a_broker(std::string reply)
        : reply_(std::move(reply))
        , acceptor_(io_, asio::ip::tcp::endpoint(asio::ip::address_v4::loopback(), 0)) {
        accept();
        thread_ = std::thread([this] { io_.run_for(std::chrono::minutes{2}); });
    }
    ~not_a_broker() {
        io_.stop();
        thread_.join();
    }
    not_a_broker(const not_a_broker&) = delete;
    not_a_broker& operator=(const not_a_broker&) = delete;

    std::uint16_t port() const { return port_; }
    int connections() const { return connections_.load(); }

private:
    void accept() {
        acceptor_.async_accept([this](boost::system::error_code ec, asio::ip::tcp::socket s) {
            if (ec)
                return;
            ++connections_;
            auto socket = std::make_shared<asio::ip::tcp::socket>(std::move(s));
            if (reply_.empty()) {
                socket->close(); // closes at once
            } else {
                auto header = std::make_shared<std::array<char, 8>>();
                asio::async_read(*socket, asio::buffer(*header),
                                 [this, socket, header](boost::system::error_code, std::size_t) {
                                     asio::async_write(
                                         *socket, asio::buffer(reply_),
                                         [socket](boost::system::error_code, std::size_t) {
                                             boost::system::error_code ignored;
                                             socket->shutdown(asio::socket_base::shutdown_both,
                                                              ignored);
                                             socket->close(ignored);
                                         });
                                 });
            }
            accept();
        });
    }

    std::string reply_;
    asio::io_context io_;
    asio::ip::tcp::acceptor acceptor_;
    std::uint16_t port_ = acceptor_.local_endpoint().port();
    std::atomic<int> connections_{0};
    std::thread thread_;
};

std::string write_file(const letterbox::testing::temp_directory& dir, const std::string& name,
                       const std::string& text) {
    const auto path = (dir.path() / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

} // namespace

TEST_CASE("connecting to a server that is not an AMQP broker is exit code 3 with a hint",
          "[integration][cli]") {
    letterbox::testing::temp_directory dir;
    const auto topology = write_file(dir, "topology.json", R"({"exchanges": [{"name": "x"}]})");
    for (const std::string& reply :
         {std::string("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
                      "Connection: close\r\n\r\nThis is an HTTP server.\r\n"),
          std::string("SSH-2.0-OpenSSH_9.2\r\n"), std::string()}) {
        CAPTURE(reply);
        not_a_broker server(reply);
        const auto url = "amqp://guest:s3cret-pw@127.0.0.1:" + std::to_string(server.port()) + "/";
        for (const auto& args : std::vector<std::vector<std::string>>{
                 {"dlq", "list", "orders.dlq", "--url", url},
                 {"topology", "declare", "--file", topology, "--url", url}}) {
            CAPTURE(args[0]);
            const auto r = run_cli(args, {}, std::chrono::seconds{60});
            CHECK(r.status == 3);
            CHECK_THAT(r.err, Catch::Contains("is this an AMQP 0-9-1 broker?"));
            CHECK_THAT(r.err, Catch::Contains("amqp://guest:***@127.0.0.1:" +
                                              std::to_string(server.port())));
            CHECK(r.err.find("s3cret-pw") == std::string::npos);
            CHECK(r.out.empty());
        }
        CHECK(server.connections() >= 2);
    }
}

TEST_CASE("the broker password can come from --password-file or $LETTERBOX_AMQP_PASSWORD",
          "[integration][cli]") {
    const auto real = letterbox::amqp::parse_url(amqp_test::broker_url());
    // The URL on the command line holds no usable password; a redacted URL keeps the user.
    const std::string url = "amqp://" + real.user + "@127.0.0.1:" + std::to_string(real.port) +
                            "/" + (real.vhost == "/" ? "%2F" : real.vhost);
    letterbox::testing::temp_directory dir;
    const auto right = write_file(dir, "right", real.password + "\n");
    const auto wrong = write_file(dir, "wrong", "n0t-th3-pa55word\n");
    const std::string queue = "cli.no.such.queue.for.password.tests";

    // A missing queue (exit code 4) means the tool connected and logged in.
    const auto from_file = run_cli({"dlq", "list", queue, "--url", url, "--password-file", right},
                                   {{"LETTERBOX_AMQP_PASSWORD", "n0t-th3-pa55word"}});
    CHECK(from_file.status == 4);

    const auto from_env =
        run_cli({"dlq", "list", queue, "--url", url}, {{"LETTERBOX_AMQP_PASSWORD", real.password}});
    CHECK(from_env.status == 4);

    const auto refused = run_cli({"dlq", "list", queue, "--url", url, "--password-file", wrong});
    CHECK(refused.status == 3);
    CHECK_THAT(refused.err, Catch::Contains("access refused"));
    CHECK_THAT(refused.err, Catch::Contains("--password-file"));
    CHECK(refused.err.find("n0t-th3-pa55word") == std::string::npos);

    const auto missing =
        run_cli({"dlq", "list", queue, "--url", url, "--password-file", wrong + ".absent"});
    CHECK(missing.status == 2);
    CHECK_THAT(missing.err, Catch::Contains("cannot read the password file"));
}

} // namespace integration_cli_broker
