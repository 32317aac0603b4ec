// SPDX-License-Identifier: BSL-1.0
#pragma once

// The application the pipeline simulations put under faults: an order service (a SQLite file
// with its orders and its outbox) and a ledger service (another SQLite file with its ledger
// entries and its inbox). A `letterbox::testing::pipeline_application`.

#include <letterbox/sqlite.hpp>

#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/payload.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>

namespace test_support {

struct ledger_app {
    using outbox_store_type = letterbox::sqlite::outbox_store;
    using inbox_store_type = letterbox::sqlite::inbox_store;
    using unit = letterbox::sqlite::unit_of_work;

    explicit ledger_app(const std::filesystem::path& dir)
        : orders_db(letterbox::sqlite::database::open((dir / "orders.db").string(), options()))
        , ledger_db(letterbox::sqlite::database::open((dir / "ledger.db").string(), options()))
        , orders_outbox(orders_db)
        , ledger_inbox(ledger_db) {
        exec(orders_db, "CREATE TABLE orders(message_id TEXT NOT NULL)");
        // No unique key on purpose: a duplicate effect shows as a second row.
        exec(ledger_db, "CREATE TABLE ledger(message_id TEXT NOT NULL, amount INTEGER NOT NULL)");
    }

    outbox_store_type& outbox() { return orders_outbox; }
    inbox_store_type& inbox() { return ledger_inbox; }
    unit begin_producer() { return orders_db.begin(); }
    unit begin_consumer() { return ledger_db.begin(); }

    void write(unit& u, const letterbox::message& m) {
        run(u, "INSERT INTO orders(message_id) VALUES (?1)", letterbox::to_string(m.id));
    }

    void handle(const letterbox::message& m, unit& u) {
        const auto amount =
            letterbox::decode_payload<nlohmann::json>(m).at("amount").get<std::int64_t>();
        std::error_code ec;
        auto st =
            u.connection().prepare("INSERT INTO ledger(message_id, amount) VALUES (?1, ?2)", ec);
        if (ec)
            throw letterbox::error(ec, "prepare");
        (void)st->bind_text(1, letterbox::to_string(m.id));
        (void)st->bind_int64(2, amount);
        if (auto failed = st->execute())
            throw letterbox::error(failed, "insert ledger entry");
    }

    std::size_t effects(const letterbox::message_id& id) {
        auto u = ledger_db.begin();
        std::error_code ec;
        auto st = u.connection().prepare("SELECT COUNT(*) FROM ledger WHERE message_id = ?1", ec);
        if (ec || st->bind_text(1, letterbox::to_string(id)) || !st->step(ec) || ec)
            throw letterbox::error(ec, "count ledger entries");
        return static_cast<std::size_t>(st->column_int64(0));
    }

    letterbox::sqlite::database orders_db;
    letterbox::sqlite::database ledger_db;
    outbox_store_type orders_outbox;
    inbox_store_type ledger_inbox;

private:
    static letterbox::sqlite::database_options options() {
        letterbox::sqlite::database_options o;
        // A simulated crash is not a power loss: no fsync needed, and runs stay fast.
        o.synchronous = letterbox::sqlite::database_options::synchronous_mode::off;
        return o;
    }

    static void exec(letterbox::sqlite::database& db, const std::string& sql) {
        auto u = db.begin();
        if (auto ec = u.connection().exec(sql))
            throw letterbox::error(ec, sql);
        if (auto ec = u.commit())
            throw letterbox::error(ec, "commit");
    }

    static void run(unit& u, const std::string& sql, const std::string& text) {
        std::error_code ec;
        auto st = u.connection().prepare(sql, ec);
        if (ec)
            throw letterbox::error(ec, "prepare");
        (void)st->bind_text(1, text);
        if (auto failed = st->execute())
            throw letterbox::error(failed, sql);
    }
};

} // namespace test_support
