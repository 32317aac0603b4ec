// SPDX-License-Identifier: BSL-1.0
// `letterbox`: the command-line tool of letterbox (docs/cli.md). Dead-letter queues and topology
// over a RabbitMQ broker (amqp::transport), the outbox over an SQLite file.

#include "command_line.hpp"
#include "dlq_command.hpp"
#include "outbox_command.hpp"
#include "topology_command.hpp"

#include <letterbox/amqp/transport.hpp>
#include <letterbox/amqp/transport_options.hpp>
#include <letterbox/amqp/url.hpp>
#include <letterbox/version.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace {

namespace cli = letterbox::cli;

constexpr std::string_view general_usage =
    "usage: letterbox <group> <command> [options]\n"
    "\n"
    "  letterbox dlq list|show|replay|purge|export <queue> ...   dead-letter queues (AMQP)\n"
    "  letterbox outbox status|retry|purge --db FILE ...         an SQLite outbox\n"
    "  letterbox topology declare --file FILE ...                declare exchanges, queues, "
    "bindings\n"
    "\n"
    "The broker is --url or $LETTERBOX_AMQP_URL (amqp://user:password@host:port/vhost); its\n"
    "password is never printed. `letterbox <group> --help` for a group's commands and options;\n"
    "docs/cli.md for examples.\n"
    "\n";

void print_version(std::ostream& out) {
    out << "letterbox " << LETTERBOX_VERSION_MAJOR << "." << LETTERBOX_VERSION_MINOR << "."
        << LETTERBOX_VERSION_PATCH << "\n";
}

/// The broker URL of the command line or the environment. Throws `usage_failure`.
letterbox::amqp::url broker_url(const std::optional<std::string>& given) {
    std::string text;
    if (given) {
        text = *given;
    } else if (const char* env = std::getenv("LETTERBOX_AMQP_URL"); env != nullptr && *env) {
        text = env;
    } else {
        throw cli::usage_failure("no broker URL: pass --url amqp://user:password@host:5672/ or set "
                                 "LETTERBOX_AMQP_URL");
    }
    std::string why;
    auto u = letterbox::amqp::try_parse_url(text, why);
    if (!u)
        throw cli::usage_failure("bad broker URL " + cli::redact_url_text(text) + ": " + why +
                                 "; check --url");
    return *u;
}

/// Whether a TCP connection to the broker opens, within the URL's connection timeout (10 s by
/// default): the transport reconnects quietly, so a refused or unreachable broker is diagnosed
/// here, with the system's reason.
std::error_code probe(boost::asio::io_context& io, const letterbox::amqp::url& u) {
    namespace ip = boost::asio::ip;
    const auto timeout = u.connection_timeout.value_or(std::chrono::milliseconds{10'000});
    ip::tcp::resolver resolver(io);
    ip::tcp::socket socket(io);
    std::optional<std::error_code> result;
    resolver.async_resolve(
        u.host, std::to_string(u.port),
        [&](std::error_code ec, const ip::tcp::resolver::results_type& hosts) {
            if (ec) {
                result = ec;
                return;
            }
            boost::asio::async_connect(
                socket, hosts, [&](std::error_code e, const ip::tcp::endpoint&) { result = e; });
        });
    const bool done = cli::io_context_loop(io)([&] { return result.has_value(); }, timeout);
    if (!done) {
        resolver.cancel();
        boost::system::error_code ignored;
        socket.close(ignored);
        // Let the cancelled operations finish before the locals they refer to go.
        cli::io_context_loop(io)([&] { return result.has_value(); }, std::chrono::seconds{5});
        return make_error_code(std::errc::timed_out);
    }
    boost::system::error_code ignored;
    socket.close(ignored);
    return *result;
}

/// Runs `body(transport, loop)` on a transport connected to `u`; closes it afterwards.
template <class Body>
int with_broker(const letterbox::amqp::url& u, Body body) {
    boost::asio::io_context io;
    auto guard = boost::asio::make_work_guard(io);
    if (const auto ec = probe(io, u)) {
        std::cerr << "letterbox: cannot connect to " << u.redacted() << ": " << ec.message()
                  << "; is RabbitMQ running? check --url\n";
        return cli::cannot_connect;
    }
    letterbox::amqp::transport_options options;
    options.connection_name = "letterbox-cli";
    options.reconnect_delay_max = std::chrono::milliseconds{1000};
    int code = cli::internal;
    {
        letterbox::amqp::transport transport(io.get_executor(), u, options);
        const auto loop = cli::io_context_loop(io);
        code = body(transport, loop);
        bool closed = false;
        transport.async_close([&closed](std::error_code) { closed = true; });
        loop([&closed] { return closed; }, std::chrono::seconds{5});
    }
    guard.reset();
    io.run_for(std::chrono::milliseconds{200}); // what the close left to finish
    return code;
}

int run(const std::vector<std::string>& args) {
    if (args.empty()) {
        std::cerr << general_usage << cli::exit_code_help;
        return cli::usage_error;
    }
    const std::string& group = args[0];
    if (group == "--help" || group == "-h" || group == "help") {
        std::cout << general_usage << cli::exit_code_help;
        return cli::ok;
    }
    if (group == "--version") {
        print_version(std::cout);
        return cli::ok;
    }
    const std::span<const std::string> rest(args.data() + 1, args.size() - 1);
    bool help = false;
    for (const auto& a : rest)
        help = help || a == "--help" || a == "-h";

    if (group == "dlq") {
        if (help) {
            std::cout << cli::dlq_usage << "\n" << cli::exit_code_help;
            return cli::ok;
        }
        auto a = cli::parse_dlq_arguments(rest);
        const auto u = broker_url(a.url);
        a.endpoint = u.redacted();
        a.progress = ::isatty(STDERR_FILENO) == 1;
        return with_broker(u, [&](letterbox::amqp::transport& t, const cli::event_loop& loop) {
            return cli::run_dlq(t, a, std::cout, std::cerr, loop);
        });
    }
    if (group == "outbox") {
        if (help) {
            std::cout << cli::outbox_usage << "\n" << cli::exit_code_help;
            return cli::ok;
        }
        return cli::run_outbox(cli::parse_outbox_arguments(rest), std::cout, std::cerr);
    }
    if (group == "topology") {
        if (help) {
            std::cout << cli::topology_usage << "\n" << cli::exit_code_help;
            return cli::ok;
        }
        auto a = cli::parse_topology_arguments(rest);
        const auto plan = cli::read_topology_file(a.file); // before connecting: fail fast
        const auto u = broker_url(a.url);
        a.endpoint = u.redacted();
        return with_broker(u, [&](letterbox::amqp::transport& t, const cli::event_loop& loop) {
            return cli::run_topology(t, plan, a, std::cout, std::cerr, loop);
        });
    }
    throw cli::usage_failure("unknown command group '" + group +
                             "' (expected dlq, outbox or topology; see `letterbox --help`)");
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i)
        args.emplace_back(argv[i]);
    try {
        return run(args);
    } catch (const cli::usage_failure& e) {
        std::cerr << "letterbox: " << cli::redact_url_text(e.what()) << "\n";
        return cli::usage_error;
    } catch (const std::exception& e) {
        std::cerr << "letterbox: internal error: " << cli::redact_url_text(e.what())
                  << "; please report it\n";
        return cli::internal;
    }
}
