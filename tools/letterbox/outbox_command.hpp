// SPDX-License-Identifier: BSL-1.0
#pragma once

// `letterbox outbox status|retry|purge`: the operator's view of an SQLite outbox
// (letterbox::sqlite::outbox_store): counts and parked rows, unparking, purging published rows.

#include "command_line.hpp"

#include <letterbox/detail/rfc3339.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/database_options.hpp>
#include <letterbox/sqlite/outbox_row_error.hpp>
#include <letterbox/sqlite/outbox_store.hpp>
#include <letterbox/store_time.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace letterbox::cli {

/// The usage text of `letterbox outbox`.
inline constexpr std::string_view outbox_usage =
    "usage: letterbox outbox <command> --db FILE [options]\n"
    "\n"
    "commands:\n"
    "  status                  counts by status, the relay's lag, and the parked rows\n"
    "                          (--status pending|parked|published picks other rows, --limit N)\n"
    "  retry <id>...           make parked rows pending again (unpark), or --all-parked\n"
    "  purge --older-than AGE  delete published rows published more than AGE ago\n"
    "                          (AGE: a number and d, h, m or s: 7d, 24h, 30m)\n"
    "\n"
    "options:\n"
    "  --db FILE   the SQLite database of the outbox (must exist and be letterbox's; status\n"
    "              opens it read-only, and no command ever creates tables in it)\n"
    "  --json      machine-readable output on stdout\n";

/// A parsed `letterbox outbox ...` command line.
struct outbox_arguments {
    /// `status`, `retry` or `purge`.
    std::string command{};
    std::string db{};
    bool json = false;
    /// `retry`: the ids, or every parked row.
    std::vector<std::string> ids{};
    bool all_parked = false;
    /// `purge`: published rows older than this go.
    std::chrono::seconds older_than{};
    std::string older_than_text{};
    /// `status`: which rows to list, and how many.
    outbox_status status = outbox_status::parked;
    std::size_t limit = 100;
};

inline constexpr std::array<option_spec, 7> outbox_options{{
    {"db", true, false},
    {"json", false, false},
    {"all-parked", false, false},
    {"older-than", true, false},
    {"status", true, false},
    {"limit", true, false},
    {"help", false, false},
}};

/// Parses the arguments after `outbox` (the command first). Throws `usage_failure`.
inline outbox_arguments parse_outbox_arguments(std::span<const std::string> args) {
    if (args.empty())
        throw usage_failure("missing command: letterbox outbox status|retry|purge --db FILE");
    outbox_arguments a;
    a.command = args[0];
    if (a.command != "status" && a.command != "retry" && a.command != "purge")
        throw usage_failure("unknown command 'outbox " + shown(a.command) +
                            "' (expected status, retry or purge)");
    const std::string name = "letterbox outbox " + a.command;
    const auto p = parse_options(args.subspan(1), outbox_options, "letterbox outbox");
    const auto only_for = [&](std::string_view option, std::string_view command) {
        if (p.has(option) && a.command != command)
            throw usage_failure("--" + std::string(option) + " does not apply to `" + name + "`");
    };
    only_for("all-parked", "retry");
    only_for("older-than", "purge");
    only_for("status", "status");
    only_for("limit", "status");

    const auto db = p.get("db");
    if (!db)
        throw usage_failure("`" + name + "` needs --db FILE (the SQLite database of the outbox)");
    a.db = *db;
    a.json = p.has("json");
    a.all_parked = p.has("all-parked");
    if (a.command == "retry") {
        a.ids = p.positionals;
        if (a.ids.empty() == !a.all_parked)
            throw usage_failure("`letterbox outbox retry` needs row ids (message ids) or "
                                "--all-parked, not both");
        for (const auto& id : a.ids)
            if (!parse_message_id(id))
                throw usage_failure("'" + shown(id) + "' is not a message id (a UUID)");
    } else if (!p.positionals.empty()) {
        throw usage_failure("unexpected argument '" + shown(p.positionals.front()) + "' for `" +
                            name + "`");
    }
    if (a.command == "purge") {
        const auto age = p.get("older-than");
        if (!age)
            throw usage_failure("`letterbox outbox purge` needs --older-than AGE (like 7d, 24h "
                                "or 30m): published rows older than that are deleted");
        a.older_than = parse_age("older-than", *age);
        a.older_than_text = *age;
    }
    if (const auto s = p.get("status")) {
        if (*s == "pending")
            a.status = outbox_status::pending;
        else if (*s == "parked")
            a.status = outbox_status::parked;
        else if (*s == "published")
            a.status = outbox_status::published;
        else
            throw usage_failure("--status must be pending, parked or published, got '" + shown(*s) +
                                "'");
    }
    if (const auto l = p.get("limit")) {
        a.limit = parse_count("limit", *l, 10'000);
        if (a.limit == 0)
            throw usage_failure("--limit must be at least 1");
    }
    return a;
}

namespace detail {

inline nlohmann::json row_json(const outbox_record& r) {
    const auto time = [](store_time t) {
        return letterbox::detail::format_rfc3339(t);
    };
    return {{"id", letterbox::to_string(r.msg.id)},
            {"sequence", r.sequence},
            {"aggregate_type", r.aggregate_type},
            {"aggregate_id", r.aggregate_id},
            {"event_type", r.msg.type},
            {"exchange", r.msg.exchange},
            {"routing_key", r.msg.routing_key},
            {"status", std::string(to_string(r.status))},
            {"attempts", r.attempts},
            {"last_error", r.last_error},
            {"created_at", time(r.created_at)},
            {"next_attempt_at", time(r.next_attempt_at)}};
}

inline nlohmann::json unreadable_json(const sqlite::outbox_row_error& bad) {
    return {{"sequence", bad.sequence}, {"id", bad.message_id}, {"error", bad.what}};
}

/// One unreadable row, for text output (stored text escaped).
inline std::string unreadable_text(const sqlite::outbox_row_error& bad) {
    return "row " + std::to_string(bad.sequence) + " (id \"" + printable(bad.message_id) +
           "\") cannot be read: " + printable(bad.what);
}

inline void explain(std::ostream& err, std::error_code ec, const std::string& text) {
    err << ec.message();
    if (!text.empty())
        err << " (" << printable(text) << ")";
    if (ec == letterbox::errc::store_busy)
        err << "; another process holds the write lock, try again";
    else if (ec == letterbox::errc::store_readonly)
        err << "; the file, its directory or its -wal/-shm files are read-only: run as a user "
               "who can write them";
    else if (ec == letterbox::errc::store_schema_too_old)
        err << "; open it once for writing to migrate it: start the application that uses it, "
               "or run `letterbox outbox retry` or `purge` on it";
}

/// A database failure of the store: reported with the driver's text; `internal`.
inline int store_failure(std::ostream& err, const sqlite::database& db, std::string_view what,
                         std::error_code ec) {
    err << "letterbox: " << what << " failed: ";
    explain(err, ec, db.last_error_message());
    err << "\n";
    return internal;
}

} // namespace detail

/// Runs `letterbox outbox <command>` on the database file `args.db`, which must exist and be a
/// letterbox database. Returns the exit code; `now` is the wall time the command measures ages
/// and unparks with.
///
/// `status` opens the file read-only (`database_options::read_only`): it changes nothing in it.
/// `retry` and `purge` open it for writing but never create letterbox's tables
/// (`create_schema_if_missing = false`). Either way a file that is not a letterbox database is
/// refused, untouched, with `not_a_letterbox_database`.
inline int run_outbox(const outbox_arguments& args, std::ostream& out, std::ostream& err,
                      store_time now = std::chrono::system_clock::now()) {
    sqlite::database_options options;
    options.create_if_missing = false;
    options.create_schema_if_missing = false;
    options.read_only = args.command == "status";
    options.busy_timeout = std::chrono::seconds{2};
    std::error_code ec;
    auto db = sqlite::database::open(args.db, options, ec);
    if (ec == letterbox::errc::store_not_a_database) {
        err << "letterbox: '" << shown(args.db) << "' is not a letterbox database ("
            << printable(db.last_error_message())
            << "); check --db (it must be the SQLite file of a letterbox outbox); the file was "
               "not changed\n";
        return not_a_letterbox_database;
    }
    if (ec) {
        err << "letterbox: cannot open the database '" << shown(args.db) << "': ";
        detail::explain(err, ec, db.last_error_message());
        err << "; check --db (the file must exist and be a letterbox database)\n";
        return cannot_connect;
    }
    sqlite::outbox_store store(db);

    if (args.command == "status") {
        const auto stats = store.stats(now, ec);
        if (ec)
            return detail::store_failure(err, db, "reading the outbox counts", ec);
        outbox_query q;
        q.status = args.status;
        q.limit = args.limit;
        std::vector<sqlite::outbox_row_error> unreadable;
        const auto rows = store.list(q, unreadable, ec);
        if (ec)
            return detail::store_failure(err, db, "listing the outbox rows", ec);
        const auto lag = std::chrono::duration_cast<std::chrono::seconds>(stats.oldest_pending_age);
        const std::size_t shown = rows.size() + unreadable.size();
        if (args.json) {
            nlohmann::json list = nlohmann::json::array();
            for (const auto& r : rows)
                list.push_back(detail::row_json(r));
            nlohmann::json bad = nlohmann::json::array();
            for (const auto& b : unreadable)
                bad.push_back(detail::unreadable_json(b));
            out << json_text({{"stats",
                               {{"pending", stats.pending},
                                {"leased", stats.leased},
                                {"parked", stats.parked},
                                {"published", stats.published},
                                {"oldest_pending_age_seconds", lag.count()}}},
                              {"status", std::string(to_string(args.status))},
                              {"rows", std::move(list)},
                              {"unreadable_rows", std::move(bad)}})
                << "\n";
        } else {
            out << "pending:    " << stats.pending << " (leased " << stats.leased << ")\n"
                << "parked:     " << stats.parked << "\n"
                << "published:  " << stats.published << "\n"
                << "oldest pending row: " << lag.count() << " s old\n";
            out << to_string(args.status) << " rows (" << shown
                << (shown == args.limit ? ", more not shown" : "") << "):\n";
            // Rows and unreadable rows in sequence order, as the table holds them.
            auto bad = unreadable.begin();
            for (const auto& r : rows) {
                for (; bad != unreadable.end() && bad->sequence < r.sequence; ++bad)
                    out << "  " << detail::unreadable_text(*bad) << "\n";
                out << "  " << r.sequence << "  " << letterbox::to_string(r.msg.id) << "  "
                    << (r.msg.type.empty() ? "-" : printable(r.msg.type)) << "  attempts "
                    << r.attempts
                    << (r.last_error.empty() ? std::string()
                                             : "  last error: " + printable(r.last_error))
                    << "\n";
            }
            for (; bad != unreadable.end(); ++bad)
                out << "  " << detail::unreadable_text(*bad) << "\n";
        }
        if (!unreadable.empty()) {
            err << "letterbox: " << unreadable.size()
                << " row(s) could not be read (listed above); they were not written by letterbox "
                   "or were damaged since\n";
            return partial;
        }
        return ok;
    }

    if (args.command == "purge") {
        const auto removed = store.purge_published(now - args.older_than, ec);
        if (ec)
            return detail::store_failure(err, db, "purging published rows", ec);
        if (args.json)
            out << json_text({{"removed", removed}}) << "\n";
        else
            out << "removed " << removed << " published " << (removed == 1 ? "row" : "rows")
                << " older than " << args.older_than_text << "\n";
        return ok;
    }

    // retry
    std::vector<message_id> ids;
    std::vector<sqlite::outbox_row_error> unreadable;
    if (args.all_parked) {
        outbox_query q;
        q.status = outbox_status::parked;
        q.limit = 1000;
        for (std::size_t page = 0; page < 1'000'000; ++page) { // bounded: sequences only grow
            std::vector<sqlite::outbox_row_error> bad;
            const auto rows = store.list(q, bad, ec);
            if (ec)
                return detail::store_failure(err, db, "listing the parked rows", ec);
            std::uint64_t last = q.after_sequence;
            for (const auto& r : rows) {
                ids.push_back(r.msg.id);
                last = std::max(last, r.sequence);
            }
            for (auto& b : bad) {
                last = std::max(last, b.sequence);
                unreadable.push_back(std::move(b));
            }
            if (rows.size() + bad.size() < q.limit)
                break;
            q.after_sequence = last;
        }
    } else {
        for (const auto& text : args.ids)
            ids.push_back(*parse_message_id(text));
    }
    std::size_t retried = 0;
    std::size_t missing = 0;
    nlohmann::json failures = nlohmann::json::array();
    std::error_code store_error;
    std::size_t untried = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const auto& id = ids[i];
        const auto e = store.unpark(id, now);
        if (!e) {
            ++retried;
            continue;
        }
        if (letterbox::is_store_error(e)) {
            // The database itself failed (locked, read-only, full, ...): the other rows would
            // fail the same way, each after its own wait. Stop, and say what was not tried.
            store_error = e;
            untried = ids.size() - i;
            break;
        }
        std::string why;
        if (e == letterbox::errc::record_not_found) {
            ++missing;
            why = "no outbox row has this id";
        } else if (e == letterbox::errc::invalid_state) {
            why = "the row is not parked (only parked rows can be retried)";
        } else {
            why = e.message();
        }
        failures.push_back({{"id", letterbox::to_string(id)}, {"error", why}});
    }
    if (args.json) {
        nlohmann::json bad = nlohmann::json::array();
        for (const auto& b : unreadable)
            bad.push_back(detail::unreadable_json(b));
        nlohmann::json result{{"retried", retried},
                              {"failed", failures.size()},
                              {"failures", failures},
                              {"unreadable_rows", std::move(bad)}};
        if (store_error)
            result["not_tried"] = untried;
        out << json_text(result) << "\n";
    } else {
        out << "retried " << retried << (retried == 1 ? " row" : " rows")
            << (retried > 0 ? " (now pending)" : "");
        if (!failures.empty())
            out << ", failed " << failures.size();
        if (!unreadable.empty())
            out << ", unreadable " << unreadable.size();
        if (store_error)
            out << ", not tried " << untried;
        out << "\n";
        for (const auto& f : failures)
            out << "  failed " << f["id"].get<std::string>() << ": "
                << f["error"].get<std::string>() << "\n";
        for (const auto& b : unreadable)
            out << "  " << detail::unreadable_text(b) << "; not retried\n";
    }
    if (store_error)
        return detail::store_failure(err, db,
                                     "retrying (" + std::to_string(untried) +
                                         " row(s) not tried, " + std::to_string(retried) +
                                         " retried before)",
                                     store_error);
    if (failures.empty() && unreadable.empty())
        return ok;
    if (retried == 0 && unreadable.empty() && missing == failures.size()) {
        err << "letterbox: no such outbox row; list the parked rows with `letterbox outbox status "
               "--db "
            << shown(args.db) << "`\n";
        return not_found;
    }
    err << "letterbox: " << (failures.size() + unreadable.size())
        << " row(s) could not be retried (listed above)\n";
    return partial;
}

} // namespace letterbox::cli
