// SPDX-License-Identifier: BSL-1.0
#pragma once

// ledger_app (support/ledger_app.hpp) on PostgreSQL: the order service's orders and outbox in one
// schema, the ledger service's entries and inbox in another, emptied for each simulated run and
// dropped when the test program ends, on the server of LETTERBOX_POSTGRES_URL. A
// `letterbox::testing::pipeline_application` for the integration tier's simulation.

#include <letterbox/postgres.hpp>

#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/payload.hpp>

#include "integration/postgres_server.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace test_support {

struct postgres_ledger_app {
    using outbox_store_type = letterbox::postgres::outbox_store;
    using inbox_store_type = letterbox::postgres::inbox_store;
    using unit = letterbox::postgres::unit_of_work;

    explicit postgres_ledger_app(const std::filesystem::path&)
        : schemas_(take_schemas())
        , orders_outbox(schemas_->orders_db, quiet())
        , ledger_inbox(schemas_->ledger_db) {}
    postgres_ledger_app(const postgres_ledger_app&) = delete;
    postgres_ledger_app& operator=(const postgres_ledger_app&) = delete;
    ~postgres_ledger_app() { give_back(std::move(schemas_)); }

    /// Drops the schemas the runs kept for the next ones. Call it when the simulation is over:
    /// at exit, after libpq's TLS library has cleaned up, closing their connections would crash.
    static void drop_spare_schemas() { spare().clear(); }

    outbox_store_type& outbox() { return orders_outbox; }
    inbox_store_type& inbox() { return ledger_inbox; }
    unit begin_producer() { return schemas_->orders_db.begin(); }
    unit begin_consumer() { return schemas_->ledger_db.begin(); }

    void write(unit& u, const letterbox::message& m) {
        run(u, "INSERT INTO " + schemas_->orders.name() + ".orders(message_id) VALUES ($1)",
            letterbox::to_string(m.id));
    }

    void handle(const letterbox::message& m, unit& u) {
        const auto amount =
            letterbox::decode_payload<nlohmann::json>(m).at("amount").get<std::int64_t>();
        std::error_code ec;
        u.connection().exec("INSERT INTO " + schemas_->ledger.name() +
                                ".ledger(message_id, amount) VALUES ($1, $2)",
                            {letterbox::postgres::param::text(letterbox::to_string(m.id)),
                             letterbox::postgres::param(amount)},
                            ec);
        if (ec)
            throw letterbox::error(ec, "insert ledger entry");
    }

    std::size_t effects(const letterbox::message_id& id) {
        auto u = schemas_->ledger_db.begin();
        std::error_code ec;
        auto r = u.connection().exec(
            "SELECT count(*) FROM " + schemas_->ledger.name() + ".ledger WHERE message_id = $1",
            {letterbox::postgres::param::text(letterbox::to_string(id))}, ec);
        if (ec)
            throw letterbox::error(ec, "count ledger entries");
        return static_cast<std::size_t>(r.int64(0, 0).value_or(0));
    }

private:
    /// The two services' schemas and databases. Making them takes two migrations (about 0.3 s
    /// with their connections), so runs reuse them: each run starts from emptied tables with
    /// their sequences restarted, which a fresh schema would also give.
    struct schemas {
        scratch_schema orders;
        scratch_schema ledger;
        letterbox::postgres::database orders_db =
            letterbox::postgres::database::open(url(), options(orders));
        letterbox::postgres::database ledger_db =
            letterbox::postgres::database::open(url(), options(ledger));

        schemas() {
            exec(orders_db, "CREATE TABLE " + orders.name() + ".orders(message_id text)");
            // No unique key on purpose: a duplicate effect shows as a second row.
            exec(ledger_db,
                 "CREATE TABLE " + ledger.name() + ".ledger(message_id text, amount bigint)");
        }
        void empty() {
            exec(orders_db, "TRUNCATE " + orders.name() + ".orders, " + orders.name() +
                                ".letterbox_outbox RESTART IDENTITY");
            exec(ledger_db, "TRUNCATE " + ledger.name() + ".ledger, " + ledger.name() +
                                ".letterbox_inbox RESTART IDENTITY");
        }
    };

    /// Schemas that no run uses now (the simulation runs one at a time, on one thread).
    static std::vector<std::unique_ptr<schemas>>& spare() {
        static std::vector<std::unique_ptr<schemas>> kept;
        return kept;
    }
    static std::unique_ptr<schemas> take_schemas() {
        auto& kept = spare();
        if (kept.empty())
            return std::make_unique<schemas>();
        auto s = std::move(kept.back());
        kept.pop_back();
        s->empty();
        return s;
    }
    static void give_back(std::unique_ptr<schemas> s) {
        if (s)
            spare().push_back(std::move(s));
    }

    /// The server's URL, its commits not waiting for the disk: a simulated crash is not a crash
    /// of the server.
    static std::string url() {
        auto u = postgres_url();
        return u + (u.find('?') == std::string::npos ? "?" : "&") +
               "options=-c%20synchronous_commit%3Doff";
    }
    static letterbox::postgres::database_options options(const scratch_schema& s) {
        auto o = s.options();
        o.max_connections = 4;
        // The simulation runs every process on one thread: a unit that waited for a lock another
        // simulated process holds would wait forever. It gives up instead, as an SQLite unit
        // does after its busy timeout, and the process retries.
        o.lock_timeout = std::chrono::milliseconds(2000);
        return o;
    }
    static letterbox::postgres::outbox_options quiet() {
        letterbox::postgres::outbox_options o;
        o.notify = false; // nobody listens in a simulation
        return o;
    }

    static void exec(letterbox::postgres::database& db, const std::string& sql) {
        auto u = db.begin();
        if (auto ec = u.connection().exec(sql))
            throw letterbox::error(ec, sql);
        if (auto ec = u.commit())
            throw letterbox::error(ec, "commit");
    }

    static void run(unit& u, const std::string& sql, const std::string& text) {
        std::error_code ec;
        u.connection().exec(sql, {letterbox::postgres::param::text(text)}, ec);
        if (ec)
            throw letterbox::error(ec, sql);
    }

    std::unique_ptr<schemas> schemas_;

public:
    outbox_store_type orders_outbox;
    inbox_store_type ledger_inbox;
};

} // namespace test_support
