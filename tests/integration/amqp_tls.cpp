// SPDX-License-Identifier: BSL-1.0
// amqps:// against the TLS listener of the broker tests/tools/rabbitmq.sh starts (a throwaway
// CA signs its certificate for localhost and 127.0.0.1; LETTERBOX_AMQPS_URL names it, with the
// CA's file as `cacertfile`).

#include <letterbox/amqp/connection.hpp>
#include <letterbox/amqp/transport.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/error.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace integration_amqp_tls {

namespace {

using namespace std::chrono_literals;

/// LETTERBOX_AMQPS_URL, or an empty string with a warning (the case then skips). When the broker
/// came from rabbitmq.sh (LETTERBOX_RABBITMQ_SCRIPT is set) a missing TLS listener fails.
std::string amqps_url() {
    const char* url = std::getenv("LETTERBOX_AMQPS_URL");
    if (url != nullptr && *url != '\0')
        return url;
    if (std::getenv("LETTERBOX_RABBITMQ_SCRIPT") != nullptr)
        FAIL("tests/tools/rabbitmq.sh started the broker without a TLS listener: is openssl "
             "installed? (make deps)");
    WARN("skipped: LETTERBOX_AMQPS_URL is not set");
    return {};
}

struct loop {
    boost::asio::io_context io;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{
        io.get_executor()};

    bool run_until(const std::function<bool()>& done, std::chrono::milliseconds timeout = 20s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!done()) {
            const auto now = std::chrono::steady_clock::now();
            if (now >= deadline)
                return false;
            io.run_one_for(deadline - now);
        }
        return true;
    }

    std::error_code connect(letterbox::amqp::connection& c, const letterbox::amqp::url& u) {
        std::optional<std::error_code> result;
        c.async_connect(u, [&](std::error_code ec) { result = ec; });
        if (!run_until([&] { return result.has_value(); }))
            return make_error_code(letterbox::errc::timed_out);
        return *result;
    }
};

/// The URL with `cacertfile` replaced by `file` in the same directory.
letterbox::amqp::url with_ca(letterbox::amqp::url u, const std::string& file) {
    REQUIRE(u.cacertfile);
    const auto slash = u.cacertfile->rfind('/');
    u.cacertfile = u.cacertfile->substr(0, slash + 1) + file;
    return u;
}

} // namespace

TEST_CASE("amqp tls: amqps connects, verifies the broker and carries messages",
          "[.integration][amqp][tls]") {
    const auto text = amqps_url();
    if (text.empty())
        return;
    const auto u = letterbox::amqp::parse_url(text);
    REQUIRE(u.tls);
    REQUIRE(u.verify_peer);
    loop l;

    letterbox::amqp::connection c(l.io.get_executor());
    REQUIRE(l.connect(c, u) == std::error_code{});
    std::optional<letterbox::amqp::connection::info> info;
    c.async_info([&](std::error_code ec, letterbox::amqp::connection::info i) {
        REQUIRE(!ec);
        info = std::move(i);
    });
    REQUIRE(l.run_until([&] { return info.has_value(); }));
    CHECK(info->frame_max >= 4096);
    CHECK(info->server_properties.find("product") != nullptr);
    std::optional<std::error_code> closed;
    c.async_close([&](std::error_code ec) { closed = ec; });
    REQUIRE(l.run_until([&] { return closed.has_value(); }));
    CHECK(*closed == std::error_code{});

    // The transport publishes and consumes over TLS like over TCP.
    letterbox::amqp::transport t(l.io.get_executor(), u);
    letterbox::topology::queue q;
    q.name = "letterbox.tls." + letterbox::to_string(letterbox::message_id_generator{}());
    q.arguments.set("x-expires", std::int64_t{600000});
    std::optional<std::error_code> declared;
    t.async_declare(q, [&](std::error_code ec) { declared = ec; });
    REQUIRE(l.run_until([&] { return declared.has_value(); }));
    REQUIRE(*declared == std::error_code{});
    letterbox::message m;
    m.id = letterbox::message_id_generator{}();
    m.routing_key = q.name;
    m.body = std::string(100000, 'x'); // several TLS records and AMQP frames
    std::optional<std::error_code> published;
    t.async_publish(m, [&](std::error_code ec) { published = ec; });
    REQUIRE(l.run_until([&] { return published.has_value(); }));
    REQUIRE(*published == std::error_code{});
    std::optional<std::optional<letterbox::delivery>> got;
    t.async_get(q.name, [&](std::error_code ec, std::optional<letterbox::delivery> d) {
        REQUIRE(!ec);
        got = std::move(d);
    });
    REQUIRE(l.run_until([&] { return got.has_value(); }));
    REQUIRE(got->has_value());
    CHECK((*got)->msg.body == m.body);
    CHECK((*got)->msg.id == m.id);
    std::optional<std::error_code> done;
    t.async_close([&](std::error_code ec) { done = ec; });
    REQUIRE(l.run_until([&] { return done.has_value(); }));
}

TEST_CASE("amqp tls: a broker certificate from an untrusted CA or for another name is refused",
          "[.integration][amqp][tls]") {
    const auto text = amqps_url();
    if (text.empty())
        return;
    const auto u = letterbox::amqp::parse_url(text);
    loop l;

    SECTION("untrusted CA") {
        letterbox::amqp::connection c(l.io.get_executor());
        const auto ec = l.connect(c, with_ca(u, "other-ca.pem"));
        INFO(ec.message());
        CHECK(ec);
        CHECK(ec.category() == boost::asio::error::get_ssl_category());
    }
    SECTION("another host name") {
        auto other = u;
        other.server_name = "not-this-broker.example";
        letterbox::amqp::connection c(l.io.get_executor());
        const auto ec = l.connect(c, other);
        INFO(ec.message());
        CHECK(ec);
        CHECK(ec.category() == boost::asio::error::get_ssl_category());
    }
    SECTION("verify_none accepts it (tests only)") {
        auto unchecked = with_ca(u, "other-ca.pem");
        unchecked.verify_peer = false;
        letterbox::amqp::connection c(l.io.get_executor());
        CHECK(l.connect(c, unchecked) == std::error_code{});
    }
    SECTION("a missing CA file is an error before any byte is sent") {
        letterbox::amqp::connection c(l.io.get_executor());
        CHECK(l.connect(c, with_ca(u, "no-such-file.pem")));
    }
}

} // namespace integration_amqp_tls
