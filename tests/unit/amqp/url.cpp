// SPDX-License-Identifier: BSL-1.0

#include <letterbox/amqp/url.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <string>

using namespace std::chrono_literals;
using letterbox::amqp::parse_url;
using letterbox::amqp::try_parse_url;

TEST_CASE("amqp url: defaults", "[amqp][url]") {
    const auto u = parse_url("amqp://");
    CHECK_FALSE(u.tls);
    CHECK(u.host == "localhost");
    CHECK(u.port == 5672);
    CHECK(u.user == "guest");
    CHECK(u.password == "guest");
    CHECK(u.vhost == "/");
    CHECK_FALSE(u.heartbeat);
    CHECK(parse_url("amqps://broker").port == 5671);
    CHECK(parse_url("amqps://broker").tls);
}

TEST_CASE("amqp url: every part, percent-decoded", "[amqp][url]") {
    const auto u =
        parse_url("amqp://us%40er:p%3Ass%2Fw@rabbit.local:5673/my%2Fvhost"
                  "?heartbeat=10&frame_max=131072&channel_max=64&connection_timeout=2500");
    CHECK(u.user == "us@er");
    CHECK(u.password == "p:ss/w");
    CHECK(u.host == "rabbit.local");
    CHECK(u.port == 5673);
    CHECK(u.vhost == "my/vhost");
    CHECK(u.heartbeat == 10s);
    CHECK(u.frame_max == 131072u);
    CHECK(u.channel_max == 64);
    CHECK(u.connection_timeout == 2500ms);
}

TEST_CASE("amqp url: vhost forms", "[amqp][url]") {
    CHECK(parse_url("amqp://h").vhost == "/");
    CHECK(parse_url("amqp://h/").vhost == "/");
    CHECK(parse_url("amqp://h/%2F").vhost == "/");
    CHECK(parse_url("amqp://h/orders").vhost == "orders");
    CHECK(parse_url("amqp://guest:guest@127.0.0.1:5672/").vhost == "/");
}

TEST_CASE("amqp url: IPv6 hosts and user without password", "[amqp][url]") {
    const auto u = parse_url("amqp://alice@[::1]:5680/");
    CHECK(u.host == "::1");
    CHECK(u.port == 5680);
    CHECK(u.user == "alice");
    CHECK(u.password == "guest");
    CHECK(parse_url("amqp://[fe80::1]").host == "fe80::1");
}

TEST_CASE("amqp url: bad input gives a typed error that never shows the password", "[amqp][url]") {
    for (const char* bad :
         {"http://h", "amqp:/h", "amqp://h:0", "amqp://h:65536", "amqp://h:port",
          "amqp://h:", "amqp://h/a/b", "amqp://h/%zz", "amqp://h/%2", "amqp://u:s3cret%g@h",
          "amqp://h?heartbeat=-1", "amqp://h?heartbeat=70000", "amqp://h?frame_max=100",
          "amqp://h?channel_max=65536", "amqp://h?connection_timeout=0", "amqp://h?hearbeat=5",
          "amqp://[::1", "amqp://[::1]x"}) {
        CAPTURE(bad);
        std::string why;
        CHECK_FALSE(try_parse_url(bad, why));
        CHECK_THAT(why, Catch::StartsWith("invalid AMQP URL: "));
        CHECK(why.find("s3cret") == std::string::npos);
        try {
            (void)parse_url(bad);
            FAIL("accepted");
        } catch (const letterbox::error& e) {
            CHECK(e.code() == letterbox::errc::invalid_argument);
        }
    }
}

TEST_CASE("amqp url: redacted never contains the password", "[amqp][url]") {
    const auto u = parse_url("amqps://admin:hunter2@[::1]:5671/prod");
    CHECK(u.redacted() == "amqps://admin:***@[::1]:5671/prod");
    CHECK(parse_url(u.redacted()).vhost == "prod");
}

TEST_CASE("amqp url: TLS parameters on amqps", "[amqp][url]") {
    const auto plain = parse_url("amqps://h");
    CHECK(plain.tls);
    CHECK(plain.port == 5671);
    CHECK(plain.verify_peer);
    CHECK_FALSE(plain.cacertfile);
    CHECK_FALSE(plain.server_name);

    const auto u =
        parse_url("amqps://h?cacertfile=%2Fetc%2Fca%20dir%2Fca.pem&certfile=%2Fc.pem&keyfile=k.pem"
                  "&verify=verify_none&server_name_indication=broker.example");
    CHECK(u.cacertfile == "/etc/ca dir/ca.pem");
    CHECK(u.certfile == "/c.pem");
    CHECK(u.keyfile == "k.pem");
    CHECK_FALSE(u.verify_peer);
    CHECK(u.server_name == "broker.example");
    CHECK(parse_url("amqps://h?verify=verify_peer").verify_peer);
    CHECK(parse_url("amqps://h?server_name_indication=disable").server_name == "disable");

    for (const char* bad :
         {"amqp://h?cacertfile=/ca.pem", "amqp://h?verify=verify_none", "amqps://h?verify=maybe",
          "amqps://h?cacertfile=", "amqps://h?keyfile=%zz", "amqps://h?server_name_indication"}) {
        CAPTURE(bad);
        std::string why;
        CHECK_FALSE(try_parse_url(bad, why));
        CHECK_THAT(why, Catch::StartsWith("invalid AMQP URL: "));
    }
}
