// SPDX-License-Identifier: BSL-1.0
//
// Example 05: a poison message, the loop it causes without dead-lettering, and how
// dead-lettering and a filtered replay fix it.
//
// A payments worker decodes `{"order": ..., "amount": ...}`. An upstream release renamed
// `amount` to `total`, so one message can never be decoded: a permanent failure.
//
//   1. Without dead-lettering (nack with requeue, the "retry forever" reflex), the poison
//      message comes back at once, forever, and the orders queued behind it never run.
//   2. With the letterbox pipeline (dead_letter > redelivery > retry), the undecodable
//      message is classified permanent and lands in the dead-letter queue on its first
//      delivery, with its reason, while the other orders flow on.
//   3. After "fixing the bug" (the decoder accepts the old name), a replay filtered by reason
//      puts it back on its original queue, where it is processed, and the DLQ is empty.
//
// Everything runs on one thread with a virtual clock, so the output is always the same.
// Needs: the core only. Run: build/release/examples/example_05_poison_message.
#include <letterbox/dlq/dead_letter_queue.hpp>
#include <letterbox/letterbox.hpp>
#include <letterbox/virtual_clock.hpp>

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <cstdio>
#include <functional>
#include <optional>
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
    in_memory::transport transport{broker, "payments-worker"};
    message_id_generator ids{2026};

    // Runs handlers; when none is ready, jumps virtual time to the next timer. Bounded.
    bool drive_until(const std::function<bool()>& done, std::size_t max_steps = 200'000) {
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

    void publish(const std::string& queue, const std::string& body) {
        message m;
        m.id = ids();
        m.type = "payment.requested";
        m.exchange = "payments";
        m.routing_key = queue;
        m.body = body;
        m.properties.content_type = "application/json";
        if (auto ec = await([&](auto h) { transport.async_publish(m, h); }))
            std::fprintf(stderr, "publish failed: %s\n", ec.message().c_str());
    }

    template <class Consumer>
    std::string start(Consumer& c) {
        std::string tag;
        bool started = false;
        c.async_start([&](std::error_code, std::string t) {
            tag = std::move(t);
            started = true;
        });
        drive_until([&] { return started; });
        return tag;
    }

    std::size_t ready(const std::string& queue) const {
        auto q = broker.queue(queue);
        return q ? q->ready : 0;
    }
};

// The messages: five good orders, and one from the release that renamed `amount`.
const std::vector<std::string> orders = {
    R"({"order": 1, "amount": 1200})", R"({"order": 2, "amount": 450})",
    R"({"order": 3, "total": 990})", // the poison message
    R"({"order": 4, "amount": 75})",   R"({"order": 5, "amount": 3100})",
    R"({"order": 6, "amount": 820})"};

// The worker's decoder. Before the fix it only knows `amount`; `at` throws
// nlohmann::json::out_of_range, which the default classifier calls permanent.
int amount_of(const message& m, bool accept_total) {
    const auto doc = nlohmann::json::parse(m.body);
    if (accept_total && !doc.contains("amount"))
        return doc.at("total").get<int>();
    return doc.at("amount").get<int>();
}

int fail(const char* what) {
    std::fprintf(stderr, "MISMATCH: %s\n", what);
    return 1;
}

} // namespace

int main() {
    world w;
    const topology::exchange payments{.name = "payments", .type = topology::exchange_type::direct};
    if (w.await([&](auto h) { w.transport.async_declare(payments, h); }))
        return fail("declare exchange");

    // --- 1. Without dead-lettering: requeue on failure ---------------------------------------
    std::printf("1. without dead-lettering (nack with requeue)\n");
    {
        const topology::queue naive_queue{.name = "payments.naive"};
        w.await([&](auto h) { w.transport.async_declare(naive_queue, h); });
        w.await([&](auto h) {
            w.transport.async_bind({"payments", "payments.naive", "payments.naive"}, h);
        });
        int poison_deliveries = 0;
        int processed = 0;
        auto naive = [&](const message& m) {
            try {
                (void)amount_of(m, false);
                ++processed;
            } catch (...) {
                ++poison_deliveries;
                throw;
            }
        };
        consumer c(w.transport, naive, w.clock,
                   {.consume = {.queue = "payments.naive", .prefetch = 1},
                    .on_failure = failure_action::requeue});
        const auto tag = w.start(c);
        for (std::size_t i = 2; i < orders.size(); ++i) // the poison message is first in line
            w.publish("payments.naive", orders[i]);
        w.drive_until([&] { return poison_deliveries >= 1000; });
        std::printf("   the poison message was delivered %d times; orders behind it processed: "
                    "%d of %zu\n",
                    poison_deliveries, processed, orders.size() - 3);
        if (poison_deliveries < 1000 || processed != 0)
            return fail("the naive consumer did not loop");
        w.await([&](auto h) { c.async_stop(tag, h); });
        std::printf("   (stopped by hand: nothing would ever end this loop)\n");
    }

    // --- 2. With dead-lettering ---------------------------------------------------------------
    std::printf("2. with dead_letter > redelivery > retry\n");
    const topology::retry_topology topo{.queue = "payments.work", .delays = {1s, 5s}};
    if (w.await([&](auto h) { topology::async_declare_all(w.transport, topo.queues(), h); }))
        return fail("declare retry topology");
    w.await([&](auto h) {
        w.transport.async_bind({"payments", "payments.work", "payments.work"}, h);
    });

    bool bug_fixed = false;
    std::vector<int> processed;
    auto handle = [&](const message& m) {
        (void)amount_of(m, bug_fixed);
        processed.push_back(nlohmann::json::parse(m.body).at("order").get<int>());
    };
    //[poison_pipeline
    auto pipeline = middleware::compose(
        handle, middleware::dead_letter({.consumer_id = "payments-worker"}, w.clock),
        middleware::redelivery(backoff::exponential(1s, 5.0, 5s, 3), topo, w.clock),
        middleware::retry(backoff::immediate(2)));
    consumer worker(w.transport, pipeline, w.clock, {.consume = {.queue = "payments.work"}});
    //]
    w.start(worker);
    for (const auto& body : orders)
        w.publish("payments.work", body);
    w.drive_until([&] { return processed.size() == 5 && w.ready("payments.work.dlq") == 1; });
    std::printf("   orders processed: %zu of %zu; in the DLQ: %zu; deliveries: %llu\n",
                processed.size(), orders.size(), w.ready("payments.work.dlq"),
                static_cast<unsigned long long>(worker.stats().delivered));
    if (processed.size() != 5 || w.ready("payments.work.dlq") != 1 ||
        worker.stats().delivered != orders.size())
        return fail("poison message not isolated");

    dlq::dead_letter_queue dead(w.transport, "payments.work.dlq", {.wall_clock = [&] {
                                    return w.clock.wall_now();
                                }});
    std::optional<std::vector<dlq::dead_letter_entry>> entries;
    dead.async_browse({}, {}, [&](std::error_code ec, std::vector<dlq::dead_letter_entry> e) {
        if (!ec)
            entries = std::move(e);
    });
    w.drive_until([&] { return entries.has_value(); });
    if (!entries || entries->size() != 1)
        return fail("browse");
    const auto& e = entries->front();
    std::printf("   DLQ entry: reason=%s attempts=%u\n", e.reason.c_str(), e.attempts);
    std::printf("   exception: %s\n", e.exception_type.c_str());
    std::printf("   original: exchange=%s routing key=%s queue=%s\n", e.original_exchange.c_str(),
                e.original_routing_key.c_str(), e.original_queue.c_str());

    // --- 3. Fix the bug, replay by reason -----------------------------------------------------
    std::printf("3. fix the decoder, replay the DLQ filtered by reason\n");
    bug_fixed = true;
    //[replay_by_reason
    dlq::dead_letter_filter permanent;
    permanent.reason = "permanent-failure";
    std::optional<dlq::replay_result> replay;
    dead.async_replay(permanent, [&](std::error_code ec, dlq::replay_result r) {
        if (!ec)
            replay = std::move(r);
    });
    //]
    w.drive_until([&] { return replay.has_value() && processed.size() == 6; });
    if (!replay)
        return fail("replay");
    std::printf("   replayed: %zu, failed: %zu; orders processed: %zu of %zu; DLQ depth: %zu\n",
                replay->replayed, replay->failed, processed.size(), orders.size(),
                w.ready("payments.work.dlq"));
    if (replay->replayed != 1 || processed.size() != 6 || w.ready("payments.work.dlq") != 0 ||
        processed.back() != 3)
        return fail("replay did not process the message");
    std::printf("   order 3 processed after the replay\n");
    return 0;
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   1\. without dead-lettering
//   the poison message was delivered 1000 times; orders behind it processed: 0 of 3
//   stopped by hand
//   2\. with dead_letter > redelivery > retry
//   orders processed: 5 of 6; in the DLQ: 1; deliveries: 6
//   DLQ entry: reason=permanent-failure attempts=1
//   exception: nlohmann::.*out_of_range
//   original: exchange=payments routing key=payments\.work queue=payments\.work
//   3\. fix the decoder, replay the DLQ filtered by reason
//   replayed: 1, failed: 0; orders processed: 6 of 6; DLQ depth: 0
//   order 3 processed after the replay
