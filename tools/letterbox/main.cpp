// SPDX-License-Identifier: BSL-1.0
// `letterbox`: the command-line tool of letterbox (docs/cli.md). Dead-letter queues and topology
// over a RabbitMQ broker (amqp::transport), the outbox over an SQLite file.

#include "broker_connection.hpp"
#include "command_line.hpp"
#include "dlq_command.hpp"
#include "outbox_command.hpp"
#include "topology_check_command.hpp"
#include "topology_command.hpp"

#include <letterbox/amqp/codec/field_table.hpp>
#include <letterbox/amqp/transport.hpp>
#include <letterbox/version.hpp>

#include <unistd.h>

#include <exception>
#include <iostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace cli = letterbox::cli;

// A topology file's argument tables become AMQP field tables: the file may nest them no deeper
// than the codec encodes.
static_assert(cli::max_topology_field_depth == letterbox::amqp::codec::max_field_depth);

constexpr std::string_view general_usage =
    "usage: letterbox <group> <command> [options]\n"
    "\n"
    "  letterbox dlq list|show|replay|purge|export <queue> ...   dead-letter queues (AMQP)\n"
    "  letterbox outbox status|retry|purge --db FILE ...         an SQLite outbox\n"
    "  letterbox topology declare --file FILE ...                declare exchanges, queues, "
    "bindings\n"
    "  letterbox topology check FILE ...                         lint a topology or a "
    "definitions export\n"
    "\n"
    "The broker is --url or $LETTERBOX_AMQP_URL (amqp://user@host:port/vhost); the password\n"
    "is --password-file FILE or $LETTERBOX_AMQP_PASSWORD (which keep it off the command line),\n"
    "else the URL's. It is never printed. `letterbox <group> --help` for a group's commands\n"
    "and options; docs/cli.md for examples.\n"
    "\n";

void print_version(std::ostream& out) {
    out << "letterbox " << LETTERBOX_VERSION_MAJOR << "." << LETTERBOX_VERSION_MINOR << "."
        << LETTERBOX_VERSION_PATCH << "\n";
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
        const auto u = cli::broker_url(a.url, a.password_file);
        a.endpoint = u.redacted();
        a.progress = ::isatty(STDERR_FILENO) == 1;
        return cli::with_broker(u, std::cerr,
                                [&](letterbox::amqp::transport& t, const cli::event_loop& loop) {
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
    if (group == "topology" && !rest.empty() && rest[0] == "check") {
        if (help) {
            std::cout << cli::topology_check_usage;
            return cli::ok;
        }
        auto a = cli::parse_topology_check_arguments(rest.subspan(1));
        const auto input = cli::read_topology_check_input(a); // before connecting: fail fast
        if (!a.url)
            return cli::report_topology_check(a, input, std::cout);
        const auto u = cli::broker_url(a.url, a.password_file);
        a.endpoint = u.redacted();
        return cli::with_broker(
            u, std::cerr, [&](letterbox::amqp::transport& t, const cli::event_loop& loop) {
                std::vector<std::vector<letterbox::lint::finding>> live;
                int status = cli::ok;
                for (const auto& topology : input.topologies) {
                    auto found = cli::look_up_queues(t, topology, a, std::cerr, loop, status);
                    if (!found)
                        return status;
                    live.push_back(std::move(*found));
                }
                return cli::report_topology_check(a, input, std::cout, live);
            });
    }
    if (group == "topology") {
        if (help) {
            std::cout << cli::topology_usage << "\n" << cli::exit_code_help;
            return cli::ok;
        }
        auto a = cli::parse_topology_arguments(rest);
        const auto plan = cli::read_topology_file(a.file); // before connecting: fail fast
        const auto u = cli::broker_url(a.url, a.password_file);
        a.endpoint = u.redacted();
        return cli::with_broker(
            u, std::cerr, [&](letterbox::amqp::transport& t, const cli::event_loop& loop) {
                return cli::run_topology(t, plan, a, std::cout, std::cerr, loop);
            });
    }
    throw cli::usage_failure("unknown command group '" + cli::shown(group) +
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
        std::cerr << "letterbox: " << cli::printable(cli::redact_secrets(e.what())) << "\n";
        return cli::usage_error;
    } catch (const std::exception& e) {
        std::cerr << "letterbox: internal error: " << cli::printable(cli::redact_secrets(e.what()))
                  << "; please report it\n";
        return cli::internal;
    }
}
