// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/failpoint.hpp>
#include <letterbox/testing/history_event.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// One timed fault of a simulated run: at virtual time `at` (from the start of the run),
/// inject `kind`, with `arg` saying how:
///
/// | kind | arg |
/// | --- | --- |
/// | `connection_drop`, `broker_restart` | unused (0) |
/// | `lost_confirm`, `publish_nack` | the n-th publish from then (at least 1) |
/// | `duplicate_delivery` | which confirmed message to publish again (index, modulo count) |
/// | `slow_consumer` | for 1 s, each delivery reaches the handler `arg` ms after the last |
/// | `consumer_cancel` | the consumer subscribes again after `arg` ms |
/// | `sqlite_busy` | the consumer's store is locked for `arg` ms |
/// | `binding_removed` | the exchange's bindings are removed, restored after `arg` ms |
/// | `queue_deleted` | the work queues are deleted once empty, restored `arg` ms later |
/// | `crash` | a `failpoint` (its value): the next pass through it kills the process |
///
/// Other kinds are not schedulable (handler failures and the poison message are choices per
/// message: see `fault_profile`).
struct fault_command {
    std::chrono::milliseconds at{0};
    fault_kind kind = fault_kind::connection_drop;
    std::uint32_t arg = 0;

    friend bool operator==(const fault_command&, const fault_command&) = default;
};

/// Whether `kind` can be a `fault_command`.
constexpr bool schedulable(fault_kind kind) noexcept {
    switch (kind) {
    case fault_kind::connection_drop:
    case fault_kind::broker_restart:
    case fault_kind::lost_confirm:
    case fault_kind::publish_nack:
    case fault_kind::duplicate_delivery:
    case fault_kind::slow_consumer:
    case fault_kind::consumer_cancel:
    case fault_kind::sqlite_busy:
    case fault_kind::binding_removed:
    case fault_kind::queue_deleted:
    case fault_kind::crash:
        return true;
    default:
        return false;
    }
}

/// The timed faults of a run, as a list of commands: what `fault_profile` draws from a seed,
/// what RapidCheck generates and shrinks (letterbox/testing/rapidcheck.hpp), and what a
/// regression test keeps. Its text form has one command per line, `@<ms>ms <kind>[ <arg>]`,
/// with a failpoint's name as the argument of `crash`:
///
///     @0ms publish_nack 1
///     @1200ms crash after_confirm_before_mark
///     @2500ms sqlite_busy 300
///     @3000ms binding_removed 400
///
/// `parse` reads it back, so a failing schedule printed by a run can be pasted into a test.
struct fault_schedule {
    std::vector<fault_command> commands;

    friend bool operator==(const fault_schedule&, const fault_schedule&) = default;

    /// The text form (one line per command, each ending with a newline).
    std::string to_string() const {
        std::string out;
        for (const auto& c : commands) {
            out += '@' + std::to_string(c.at.count()) + "ms " +
                   std::string(letterbox::testing::to_string(c.kind));
            if (c.kind == fault_kind::crash) {
                out += ' ';
                out += c.arg < all_failpoints.size() ? letterbox::to_string(all_failpoints[c.arg])
                                                     : std::string_view("unknown");
            } else if (c.kind != fault_kind::connection_drop &&
                       c.kind != fault_kind::broker_restart) {
                out += ' ' + std::to_string(c.arg);
            }
            out += '\n';
        }
        return out;
    }

    /// Reads the text form; blank lines and lines starting with `#` are skipped. Returns
    /// nothing for any malformed line (an unknown kind or failpoint, a missing or bad number).
    static std::optional<fault_schedule> parse(std::string_view text) {
        fault_schedule s;
        while (!text.empty()) {
            const auto end = text.find('\n');
            auto line = text.substr(0, end);
            text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
            while (!line.empty() && (line.front() == ' ' || line.front() == '\t'))
                line.remove_prefix(1);
            while (!line.empty() && (line.back() == ' ' || line.back() == '\r'))
                line.remove_suffix(1);
            if (line.empty() || line.front() == '#')
                continue;
            auto c = parse_command(line);
            if (!c)
                return std::nullopt;
            s.commands.push_back(*c);
        }
        return s;
    }

    /// Writes the text form (what RapidCheck prints for a counterexample).
    friend std::ostream& operator<<(std::ostream& os, const fault_schedule& s) {
        return os << (s.commands.empty() ? std::string("(no timed fault)\n") : s.to_string());
    }

private:
    static std::optional<fault_command> parse_command(std::string_view line) {
        if (line.empty() || line.front() != '@')
            return std::nullopt;
        line.remove_prefix(1);
        std::uint64_t ms = 0;
        auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), ms);
        if (ec != std::errc{} ||
            std::string_view(p, line.data() + line.size()).substr(0, 3) != "ms ")
            return std::nullopt;
        line = std::string_view(p + 3, static_cast<std::size_t>(line.data() + line.size() - p - 3));
        const auto space = line.find(' ');
        const auto name = line.substr(0, space);
        const auto rest =
            space == std::string_view::npos ? std::string_view{} : line.substr(space + 1);
        fault_command c;
        c.at = std::chrono::milliseconds(static_cast<std::int64_t>(ms));
        std::optional<fault_kind> kind;
        for (int k = 0; k <= static_cast<int>(fault_kind::other); ++k)
            if (letterbox::testing::to_string(static_cast<fault_kind>(k)) == name)
                kind = static_cast<fault_kind>(k);
        if (!kind || !schedulable(*kind))
            return std::nullopt;
        c.kind = *kind;
        if (c.kind == fault_kind::crash) {
            const auto it =
                std::find_if(all_failpoints.begin(), all_failpoints.end(),
                             [&](failpoint f) { return letterbox::to_string(f) == rest; });
            if (it == all_failpoints.end())
                return std::nullopt;
            c.arg = static_cast<std::uint32_t>(it - all_failpoints.begin());
        } else if (c.kind != fault_kind::connection_drop && c.kind != fault_kind::broker_restart) {
            auto [q, ec2] = std::from_chars(rest.data(), rest.data() + rest.size(), c.arg);
            if (ec2 != std::errc{} || q != rest.data() + rest.size())
                return std::nullopt;
        } else if (!rest.empty()) {
            return std::nullopt;
        }
        return c;
    }
};

} // namespace letterbox::testing
