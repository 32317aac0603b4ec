// SPDX-License-Identifier: BSL-1.0
#pragma once

// What every `letterbox` command shares: the exit codes, the usage error, a small option
// parser, the event loop the commands wait on, the redaction of URLs in messages, and the
// escaping of stored text for a terminal and for JSON.

#include <letterbox/amqp/url.hpp>

#include <boost/asio/io_context.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
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
    ok = 0,                       ///< everything asked for was done
    partial = 1,                  ///< some of it failed (replays or retries that failed, listed)
    usage_error = 2,              ///< bad command line, bad filter, bad topology file
    cannot_connect = 3,           ///< the broker cannot be reached or the database cannot be opened
    not_found = 4,                ///< the queue, message or row does not exist
    internal = 5,                 ///< anything else (a broker or database error, a timeout)
    not_a_letterbox_database = 6, ///< `--db` is not a letterbox database (left untouched)
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
    "timeout)\n"
    "  6  the --db file is not a letterbox database (not "
    "SQLite, or no letterbox schema); nothing was changed\n";

/// A command line the command cannot run: reported on stderr with exit code 2.
struct usage_failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// `message` with every password that a URL in it could hold replaced by `***`: the last line
/// of defence of every message the tool prints (messages that show a URL redact it themselves
/// first). Each unit of the message that holds an `@` or a `://` goes through
/// `amqp::redact_url_text`. A unit is the text between two equal quotes (`'`, `"` or a
/// backtick: how messages quote what the user typed, spaces included), or else a word; a word
/// with a `://` and no `@` runs on to the next word with an `@`, since a password may hold
/// spaces.
inline std::string redact_secrets(std::string_view message) {
    constexpr std::string_view quotes = "'\"`";
    constexpr std::string_view spaces = " \t\r\n";
    const auto redact = [](std::string_view unit) {
        if (unit.find('@') == std::string_view::npos && unit.find("://") == std::string_view::npos)
            return std::string(unit);
        return amqp::redact_url_text(unit);
    };
    std::string out;
    out.reserve(message.size());
    std::size_t i = 0;
    while (i < message.size()) {
        const char c = message[i];
        if (quotes.find(c) != std::string_view::npos) {
            const auto close = message.find(c, i + 1);
            if (close != std::string_view::npos) {
                out += c;
                out += redact(message.substr(i + 1, close - i - 1));
                out += c;
                i = close + 1;
                continue;
            }
        }
        if (spaces.find(c) != std::string_view::npos || quotes.find(c) != std::string_view::npos) {
            out += c;
            ++i;
            continue;
        }
        // A word: up to the next space or quote.
        auto end = message.find_first_of(" \t\r\n'\"`", i);
        if (end == std::string_view::npos)
            end = message.size();
        const auto word = message.substr(i, end - i);
        if (word.find("://") != std::string_view::npos &&
            word.find('@') == std::string_view::npos) {
            // Run on through the next word with an '@' before any quote.
            const auto region_end = std::min(message.find_first_of(quotes, end), message.size());
            const auto at = message.substr(0, region_end).find('@', end);
            if (at != std::string_view::npos) {
                end = std::min(message.find_first_of(" \t\r\n", at), region_end);
            }
        }
        out += redact(message.substr(i, end - i));
        i = end;
    }
    return out;
}

/// Stored text (a row's `last_error`, a message's type or headers...) made safe to print on a
/// terminal: it cannot move the cursor, change colours or fake a line of the tool's output.
/// Control characters become `\n`, `\r`, `\t` or `\xNN` (so `ESC [ 2 J` prints as `\x1b[2J`),
/// the C1 controls and the Unicode characters that reorder or break lines (U+0080 to U+009F,
/// U+200E, U+200F, U+2028, U+2029, U+202A to U+202E, U+2066 to U+2069) become `\u{NNNN}`, and
/// each byte that is not part of valid UTF-8 becomes `\xNN`. Everything else is kept as it is,
/// backslashes included. With `keep_newlines`, `\n` and `\t` are kept (a message body).
inline std::string printable(std::string_view text, bool keep_newlines = false) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    const auto byte_escape = [&out](unsigned char c) {
        out += "\\x";
        out += hex[c >> 4];
        out += hex[c & 0xF];
    };
    std::size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            if (c == '\n' || c == '\t') {
                if (keep_newlines)
                    out += static_cast<char>(c);
                else
                    out += c == '\n' ? "\\n" : "\\t";
            } else if (c == '\r') {
                out += "\\r";
            } else if (c < 0x20 || c == 0x7F) {
                byte_escape(c);
            } else {
                out += static_cast<char>(c);
            }
            ++i;
            continue;
        }
        // A UTF-8 sequence: its length from the lead byte, then continuation bytes, no overlong
        // form, no surrogate, nothing above U+10FFFF.
        std::size_t length = 0;
        std::uint32_t code = 0;
        if (c >= 0xC2 && c <= 0xDF) {
            length = 2;
            code = c & 0x1FU;
        } else if (c >= 0xE0 && c <= 0xEF) {
            length = 3;
            code = c & 0x0FU;
        } else if (c >= 0xF0 && c <= 0xF4) {
            length = 4;
            code = c & 0x07U;
        }
        bool valid = length != 0 && i + length <= text.size();
        for (std::size_t k = 1; valid && k < length; ++k) {
            const auto next = static_cast<unsigned char>(text[i + k]);
            valid = (next & 0xC0U) == 0x80U;
            code = (code << 6) | (next & 0x3FU);
        }
        valid = valid && !(length == 3 && code < 0x800) && !(length == 4 && code < 0x10000) &&
                !(code >= 0xD800 && code <= 0xDFFF) && code <= 0x10FFFF;
        if (!valid) {
            byte_escape(c);
            ++i;
            continue;
        }
        const bool control = (code >= 0x80 && code <= 0x9F) || code == 0x200E || code == 0x200F ||
                             code == 0x2028 || code == 0x2029 ||
                             (code >= 0x202A && code <= 0x202E) ||
                             (code >= 0x2066 && code <= 0x2069);
        if (control) {
            out += "\\u{";
            char digits[8];
            int n = 0;
            for (std::uint32_t v = code; v != 0 || n < 4; v >>= 4)
                digits[n++] = hex[v & 0xF];
            while (n > 0)
                out += digits[--n];
            out += '}';
        } else {
            out += text.substr(i, length);
        }
        i += length;
    }
    return out;
}

/// Text the user gave (an argument, a queue name, a file name) as a message shows it: as one
/// unit through `amqp::redact_url_text` when it could be a URL with a password (an `@` or a
/// `://` in it: a URL passed where something else was expected), then `printable`.
inline std::string shown(std::string_view user_text) {
    if (user_text.find('@') == std::string_view::npos &&
        user_text.find("://") == std::string_view::npos)
        return printable(user_text);
    return printable(amqp::redact_url_text(user_text));
}

/// `j` as one line of JSON for stdout. Text that is not valid UTF-8 (stored bytes can be
/// anything) is written with each bad byte replaced by U+FFFD instead of failing the command.
inline std::string json_text(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

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
                throw usage_failure("unknown option " + shown(a) + " for `" + std::string(command) +
                                    "`" + help);
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
            throw usage_failure("unknown option --" + shown(name) + " for `" +
                                std::string(command) + "`" + help);
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
        throw usage_failure("--" + std::string(name) + " must be a whole number, got '" +
                            shown(text) + "'");
    for (char c : text) {
        if (c < '0' || c > '9')
            throw usage_failure("--" + std::string(name) + " must be a whole number, got '" +
                                shown(text) + "'");
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
                             shown(text) + "'");
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

} // namespace letterbox::cli
