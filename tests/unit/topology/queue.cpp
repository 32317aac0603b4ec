// SPDX-License-Identifier: BSL-1.0

// queue::check: the declarations RabbitMQ refuses, or accepts and then does not honour, are
// refused before they reach a broker.

#include <letterbox/topology/queue.hpp>

#include <letterbox/error.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <system_error>
#include <vector>

namespace unit_topology_queue {

namespace {

using namespace letterbox;
using namespace letterbox::topology;

queue_arguments quorum_arguments() {
    queue_arguments a;
    a.type = queue_type::quorum;
    return a;
}

// The reason `q.check()` gives (its `what()` without the error code's text), or "" when it
// throws nothing.
std::string refusal(const queue& q) {
    try {
        q.check();
    } catch (const letterbox::error& e) {
        CHECK(e.code() == errc::invalid_argument);
        std::string what = e.what();
        const std::string code = ": " + e.code().message();
        if (what.ends_with(code))
            what.resize(what.size() - code.size());
        return what;
    }
    return {};
}

} // namespace

TEST_CASE("a durable quorum queue with a delivery limit and at-least-once dead-lettering passes",
          "[topology][queue]") {
    auto a = quorum_arguments();
    a.dead_letter_exchange = "";
    a.dead_letter_routing_key = "orders.dlq";
    a.delivery_limit = 5;
    a.dead_letter_strategy = dead_lettering::at_least_once;
    a.overflow = overflow_behaviour::reject_publish;
    CHECK(refusal({.name = "orders", .arguments = a.to_table()}).empty());
    CHECK(refusal({.name = "plain"}).empty());
    CHECK(refusal({.name = "temp", .durable = false, .exclusive = true, .auto_delete = true})
              .empty()); // a classic queue may be all three
}

TEST_CASE("quorum queue properties RabbitMQ refuses are refused with the queue's name",
          "[topology][queue]") {
    const auto args = quorum_arguments().to_table();
    CHECK(refusal({.name = "q", .durable = false, .arguments = args}) ==
          "queue 'q': a quorum queue must be durable");
    CHECK(refusal({.name = "q", .exclusive = true, .arguments = args}) ==
          "queue 'q': a quorum queue cannot be exclusive");
    CHECK(refusal({.name = "q", .auto_delete = true, .arguments = args}) ==
          "queue 'q': a quorum queue cannot be auto-delete");
    auto prio = quorum_arguments();
    prio.max_priority = 5;
    CHECK(refusal({.name = "q", .arguments = prio.to_table()}) ==
          "queue 'q': a quorum queue takes no x-max-priority");
    auto dlx_overflow = quorum_arguments();
    dlx_overflow.overflow = overflow_behaviour::reject_publish_dlx;
    CHECK_FALSE(refusal({.name = "q", .arguments = dlx_overflow.to_table()}).empty());
}

TEST_CASE("quorum-only arguments on a classic queue are refused", "[topology][queue]") {
    queue_arguments limit;
    limit.delivery_limit = 3;
    CHECK(refusal({.name = "q", .arguments = limit.to_table()}) ==
          "queue 'q': x-delivery-limit is for quorum queues only");
    queue_arguments strategy;
    strategy.dead_letter_exchange = "";
    strategy.dead_letter_strategy = dead_lettering::at_most_once;
    CHECK(refusal({.name = "q", .arguments = strategy.to_table()}) ==
          "queue 'q': x-dead-letter-strategy is for quorum queues only");
}

TEST_CASE("at-least-once dead-lettering that RabbitMQ would quietly downgrade is refused",
          "[topology][queue]") {
    // 3.10.8 accepts both declarations and logs "Falling back to dead-letter-strategy
    // at-most-once" or "Disabling dead-lettering": the guarantee asked for is not given.
    auto without_overflow = quorum_arguments();
    without_overflow.dead_letter_exchange = "";
    without_overflow.dead_letter_strategy = dead_lettering::at_least_once;
    CHECK(refusal({.name = "q", .arguments = without_overflow.to_table()})
              .find("needs x-overflow reject-publish") != std::string::npos);
    without_overflow.overflow = overflow_behaviour::drop_head;
    CHECK(refusal({.name = "q", .arguments = without_overflow.to_table()})
              .find("needs x-overflow reject-publish") != std::string::npos);
    auto without_exchange = quorum_arguments();
    without_exchange.overflow = overflow_behaviour::reject_publish;
    without_exchange.dead_letter_strategy = dead_lettering::at_least_once;
    CHECK(refusal({.name = "q", .arguments = without_exchange.to_table()})
              .find("needs a dead-letter exchange") != std::string::npos);
}

TEST_CASE("arguments parse refuses are refused too", "[topology][queue]") {
    CHECK(refusal({.name = "q",
                   .arguments = field_table{{std::string(args::dead_letter_strategy),
                                             std::string("exactly-once")}}}) ==
          "queue 'q': invalid arg 'x-dead-letter-strategy': invalid_dlx_strategy");
    CHECK(refusal({.name = "q",
                   .arguments = field_table{{std::string(args::max_length), std::int64_t{-1}}}})
              .find("value_negative") != std::string::npos);
}

} // namespace unit_topology_queue
