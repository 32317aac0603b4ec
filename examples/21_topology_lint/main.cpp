// SPDX-License-Identifier: BSL-1.0
//
// Example 21: the topology lint (docs/topology-lint.md) catches the traps before traffic flows.
//
// 1. Three topologies, each checked for RabbitMQ 3.10 (Debian 12's broker) and 4.0:
//    - "orders": a work queue with letterbox's retry topology (two retry queues that dead-letter
//      back to it, and a dead-letter queue), an inbox that remembers ids for 7 days. Nothing to
//      report.
//    - "ring": q1 rejects onto q2, whose TTL dead-letters to q3, whose TTL dead-letters back
//      to q1 (reject -> expire -> expire). On 3.10 the second lap is dropped as a false cycle:
//      LB-DLX-RING, an error for 3.10 and nothing for 4.0.
//    - "billing": the work queue names a dead-letter exchange nobody declared
//      (LB-DLX-MISSING), and its inbox forgets ids after 1 minute while a message can come
//      back 10 minutes later (LB-INBOX-RETENTION).
// 2. The ring runs on the in-memory RabbitMQ model, once per profile: a message is rejected in
//    q1 on each lap and expires through q2 and q3. On the 3.10 profile it comes back once and
//    then vanishes, as the lint predicted; on 4.0 it comes back on every lap.
// 3. The same check when a pipeline is built: a receive endpoint on quorum queues, with
//    `topology_check` on, on a broker of each version. On 4.0 it is refused (its dead-letter
//    queue would drop what it holds after 20 returns, LB-QQ-DELIVERY-LIMIT-DEFAULT); given the
//    broker's `delivery-limit: -1` policy on the dead-letter queues, it starts.
//
// The program checks its own outcome and exits non-zero, with `MISMATCH: ...` on stderr, when
// it is wrong.
//
// Run: build/release/examples/example_21_topology_lint
#include <letterbox/letterbox.hpp>
#include <letterbox/lint.hpp>
#include <letterbox/receive_endpoint.hpp>
#include <letterbox/transport/in_memory.hpp>
#include <letterbox/virtual_clock.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
namespace lint = letterbox::lint;
namespace topology = letterbox::topology;
namespace in_memory = letterbox::in_memory;

int failures = 0;

void expect(bool ok, const std::string& what) {
    if (!ok) {
        std::fprintf(stderr, "MISMATCH: %s\n", what.c_str());
        ++failures;
    }
}

topology::queue queue_of(const std::string& name, const topology::queue_arguments& args) {
    topology::queue q;
    q.name = name;
    q.arguments = args.to_table();
    return q;
}

topology::queue_arguments dead_letter_to(const std::string& exchange, const std::string& key) {
    topology::queue_arguments a;
    a.dead_letter_exchange = exchange;
    a.dead_letter_routing_key = key;
    return a;
}

// [orders] letterbox's retry topology around the work queue, as a consumer declares it.
struct checked {
    lint::broker_topology topology;
    std::vector<lint::consumer_settings> consumers;
};

checked orders() {
    //[lint_orders
    topology::retry_topology retry{.queue = "orders",
                                   .delays = {5s, 1min},
                                   .rejects = topology::rejects_go_to::dead_letter_queue};
    lint::broker_topology t;
    t.queues = retry.queues();

    lint::consumer_settings c;
    c.queue = "orders";
    c.failures = lint::failure_handling::reject;
    for (const auto d : retry.delays)
        c.retry_queues.push_back(retry.retry_queue_name(d));
    c.inbox_retention = std::chrono::hours{24 * 7};
    c.redelivery_horizon = 1min + 5s;
    //]
    return {std::move(t), {std::move(c)}};
}

checked ring() {
    lint::broker_topology t;
    t.queues.push_back(queue_of("q1", dead_letter_to("", "q2")));
    auto q2 = dead_letter_to("", "q3");
    q2.message_ttl = 5ms;
    t.queues.push_back(queue_of("q2", q2));
    auto q3 = dead_letter_to("", "q1");
    q3.message_ttl = 5ms;
    t.queues.push_back(queue_of("q3", q3));
    lint::consumer_settings c;
    c.queue = "q1";
    c.failures = lint::failure_handling::reject;
    return {std::move(t), {std::move(c)}};
}

checked billing() {
    lint::broker_topology t;
    t.queues.push_back(queue_of("billing", dead_letter_to("billing.dlx", "billing.dlq")));
    t.queues.push_back(queue_of("billing.dlq", {}));
    lint::consumer_settings c;
    c.queue = "billing";
    c.failures = lint::failure_handling::reject;
    c.inbox_retention = 1min;
    c.redelivery_horizon = 10min;
    return {std::move(t), {std::move(c)}};
}

std::vector<std::string> codes(const std::vector<lint::finding>& findings) {
    std::vector<std::string> out;
    for (const auto& f : findings)
        out.push_back(f.code);
    return out;
}

// Lints `c` for one profile and prints the findings.
std::vector<std::string> lint_and_print(const std::string& name, const checked& c,
                                        const in_memory::broker_profile& profile) {
    const auto findings = lint::check_topology(c.topology, profile, c.consumers);
    std::cout << "== " << name << " on RabbitMQ " << profile.name << ": " << findings.size()
              << " finding(s)\n"
              << lint::text_report(findings);
    return codes(findings);
}

// Part 2: the ring on the in-memory model; returns how many laps brought the message back to
// q1 (at most `laps`).
int laps_survived(const in_memory::broker_profile& profile, int laps) {
    boost::asio::io_context io;
    letterbox::virtual_clock clock;
    in_memory::broker broker(io.get_executor(), clock, in_memory::broker_options{profile, {}});
    auto conn = broker.connect("example");
    auto ch = conn.open_channel();
    for (const auto& q : ring().topology.queues)
        if (ch.queue_declare(q))
            return -1;
    letterbox::message m;
    m.routing_key = "q1";
    m.body = "order 42";
    if (ch.basic_publish(m))
        return -1;
    int back = 0;
    for (int lap = 1; lap <= laps; ++lap) {
        std::error_code ec;
        auto d = ch.basic_get("q1", ec);
        if (!d)
            break;
        if (lap > 1)
            ++back;
        (void)ch.basic_reject(d->delivery_tag, false); // q1 -> q2
        for (int hop = 0; hop < 2; ++hop) {            // q2 -> q3 -> q1, each after its TTL
            clock.advance(5ms);
            io.restart();
            io.poll();
        }
    }
    return back;
}

// Part 3: builds a quorum receive endpoint's consumer with the topology check on, on a broker
// of `profile`; returns what happened.
std::string build_endpoint(const in_memory::broker_profile& profile,
                           const std::vector<lint::policy>& policies) {
    boost::asio::io_context io;
    letterbox::virtual_clock clock;
    in_memory::broker broker(io.get_executor(), clock, in_memory::broker_options{profile, {}});
    in_memory::transport transport(broker);
    //[endpoint_check
    auto orders = letterbox::receive_endpoint(
        transport, clock,
        {.queue = "orders",
         .quorum = topology::quorum_options{},
         .topology_check = {.check = lint::check_topology, .policies = policies}});
    try {
        auto worker = orders.consume([](const letterbox::message&) {});
        return "consumer built";
    } catch (const letterbox::error& e) {
        return std::string("refused: ") + e.what();
    }
    //]
}

} // namespace

int main() {
    const auto v310 = in_memory::broker_profile::rabbitmq_3_10();
    const auto v40 = in_memory::broker_profile::rabbitmq_4_0();

    std::cout << "1. Lint three topologies\n";
    for (const auto* p : {&v310, &v40})
        expect(lint_and_print("orders", orders(), *p).empty(), "orders has findings");
    const auto ring310 = lint_and_print("ring", ring(), v310);
    const auto ring40 = lint_and_print("ring", ring(), v40);
    expect(ring310 == std::vector<std::string>{"LB-DLX-RING"}, "ring on 3.10 is not LB-DLX-RING");
    expect(ring40.empty(), "ring on 4.0 has findings");
    for (const auto* p : {&v310, &v40}) {
        const auto b = lint_and_print("billing", billing(), *p);
        expect(b == std::vector<std::string>{"LB-DLX-MISSING", "LB-INBOX-RETENTION"},
               "billing findings differ");
    }

    std::cout << "2. Run the ring on the in-memory model, 5 laps\n";
    const int back310 = laps_survived(v310, 5);
    const int back40 = laps_survived(v40, 5);
    std::cout << "RabbitMQ 3.10: the message came back " << back310
              << " time(s), then vanished (dropped as a false cycle)\n";
    std::cout << "RabbitMQ 4.0: the message came back " << back40 << " time(s) in 5 laps\n";
    expect(back310 == 1, "on 3.10 the message did not vanish on the second lap");
    expect(back40 == 4, "on 4.0 the message did not come back on every lap");

    std::cout << "3. Build a quorum receive endpoint with the topology check\n";
    const auto on310 = build_endpoint(v310, {});
    const auto on40 = build_endpoint(v40, {});
    lint::policy unlimited;
    unlimited.name = "dead-letter-queues";
    unlimited.pattern = "\\.dlq$";
    unlimited.apply_to = "quorum_queues";
    unlimited.definition.set("delivery-limit", std::int64_t{-1});
    const auto on40_with_policy = build_endpoint(v40, {unlimited});
    std::cout << "RabbitMQ 3.10: " << on310 << "\n"
              << "RabbitMQ 4.0: " << on40.substr(0, on40.find(':', 40)) << "\n"
              << "RabbitMQ 4.0 with a delivery-limit -1 policy on *.dlq: " << on40_with_policy
              << "\n";
    expect(on310 == "consumer built", "the endpoint was refused on 3.10");
    expect(on40.find("LB-QQ-DELIVERY-LIMIT-DEFAULT") != std::string::npos,
           "the endpoint was not refused on 4.0");
    expect(on40_with_policy == "consumer built", "the endpoint was refused despite the policy");
    return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

// Expected output (regex lines):
//   1\. Lint three topologies
//   == orders on RabbitMQ 3\.10: 0 finding\(s\)
//   == orders on RabbitMQ 4\.0: 0 finding\(s\)
//   == ring on RabbitMQ 3\.10: 1 finding\(s\)
//   error LB-DLX-RING
//   == ring on RabbitMQ 4\.0: 0 finding\(s\)
//   == billing on RabbitMQ 3\.10: 2 finding\(s\)
//   error LB-DLX-MISSING
//   error LB-INBOX-RETENTION
//   == billing on RabbitMQ 4\.0: 2 finding\(s\)
//   2\. Run the ring on the in-memory model, 5 laps
//   RabbitMQ 3\.10: the message came back 1 time\(s\), then vanished
//   RabbitMQ 4\.0: the message came back 4 time\(s\) in 5 laps
//   3\. Build a quorum receive endpoint with the topology check
//   RabbitMQ 3\.10: consumer built
//   RabbitMQ 4\.0: refused: receive_endpoint 'orders': the topology check refuses it
//   RabbitMQ 4\.0 with a delivery-limit -1 policy on \*\.dlq: consumer built
