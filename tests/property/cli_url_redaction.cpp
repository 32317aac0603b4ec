// SPDX-License-Identifier: BSL-1.0
//
// Property (issue 16, section 2): a broker password never shows. A random password (any
// printable ASCII, URL delimiters `/ ? # @ :`, `%`, quotes and spaces included) is placed into a
// random URL shape, raw or percent-encoded, and every text a person could read is searched for it:
// - the CLI: `cli::broker_url` from --url and from $LETTERBOX_AMQP_URL (the message of its
//   usage error as `main` prints it), a URL given as a stray argument to `dlq list`, and
//   `cli::check_broker`'s report after connecting to a closed loopback port;
// - `amqp::try_parse_url`'s reason, `amqp::parse_url`'s exception and `url::redacted()`;
// - the AMQP transport: the exception of its URL-text constructor, and the error of an
//   operation after its connect to the closed port failed;
// - the ops endpoint's readiness check of that transport (`ops::connection_check`), whose
//   detail names no endpoint at all.
// Nothing connects anywhere but 127.0.0.1.
//
// Randomness comes only from RapidCheck, seeded with LETTERBOX_SEED by the shared test main.
// Replay: LETTERBOX_SEED=<n> ./letterbox_property_tests "[cli][redaction]", or the
// RC_PARAMS="reproduce=..." line RapidCheck prints.

#include "broker_connection.hpp"
#include "command_line.hpp"
#include "dlq_command.hpp"

#include <letterbox/amqp/transport.hpp>
#include <letterbox/amqp/url.hpp>
#include <letterbox/error.hpp>
#include <letterbox/ops/connection_check.hpp>

#include "support/check_property.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace property_cli_url_redaction {

namespace {

namespace cli = letterbox::cli;
namespace amqp = letterbox::amqp;

/// A TCP port on 127.0.0.1 that nothing listens on: bound, then released.
std::uint16_t closed_port() {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor a(
        io, boost::asio::ip::tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0));
    return a.local_endpoint().port();
}

/// The URL shapes: where the password goes, and how.
enum class shape {
    plain,           // amqp://user:PASSWORD@host:port/vhost, unencoded
    encoded,         // the same, percent-encoded: a valid URL
    tls,             // amqps://..., unencoded
    with_query,      // ...@host:port/vhost?heartbeat=10, unencoded
    mistyped_scheme, // amqp:/user:PASSWORD@host...
    no_scheme,       // user:PASSWORD@host:port
    other_scheme,    // http://user:PASSWORD@host/
    doubled_at,      // amqp://user:PASSWORD@@host/
    at_in_vhost,     // amqp://user:PASSWORD@host/v@x
    no_host,         // amqp://user:kPASSWORD (the '@host' forgotten)
};

std::ostream& operator<<(std::ostream& os, shape s) {
    static constexpr const char* names[] = {
        "plain",     "encoded",      "tls",        "with_query",  "mistyped_scheme",
        "no_scheme", "other_scheme", "doubled_at", "at_in_vhost", "no_host"};
    return os << names[static_cast<int>(s)];
}

struct url_case {
    std::string password;
    shape where = shape::plain;
    std::string user;
};

std::ostream& operator<<(std::ostream& os, const url_case& c) {
    return os << "password \"" << c.password << "\" in shape " << c.where << " for user \""
              << c.user << "\"";
}

rc::Gen<url_case> url_cases() {
    return rc::gen::exec([] {
        url_case c;
        // Printable ASCII (letters, digits and every delimiter a URL has), or mostly the
        // characters that end a part of a URL or of a message: spaces, quotes, / ? # @ : %.
        const auto any = rc::gen::inRange<char>(' ', '~' + 1);
        const auto hostile = rc::gen::elementOf(std::string(" '\"`/?#@:%&=+x7"));
        c.password = *rc::gen::suchThat(
            rc::gen::weightedOneOf<std::string>({{2, rc::gen::container<std::string>(any)},
                                                 {1, rc::gen::container<std::string>(hostile)}}),
            [](const std::string& p) { return p.size() >= 8 && p.size() <= 40; });
        c.where = static_cast<shape>(*rc::gen::inRange(0, 10));
        if (c.where == shape::no_host) {
            // That shape is a URL without an '@': with one, what follows it is the host, and
            // what precedes it the (hidden) password.
            std::erase(c.password, '@');
            c.password.resize(std::max<std::size_t>(c.password.size(), 8), 'x');
        }
        c.user = *rc::gen::element<std::string>("ops", "guest", "svc-relay", "a.b_c~d");
        return c;
    });
}

/// The URL text of `c` for a broker on 127.0.0.1:`port`, and the password as it stands in it.
std::pair<std::string, std::string> url_text(const url_case& c, std::uint16_t port) {
    const std::string host = "127.0.0.1:" + std::to_string(port);
    const std::string& p = c.password;
    const std::string& u = c.user;
    switch (c.where) {
    case shape::plain:
        return {"amqp://" + u + ":" + p + "@" + host + "/%2F", p};
    case shape::encoded: {
        const auto e = amqp::detail::percent_encode(p);
        return {"amqp://" + u + ":" + e + "@" + host + "/%2F", e};
    }
    case shape::tls:
        return {"amqps://" + u + ":" + p + "@" + host + "/", p};
    case shape::with_query:
        return {"amqp://" + u + ":" + p + "@" + host + "/%2F?heartbeat=10&channel_max=64", p};
    case shape::mistyped_scheme:
        return {"amqp:/" + u + ":" + p + "@" + host + "/", p};
    case shape::no_scheme:
        return {u + ":" + p + "@" + host, p};
    case shape::other_scheme:
        return {"http://" + u + ":" + p + "@" + host + "/", p};
    case shape::doubled_at:
        return {"amqp://" + u + ":" + p + "@@" + host + "/", p};
    case shape::at_in_vhost:
        return {"amqp://" + u + ":" + p + "@" + host + "/v@x", p};
    case shape::no_host:
        // A leading letter: "user:1234/..." without any '@' reads as a host and a port, and
        // nothing could tell it from one.
        return {"amqp://" + u + ":k" + p, "k" + p};
    }
    return {};
}

/// Fails the property when `text` (what `where` shows) holds the password.
void never_shows(const std::string& text, const url_case& c, const std::string& placed,
                 std::string_view where) {
    if (text.find(c.password) != std::string::npos || text.find(placed) != std::string::npos) {
        RC_FAIL(std::string(where) + " shows the password: " + text);
    }
}

/// What `main` prints for a usage error.
std::string as_main_prints(const std::exception& e) {
    return "letterbox: " + cli::printable(cli::redact_secrets(e.what()));
}

} // namespace

TEST_CASE("a random password in a random URL shape never appears in what the CLI, the URL "
          "parser, the AMQP transport or the ops readiness check show",
          "[cli][redaction][amqp]") {
    const std::uint16_t port = closed_port();
    test_support::check_property("cli/url_redaction", 150, [port] {
        const auto c = *url_cases();
        const auto [text, placed] = url_text(c, port);
        RC_TAG(c.where);

        // The URL parser.
        std::string why;
        const auto parsed = amqp::try_parse_url(text, why);
        never_shows(why, c, placed, "try_parse_url's reason");
        try {
            (void)amqp::parse_url(text);
        } catch (const std::exception& e) {
            never_shows(e.what(), c, placed, "parse_url's exception");
        }
        never_shows(amqp::redact_url_text(text), c, placed, "redact_url_text");
        if (parsed)
            never_shows(parsed->redacted(), c, placed, "url::redacted");

        // The CLI reads the URL from --url and from $LETTERBOX_AMQP_URL.
        std::map<std::string, std::string> vars{{"LETTERBOX_AMQP_URL", text}};
        const cli::environment env = [&vars](std::string_view name) -> std::optional<std::string> {
            const auto it = vars.find(std::string(name));
            return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
        };
        std::optional<amqp::url> accepted;
        for (const auto& given : {std::optional<std::string>(text), std::optional<std::string>()}) {
            try {
                accepted = cli::broker_url(given, std::nullopt, env);
                never_shows(accepted->redacted(), c, placed, "the CLI's endpoint");
            } catch (const std::exception& e) {
                never_shows(as_main_prints(e), c, placed, "the CLI's URL error");
            }
        }
        // A URL where an argument goes ("letterbox dlq list q <URL>").
        try {
            (void)cli::parse_dlq_arguments(std::vector<std::string>{"list", "q", text});
        } catch (const std::exception& e) {
            never_shows(as_main_prints(e), c, placed, "the CLI's usage error");
        }

        // Connecting, only to the closed port on 127.0.0.1.
        if (!parsed || parsed->host != "127.0.0.1")
            return;
        boost::asio::io_context io;
        auto guard = boost::asio::make_work_guard(io);
        std::ostringstream err;
        RC_ASSERT(cli::check_broker(io, *parsed, err) == cli::cannot_connect);
        never_shows(err.str(), c, placed, "the CLI's connect error");

        try {
            amqp::transport_options options;
            options.reconnect_delay_min = std::chrono::milliseconds{10};
            options.reconnect_delay_max = std::chrono::milliseconds{10};
            amqp::transport t(io.get_executor(), std::string_view(text), options);
            const auto check = letterbox::ops::connection_check(t);
            std::optional<std::error_code> result;
            t.async_queue_depth("q", [&result](std::error_code ec, std::uint32_t) { result = ec; });
            RC_ASSERT(cli::io_context_loop(io)([&] { return result.has_value(); },
                                               std::chrono::seconds{20}));
            RC_ASSERT(static_cast<bool>(*result));
            never_shows(result->message(), c, placed, "the transport's error");
            const auto ready = check();
            RC_ASSERT(!ready.ok);
            never_shows(ready.detail, c, placed, "the ops readiness check");
            bool closed = false;
            t.async_close([&closed](std::error_code) { closed = true; });
            cli::io_context_loop(io)([&closed] { return closed; }, std::chrono::seconds{5});
        } catch (const std::exception& e) {
            never_shows(e.what(), c, placed, "the transport's exception");
        }
    });
}

} // namespace property_cli_url_redaction
