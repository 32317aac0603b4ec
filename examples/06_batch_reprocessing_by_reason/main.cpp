// SPDX-License-Identifier: BSL-1.0
//
// Example 06: batch reprocessing of dead letters by reason, interrupted and resumed.
//
// The seeds' scenario: a migration added a NOT NULL column, `payments.settled_by`, that the
// payments worker fills only for card payments. Every bank-slip ("boleto") payment fails with an
// integrity error until the code is fixed. Other payments fail that day for other reasons that
// no deploy fixes: declined cards, an unknown currency, a risk-check gateway that never answers.
//
//   1. 500 payments go through the worker's pipeline (dead-letter > redelivery > retry >
//      inbox). 160 are settled; 340 end up in the dead-letter queue, each with its reason
//      and exception type. The example counts them per reason.
//   2. The fix is deployed. A replay job selects only the integrity errors (a
//      `dlq::dead_letter_filter` on reason and exception type) and replays them in batches of
//      50 message ids. A dead letter leaves the queue only once its copy is confirmed back on
//      the work queue, and the worker's inbox records each payment as its effect commits.
//   3. In the third batch the job's connection drops at the worst moment: a republished copy
//      was stored but its confirm was lost. The job stops, with the original still in the DLQ.
//   4. The job runs again and picks up what is left. The message in doubt is replayed a second
//      time and the inbox absorbs it: every payment was settled exactly once, and the other
//      reasons are still in the DLQ, untouched.
//
// Everything runs on one thread with a virtual clock, and the payments are shuffled with a fixed
// seed (LETTERBOX_SEED changes the order; the counts do not depend on it), so the output is
// always the same. Needs: the core only.
// Run: build/<dir>/examples/example_06_batch_reprocessing_by_reason
#include <letterbox/letterbox.hpp>
#include <letterbox/virtual_clock.hpp>

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

using namespace letterbox;
using namespace std::chrono_literals;

// The worker's failures. Named types, because the dead-letter middleware records the
// exception's type, and that is what an operator filters on.
namespace payments {
struct integrity_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};
struct card_declined : std::runtime_error {
    using std::runtime_error::runtime_error;
};
struct unknown_currency : std::runtime_error {
    using std::runtime_error::runtime_error;
};
struct gateway_timeout : std::runtime_error {
    using std::runtime_error::runtime_error;
};
} // namespace payments

namespace {

constexpr const char* work_queue = "payments.work";
constexpr const char* dead_letters = "payments.work.dlq";
constexpr std::size_t batch_size = 50;

struct world {
    boost::asio::io_context io;
    virtual_clock clock;
    in_memory::broker broker{io.get_executor(), clock};
    in_memory::transport worker_transport{broker, "payments-worker"};
    in_memory::transport operator_transport{broker, "dlq-replay-job"};

    // Runs handlers; when none is ready, jumps virtual time to the next timer. Bounded.
    bool drive_until(const std::function<bool()>& done, std::size_t max_steps = 2'000'000) {
        for (std::size_t step = 0; step < max_steps && !done(); ++step) {
            io.restart();
            if (io.poll_one() == 0 && !clock.advance_to_next())
                break;
        }
        return done();
    }

    // Runs until nothing is runnable and no timer is pending: everything in flight settled.
    void drive_until_idle() {
        drive_until([] { return false; });
    }

    template <class Op>
    std::error_code await(Op op) {
        std::optional<std::error_code> result;
        op([&result](std::error_code ec) { result = ec; });
        drive_until([&] { return result.has_value(); });
        return result.value_or(make_error_code(errc::timed_out));
    }

    std::size_t depth(const std::string& queue) const {
        auto q = broker.queue(queue);
        return q ? q->total() : 0;
    }
};

// The kinds of payment of the day, and how many of each: 340 of them fail.
enum class kind { ok, boleto, declined, foreign_currency, high_risk };
const std::vector<std::pair<kind, std::size_t>> day = {{kind::ok, 160},
                                                       {kind::boleto, 198},
                                                       {kind::declined, 61},
                                                       {kind::foreign_currency, 24},
                                                       {kind::high_risk, 57}};

nlohmann::json payment_body(int n, kind k) {
    nlohmann::json p = {{"payment", n},
                        {"method", k == kind::boleto ? "boleto" : "card"},
                        {"card", k == kind::declined ? "declined" : "ok"},
                        {"currency", k == kind::foreign_currency ? "ARS" : "BRL"},
                        {"amount", k == kind::high_risk ? 900'000 : 12'500 + n}};
    return p;
}

// The day's payments in a shuffled order. A hand-written Fisher-Yates on the raw output of
// mt19937, whose sequence the standard fixes: the same order with every standard library.
std::vector<kind> shuffled_day(std::uint32_t seed) {
    std::vector<kind> kinds;
    for (const auto& [k, n] : day)
        kinds.insert(kinds.end(), n, k);
    std::mt19937 rng(seed);
    for (std::size_t i = kinds.size(); i > 1; --i)
        std::swap(kinds[i - 1], kinds[rng() % i]);
    return kinds;
}

// Dead letters per (reason, exception type), from a browse of the whole queue.
using tally = std::map<std::pair<std::string, std::string>, std::size_t>;

std::optional<tally> count_by_reason(world& w) {
    dlq::dead_letter_queue dlq(w.operator_transport, dead_letters);
    std::optional<std::vector<dlq::dead_letter_entry>> entries;
    dlq.async_browse({}, {.offset = 0, .limit = 10'000},
                     [&](std::error_code ec, std::vector<dlq::dead_letter_entry> e) {
                         if (!ec)
                             entries = std::move(e);
                     });
    w.drive_until([&] { return entries.has_value(); });
    if (!entries)
        return std::nullopt;
    tally t;
    for (const auto& e : *entries)
        ++t[{e.reason, e.exception_type}];
    return t;
}

void print(const tally& t) {
    std::size_t total = 0;
    for (const auto& [key, n] : t) {
        std::printf("   %-18s %-28s %3zu\n", key.first.c_str(), key.second.c_str(), n);
        total += n;
    }
    std::printf("   %-47s %3zu\n", "total", total);
}

std::size_t count_of(const tally& t, const char* reason, const char* exception_type) {
    const auto it = t.find({reason, exception_type});
    return it == t.end() ? 0 : it->second;
}

// What one run of the replay job did.
struct job_report {
    std::size_t replayed = 0;
    bool interrupted = false;
};

//[replay_job
// One run of the replay job: while the DLQ holds dead letters that match `fixed`, take the ids
// of the next batch (a browse never changes the queue), then replay exactly those. A dead letter
// leaves the DLQ only after its copy is confirmed on the work queue, so the DLQ itself says what is
// left to do: a job that stops, for whatever reason, is resumed by running it again.
job_report run_replay_job(world& w, const dlq::dead_letter_filter& fixed,
                          const std::function<std::size_t()>& settled) {
    dlq::dead_letter_queue dlq(w.operator_transport, dead_letters);
    job_report report;
    for (int batch = 1; batch <= 100; ++batch) {
        std::optional<std::vector<dlq::dead_letter_entry>> next;
        dlq.async_browse(fixed, {.offset = 0, .limit = batch_size},
                         [&](std::error_code ec, std::vector<dlq::dead_letter_entry> e) {
                             if (!ec)
                                 next = std::move(e);
                         });
        w.drive_until([&] { return next.has_value(); });
        if (!next || next->empty())
            break;

        dlq::dead_letter_filter this_batch = fixed;
        for (const auto& entry : *next)
            this_batch.ids.push_back(entry.id);
        std::optional<std::pair<std::error_code, dlq::replay_result>> outcome;
        dlq.async_replay(this_batch, [&](std::error_code ec, dlq::replay_result r) {
            outcome.emplace(ec, std::move(r));
        });
        w.drive_until([&] { return outcome.has_value(); });
        w.drive_until_idle(); // let the worker handle what came back
        if (!outcome) {
            report.interrupted = true;
            break;
        }
        const auto& [ec, r] = *outcome;
        report.replayed += r.replayed;
        if (ec) {
            std::printf("   batch %d: %zu of %zu replayed, then the job stopped: %s\n", batch,
                        r.replayed, next->size(), ec.message().c_str());
            report.interrupted = true;
            break;
        }
        std::printf("   batch %d: %zu of %zu replayed; the worker has settled %zu so far\n", batch,
                    r.replayed, next->size(), settled());
    }
    return report;
}
//]

int fail(const char* what) {
    std::fprintf(stderr, "MISMATCH: %s\n", what);
    return 1;
}

} // namespace

int main() {
    std::uint32_t seed = 2026;
    if (const char* s = std::getenv("LETTERBOX_SEED"); s != nullptr && *s != '\0')
        seed = static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10));
    std::printf("LETTERBOX_SEED=%u\n", static_cast<unsigned>(seed));

    world w;
    const topology::exchange payments_exchange{.name = "payments",
                                               .type = topology::exchange_type::direct};
    const auto redelivery_policy =
        backoff::exponential(1s, 5.0, 5s, 3)
            .with_classifier(backoff::classifier{}
                                 .permanent<payments::integrity_error>()
                                 .permanent<payments::card_declined>()
                                 .permanent<payments::unknown_currency>());
    const topology::retry_topology topo{
        .queue = work_queue, .delays = topology::retry_topology::levels_of(redelivery_policy)};
    if (w.await([&](auto h) { w.worker_transport.async_declare(payments_exchange, h); }) ||
        w.await(
            [&](auto h) { topology::async_declare_all(w.worker_transport, topo.queues(), h); }) ||
        w.await([&](auto h) {
            w.worker_transport.async_bind({"payments", work_queue, work_queue}, h);
        }))
        return fail("declare the topology");

    // --- the worker ----------------------------------------------------------------------------
    bool bug_fixed = false;
    std::map<int, int> settlements; // payment -> effects committed
    auto settle = [&](const message& m, in_memory_unit_of_work& uow) {
        const auto p = decode_payload<nlohmann::json>(m);
        const int n = p.at("payment").get<int>();
        if (p.at("currency") != "BRL")
            throw payments::unknown_currency("no exchange rate for " +
                                             p.at("currency").get<std::string>());
        if (p.at("amount").get<int>() > 500'000)
            throw payments::gateway_timeout("risk-check gateway: no answer within 5 s");
        if (p.at("card") == "declined")
            throw payments::card_declined("declined by the issuer");
        if (p.at("method") == "boleto" && !bug_fixed)
            throw payments::integrity_error("NOT NULL constraint failed: payments.settled_by");
        // The settlement is the effect: it counts only if the unit (with the inbox record)
        // commits.
        return uow.on_commit([&settlements, n] { ++settlements[n]; });
    };
    in_memory_inbox_store inbox;
    //[worker_pipeline
    auto settle_once = idempotent(
        settle, inbox, [] { return in_memory_unit_of_work{}; }, "payments-worker", w.clock);
    auto pipeline = middleware::compose(
        settle_once, middleware::dead_letter({.consumer_id = "payments-worker"}, w.clock),
        middleware::redelivery(redelivery_policy, topo, w.clock),
        middleware::retry(
            backoff::immediate(2).with_classifier(redelivery_policy.get_classifier())));
    consumer worker(w.worker_transport, pipeline, w.clock,
                    {.consume = {.queue = work_queue, .prefetch = 10}});
    //]
    bool started = false;
    worker.async_start([&](std::error_code ec, std::string) { started = !ec; });
    if (!w.drive_until([&] { return started; }))
        return fail("start the worker");

    // --- 1. the day's payments -----------------------------------------------------------------
    message_id_generator ids(seed);
    const auto kinds = shuffled_day(seed);
    for (std::size_t i = 0; i < kinds.size(); ++i) {
        const int n = static_cast<int>(i) + 1;
        auto m = make_message(ids, "payment.requested", "payments", work_queue,
                              payment_body(n, kinds[i]));
        if (w.await([&](auto h) { w.worker_transport.async_publish(m, h); }))
            return fail("publish a payment");
    }
    w.drive_until_idle();
    std::printf("1. %zu payments: %zu settled, %zu dead-lettered\n", kinds.size(),
                settlements.size(), w.depth(dead_letters));
    const auto before = count_by_reason(w);
    if (!before)
        return fail("browse the DLQ");
    std::printf("   the DLQ by reason:\n");
    print(*before);
    if (settlements.size() != 160 || w.depth(dead_letters) != 340)
        return fail("the day's outcome");

    // --- 2 and 3. the fix, and a replay job that is interrupted ---------------------------------
    bug_fixed = true;
    std::printf("2. the fix is deployed; replay reason=permanent-failure, "
                "exception=payments::integrity_error, in batches of %zu ids\n",
                batch_size);
    //[filter_by_reason
    dlq::dead_letter_filter fixed;
    fixed.reason = "permanent-failure";
    fixed.exception_type = "payments::integrity_error";
    //]
    const std::size_t settled_before_replay = settlements.size();
    auto settled_by_replay = [&] {
        return settlements.size() - settled_before_replay;
    };

    // The job's link to the broker will drop right after the 23rd publish of its third batch:
    // the copy is stored on the work queue, but its confirm never reaches the job.
    w.broker.lose_nth_confirm(2 * batch_size + 23);
    const auto first = run_replay_job(w, fixed, settled_by_replay);
    const auto after_first = count_by_reason(w);
    if (!after_first)
        return fail("browse the DLQ after the first run");
    const std::size_t left =
        count_of(*after_first, "permanent-failure", "payments::integrity_error");
    std::printf("3. the job stopped after %zu confirmed replays; the worker settled %zu\n",
                first.replayed, settled_by_replay());
    if (settled_by_replay() > first.replayed)
        std::printf("   (the copy in doubt was stored and settled; its original is still in the "
                    "DLQ)\n");
    std::printf("   %zu integrity errors are still in the DLQ\n", left);
    if (!first.interrupted || first.replayed != 122 || settled_by_replay() != 123 || left != 76)
        return fail("the interrupted run");

    // --- 4. the job runs again -----------------------------------------------------------------
    std::printf("4. the job runs again\n");
    const auto second = run_replay_job(w, fixed, settled_by_replay);
    const auto after = count_by_reason(w);
    if (second.interrupted || !after)
        return fail("the resumed run");
    std::size_t settled_twice = 0;
    for (const auto& [n, effects] : settlements)
        settled_twice += effects > 1 ? 1 : 0;
    std::printf(
        "   confirmed replays in all: %zu; payments settled by the replay: %zu; settled twice: "
        "%zu; duplicates absorbed by the inbox: %llu\n",
        first.replayed + second.replayed, settled_by_replay(), settled_twice,
        static_cast<unsigned long long>(settle_once.stats().duplicates));
    std::error_code inbox_error;
    const std::size_t inbox_records = inbox.size(inbox_error);
    std::printf("   the worker's inbox holds %zu records: one per payment settled, %zu of them\n",
                inbox_records, settlements.size());
    std::printf("   the DLQ by reason:\n");
    print(*after);
    if (first.replayed + second.replayed != 198 || settled_by_replay() != 198 ||
        settled_twice != 0 || settle_once.stats().duplicates != 1 || inbox_error ||
        inbox_records != settlements.size() ||
        count_of(*after, "permanent-failure", "payments::integrity_error") != 0)
        return fail("the replay's outcome");
    for (const auto& [key, n] : *before)
        if (key.second != "payments::integrity_error" && after->count(key) == 0)
            return fail("another reason was touched");
    for (const auto& [key, n] : *after)
        if (const auto it = before->find(key); it == before->end() || it->second != n)
            return fail("another reason was touched");
    std::printf("   every other reason is still in the DLQ, untouched\n");
    return 0;
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   LETTERBOX_SEED=
//   1\. 500 payments: 160 settled, 340 dead-lettered
//   permanent-failure +payments::card_declined +61
//   permanent-failure +payments::integrity_error +198
//   permanent-failure +payments::unknown_currency +24
//   retries-exhausted +payments::gateway_timeout +57
//   total +340
//   2\. the fix is deployed
//   batch 1: 50 of 50 replayed; the worker has settled 50 so far
//   batch 2: 50 of 50 replayed; the worker has settled 100 so far
//   batch 3: 22 of 50 replayed, then the job stopped:
//   3\. the job stopped after 122 confirmed replays; the worker settled 123
//   the copy in doubt was stored and settled; its original is still in the DLQ
//   76 integrity errors are still in the DLQ
//   4\. the job runs again
//   batch 1: 50 of 50 replayed; the worker has settled 172 so far
//   batch 2: 26 of 26 replayed; the worker has settled 198 so far
//   confirmed replays in all: 198; payments settled by the replay: 198; settled twice: 0
//   duplicates absorbed by the inbox: 1
//   the worker's inbox holds 358 records: one per payment settled, 358 of them
//   permanent-failure +payments::card_declined +61
//   permanent-failure +payments::unknown_currency +24
//   retries-exhausted +payments::gateway_timeout +57
//   total +142
//   every other reason is still in the DLQ, untouched
