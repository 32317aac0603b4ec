// SPDX-License-Identifier: BSL-1.0
//
// Example 18: an event-sourced bank account (seed 003, exercise 4).
//
// Two accounts live as streams of events ("account-ana", "account-bruno": deposited, withdrawn)
// in an SQLite event store. Each command loads its account, decides, and appends its event at
// the version it loaded, so two writers can never both spend the same balance. The same unit of
// work adds the event to the outbox (a publishing_event_store), so every committed event is
// published at least once. A snapshot is taken every 50 events, so a load reads the latest
// snapshot and fewer than 50 events after it, however long the stream.
//
// 1. 300 commands over three days of a virtual clock: deposits, withdrawals, and overdrafts that
//    are refused (no event).
// 2. balance_at(t) for a list of times, each checked against a full replay of the stream up to
//    that time. A load as of a time uses only a snapshot no later than it.
// 3. Two projections, "balances" (per account) and "daily totals" (per day and type), kept in
//    tables of the same database with their checkpoints, each checked equal to a replay; then
//    rebuilt from position 0 and checked equal again.
// 4. A snapshot written by an older version of the fold is ignored, never applied.
//
// The program checks its own outcome and exits non-zero, with `MISMATCH: ...` on stderr, when
// it is wrong. Its database lives in a temporary directory that it removes.
//
// Needs: the sqlite component.
// Run: build/release/examples/example_18_event_sourced_account
#include <letterbox/letterbox.hpp>
#include <letterbox/sqlite.hpp>

#include <boost/asio/io_context.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <system_error>
#include <vector>

using namespace letterbox;
using namespace std::chrono_literals;

namespace {

int failures = 0;
void check(bool ok, const std::string& what) {
    if (!ok) {
        std::fprintf(stderr, "MISMATCH: %s\n", what.c_str());
        ++failures;
    }
}

void must(std::error_code ec, const char* what) {
    if (ec)
        throw letterbox::error(ec, what);
}

std::string day_of(store_time t) {
    const auto days = std::chrono::floor<std::chrono::days>(t);
    const std::chrono::year_month_day ymd{days};
    char text[16];
    std::snprintf(text, sizeof text, "%04d-%02u-%02u", static_cast<int>(ymd.year()),
                  static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
    return text;
}

std::string time_of(store_time t) {
    const auto s = std::chrono::floor<std::chrono::minutes>(t);
    const auto in_day = s - std::chrono::floor<std::chrono::days>(s);
    char text[32];
    std::snprintf(text, sizeof text, "%s %02d:%02d", day_of(t).c_str(),
                  static_cast<int>(std::chrono::duration_cast<std::chrono::hours>(in_day).count()),
                  static_cast<int>((in_day % 1h).count() / 1));
    return text;
}

//[fold
struct account {
    std::int64_t balance = 0; // cents
    std::uint64_t movements = 0;
    friend bool operator==(const account&, const account&) = default;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(account, balance, movements)

std::int64_t amount_of(const recorded_event& e) {
    return nlohmann::json::parse(e.data).at("cents").get<std::int64_t>();
}

struct account_fold {
    using state_type = account;
    static constexpr std::uint32_t fold_version = 2; // 1 counted withdrawals twice

    void apply(account& a, const recorded_event& e) const {
        if (e.type == "deposited")
            a.balance += amount_of(e);
        else if (e.type == "withdrawn")
            a.balance -= amount_of(e);
        else
            return; // an event this fold does not know changes nothing
        ++a.movements;
    }
};
//]

using events_type = publishing_event_store<sqlite::event_store, sqlite::outbox_store>;
using accounts_type = aggregate_repository<account_fold, events_type, sqlite::snapshot_store>;

// The full replay a load is checked against: every event of `stream` recorded at or before `t`.
account replay(sqlite::event_store& store, const std::string& stream, store_time t) {
    std::error_code ec;
    account a;
    for (const auto& e : store.read_stream(stream, 0, 1'000'000, ec))
        if (e.recorded_at <= t)
            account_fold{}.apply(a, e);
    must(ec, "read the stream");
    return a;
}

// A read model in tables of the database: `apply` writes through the unit of work, where the
// runner moves the checkpoint too.
struct table_projection {
    using unit_of_work_type = sqlite::unit_of_work;

    sqlite::database* db;
    const char* upsert; // ?1 key, ?2 amount
    const char* clear;
    std::string (*key)(const recorded_event&);
    std::int64_t (*amount)(const recorded_event&);

    sqlite::unit_of_work begin() { return db->begin(); }

    std::error_code apply(sqlite::unit_of_work& u, const recorded_event& e) {
        std::error_code ec;
        auto st = u.connection().prepare(upsert, ec);
        if (ec)
            return ec;
        st->bind_text(1, key(e));
        st->bind_int64(2, amount(e));
        return st->execute();
    }

    std::error_code reset(sqlite::unit_of_work& u) { return u.connection().exec(clear); }
};

//[projections
table_projection balances(sqlite::database& db) {
    return {&db,
            "INSERT INTO balance(account, cents) VALUES (?1, ?2) "
            "ON CONFLICT(account) DO UPDATE SET cents = cents + excluded.cents",
            "DELETE FROM balance", [](const recorded_event& e) { return e.stream; },
            [](const recorded_event& e) {
                return e.type == "withdrawn" ? -amount_of(e) : amount_of(e);
            }};
}

table_projection daily_totals(sqlite::database& db) {
    return {&db,
            "INSERT INTO daily_total(day_type, cents) VALUES (?1, ?2) "
            "ON CONFLICT(day_type) DO UPDATE SET cents = cents + excluded.cents",
            "DELETE FROM daily_total",
            [](const recorded_event& e) { return day_of(e.recorded_at) + " " + e.type; },
            [](const recorded_event& e) {
                return amount_of(e);
            }};
}
//]

std::map<std::string, std::int64_t> table(sqlite::database& db, const char* sql) {
    std::map<std::string, std::int64_t> rows;
    auto u = db.begin();
    std::error_code ec;
    auto st = u.connection().prepare(sql, ec);
    must(ec, sql);
    while (st->step(ec))
        rows[std::string(st->column_text(0))] = st->column_int64(1);
    must(ec, sql);
    return rows;
}

} // namespace

int main() {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("letterbox-example-18-" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir);
    struct remove_on_exit {
        std::filesystem::path dir;
        ~remove_on_exit() {
            std::error_code ignored;
            std::filesystem::remove_all(dir, ignored);
        }
    } cleanup{dir};
    auto db = sqlite::database::open((dir / "accounts.db").string());
    {
        auto u = db.begin();
        must(u.connection().exec("CREATE TABLE balance(account TEXT PRIMARY KEY, cents INTEGER);"
                                 "CREATE TABLE daily_total(day_type TEXT PRIMARY KEY, cents "
                                 "INTEGER);"),
             "create the read models");
        must(u.commit(), "commit the read models");
    }
    sqlite::event_store store(db);
    sqlite::outbox_store outbox(db);
    sqlite::snapshot_store snapshots(db);
    sqlite::checkpoint_store checkpoints(db);
    events_type events(store, outbox, {.exchange = "accounts", .stream_prefixes = {"account-"}});
    virtual_clock clock(std::chrono::sys_days{std::chrono::year{2026} / 12 / 1});
    message_id_generator ids(18);
    accounts_type accounts(events, snapshots, {.snapshot_every = 50});

    // 1. Commands over three days.
    std::printf("1. 300 commands over three days\n");
    const std::vector<std::string> names{"account-ana", "account-bruno"};
    std::mt19937 random(18);
    int appended = 0, refused = 0;
    //[command
    const auto withdraw_or_deposit = [&](const std::string& stream, const char* type,
                                         std::int64_t cents) {
        std::error_code ec;
        auto a = accounts.load(stream, ec);
        must(ec, "load the account");
        if (std::string_view(type) == "withdrawn" && a.state.balance < cents)
            return false; // refused: an overdraft appends nothing
        event_data e{ids(), type, nlohmann::json{{"cents", cents}}.dump(), {}};
        append_result at;
        auto uow = db.begin();
        must(accounts.append(uow, a, std::span(&e, 1), clock.wall_now(), at), "append");
        must(uow.commit(), "commit"); // the event, its outbox row and maybe a snapshot
        return true;
    };
    //]
    for (int i = 0; i < 300; ++i) {
        clock.advance(std::chrono::minutes(5 + random() % 25));
        const auto& stream = names[random() % 2];
        const bool deposit = random() % 5 < 2;
        const auto cents = static_cast<std::int64_t>(1 + random() % 40) * 500;
        if (withdraw_or_deposit(stream, deposit ? "deposited" : "withdrawn", cents))
            ++appended;
        else
            ++refused;
    }
    std::error_code ec;
    const auto head = store.head_position(ec);
    check(head == static_cast<std::uint64_t>(appended), "every accepted command appended once");
    std::printf("appended %d events, refused %d overdrafts, last at %s\n", appended, refused,
                time_of(clock.wall_now()).c_str());
    for (const auto& name : names) {
        const auto a = accounts.load(name, ec);
        must(ec, "load");
        std::printf("%s: balance %lld.%02lld at version %llu, loaded from the snapshot at "
                    "version %llu plus %llu events\n",
                    name.c_str(), static_cast<long long>(a.state.balance / 100),
                    static_cast<long long>(a.state.balance % 100),
                    static_cast<unsigned long long>(a.version),
                    static_cast<unsigned long long>(a.snapshot_version),
                    static_cast<unsigned long long>(a.events_folded));
        check(a.state == replay(store, name, store_time::max()), name + ": load equals replay");
        check(a.state.balance >= 0, name + ": never overdrawn");
        check(a.snapshot_version > 0 && a.events_folded < 50,
              name + ": loaded from a snapshot, fewer than 50 events after it");
    }
    const auto pending = outbox.stats(clock.wall_now(), ec).pending;
    std::printf("outbox: %zu events waiting for the relay\n", pending);
    check(pending == static_cast<std::size_t>(appended), "every event has its outbox row");

    // 2. The balance at a list of times.
    std::printf("2. balance_at(t), each checked against a full replay\n");
    const auto start = store_time(std::chrono::sys_days{std::chrono::year{2026} / 12 / 1});
    const std::vector<std::chrono::minutes> offsets{-1h, 3h,          11h + 30min, 24h,
                                                    36h, 47h + 59min, 60h,         100h};
    for (const auto offset : offsets) {
        const auto t = start + offset;
        const auto a = accounts.load_at_time("account-ana", t, ec);
        must(ec, "load_at_time");
        const auto expected = replay(store, "account-ana", t);
        check(a.state == expected, "balance_at(" + time_of(t) + ") equals replay");
        check(a.recorded_at <= t, "nothing later than t folded");
        std::printf("account-ana at %s: %lld.%02lld (replay: %lld.%02lld), version %llu\n",
                    time_of(t).c_str(), static_cast<long long>(a.state.balance / 100),
                    static_cast<long long>(a.state.balance % 100),
                    static_cast<long long>(expected.balance / 100),
                    static_cast<long long>(expected.balance % 100),
                    static_cast<unsigned long long>(a.version));
    }

    // 3. Two projections, then a rebuild of each.
    std::printf("3. two projections, checked against a replay, then rebuilt\n");
    boost::asio::io_context io; // unused by catch_up: the runners' async side is example 19's
    auto balance_model = balances(db);
    auto daily_model = daily_totals(db);
    projection_runner balance_runner(io.get_executor(), store, checkpoints, balance_model, clock,
                                     {.name = "balances", .batch = 64});
    projection_runner daily_runner(io.get_executor(), store, checkpoints, daily_model, clock,
                                   {.name = "daily-totals", .batch = 64});
    std::map<std::string, std::int64_t> expected_balance, expected_daily;
    for (const auto& e : store.read_all(0, 1'000'000, ec)) {
        expected_balance[e.stream] += e.type == "withdrawn" ? -amount_of(e) : amount_of(e);
        expected_daily[day_of(e.recorded_at) + " " + e.type] += amount_of(e);
    }
    balance_runner.catch_up(ec);
    must(ec, "catch up");
    daily_runner.catch_up(ec);
    must(ec, "catch up");
    const auto live_balance = table(db, "SELECT account, cents FROM balance ORDER BY account");
    const auto live_daily = table(db, "SELECT day_type, cents FROM daily_total ORDER BY day_type");
    check(live_balance == expected_balance, "balances equal a replay");
    check(live_daily == expected_daily, "daily totals equal a replay");
    for (const auto& [key, cents] : live_balance)
        std::printf("balance %s: %lld.%02lld\n", key.c_str(), static_cast<long long>(cents / 100),
                    static_cast<long long>(cents % 100));
    for (const auto& [key, cents] : live_daily)
        std::printf("daily total %s: %lld.%02lld\n", key.c_str(),
                    static_cast<long long>(cents / 100), static_cast<long long>(cents % 100));
    must(balance_runner.reset(), "reset");
    must(daily_runner.reset(), "reset");
    balance_runner.catch_up(ec);
    daily_runner.catch_up(ec);
    must(ec, "rebuild");
    check(table(db, "SELECT account, cents FROM balance ORDER BY account") == live_balance,
          "the rebuilt balances equal the live ones");
    check(table(db, "SELECT day_type, cents FROM daily_total ORDER BY day_type") == live_daily,
          "the rebuilt daily totals equal the live ones");
    std::printf("rebuilt from position 0: both equal\n");

    // 4. A snapshot of an older fold.
    std::printf("4. a snapshot of another fold version\n");
    {
        const auto a = accounts.load("account-bruno", ec);
        auto u = db.begin();
        snapshot old{"account-bruno", a.version, a.recorded_at, 1,
                     R"({"balance":1,"movements":1})"};
        must(snapshots.save(u, old), "save an old snapshot");
        must(u.commit(), "commit the old snapshot");
        const auto b = accounts.load("account-bruno", ec);
        must(ec, "load");
        check(b.snapshot_ignored && b.state == a.state,
              "a snapshot of fold version 1 is ignored, the state is a replay");
        std::printf("account-bruno: snapshot of fold version 1 ignored: %s, balance still "
                    "%lld.%02lld\n",
                    b.snapshot_ignored ? "yes" : "no",
                    static_cast<long long>(b.state.balance / 100),
                    static_cast<long long>(b.state.balance % 100));
    }
    std::printf(failures == 0 ? "all checks passed\n" : "FAILED\n");
    return failures == 0 ? 0 : 1;
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   1\. 300 commands over three days
//   appended [0-9]+ events, refused [0-9]+ overdrafts
//   account-ana: balance [0-9]+\.[0-9][0-9] at version [0-9]+, loaded from the snapshot at version [1-9][0-9]* plus [0-9]+ events
//   account-bruno: balance [0-9]+\.[0-9][0-9] at version [0-9]+, loaded from the snapshot at version [1-9][0-9]* plus [0-9]+ events
//   outbox: [0-9]+ events waiting for the relay
//   2\. balance_at\(t\), each checked against a full replay
//   account-ana at 2026-11-30 23:00: 0\.00 \(replay: 0\.00\), version 0
//   account-ana at 2026-12-05 04:00: [0-9]+\.[0-9][0-9] \(replay
//   3\. two projections, checked against a replay, then rebuilt
//   balance account-ana: [0-9]+\.[0-9][0-9]
//   daily total 2026-12-01 deposited: [0-9]+\.[0-9][0-9]
//   rebuilt from position 0: both equal
//   4\. a snapshot of another fold version
//   account-bruno: snapshot of fold version 1 ignored: yes
//   all checks passed
