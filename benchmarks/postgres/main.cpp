// SPDX-License-Identifier: BSL-1.0
//
// bench_postgres: the PostgreSQL outbox (issue 23), each figure against a baseline measured in
// the same run, on the server LETTERBOX_POSTGRES_URL names (the machine is a shared 2-core box,
// and the server runs on it: only ratios are stable).
//
//   append    One unit of work per enrollment (BEGIN; INSERT the enrollment into a table of the
//             benchmark's own; postgres::outbox_store::add; COMMIT) through postgres::database
//             and postgres::unit_of_work, with outbox_options::notify off and on, against raw
//             libpq running the same two INSERTs (the enrollment, and the event's row in the same
//             outbox table with the same values) as prepared statements between BEGIN and COMMIT,
//             the baseline. Target: >= 0.9x. Two `floor` rows split the gap: raw libpq running
//             letterbox's own INSERT (read back from pg_prepared_statements: the aggregate's
//             advisory lock, ON CONFLICT, and with notify the pg_notify) instead of the plain
//             one. `--clients C` runs C connections at once, each with its share of the units
//             (PostgreSQL serialises the commits of notifying transactions).
//   drain     1, 2 and 4 relays draining N pre-inserted rows of M aggregates. Each relay is an
//             outbox_relay with its own io_context thread, its own in-memory broker (the
//             transport, with publisher confirms and a consumer that acks), its own
//             postgres::database (connection pool), its own owner, and its store calls on a
//             thread_pool of one thread (relay_options::store_executor). The relays run in this
//             process; nothing but the database is shared between them, as between processes.
//             Rows/s from the relays' start to the last row marked published, and the ratio to
//             one relay. Target: 4 relays >= 2.5x one. Printed with it, to say where the time
//             goes: the CPU time of this process and of the server's processes over the drain
//             (/proc); the time of the relays' claim and mark calls (timed around the store),
//             and of the claims that found nothing; the entries the server read from the
//             outbox's indexes and the share of HOT updates (pg_stat_user_indexes and _tables);
//             and what the relays' backends were doing, sampled in pg_stat_activity.
//   latency   Commit -> confirmed publish: one relay with an outbox_listener (LISTEN/NOTIFY) on
//             its I/O thread and a poll interval of 10 s, so that only the announcements wake
//             it; a producer thread (a database of its own) commits one enrollment every
//             `--interval-ms` ms (open loop). Each row's latency is the time from its commit's
//             return to the relay's `confirmed` event (relay_options::on_event). The baseline:
//             the same with notify off, the relay finding rows by its poll (the default, 1 s).
//             Target: p99 < 10 ms.
//
// Rates use wall time. Each row alternates its sides `--repeat` times (default 3) and reports
// medians with the spread of their rounds, and the machine's load at the start and the end
// (report.hpp). Every run checks its result (rows written, published, delivered, confirmed) and
// exits 1 on a mismatch. Each run uses a schema of its own (`letterbox_bench_<pid>_...`), dropped
// when it ends.
//
// The server: LETTERBOX_POSTGRES_URL (tests/tools/postgres.sh exports it; docs/benchmarks.md).
// Without it the program says so and exits with status 0 (nothing measured).
//
// Usage: bench_postgres [--rows N] [--clients C] [--drain-rows N] [--aggregates M] [--batch B]
//                       [--commits K] [--interval-ms I] [--repeat R] [--only append|drain|latency]
//                       [--relays 1,2,4] [--relay-synchronous-commit on|off]
// `--relays` lists the relay counts of the drain row (the ratio is printed with 1 and 4).
// `--relay-synchronous-commit off` opens the relays' databases (drain and latency rows) with
// `synchronous_commit=off`, so that their claims and marks do not wait for the WAL flush: it
// measures what that wait costs (a crash of the server may then forget a lease, which only
// makes the row claimable again, or a mark, which makes its row published again).
#include <letterbox/postgres.hpp>

#include <letterbox/letterbox.hpp>
#include <letterbox/outbox/outbox_relay.hpp>

#include "../report.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <libpq-fe.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace lb = letterbox;
namespace pg = letterbox::postgres;
using namespace std::chrono_literals;
using wall = std::chrono::steady_clock;

namespace {

std::atomic<int> failures{0}; // expect() runs on the clients' and the relays' threads too
void expect(bool ok, const std::string& what) {
    if (!ok) {
        std::fprintf(stderr, "MISMATCH: %s\n", what.c_str());
        ++failures;
    }
}

std::string url;       // LETTERBOX_POSTGRES_URL
std::string relay_url; // the relays' connections: `url`, or with `--relay-synchronous-commit off`

std::mutex schemas_mutex;
std::vector<std::string> live_schemas; // the scratch schemas not dropped yet

/// Stops the benchmark with `what`, after dropping the scratch schemas (best effort: exit does
/// not run their destructors).
[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "bench_postgres: %s\n", what.c_str());
    std::vector<std::string> schemas;
    {
        std::lock_guard lock(schemas_mutex);
        schemas.swap(live_schemas);
    }
    if (!schemas.empty()) {
        PGconn* c = PQconnectdb(url.c_str());
        PQsetNoticeProcessor(
            c, [](void*, const char*) {}, nullptr);
        for (const auto& name : schemas)
            if (PQstatus(c) == CONNECTION_OK)
                PQclear(PQexec(c, ("DROP SCHEMA IF EXISTS " + name + " CASCADE").c_str()));
        PQfinish(c);
    }
    std::exit(1);
}

double seconds_since(wall::time_point t0) {
    return std::chrono::duration<double>(wall::now() - t0).count();
}

/// `conninfo` with the server setting `setting` (`name=value`) for its sessions (libpq's
/// `options`), in a URI or in the key/value form.
std::string with_setting(const std::string& conninfo, const std::string& setting) {
    if (conninfo.rfind("postgresql://", 0) == 0 || conninfo.rfind("postgres://", 0) == 0) {
        std::string encoded = "-c";
        for (const char c : setting)
            encoded += c == '=' ? std::string("%3D") : std::string(1, c);
        return conninfo + (conninfo.find('?') == std::string::npos ? "?" : "&") +
               "options=" + encoded;
    }
    return conninfo + " options='-c" + setting + "'";
}

// ---- raw libpq, for the baselines and for the benchmark's own bookkeeping -----------------

/// A libpq connection that stops the benchmark with the server's message when a statement
/// fails (a baseline that fails silently measures nothing).
class raw_connection {
public:
    raw_connection()
        : conn_(PQconnectdb(url.c_str())) {
        if (PQstatus(conn_) != CONNECTION_OK)
            die(std::string("cannot connect: ") + PQerrorMessage(conn_));
        PQsetNoticeProcessor(
            conn_, [](void*, const char*) {}, nullptr); // DROP ... CASCADE
    }
    raw_connection(const raw_connection&) = delete;
    raw_connection& operator=(const raw_connection&) = delete;
    ~raw_connection() { PQfinish(conn_); }

    PGconn* get() const noexcept { return conn_; }

    /// Runs `sql` (simple query protocol); returns its rows' first column as text.
    std::vector<std::string> query(const std::string& sql) {
        PGresult* r = PQexec(conn_, sql.c_str());
        check(r, sql);
        std::vector<std::string> out;
        for (int i = 0; i < PQntuples(r); ++i)
            out.emplace_back(PQgetvalue(r, i, 0));
        PQclear(r);
        return out;
    }
    void exec(const std::string& sql) { (void)query(sql); }
    std::int64_t scalar(const std::string& sql) {
        const auto rows = query(sql);
        return rows.empty() ? -1 : std::stoll(rows.front());
    }

    void prepare(const char* name, const std::string& sql, int params) {
        PGresult* r = PQprepare(conn_, name, sql.c_str(), params, nullptr);
        check(r, sql);
        PQclear(r);
    }
    /// Runs the prepared statement `name`; `formats[i]` 1 sends parameter i in binary.
    void run(const char* name, std::span<const char* const> values, std::span<const int> lengths,
             std::span<const int> formats) {
        PGresult* r = PQexecPrepared(conn_, name, static_cast<int>(values.size()), values.data(),
                                     lengths.data(), formats.data(), 0);
        check(r, name);
        PQclear(r);
    }

private:
    void check(PGresult* r, const std::string& what) {
        const auto status = PQresultStatus(r);
        if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
            const std::string message = PQresultErrorMessage(r);
            PQclear(r);
            die(what.substr(0, 120) + ": " + message);
        }
    }

    PGconn* conn_;
};

/// A schema of one run, `letterbox_bench_<pid>_<what>_<n>`: letterbox creates it when a
/// database opens on it, and it is dropped with everything in it when this ends.
class scratch_schema {
public:
    explicit scratch_schema(const char* what)
        : name_("letterbox_bench_" + std::to_string(::getpid()) + "_" + what + "_" +
                std::to_string(++count_)) {
        {
            std::lock_guard lock(schemas_mutex);
            live_schemas.push_back(name_);
        }
        (void)open("bench-setup", 1); // creates it, with letterbox's tables
    }
    scratch_schema(const scratch_schema&) = delete;
    scratch_schema& operator=(const scratch_schema&) = delete;
    ~scratch_schema() {
        raw_connection c;
        c.exec("DROP SCHEMA IF EXISTS " + name_ + " CASCADE");
        std::lock_guard lock(schemas_mutex);
        std::erase(live_schemas, name_);
    }

    const std::string& name() const noexcept { return name_; }

    /// A database on this schema, its connections named `application` in pg_stat_activity.
    pg::database open(const std::string& application, std::size_t connections,
                      const std::string& conninfo = url) const {
        pg::database_options o;
        o.schema = name_;
        o.application_name = application;
        o.max_connections = connections;
        return pg::database::open(conninfo, o);
    }

private:
    static inline int count_ = 0;
    std::string name_;
};

// ---- CPU time: this process, and the server's processes -----------------------------------

double process_cpu_seconds() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    const auto s = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
    };
    return s(u.ru_utime) + s(u.ru_stime);
}

/// The fields of /proc/<pid>/stat after the command's closing parenthesis, split on spaces
/// (field 3, the state, is the first); empty when the process is gone.
std::vector<std::string> proc_stat(const std::string& pid) {
    std::ifstream in("/proc/" + pid + "/stat");
    std::string text;
    std::getline(in, text);
    const auto close = text.rfind(')');
    if (close == std::string::npos)
        return {};
    std::istringstream fields(text.substr(close + 2));
    std::vector<std::string> out;
    for (std::string f; fields >> f;)
        out.push_back(f);
    return out;
}

/// CPU seconds used by a PostgreSQL server on this machine: its postmaster, the children alive
/// now (backends, walwriter, checkpointer, autovacuum, ...) and the children it has reaped
/// (`cutime`, `cstime`), so that the difference of two readings covers a child that exited in
/// between. 0 when /proc shows nothing (a server on another machine).
class server_cpu {
public:
    /// The server that serves `conn`: the parent of its backend.
    explicit server_cpu(raw_connection& conn) {
        const auto backend = proc_stat(std::to_string(PQbackendPID(conn.get())));
        if (backend.size() > 1)
            postmaster_ = backend[1]; // field 4, the parent
    }
    bool available() const noexcept { return !postmaster_.empty(); }

    double seconds() const {
        if (!available())
            return 0;
        static const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
        const auto ticks = [](const std::vector<std::string>& f, std::size_t from,
                              std::size_t count) {
            double t = 0;
            for (std::size_t i = from; i < from + count && i < f.size(); ++i)
                t += std::stod(f[i]);
            return t;
        };
        // utime, stime, cutime, cstime are fields 14-17: 11-14 here.
        double total = ticks(proc_stat(postmaster_), 11, 4);
        for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
            const auto pid = entry.path().filename().string();
            if (pid.find_first_not_of("0123456789") != std::string::npos)
                continue;
            const auto f = proc_stat(pid);
            if (f.size() > 12 && f[1] == postmaster_)
                total += ticks(f, 11, 2);
        }
        return total / tick;
    }

private:
    std::string postmaster_;
};

// ---- the workload -------------------------------------------------------------------------

/// The enrollment service's event for enrollment `id`: aggregate `student-<id % aggregates>`.
lb::outbox_entry enrollment_event(lb::message_id_generator& ids, std::int64_t id,
                                  std::int64_t aggregates) {
    lb::outbox_entry e;
    e.aggregate_type = "student";
    e.aggregate_id = "student-" + std::to_string(id % aggregates);
    e.msg = lb::make_message(ids, "enrollment.confirmed", "enrollments", "enrollment.confirmed",
                             nlohmann::json{{"enrollment", id}, {"student", e.aggregate_id}});
    return e;
}

std::vector<lb::outbox_entry> enrollment_events(std::size_t n, std::int64_t aggregates) {
    lb::message_id_generator ids; // time-ordered, as a producer's default generator gives
    std::vector<lb::outbox_entry> v;
    v.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
        v.push_back(enrollment_event(ids, static_cast<std::int64_t>(i), aggregates));
    return v;
}

void create_enrollments(const scratch_schema& s) {
    raw_connection c;
    c.exec("CREATE TABLE " + s.name() +
           ".enrollments(id bigint PRIMARY KEY, student text NOT NULL, course text NOT NULL)");
}

std::string business_sql(const scratch_schema& s) {
    return "INSERT INTO " + s.name() +
           ".enrollments(id, student, course) VALUES ($1, $2, 'cpp-101')";
}

// ---- append -------------------------------------------------------------------------------

enum class append_side { letterbox_off, letterbox_on, baseline, floor_off, floor_on };

constexpr std::size_t warm_up_units = 20; // per client, before the clock starts

/// letterbox's INSERT of an outbox row, with `{schema}` where the schema's name was: read back
/// from pg_prepared_statements after an `add`, so that the floor rows run exactly what the store
/// runs.
std::string letterbox_insert_sql(bool notify) {
    scratch_schema s("probe");
    auto db = s.open("bench-probe", 1);
    pg::outbox_store outbox(db, pg::outbox_options{.notify = notify});
    lb::message_id_generator ids;
    auto uow = db.begin();
    expect(!outbox.add(uow, enrollment_event(ids, 1, 1), std::chrono::system_clock::now()),
           "probe: add");
    std::error_code ec;
    auto r = uow.connection().exec("SELECT statement FROM pg_prepared_statements WHERE statement "
                                   "LIKE '%INSERT INTO%letterbox_outbox%' AND statement NOT LIKE "
                                   "'%pg_prepared_statements%'",
                                   {}, ec);
    if (ec || r.rows() != 1)
        die("cannot read letterbox's INSERT back from pg_prepared_statements");
    std::string sql(r.text(0, 0));
    (void)uow.rollback();
    for (auto at = sql.find(s.name()); at != std::string::npos; at = sql.find(s.name(), at))
        sql.replace(at, s.name().size(), "{schema}");
    return sql;
}

/// `sql` with `{schema}` replaced by the name of `s`.
std::string in_schema(std::string sql, const scratch_schema& s) {
    for (auto at = sql.find("{schema}"); at != std::string::npos; at = sql.find("{schema}", at))
        sql.replace(at, 8, s.name());
    return sql;
}

/// One client of the letterbox sides: units `[first, last)` of `events`.
void append_letterbox_units(pg::database& db, pg::outbox_store& outbox, const std::string& business,
                            const std::vector<lb::outbox_entry>& events, std::size_t first,
                            std::size_t last) {
    const auto now = std::chrono::system_clock::now();
    for (std::size_t i = first; i < last; ++i) {
        std::error_code ec;
        auto uow = db.begin(ec);
        if (!ec)
            (void)uow.connection().exec(
                business,
                {pg::param(static_cast<std::int64_t>(i)), pg::param::text(events[i].aggregate_id)},
                ec);
        if (!ec)
            ec = outbox.add(uow, events[i], now);
        if (!ec)
            ec = uow.commit();
        if (ec) {
            expect(false,
                   "letterbox append: " + ec.message() + " (" + db.last_error_message() + ")");
            return;
        }
    }
}

/// What the raw sides send for one event, prepared before the clock starts: the baseline is
/// the cost of the statements alone (letterbox encodes the headers and properties in `add`).
struct raw_event {
    std::string id, enrollment, headers, properties, created;
};

raw_event raw_values(const lb::outbox_entry& e, std::size_t i) {
    using lb::detail::row_codec::encode_headers;
    using lb::detail::row_codec::encode_properties;
    return {lb::to_string(e.msg.id), std::to_string(i), encode_headers(e.msg.headers).value(),
            encode_properties(e.msg.properties),
            std::to_string(lb::detail::to_column(std::chrono::system_clock::now()))};
}

/// One client of the raw sides: its own connection, the two INSERTs prepared, units
/// `[first, last)`; `start` is counted down once the warm-up units are done.
void append_raw_units(const std::string& event_sql, const std::string& business,
                      const std::vector<lb::outbox_entry>& events,
                      const std::vector<raw_event>& values, std::size_t first, std::size_t last,
                      std::size_t warm, std::latch& ready, std::latch& start) {
    raw_connection c;
    c.prepare("business", business, 2);
    c.prepare("event", event_sql, 10);
    const auto unit = [&](std::size_t i) {
        const auto& e = events[i];
        const auto& v = values[i];
        c.exec("BEGIN");
        const char* b[] = {v.enrollment.c_str(), e.aggregate_id.c_str()};
        const int bl[] = {0, 0};
        const int bf[] = {0, 0};
        c.run("business", b, bl, bf);
        const char* p[] = {v.id.c_str(),       e.aggregate_type.c_str(), e.aggregate_id.c_str(),
                           e.msg.type.c_str(), e.msg.exchange.c_str(),   e.msg.routing_key.c_str(),
                           v.headers.data(),   v.properties.data(),      e.msg.body.data(),
                           v.created.c_str()};
        const int pl[] = {0,
                          0,
                          0,
                          0,
                          0,
                          0,
                          static_cast<int>(v.headers.size()),
                          static_cast<int>(v.properties.size()),
                          static_cast<int>(e.msg.body.size()),
                          0};
        const int pf[] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 0};
        c.run("event", p, pl, pf);
        c.exec("COMMIT");
    };
    for (std::size_t i = first; i < first + warm; ++i)
        unit(i);
    ready.count_down();
    start.wait();
    for (std::size_t i = first + warm; i < last; ++i)
        unit(i);
}

/// Units per second of one side: `rows` timed units over `clients` connections at once.
double append_run(append_side side, std::size_t rows, unsigned clients,
                  const std::map<bool, std::string>& letterbox_sql) {
    scratch_schema s("append");
    create_enrollments(s);
    const auto business = business_sql(s);
    const std::size_t per_client = warm_up_units + rows / clients;
    const std::size_t total = per_client * clients;
    const auto events = enrollment_events(total, 1000);
    const bool is_letterbox =
        side == append_side::letterbox_off || side == append_side::letterbox_on;

    std::latch ready(clients);
    std::latch start(1);
    std::vector<std::thread> threads;
    double rate = 0;
    if (is_letterbox) {
        auto db = s.open("bench-append", clients);
        pg::outbox_store outbox(db,
                                pg::outbox_options{.notify = side == append_side::letterbox_on});
        for (unsigned c = 0; c < clients; ++c)
            threads.emplace_back([&, c] {
                const std::size_t first = c * per_client;
                append_letterbox_units(db, outbox, business, events, first, first + warm_up_units);
                ready.count_down();
                start.wait();
                append_letterbox_units(db, outbox, business, events, first + warm_up_units,
                                       first + per_client);
            });
        ready.wait();
        const auto t0 = wall::now();
        start.count_down();
        for (auto& t : threads)
            t.join();
        rate = static_cast<double>(total - warm_up_units * clients) / seconds_since(t0);
        std::error_code ec;
        expect(outbox.stats(std::chrono::system_clock::now(), ec).pending == total && !ec,
               "append: every unit left one pending row");
    } else {
        // letterbox created the schema (the same outbox table and indexes); from here on only
        // raw libpq calls touch it.
        std::string event_sql;
        if (side == append_side::baseline)
            event_sql = "INSERT INTO " + s.name() +
                        ".letterbox_outbox (message_id, aggregate_type, aggregate_id, event_type, "
                        "exchange, routing_key, headers, properties, payload, created_at, "
                        "next_attempt_at) VALUES ($1::uuid, $2::text, $3::text, $4::text, "
                        "$5::text, $6::text, $7::bytea, $8::bytea, $9::bytea, $10::bigint, "
                        "$10::bigint)";
        else
            event_sql = in_schema(letterbox_sql.at(side == append_side::floor_on), s);
        std::vector<raw_event> values;
        values.reserve(total);
        for (std::size_t i = 0; i < total; ++i)
            values.push_back(raw_values(events[i], i));
        for (unsigned c = 0; c < clients; ++c)
            threads.emplace_back([&, c] {
                const std::size_t first = c * per_client;
                append_raw_units(event_sql, business, events, values, first, first + per_client,
                                 warm_up_units, ready, start);
            });
        ready.wait();
        const auto t0 = wall::now();
        start.count_down();
        for (auto& t : threads)
            t.join();
        rate = static_cast<double>(total - warm_up_units * clients) / seconds_since(t0);
    }
    raw_connection c;
    expect(c.scalar("SELECT count(*) FROM " + s.name() + ".letterbox_outbox") ==
                   static_cast<std::int64_t>(total) &&
               c.scalar("SELECT count(*) FROM " + s.name() + ".enrollments") ==
                   static_cast<std::int64_t>(total),
           "append: one enrollment and one outbox row per unit");
    return rate;
}

// ---- drain --------------------------------------------------------------------------------

/// postgres::outbox_store with its claims and batches of marks timed (they run on the relay's
/// store thread, one at a time).
class timed_store : public pg::outbox_store {
public:
    using pg::outbox_store::outbox_store;

    std::vector<lb::outbox_record> claim(std::string_view owner, std::size_t max_rows,
                                         lb::store_time::duration lease, lb::store_time now,
                                         std::error_code& ec) {
        const auto t0 = wall::now();
        auto rows = pg::outbox_store::claim(owner, max_rows, lease, now, ec);
        const auto ns = elapsed_ns(t0);
        claim_ns_ += ns;
        ++claims_;
        claimed_ += rows.size();
        if (rows.empty()) {
            ++empty_claims_;
            empty_claim_ns_ += ns;
        }
        return rows;
    }
    [[nodiscard]] std::error_code mark_published(const lb::message_id& id, std::string_view owner,
                                                 lb::store_time now) {
        const auto t0 = wall::now();
        const auto ec = pg::outbox_store::mark_published(id, owner, now);
        mark_ns_ += elapsed_ns(t0);
        ++marks_;
        ++marked_;
        return ec;
    }
    [[nodiscard]] std::error_code mark_published(std::span<const lb::message_id> ids,
                                                 std::string_view owner, lb::store_time now,
                                                 std::vector<std::error_code>& results) {
        const auto t0 = wall::now();
        const auto ec = pg::outbox_store::mark_published(ids, owner, now, results);
        mark_ns_ += elapsed_ns(t0);
        ++marks_;
        marked_ += ids.size();
        return ec;
    }

    struct times {
        double claim_s = 0, mark_s = 0, empty_claim_s = 0;
        std::uint64_t claims = 0, claimed = 0, empty_claims = 0, marks = 0, marked = 0;
    };
    times snapshot() const {
        return {static_cast<double>(claim_ns_.load()) / 1e9,
                static_cast<double>(mark_ns_.load()) / 1e9,
                static_cast<double>(empty_claim_ns_.load()) / 1e9,
                claims_.load(),
                claimed_.load(),
                empty_claims_.load(),
                marks_.load(),
                marked_.load()};
    }

private:
    static std::uint64_t elapsed_ns(wall::time_point t0) {
        return static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(wall::now() - t0).count());
    }
    std::atomic<std::uint64_t> claim_ns_{0}, mark_ns_{0}, empty_claim_ns_{0}, claims_{0},
        claimed_{0}, empty_claims_{0}, marks_{0}, marked_{0};
};

using relay_type = lb::outbox_relay<timed_store, lb::in_memory::transport, lb::steady_clock>;

/// One relay as if in a process of its own: its I/O thread with an in-memory broker (the
/// queue `access` bound to the exchange `enrollments`, a consumer that acks and counts), its
/// database and pool, its store thread, its owner.
struct relay_rig {
    boost::asio::io_context io;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{
        io.get_executor()};
    lb::steady_clock clock;
    lb::in_memory::broker broker{io.get_executor(), clock};
    lb::in_memory::transport transport{broker, "bench"};
    std::atomic<std::size_t> received{0};
    pg::database db;
    timed_store store;
    boost::asio::thread_pool store_thread{1};
    std::optional<relay_type> relay;
    std::atomic<bool> finished{false};
    std::thread thread;

    relay_rig(const scratch_schema& s, const std::string& owner, lb::relay_options options)
        : db(s.open(owner, 2, relay_url))
        , store(db) {
        std::optional<std::error_code> declared;
        transport.async_declare(lb::topology::exchange{.name = "enrollments",
                                                       .type = lb::topology::exchange_type::topic},
                                [](std::error_code) {});
        transport.async_declare(lb::topology::queue{.name = "access"}, [](std::error_code) {});
        transport.async_bind({"enrollments", "access", "enrollment.#"},
                             [&](std::error_code ec) { declared = ec; });
        while (!declared && io.run_one_for(1s) > 0) {
        }
        expect(declared && !*declared, "drain: the in-memory topology");
        lb::consume_options c;
        c.queue = "access";
        c.prefetch = 1000;
        transport.async_consume(
            c,
            [this](lb::delivery d) {
                ++received;
                transport.async_ack(d, [](std::error_code) {});
            },
            [](std::error_code ec, std::string) { expect(!ec, "drain: consume"); });
        options.owner = owner;
        options.store_executor = store_thread.get_executor();
        relay.emplace(store, transport, clock, options);
    }
    relay_rig(const relay_rig&) = delete;
    relay_rig& operator=(const relay_rig&) = delete;
    ~relay_rig() { shut_down(); }

    void start() {
        thread = std::thread([this] { io.run(); });
        boost::asio::post(io, [this] {
            relay->async_run([this](std::error_code ec) {
                expect(!ec, "drain: the relay ran");
                finished = true;
            });
        });
    }
    /// Stops the relay gracefully, then the I/O thread and the store thread.
    void shut_down() {
        if (!thread.joinable())
            return;
        relay->stop();
        const auto deadline = wall::now() + 15s;
        while (!finished && wall::now() < deadline)
            std::this_thread::sleep_for(1ms);
        expect(finished.load(), "drain: the relay stopped");
        work.reset();
        io.stop();
        thread.join();
        store_thread.join();
    }
};

struct drain_result {
    double rate = 0;         // rows/s
    double seconds = 0;      // wall time of the drain
    double client_cpu = 0;   // this process, s
    double server_cpu = 0;   // the server's processes, s
    double store_busy = 0;   // mean over the relays: the share of the drain spent in store calls
    double claim_us_row = 0; // per row claimed / marked, all relays together
    double mark_us_row = 0;
    double rows_per_claim = 0;
    double empty_claims = 0;  // claims that returned no row, all relays together
    double empty_claim_s = 0; // their time
    double index_reads = 0;   // per row: entries read from the outbox's indexes by the drain
    double hot_updates = 0;   // the share of the row updates that were HOT
    std::vector<std::pair<std::string, double>> waits; // the relays' backends, by state
    std::vector<std::uint64_t> published;              // per relay
};

/// The server's counters of the outbox table of `schema`: entries read from its indexes, row
/// updates, and of those the HOT ones (no new index entries).
struct table_counters {
    double index_reads = 0, updates = 0, hot_updates = 0;
};

/// Samples, every 10 ms, what the server's backends of the relays are doing
/// (pg_stat_activity): running (`CPU`), waiting for an event (`IO:WALSync`,
/// `LWLock:BufferContent`, `Lock:transactionid`, ...), or waiting for their relay (`idle`,
/// `idle in transaction`).
class wait_sampler {
public:
    wait_sampler()
        : thread_([this] { run(); }) {}
    wait_sampler(const wait_sampler&) = delete;
    wait_sampler& operator=(const wait_sampler&) = delete;
    ~wait_sampler() { stop(); }

    /// The share of each state over every sample, largest first, stopped.
    std::vector<std::pair<std::string, double>> shares() {
        stop();
        std::vector<std::pair<std::string, double>> out;
        double total = 0;
        for (const auto& [k, n] : counts_)
            total += n;
        for (const auto& [k, n] : counts_)
            out.emplace_back(k, n / total);
        std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.second > b.second; });
        return out;
    }

private:
    void stop() {
        done_ = true;
        if (thread_.joinable())
            thread_.join();
    }
    void run() {
        raw_connection c;
        while (!done_) {
            for (auto& state :
                 c.query("SELECT CASE WHEN state = 'active' THEN coalesce(wait_event_type || ':' "
                         "|| wait_event, 'CPU') ELSE state END FROM pg_stat_activity WHERE "
                         "application_name LIKE 'bench-relay-%'"))
                ++counts_[state];
            std::this_thread::sleep_for(10ms);
        }
    }

    std::atomic<bool> done_{false};
    std::map<std::string, double> counts_; // the sampling thread's until it is joined
    std::thread thread_;
};

table_counters outbox_counters(const std::string& schema) {
    raw_connection c;
    const auto n = [&](const std::string& sql) {
        return static_cast<double>(c.scalar(sql));
    };
    table_counters t;
    t.index_reads = n("SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes WHERE "
                      "schemaname = '" +
                      schema + "' AND relname = 'letterbox_outbox'");
    t.updates = n("SELECT n_tup_upd FROM pg_stat_user_tables WHERE schemaname = '" + schema +
                  "' AND relname = 'letterbox_outbox'");
    t.hot_updates = n("SELECT n_tup_hot_upd FROM pg_stat_user_tables WHERE schemaname = '" +
                      schema + "' AND relname = 'letterbox_outbox'");
    return t;
}

drain_result drain_run(std::size_t relays, std::size_t rows, std::int64_t aggregates,
                       std::size_t batch) {
    scratch_schema s("drain");
    {
        // The rows, in units of 500 (not timed). Nobody listens: notify off.
        auto db = s.open("bench-drain-writer", 1);
        pg::outbox_store outbox(db, pg::outbox_options{.notify = false});
        const auto events = enrollment_events(rows, aggregates);
        const auto now = std::chrono::system_clock::now();
        for (std::size_t i = 0; i < rows;) {
            auto uow = db.begin();
            for (std::size_t j = 0; j < 500 && i < rows; ++j, ++i)
                expect(!outbox.add(uow, events[i], now), "drain: add");
            expect(!uow.commit(), "drain: commit the rows");
        }
    }
    raw_connection admin;
    admin.exec("VACUUM ANALYZE " + s.name() + ".letterbox_outbox");
    // The server sends a backend's counters at most once a second, and at its exit: read them
    // after the writer's connection closed, and again after the relays' did.
    std::this_thread::sleep_for(1500ms);
    const auto before = outbox_counters(s.name());

    lb::relay_options options;
    options.batch_size = batch;
    options.window = batch;
    // A relay whose claim found nothing (the claimable rows are the heads of the aggregates,
    // and the other relays hold some) claims again at its next poll, or when it marks a row
    // of an aggregate; nothing is committed during a drain, so no announcement wakes it.
    options.poll_interval = 50ms;
    options.retention = std::nullopt;
    std::vector<std::unique_ptr<relay_rig>> rigs;
    for (std::size_t r = 0; r < relays; ++r)
        rigs.push_back(std::make_unique<relay_rig>(s, "bench-relay-" + std::to_string(r), options));

    const server_cpu server(admin);
    const double server0 = server.seconds();
    const double client0 = process_cpu_seconds();
    std::optional<wait_sampler> sampler(std::in_place);
    const auto t0 = wall::now();
    for (auto& rig : rigs)
        rig->start();
    const auto published = [&] {
        std::uint64_t n = 0;
        for (auto& rig : rigs)
            n += rig->relay->counters().published;
        return n;
    };
    const auto deadline = t0 + 600s;
    while (published() < rows && wall::now() < deadline)
        std::this_thread::sleep_for(200us);
    drain_result out;
    out.seconds = seconds_since(t0);
    out.client_cpu = process_cpu_seconds() - client0;
    out.server_cpu = server.seconds() - server0;
    out.rate = static_cast<double>(rows) / out.seconds;
    out.waits = sampler->shares();

    std::size_t received = 0;
    double claim_s = 0, mark_s = 0;
    std::uint64_t claimed = 0, marked = 0, claims = 0;
    for (auto& rig : rigs) {
        const auto until = wall::now() + 10s;
        while (rig->received < rig->relay->counters().published && wall::now() < until)
            std::this_thread::sleep_for(1ms);
        rig->shut_down();
        received += rig->received;
        out.published.push_back(rig->relay->counters().published);
        const auto t = rig->store.snapshot();
        out.store_busy += (t.claim_s + t.mark_s) / out.seconds / static_cast<double>(relays);
        claim_s += t.claim_s;
        mark_s += t.mark_s;
        claimed += t.claimed;
        marked += t.marked;
        claims += t.claims;
        out.empty_claims += static_cast<double>(t.empty_claims);
        out.empty_claim_s += t.empty_claim_s;
    }
    rigs.clear(); // their connections close
    std::this_thread::sleep_for(1500ms);
    const auto after = outbox_counters(s.name());
    out.index_reads = (after.index_reads - before.index_reads) / static_cast<double>(rows);
    const double updates = after.updates - before.updates;
    out.hot_updates = updates > 0 ? (after.hot_updates - before.hot_updates) / updates : 0;
    out.claim_us_row = claimed ? claim_s * 1e6 / static_cast<double>(claimed) : 0;
    out.mark_us_row = marked ? mark_s * 1e6 / static_cast<double>(marked) : 0;
    out.rows_per_claim = claims ? static_cast<double>(claimed) / static_cast<double>(claims) : 0;

    std::uint64_t total = 0;
    for (const auto n : out.published)
        total += n;
    expect(total == rows, "drain: every row marked published once (" + std::to_string(total) +
                              " of " + std::to_string(rows) + ")");
    expect(received == rows, "drain: every row delivered once (" + std::to_string(received) +
                                 " deliveries of " + std::to_string(rows) + " rows)");
    expect(admin.scalar("SELECT count(*) FROM " + s.name() +
                        ".letterbox_outbox WHERE status <> 1") == 0,
           "drain: nothing left unpublished");
    return out;
}

// ---- latency ------------------------------------------------------------------------------

struct latencies {
    double p50 = 0, p90 = 0, p99 = 0, max = 0; // µs
    std::size_t negative = 0; // confirms seen before the producer's commit returned
};

latencies percentiles(std::vector<double> v) {
    latencies out;
    if (v.empty())
        return out;
    std::sort(v.begin(), v.end());
    const auto at = [&](std::size_t per_mille) {
        return v[std::min(v.size() - 1, v.size() * per_mille / 1000)];
    };
    out.p50 = at(500);
    out.p90 = at(900);
    out.p99 = at(990);
    out.max = v.back();
    return out;
}

latencies latency_run(bool notify, std::size_t commits, std::chrono::milliseconds interval) {
    scratch_schema s("latency");
    create_enrollments(s);
    const auto business = business_sql(s);
    auto producer_db = s.open("bench-producer", 1);
    pg::outbox_store producer_outbox(producer_db, pg::outbox_options{.notify = notify});

    // The relay's side: as if in another process.
    boost::asio::io_context io;
    auto work = boost::asio::make_work_guard(io);
    lb::steady_clock clock;
    lb::in_memory::broker broker{io.get_executor(), clock};
    lb::in_memory::transport transport{broker, "bench"};
    std::optional<std::error_code> declared;
    transport.async_declare(
        lb::topology::exchange{.name = "enrollments", .type = lb::topology::exchange_type::topic},
        [](std::error_code) {});
    transport.async_declare(lb::topology::queue{.name = "access"}, [](std::error_code) {});
    transport.async_bind({"enrollments", "access", "enrollment.#"},
                         [&](std::error_code ec) { declared = ec; });
    while (!declared && io.run_one_for(1s) > 0) {
    }
    expect(declared && !*declared, "latency: the in-memory topology");
    lb::consume_options co;
    co.queue = "access";
    co.prefetch = 1000;
    transport.async_consume(
        co, [&](lb::delivery d) { transport.async_ack(d, [](std::error_code) {}); },
        [](std::error_code ec, std::string) { expect(!ec, "latency: consume"); });

    auto relay_db = s.open("bench-relay", 2, relay_url);
    pg::outbox_store relay_store(relay_db);
    boost::asio::thread_pool store_thread(1);
    std::mutex m;
    std::map<lb::message_id, wall::time_point> confirmed; // guarded by m
    lb::relay_options options;
    options.store_executor = store_thread.get_executor();
    // With notify, only the announcements can explain a fast publish; without, the relay finds
    // rows by its poll, at the default interval.
    options.poll_interval = notify ? 10s : lb::relay_options{}.poll_interval;
    options.on_event = [&](const lb::relay_event& e) {
        if (e.what != lb::relay_event::kind::confirmed)
            return;
        const auto at = wall::now();
        std::lock_guard lock(m);
        confirmed.emplace(e.record.msg.id, at);
    };
    lb::outbox_relay relay(relay_store, transport, clock, options);
    std::optional<pg::outbox_listener> listener;
    std::atomic<bool> listening{false}, finished{false};
    std::thread io_thread([&] { io.run(); });
    boost::asio::post(io, [&] {
        relay.async_run([&](std::error_code ec) {
            expect(!ec, "latency: the relay ran");
            finished = true;
        });
        if (notify) {
            listener.emplace(io.get_executor(), relay_db, relay.waker());
            listener->start();
        }
    });
    // The listener's state lives on the I/O thread: ask it there.
    const auto ask_listening = [&] {
        boost::asio::post(io, [&] { listening = listener && listener->listening(); });
    };
    for (const auto until = wall::now() + 10s; notify && !listening && wall::now() < until;) {
        ask_listening();
        std::this_thread::sleep_for(5ms);
    }
    expect(!notify || listening, "latency: the listener listens");

    // The producer: open loop, one unit every `interval`.
    const auto events = enrollment_events(commits, 100);
    std::vector<wall::time_point> committed(commits);
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    const auto t0 = wall::now();
    for (std::size_t i = 0; i < commits; ++i) {
        std::this_thread::sleep_until(t0 + interval * static_cast<long>(i));
        std::error_code ec;
        auto uow = producer_db.begin(ec);
        if (!ec)
            (void)uow.connection().exec(
                business,
                {pg::param(static_cast<std::int64_t>(i)), pg::param::text(events[i].aggregate_id)},
                ec);
        if (!ec)
            ec = producer_outbox.add(uow, events[i], std::chrono::system_clock::now());
        if (!ec)
            ec = uow.commit();
        committed[i] = wall::now();
        expect(!ec, "latency: commit");
    }
    const auto all_confirmed = [&] {
        std::lock_guard lock(m);
        return confirmed.size() >= commits;
    };
    for (const auto until = wall::now() + options.poll_interval + 10s;
         !all_confirmed() && wall::now() < until;)
        std::this_thread::sleep_for(1ms);
    relay.stop();
    for (const auto until = wall::now() + 15s; !finished && wall::now() < until;)
        std::this_thread::sleep_for(1ms);
    // The listener stops and goes on its own thread, then the I/O thread ends.
    std::atomic<bool> listener_gone{false};
    boost::asio::post(io, [&] {
        listener.reset();
        listener_gone = true;
    });
    for (const auto until = wall::now() + 5s; !listener_gone && wall::now() < until;)
        std::this_thread::sleep_for(1ms);
    work.reset();
    io.stop();
    io_thread.join();
    store_thread.join();

    std::vector<double> samples;
    latencies out;
    {
        std::lock_guard lock(m);
        expect(confirmed.size() == commits, "latency: every commit confirmed (" +
                                                std::to_string(confirmed.size()) + " of " +
                                                std::to_string(commits) + ")");
        for (std::size_t i = 0; i < commits; ++i) {
            const auto it = confirmed.find(events[i].msg.id);
            if (it == confirmed.end())
                continue;
            const double us =
                std::chrono::duration<double, std::micro>(it->second - committed[i]).count();
            if (us < 0)
                ++out.negative;
            samples.push_back(std::max(0.0, us));
        }
    }
    const auto negative = out.negative;
    out = percentiles(std::move(samples));
    out.negative = negative;
    return out;
}

// ---- the report ---------------------------------------------------------------------------

std::string server_description() {
    raw_connection c;
    const auto setting = [&](const char* name) {
        return c.query(std::string("SHOW ") + name).front();
    };
    return "PostgreSQL " + setting("server_version") + " at " + PQhost(c.get()) + ":" +
           PQport(c.get()) + " (fsync=" + setting("fsync") +
           ", synchronous_commit=" + setting("synchronous_commit") +
           ", shared_buffers=" + setting("shared_buffers") + ")";
}

} // namespace

namespace {

int run(int argc, char** argv) {
    std::size_t rows = 2000;
    unsigned clients = 1;
    std::size_t drain_rows = 20000;
    std::int64_t aggregates = 1000;
    std::size_t batch = 200;
    std::size_t commits = 1000;
    long interval_ms = 5;
    int repeat = 3;
    std::string only;
    bool relay_synchronous_commit = true;
    std::vector<std::size_t> relay_counts{1, 2, 4};
    for (int i = 1; i < argc; i += 2) {
        const std::string flag = argv[i];
        if (i + 1 >= argc)
            die("option " + flag + " needs a value");
        const char* v = argv[i + 1];
        if (flag == "--rows")
            rows = std::strtoull(v, nullptr, 10);
        else if (flag == "--clients")
            clients = static_cast<unsigned>(std::max(1L, std::strtol(v, nullptr, 10)));
        else if (flag == "--drain-rows")
            drain_rows = std::strtoull(v, nullptr, 10);
        else if (flag == "--aggregates")
            aggregates = std::max(1LL, std::strtoll(v, nullptr, 10));
        else if (flag == "--batch")
            batch = std::max<std::size_t>(1, std::strtoull(v, nullptr, 10));
        else if (flag == "--commits")
            commits = std::strtoull(v, nullptr, 10);
        else if (flag == "--interval-ms")
            interval_ms = std::max(1L, std::strtol(v, nullptr, 10));
        else if (flag == "--repeat")
            repeat = std::max(1, std::atoi(v));
        else if (flag == "--only")
            only = v;
        else if (flag == "--relays") {
            relay_counts.clear();
            for (std::istringstream list(v); list.good();) {
                std::string n;
                std::getline(list, n, ',');
                if (const auto k = std::strtoull(n.c_str(), nullptr, 10); k > 0)
                    relay_counts.push_back(k);
            }
            if (relay_counts.empty())
                die("--relays takes a list of relay counts, such as 1,2,4");
        } else if (flag == "--relay-synchronous-commit" &&
                   (v == std::string("on") || v == std::string("off")))
            relay_synchronous_commit = v == std::string("on");
        else
            die("unknown option " + flag +
                " (--rows N, --clients C, --drain-rows N, --aggregates M, --batch B, --commits K, "
                "--interval-ms I, --repeat R, --only append|drain|latency, --relays 1,2,4, "
                "--relay-synchronous-commit on|off)");
    }
    if (!only.empty() && only != "append" && only != "drain" && only != "latency")
        die("--only must be append, drain or latency");
    // Without a server there is nothing to measure: say so and succeed, as bench_amqp does
    // without a broker, so that `make bench` (which runs every bench_*) still runs the others.
    const char* env = std::getenv("LETTERBOX_POSTGRES_URL");
    if (!env || !*env) {
        std::printf(
            "bench_postgres: SKIPPED: LETTERBOX_POSTGRES_URL is not set. Run it with a server:\n"
            "  tests/tools/postgres.sh run -- build/release/benchmarks/bench_postgres\n"
            "(docs/benchmarks.md, section \"PostgreSQL outbox\"; docs/testing-with-postgres.md)\n");
        return 0;
    }
    url = env;
    relay_url = relay_synchronous_commit ? url : with_setting(url, "synchronous_commit=off");
    const auto runs = [&](const char* row) {
        return only.empty() || only == row;
    };

    std::printf("bench_postgres: %s\n", server_description().c_str());
    std::printf("append: %zu units per side and round, %u client(s); drain: %zu rows of %lld "
                "aggregates, batch and window %zu; latency: %zu commits, one every %ld ms; %d "
                "rounds, medians; time-ordered message ids (version 7)\n\n",
                rows, clients, drain_rows, static_cast<long long>(aggregates), batch, commits,
                interval_ms, repeat);
    if (!relay_synchronous_commit)
        std::printf(
            "the relays' connections: synchronous_commit=off (their claims and marks do not "
            "wait for the WAL flush)\n");
    const bench::machine_load load;

    // ---- append
    if (runs("append")) {
        const std::map<bool, std::string> sql{{false, letterbox_insert_sql(false)},
                                              {true, letterbox_insert_sql(true)}};
        bench::rounds off, on, base, floor_off, floor_on;
        for (int r = 0; r < repeat; ++r) {
            off.add(append_run(append_side::letterbox_off, rows, clients, sql));
            base.add(append_run(append_side::baseline, rows, clients, sql));
            on.add(append_run(append_side::letterbox_on, rows, clients, sql));
            floor_off.add(append_run(append_side::floor_off, rows, clients, sql));
            floor_on.add(append_run(append_side::floor_on, rows, clients, sql));
        }
        std::printf("%-34s %10s %6s %8s   %s\n", "append (units/s, medians)", "rate", "spread",
                    "ratio", "target");
        const auto row = [&](const char* name, const bench::rounds& x, const char* note) {
            std::printf("%-34s %10.0f %6s %7.2fx   %s\n", name, x.mid(), x.spread().c_str(),
                        x.mid() / base.mid(), note);
        };
        const auto target = [&](const bench::rounds& x) {
            return x.mid() / base.mid() >= 0.9 ? ">= 0.90x: met" : ">= 0.90x: NOT met";
        };
        row("letterbox, notify off", off, target(off));
        row("letterbox, notify on", on, target(on));
        row("raw libpq, plain INSERTs (baseline)", base, "");
        row("  floor: letterbox's SQL, notify off", floor_off,
            "raw libpq running the store's INSERT");
        row("  floor: letterbox's SQL, notify on", floor_on,
            "raw libpq running the store's INSERT");
        std::printf("\n");
    }

    // ---- drain
    if (runs("drain")) {
        const auto& counts = relay_counts;
        std::map<std::size_t, bench::rounds> rate, secs, client, server, busy, claim_us, mark_us,
            per_claim, empty, empty_ms, reads, hot;
        std::map<std::size_t, std::string> shares; // of the last round
        std::map<std::size_t, std::vector<std::pair<std::string, double>>> waits;
        for (int r = 0; r < repeat; ++r)
            for (const auto n : counts) {
                const auto d = drain_run(n, drain_rows, aggregates, batch);
                rate[n].add(d.rate);
                secs[n].add(d.seconds);
                client[n].add(d.client_cpu);
                server[n].add(d.server_cpu);
                busy[n].add(d.store_busy * 100);
                claim_us[n].add(d.claim_us_row);
                mark_us[n].add(d.mark_us_row);
                per_claim[n].add(d.rows_per_claim);
                empty[n].add(d.empty_claims);
                empty_ms[n].add(d.empty_claims > 0 ? d.empty_claim_s * 1e3 / d.empty_claims : 0);
                reads[n].add(d.index_reads);
                hot[n].add(d.hot_updates * 100);
                std::string s;
                for (const auto p : d.published) {
                    if (!s.empty())
                        s += '/';
                    s += std::to_string(p);
                }
                shares[n] = s;
                waits[n] = d.waits;
            }
        const double cores = std::max(1U, std::thread::hardware_concurrency());
        std::printf("%-9s %10s %6s %7s %7s %8s %8s %8s\n", "drain", "rows/s", "spread", "ratio",
                    "wall s", "client", "server", "CPU use");
        std::printf("%-9s %10s %6s %7s %7s %8s %8s %8s\n", "(medians)", "", "", "", "", "CPU s",
                    "CPU s", "");
        for (const auto n : counts)
            std::printf("%zu relay%-3s %10.0f %6s %6.2fx %7.2f %8.2f %8.2f %7.0f%%\n", n,
                        n == 1 ? "" : "s", rate[n].mid(), rate[n].spread().c_str(),
                        rate[n].mid() / rate[counts.front()].mid(), secs[n].mid(), client[n].mid(),
                        server[n].mid(),
                        (client[n].mid() + server[n].mid()) / (cores * secs[n].mid()) * 100);
        if (rate.count(1) != 0 && rate.count(4) != 0) {
            const double scaling = rate[4].mid() / rate[1].mid();
            std::printf("4 relays / 1 relay: %.2fx   >= 2.5x: %s\n", scaling,
                        scaling >= 2.5 ? "met" : "NOT met");
        }
        std::printf("(ratio: to the first relay count; client: this process, every relay's "
                    "threads; server: the PostgreSQL server's processes; CPU use: both over %u "
                    "cores x the wall time)\n\n",
                    static_cast<unsigned>(cores));
        std::printf("%-9s %6s %8s %8s %6s %7s %8s %8s %5s  %s\n", "where the", "store", "claim",
                    "mark", "rows/", "empty", "ms per", "index", "HOT", "rows published");
        std::printf("%-9s %6s %8s %8s %6s %7s %8s %8s %5s  %s\n", "time goes", "busy", "us/row",
                    "us/row", "claim", "claims", "empty", "reads/row", "upd",
                    "per relay (last round)");
        for (const auto n : counts)
            std::printf("%zu relay%-3s %5.0f%% %8.1f %8.1f %6.0f %7.0f %8.1f %8.0f %4.0f%%  %s\n",
                        n, n == 1 ? "" : "s", busy[n].mid(), claim_us[n].mid(), mark_us[n].mid(),
                        per_claim[n].mid(), empty[n].mid(), empty_ms[n].mid(), reads[n].mid(),
                        hot[n].mid(), shares[n].c_str());
        std::printf("(store busy: the share of the drain each relay's store thread spent in claim "
                    "and mark calls, their mean; claim and mark: the calls' time over the rows, "
                    "round trips and commits included; empty claims: claims that returned no "
                    "row, and the time of one; index reads: entries the server read from the "
                    "outbox's indexes, per row drained; HOT upd: the share of row updates that "
                    "added no index entries)\n");
        // What the relays' backends were doing, sampled every 10 ms: the last round's.
        for (const auto n : counts) {
            std::printf("%zu relay%-3s backends:", n, n == 1 ? "" : "s");
            for (std::size_t i = 0; i < waits[n].size() && i < 6; ++i)
                std::printf(" %s %.0f%%%s", waits[n][i].first.c_str(), waits[n][i].second * 100,
                            i + 1 < std::min<std::size_t>(waits[n].size(), 6) ? "," : "");
            std::printf("\n");
        }
        std::printf("(the relays' server backends, sampled every 10 ms in pg_stat_activity (last "
                    "round): CPU = running; idle = waiting for the relay's next statement; "
                    "IO:WALSync = waiting for the WAL's fsync at a commit)\n\n");
    }

    // ---- latency
    if (runs("latency")) {
        std::vector<double> n50, n90, n99, nmax, p50, p90, p99, pmax;
        std::size_t negative = 0;
        for (int r = 0; r < repeat; ++r) {
            const auto with = latency_run(true, commits, std::chrono::milliseconds(interval_ms));
            const auto without =
                latency_run(false, commits, std::chrono::milliseconds(interval_ms));
            n50.push_back(with.p50);
            n90.push_back(with.p90);
            n99.push_back(with.p99);
            nmax.push_back(with.max);
            p50.push_back(without.p50);
            p90.push_back(without.p90);
            p99.push_back(without.p99);
            pmax.push_back(without.max);
            negative += with.negative + without.negative;
        }
        using bench::median;
        std::printf("latency, commit -> confirmed publish (medians of %d rounds)\n", repeat);
        std::printf("  notify on, woken by LISTEN/NOTIFY     p50 %8.0f us   p90 %8.0f us   p99 "
                    "%8.0f us   max %8.0f us\n",
                    median(n50), median(n90), median(n99), median(nmax));
        std::printf("  notify off, poll every %4lld ms (base) p50 %8.0f us   p90 %8.0f us   p99 "
                    "%8.0f us   max %8.0f us\n",
                    static_cast<long long>(lb::relay_options{}.poll_interval.count()), median(p50),
                    median(p90), median(p99), median(pmax));
        std::printf("  ratio (on / off)                      p50 %8.3fx     p99 %8.3fx\n",
                    median(n50) / median(p50), median(n99) / median(p99));
        if (negative > 0)
            std::printf(
                "  (%zu confirms came before their producer's commit() returned: counted as "
                "0 us)\n",
                negative);
        std::printf("  p99 < 10 ms: %s\n\n", median(n99) < 10000 ? "met" : "NOT met");
    }
    load.end();
    return failures == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) { // letterbox::error from database::open, begin, ...
        die(e.what());
    }
}
