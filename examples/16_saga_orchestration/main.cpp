// SPDX-License-Identifier: BSL-1.0
//
// Example 16: an orchestrated saga (seed 003, exercise 2). An order reserves stock, then charges
// the payment, then is confirmed:
//
//   orders service: saga_orchestrator --reserve-stock--> stock service (reservations)
//        ^    |                        --charge-payment-> payment service (charges)
//        |    +----------------------- --confirm-order--> orders service (orders)
//        +-- replies (order-saga.replies) <--------------- each participant, through its outbox
//
// Three services, each with its own SQLite database: its business tables, an outbox and an
// inbox (and, for the orders service, the saga store). Every move of the saga is one transaction
// of the orders database: the saga's new state, its next command in the outbox, and the inbox
// record of the reply that moved it. Each participant's effect and its reply commit together in
// its own database. The relays publish the outboxes.
//
// 1. Order 1: every step succeeds; the order ends `completed` and confirmed.
// 2. Order 2: the payment is declined. The saga runs the stock reservation's compensation
//    (release-stock) and ends `failed`: the reservation is released, and the order is never
//    confirmed.
// 3. Order 3: the orders service dies in the middle of a step, after writing the saga's new state
//    and its next command but before its commit. The transaction rolls back, the reply is
//    delivered again, and the step happens once: the order ends `completed`, charged once.
//
// The transport is RabbitMQ when LETTERBOX_AMQP_URL (or --url) names a broker, otherwise the
// in-memory RabbitMQ model. The program checks its own outcome and exits non-zero, with
// `MISMATCH: ...` on stderr, when it is wrong. Its databases live in a temporary directory that
// it removes.
//
// Needs: the sqlite and amqp components.
// Run: build/release/examples/example_16_saga_orchestration [--url amqp://...]
#include <letterbox/amqp.hpp>
#include <letterbox/letterbox.hpp>
#include <letterbox/saga/saga_command.hpp>
#include <letterbox/saga/saga_orchestrator.hpp>
#include <letterbox/saga/saga_reply.hpp>
#include <letterbox/sqlite.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

using namespace letterbox;
using namespace std::chrono_literals;

namespace {

namespace asio = boost::asio;
using time_point = std::chrono::steady_clock::time_point;

int failures = 0;
void check(bool ok, const std::string& what) {
    if (!ok) {
        std::fprintf(stderr, "MISMATCH: %s\n", what.c_str());
        ++failures;
    }
}

// Runs `io` until `done()` or `deadline`, in slices of at most 20 ms.
bool run_until(asio::io_context& io, time_point deadline, const std::function<bool()>& done) {
    while (!done()) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline)
            return false;
        io.run_one_for(std::min<std::chrono::steady_clock::duration>(deadline - now, 20ms));
    }
    return true;
}

// The saga's data, and the commands of its steps.
struct order {
    int id = 0;
    std::string sku;
    std::string reservation;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order, id, sku, reservation)

struct reserve_stock {
    static constexpr std::string_view message_type = "reserve-stock";
    int order_id = 0;
    std::string sku;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(reserve_stock, order_id, sku)
struct release_stock {
    static constexpr std::string_view message_type = "release-stock";
    int order_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(release_stock, order_id)
struct charge_payment {
    static constexpr std::string_view message_type = "charge-payment";
    int order_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(charge_payment, order_id)
struct refund_payment {
    static constexpr std::string_view message_type = "refund-payment";
    int order_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(refund_payment, order_id)
struct confirm_order {
    static constexpr std::string_view message_type = "confirm-order";
    int order_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(confirm_order, order_id)

struct queues {
    std::string replies, stock, payments, orders;
};

// The commands of the steps, made from the saga's data.
message reserve(const queues& q, const order& o) {
    return saga_command(reserve_stock{o.id, o.sku}, q.stock);
}
message release(const queues& q, const order& o) {
    return saga_command(release_stock{o.id}, q.stock);
}
message charge(const queues& q, const order& o) {
    return saga_command(charge_payment{o.id}, q.payments);
}
message refund(const queues& q, const order& o) {
    return saga_command(refund_payment{o.id}, q.payments);
}
message confirm(const queues& q, const order& o) {
    return saga_command(confirm_order{o.id}, q.orders);
}

//[definition
saga_definition<order> fulfilment(const queues& q) {
    const auto to = [&q](message (*command)(const queues&, const order&)) {
        return [q, command](const order& o) {
            return command(q, o);
        };
    };
    return saga_definition<order>("order-fulfilment")
        .step({.name = "reserve-stock",
               .invoke = to(reserve),
               .compensate = to(release),
               .on_reply = [](order& o, const message& reply) { o.reservation = reply.body; },
               .timeout = 30s})
        .step({.name = "charge-payment",
               .invoke = to(charge),
               .compensate = to(refund),
               .timeout = 30s})
        .step({.name = "confirm-order", .invoke = to(confirm), .timeout = 30s});
}
//]

// One service's database: its business tables, its outbox (published by its relay) and its
// inbox.
template <class Transport>
struct service {
    using relay_type = outbox_relay<sqlite::outbox_store, Transport, steady_clock>;

    service(const std::filesystem::path& file, const char* schema, Transport& t,
            steady_clock& clock, const relay_options& options)
        : db(sqlite::database::open(file.string()))
        , outbox(db)
        , inbox(db)
        , relay(outbox, t, clock, options) {
        auto uow = db.begin();
        if (auto ec = uow.connection().exec(schema))
            throw letterbox::error(ec, "create the tables");
        if (auto ec = uow.commit())
            throw letterbox::error(ec, "commit the tables");
        relay.async_run([this](std::error_code) { stopped = true; });
    }

    // Runs `sql` with ?1 = `id` (and ?2 = `text`) in `uow`.
    static void run(sqlite::unit_of_work& uow, const char* sql, std::int64_t id,
                    std::string_view text = {}) {
        std::error_code ec;
        auto st = uow.connection().prepare(sql, ec);
        if (ec)
            throw letterbox::error(ec, sql);
        st->bind_int64(1, id);
        if (!text.empty())
            st->bind_text(2, text);
        if (auto failed = st->execute())
            throw letterbox::error(failed, sql);
    }

    // Whether `sql` (with ?1 = `id`) finds a row, in `uow`.
    static bool exists(sqlite::unit_of_work& uow, const char* sql, std::int64_t id) {
        std::error_code ec;
        auto st = uow.connection().prepare(sql, ec);
        if (ec)
            throw letterbox::error(ec, sql);
        st->bind_int64(1, id);
        const bool found = st->step(ec);
        if (ec)
            throw letterbox::error(ec, sql);
        return found;
    }

    std::int64_t count(const std::string& sql) {
        auto uow = db.begin();
        std::error_code ec;
        auto st = uow.connection().prepare(sql, ec);
        return !ec && st->step(ec) ? st->column_int64(0) : -1;
    }

    // The participant's reply, in the effect's transaction; the relay wakes when it commits.
    std::error_code reply(sqlite::unit_of_work& uow, message r, std::int64_t order_id) {
        if (auto ec = outbox.add(uow, {std::move(r), "order", std::to_string(order_id)},
                                 std::chrono::system_clock::now()))
            return ec;
        return uow.on_commit(relay.waker());
    }

    sqlite::database db;
    sqlite::outbox_store outbox;
    sqlite::inbox_store inbox;
    relay_type relay;
    bool stopped = false;
};

template <class Transport>
int run_scenario(Transport& t, asio::io_context& io, const std::filesystem::path& dir,
                 const std::string& suffix) {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    const queues q{"order-saga.replies" + suffix, "stock" + suffix, "payments" + suffix,
                   "orders.commands" + suffix};
    steady_clock clock;
    asio::thread_pool store_thread(1); // the relays' SQLite calls, off the I/O thread
    relay_options options;
    options.store_executor = store_thread.get_executor();
    options.poll_interval = 200ms;
    //[history
    // What every relay published and the broker confirmed, without the bodies: the history a
    // trace is read from (the last 1,000 messages; ops::http_server serves it, too).
    message_trail trail;
    options.on_event = trail.relay_observer();
    //]
    message_id_generator ids;

    service<Transport> orders(dir / "orders.db",
                              "CREATE TABLE orders(id INTEGER PRIMARY KEY, sku TEXT, status TEXT)",
                              t, clock, options);
    service<Transport> stock(dir / "stock.db",
                             "CREATE TABLE reservations(order_id INTEGER PRIMARY KEY, sku TEXT);"
                             "CREATE TABLE released(order_id INTEGER PRIMARY KEY)",
                             t, clock, options);
    service<Transport> payments(dir / "payments.db",
                                "CREATE TABLE charges(order_id INTEGER PRIMARY KEY);"
                                "CREATE TABLE refunded(order_id INTEGER PRIMARY KEY)",
                                t, clock, options);

    //[orchestrator
    sqlite::saga_store sagas(orders.db);
    saga_orchestrator orchestrator(fulfilment(q), sagas, orders.outbox, clock, q.replies,
                                   backoff::exponential(1s, 2.0, 10s, 5));
    //]
    //[timeouts
    // The saga's timeouts fire every second, on the store thread (SQLite calls block); each move
    // a timeout makes wakes the relay when it commits. Stopped through its cancellation slot.
    asio::cancellation_signal stop_timeouts;
    bool timeouts_stopped = false;
    orchestrator.async_run_timeouts(
        store_thread.get_executor(),
        [&orders] {
            auto uow = orders.db.begin();
            if (auto ec = uow.on_commit(orders.relay.waker()))
                throw letterbox::error(ec, "wake the relay");
            return uow;
        },
        1s,
        asio::bind_executor(io, asio::bind_cancellation_slot(
                                    stop_timeouts.slot(), [&](boost::system::error_code ec) {
                                        timeouts_stopped = true;
                                        check(ec == asio::error::operation_aborted,
                                              "the timeouts stop");
                                    })));
    //]

    // The participants: each effect and its reply commit together, once per command. A step
    // that timed out is compensated (it may have happened), so a participant remembers each
    // compensation and refuses the command if it comes after it (docs/sagas.md).
    auto stock_effect = [&](const message& cmd, sqlite::unit_of_work& uow) {
        if (cmd.type == "reserve-stock") {
            const auto r = decode_payload<reserve_stock>(cmd);
            if (stock.exists(uow, "SELECT 1 FROM released WHERE order_id = ?1", r.order_id))
                return stock.reply(
                    uow, saga_reply(cmd, ids, saga_outcome::failure, "released before it came"),
                    r.order_id);
            stock.run(uow, "INSERT INTO reservations(order_id, sku) VALUES (?1, ?2)", r.order_id,
                      r.sku);
            auto ok = saga_reply(cmd, ids, saga_outcome::success);
            ok.body = "R-" + std::to_string(r.order_id);
            return stock.reply(uow, ok, r.order_id);
        }
        const auto r = decode_payload<release_stock>(cmd);
        stock.run(uow, "DELETE FROM reservations WHERE order_id = ?1", r.order_id);
        stock.run(uow, "INSERT OR IGNORE INTO released(order_id) VALUES (?1)", r.order_id);
        return stock.reply(uow, saga_reply(cmd, ids, saga_outcome::success), r.order_id);
    };
    auto payment_effect = [&](const message& cmd, sqlite::unit_of_work& uow) {
        if (cmd.type == "charge-payment") {
            const auto c = decode_payload<charge_payment>(cmd);
            if (payments.exists(uow, "SELECT 1 FROM refunded WHERE order_id = ?1", c.order_id))
                return payments.reply(
                    uow, saga_reply(cmd, ids, saga_outcome::failure, "refunded before it came"),
                    c.order_id);
            if (c.order_id == 2) // declined: nothing is charged
                return payments.reply(
                    uow, saga_reply(cmd, ids, saga_outcome::failure, "card declined"), c.order_id);
            payments.run(uow, "INSERT INTO charges(order_id) VALUES (?1)", c.order_id);
            return payments.reply(uow, saga_reply(cmd, ids, saga_outcome::success), c.order_id);
        }
        const auto r = decode_payload<refund_payment>(cmd);
        payments.run(uow, "DELETE FROM charges WHERE order_id = ?1", r.order_id);
        payments.run(uow, "INSERT OR IGNORE INTO refunded(order_id) VALUES (?1)", r.order_id);
        return payments.reply(uow, saga_reply(cmd, ids, saga_outcome::success), r.order_id);
    };
    auto confirm_effect = [&](const message& cmd, sqlite::unit_of_work& uow) {
        const auto c = decode_payload<confirm_order>(cmd);
        orders.run(uow, "UPDATE orders SET status = 'confirmed' WHERE id = ?1", c.order_id);
        return orders.reply(uow, saga_reply(cmd, ids, saga_outcome::success), c.order_id);
    };

    //[replies
    // The orchestrator is the effect of the replies' consumer: the reply's inbox record, the
    // saga's move and its next command commit in one transaction of the orders database.
    bool crash_armed = false;
    int crashes = 0;
    auto apply_reply = [&](const message& reply, sqlite::unit_of_work& uow) {
        if (auto ec = orchestrator(reply, uow))
            return ec;
        if (crash_armed && reply.headers.get<std::string>(headers::saga_step) == "reserve-stock") {
            crash_armed = false; // the process dies here: written, not committed
            ++crashes;
            throw std::runtime_error("the orders service died before its commit");
        }
        return uow.on_commit(orders.relay.waker());
    };
    //]

    auto endpoint = [&](const std::string& queue) {
        return receive_endpoint(t, {.queue = queue}).retry(backoff::immediate(3));
    };
    auto reply_endpoint = endpoint(q.replies);
    auto stock_endpoint = endpoint(q.stock);
    auto payment_endpoint = endpoint(q.payments);
    auto confirm_endpoint = endpoint(q.orders);
    auto reply_worker = reply_endpoint.consume(orders.inbox, apply_reply);
    auto stock_worker = stock_endpoint.consume(stock.inbox, stock_effect);
    auto payment_worker = payment_endpoint.consume(payments.inbox, payment_effect);
    auto confirm_worker = confirm_endpoint.consume(orders.inbox, confirm_effect);

    int pending = 4;
    auto declared = [&](std::error_code ec) {
        check(!ec, "declare: " + ec.message());
        --pending;
    };
    reply_endpoint.async_declare(declared);
    stock_endpoint.async_declare(declared);
    payment_endpoint.async_declare(declared);
    confirm_endpoint.async_declare(declared);
    if (!run_until(io, deadline, [&] { return pending == 0; }))
        return failures + 1;
    std::string tags[4];
    pending = 4;
    auto started = [&](int i) {
        return [&, i](std::error_code ec, std::string tag) {
            check(!ec, "start: " + ec.message());
            tags[i] = std::move(tag);
            --pending;
        };
    };
    reply_worker.async_start(started(0));
    stock_worker.async_start(started(1));
    payment_worker.async_start(started(2));
    confirm_worker.async_start(started(3));
    if (!run_until(io, deadline, [&] { return pending == 0; }))
        return failures + 1;

    //[place_order
    // Placing an order: the order row, the saga's instance and its first command, in one
    // transaction of the orders database.
    auto place = [&](int id, const std::string& sku) {
        auto uow = orders.db.begin();
        orders.run(uow, "INSERT INTO orders(id, sku, status) VALUES (?1, ?2, 'pending')", id, sku);
        if (auto ec = orchestrator.start(uow, std::to_string(id), order{id, sku, {}}))
            throw letterbox::error(ec, "start the saga");
        if (auto ec = uow.on_commit(orders.relay.waker()))
            throw letterbox::error(ec, "wake the relay");
        if (auto ec = uow.commit())
            throw letterbox::error(ec, "commit the order");
    };
    //]
    // Waits for order `id`'s saga to end, prints it, and returns "<state>/<reserved><charged>
    // <confirmed>".
    auto outcome = [&](int id) {
        std::error_code ec;
        std::optional<saga_view<order>> saga;
        const bool ended = run_until(io, deadline, [&] {
            saga = orchestrator.find(std::to_string(id), ec);
            return saga && (saga->finished || saga->state == "compensation_failed");
        });
        if (!ended) {
            check(false, "order " + std::to_string(id) + " did not end");
            return std::string("unfinished");
        }
        const auto key = std::to_string(id);
        const auto reserved =
            stock.count("SELECT COUNT(*) FROM reservations WHERE order_id = " + key);
        const auto charged = payments.count("SELECT COUNT(*) FROM charges WHERE order_id = " + key);
        const auto confirmed = orders.count("SELECT COUNT(*) FROM orders WHERE id = " + key +
                                            " AND status = 'confirmed'");
        std::printf("order %d: %s%s%s\n", id, saga->state.c_str(), saga->reason.empty() ? "" : ": ",
                    saga->reason.c_str());
        std::printf("  stock reserved: %lld, payment charged: %lld, order confirmed: %lld\n",
                    static_cast<long long>(reserved), static_cast<long long>(charged),
                    static_cast<long long>(confirmed));
        return saga->state + "/" + std::to_string(reserved) + std::to_string(charged) +
               std::to_string(confirmed);
    };

    std::printf("1. an order whose steps all succeed\n");
    place(1, "book");
    check(outcome(1) == "completed/111", "order 1 completes: reserved, charged, confirmed");

    std::printf("2. an order whose payment is declined\n");
    place(2, "lamp");
    check(outcome(2) == "failed/000", "order 2 fails: released, not charged, not confirmed");
    //[causal_tree
    // How did order 2 fail? Every message of its saga carries the conversation it belongs to and
    // the message that caused it (`caused_by`): its causal tree, from what the relays published.
    std::error_code ec;
    const auto conversation = orchestrator.find("2", ec)->conversation_id;
    const auto label = [](const message& m) {
        const auto outcome = m.headers.get<std::string>(headers::saga_outcome);
        const auto reason = m.headers.get<std::string>(headers::saga_reason);
        return m.type + (outcome ? ": " + *outcome : "") + (reason ? " (" + *reason + ")" : "");
    };
    const auto tree_now = [&] {
        return to_text(causal_tree(trail.conversation(conversation), conversation), label);
    };
    //]
    const std::string expected = "reserve-stock\n"
                                 "  reserve-stock.reply: success\n"
                                 "    charge-payment\n"
                                 "      charge-payment.reply: failure (card declined)\n"
                                 "        release-stock\n"
                                 "          release-stock.reply: success\n";
    std::string tree;
    // The last reply's confirm may come after the orchestrator consumed it: wait for it.
    run_until(io, deadline, [&] { return (tree = tree_now()) == expected; });
    std::printf("  its causal tree:\n");
    for (std::size_t at = 0, end; at < tree.size(); at = end + 1) {
        end = tree.find('\n', at);
        std::printf("    %s\n", tree.substr(at, end - at).c_str());
    }
    check(tree == expected, "order 2's causal tree");

    std::printf("3. an order whose orchestrator dies in the middle of a step\n");
    crash_armed = true;
    place(3, "desk");
    check(outcome(3) == "completed/111", "order 3 completes once");
    std::printf("  the orders service died %d time(s) before a commit; the step ran once\n",
                crashes);
    check(crashes == 1, "one crash injected");

    const auto s = orchestrator.stats();
    std::printf(
        "saga: started %llu, completed %llu, failed %llu, commands %llu, compensations "
        "%llu\n",
        static_cast<unsigned long long>(s.started), static_cast<unsigned long long>(s.completed),
        static_cast<unsigned long long>(s.failed), static_cast<unsigned long long>(s.commands),
        static_cast<unsigned long long>(s.compensations));
    check(s.started == 3 && s.completed == 2 && s.failed == 1 && s.commands == 8 &&
              s.compensations == 1,
          "the saga's counters");

    // Shut down: the timeouts, the consumers, then the relays.
    stop_timeouts.emit(asio::cancellation_type::terminal);
    if (!run_until(io, deadline, [&] { return timeouts_stopped; })) {
        check(false, "the timeouts stop");
        store_thread.stop(); // the loop must not outlive the stores it uses
        store_thread.join();
    }
    pending = 4;
    auto shut = [&](std::error_code) {
        --pending;
    };
    reply_worker.async_shutdown(tags[0], shut);
    stock_worker.async_shutdown(tags[1], shut);
    payment_worker.async_shutdown(tags[2], shut);
    confirm_worker.async_shutdown(tags[3], shut);
    check(run_until(io, deadline, [&] { return pending == 0; }), "the consumers stop");
    for (auto* s : {&orders, &stock, &payments})
        s->relay.stop();
    check(run_until(io, deadline,
                    [&] { return orders.stopped && stock.stopped && payments.stopped; }),
          "the relays stop");
    return failures;
}

} // namespace

int main(int argc, char** argv) {
    std::string url;
    if (const char* env = std::getenv("LETTERBOX_AMQP_URL"))
        url = env;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--url" && i + 1 < argc) {
            url = argv[++i];
        } else {
            std::fprintf(stderr,
                         "usage: %s [--url amqp://user:password@host:port/vhost]\n"
                         "  (default: $LETTERBOX_AMQP_URL, else the in-memory broker)\n",
                         argv[0]);
            return 2;
        }
    }
    const auto dir = std::filesystem::temp_directory_path() /
                     ("letterbox-saga-" + letterbox::to_string(message_id_generator{}()));
    std::filesystem::create_directories(dir);
    int result = 1;
    try {
        asio::io_context io;
        if (!url.empty()) {
            const auto u = amqp::parse_url(url);
            std::printf("transport: amqp (%s)\n", u.redacted().c_str());
            // Queues of our own on a broker that may be shared (CI runs tests in parallel).
            char suffix[16];
            std::snprintf(suffix, sizeof suffix, ".%08x", std::random_device{}());
            amqp::transport transport(io.get_executor(), u);
            result = run_scenario(transport, io, dir, suffix);
        } else {
            std::printf("transport: in-memory (no LETTERBOX_AMQP_URL)\n");
            in_memory::broker broker(io.get_executor());
            in_memory::transport transport(broker, "saga-example");
            result = run_scenario(transport, io, dir, "");
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "MISMATCH: %s\n", e.what());
    }
    std::filesystem::remove_all(dir);
    return result == 0 ? 0 : 1;
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   ^transport: (in-memory|amqp)
//   1. an order whose steps all succeed
//   order 1: completed
//   stock reserved: 1, payment charged: 1, order confirmed: 1
//   2. an order whose payment is declined
//   order 2: failed: step 'charge-payment' failed: card declined
//   stock reserved: 0, payment charged: 0, order confirmed: 0
//   its causal tree:
//   reserve-stock
//   reserve-stock.reply: success
//   charge-payment
//   charge-payment.reply: failure \(card declined\)
//   release-stock
//   release-stock.reply: success
//   3. an order whose orchestrator dies in the middle of a step
//   order 3: completed
//   stock reserved: 1, payment charged: 1, order confirmed: 1
//   the orders service died 1 time\(s\) before a commit; the step ran once
//   saga: started 3, completed 2, failed 1, commands 8, compensations 1
