// SPDX-License-Identifier: BSL-1.0
#pragma once

// What every `letterbox` command shares: the exit codes, the usage error, a small option
// parser, the event loop the commands wait on, and the redaction of URLs.

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace letterbox::cli {

/// The exit status of every command (also in `letterbox --help` and docs/cli.md).
enum exit_code : int {
    ok = 0,             ///< everything asked for was done
    partial = 1,        ///< some of it failed (replays or retries that failed, listed)
    usage_error = 2,    ///< bad command line, bad filter, bad topology file
    cannot_connect = 3, ///< the broker cannot be reached or the database cannot be opened
    not_found = 4,      ///< the queue, message or row does not exist
    internal = 5,       ///< anything else (a broker or database error, a timeout)
};

/// The exit-code table, as `--help` prints it.
inline constexpr std::string_view exit_code_help =
    "exit codes:\n"
    "  0  ok\n"
    "  1  partial: some replays or retries failed "
    "(each one is listed)\n"
    "  2  usage error (command line, filter or "
    "topology file)\n"
    "  3  cannot connect to the broker / open the "
    "database\n"
    "  4  not found (queue, message id, outbox row)\n"
    "  5  internal error (broker or database error, "
    "timeout)\n";

/// A command line the command cannot run: reported on stderr with exit code 2.
struct usage_failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Runs the event loop that completes a transport's operations until `done()` returns true or
/// `timeout` passed; returns `done()`. `io_context_loop` is the one for a real transport;
/// tests on a virtual clock pass their own driver (which may ignore the timeout).
using event_loop =
    std::function<bool(const std::function<bool()>& done, std::chrono::milliseconds timeout)>;

/// The event loop of an `io_context` that runs on the calling thread. Keep it busy with a
/// work guard, or an idle loop spins until the timeout.
inline event_loop io_context_loop(boost::asio::io_context& io) {
    return [&io](const std::function<bool()>& done, std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!done()) {
            const auto now = std::chrono::steady_clock::now();
            if (now >= deadline)
                return false;
            if (io.stopped())
                io.restart();
            io.run_one_for(deadline - now);
        }
        return true;
    };
}

/// One option a command accepts: `--name value` (or `--name=value`) when it takes a value,
/// else a flag.
struct option_spec {
    std::string_view name;
    bool takes_value = false;
    bool repeatable = false;
};

/// A parsed command line: the positional arguments, and the values of each option given (a
/// flag has one empty value).
struct parsed_options {
    std::vector<std::string> positionals;
    std::map<std::string, std::vector<std::string>, std::less<>> values;

    bool has(std::string_view name) const { return values.find(name) != values.end(); }
    std::optional<std::string> get(std::string_view name) const {
        const auto it = values.find(name);
        if (it == values.end() || it->second.empty())
            return std::nullopt;
        return it->second.back();
    }
    std::vector<std::string> all(std::string_view name) const {
        const auto it = values.find(name);
        return it == values.end() ? std::vector<std::string>{} : it->second;
    }
};

/// Parses `args` against `spec`. `command` names the command in errors ("letterbox dlq
/// list"). Throws `usage_failure` for an unknown option, a missing value, or an option given
/// twice that is not repeatable. `--` ends the options.
inline parsed_options parse_options(std::span<const std::string> args,
                                    std::span<const option_spec> spec, std::string_view command) {
    parsed_options out;
    const auto help = " (see `" + std::string(command) + " --help`)";
    bool options_done = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (options_done || a.size() < 2 || a.rfind("--", 0) != 0) {
            if (!options_done && a.size() > 1 && a[0] == '-' && a != "-")
                throw usage_failure("unknown option " + a + " for `" + std::string(command) + "`" +
                                    help);
            out.positionals.push_back(a);
            continue;
        }
        if (a == "--") {
            options_done = true;
            continue;
        }
        std::string name = a.substr(2);
        std::optional<std::string> value;
        if (const auto eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name.resize(eq);
        }
        const option_spec* found = nullptr;
        for (const auto& s : spec)
            if (s.name == name)
                found = &s;
        if (found == nullptr)
            throw usage_failure("unknown option --" + name + " for `" + std::string(command) + "`" +
                                help);
        if (found->takes_value && !value) {
            if (i + 1 == args.size())
                throw usage_failure("option --" + name + " needs a value" + help);
            value = args[++i];
        }
        if (!found->takes_value && value)
            throw usage_failure("option --" + name + " takes no value" + help);
        auto& slot = out.values[name];
        if (!slot.empty() && !found->repeatable)
            throw usage_failure("option --" + name + " was given twice" + help);
        slot.push_back(value.value_or(std::string{}));
    }
    return out;
}

/// Reads an unsigned number for `--name`; throws `usage_failure` naming the option.
inline std::uint64_t parse_count(std::string_view name, const std::string& text,
                                 std::uint64_t max = UINT64_MAX) {
    std::uint64_t v = 0;
    if (text.empty() || text.size() > 19)
        throw usage_failure("--" + std::string(name) + " must be a whole number, got '" + text +
                            "'");
    for (char c : text) {
        if (c < '0' || c > '9')
            throw usage_failure("--" + std::string(name) + " must be a whole number, got '" + text +
                                "'");
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (v > max)
        throw usage_failure("--" + std::string(name) + " must be at most " + std::to_string(max));
    return v;
}

/// Reads a duration such as `7d`, `24h`, `30m`, `45s` (one number and one unit) for `--name`.
inline std::chrono::seconds parse_age(std::string_view name, const std::string& text) {
    const auto bad = [&] {
        return usage_failure("--" + std::string(name) +
                             " must be a number and a unit (d, h, m or s), like 7d, 24h or 30m; "
                             "got '" +
                             text + "'");
    };
    if (text.size() < 2)
        throw bad();
    const char unit = text.back();
    std::uint64_t n = 0;
    try {
        n = parse_count(name, text.substr(0, text.size() - 1), 100'000'000);
    } catch (const usage_failure&) {
        throw bad();
    }
    const auto count = static_cast<std::int64_t>(n);
    switch (unit) {
    case 'd':
        return std::chrono::hours{24 * count};
    case 'h':
        return std::chrono::hours{count};
    case 'm':
        return std::chrono::minutes{count};
    case 's':
        return std::chrono::seconds{count};
    default:
        throw bad();
    }
}

/// `text` with the password of any `scheme://user:password@` in it replaced by `***`: for a
/// URL that could not be parsed (a parsed one has `amqp::url::redacted`).
inline std::string redact_url_text(std::string_view text) {
    std::string out(text);
    std::size_t from = 0;
    while ((from = out.find("://", from)) != std::string::npos) {
        const std::size_t start = from + 3;
        const std::size_t end = out.find_first_of("/?#", start);
        const std::size_t authority_end = end == std::string::npos ? out.size() : end;
        const std::size_t at = out.rfind('@', authority_end);
        if (at != std::string::npos && at >= start) {
            const std::size_t colon = out.find(':', start);
            if (colon != std::string::npos && colon < at)
                out.replace(colon + 1, at - colon - 1, "***");
        }
        from = start;
    }
    return out;
}

} // namespace letterbox::cli
