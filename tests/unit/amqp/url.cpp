// SPDX-License-Identifier: BSL-1.0

#include <letterbox/amqp/url.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace unit_amqp_url {

using namespace std::chrono_literals;
using letterbox::amqp::endpoint;
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

TEST_CASE("amqp url: a comma-separated list of endpoints shares credentials, vhost and query",
          "[amqp][url][failover]") {
    const auto u = parse_url("amqp://ops:s3cret@rabbit-1:5673,rabbit-2,[::1]:5674,10.0.0.7/orders"
                             "?heartbeat=10");
    CHECK(u.endpoints() ==
          std::vector<endpoint>{
              {"rabbit-1", 5673}, {"rabbit-2", 5672}, {"::1", 5674}, {"10.0.0.7", 5672}});
    // host and port stay the first endpoint: code written for one broker reads the same.
    CHECK(u.host == "rabbit-1");
    CHECK(u.port == 5673);
    CHECK(u.more_endpoints.size() == 3);
    CHECK(u.user == "ops");
    CHECK(u.password == "s3cret");
    CHECK(u.vhost == "orders");
    CHECK(u.heartbeat == 10s);
    // Each port defaults to the scheme's; hosts are percent-decoded one by one.
    const auto tls = parse_url("amqps://a,b%2Dc:1/");
    CHECK(tls.endpoints() == std::vector<endpoint>{{"a", 5671}, {"b-c", 1}});
    // One endpoint: nothing more, as before.
    CHECK(parse_url("amqp://h:5680").more_endpoints.empty());
    CHECK(parse_url("amqp://").endpoints() == std::vector<endpoint>{{"localhost", 5672}});
    // A ',' in the password is the password's (the userinfo ends at the last '@').
    const auto comma = parse_url("amqp://ops:a,b@h1,h2");
    CHECK(comma.password == "a,b");
    CHECK(comma.endpoints().size() == 2);
}

TEST_CASE("amqp url: empty entries, duplicates, bad ports and more than 64 endpoints are "
          "refused without showing the password",
          "[amqp][url][failover]") {
    std::string many = "amqp://ops:s3cret@";
    for (int i = 0; i < 65; ++i)
        many += (i == 0 ? "" : ",") + std::string("h") + std::to_string(i);
    std::string sixty_four = "amqp://ops:s3cret@";
    for (int i = 0; i < 64; ++i)
        sixty_four += (i == 0 ? "" : ",") + std::string("h") + std::to_string(i);
    CHECK(parse_url(sixty_four).endpoints().size() == 64);
    // Hostile: a megabyte of commas is refused by the count, before anything is parsed.
    const std::string commas = "amqp://ops:s3cret@" + std::string(1 << 20, ',');

    struct refused {
        std::string text;
        const char* reason;
    };
    const refused cases[] = {
        {"amqp://ops:s3cret@h1,,h2", "endpoint 2 of 3 is empty"},
        {"amqp://ops:s3cret@h1,", "endpoint 2 of 2 is empty"},
        {"amqp://ops:s3cret@,h1/", "endpoint 1 of 2 is empty"},
        {"amqp://ops:s3cret@h1,:5673", "endpoint 2 of 2 has no host"},
        {"amqp://ops:s3cret@h1,[]:5673", "endpoint 2 of 2 has no host"},
        {"amqp://ops:s3cret@h1,h2:0", "endpoint 2 of 2: the port must be a number"},
        {"amqp://ops:s3cret@h1,h2:65536", "endpoint 2 of 2: the port must be a number"},
        {"amqp://ops:s3cret@h1,h2:x", "endpoint 2 of 2: the port must be a number"},
        {"amqp://ops:s3cret@h1,h2:", "endpoint 2 of 2: empty port"},
        {"amqp://ops:s3cret@h1,[::1", "endpoint 2 of 2: an IPv6 host needs a closing ']'"},
        {"amqp://ops:s3cret@h1,[::1]x", "endpoint 2 of 2: unexpected text after the IPv6 host"},
        {"amqp://ops:s3cret@h1,h%zz", "endpoint 2 of 2: bad percent-escape in the host"},
        {"amqp://ops:s3cret@h1,h2%2Ch3", "endpoint 2 of 2: a host cannot hold ','"},
        {"amqp://ops:s3cret@a%2Cb", "the endpoint: a host cannot hold ','"},
        {"amqp://ops:s3cret@h1,h2,h1", "endpoints 1 and 3 are the same host and port"},
        {"amqp://ops:s3cret@h1:5672,H1", "endpoints 1 and 2 are the same host and port"},
        {"amqp://ops:s3cret@[::1],[::1]:5672", "endpoints 1 and 2 are the same host and port"},
        {"amqps://ops:s3cret@h1,h1:5671", "endpoints 1 and 2 are the same host and port"},
        {many, "at most 64 endpoints, not 65"},
        {commas, "at most 64 endpoints, not 1048577"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.text.substr(0, 100));
        std::string why;
        CHECK_FALSE(try_parse_url(c.text, why));
        CHECK_THAT(why, Catch::StartsWith("invalid AMQP URL: ") && Catch::Contains(c.reason));
        CHECK(why.find("s3cret") == std::string::npos);
    }
    // Neither the same host on two ports nor two hosts on one port is a duplicate.
    CHECK(parse_url("amqp://h1:5672,h1:5673,h2:5673").endpoints().size() == 3);
}

TEST_CASE("amqp url: redacted shows every endpoint and parses back to the same URL",
          "[amqp][url][failover]") {
    const auto u = parse_url("amqps://admin:hunter2@r1:5671,[fe80::1]:5681,r3/prod?heartbeat=5");
    CHECK(u.redacted() == "amqps://admin:***@r1:5671,[fe80::1]:5681,r3:5671/prod");
    auto back = parse_url(u.redacted());
    CHECK(back.endpoints() == u.endpoints());
    CHECK(back.vhost == "prod");
}

TEST_CASE("amqp url: set_endpoints sets host, port and more_endpoints, and refuses what the "
          "parser refuses",
          "[amqp][url][failover]") {
    auto u = parse_url("amqp://ops:pw@old/v");
    u.set_endpoints({{"a", 1}, {"::1", 2}});
    CHECK(u.host == "a");
    CHECK(u.port == 1);
    CHECK(u.more_endpoints == std::vector<endpoint>{{"::1", 2}});
    CHECK(u.redacted() == "amqp://ops:***@a:1,[::1]:2/v");
    u.set_endpoints({{"b", 3}});
    CHECK(u.endpoints() == std::vector<endpoint>{{"b", 3}});

    const auto before = u;
    std::vector<endpoint> too_many;
    for (int i = 0; i < 65; ++i)
        too_many.push_back({"h" + std::to_string(i), 5672});
    for (const auto& bad : std::vector<std::vector<endpoint>>{
             {}, {{"", 5672}}, {{"h", 0}}, {{"h", 1}, {"H", 1}}, {{"a,b", 1}}, too_many}) {
        CAPTURE(bad.size());
        try {
            u.set_endpoints(bad);
            FAIL("accepted");
        } catch (const letterbox::error& e) {
            CHECK(e.code() == letterbox::errc::invalid_argument);
        }
        CHECK(u == before);
    }
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

TEST_CASE("amqp url: redact_url_text hides the password of every hostile URL shape",
          "[amqp][url]") {
    using letterbox::amqp::redact_url_text;
    struct shape {
        const char* text;
        const char* redacted;
    };
    // The password is "s3cret" (with '/', '?', '#', '@', ':', '%' around it where the shape
    // says), or the issue's "Sup3r+ss/wd==".
    const shape shapes[] = {
        // A password holding '/', '?', '#', ':' or '@', unencoded.
        {"amqp://ops:Sup3r+ss/wd==@127.0.0.1:5999/%2F", "amqp://ops:***@127.0.0.1:5999/%2F"},
        {"amqp://ops:q?s3cret@127.0.0.1:5999/", "amqp://ops:***@127.0.0.1:5999/"},
        {"amqp://ops:s3#cret@127.0.0.1/", "amqp://ops:***@127.0.0.1/"},
        {"amqp://ops:s3:cret@127.0.0.1/", "amqp://ops:***@127.0.0.1/"},
        {"amqp://ops:s3@cret@127.0.0.1/", "amqp://ops:***@127.0.0.1/"},
        {"amqp://ops:s3cret@@127.0.0.1/", "amqp://ops:***@127.0.0.1/"},
        {"amqps://ops:5672?s3cret=1&@h:5671/", "amqps://ops:***@h:5671/"},
        // A mistyped scheme, no scheme, another scheme.
        {"amqp:/ops:s3cret@127.0.0.1:5672/", "amqp:***@127.0.0.1:5672/"},
        {"amqp:ops:s3cret@h", "amqp:***@h"},
        {"ops:s3cret@127.0.0.1:5672", "ops:***@127.0.0.1:5672"},
        {"http://ops:s3cret@h/", "http://ops:***@h/"},
        {"amqp//ops:s3cret@h", "***@h"},
        {" amqp://ops:s3cret@h", "***@h"},
        // Percent-encoded text: kept encoded in the host part, hidden in the userinfo.
        {"amqp://ops:s3%63ret@h/%2F", "amqp://ops:***@h/%2F"},
        {"amqp://o%70s:s3cret@h", "amqp://***@h"},
        {"amqp://ops%3As3cret@h", "amqp://***@h"},
        // A user name that is not plain, a '#' before the userinfo ends.
        {"amqp://o#ps:s3cret@h", "amqp://***@h"},
        {"amqp://o/ps:s3cret@h", "amqp://***@h"},
        // An '@' further on (vhost, query): everything before it goes.
        {"amqp://ops:s3cret@h/vh@x", "amqp://ops:***@x"},
        {"amqp://ops:s3cret@h/?cacertfile=a@b", "amqp://ops:***@b"},
        // No '@': a ':' that does not start a port may start a password.
        {"amqp://ops:s3cret", "amqp://ops:***"},
        {"amqp://ops:s3cret/x?y#z", "amqp://ops:***"},
        {"amqp:/ops:s3cret", "amqp:/ops:***"},
        {"ops:s3cret", "ops:***"},
        {"amqp://[::1:s3cret", "amqp://[***"},
        {"amqp://[::1]:s3cret/", "amqp://[::1]:***"},
        // Endpoint lists: each endpoint may have a port; anything else after a ':' is hidden.
        {"amqp://h1:5672,ops:s3cret", "amqp://h1:5672,ops:***"},
        {"amqp://h1,[::1]:s3cret/", "amqp://h1,[::1]:***"},
        {"amqp://h1,[::1:s3cret", "amqp://h1,[***"},
        {"amqp://ops:s3cret,h2:5672/", "amqp://ops:***"},
        {"amqp://ops:s3cret@h1:5672,h2:5673/v", "amqp://ops:***@h1:5672,h2:5673/v"},
        // Nothing to hide.
        {"amqp://ops@h:5672/v", "amqp://ops@h:5672/v"},
        {"amqp://h:5672/v?heartbeat=10", "amqp://h:5672/v?heartbeat=10"},
        {"amqp://[::1]:5672/", "amqp://[::1]:5672/"},
        {"amqp://h1:5672,[::1]:5673,h3/v", "amqp://h1:5672,[::1]:5673,h3/v"},
        {"amqp://h1,h2?heartbeat=10", "amqp://h1,h2?heartbeat=10"},
        {"amqp://h:", "amqp://h:"},
        {"", ""},
    };
    for (const auto& s : shapes) {
        CAPTURE(s.text);
        const auto r = redact_url_text(s.text);
        CHECK(r == s.redacted);
        CHECK(r.find("s3cret") == std::string::npos);
        CHECK(r.find("cret") == std::string::npos);
        CHECK(r.find("wd==") == std::string::npos);
        CHECK(redact_url_text(r) == r); // redacting twice changes nothing
    }
}

TEST_CASE("amqp url: a parse error never names text that may be part of a password",
          "[amqp][url]") {
    // The '?' of the password starts the "query", so the rest of the password looks like an
    // unknown key: it must not be echoed.
    for (const char* bad : {"amqp://ops:5672?s3cret@127.0.0.1/", "amqp://ops:5672?s3cret=1&@h/",
                            "amqp://ops:5672/s3cret@h/"}) {
        CAPTURE(bad);
        std::string why;
        CHECK_FALSE(try_parse_url(bad, why));
        CHECK(why.find("s3cret") == std::string::npos);
        CHECK_THAT(why, Catch::Contains("must be percent-encoded"));
    }
    // Without an '@' after it, an unknown key is named: it is a typo worth showing.
    std::string why;
    CHECK_FALSE(try_parse_url("amqp://h?hearbeat=5", why));
    CHECK_THAT(why, Catch::Contains("'hearbeat'"));
}

} // namespace unit_amqp_url
