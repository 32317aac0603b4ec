// SPDX-License-Identifier: BSL-1.0
//
// Example: a message that fails three times, its history in the dead-letter queue, and the
// replay that brings it back.
//
// An inventory worker reserves stock for each order. The stock service is down, so the first
// three attempts at order 1 fail:
//
//   1. The worker's pipeline retries through the broker: each failure is a `basic.reject`
//      onto a 5-second retry queue, whose TTL sends the message back. The broker writes what
//      happened in the message's `x-death` header. After the third failure (max attempts 3,
//      the seed's maxReceiveCount) the message goes to `inventory.dlq` with its reason.
//   2. The example prints the history the dead letter carries: each `x-death` entry (queue,
//      reason, count) and letterbox's own headers (attempts, reason, exception).
//   3. A replay script (what `letterbox dlq replay inventory.dlq --reason retries-exhausted`
//      does against RabbitMQ) lists the dead letters and republishes them to where they were
//      consumed. The fourth attempt succeeds, and the DLQ is empty.
//
// Everything runs on one thread with a virtual clock, so the output is always the same.
// Needs: the core only.
#include <letterbox/dlq/dead_letter_queue.hpp>
#include <letterbox/letterbox.hpp>
#include <letterbox/virtual_clock.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

using namespace letterbox;
using namespace std::chrono_literals;

namespace {

struct world {
    boost::asio::io_context io;
    virtual_clock clock;
    in_memory::broker broker{io.get_executor(), clock};
    in_memory::transport transport{broker, "inventory-worker"};
    message_id_generator ids{8};

    // Runs ready handlers; when none is ready, jumps virtual time to the next timer. Bounded.
    bool drive_until(const std::function<bool()>& done, std::size_t max_steps = 100'000) {
        for (std::size_t step = 0; step < max_steps && !done(); ++step) {
            io.restart();
            if (io.poll_one() == 0 && !clock.advance_to_next())
                break;
        }
        return done();
    }

    template <class Op>
    std::error_code await(Op op) {
        std::optional<std::error_code> result;
        op([&result](std::error_code ec) { result = ec; });
        drive_until([&] { return result.has_value(); });
        return result.value_or(make_error_code(errc::timed_out));
    }

    std::size_t ready(const std::string& queue) const {
        auto q = broker.queue(queue);
        return q ? q->ready : 0;
    }

    // Seconds of virtual time since the start.
    long long seconds() const {
        return std::chrono::duration_cast<std::chrono::seconds>(clock.now().time_since_epoch())
            .count();
    }
};

int fail(const char* what) {
    std::fprintf(stderr, "MISMATCH: %s\n", what);
    return 1;
}

std::string text(const field_value* v) {
    if (v == nullptr)
        return "(none)";
    if (const auto* s = v->get_if<std::string>())
        return *s;
    if (const auto n = v->as_integer())
        return std::to_string(*n);
    return "(other)";
}

// Prints the entries of an x-death-shaped array (the broker's `x-death`, or letterbox's
// `x-letterbox-death-history` after a replay) and returns how many there are.
std::size_t print_deaths(const char* indent, const field_value* deaths) {
    const auto* entries = deaths ? deaths->get_if<field_array>() : nullptr;
    if (entries == nullptr) {
        std::printf("%s(none)\n", indent);
        return 0;
    }
    for (std::size_t i = 0; i < entries->size(); ++i) {
        const auto* t = (*entries)[i].get_if<field_table>();
        if (t == nullptr)
            continue;
        std::printf("%s[%zu] queue=%-24s reason=%-8s count=%s\n", indent, i,
                    text(t->find(headers::x_death_field::queue)).c_str(),
                    text(t->find(headers::x_death_field::reason)).c_str(),
                    text(t->find(headers::x_death_field::count)).c_str());
    }
    return entries->size();
}

// The count of the x-death entry for (queue, reason), 0 if there is none.
std::int64_t death_count(const message& m, const std::string& queue, const std::string& reason) {
    const auto* v = m.headers.find(headers::x_death);
    const auto* entries = v ? v->get_if<field_array>() : nullptr;
    if (entries == nullptr)
        return 0;
    for (const auto& e : *entries) {
        const auto* t = e.get_if<field_table>();
        if (t && t->get<std::string>(headers::x_death_field::queue) == queue &&
            t->get<std::string>(headers::x_death_field::reason) == reason)
            return t->find(headers::x_death_field::count)->as_integer().value_or(0);
    }
    return 0;
}

//[dlq_replay_script
// The replay script: list what matches, then replay it. Over RabbitMQ the same two steps are
// `letterbox dlq list inventory.dlq --reason retries-exhausted` and `letterbox dlq replay ...`.
template <class Transport>
void replay_script(world& w, dlq::dead_letter_queue<Transport>& dead,
                   const dlq::dead_letter_filter& filter, std::optional<dlq::replay_result>& out) {
    std::optional<std::vector<dlq::dead_letter_entry>> listed;
    dead.async_browse(filter, {}, [&](std::error_code ec, std::vector<dlq::dead_letter_entry> e) {
        if (!ec)
            listed = std::move(e);
    });
    if (!w.drive_until([&] { return listed.has_value(); }))
        return;
    for (const auto& e : *listed)
        std::printf("   replay-script: will replay %s (%s, %u attempts) to queue %s "
                    "(exchange '%s', key '%s')\n",
                    e.type.c_str(), e.reason.c_str(), e.attempts, e.original_queue.c_str(),
                    e.original_exchange.c_str(), e.original_routing_key.c_str());
    dead.async_replay(filter, [&](std::error_code ec, dlq::replay_result r) {
        if (ec)
            std::printf("   replay-script: stopped early: %s\n", ec.message().c_str());
        out = std::move(r);
    });
}
//]

} // namespace

int main() {
    world w;

    // The topology: exchange `shop` routes order.placed to `inventory`, whose rejects go to a
    // 5 s retry queue that dead-letters back to `inventory`; dead letters go to inventory.dlq.
    //[dlq_history_topology
    const topology::retry_topology topo{
        .queue = "inventory", .delays = {5s}, .rejects = topology::rejects_go_to::retry_queue};
    //]
    const topology::exchange shop{.name = "shop", .type = topology::exchange_type::direct};
    if (w.await([&](auto h) { w.transport.async_declare(shop, h); }) ||
        w.await([&](auto h) { topology::async_declare_all(w.transport, topo.queues(), h); }) ||
        w.await([&](auto h) {
            w.transport.async_bind({"shop", "inventory", "order.placed"}, h);
        }))
        return fail("declare the topology");

    // --- 1. Three failed attempts ---------------------------------------------------------------
    std::printf("1. the stock service is down: the first three attempts fail\n");
    int attempts = 0;
    bool succeeded = false;
    std::optional<message> replayed_copy;
    auto reserve_stock = [&](const message& m) {
        ++attempts;
        if (attempts <= 3) {
            std::printf("   t=%llds attempt %d: x-death says rejected %lld time(s) before; "
                        "fails\n",
                        w.seconds(), attempts,
                        static_cast<long long>(death_count(m, "inventory", "rejected")));
            throw std::runtime_error("stock service unavailable");
        }
        std::printf("   t=%llds attempt %d: succeeds\n", w.seconds(), attempts);
        replayed_copy = m;
        succeeded = true;
    };
    //[dlq_history_pipeline
    auto pipeline = middleware::compose(
        reserve_stock, middleware::dead_letter({.consumer_id = "inventory-worker"}, w.clock),
        middleware::redelivery(backoff::fixed(5s, 3), topo, w.clock,
                               middleware::redelivery_via::reject));
    //]
    consumer worker(w.transport, pipeline, w.clock, {.consume = {.queue = "inventory"}});
    bool started = false;
    worker.async_start([&](std::error_code ec, std::string) { started = !ec; });
    if (!w.drive_until([&] { return started; }))
        return fail("start the worker");

    message order;
    order.id = w.ids();
    order.type = "order.placed";
    order.exchange = "shop";
    order.routing_key = "order.placed";
    order.body = R"({"order": 1, "sku": "BOOK-42", "quantity": 2})";
    order.properties.content_type = "application/json";
    if (w.await([&](auto h) { w.transport.async_publish(order, h); }))
        return fail("publish");
    if (!w.drive_until(
            [&] { return w.ready("inventory.dlq") == 1 && w.broker.total_unacked() == 0; }))
        return fail("the message never reached the DLQ");
    std::printf("   after attempt %d: inventory=%zu, retry queue=%zu, inventory.dlq=%zu\n",
                attempts, w.ready("inventory"), w.ready("inventory.retry.5000ms"),
                w.ready("inventory.dlq"));
    if (attempts != 3 || w.ready("inventory") != 0 || worker.stats().redelivered != 2 ||
        worker.stats().dead_lettered != 1)
        return fail("three attempts, two redeliveries, one dead letter");

    // --- 2. The history the dead letter carries ------------------------------------------------
    std::printf("2. the dead letter and its history\n");
    dlq::dead_letter_queue dead(w.transport, topo.dead_letter_queue_name(), {.wall_clock = [&] {
                                    return w.clock.wall_now();
                                }});
    std::optional<std::vector<dlq::dead_letter_entry>> entries;
    dead.async_browse({}, {}, [&](std::error_code ec, std::vector<dlq::dead_letter_entry> e) {
        if (!ec)
            entries = std::move(e);
    });
    if (!w.drive_until([&] { return entries.has_value(); }) || entries->size() != 1)
        return fail("browse the DLQ");
    const auto& entry = entries->front();
    const message& dl = entry.msg;
    std::printf("   same message id: %s\n", dl.id == order.id ? "yes" : "no");
    std::printf("   x-death (the broker's record, newest first):\n");
    const auto deaths = print_deaths("     ", dl.headers.find(headers::x_death));
    std::printf("   x-first-death-queue=%s x-first-death-reason=%s\n",
                text(dl.headers.find(headers::x_first_death_queue)).c_str(),
                text(dl.headers.find(headers::x_first_death_reason)).c_str());
    std::printf("   letterbox headers:\n");
    std::printf("     x-letterbox-attempts=%s\n", text(dl.headers.find(headers::attempts)).c_str());
    std::printf("     x-letterbox-death-reason=%s\n",
                text(dl.headers.find(headers::death_reason)).c_str());
    std::printf("     x-letterbox-exception=%s: %s\n",
                text(dl.headers.find(headers::exception_type)).c_str(),
                text(dl.headers.find(headers::exception_message)).c_str());
    std::printf("     x-letterbox-dead-lettered-time=%s\n",
                text(dl.headers.find(headers::dead_lettered_time)).c_str());
    std::printf("     x-letterbox-original-queue=%s\n",
                text(dl.headers.find(headers::original_queue)).c_str());
    if (dl.id != order.id || deaths != 2 || death_count(dl, "inventory", "rejected") != 2 ||
        death_count(dl, "inventory.retry.5000ms", "expired") != 2 || entry.attempts != 3 ||
        entry.reason != "retries-exhausted")
        return fail("the dead letter's history");

    // --- 3. The replay ---------------------------------------------------------------------------
    std::printf("3. the stock service is back: replay the DLQ\n");
    dlq::dead_letter_filter exhausted;
    exhausted.reason = "retries-exhausted";
    std::optional<dlq::replay_result> result;
    replay_script(w, dead, exhausted, result);
    if (!w.drive_until([&] { return result.has_value() && succeeded; }))
        return fail("the replay did not complete");
    std::printf("   replayed=%zu failed=%zu skipped=%zu\n", result->replayed, result->failed,
                result->skipped);
    std::printf("   the replayed copy: same id: %s, x-death: %s, x-letterbox-attempts: %s, "
                "x-letterbox-replay-count: %s\n",
                replayed_copy->id == order.id ? "yes" : "no",
                replayed_copy->headers.find(headers::x_death) ? "present" : "removed",
                replayed_copy->headers.find(headers::attempts) ? "present" : "removed",
                text(replayed_copy->headers.find(headers::replay_count)).c_str());
    std::printf("   x-letterbox-death-history (the old x-death, kept for the record):\n");
    const auto history = print_deaths("     ", replayed_copy->headers.find(headers::death_history));
    std::printf("   inventory=%zu, inventory.dlq=%zu, unacked=%zu, worker acked=%llu\n",
                w.ready("inventory"), w.ready("inventory.dlq"), w.broker.total_unacked(),
                static_cast<unsigned long long>(worker.stats().acked));
    if (result->replayed != 1 || attempts != 4 || w.ready("inventory.dlq") != 0 ||
        w.broker.total_unacked() != 0 || worker.stats().acked != 1 || history != 2 ||
        replayed_copy->headers.find(headers::x_death) != nullptr)
        return fail("the replay");
    std::printf("   the message left the DLQ and was processed on its second pass\n");
    return 0;
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   1\. the stock service is down: the first three attempts fail
//   t=0s attempt 1: x-death says rejected 0 time\(s\) before; fails
//   t=5s attempt 2: x-death says rejected 1 time\(s\) before; fails
//   t=10s attempt 3: x-death says rejected 2 time\(s\) before; fails
//   after attempt 3: inventory=0, retry queue=0, inventory\.dlq=1
//   2\. the dead letter and its history
//   same message id: yes
//   queue=inventory\.retry\.5000ms +reason=expired  count=2
//   queue=inventory +reason=rejected count=2
//   x-first-death-queue=inventory x-first-death-reason=rejected
//   x-letterbox-attempts=3
//   x-letterbox-death-reason=retries-exhausted
//   x-letterbox-exception=std::runtime_error: stock service unavailable
//   x-letterbox-original-queue=inventory
//   3\. the stock service is back: replay the DLQ
//   replay-script: will replay order\.placed \(retries-exhausted, 3 attempts\) to queue inventory
//   attempt 4: succeeds
//   replayed=1 failed=0 skipped=0
//   same id: yes, x-death: removed, x-letterbox-attempts: removed, x-letterbox-replay-count: 1
//   x-letterbox-death-history
//   queue=inventory\.retry\.5000ms +reason=expired  count=2
//   queue=inventory +reason=rejected count=2
//   inventory=0, inventory\.dlq=0, unacked=0, worker acked=1
//   the message left the DLQ and was processed on its second pass
