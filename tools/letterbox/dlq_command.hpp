// SPDX-License-Identifier: BSL-1.0
#pragma once

// `letterbox dlq list|show|replay|purge|export`: the dead-letter operations of
// letterbox::dlq::dead_letter_queue on the command line, over any Transport that models
// letterbox::queue_reader. main.cpp runs it on an amqp::transport; an application can embed it
// over its own transport (the in-memory one, say), and the tests drive it in-process.

#include "command_line.hpp"

#include <letterbox/concepts/transport.hpp>
#include <letterbox/detail/rfc3339.hpp>
#include <letterbox/dlq/dead_letter_entry.hpp>
#include <letterbox/dlq/dead_letter_filter.hpp>
#include <letterbox/dlq/dead_letter_queue.hpp>
#include <letterbox/dlq/page.hpp>
#include <letterbox/dlq/replay_result.hpp>
#include <letterbox/error.hpp>
#include <letterbox/headers.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::cli {

/// The usage text of `letterbox dlq`.
inline constexpr std::string_view dlq_usage =
    "usage: letterbox dlq <command> <queue> [options]\n"
    "\n"
    "commands:\n"
    "  list <queue>          the matching entries, a page at a time (--offset, --limit)\n"
    "  show <queue> <id>     one entry in full: headers, body, failure history; <id> is a\n"
    "                        message id or an entry's handle (content-...)\n"
    "  replay <queue>        republish the matching entries to their original queues\n"
    "  purge <queue>         remove the matching entries for good (needs a filter or --all)\n"
    "  export <queue>        write the matching entries as JSON lines (--output FILE)\n"
    "\n"
    "filters (all that are given must match):\n"
    "  --reason R  --exception-type T  --message-type T\n"
    "  --since TIME  --until TIME       RFC 3339 UTC, e.g. 2026-01-31T12:00:00Z\n"
    "  --header NAME=VALUE              repeatable\n"
    "  --id ID                          a message id (UUID) or an entry's handle; repeatable\n"
    "  --filter JSON                    instead of the above, e.g. '{\"reason\":\"poison\"}'\n"
    "\n"
    "options:\n"
    "  --url URL        the broker (default: $LETTERBOX_AMQP_URL)\n"
    "  --password-file FILE  the broker password (default: $LETTERBOX_AMQP_PASSWORD, else the\n"
    "                   URL's); keeps it off the command line\n"
    "  --json           machine-readable output on stdout\n"
    "  --offset N --limit N   paging of list (default 0 and 100)\n"
    "  --all            replay or purge every entry (when no filter is given)\n"
    "  --output FILE    export to FILE instead of stdout\n"
    "  --timeout SECONDS  the longest wait for the broker (default 120)\n";

/// A parsed `letterbox dlq ...` command line.
struct dlq_arguments {
    /// `list`, `show`, `replay`, `purge` or `export`.
    std::string command{};
    std::string queue{};
    /// The message id of `show`, as given.
    std::string id{};
    /// The filter; for `show`, the one that selects `id`.
    dlq::dead_letter_filter filter{};
    /// Whether the filter has a criterion (`dead_letter_filter::has_criterion`): it can select
    /// less than the whole queue.
    bool filtered = false;
    /// `--all`: replay or purge without a filter.
    bool all = false;
    dlq::page page{};
    bool json = false;
    /// `--output` of export; stdout when empty.
    std::string output{};
    /// `--url` and `--password-file`, read by the program that makes the transport.
    std::optional<std::string> url{};
    std::optional<std::string> password_file{};
    std::chrono::milliseconds timeout{std::chrono::seconds{120}};
    /// Draw a progress bar on `err` during replay and export (when it is a terminal).
    bool progress = false;
    /// Where the transport connects, for error messages (a redacted URL; never a password).
    std::string endpoint = "the broker";
};

/// The options every command that talks to the broker accepts.
inline constexpr std::array<option_spec, 17> dlq_options{{
    {"url", true, false},
    {"password-file", true, false},
    {"json", false, false},
    {"timeout", true, false},
    {"reason", true, false},
    {"exception-type", true, false},
    {"message-type", true, false},
    {"since", true, false},
    {"until", true, false},
    {"header", true, true},
    {"id", true, true},
    {"filter", true, false},
    {"offset", true, false},
    {"limit", true, false},
    {"all", false, false},
    {"output", true, false},
    {"help", false, false},
}};

/// Parses the arguments after `dlq` (the command first). Throws `usage_failure` with a
/// message that says what is wrong.
inline dlq_arguments parse_dlq_arguments(std::span<const std::string> args) {
    if (args.empty())
        throw usage_failure("missing command: letterbox dlq list|show|replay|purge|export <queue>");
    dlq_arguments a;
    a.command = args[0];
    const std::array<std::string_view, 5> known{"list", "show", "replay", "purge", "export"};
    if (std::find(known.begin(), known.end(), a.command) == known.end())
        throw usage_failure("unknown command 'dlq " + shown(a.command) +
                            "' (expected list, show, replay, purge or export)");
    const std::string name = "letterbox dlq " + a.command;
    const auto p = parse_options(args.subspan(1), dlq_options, "letterbox dlq");

    const std::size_t wanted = a.command == "show" ? 2 : 1;
    if (p.positionals.size() < wanted)
        throw usage_failure(
            "`" + name + "` needs " + (wanted == 2 ? "a queue and a message id" : "a queue name") +
            ": letterbox dlq " + a.command + (wanted == 2 ? " <queue> <id>" : " <queue>"));
    if (p.positionals.size() > wanted)
        throw usage_failure("unexpected argument '" + shown(p.positionals[wanted]) + "' for `" +
                            name + "`");
    a.queue = p.positionals[0];
    if (wanted == 2)
        a.id = p.positionals[1];

    const auto only_for = [&](std::string_view option, std::initializer_list<std::string_view> cs) {
        if (p.has(option) && std::find(cs.begin(), cs.end(), a.command) == cs.end())
            throw usage_failure("--" + std::string(option) + " does not apply to `" + name + "`");
    };
    only_for("offset", {"list"});
    only_for("limit", {"list"});
    only_for("all", {"replay", "purge"});
    only_for("output", {"export"});

    a.json = p.has("json");
    a.all = p.has("all");
    a.url = p.get("url");
    a.password_file = p.get("password-file");
    if (const auto t = p.get("timeout"))
        a.timeout = std::chrono::seconds{parse_count("timeout", *t, 86'400)};
    if (a.timeout.count() == 0)
        throw usage_failure("--timeout must be at least 1 second");
    if (const auto o = p.get("offset"))
        a.page.offset = parse_count("offset", *o, 1'000'000);
    if (const auto l = p.get("limit")) {
        a.page.limit = parse_count("limit", *l, 10'000);
        if (a.page.limit == 0)
            throw usage_failure("--limit must be at least 1");
    }
    if (const auto o = p.get("output"))
        a.output = *o;

    // The filter: built as the JSON that dead_letter_filter::from_json reads, so that the
    // command line, --filter and the HTTP endpoint accept exactly the same things.
    nlohmann::json j = nlohmann::json::object();
    const std::array<std::pair<std::string_view, const char*>, 5> simple{{
        {"reason", "reason"},
        {"exception-type", "exception_type"},
        {"message-type", "message_type"},
        {"since", "since"},
        {"until", "until"},
    }};
    for (const auto& [option, member] : simple)
        if (const auto v = p.get(option))
            j[member] = *v;
    for (const auto& h : p.all("header")) {
        const auto eq = h.find('=');
        if (eq == std::string::npos || eq == 0)
            throw usage_failure("--header must be NAME=VALUE, got '" + shown(h) + "'");
        j["headers"][h.substr(0, eq)] = h.substr(eq + 1);
    }
    for (const auto& id : p.all("id"))
        j["ids"].push_back(id);
    if (const auto text = p.get("filter")) {
        if (!j.empty())
            throw usage_failure("--filter cannot be combined with --reason, --exception-type, "
                                "--message-type, --since, --until, --header or --id");
        j = nlohmann::json::parse(*text, nullptr, false);
        if (j.is_discarded())
            throw usage_failure("--filter is not valid JSON: " + shown(*text));
        if (!j.is_object())
            throw usage_failure("--filter must be a JSON object, e.g. '{\"reason\":\"poison\"}'");
    }
    try {
        a.filter = dlq::dead_letter_filter::from_json(j);
    } catch (const letterbox::error& e) {
        throw usage_failure(std::string("bad filter: ") + e.what());
    }
    // What the filter selects decides, not how it was written: `{"ids": []}`, `{"reason":
    // null}` and `{"headers": {}}` select the whole queue, as `{}` does.
    a.filtered = a.filter.has_criterion();
    if (a.command == "show") {
        if (!j.empty())
            throw usage_failure("`letterbox dlq show` takes a message id, not a filter");
        // The id is checked where every filter's ids are, so that show accepts exactly what
        // --id and the HTTP endpoint accept.
        try {
            a.filter = dlq::dead_letter_filter::from_json({{"ids", {a.id}}});
        } catch (const letterbox::error& e) {
            throw usage_failure(std::string("bad message id for `letterbox dlq show`: ") +
                                e.what());
        }
    }
    const std::string empty_filter =
        j.empty() ? std::string()
                  : " (the filter given has no criterion, so it selects every message)";
    if (a.command == "purge" && !a.filtered && !a.all)
        throw usage_failure("`letterbox dlq purge` removes messages for good: give a filter "
                            "(--reason, --id, ...) or --all to remove every message" +
                            empty_filter);
    if (a.command == "replay" && !a.filtered && !a.all)
        throw usage_failure("`letterbox dlq replay` needs a filter (--reason, --id, ...) or --all "
                            "to replay every message" +
                            empty_filter);
    if (a.all && a.filtered)
        throw usage_failure("--all cannot be combined with a filter");
    return a;
}

namespace detail {

/// What the broker's error `ec` means to the user, and the exit code that goes with it.
inline int report(std::ostream& err, const dlq_arguments& a, std::string_view what,
                  std::error_code ec) {
    if (ec == letterbox::errc::not_found) {
        err << "letterbox: queue '" << shown(a.queue) << "' does not exist on " << a.endpoint
            << "; check the queue name (the dead-letter queue of a work queue is usually "
               "<queue>.dlq)\n";
        return not_found;
    }
    if (ec == letterbox::errc::access_refused) {
        err << "letterbox: cannot connect to " << a.endpoint << ": " << ec.message()
            << "; check the user, password and vhost in --url\n";
        return cannot_connect;
    }
    if (ec == letterbox::errc::connection_closed || ec == letterbox::errc::connection_forced ||
        ec == letterbox::errc::outcome_unknown || ec == letterbox::errc::not_allowed) {
        err << "letterbox: cannot connect to " << a.endpoint << ": " << ec.message()
            << "; is RabbitMQ running? check --url\n";
        return cannot_connect;
    }
    err << "letterbox: " << what << " on queue '" << shown(a.queue) << "' failed: " << ec.message()
        << "\n";
    return internal;
}

inline int timed_out(std::ostream& err, const dlq_arguments& a, std::string_view what) {
    err << "letterbox: " << what << " on queue '" << shown(a.queue) << "' did not finish within "
        << std::chrono::duration_cast<std::chrono::seconds>(a.timeout).count() << " s ("
        << a.endpoint << "); is the broker reachable? raise --timeout for a long queue\n";
    return internal;
}

/// The result of one operation, shared with its completion handler (which may outlive a wait
/// that timed out).
template <class R>
struct result_slot {
    bool done = false;
    std::error_code ec{};
    R value{};
};

/// Waits for `slot` within the timeout; with `a.progress`, draws a bar on `err` meanwhile: how
/// much of the `total` messages the scan took out of the queue, from its ready depth.
template <queue_reader Transport, class R>
bool wait(Transport& t, const dlq_arguments& a, const event_loop& loop,
          const std::shared_ptr<result_slot<R>>& slot, std::uint32_t total, std::ostream& err) {
    const auto done = [slot] {
        return slot->done;
    };
    if (!a.progress || total == 0)
        return loop(done, a.timeout);
    struct poll {
        bool reading = false;
        std::optional<std::uint32_t> ready{};
    };
    auto state = std::make_shared<poll>();
    const auto deadline = std::chrono::steady_clock::now() + a.timeout;
    bool finished = false;
    for (;;) {
        const auto now = std::chrono::steady_clock::now();
        if (slot->done || now >= deadline) {
            finished = slot->done;
            break;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
        loop(done, std::min(left, std::chrono::milliseconds{200}));
        if (slot->done)
            continue;
        if (!state->reading) {
            state->reading = true;
            t.async_queue_depth(a.queue, [state](std::error_code ec, std::uint32_t ready) {
                state->reading = false;
                if (!ec)
                    state->ready = ready;
            });
        }
        const std::uint32_t taken = state->ready ? total - std::min(*state->ready, total) : 0;
        constexpr std::size_t width = 30;
        const std::size_t filled = width * taken / total;
        err << "\r[" << std::string(filled, '#') << std::string(width - filled, '.') << "] "
            << taken << "/" << total << " scanned" << std::flush;
    }
    err << "\r" << std::string(60, ' ') << "\r" << std::flush;
    return finished;
}

inline std::string time_text(const std::optional<store_time>& t) {
    return t ? letterbox::detail::format_rfc3339(*t) : std::string("-");
}

/// `s` (escaped, see `printable`) in a column of `width` bytes, one of them the space before
/// the next column; a longer text is cut (at a character boundary) and ends with `~`.
inline std::string cell(const std::string& text, std::size_t width) {
    std::string s = printable(text);
    if (s.size() >= width) {
        std::size_t cut = width - 2;
        while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0U) == 0x80U)
            --cut; // not inside a UTF-8 sequence
        s = s.substr(0, cut) + "~";
    }
    s.resize(std::max(s.size(), width), ' ');
    return s;
}

/// One entry in full, every stored text escaped (`printable`): a message cannot fake lines
/// of the output or move the terminal's cursor.
inline void print_entry(std::ostream& out, const dlq::dead_letter_entry& e) {
    const auto j = e.to_json();
    const auto line = [&](std::string_view label, const std::string& value) {
        out << cell(std::string(label) + ":", 22) << printable(value) << "\n";
    };
    line("id", e.id.empty() ? "- (the message has no id: name it by its handle)" : e.id);
    line("handle", e.handle);
    line("type", e.type.empty() ? "-" : e.type);
    line("reason", e.reason.empty() ? "-" : e.reason);
    line("exception",
         e.exception_type.empty()
             ? std::string("-")
             : e.exception_type +
                   (e.exception_message.empty() ? std::string() : ": " + e.exception_message));
    line("attempts", std::to_string(e.attempts));
    line("first failure", time_text(e.first_failure));
    line("last failure", time_text(e.last_failure));
    line("dead-lettered", time_text(e.dead_lettered_at));
    line("original exchange", "\"" + e.original_exchange + "\"");
    line("original routing key", "\"" + e.original_routing_key + "\"");
    line("original queue", e.original_queue.empty() ? "-" : e.original_queue);
    line("consumer", e.consumer_id.empty() ? "-" : e.consumer_id);
    line("replay count", std::to_string(e.replay_count));
    line("content type",
         j["content_type"].is_string() ? j["content_type"].get<std::string>() : std::string("-"));
    out << "headers:\n";
    const auto& hs = j["headers"];
    for (const auto& [name, value] : hs.items())
        if (name != headers::x_death && name != headers::death_history)
            out << "  " << printable(name) << ": "
                << printable(value.is_string() ? value.get<std::string>() : json_text(value))
                << "\n";
    out << "history:\n";
    bool any = false;
    for (const auto name : {headers::death_history, headers::x_death}) {
        const auto it = hs.find(std::string(name));
        if (it == hs.end())
            continue;
        any = true;
        out << "  " << name << ":\n";
        if (it->is_array())
            for (const auto& step : *it)
                out << "    " << printable(json_text(step)) << "\n";
        else
            out << "    " << printable(it->is_string() ? it->get<std::string>() : json_text(*it))
                << "\n";
    }
    if (!any)
        out << "  (none recorded)\n";
    out << "body (" << j["body_encoding"].get<std::string>() << ", " << e.msg.body.size()
        << " bytes):\n"
        << printable(j["body"].get<std::string>(), true) << "\n";
}

inline nlohmann::json replay_json(const std::string& queue, const dlq::replay_result& r) {
    auto j = r.to_json();
    j["queue"] = queue;
    return j;
}

} // namespace detail

/// Runs `letterbox dlq <command>` as parsed into `args` on `transport`: output on `out`, errors
/// (and the progress bar) on `err`; `loop` runs the transport's event loop until an operation
/// completes (`io_context_loop` for an `io_context` on this thread). Returns the exit code
/// (`exit_code`). Never throws for a broker failure: it reports it and returns its code.
///
/// @tparam Transport a model of `letterbox::queue_reader` (`amqp::transport`,
/// `in_memory::transport`). It must outlive the call.
template <queue_reader Transport>
int run_dlq(Transport& transport, const dlq_arguments& args, std::ostream& out, std::ostream& err,
            const event_loop& loop) {
    dlq::dead_letter_queue<Transport> dlq(transport, args.queue);

    // The depth first: it tells a missing queue and an unreachable broker apart before any scan
    // starts, and it is the progress bar's total.
    auto depth = std::make_shared<detail::result_slot<std::uint32_t>>();
    dlq.async_depth([depth](std::error_code ec, std::uint32_t n) {
        depth->done = true;
        depth->ec = ec;
        depth->value = n;
    });
    if (!loop([depth] { return depth->done; }, args.timeout))
        return detail::timed_out(err, args, "reading the depth");
    if (depth->ec)
        return detail::report(err, args, "reading the depth", depth->ec);

    if (args.command == "list" || args.command == "show") {
        const auto& filter = args.filter; // for show, the one that selects args.id
        auto p = args.page;
        if (args.command == "show")
            p = dlq::page{0, 1};
        auto slot = std::make_shared<detail::result_slot<std::vector<dlq::dead_letter_entry>>>();
        dlq.async_browse(filter, p,
                         [slot](std::error_code ec, std::vector<dlq::dead_letter_entry> entries) {
                             slot->done = true;
                             slot->ec = ec;
                             slot->value = std::move(entries);
                         });
        if (!detail::wait(transport, args, loop, slot, 0, err))
            return detail::timed_out(err, args, "browsing");
        if (slot->ec)
            return detail::report(err, args, "browsing", slot->ec);
        const auto& entries = slot->value;
        if (args.command == "show") {
            if (entries.empty()) {
                err << "letterbox: no message with id " << shown(args.id) << " in queue '"
                    << shown(args.queue) << "'; list the ids with `letterbox dlq list "
                    << shown(args.queue) << "`\n";
                return not_found;
            }
            if (args.json)
                out << json_text(entries.front().to_json()) << "\n";
            else
                detail::print_entry(out, entries.front());
            return ok;
        }
        if (args.json) {
            nlohmann::json list = nlohmann::json::array();
            for (const auto& e : entries)
                list.push_back(e.to_json());
            out << json_text({{"queue", args.queue},
                              {"depth", depth->value},
                              {"offset", args.page.offset},
                              {"limit", args.page.limit},
                              {"entries", std::move(list)}})
                << "\n";
            return ok;
        }
        // A message without an id is listed by its handle, which names that one entry.
        out << detail::cell("ID (OR HANDLE)", 44) << detail::cell("TYPE", 20)
            << detail::cell("REASON", 16) << detail::cell("EXCEPTION", 24)
            << detail::cell("ATTEMPTS", 9) << "DEAD-LETTERED\n";
        for (const auto& e : entries)
            out << detail::cell(e.id.empty() ? e.handle : e.id, 44)
                << detail::cell(e.type.empty() ? "-" : e.type, 20)
                << detail::cell(e.reason.empty() ? "-" : e.reason, 16)
                << detail::cell(e.exception_type.empty() ? "-" : e.exception_type, 24)
                << detail::cell(std::to_string(e.attempts), 9)
                << detail::time_text(e.dead_lettered_at) << "\n";
        out << entries.size() << (entries.size() == 1 ? " entry" : " entries") << " (offset "
            << args.page.offset << ", limit " << args.page.limit << "; " << depth->value
            << " messages in " << shown(args.queue) << ")\n";
        return ok;
    }

    if (args.command == "replay") {
        auto slot = std::make_shared<detail::result_slot<dlq::replay_result>>();
        dlq.async_replay(args.filter, [slot](std::error_code ec, dlq::replay_result r) {
            slot->done = true;
            slot->ec = ec;
            slot->value = std::move(r);
        });
        if (!detail::wait(transport, args, loop, slot, depth->value, err))
            return detail::timed_out(err, args, "replaying");
        const auto& r = slot->value;
        if (args.json)
            out << json_text(detail::replay_json(args.queue, r)) << "\n";
        else {
            out << "replayed " << r.replayed << ", failed " << r.failed << ", skipped " << r.skipped
                << " (did not match)\n";
            for (const auto& f : r.failures)
                out << "  failed " << printable(f.id.empty() ? f.handle : f.id) << ": "
                    << f.error.message() << "\n";
        }
        if (slot->ec)
            return detail::report(err, args,
                                  "replaying (stopped early; what was replayed is "
                                  "counted above)",
                                  slot->ec);
        if (r.failed > 0) {
            err << "letterbox: " << r.failed
                << " message(s) could not be replayed and stayed in the queue; check that their "
                   "original exchange and queue exist, then replay them again with --id\n";
            return partial;
        }
        return ok;
    }

    if (args.command == "purge") {
        auto slot = std::make_shared<detail::result_slot<std::size_t>>();
        dlq.async_purge(args.filter, [slot](std::error_code ec, std::size_t removed) {
            slot->done = true;
            slot->ec = ec;
            slot->value = removed;
        });
        if (!detail::wait(transport, args, loop, slot, 0, err))
            return detail::timed_out(err, args, "purging");
        if (args.json)
            out << json_text({{"queue", args.queue}, {"removed", slot->value}}) << "\n";
        else
            out << "removed " << slot->value << (slot->value == 1 ? " message" : " messages")
                << " from " << shown(args.queue) << "\n";
        if (slot->ec)
            return detail::report(err, args, "purging (stopped early)", slot->ec);
        return ok;
    }

    // export
    // The export's completion owns the file: a wait that times out leaves it open for the scan.
    auto file = std::make_shared<std::ofstream>();
    std::ostream* target = &out;
    if (!args.output.empty()) {
        file->open(args.output, std::ios::out | std::ios::trunc);
        if (!*file) {
            err << "letterbox: cannot open '" << shown(args.output)
                << "' for writing; check --output (the directory must exist)\n";
            return cannot_connect;
        }
        target = file.get();
    }
    auto slot = std::make_shared<detail::result_slot<std::size_t>>();
    dlq.async_export(args.filter, *target, [slot, file](std::error_code ec, std::size_t written) {
        slot->done = true;
        slot->ec = ec;
        slot->value = written;
    });
    if (!detail::wait(transport, args, loop, slot, depth->value, err))
        return detail::timed_out(err, args, "exporting");
    if (file->is_open()) {
        file->close();
        if (!*file && !slot->ec) {
            err << "letterbox: writing '" << shown(args.output) << "' failed; is the disk full?\n";
            return internal;
        }
    }
    if (slot->ec)
        return detail::report(err, args, "exporting (stopped early)", slot->ec);
    if (!args.output.empty()) {
        if (args.json)
            out << json_text(
                       {{"queue", args.queue}, {"exported", slot->value}, {"output", args.output}})
                << "\n";
        else
            out << "exported " << slot->value << (slot->value == 1 ? " entry" : " entries")
                << " to " << shown(args.output) << "\n";
    } else if (!args.json) {
        err << "exported " << slot->value << (slot->value == 1 ? " entry" : " entries") << "\n";
    }
    return ok;
}

} // namespace letterbox::cli
