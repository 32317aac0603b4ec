// SPDX-License-Identifier: BSL-1.0

#include <letterbox/sqlite/outbox_store.hpp>

#include <letterbox/sqlite/database.hpp>

#include "unit/sqlite/temp_directory.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <system_error>
#include <vector>

namespace unit_sqlite_outbox_store {

static_assert(letterbox::outbox_store<letterbox::sqlite::outbox_store>);
static_assert(letterbox::outbox_batch_settler<letterbox::sqlite::outbox_store>);

namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;
using letterbox::errc;
using letterbox::sqlite::database;
using letterbox_sqlite_test::t0;
using letterbox_sqlite_test::temp_directory;

struct outbox_world {
    temp_directory dir;
    database db = database::open(dir.file("outbox.db"));
    letterbox::sqlite::outbox_store outbox{db};
    letterbox::message_id_generator ids{21};

    void add(const std::vector<letterbox::outbox_entry>& entries, letterbox::store_time now) {
        auto uow = db.begin();
        for (const auto& e : entries)
            REQUIRE_FALSE(outbox.add(uow, e, now));
        REQUIRE_FALSE(uow.commit());
    }

    letterbox::outbox_record find(const letterbox::message_id& id) {
        std::error_code ec;
        auto row = outbox.find(id, ec);
        REQUIRE_FALSE(ec);
        REQUIRE(row.has_value());
        return *row;
    }

    letterbox::outbox_entry event(std::string aggregate_id) {
        letterbox::outbox_entry e;
        e.msg.id = ids();
        e.msg.type = "order.changed";
        e.aggregate_type = "order";
        e.aggregate_id = std::move(aggregate_id);
        return e;
    }
};

} // namespace

TEST_CASE("sqlite outbox_store round-trips every field of a message exactly",
          "[sqlite][outbox_store]") {
    outbox_world w;
    letterbox::outbox_entry e;
    e.msg.id = w.ids();
    e.msg.type = "type \0 with NUL"s;
    e.msg.exchange = "exchange";
    e.msg.routing_key = "";
    e.msg.headers = letterbox::field_table{
        {"void", nullptr},
        {"bool", true},
        {"i8", std::int8_t{-1}},
        {"u8", std::uint8_t{200}},
        {"i16", std::int16_t{-300}},
        {"u16", std::uint16_t{60000}},
        {"i32", std::int32_t{-70000}},
        {"u32", std::uint32_t{4000000000U}},
        {"i64", std::numeric_limits<std::int64_t>::max()},
        {"float", 0.25f},
        {"double", 1e-300},
        {"decimal", letterbox::decimal{3, 12345}},
        {"string", "\xff\xfe not UTF-8 \0 at all"s},
        {"timestamp", letterbox::timestamp{std::chrono::seconds{1'700'000'000}}},
        {"bytes", letterbox::byte_array{std::byte{1}, std::byte{0}, std::byte{255}}},
        {"array", letterbox::field_array{1, "a", letterbox::field_array{}}},
        {"x-death", letterbox::field_array{letterbox::field_table{
                        {"count", std::int64_t{2}}, {"reason", "rejected"}, {"queue", "q"}}}},
    };
    e.msg.body = "\0\x01\x02 binary body \xff"s;
    e.msg.properties.content_type = "application/octet-stream";
    e.msg.properties.content_encoding = "identity";
    e.msg.properties.correlation_id = "corr";
    e.msg.properties.reply_to = "replies";
    e.msg.properties.expiration = "60000";
    e.msg.properties.timestamp = letterbox::timestamp{std::chrono::seconds{1'700'000'001}};
    e.msg.properties.persistent = false;
    e.msg.properties.priority = 9;
    e.msg.properties.app_id = "shop";
    e.msg.properties.user_id = "guest";
    e.aggregate_type = "order\0type"s;
    e.aggregate_id = "id \xff";
    w.add({e}, t0());

    const auto row = w.find(e.msg.id);
    CHECK(row.msg == e.msg);
    CHECK(row.aggregate_type == e.aggregate_type);
    CHECK(row.aggregate_id == e.aggregate_id);

    // The defaults round-trip too (persistent, no optional property, no headers).
    const auto plain = w.event("2");
    w.add({plain}, t0());
    CHECK(w.find(plain.msg.id).msg == plain.msg);
}

TEST_CASE("sqlite outbox_store keeps times to the microsecond", "[sqlite][outbox_store]") {
    outbox_world w;
    const auto e = w.event("1");
    const auto now = t0() + 123456us;
    w.add({e}, now);
    CHECK(w.find(e.msg.id).created_at == now);
    CHECK(w.find(e.msg.id).next_attempt_at == now);

    std::error_code ec;
    const auto claimed = w.outbox.claim("relay", 1, 1500us, now, ec);
    REQUIRE(claimed.size() == 1);
    CHECK(claimed[0].lease_expires_at == now + 1500us);
    CHECK(w.find(e.msg.id).lease_expires_at == now + 1500us);
    // Before the epoch as well.
    const auto early = w.event("2");
    const auto before_epoch = letterbox::store_time{} - 1s - 7us;
    w.add({early}, before_epoch);
    CHECK(w.find(early.msg.id).created_at == before_epoch);

    // A finer part is dropped, rounding toward the past.
    const auto fine = w.event("3");
    w.add({fine}, t0() + 1us +
                      std::chrono::duration_cast<letterbox::store_time::duration>(
                          std::chrono::nanoseconds(999)));
    CHECK(w.find(fine.msg.id).created_at == t0() + 1us);
}

TEST_CASE("sqlite outbox_store refuses a nil id and undecodable headers",
          "[sqlite][outbox_store]") {
    outbox_world w;
    auto uow = w.db.begin();
    auto nil = w.event("1");
    nil.msg.id = letterbox::message_id{};
    CHECK(w.outbox.add(uow, nil, t0()) == errc::precondition_failed);

    auto deep = w.event("1");
    letterbox::field_value v = 1;
    for (int i = 0; i < 200; ++i)
        v = letterbox::field_array{std::move(v)};
    deep.msg.headers.set("deep", std::move(v));
    CHECK(w.outbox.add(uow, deep, t0()) == errc::payload_unencodable);
    CHECK(uow.is_open());
    REQUIRE_FALSE(uow.commit());
}

TEST_CASE("sqlite outbox_store sees the ids other database objects committed",
          "[sqlite][outbox_store]") {
    outbox_world w;
    const auto e = w.event("1");
    w.add({e}, t0());
    // Another process (here: another database object) on the same file.
    auto other = database::open(w.dir.file("outbox.db"));
    letterbox::sqlite::outbox_store other_outbox(other);
    auto uow = other.begin();
    CHECK(other_outbox.add(uow, e, t0()) == errc::duplicate_message_id);
    REQUIRE_FALSE(uow.commit());
    std::error_code ec;
    CHECK(other_outbox.claim("relay", 10, 30s, t0(), ec).size() == 1);
    CHECK(w.find(e.msg.id).lease_owner == "relay");
}

TEST_CASE("sqlite outbox_store reports a damaged row as store_corrupt, not a crash",
          "[sqlite][outbox_store]") {
    outbox_world w;
    const auto e = w.event("1");
    w.add({e}, t0());
    {
        auto uow = w.db.begin();
        REQUIRE_FALSE(uow.connection().exec("UPDATE letterbox_outbox SET headers = x'01ff'"));
        REQUIRE_FALSE(uow.commit());
    }
    std::error_code ec;
    CHECK_FALSE(w.outbox.find(e.msg.id, ec).has_value());
    CHECK(ec == errc::store_corrupt);
    CHECK(w.outbox.list({}, ec).empty());
    CHECK(ec == errc::store_corrupt);
    CHECK(w.outbox.claim("relay", 10, 30s, t0(), ec).empty());
    CHECK(ec == errc::store_corrupt);
    // The failed claim leased nothing.
    auto uow = w.db.begin();
    auto st = uow.connection().prepare("SELECT lease_owner FROM letterbox_outbox_unpublished", ec);
    REQUIRE(st->step(ec));
    CHECK(st->column_text(0).empty());
}

TEST_CASE("sqlite outbox_store lists the readable rows and names each unreadable one",
          "[sqlite][outbox_store]") {
    outbox_world w;
    std::vector<letterbox::outbox_entry> entries;
    for (int i = 0; i < 5; ++i)
        entries.push_back(w.event(std::to_string(i)));
    w.add(entries, t0());
    {
        auto uow = w.db.begin();
        REQUIRE_FALSE(uow.connection().exec(
            "UPDATE letterbox_outbox SET message_id = 'not-a-uuid' WHERE sequence = 2;"
            "UPDATE letterbox_outbox SET headers = x'01ff' WHERE sequence = 4"));
        REQUIRE_FALSE(uow.commit());
    }
    std::error_code ec;
    std::vector<letterbox::sqlite::outbox_row_error> unreadable;
    const auto rows = w.outbox.list({}, unreadable, ec);
    REQUIRE_FALSE(ec);
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].sequence == 1);
    CHECK(rows[1].sequence == 3);
    CHECK(rows[2].sequence == 5);
    REQUIRE(unreadable.size() == 2);
    CHECK(unreadable[0].sequence == 2);
    CHECK(unreadable[0].message_id == "not-a-uuid");
    CHECK(unreadable[0].what == "message_id is not a UUID");
    CHECK(unreadable[1].sequence == 4);
    CHECK(unreadable[1].message_id == letterbox::to_string(entries[3].msg.id));
    CHECK(unreadable[1].what == "headers are not letterbox's encoding");

    // Unreadable rows count toward the limit, so that paging by sequence sees every row once.
    letterbox::outbox_query page;
    page.limit = 2;
    CHECK(w.outbox.list(page, unreadable, ec).size() == 1);
    CHECK(unreadable.size() == 1);
    page.after_sequence = 2;
    CHECK(w.outbox.list(page, unreadable, ec).size() == 1);
    CHECK(unreadable.size() == 1);
    CHECK(unreadable[0].sequence == 4);

    // The listing without a report still fails as a whole.
    CHECK(w.outbox.list({}, ec).empty());
    CHECK(ec == errc::store_corrupt);
}

TEST_CASE("sqlite outbox_store on a database that failed to open reports closed",
          "[sqlite][outbox_store]") {
    temp_directory dir;
    std::error_code ec;
    auto db = database::open(dir.file("no/such/dir.db"), {}, ec);
    REQUIRE(ec);
    letterbox::sqlite::outbox_store outbox(db);
    letterbox::sqlite::unit_of_work uow;
    CHECK(outbox.add(uow, {}, t0()) == errc::closed);
    CHECK(outbox.claim("relay", 1, 1s, t0(), ec).empty());
    CHECK(ec == errc::closed);
    CHECK(outbox.stats(t0(), ec) == letterbox::outbox_stats{});
    CHECK(ec == errc::closed);
    std::vector<std::error_code> results;
    const letterbox::message_id one[] = {letterbox::message_id{}};
    CHECK(outbox.mark_published(one, "relay", t0(), results) == errc::closed);
    CHECK(results == std::vector<std::error_code>{make_error_code(errc::closed)});
}

TEST_CASE("sqlite outbox_store claims a large backlog in order, one row per aggregate",
          "[sqlite][outbox_store]") {
    outbox_world w;
    constexpr int rows = 20000;
    constexpr int aggregates = 1000;
    std::vector<letterbox::outbox_entry> all;
    for (int i = 0; i < rows; ++i) {
        auto e = w.event(std::to_string(i % aggregates));
        e.msg.body = std::to_string(i);
        all.push_back(std::move(e));
    }
    for (int i = 0; i < rows; i += 5000)
        w.add(std::vector<letterbox::outbox_entry>(all.begin() + i, all.begin() + i + 5000), t0());

    std::error_code ec;
    // The first batches hold one event of each aggregate, oldest first.
    std::vector<letterbox::outbox_record> leased;
    for (int b = 0; b < 4; ++b) {
        auto batch = w.outbox.claim("relay", 256, 30s, t0(), ec);
        REQUIRE_FALSE(ec);
        leased.insert(leased.end(), batch.begin(), batch.end());
    }
    REQUIRE(leased.size() == aggregates);
    for (int i = 0; i < aggregates; ++i)
        CHECK(leased[static_cast<std::size_t>(i)].msg.id ==
              all[static_cast<std::size_t>(i)].msg.id);
    CHECK(w.outbox.claim("relay", 256, 30s, t0(), ec).empty());

    // Publishing the heads releases the next event of each aggregate.
    for (const auto& r : leased)
        REQUIRE_FALSE(w.outbox.mark_published(r.msg.id, "relay", t0()));
    auto next = w.outbox.claim("relay", 256, 30s, t0(), ec);
    REQUIRE(next.size() == 256);
    CHECK(next.front().msg.id == all[aggregates].msg.id);
    const auto s = w.outbox.stats(t0() + 1s, ec);
    CHECK(s.pending == rows - aggregates);
    CHECK(s.published == aggregates);
    CHECK(s.leased == 256);
    CHECK(s.oldest_pending_age == 1s);
}

TEST_CASE("sqlite outbox_store marks a batch published in one transaction",
          "[sqlite][outbox_store]") {
    outbox_world w;
    const auto a1 = w.event("A");
    const auto a2 = w.event("A");
    const auto b1 = w.event("B");
    const auto other = w.event("C");
    w.add({a1, a2, b1, other}, t0());
    std::error_code ec;
    REQUIRE(w.outbox.claim("relay", 2, 30s, t0(), ec).size() == 2); // a1, b1
    REQUIRE(w.outbox.claim("other", 1, 30s, t0(), ec).size() == 1); // other

    const letterbox::message_id batch[] = {a1.msg.id, b1.msg.id, other.msg.id, w.ids()};
    std::vector<std::error_code> results;
    REQUIRE_FALSE(w.outbox.mark_published(batch, "relay", t0() + 1s, results));
    REQUIRE(results.size() == 4);
    CHECK_FALSE(results[0]);
    CHECK_FALSE(results[1]);
    CHECK(results[2] == errc::lease_lost);       // leased by another owner
    CHECK(results[3] == errc::record_not_found); // unknown id
    CHECK(w.find(a1.msg.id).status == letterbox::outbox_status::published);
    CHECK(*w.find(b1.msg.id).published_at == t0() + 1s);
    CHECK(w.find(other.msg.id).lease_owner == "other");
    // a2 is the head of A now.
    const auto next = w.outbox.claim("relay", 10, 30s, t0() + 2s, ec);
    REQUIRE(next.size() == 1);
    CHECK(next[0].msg.id == a2.msg.id);
    CHECK_FALSE(
        w.outbox.mark_published(std::span<const letterbox::message_id>(), "relay", t0(), results));
    CHECK(results.empty());

    // A database error marks nothing, and every result holds it.
    const auto a3 = w.event("A");
    w.add({a3}, t0());
    REQUIRE(w.find(a2.msg.id).lease_owner == "relay");
    letterbox::sqlite::database_options impatient;
    impatient.busy_timeout = 10ms;
    impatient.max_busy_retries = 0;
    auto impatient_db = database::open(w.dir.file("outbox.db"), impatient);
    letterbox::sqlite::outbox_store impatient_outbox(impatient_db);
    {
        auto holder = w.db.begin(); // holds the write lock
        const letterbox::message_id both[] = {a2.msg.id, a3.msg.id};
        CHECK(impatient_outbox.mark_published(both, "relay", t0() + 4s, results) ==
              errc::store_busy);
        REQUIRE(results.size() == 2);
        CHECK(results[0] == errc::store_busy);
        CHECK(results[1] == errc::store_busy);
    }
    CHECK(w.find(a2.msg.id).status == letterbox::outbox_status::pending);
}

TEST_CASE("sqlite outbox_store keeps each aggregate's head through every transition",
          "[sqlite][outbox_store]") {
    outbox_world w;
    std::vector<letterbox::outbox_entry> a;
    for (int i = 0; i < 4; ++i)
        a.push_back(w.event("A"));
    w.add({a[0], a[1]}, t0());
    w.add({a[2], a[3]}, t0());
    std::error_code ec;
    auto heads = [&](letterbox::store_time now) {
        std::vector<letterbox::message_id> ids;
        for (const auto& r : w.outbox.claim("relay", 10, 1s, now, ec))
            ids.push_back(r.msg.id);
        REQUIRE_FALSE(ec);
        return ids;
    };
    using ids = std::vector<letterbox::message_id>;
    CHECK(heads(t0()) == ids{a[0].msg.id});
    // Parked and unparked: still the head, and nothing overtakes it.
    REQUIRE_FALSE(w.outbox.park(a[0].msg.id, "operator"));
    CHECK(heads(t0() + 1h).empty());
    REQUIRE_FALSE(w.outbox.unpark(a[0].msg.id, t0() + 1h));
    CHECK(heads(t0() + 1h) == ids{a[0].msg.id});
    REQUIRE_FALSE(w.outbox.mark_published(a[0].msg.id, "relay", t0() + 1h));
    CHECK(heads(t0() + 1h) == ids{a[1].msg.id});
    // A pending head deleted by hand (an operator's DELETE) hands over to the next row.
    {
        auto uow = w.db.begin();
        auto st =
            uow.connection().prepare("DELETE FROM letterbox_outbox WHERE message_id = ?1", ec);
        st->bind_text(1, letterbox::to_string(a[1].msg.id));
        REQUIRE_FALSE(st->execute());
        REQUIRE_FALSE(uow.commit());
    }
    CHECK(heads(t0() + 2h) == ids{a[2].msg.id});
    // Failures keep the head; publishing the last row leaves the aggregate empty, and a new
    // event of it is a head at once.
    REQUIRE_FALSE(w.outbox.record_failure(a[2].msg.id, "relay", "nack", t0() + 2h, 5, t0() + 2h));
    CHECK(heads(t0() + 3h) == ids{a[2].msg.id});
    REQUIRE_FALSE(w.outbox.mark_published(a[2].msg.id, "relay", t0() + 3h));
    CHECK(heads(t0() + 4h) == ids{a[3].msg.id});
    REQUIRE_FALSE(w.outbox.mark_published(a[3].msg.id, "relay", t0() + 4h));
    CHECK(heads(t0() + 5h).empty());
    const auto late = w.event("A");
    w.add({late}, t0() + 5h);
    CHECK(heads(t0() + 5h) == ids{late.msg.id});
}

} // namespace unit_sqlite_outbox_store
