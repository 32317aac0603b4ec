// SPDX-License-Identifier: BSL-1.0
//
// Example 13: a slow call in a handler, without holding a thread or a lock
// (docs/async-handlers.md).
//
// An invoicing worker prices each order with a call to a rates service that takes 2 seconds,
// then saves the invoice with the order's inbox record, in one SQLite transaction:
// `endpoint.consume(inbox, middleware::after_call(quote, save_invoice))`.
//
// 1. Three orders arrive together. The three calls wait at the same time, as coroutines on the
//    one I/O thread: the three invoices are saved after 2 s, not 6. While the calls wait, no
//    transaction is open: another connection writes to the database.
// 2. Order 1 is delivered again: the inbox already holds it, so it is acknowledged at once,
//    with no second call.
// 3. The rates service fails once for order 4: the retry layer runs it again, the call first,
//    so one invoice is saved after two calls.
// 4. A coroutine handler with no inbox: receipts are e-mailed (a 1-second call) and acked.
//
// Needs: the core, SQLite and testing (for `drive_until`). Runs on one thread, in virtual time
// (a `virtual_clock`): the output is always the same.
// Run: build/<dir>/examples/example_13_slow_calls.
#include <letterbox/letterbox.hpp>
#include <letterbox/sqlite.hpp>
#include <letterbox/testing/simulation.hpp> // drive_until: runs the program in virtual time

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace asio = boost::asio;
namespace lb = letterbox;
using namespace std::chrono_literals;

int failures = 0;
void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "MISMATCH: %s\n", what);
        ++failures;
    }
}

struct order {
    static constexpr std::string_view message_type = "order-placed";
    int id = 0;
    int amount = 0; // in euro cents
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order, id, amount)

// The slow dependency: a rates service that answers after 2 seconds.
struct rates_service {
    lb::virtual_clock* clock;
    int calls = 0;
    int waiting = 0;
    int most_waiting = 0;
    std::set<int> fail_once{};

    // The price in dollar cents of an order. A coroutine takes its arguments by value: a
    // reference would outlive what it refers to while the coroutine waits.
    asio::awaitable<std::int64_t> quote(order o) {
        ++calls;
        most_waiting = std::max(most_waiting, ++waiting);
        auto timer = clock->make_timer(co_await asio::this_coro::executor);
        timer.expires_after(2s);
        co_await timer.async_wait(asio::use_awaitable);
        --waiting;
        if (fail_once.erase(o.id) == 1)
            throw std::runtime_error("rates service unavailable");
        co_return std::int64_t{o.amount} * 108 / 100;
    }
};

std::int64_t scalar(lb::sqlite::database& db, const char* sql) {
    auto uow = db.begin();
    std::error_code ec;
    auto st = uow.connection().prepare(sql, ec);
    if (ec || !st->step(ec))
        throw lb::error(ec, sql);
    return st->column_int64(0);
}

void exec(lb::sqlite::database& db, const char* sql) {
    auto uow = db.begin();
    if (auto ec = uow.connection().exec(sql))
        throw lb::error(ec, sql);
    if (auto ec = uow.commit())
        throw lb::error(ec, "commit");
}

int main() {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("letterbox-slow-calls-" + lb::to_string(lb::message_id_generator{}()));
    std::filesystem::create_directories(dir);
    const auto path = (dir / "invoices.db").string();

    asio::io_context io;
    lb::virtual_clock clock;
    lb::in_memory::broker broker(io.get_executor(), clock);
    lb::in_memory::transport transport(broker, "invoicing");
    auto db = lb::sqlite::database::open(path);
    auto other = lb::sqlite::database::open(path); // another writer of the same file
    exec(db, "CREATE TABLE invoices(order_id INTEGER PRIMARY KEY, cents INTEGER NOT NULL)");
    exec(db, "CREATE TABLE audit(n INTEGER)");
    lb::sqlite::inbox_store inbox(db);
    rates_service rates{&clock};

    //[after_call
    // The call first, with no transaction open; then the invoice and the inbox record, together.
    auto quote = [&](const lb::message& m) {
        return rates.quote(lb::decode_payload<order>(m));
    };
    auto save_invoice = lb::typed<order>(
        [&](const order& o, const std::int64_t& cents, lb::sqlite::unit_of_work& u) {
            std::error_code ec;
            auto st = u.connection().prepare("INSERT INTO invoices VALUES (?1, ?2)", ec);
            if (ec)
                throw lb::error(ec, "prepare");
            st->bind_int64(1, o.id);
            st->bind_int64(2, cents);
            if (auto failed = st->execute())
                throw lb::error(failed, "insert the invoice");
        });
    auto orders =
        lb::receive_endpoint(transport, clock, {.queue = "orders", .consumer_id = "invoicing"})
            .retry(lb::backoff::immediate(3));
    auto worker = orders.consume(inbox, lb::middleware::after_call(quote, save_invoice));
    //]
    // Declares an endpoint's queues, then starts its consumer.
    auto declare_and_start = [&](const auto& endpoint, auto& consumer) {
        std::optional<std::error_code> declared, started;
        endpoint.async_declare([&](std::error_code ec) { declared = ec; });
        check(lb::testing::drive_until(io, clock, [&] { return declared.has_value(); }) &&
                  !*declared,
              "declare");
        consumer.async_start([&](std::error_code ec, const std::string&) { started = ec; });
        check(lb::testing::drive_until(io, clock, [&] { return started.has_value(); }) && !*started,
              "start");
    };
    declare_and_start(orders, worker);

    lb::message_id_generator ids(13);
    auto publish = [&](const lb::message& m) {
        std::optional<std::error_code> published;
        transport.async_publish(m, [&](std::error_code ec) { published = ec; });
        check(lb::testing::drive_until(io, clock, [&] { return published.has_value(); }) &&
                  !*published,
              "publish");
    };
    auto place = [&](int id, int amount) {
        auto m = lb::make_message(ids, order{id, amount}, "orders");
        publish(m);
        return m;
    };

    // -- 1. three orders, three calls waiting at once -----------------------------------------
    const auto start = clock.now();
    const auto one = place(1, 1000);
    place(2, 2500);
    place(3, 500);
    bool wrote_meanwhile = false;
    check(lb::testing::drive_until(io, clock,
                                   [&] {
                                       if (rates.waiting == 3 && !wrote_meanwhile) {
                                           exec(other,
                                                "INSERT INTO audit VALUES (1)"); // no lock is held
                                           wrote_meanwhile = true;
                                       }
                                       return worker.stats().acked == 3;
                                   }),
          "three orders invoiced");
    const auto took = std::chrono::duration_cast<std::chrono::seconds>(clock.now() - start);
    std::printf("3 orders invoiced after %lld s: %d calls, %d of them waiting at once\n",
                static_cast<long long>(took.count()), rates.calls, rates.most_waiting);
    check(took == 2s && rates.most_waiting == 3, "the calls waited together");
    std::printf("while the calls waited, another connection wrote: %s\n",
                wrote_meanwhile && scalar(db, "SELECT count(*) FROM audit") == 1 ? "yes" : "no");

    // -- 2. a duplicate: no second call -------------------------------------------------------
    publish(one);
    check(lb::testing::drive_until(io, clock, [&] { return worker.stats().acked == 4; }),
          "duplicate acked");
    std::printf("order 1 delivered again: acknowledged from the inbox, calls still %d\n",
                rates.calls);
    check(rates.calls == 3, "no second call");

    // -- 3. the call fails once: retried, call first ------------------------------------------
    rates.fail_once.insert(4);
    place(4, 4000);
    check(lb::testing::drive_until(io, clock, [&] { return worker.stats().acked == 5; }),
          "order 4");
    std::printf("order 4: the rates service failed once and the retry called again: %d calls, "
                "%lld invoices\n",
                rates.calls - 3,
                static_cast<long long>(scalar(db, "SELECT count(*) FROM invoices")));
    check(rates.calls == 5 && worker.stats().retried == 1, "one retry");

    // -- 4. a coroutine handler, no inbox -----------------------------------------------------
    //[coroutine_handler
    int receipts = 0;
    auto email_receipt = [&](const lb::message&) -> asio::awaitable<void> {
        auto timer = clock.make_timer(co_await asio::this_coro::executor);
        timer.expires_after(1s); // the mail server
        co_await timer.async_wait(asio::use_awaitable);
        ++receipts;
    };
    auto receipt_queue = lb::receive_endpoint(transport, clock, {.queue = "receipts"});
    auto mailer = receipt_queue.consume(email_receipt);
    //]
    declare_and_start(receipt_queue, mailer);
    for (int id = 1; id <= 2; ++id)
        publish(lb::make_message(ids, order{id, 0}, "receipts"));
    check(lb::testing::drive_until(io, clock, [&] { return mailer.stats().acked == 2; }),
          "receipts");
    std::printf("receipts e-mailed by a coroutine handler: %d\n", receipts);

    std::printf("invoices: %lld, total %lld dollar cents\n",
                static_cast<long long>(scalar(db, "SELECT count(*) FROM invoices")),
                static_cast<long long>(scalar(db, "SELECT sum(cents) FROM invoices")));
    std::filesystem::remove_all(dir);
    if (failures != 0)
        return 1;
    std::puts("OK");
    return 0;
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   3 orders invoiced after 2 s: 3 calls, 3 of them waiting at once
//   while the calls waited, another connection wrote: yes
//   order 1 delivered again: acknowledged from the inbox, calls still 3
//   order 4: the rates service failed once and the retry called again: 2 calls, 4 invoices
//   receipts e-mailed by a coroutine handler: 2
//   invoices: 4, total 8640 dollar cents
//   OK
