// SPDX-License-Identifier: BSL-1.0
// The orchestrator's state machine over the in-memory stores, on a virtual clock: replies are
// applied by hand, each in a unit of its own, and the commands are read back from the outbox.

#include <letterbox/saga/saga_orchestrator.hpp>

#include <letterbox/backoff/exponential.hpp>
#include <letterbox/causal_tree.hpp>
#include <letterbox/caused_by.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>
#include <letterbox/saga/in_memory_saga_store.hpp>
#include <letterbox/saga/saga_command.hpp>
#include <letterbox/saga/saga_definition.hpp>
#include <letterbox/saga/saga_reply.hpp>
#include <letterbox/trace_context.hpp>
#include <letterbox/virtual_clock.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace unit_saga_saga_orchestrator {

using namespace std::chrono_literals;
namespace lb = letterbox;

// The saga's data and its commands: outside the anonymous namespace, since nlohmann's macros
// define functions that a command type may not use.

struct order {
    int id = 0;
    std::string reservation;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order, id, reservation)

struct reserve_stock {
    static constexpr std::string_view message_type = "reserve-stock";
    int order_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(reserve_stock, order_id)
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
struct ship_order {
    static constexpr std::string_view message_type = "ship-order";
    int order_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ship_order, order_id)

namespace {

/// reserve-stock (undone by release-stock) → charge-payment (undone by refund-payment) →
/// ship-order (nothing to undo), each step with `timeout`.
lb::saga_definition<order> fulfilment(std::chrono::milliseconds timeout = 0ms) {
    return lb::saga_definition<order>("order-fulfilment")
        .step({.name = "reserve-stock",
               .invoke =
                   [](const order& o) { return lb::saga_command(reserve_stock{o.id}, "stock"); },
               .compensate =
                   [](const order& o) { return lb::saga_command(release_stock{o.id}, "stock"); },
               .on_reply = [](order& o, const lb::message& reply) { o.reservation = reply.body; },
               .timeout = timeout})
        .step(
            {.name = "charge-payment",
             .invoke =
                 [](const order& o) { return lb::saga_command(charge_payment{o.id}, "payments"); },
             .compensate =
                 [](const order& o) { return lb::saga_command(refund_payment{o.id}, "payments"); },
             .on_reply = {},
             .timeout = timeout})
        .step({.name = "ship-order",
               .invoke =
                   [](const order& o) { return lb::saga_command(ship_order{o.id}, "shipping"); },
               .compensate = {},
               .on_reply = {},
               .timeout = timeout});
}

using policy = lb::backoff::exponential;

struct world {
    explicit world(std::chrono::milliseconds timeout = 0ms)
        : orchestrator(fulfilment(timeout), sagas, outbox, clock, "order-saga.replies",
                       policy(1s, 2.0, 10s, 3)) {}

    lb::virtual_clock clock;
    lb::in_memory_saga_store sagas;
    lb::in_memory_outbox_store outbox;
    lb::saga_orchestrator<order, lb::in_memory_saga_store, lb::in_memory_outbox_store,
                          lb::virtual_clock, policy>
        orchestrator;
    lb::message_id_generator ids{77};
    std::size_t seen = 0;

    void start(int id) {
        lb::in_memory_unit_of_work u;
        REQUIRE_FALSE(orchestrator.start(u, "order-" + std::to_string(id), order{id, {}}));
        REQUIRE_FALSE(u.commit());
    }

    /// The commands sent since the last call, in order.
    std::vector<lb::message> sent() {
        std::error_code ec;
        const auto rows =
            outbox.list({.status = std::nullopt, .after_sequence = 0, .limit = 1000}, ec);
        REQUIRE_FALSE(ec);
        std::vector<lb::message> fresh;
        for (std::size_t i = seen; i < rows.size(); ++i)
            fresh.push_back(rows[i].msg);
        seen = rows.size();
        return fresh;
    }

    /// The one command sent since the last call.
    lb::message one_sent() {
        auto fresh = sent();
        REQUIRE(fresh.size() == 1);
        return fresh.front();
    }

    /// Applies `reply` in a unit of its own and commits it.
    std::error_code apply(const lb::message& reply) {
        lb::in_memory_unit_of_work u;
        if (auto ec = orchestrator(reply, u))
            return ec;
        return u.commit();
    }

    lb::message reply(const lb::message& command, lb::saga_outcome outcome,
                      std::string_view reason = {}) {
        return lb::saga_reply(command, ids, outcome, reason);
    }

    lb::saga_view<order> saga(int id) {
        std::error_code ec;
        auto v = orchestrator.find("order-" + std::to_string(id), ec);
        REQUIRE_FALSE(ec);
        REQUIRE(v);
        return *v;
    }

    std::size_t fire() {
        std::error_code ec;
        const auto n =
            orchestrator.fire_due_timeouts([] { return lb::in_memory_unit_of_work{}; }, ec);
        REQUIRE_FALSE(ec);
        return n;
    }
};

std::string header(const lb::message& m, std::string_view name) {
    return m.headers.get<std::string>(name).value_or("(none)");
}

} // namespace

TEST_CASE("saga_orchestrator: a saga whose steps all succeed sends each command in turn and ends "
          "completed",
          "[saga]") {
    world w;
    w.start(1);
    const auto reserve = w.one_sent();
    CHECK(reserve.type == "reserve-stock");
    CHECK(reserve.routing_key == "stock");
    CHECK_FALSE(reserve.id.is_nil());
    CHECK(reserve.properties.reply_to == "order-saga.replies");
    const auto started = w.saga(1);
    CHECK(reserve.properties.correlation_id == started.id);
    CHECK(header(reserve, lb::headers::saga_type) == "order-fulfilment");
    CHECK(header(reserve, lb::headers::saga_id) == started.id);
    CHECK(header(reserve, lb::headers::saga_step) == "reserve-stock");
    CHECK(header(reserve, lb::headers::saga_phase) == "invoke");
    CHECK(started.state == "reserve-stock");
    CHECK(started.version == 1);

    auto reserved = w.reply(reserve, lb::saga_outcome::success);
    reserved.body = "R-17"; // read by the step's on_reply
    REQUIRE_FALSE(w.apply(reserved));
    const auto charge = w.one_sent();
    CHECK(charge.type == "charge-payment");
    CHECK(w.saga(1).state == "charge-payment");
    CHECK(w.saga(1).data.reservation == "R-17");

    REQUIRE_FALSE(w.apply(w.reply(charge, lb::saga_outcome::success)));
    REQUIRE_FALSE(w.apply(w.reply(w.one_sent(), lb::saga_outcome::success)));
    const auto done = w.saga(1);
    CHECK(done.state == "completed");
    CHECK(done.finished);
    CHECK(done.reason.empty());
    CHECK(done.version == 4);
    CHECK(w.sent().empty());
    const auto s = w.orchestrator.stats();
    CHECK(s.started == 1);
    CHECK(s.completed == 1);
    CHECK(s.commands == 3);
    CHECK(s.compensations == 0);
}

TEST_CASE("saga_orchestrator: a failed step compensates the steps that succeeded, in reverse "
          "order, and ends failed",
          "[saga]") {
    world w;
    w.start(2);
    REQUIRE_FALSE(w.apply(w.reply(w.one_sent(), lb::saga_outcome::success)));
    REQUIRE_FALSE(w.apply(w.reply(w.one_sent(), lb::saga_outcome::success)));
    const auto ship = w.one_sent();
    REQUIRE(ship.type == "ship-order");
    REQUIRE_FALSE(w.apply(w.reply(ship, lb::saga_outcome::failure, "no courier")));

    const auto refund = w.one_sent(); // the last step that succeeded is undone first
    CHECK(refund.type == "refund-payment");
    CHECK(header(refund, lb::headers::saga_phase) == "compensate");
    CHECK(header(refund, lb::headers::saga_step) == "charge-payment");
    CHECK(w.saga(2).state == "compensating:charge-payment");
    REQUIRE_FALSE(w.apply(w.reply(refund, lb::saga_outcome::success)));
    const auto release = w.one_sent();
    CHECK(release.type == "release-stock");
    REQUIRE_FALSE(w.apply(w.reply(release, lb::saga_outcome::success)));

    const auto failed = w.saga(2);
    CHECK(failed.state == "failed");
    CHECK(failed.finished);
    CHECK(failed.reason == "step 'ship-order' failed: no courier");
    CHECK(w.sent().empty());
    CHECK(w.orchestrator.stats().failed == 1);
    CHECK(w.orchestrator.stats().compensations == 2);
}

TEST_CASE("saga_orchestrator: a failure of the first step ends failed with nothing to undo",
          "[saga]") {
    world w;
    w.start(3);
    REQUIRE_FALSE(w.apply(w.reply(w.one_sent(), lb::saga_outcome::failure, "out of stock")));
    CHECK(w.sent().empty());
    CHECK(w.saga(3).state == "failed");
    CHECK(w.saga(3).reason == "step 'reserve-stock' failed: out of stock");
}

TEST_CASE("saga_orchestrator: a step's timeout compensates, and its reply after that is stale",
          "[saga]") {
    world w(30s);
    w.start(4);
    REQUIRE_FALSE(w.apply(w.reply(w.one_sent(), lb::saga_outcome::success)));
    const auto charge = w.one_sent();
    w.clock.advance(29s);
    CHECK(w.fire() == 0);
    w.clock.advance(1s); // due at its own instant
    CHECK(w.fire() == 1);
    // The charge may have happened (its reply lost, or its command still queued): it is
    // compensated first, then the reservation.
    const auto refund = w.one_sent();
    CHECK(refund.type == "refund-payment");
    CHECK(w.saga(4).reason == "step 'charge-payment' timed out after 30000 ms");
    CHECK(w.saga(4).state == "compensating:charge-payment");

    // The payment's reply comes late: the saga no longer waits for it.
    REQUIRE_FALSE(w.apply(w.reply(charge, lb::saga_outcome::success)));
    CHECK(w.sent().empty());
    CHECK(w.saga(4).state == "compensating:charge-payment");
    CHECK(w.orchestrator.stats().stale == 1);
    CHECK(w.orchestrator.stats().timeouts_fired == 1);

    REQUIRE_FALSE(w.apply(w.reply(refund, lb::saga_outcome::success)));
    const auto release = w.one_sent();
    CHECK(release.type == "release-stock");
    REQUIRE_FALSE(w.apply(w.reply(release, lb::saga_outcome::success)));
    CHECK(w.saga(4).state == "failed");
}

TEST_CASE("saga_orchestrator: a timeout whose step already ended does nothing", "[saga]") {
    world w(30s);
    w.start(5);
    const auto reserve = w.one_sent();
    w.clock.advance(10s);
    REQUIRE_FALSE(w.apply(w.reply(reserve, lb::saga_outcome::success)));
    (void)w.one_sent();
    w.clock.advance(25s); // reserve-stock's timeout was due 5 s ago; charge-payment's is not
    CHECK(w.fire() == 0);
    CHECK(w.sent().empty());
    CHECK(w.saga(5).state == "charge-payment");
    w.clock.advance(5s);
    CHECK(w.fire() == 1); // charge-payment's own
}

TEST_CASE("saga_orchestrator: async_run_timeouts fires the due timeouts on the clock until "
          "cancelled, and goes on after a failed round",
          "[saga][cancellation]") {
    world w(30s);
    boost::asio::io_context io;
    const auto run_ready = [&io] {
        io.restart(); // the loop is not outstanding work: a poll that ran out of work stops io
        io.poll();
    };
    w.start(20);
    CHECK(w.one_sent().type == "reserve-stock");
    boost::asio::cancellation_signal stop;
    std::optional<boost::system::error_code> ended;
    w.orchestrator.async_run_timeouts(
        io.get_executor(), [] { return lb::in_memory_unit_of_work{}; }, 1s,
        boost::asio::bind_cancellation_slot(
            stop.slot(), [&ended](boost::system::error_code ec) { ended = ec; }));
    run_ready();
    w.clock.advance(29s);
    run_ready();
    CHECK(w.sent().empty());
    w.clock.advance(1s); // the step's timeout is due, and so is the timer's next round
    run_ready();
    CHECK(w.one_sent().type == "release-stock"); // no reply: the step itself is compensated
    CHECK(w.orchestrator.stats().timeouts_fired == 1);
    CHECK_FALSE(ended);

    stop.emit(boost::asio::cancellation_type::terminal);
    run_ready();
    REQUIRE(ended);
    CHECK(*ended == boost::asio::error::operation_aborted);
    w.clock.advance(60s); // the compensation's timeout is due, but nothing fires it now
    run_ready();
    CHECK(w.sent().empty());
    CHECK(w.orchestrator.stats().timeouts_fired == 1);

    // A round that fails (a store error, a unit that cannot begin) is counted; the loop goes
    // on, and the next round fires what is due.
    ended.reset();
    w.sagas.fail_nth(1);
    bool refuse_units = false;
    boost::asio::cancellation_signal stop_again;
    w.orchestrator.async_run_timeouts(
        io.get_executor(),
        [&refuse_units] {
            if (refuse_units)
                throw lb::error(lb::errc::store_busy, "the database is locked");
            return lb::in_memory_unit_of_work{};
        },
        1s,
        boost::asio::bind_cancellation_slot(
            stop_again.slot(), [&ended](boost::system::error_code ec) { ended = ec; }));
    run_ready();
    CHECK(w.orchestrator.stats().timeout_round_errors == 1);
    refuse_units = true;
    w.clock.advance(1s); // the compensation's timeout is due: its unit cannot begin
    run_ready();
    CHECK(w.orchestrator.stats().timeout_round_errors == 2);
    CHECK(w.sent().empty());
    refuse_units = false;
    w.clock.advance(1s); // the compensation's timeout fires: sent again after the policy's delay
    run_ready();
    CHECK(w.sent().empty());
    w.clock.advance(1s);
    run_ready();
    CHECK(w.one_sent().type == "release-stock");
    CHECK_FALSE(ended);
    stop_again.emit(boost::asio::cancellation_type::total);
    run_ready();
    REQUIRE(ended);
    CHECK(*ended == boost::asio::error::operation_aborted);
}

TEST_CASE("saga_orchestrator: an instance whose data cannot be read does not hold back the "
          "other timeouts",
          "[saga]") {
    world w(30s);
    w.start(21);
    w.start(22);
    (void)w.sent();
    {
        // Another version of the saga's data, say: this definition cannot read it.
        std::error_code ec;
        auto broken = w.sagas.find_by_correlation("order-fulfilment", "order-21", ec);
        REQUIRE(broken);
        broken->data = "[1, 2, 3]";
        lb::in_memory_unit_of_work u;
        REQUIRE_FALSE(w.sagas.update(u, *broken));
        REQUIRE_FALSE(u.commit());
    }
    w.clock.advance(30s);
    std::error_code ec;
    CHECK(w.orchestrator.fire_due_timeouts([] { return lb::in_memory_unit_of_work{}; }, ec) == 1);
    CHECK(ec == lb::errc::store_corrupt);
    CHECK(w.saga(22).state == "compensating:reserve-stock");
}

TEST_CASE("saga_orchestrator: a compensation that keeps failing is sent again by the policy, "
          "then parks the saga in compensation_failed",
          "[saga]") {
    world w;
    w.start(6);
    REQUIRE_FALSE(w.apply(w.reply(w.one_sent(), lb::saga_outcome::success)));
    REQUIRE_FALSE(w.apply(w.reply(w.one_sent(), lb::saga_outcome::failure, "card declined")));
    auto release = w.one_sent();
    // 3 attempts in all: sent again after 1 s, then after 2 s.
    for (const auto delay : {1s, 2s}) {
        REQUIRE_FALSE(w.apply(w.reply(release, lb::saga_outcome::failure, "stock service down")));
        CHECK(w.sent().empty());
        w.clock.advance(delay - 1ms);
        CHECK(w.fire() == 0);
        w.clock.advance(1ms);
        CHECK(w.fire() == 1);
        release = w.one_sent();
        CHECK(release.type == "release-stock");
    }
    REQUIRE_FALSE(w.apply(w.reply(release, lb::saga_outcome::failure, "stock service down")));
    const auto parked = w.saga(6);
    CHECK(parked.state == "compensation_failed");
    CHECK_FALSE(parked.finished); // kept, visible, for an operator
    CHECK(parked.reason == "the compensation of step 'reserve-stock' failed 3 times: stock "
                           "service down (after step 'charge-payment' failed: card declined)");
    w.clock.advance(1h);
    CHECK(w.fire() == 0);
    CHECK(w.sent().empty());
    CHECK(w.orchestrator.stats().compensation_failed == 1);
    CHECK(w.orchestrator.stats().compensations == 3);
}

TEST_CASE("saga_orchestrator: replies for no instance or a finished one are ignored and counted, "
          "one without the saga's headers is malformed",
          "[saga]") {
    world w;
    w.start(7);
    const auto reserve = w.one_sent();
    REQUIRE_FALSE(w.apply(w.reply(reserve, lb::saga_outcome::failure, "out of stock")));
    REQUIRE(w.saga(7).finished);
    CHECK_FALSE(w.apply(w.reply(reserve, lb::saga_outcome::success))); // finished
    auto stray = w.reply(reserve, lb::saga_outcome::success);
    stray.headers.set(lb::headers::saga_id, std::string("no-such-saga"));
    CHECK_FALSE(w.apply(stray));
    CHECK(w.orchestrator.stats().for_finished == 1);
    CHECK(w.orchestrator.stats().unknown == 1);

    auto bare = w.reply(reserve, lb::saga_outcome::success);
    bare.headers.erase(lb::headers::saga_step);
    CHECK(w.apply(bare) == lb::errc::payload_malformed);
    auto other = w.reply(reserve, lb::saga_outcome::success);
    other.headers.set(lb::headers::saga_type, std::string("refund"));
    CHECK(w.apply(other) == lb::errc::payload_malformed);
    auto unclear = w.reply(reserve, lb::saga_outcome::success);
    unclear.headers.set(lb::headers::saga_outcome, std::string("maybe"));
    CHECK(w.apply(unclear) == lb::errc::payload_malformed);
    CHECK(w.sent().empty());
}

TEST_CASE("saga_orchestrator: of two replies moving one instance at once, one commits and the "
          "other conflicts, then is stale when retried",
          "[saga]") {
    world w;
    w.start(8);
    const auto reserve = w.one_sent();
    const auto first = w.reply(reserve, lb::saga_outcome::success);
    const auto second = w.reply(reserve, lb::saga_outcome::failure, "a duplicate participant");
    lb::in_memory_unit_of_work u1;
    lb::in_memory_unit_of_work u2;
    REQUIRE_FALSE(w.orchestrator(first, u1));
    REQUIRE_FALSE(w.orchestrator(second, u2));
    REQUIRE_FALSE(u1.commit());
    CHECK(u2.commit() == lb::errc::concurrency_conflict); // nothing of it is applied
    CHECK(w.one_sent().type == "charge-payment");
    REQUIRE_FALSE(w.apply(second)); // retried: the saga has moved on
    CHECK(w.sent().empty());
    CHECK(w.saga(8).state == "charge-payment");
    CHECK(w.orchestrator.stats().stale == 1);
    CHECK(w.orchestrator.stats().commands == 2); // counted once each
}

TEST_CASE("saga_orchestrator: a second start for one correlation is a conflict and sends nothing",
          "[saga]") {
    world w;
    w.start(9);
    (void)w.one_sent();
    lb::in_memory_unit_of_work u;
    CHECK(w.orchestrator.start(u, "order-9", order{9, {}}) == lb::errc::concurrency_conflict);
    REQUIRE_FALSE(u.commit());
    CHECK(w.sent().empty());
    CHECK(w.orchestrator.stats().started == 1);
}

TEST_CASE("saga_orchestrator: a rolled-back start leaves no instance, no command and no count",
          "[saga]") {
    world w;
    {
        lb::in_memory_unit_of_work u;
        REQUIRE_FALSE(w.orchestrator.start(u, "order-10", order{10, {}}));
        REQUIRE_FALSE(u.rollback());
    }
    std::error_code ec;
    CHECK_FALSE(w.orchestrator.find("order-10", ec));
    CHECK(w.sent().empty());
    CHECK(w.orchestrator.stats() == lb::saga_stats{});
}

TEST_CASE("saga_orchestrator: each command is caused by the reply that moved the saga, and a "
          "timeout's by the command that waited",
          "[saga][tracing]") {
    world w(30s);
    lb::message placed;
    placed.id = w.ids();
    placed.type = "order-placed";
    lb::begin_conversation(placed);
    {
        lb::in_memory_unit_of_work u;
        REQUIRE_FALSE(w.orchestrator.start(u, "order-11", order{11, {}}, placed));
        REQUIRE_FALSE(u.commit());
    }
    const auto conversation = lb::to_string(placed.id);
    const auto trace = lb::trace_context_of(placed)->trace_id;
    const auto reserve = w.one_sent();
    const auto reserved = w.reply(reserve, lb::saga_outcome::success);
    REQUIRE_FALSE(w.apply(reserved));
    const auto charge = w.one_sent();
    w.clock.advance(30s);
    REQUIRE(w.fire() == 1); // no reply to the charge: its timeout compensates
    const auto refund = w.one_sent();
    const auto refunded = w.reply(refund, lb::saga_outcome::success);
    REQUIRE_FALSE(w.apply(refunded));
    CHECK(w.one_sent().type == "release-stock"); // then the reservation's compensation

    for (const auto* m : {&reserve, &reserved, &charge, &refund, &refunded}) {
        CHECK(header(*m, lb::headers::conversation_id) == conversation);
        REQUIRE(lb::trace_context_of(*m));
        CHECK(lb::trace_context_of(*m)->trace_id == trace);
    }
    CHECK(header(reserve, lb::headers::causation_id) == lb::to_string(placed.id));
    CHECK(header(reserved, lb::headers::causation_id) == lb::to_string(reserve.id));
    CHECK(header(charge, lb::headers::causation_id) == lb::to_string(reserved.id));
    CHECK(header(refund, lb::headers::causation_id) == lb::to_string(charge.id));
    CHECK(w.saga(11).conversation_id == conversation);
    const std::vector<lb::message> history{placed, reserve, reserved, charge, refund, refunded};
    CHECK(lb::to_text(lb::causal_tree(history, conversation)) ==
          "order-placed\n"
          "  reserve-stock\n"
          "    reserve-stock.reply\n"
          "      charge-payment\n"
          "        refund-payment\n"
          "          refund-payment.reply\n");

    // Without a cause, the first command begins a conversation of its own.
    w.start(12);
    const auto first = w.one_sent();
    CHECK(header(first, lb::headers::conversation_id) == lb::to_string(first.id));
    CHECK_FALSE(first.headers.contains(lb::headers::causation_id));
    CHECK(w.saga(12).conversation_id == lb::to_string(first.id));
}

} // namespace unit_saga_saga_orchestrator
