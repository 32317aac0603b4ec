// SPDX-License-Identifier: BSL-1.0
#pragma once

// How `letterbox dlq` and `letterbox topology` reach the broker: the URL (--url or
// $LETTERBOX_AMQP_URL) and its password (--password-file or $LETTERBOX_AMQP_PASSWORD), a first
// AMQP handshake that tells an unreachable broker, bad credentials and a server that is no AMQP
// broker apart, and the transport the command then runs on.

#include "command_line.hpp"

#include <letterbox/amqp/connection.hpp>
#include <letterbox/amqp/transport.hpp>
#include <letterbox/amqp/transport_options.hpp>
#include <letterbox/amqp/url.hpp>
#include <letterbox/error.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::cli {

/// Reads an environment variable: the value, or `std::nullopt` when it is unset or empty.
/// `process_environment` reads this process's; tests pass their own.
using environment = std::function<std::optional<std::string>(std::string_view name)>;

inline std::optional<std::string> process_environment(std::string_view name) {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr || *value == '\0')
        return std::nullopt;
    return std::string(value);
}

/// The longest password file `broker_url` reads: it holds a password, not a document.
inline constexpr std::size_t max_password_file_size = 4096;

/// The password in the file at `path`: its content without one trailing line end (`\n` or
/// `\r\n`). Throws `usage_failure` (naming the file, never its content) when it cannot be read,
/// is empty, or is larger than `max_password_file_size`.
inline std::string read_password_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw usage_failure("cannot read the password file '" + shown(path) +
                            "'; check --password-file");
    std::string text;
    char buffer[1024];
    while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
        text.append(buffer, static_cast<std::size_t>(in.gcount()));
        if (text.size() > max_password_file_size)
            throw usage_failure("the password file '" + shown(path) + "' is larger than " +
                                std::to_string(max_password_file_size) +
                                " bytes; it must hold the password only");
    }
    if (in.bad())
        throw usage_failure("cannot read the password file '" + shown(path) +
                            "'; check --password-file");
    if (!text.empty() && text.back() == '\n')
        text.pop_back();
    if (!text.empty() && text.back() == '\r')
        text.pop_back();
    if (text.empty())
        throw usage_failure("the password file '" + shown(path) +
                            "' is empty; check --password-file");
    return text;
}

/// The broker URL to connect to: `given` (`--url`), else `$LETTERBOX_AMQP_URL`; its password
/// replaced by the content of `password_file` (`--password-file`) when given, else by
/// `$LETTERBOX_AMQP_PASSWORD` when set. Neither of those two is ever on the command line, so
/// the password stays out of `/proc/<pid>/cmdline` and shell history.
///
/// Throws `usage_failure` for a missing or invalid URL and an unreadable password file; the
/// message shows the URL through `amqp::redact_url_text`, never its password.
inline amqp::url broker_url(const std::optional<std::string>& given,
                            const std::optional<std::string>& password_file,
                            const environment& env = process_environment) {
    std::string text;
    std::string source = "--url";
    if (given) {
        text = *given;
    } else if (auto from_env = env("LETTERBOX_AMQP_URL")) {
        text = std::move(*from_env);
        source = "$LETTERBOX_AMQP_URL";
    } else {
        throw usage_failure("no broker URL: pass --url amqp://user@host:5672/ or set "
                            "LETTERBOX_AMQP_URL (the password: --password-file FILE or "
                            "LETTERBOX_AMQP_PASSWORD)");
    }
    std::string why;
    auto u = amqp::try_parse_url(text, why);
    if (!u)
        throw usage_failure("bad broker URL " + amqp::redact_url_text(text) + " (from " + source +
                            "): " + why + "; check " + source);
    if (password_file)
        u->password = read_password_file(*password_file);
    else if (auto password = env("LETTERBOX_AMQP_PASSWORD"))
        u->password = std::move(*password);
    return *u;
}

/// Connects to `u` once and runs the AMQP handshake, within the URL's `connection_timeout`
/// (10 s when it has none), then closes. Returns the exit code: `ok`, or `cannot_connect` after
/// a message on `err` that says why and what to check: the system's reason for an unreachable
/// broker, bad credentials or vhost, or, for a server that answers with something other than
/// AMQP 0-9-1 (an HTTP server, say) or closes the connection at once, "is this an AMQP 0-9-1
/// broker?". The URL is shown as `u.redacted()`.
inline int check_broker(boost::asio::io_context& io, const amqp::url& u, std::ostream& err) {
    const auto timeout = u.connection_timeout.value_or(std::chrono::milliseconds{10'000});
    // One endpoint after the other, as the transport fails over: the broker is reachable when
    // one of them answers. The last endpoint's failure is the one reported.
    std::error_code ec;
    for (const auto& at : u.endpoints()) {
        auto probe_url = u;
        probe_url.host = at.host;
        probe_url.port = at.port;
        probe_url.more_endpoints.clear();
        probe_url.connection_timeout = timeout;
        std::optional<std::error_code> result;
        {
            amqp::connection c(io.get_executor(), "letterbox-cli");
            c.async_connect(probe_url, [&result](std::error_code e) { result = e; });
            // The connection bounds its handshake by the timeout; the margin only guards this
            // loop.
            const bool done = io_context_loop(io)([&] { return result.has_value(); },
                                                  timeout + std::chrono::seconds{5});
            if (!done)
                result = make_error_code(errc::timed_out);
            bool closed = false;
            c.async_close([&closed](std::error_code) { closed = true; });
            io_context_loop(io)([&closed] { return closed; }, std::chrono::seconds{5});
        }
        ec = *result;
        if (!ec)
            return ok;
    }
    err << "letterbox: cannot connect to " << u.redacted() << ": ";
    if (ec.category() != letterbox::error_category()) {
        // The system's (or TLS's) reason: refused, unreachable, unknown host, certificate...
        err << ec.message() << "; is RabbitMQ running? check --url\n";
    } else if (ec == errc::access_refused) {
        err << ec.message()
            << "; check the user and password (--url, --password-file or "
               "$LETTERBOX_AMQP_PASSWORD) and the vhost\n";
    } else if (ec == errc::not_allowed) {
        err << ec.message() << "; check the vhost in --url and the user's permissions on it\n";
    } else if (ec == errc::timed_out) {
        err << "no AMQP handshake within "
            << std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()
            << " ms; is this an AMQP 0-9-1 broker, and is it overloaded? check the host and "
               "port in --url\n";
    } else {
        // Frame errors, unexpected frames, a close before connection.start: the server does not
        // speak AMQP 0-9-1 (an HTTP server, the management port, another protocol).
        err << "the server did not complete an AMQP 0-9-1 handshake (" << ec.message()
            << "); is this an AMQP 0-9-1 broker? check the host and port in --url (RabbitMQ "
               "listens on 5672, 5671 for amqps)\n";
    }
    return cannot_connect;
}

/// Runs `body(transport, loop)` on an `amqp::transport` connected to `u`, after
/// `check_broker`; closes the transport afterwards. Returns `body`'s exit code, or
/// `check_broker`'s failure.
template <class Body>
int with_broker(const amqp::url& u, std::ostream& err, Body body) {
    boost::asio::io_context io;
    auto guard = boost::asio::make_work_guard(io);
    if (const int code = check_broker(io, u, err); code != ok)
        return code;
    amqp::transport_options options;
    options.connection_name = "letterbox-cli";
    options.reconnect_delay_max = std::chrono::milliseconds{1000};
    int code = internal;
    {
        amqp::transport transport(io.get_executor(), u, options);
        const auto loop = io_context_loop(io);
        code = body(transport, loop);
        bool closed = false;
        transport.async_close([&closed](std::error_code) { closed = true; });
        loop([&closed] { return closed; }, std::chrono::seconds{5});
    }
    guard.reset();
    io.run_for(std::chrono::milliseconds{200}); // what the close left to finish
    return code;
}

} // namespace letterbox::cli
