// SPDX-License-Identifier: BSL-1.0
#pragma once

// The pieces the kill -9 campaigns share (issue 6): how a driver starts this test executable
// again as a child process that runs one hidden test case (the relay or the consumer role),
// kills it with SIGKILL and reaps it with deadlines; the environment that tells a child what
// to do and on which store (a SQLite file or a PostgreSQL schema, issue 23); the consumer's
// tables; and the checks run on them after each kill and at the end. The children are in
// kill9_children.cpp, the drivers in kill9_campaigns.cpp; postgres_relays.cpp starts relay
// children too.

#include <letterbox/postgres/connection.hpp>
#include <letterbox/postgres/param.hpp>
#include <letterbox/sqlite.hpp>

#include <letterbox/message.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ; // POSIX: the program declares it (unistd.h does only with _GNU_SOURCE)

namespace kill9 {

using namespace std::chrono_literals;

// ---- what a child is told, through its environment ------------------------------------------

/// The store the child works on: `sqlite` (the default) or `postgres`.
inline constexpr const char* env_store = "LETTERBOX_KILL9_STORE";
/// Where the child's tables are (the outbox for the relay, the inbox and effects for the
/// consumer): a SQLite file, or a schema of the PostgreSQL server of LETTERBOX_POSTGRES_URL.
inline constexpr const char* env_database = "LETTERBOX_KILL9_DB";
/// The relay's lease owner (unique per relay process). On PostgreSQL, also the
/// `application_name` of the child's connections (the consumer's too), so that the driver can
/// see when the server has ended the sessions of a killed child.
inline constexpr const char* env_owner = "LETTERBOX_KILL9_OWNER";
/// The queue the consumer consumes.
inline constexpr const char* env_queue = "LETTERBOX_KILL9_QUEUE";
/// Where the child dies by itself: `<point>:<n>` (raise SIGKILL at the n-th hit of the point),
/// or empty (it runs until it is done, or killed).
inline constexpr const char* env_failpoint = "LETTERBOX_KILL9_FAILPOINT";
/// The consumer's prefetch, and how long its effect takes (milliseconds).
inline constexpr const char* env_prefetch = "LETTERBOX_KILL9_PREFETCH";
inline constexpr const char* env_effect_ms = "LETTERBOX_KILL9_EFFECT_MS";
/// The consumer's group commit: deliveries per commit at most (0: one commit per delivery).
inline constexpr const char* env_group_commit = "LETTERBOX_KILL9_GROUP_COMMIT";
/// The seed of the child's own randomness (the relay's back-off jitter).
inline constexpr const char* env_seed = "LETTERBOX_KILL9_SEED";
/// The relay's lease, poll interval (milliseconds), batch size and window; each empty: the
/// campaigns' values (500 ms, 50 ms, 16, 4).
inline constexpr const char* env_lease_ms = "LETTERBOX_KILL9_LEASE_MS";
inline constexpr const char* env_poll_ms = "LETTERBOX_KILL9_POLL_MS";
inline constexpr const char* env_batch = "LETTERBOX_KILL9_BATCH";
inline constexpr const char* env_window = "LETTERBOX_KILL9_WINDOW";
/// When the relay stops gracefully: `drained` (the default: once the outbox has nothing
/// pending) or `terminated` (only at SIGTERM, for drivers whose producers keep writing). It
/// stops at SIGTERM in both cases.
inline constexpr const char* env_run_until = "LETTERBOX_KILL9_RUN_UNTIL";
/// A file the relay writes its counters to when it ends gracefully (`name=value` lines); empty:
/// none.
inline constexpr const char* env_counters = "LETTERBOX_KILL9_COUNTERS";
/// How long the child runs at most, in seconds; empty: `child_lifetime`.
inline constexpr const char* env_lifetime_s = "LETTERBOX_KILL9_LIFETIME_S";

/// The hidden test cases the children run (selected by name; never part of a ctest run).
inline constexpr const char* relay_child_test = "kill9 child: relay";
inline constexpr const char* consumer_child_test = "kill9 child: consumer";

/// The consumer's inbox key and its failpoints: after the effect's write but before the inbox
/// commit, and after the inbox commit but before the ack.
inline constexpr const char* consumer_id = "kill9-consumer";
inline constexpr std::string_view consumer_after_effect = "after_effect";
inline constexpr std::string_view consumer_after_commit = "after_commit";

/// A child gives up (and fails) after this long, even if nobody kills it.
inline constexpr auto child_lifetime = 120s;

inline std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v == nullptr ? std::string() : std::string(v);
}

/// The integer in the variable `name`, or `fallback` when it is empty.
inline std::int64_t env_int(const char* name, std::int64_t fallback) {
    const auto v = env(name);
    return v.empty() ? fallback : std::stoll(v);
}

/// The stores a campaign runs on.
enum class store_kind { sqlite, postgres };

/// The store named by `env_store`.
inline store_kind child_store() {
    const auto s = env(env_store);
    if (s.empty() || s == "sqlite")
        return store_kind::sqlite;
    if (s == "postgres")
        return store_kind::postgres;
    throw std::invalid_argument(std::string(env_store) + " must be sqlite or postgres, not " + s);
}

/// A relay's counters as it wrote them to its `env_counters` file (`name=value` lines);
/// empty when the file is missing.
inline std::map<std::string, std::uint64_t> read_counters(const std::string& path) {
    std::map<std::string, std::uint64_t> out;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        const auto eq = line.find('=');
        if (eq != std::string::npos)
            out[line.substr(0, eq)] = std::stoull(line.substr(eq + 1));
    }
    return out;
}

/// A failpoint parsed from `env_failpoint`: the point's name and the hit that kills.
struct failpoint {
    std::string point;
    std::uint64_t hit = 0;

    static std::optional<failpoint> parse(const std::string& text) {
        const auto colon = text.find(':');
        if (text.empty() || colon == std::string::npos)
            return std::nullopt;
        failpoint f;
        f.point = text.substr(0, colon);
        f.hit = std::stoull(text.substr(colon + 1));
        return f;
    }
    std::string to_string() const { return point + ":" + std::to_string(hit); }
};

/// Iterations per campaign: `pr_tier` (20, unless a campaign gives fewer), 100 with
/// LETTERBOX_EXTENDED=1 (the extended tier), or LETTERBOX_KILL9_ITERATIONS when set (to replay
/// or to try a few).
inline int iterations(int pr_tier = 20) {
    if (const auto n = env("LETTERBOX_KILL9_ITERATIONS"); !n.empty())
        return std::stoi(n);
    return env("LETTERBOX_EXTENDED") == "1" ? 100 : pr_tier;
}

// ---- child processes -------------------------------------------------------------------------

/// How a child ended: its exit code, or the signal that killed it.
struct exit_status {
    bool signaled = false;
    int value = 0; // the exit code, or the signal number

    bool killed_by_sigkill() const { return signaled && value == SIGKILL; }
    bool exited_ok() const { return !signaled && value == 0; }
    std::string describe() const {
        return signaled ? "killed by signal " + std::to_string(value)
                        : "exited with code " + std::to_string(value);
    }
};

/// This test executable started again as a child that runs the hidden test case `test`, with
/// `extra_env` added to (or replacing in) this process's environment, and its output in
/// `log_path`. The child is killed with SIGKILL when this process dies (PR_SET_PDEATHSIG), and
/// when this object is destroyed while it runs; every wait has a deadline.
class child_process {
public:
    child_process(const std::string& test, const std::map<std::string, std::string>& extra_env,
                  std::string log_path)
        : log_path_(std::move(log_path)) {
        // Everything the child needs is built before fork: between fork and exec only
        // async-signal-safe calls are allowed.
        const std::string exe = "/proc/self/exe";
        std::vector<std::string> args{exe, test};
        std::vector<std::string> vars;
        for (char** e = environ; *e != nullptr; ++e) {
            const std::string_view entry(*e);
            const auto name = std::string(entry.substr(0, entry.find('=')));
            if (extra_env.find(name) == extra_env.end())
                vars.emplace_back(entry);
        }
        for (const auto& [name, value] : extra_env)
            vars.push_back(name + "=" + value);
        std::vector<char*> argv;
        for (auto& a : args)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        std::vector<char*> envp;
        for (auto& v : vars)
            envp.push_back(v.data());
        envp.push_back(nullptr);

        const int log = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        REQUIRE(log >= 0);
        const pid_t parent = ::getpid();
        pid_ = ::fork();
        if (pid_ == 0) {
            // The child: die with the parent, send output to the log, keep no other descriptor.
            if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent)
                ::_exit(120);
            ::dup2(log, STDOUT_FILENO);
            ::dup2(log, STDERR_FILENO);
#ifdef SYS_close_range
            ::syscall(SYS_close_range, 3U, ~0U, 0U);
#endif
            ::execve(argv[0], argv.data(), envp.data());
            ::_exit(121);
        }
        ::close(log);
        REQUIRE(pid_ > 0);
    }

    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;

    ~child_process() {
        if (running()) {
            ::kill(pid_, SIGKILL);
            reap(10s);
        }
    }

    pid_t pid() const noexcept {
        return pid_;
    }

    /// Whether the child still runs (reaps it if it has just ended).
    bool running() {
        return !poll().has_value();
    }

    /// How it ended, if it has.
    std::optional<exit_status> poll() {
        if (!status_) {
            int raw = 0;
            const pid_t r = ::waitpid(pid_, &raw, WNOHANG);
            if (r == pid_)
                status_ = WIFSIGNALED(raw) ? exit_status{true, WTERMSIG(raw)}
                                           : exit_status{false, WEXITSTATUS(raw)};
            else if (r < 0)
                status_ = exit_status{false, -1}; // not our child any more: treat as gone
        }
        return status_;
    }

    /// Waits up to `timeout` for the child to end; its status, or nothing if it still runs.
    std::optional<exit_status> wait_for(std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!poll() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(1ms);
        return status_;
    }

    /// Asks the child to stop (SIGTERM), if it still runs; `wait_for` then reaps it.
    void terminate() {
        if (running())
            ::kill(pid_, SIGTERM);
    }

    /// Kills the child with SIGKILL (if it still runs) and reaps it.
    exit_status kill9() {
        if (running())
            ::kill(pid_, SIGKILL);
        const auto s = reap(10s);
        REQUIRE(s.has_value()); // SIGKILL cannot be ignored: 10 s means something is very wrong
        return *s;
    }

    /// The last lines of the child's output, for failure messages.
    std::string log_tail(std::size_t max_chars = 3000) const {
        std::ifstream in(log_path_);
        std::stringstream all;
        all << in.rdbuf();
        auto text = all.str();
        if (text.size() > max_chars)
            text = "..." + text.substr(text.size() - max_chars);
        return text;
    }

private:
    std::optional<exit_status> reap(std::chrono::milliseconds timeout) {
        return wait_for(timeout);
    }

    std::string log_path_;
    pid_t pid_ = -1;
    std::optional<exit_status> status_;
};

/// Sleeps in small steps until `done()` or `timeout`; returns whether `done()` became true.
template <class Done>
bool wait_until(Done done, std::chrono::milliseconds timeout,
                std::chrono::milliseconds step = 2ms) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        std::this_thread::sleep_for(step);
    }
    return true;
}

// ---- SQLite ---------------------------------------------------------------------------------

/// `PRAGMA integrity_check` of the file at `path`, on a fresh connection (which also recovers
/// the WAL a killed process left): "ok", or what is wrong.
inline std::string integrity_check(const std::string& path) {
    std::error_code ec;
    std::string open_error;
    auto c = letterbox::sqlite::connection::open(path, {}, ec, &open_error);
    if (ec)
        return "cannot open: " + ec.message() + " (" + open_error + ")";
    auto st = c.prepare("PRAGMA integrity_check", ec);
    if (ec)
        return "cannot prepare: " + ec.message();
    std::string result;
    while (st->step(ec))
        result += (result.empty() ? "" : "; ") + std::string(st->column_text(0));
    if (ec)
        return "failed: " + ec.message() + " (" + c.last_error_message() + ")";
    return result;
}

/// One integer that `sql` selects on `c`. Throws on failure (it is polled in loops, where an
/// assertion per call would only inflate the counts).
inline std::int64_t scalar(letterbox::sqlite::connection& c, std::string_view sql) {
    std::error_code ec;
    auto st = c.prepare(sql, ec);
    if (!ec && st->step(ec))
        return st->column_int64(0);
    throw std::runtime_error(std::string(sql) + ": " + (ec ? ec.message() : "no row") + " (" +
                             c.last_error_message() + ")");
}

/// The consumer's business tables, next to letterbox's inbox in one file:
/// - `effects`: one row per applied message, written in the idempotent unit of work. No unique
///   constraint on purpose: a duplicate effect is visible as a second row.
/// - `deliveries`: one row per delivery the consumer handled, committed on its own before the
///   idempotent unit, so that redeliveries (broker-level duplicates) can be counted.
inline constexpr const char* consumer_schema =
    "CREATE TABLE IF NOT EXISTS effects(message_id TEXT NOT NULL, pid INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS deliveries(message_id TEXT NOT NULL, redelivered INTEGER NOT "
    "NULL, pid INTEGER NOT NULL);";

/// The outcome of a campaign's iteration, read from the consumer's file at the end.
struct effect_tally {
    std::size_t expected = 0;
    /// Expected messages with no effect, with more than one, and effects of unknown ids.
    std::vector<std::string> lost;
    std::vector<std::string> duplicated;
    std::vector<std::string> phantom;
    std::size_t effects = 0;
    std::size_t inbox_records = 0;
    /// Deliveries handled, distinct messages delivered, and deliveries flagged redelivered.
    std::size_t deliveries = 0;
    std::size_t distinct_delivered = 0;
    std::size_t redelivered = 0;

    /// Deliveries beyond the first of each message (absorbed by the inbox, or redelivered
    /// before their effect committed).
    std::size_t broker_duplicates() const { return deliveries - distinct_delivered; }

    std::string describe() const {
        std::ostringstream o;
        o << expected << " expected, " << effects << " effects, " << inbox_records
          << " inbox records, " << lost.size() << " lost, " << duplicated.size()
          << " with duplicate effects, " << phantom.size() << " phantom; " << deliveries
          << " deliveries of " << distinct_delivered << " messages (" << broker_duplicates()
          << " broker-level duplicates, " << redelivered << " flagged redelivered)";
        for (const auto* list : {&lost, &duplicated, &phantom})
            if (!list->empty())
                o << "; e.g. " << list->front();
        return o.str();
    }
};

/// The tally of `expected` against the effects per message id (`count`); the other counts are
/// left to the caller.
inline effect_tally tally_counts(const std::set<std::string>& expected,
                                 const std::map<std::string, std::int64_t>& count) {
    effect_tally t;
    t.expected = expected.size();
    for (const auto& id : expected) {
        const auto it = count.find(id);
        if (it == count.end())
            t.lost.push_back(id);
        else if (it->second > 1)
            t.duplicated.push_back(id);
    }
    for (const auto& [id, n] : count) {
        t.effects += static_cast<std::size_t>(n);
        if (expected.find(id) == expected.end())
            t.phantom.push_back(id);
    }
    return t;
}

/// Reads the consumer's file at `path` against the ids that must each have had one effect.
inline effect_tally tally_effects(const std::string& path, const std::set<std::string>& expected) {
    std::error_code ec;
    auto c = letterbox::sqlite::connection::open(path, {}, ec);
    REQUIRE_FALSE(ec);
    std::map<std::string, std::int64_t> count;
    auto st = c.prepare("SELECT message_id, COUNT(*) FROM effects GROUP BY message_id", ec);
    REQUIRE_FALSE(ec);
    while (st->step(ec))
        count[std::string(st->column_text(0))] = st->column_int64(1);
    REQUIRE_FALSE(ec);
    auto t = tally_counts(expected, count);
    t.inbox_records = static_cast<std::size_t>(scalar(c, "SELECT COUNT(*) FROM letterbox_inbox"));
    t.deliveries = static_cast<std::size_t>(scalar(c, "SELECT COUNT(*) FROM deliveries"));
    t.distinct_delivered =
        static_cast<std::size_t>(scalar(c, "SELECT COUNT(DISTINCT message_id) FROM deliveries"));
    t.redelivered =
        static_cast<std::size_t>(scalar(c, "SELECT COALESCE(SUM(redelivered), 0) FROM deliveries"));
    return t;
}

// ---- PostgreSQL ------------------------------------------------------------------------------

/// LETTERBOX_POSTGRES_URL (tests/tools/postgres.sh exports it); empty when it is not set.
inline std::string postgres_url() {
    return env("LETTERBOX_POSTGRES_URL");
}

/// A connection of its own to the server, named `application_name`. Throws on failure.
inline letterbox::postgres::connection postgres_connect(std::string_view application_name) {
    std::error_code ec;
    std::string why;
    auto c = letterbox::postgres::connection::open(postgres_url(), std::chrono::seconds(10),
                                                   application_name, ec, &why);
    if (ec)
        throw std::runtime_error("cannot connect to PostgreSQL: " + ec.message() + " (" + why +
                                 ")");
    return c;
}

/// One integer that `sql` selects on `c`. Throws on failure (polled in loops, like `scalar`).
inline std::int64_t scalar(letterbox::postgres::connection& c, const std::string& sql,
                           std::initializer_list<letterbox::postgres::param> params = {}) {
    std::error_code ec;
    auto r = c.exec(sql, params, ec);
    if (!ec && r.rows() == 1)
        if (const auto v = r.int64(0, 0))
            return *v;
    throw std::runtime_error(sql + ": " + (ec ? ec.message() : "no integer") + " (" +
                             c.last_error_message() + ")");
}

/// The consumer's tables of `consumer_schema` in the PostgreSQL schema `schema`, next to
/// letterbox's inbox there.
inline std::string postgres_consumer_schema(const std::string& schema) {
    return "CREATE TABLE IF NOT EXISTS " + schema +
           ".effects(message_id uuid NOT NULL, pid bigint NOT NULL);"
           "CREATE TABLE IF NOT EXISTS " +
           schema +
           ".deliveries(message_id uuid NOT NULL, redelivered integer NOT NULL, "
           "pid bigint NOT NULL);";
}

/// `tally_effects` of the consumer's tables in the PostgreSQL schema `schema`.
inline effect_tally tally_effects(letterbox::postgres::connection& c, const std::string& schema,
                                  const std::set<std::string>& expected) {
    std::error_code ec;
    auto r =
        c.exec("SELECT message_id::text, count(*) FROM " + schema + ".effects GROUP BY message_id",
               {}, ec);
    INFO(c.last_error_message());
    REQUIRE_FALSE(ec);
    std::map<std::string, std::int64_t> count;
    for (std::size_t i = 0; i < r.rows(); ++i)
        count[std::string(r.text(i, 0))] = r.int64(i, 1).value_or(0);
    auto t = tally_counts(expected, count);
    const auto n = [&](const std::string& sql) {
        return static_cast<std::size_t>(scalar(c, sql));
    };
    t.inbox_records = n("SELECT count(*) FROM " + schema + ".letterbox_inbox");
    t.deliveries = n("SELECT count(*) FROM " + schema + ".deliveries");
    t.distinct_delivered = n("SELECT count(DISTINCT message_id) FROM " + schema + ".deliveries");
    t.redelivered = n("SELECT COALESCE(sum(redelivered), 0) FROM " + schema + ".deliveries");
    return t;
}

} // namespace kill9
