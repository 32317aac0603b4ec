// SPDX-License-Identifier: BSL-1.0
//
// Example 09: property-test your own handler under random fault schedules.
//
// A payments service records payments and emits `payment.received` events through its outbox;
// a wallet service credits the wallet of each payment through its inbox. Both keep their data
// in SQLite. The application code below is what a user writes anyway; the test is the twenty
// lines in `main`: `check_pipeline<wallet_app>` runs the whole pipeline (outbox, relay, broker,
// consumer with retry, redelivery, dead-letter and inbox) in a deterministic simulation, once
// per seed, each seed drawing its own faults (connection drops, broker restarts, lost
// confirms, duplicates, handler failures, a locked store, process crashes between any two
// steps), and checks that no payment is lost and no payment is credited twice.
//
// 1. The handler credits the wallet in the unit of work in which the inbox records the
//    message: every fault schedule keeps every guarantee.
// 2. The same handler, written by mistake through a database connection of its own, outside
//    that unit of work: the check finds a fault schedule that credits a payment twice, prints
//    its seed, and the seed replays the failure alone, event for event.
//
// The output is the same on every run: the root seed is fixed in the check's options (a test
// would leave it to LETTERBOX_SEED). Runs in virtual time; the SQLite files live in a
// temporary directory per run (in /dev/shm when it exists), removed afterwards.
//
// Needs: the `sqlite` and `testing` components (letterbox::testing defines
// LETTERBOX_FAILPOINTS, which the simulation's crashes need).
// Run: build/<dir>/examples/example_09_property_test_your_handler [seeds, default 200]
#include <letterbox/sqlite.hpp>
#include <letterbox/testing/check_pipeline.hpp>

#include <letterbox/letterbox.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <system_error>

namespace {

namespace sqlite = letterbox::sqlite;
using letterbox::message;

// ---- A little SQL ----------------------------------------------------------------------------

void bind_parameter(sqlite::statement& st, int index, std::string_view text) {
    (void)st.bind_text(index, text);
}
void bind_parameter(sqlite::statement& st, int index, std::int64_t number) {
    (void)st.bind_int64(index, number);
}

/// Runs one SQL statement with its parameters (`?1`, `?2`, ...) on `db`; throws on failure.
template <class... Params>
void execute(sqlite::connection& db, std::string_view sql, const Params&... params) {
    std::error_code ec;
    auto st = db.prepare(sql, ec);
    if (ec)
        throw letterbox::error(ec, std::string(sql));
    int index = 0;
    (bind_parameter(*st, ++index, params), ...);
    if (auto failed = st->execute())
        throw letterbox::error(failed, std::string(sql));
}

std::size_t count_credits(sqlite::connection& db, const letterbox::message_id& id) {
    std::error_code ec;
    auto st = db.prepare("SELECT COUNT(*) FROM credits WHERE message_id = ?1", ec);
    if (ec || st->bind_text(1, letterbox::to_string(id)) || !st->step(ec) || ec)
        throw letterbox::error(ec, "count credits");
    return static_cast<std::size_t>(st->column_int64(0));
}

sqlite::database_options fast() {
    sqlite::database_options o;
    // A simulated crash is a process crash, not a power loss: no need to sync.
    o.synchronous = sqlite::database_options::synchronous_mode::off;
    return o;
}

sqlite::database open_database(const std::filesystem::path& file, std::string_view schema) {
    auto db = sqlite::database::open(file.string(), fast());
    auto u = db.begin();
    if (auto ec = u.connection().exec(schema))
        throw letterbox::error(ec, std::string(schema));
    if (auto ec = u.commit())
        throw letterbox::error(ec, "commit");
    return db;
}

// No unique key on credits: the inbox is what makes a payment credit its wallet once.
constexpr std::string_view wallet_schema =
    "CREATE TABLE wallets(wallet TEXT PRIMARY KEY, balance INTEGER NOT NULL);"
    "CREATE TABLE credits(message_id TEXT NOT NULL, wallet TEXT NOT NULL, amount INTEGER "
    "NOT NULL);";

// ---- The application ---------------------------------------------------------------------------

/// The body of a `payment.received` event. (The simulation writes the events: its payload
/// names an aggregate, here the wallet, and an amount.)
struct payment {
    std::string wallet;
    std::int64_t amount = 0;

    static payment of(const message& m) {
        const auto body = letterbox::decode_payload<nlohmann::json>(m);
        return {body.at("aggregate").get<std::string>(), body.at("amount").get<std::int64_t>()};
    }
};

/// Credits a payment to its wallet, on the connection `db`.
void credit_wallet(sqlite::connection& db, const message& m) {
    const auto p = payment::of(m);
    execute(db,
            "INSERT INTO wallets(wallet, balance) VALUES (?1, 0) ON CONFLICT(wallet) DO NOTHING",
            p.wallet);
    execute(db, "UPDATE wallets SET balance = balance + ?2 WHERE wallet = ?1", p.wallet, p.amount);
    execute(db, "INSERT INTO credits(message_id, wallet, amount) VALUES (?1, ?2, ?3)",
            letterbox::to_string(m.id), p.wallet, p.amount);
}

/// The payments service (payments.db: payments and the outbox) and the wallet service
/// (wallet.db: wallets, credits and the inbox): a `letterbox::testing::pipeline_application`.
class wallet_app {
public:
    using outbox_store_type = sqlite::outbox_store;
    using inbox_store_type = sqlite::inbox_store;

    explicit wallet_app(const std::filesystem::path& dir)
        : payments_db_(open_database(dir / "payments.db",
                                     "CREATE TABLE payments(message_id TEXT PRIMARY KEY, wallet "
                                     "TEXT NOT NULL, amount INTEGER NOT NULL)"))
        , wallet_db_(open_database(dir / "wallet.db", wallet_schema))
        , outbox_(payments_db_)
        , inbox_(wallet_db_) {}

    sqlite::outbox_store& outbox() { return outbox_; }
    sqlite::inbox_store& inbox() { return inbox_; }
    sqlite::unit_of_work begin_producer() { return payments_db_.begin(); }
    sqlite::unit_of_work begin_consumer() { return wallet_db_.begin(); }

    /// The payments service records a payment (its event joins the outbox in the same unit).
    void write(sqlite::unit_of_work& u, const message& m) {
        const auto p = payment::of(m);
        execute(u.connection(),
                "INSERT INTO payments(message_id, wallet, amount) VALUES (?1, ?2, ?3)",
                letterbox::to_string(m.id), p.wallet, p.amount);
    }

    /// The handler under test: credits the wallet in the unit of work `u`, in which the inbox
    /// records the message, so the credit and the record commit together or not at all.
    void handle(const message& m, sqlite::unit_of_work& u) { credit_wallet(u.connection(), m); }

    /// How many times the wallet data shows message `id` credited (the check wants 0 or 1).
    std::size_t effects(const letterbox::message_id& id) {
        auto u = wallet_db_.begin();
        return count_credits(u.connection(), id);
    }

private:
    sqlite::database payments_db_;
    sqlite::database wallet_db_;
    sqlite::outbox_store outbox_;
    sqlite::inbox_store inbox_;
};

/// The same service with one mistake: the handler credits the wallet through a connection of
/// its own (`wallets_`), in autocommit mode, instead of through the unit of work. Each statement
/// commits at once, apart from the unit in which the inbox records the message; when the
/// process dies before that unit commits, the message comes back and is credited again.
///
/// The wallets live in a file of their own here (wallets.db; the inbox stays in wallet.db), as
/// when the inbox is added next to an existing database. Against the same file the mistake
/// would not get this far: the unit holds that file's write lock from `BEGIN IMMEDIATE`, so the
/// second connection would wait for it (`busy_timeout`) and fail with SQLITE_BUSY every time.
class careless_wallet_app : public wallet_app {
public:
    explicit careless_wallet_app(const std::filesystem::path& dir)
        : wallet_app(dir)
        , wallets_(open_connection(dir / "wallets.db")) {}

    void handle(const message& m, sqlite::unit_of_work& /*u, unused: the mistake*/) {
        credit_wallet(wallets_, m);
    }

    std::size_t effects(const letterbox::message_id& id) { return count_credits(wallets_, id); }

private:
    static sqlite::connection open_connection(const std::filesystem::path& file) {
        std::error_code ec;
        auto db = sqlite::connection::open(file.string(), fast(), ec);
        if (!ec)
            ec = db.exec(wallet_schema);
        if (ec)
            throw letterbox::error(ec, file.string());
        return db;
    }

    sqlite::connection wallets_;
};

int failures = 0;
void expect(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "MISMATCH: %s\n", what);
        ++failures;
    }
}

/// Prints the lines of `text` that begin with one of `prefixes`.
void print_lines(const std::string& text, std::initializer_list<std::string_view> prefixes) {
    std::size_t begin = 0;
    while (begin < text.size()) {
        const auto end = std::min(text.find('\n', begin), text.size());
        const std::string_view line(text.data() + begin, end - begin);
        for (const auto prefix : prefixes)
            if (line.starts_with(prefix)) {
                std::printf("%.*s\n", static_cast<int>(line.size()), line.data());
                break;
            }
        begin = end + 1;
    }
}

} // namespace

int main(int argc, char** argv) {
    const std::size_t seeds = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 200;
    namespace testing = letterbox::testing;

    //[test_your_handler
    // The test: for every one of `seeds` fault schedules, no payment is lost or credited twice.
    testing::pipeline_check_options check;
    check.seeds = seeds;
    check.root_seed = 1; // fixed, so that this example prints the same every time
    const auto report = testing::check_pipeline<wallet_app>({}, check);
    std::printf("== crediting in the inbox's unit of work ==\n%s", report.to_string().c_str());
    expect(report.ok(), "the handler keeps every guarantee");
    //]

    //[catch_the_mistake
    check.stop_after_failures = 1; // the first failing seed is enough
    const auto careless = testing::check_pipeline<careless_wallet_app>({}, check);
    std::printf("\n== crediting through a connection of its own ==\n");
    // The report's summary, its replay line and its violations (it holds the run's fault profile
    // and history too).
    print_lines(careless.to_string(), {"for ", "--- failing run", "violation: "});
    expect(!careless.ok(), "the careless handler is caught");
    for (const auto& failure : careless.failures) {
        const auto replay = testing::run_pipeline<careless_wallet_app>(failure.seed);
        const auto hash = replay.trace_hash();
        const bool same = hash == failure.trace_hash(); // the same history, event for event
        std::printf("run_pipeline<careless_wallet_app>(%llu): %s, trace hash %016llx (%s)\n",
                    static_cast<unsigned long long>(failure.seed), replay.ok() ? "ok" : "FAILED",
                    static_cast<unsigned long long>(hash), same ? "the same" : "DIFFERENT");
        expect(!replay.ok() && same, "the seed replays");
    }
    //]
    return failures == 0 ? 0 : 1;
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   == crediting in the inbox's unit of work ==
//   for 200 random fault schedules \(LETTERBOX_SEED=1\): 0 lost, 0 duplicate effects, 0 phantoms
//   0 order violations
//   0 unbounded redeliveries, 0 poison isolation failures, 0 unsettled
//   determinism: 200 of 200 replays identical
//   totals: committed=[0-9]+
//   == crediting through a connection of its own ==
//   random fault schedules \(LETTERBOX_SEED=1\): 0 lost, [1-9][0-9]* duplicate effects
//   --- failing run; replay it alone with LETTERBOX_PIPELINE_SEED=[0-9]+
//   violation: I-03 no-duplicate-effect: the application's data holds 2 effects of message
//   \(an effect outside the unit of work\?\)
//   run_pipeline<careless_wallet_app>\([0-9]+\): FAILED, trace hash [0-9a-f]+ \(the same\)
