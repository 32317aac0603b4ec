// SPDX-License-Identifier: BSL-1.0
#include <letterbox/testing/history.hpp>

#include <letterbox/testing/history_event.hpp>
#include <letterbox/testing/invariant.hpp>
#include <letterbox/testing/invariant_violation.hpp>

#include "history_script.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

namespace unit_testing_history {

using namespace history_test;
using namespace std::chrono_literals;

TEST_CASE("a history keeps its events in the order they were recorded", "[testing][history]") {
    history h;
    CHECK(h.empty());
    h.record(5ns, relay_published{.id = id(1), .attempt = 2});
    h.record(5ns, relay_confirmed{.id = id(1)});
    h.record(9ns, fault_injected{.kind = fault_kind::lost_confirm, .id = {}, .detail = "x"});
    REQUIRE(h.size() == 3);
    CHECK(h[0] == history_event{5ns, relay_published{.id = id(1), .attempt = 2}});
    CHECK(h[1].at == 5ns);
    CHECK(std::holds_alternative<relay_confirmed>(h[1].what));
    CHECK(h[2].at == 9ns);
    CHECK(event_message_id(h[0].what) == id(1));
    CHECK_FALSE(event_message_id(h[2].what).has_value());
}

TEST_CASE("a history refuses an event earlier than the previous one", "[testing][history]") {
    history h;
    h.record(10ns, relay_marked{.id = id(1)});
    CHECK_THROWS_AS(h.record(9ns, relay_marked{.id = id(2)}), std::invalid_argument);
    CHECK(h.size() == 1);
}

TEST_CASE("the text form is one line per event, with every field", "[testing][history]") {
    script s;
    s.commit(1, "order/1", 7);
    s.record(transaction_rolled_back{{outbox_row{id(2), "order/\"2\"", 8}}});
    s.record(relay_published{.id = id(1), .attempt = 3});
    s.record(relay_outcome_unknown{.id = id(1)});
    s.deliver("billing", 1, 2);
    s.effect("billing", 1, "order/1", 7);
    s.record(inbox_committed{.consumer = "billing", .id = id(1)});
    s.record(delivery_acked{.consumer = "billing", .id = id(1)});
    s.record(delivery_nacked{.consumer = "billing", .id = id(1), .requeue = false});
    s.dead_letter("", 1, "line one\nline two\t\x01");
    s.fault(fault_kind::poison_message, 1, "always throws");
    s.fault(fault_kind::connection_drop);
    s.defer("billing", 1, "retried");
    s.fault(fault_kind::binding_removed, std::nullopt, "restored");
    s.fault(fault_kind::queue_deleted);

    const std::string one = "00000000-0000-0000-0000-000000000001";
    const std::string two = "00000000-0000-0000-0000-000000000002";
    CHECK(s.h.text() ==
          "@0 transaction_committed row(id=" + one + ", aggregate=\"order/1\", sequence=7)\n" +
              "@1000 transaction_rolled_back row(id=" + two +
              ", aggregate=\"order/\\\"2\\\"\", sequence=8)\n" + "@2000 relay_published id=" + one +
              " attempt=3\n" + "@3000 relay_outcome_unknown id=" + one + "\n" +
              "@4000 broker_delivered consumer=\"billing\" id=" + one +
              " redelivered=true attempt=2\n" + "@5000 effect_applied consumer=\"billing\" id=" +
              one + " aggregate=\"order/1\" sequence=7\n" +
              "@6000 inbox_committed consumer=\"billing\" id=" + one + "\n" +
              "@7000 delivery_acked consumer=\"billing\" id=" + one + "\n" +
              "@8000 delivery_nacked consumer=\"billing\" id=" + one + " requeue=false\n" +
              "@9000 dead_lettered consumer=\"\" id=" + one +
              " reason=\"line one\\nline two\\t\\x01\"\n" +
              "@10000 fault_injected kind=poison_message id=" + one +
              " detail=\"always throws\"\n" +
              "@11000 fault_injected kind=connection_drop detail=\"\"\n" +
              "@12000 delivery_deferred consumer=\"billing\" id=" + one + " why=\"retried\"\n" +
              "@13000 fault_injected kind=binding_removed detail=\"restored\"\n" +
              "@14000 fault_injected kind=queue_deleted detail=\"\"\n");
    std::ostringstream os;
    os << s.h[3];
    CHECK(os.str() == "@3000 relay_outcome_unknown id=" + one);
}

TEST_CASE("the trace hash is FNV-1a over the text form, and sees every field",
          "[testing][history]") {
    history empty;
    CHECK(empty.trace_hash() == 0xcbf29ce484222325U); // FNV-1a of nothing: the offset basis

    script a;
    a.happy("billing", 1);
    script b;
    b.happy("billing", 1);
    CHECK(a.h == b.h);
    CHECK(a.h.trace_hash() == b.h.trace_hash());
    CHECK(a.h.trace_hash() == letterbox::testing::detail::fnv1a(
                                  letterbox::testing::detail::fnv1a_offset_basis, a.h.text()));

    script later; // the same events, one nanosecond later at the end
    later.happy("billing", 1);
    history shifted;
    for (const auto& e : later.h) {
        shifted.record(&e == &later.h.events().back() ? e.at + 1ns : e.at, e.what);
    }
    CHECK(shifted.trace_hash() != a.h.trace_hash());

    script other_consumer;
    other_consumer.happy("shipping", 1);
    CHECK(other_consumer.h.trace_hash() != a.h.trace_hash());
}

TEST_CASE("an invariant has a name and a catalogue id", "[testing][history]") {
    CHECK(to_string(invariant::no_loss) == "no-loss");
    CHECK(catalogue_id(invariant::no_loss) == "I-01");
    CHECK(to_string(invariant::aggregate_order) == "aggregate-order");
    CHECK(catalogue_id(invariant::aggregate_order) == "I-06");
    CHECK(catalogue_id(invariant::determinism) == "I-21");
    const invariant_violation v{invariant::convergence, id(3), "billing", "order/1", "late", {4}};
    CHECK(to_string(v) == "I-18 convergence: late");
    std::ostringstream os;
    os << v;
    CHECK(os.str() == "I-18 convergence: late");
}

} // namespace unit_testing_history
