// SPDX-License-Identifier: BSL-1.0
//
// Example 14: message groups, the seed's exercise 5 (SQS FIFO style).
//
//   customer A: A1 .. A10 --+                                  +--> A1 A2 ... A10 (one at a time)
//                           +--> [orders] --> consumer, groups +
//   customer B: B1 .. B10 --+                                  +--> B1 B2 ... B10 (beside A's)
//
// 1. Order per customer, parallel across customers. Each order carries its customer in the
//    `x-letterbox-group` header. The consumer has message groups on (`consumer_options::groups`):
//    the orders of one customer are handled one at a time, in the order they were sent; the two
//    customers' orders are handled side by side. The handler takes a random 5 to 40 ms (a
//    coroutine waiting on a timer: it holds no thread). The program checks that each customer's
//    orders ran 1..10 with no two at once, and prints how long A's and B's runs overlapped,
//    which must be more than zero.
// 2. A repeated deduplication id. A payment carries a deduplication id
//    (`x-letterbox-dedup-id`); the client sends it again under a new message id. The idempotent
//    consumer deduplicates on that id (`idempotency_key::by_dedup_id`), and its inbox keeps a
//    record for 5 minutes (the window, as with SQS FIFO): the repeat 2 minutes later has no
//    effect, and the repeat at 6 minutes, after the purge, has a second one. The window's time is
//    virtual (a `virtual_clock`), so the run takes no 6 minutes.
// 3. Two workers, across processes. The orders go to a consistent-hash exchange that spreads the
//    customers over four partitions, each a single-active-consumer queue
//    (`topology::group_partitions`). Two workers, each with a connection of its own as two
//    processes would have, consume every partition; each is the active consumer of two and waits
//    on the other two. The program checks that both handled orders and that every customer's
//    orders were handled in order.
//
// The transport is RabbitMQ when LETTERBOX_AMQP_URL (or --url) names a broker, otherwise the
// in-memory RabbitMQ model; the scenario is one template over the transport type. The program
// checks its own outcome and exits non-zero, with `MISMATCH: ...` on stderr, when it is wrong.
//
// Needs: the amqp component (-DLETTERBOX_WITH_AMQP=ON).
// Run: build/release/examples/example_14_message_groups [--url amqp://...]
#include <letterbox/amqp.hpp>
#include <letterbox/letterbox.hpp>
#include <letterbox/virtual_clock.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

using namespace letterbox;
using namespace std::chrono_literals;

namespace {

namespace asio = boost::asio;
using time_point = std::chrono::steady_clock::time_point;

int fail(const char* what) {
    std::fprintf(stderr, "MISMATCH: %s\n", what);
    return 1;
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

// Starts an operation completing with `void(std::error_code)` and runs `io` until it does.
template <class Start>
std::error_code await(asio::io_context& io, time_point deadline, Start start) {
    auto result = std::make_shared<std::optional<std::error_code>>();
    start([result](std::error_code ec) { *result = ec; });
    if (!run_until(io, deadline, [&] { return result->has_value(); }))
        return make_error_code(errc::timed_out);
    return **result;
}

template <class Consumer>
bool start(Consumer& c, asio::io_context& io, time_point deadline) {
    bool started = false;
    c.async_start([&](std::error_code ec, const std::string&) { started = !ec; });
    return run_until(io, deadline, [&] { return started; });
}

// One run of the order handler, in real time.
struct run {
    std::string customer;
    int order = 0;
    time_point start, end;
};

// How long the runs of A and the runs of B were in progress at the same time.
std::chrono::milliseconds overlap(const std::vector<run>& runs) {
    std::chrono::steady_clock::duration total{};
    for (const auto& a : runs)
        for (const auto& b : runs)
            if (a.customer == "A" && b.customer == "B")
                total += std::max(std::chrono::steady_clock::duration{},
                                  std::min(a.end, b.end) - std::max(a.start, b.start));
    return std::chrono::duration_cast<std::chrono::milliseconds>(total);
}

// --- 1. order per customer -------------------------------------------------------------------
template <class Transport>
int orders_in_order(Transport& t, asio::io_context& io, letterbox::steady_clock& clock,
                    const std::string& queue, std::uint64_t seed, time_point deadline) {
    std::printf("1. two customers, ten orders each, handled in order per customer\n");
    topology::queue q;
    q.name = queue;
    if (auto ec = await(io, deadline, [&](auto h) { t.async_declare(q, h); }))
        return fail(("declare: " + ec.message()).c_str());

    std::mt19937 engine(static_cast<std::mt19937::result_type>(seed));
    std::map<std::string, std::chrono::milliseconds> cost; // each order's handling time
    std::vector<run> runs;
    int running_a = 0, running_b = 0, most_of_one_customer = 0;
    //[message_groups
    auto handle = [&](const message& m) -> asio::awaitable<void> {
        const auto customer = m.headers.get<std::string>(headers::group).value_or("?");
        int& running = customer == "A" ? running_a : running_b;
        most_of_one_customer = std::max(most_of_one_customer, ++running);
        run r{customer, std::stoi(m.body.substr(1)), std::chrono::steady_clock::now(), {}};
        asio::steady_timer work(co_await asio::this_coro::executor, cost.at(m.body));
        co_await work.async_wait(asio::use_awaitable);
        r.end = std::chrono::steady_clock::now();
        --running;
        runs.push_back(r);
    };
    consumer_options options;
    options.consume = {.queue = queue, .prefetch = 8};
    options.groups.key = group_key::standard{}; // the x-letterbox-group header
    consumer worker(t, handle, clock, options);
    //]
    if (!start(worker, io, deadline))
        return fail("the consumer did not start");

    message_id_generator ids(seed);
    for (int i = 1; i <= 10; ++i)
        for (const std::string customer : {"A", "B"}) {
            message m;
            m.id = ids();
            m.routing_key = queue;
            m.body = customer + std::to_string(i);
            m.headers.set(headers::group, customer);
            cost[m.body] = std::chrono::milliseconds(5 + engine() % 36);
            if (auto ec = await(io, deadline, [&](auto h) { t.async_publish(m, h); }))
                return fail(("publish: " + ec.message()).c_str());
        }
    if (!run_until(io, deadline, [&] { return worker.stats().acked == 20; }))
        return fail("not every order was handled");

    for (const std::string customer : {"A", "B"}) {
        std::vector<int> seen;
        for (const auto& r : runs)
            if (r.customer == customer)
                seen.push_back(r.order);
        std::string line;
        for (int n : seen)
            line += " " + std::to_string(n);
        std::printf("   %s's orders handled:%s\n", customer.c_str(), line.c_str());
        if (seen != std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
            return fail("a customer's orders ran out of order");
    }
    std::printf("   most orders of one customer in progress at once: %d\n", most_of_one_customer);
    if (most_of_one_customer != 1)
        return fail("two orders of one customer ran at once");
    const auto both = overlap(runs);
    std::printf("   A's and B's orders overlapped for %lld ms\n",
                static_cast<long long>(both.count()));
    if (both.count() <= 0)
        return fail("the customers were not handled in parallel");
    return 0;
}

// --- 2. a repeated deduplication id ----------------------------------------------------------
struct ledger {
    std::map<std::string, int> charges; // by deduplication id
};

template <class Transport>
int dedup_window(Transport& t, asio::io_context& io, letterbox::steady_clock& clock,
                 const std::string& queue, std::uint64_t seed, time_point deadline) {
    std::printf("2. a payment sent again under a new message id, with the same deduplication id\n");
    topology::queue q;
    q.name = queue;
    if (auto ec = await(io, deadline, [&](auto h) { t.async_declare(q, h); }))
        return fail(("declare: " + ec.message()).c_str());

    virtual_clock window_clock; // the inbox's time: minutes pass in no time
    in_memory_inbox_store inbox;
    ledger book;
    auto charge = [&](const message& m, in_memory_unit_of_work& unit) {
        const auto id = m.headers.get<std::string>(headers::dedup_id).value_or("");
        // Applied only if the unit commits, together with the inbox record.
        return unit.on_commit([&book, id] { ++book.charges[id]; });
    };
    //[dedup_window
    constexpr auto window = 5min; // SQS FIFO's deduplication interval
    auto charge_once =
        middleware::idempotent(
            charge, inbox, [] { return in_memory_unit_of_work{}; }, "payments", window_clock)
            .with_key(idempotency_key::by_dedup_id{}) // x-letterbox-dedup-id, else the message id
            .with_retention(window);
    //]
    consumer worker(t, charge_once, clock, {.consume = {.queue = queue}});
    if (!start(worker, io, deadline))
        return fail("the payments consumer did not start");

    message_id_generator ids(seed + 1);
    std::uint64_t sent = 0;
    auto send = [&](const char* when) -> bool {
        message m;
        m.id = ids(); // a new message id every time: the client's retry is a new message
        m.routing_key = queue;
        m.body = R"({"order":"A11","cents":2599})";
        m.headers.set(headers::dedup_id, "pay-A11");
        if (await(io, deadline, [&](auto h) { t.async_publish(m, h); }))
            return false;
        ++sent;
        if (!run_until(io, deadline, [&] { return worker.stats().acked == sent; }))
            return false;
        std::printf("   t=%s sent pay-A11 -> charged %d time(s), duplicates %llu\n", when,
                    book.charges["pay-A11"],
                    static_cast<unsigned long long>(charge_once.stats().duplicates));
        return true;
    };
    if (!send("0:00"))
        return fail("the first payment was not handled");
    window_clock.advance(2min);
    if (!send("2:00"))
        return fail("the repeat was not handled");
    window_clock.advance(4min);
    std::error_code ec;
    const auto purged = inbox.purge(window_clock.wall_now() - window, ec);
    std::printf("   t=6:00 the inbox purges records older than 5 min: %zu\n", purged);
    if (ec || purged != 1)
        return fail("the purge");
    if (!send("6:00"))
        return fail("the late repeat was not handled");
    if (book.charges["pay-A11"] != 2 || charge_once.stats().duplicates != 1)
        return fail("the deduplication window");
    std::printf("   one effect within the window, a second one after it\n");
    return 0;
}

// --- 3. two workers over partitions ---------------------------------------------------------
// `make_worker()` makes a transport of its own, as another process would have.
template <class Transport, class MakeWorker>
int two_workers(Transport& t, MakeWorker make_worker, asio::io_context& io,
                letterbox::steady_clock& clock, const std::string& name, time_point deadline) {
    std::printf("3. two workers, four partitions (consistent-hash exchange, single active "
                "consumer)\n");
    //[partitions
    const topology::group_partitions layout{.name = name, .partitions = 4};
    // The exchange hashes x-letterbox-group; each partition has one active consumer at a time.
    if (auto ec = await(io, deadline,
                        [&](auto h) { topology::async_declare_all(t, layout.declarations(), h); }))
        return fail(("declare: " + ec.message()).c_str());
    //]
    // Each worker consumes every partition with groups on. Worker 1 registers first on
    // partitions 0 and 1, worker 2 on 2 and 3: each is active on two and waits on the others,
    // to take them over if the other goes away.
    auto w1 = make_worker();
    auto w2 = make_worker();
    std::map<std::string, std::vector<int>> seen; // by customer, in handling order
    std::map<int, int> by_worker;
    auto handler = [&](int worker) {
        return [&, worker](const message& m) {
            const auto customer = m.headers.get<std::string>(headers::group).value_or("?");
            seen[customer].push_back(std::stoi(m.body.substr(m.body.find('-') + 1)));
            ++by_worker[worker];
        };
    };
    using consumer_type = decltype(consumer(w1, handler(1), clock, consumer_options{}));
    std::vector<consumer_type> consumers;
    consumers.reserve(8);
    for (const std::uint32_t first : {0u, 2u})
        for (std::uint32_t k = 0; k < 4; ++k) {
            const auto i = (first + k) % 4;
            const bool one = (first == 0) == (k < 2);
            consumer_options options;
            options.consume = {.queue = layout.partition_name(i), .prefetch = 8};
            options.groups.key = group_key::standard{};
            consumers.emplace_back(one ? w1 : w2, handler(one ? 1 : 2), clock, options);
            if (!start(consumers.back(), io, deadline))
                return fail("a worker's consumer did not start");
        }

    constexpr int customers = 8, orders = 6;
    message_id_generator ids(7);
    for (int n = 1; n <= orders; ++n)
        for (int c = 1; c <= customers; ++c) {
            message m;
            m.id = ids();
            m.exchange = layout.name; // the routing key is not used
            m.body = "C" + std::to_string(c) + "-" + std::to_string(n);
            m.headers.set(headers::group, "C" + std::to_string(c));
            if (auto ec = await(io, deadline, [&](auto h) { t.async_publish(m, h); }))
                return fail(("publish: " + ec.message()).c_str());
        }
    if (!run_until(io, deadline, [&] { return by_worker[1] + by_worker[2] == customers * orders; }))
        return fail("not every order was handled");
    bool in_order = seen.size() == customers;
    for (const auto& [customer, numbers] : seen)
        in_order = in_order && numbers == std::vector<int>{1, 2, 3, 4, 5, 6};
    std::printf("   worker 1 handled %d orders, worker 2 handled %d\n", by_worker[1], by_worker[2]);
    std::printf("   every customer's orders in order: %s\n", in_order ? "yes" : "no");
    if (!in_order)
        return fail("a customer's orders ran out of order across the workers");
    if (by_worker[1] == 0 || by_worker[2] == 0)
        return fail("a worker had nothing to do");
    return 0;
}

template <class Transport, class MakeWorker>
int run_scenario(Transport& t, MakeWorker make_worker, asio::io_context& io,
                 letterbox::steady_clock& clock, const std::string& suffix, std::uint64_t seed) {
    auto work = asio::make_work_guard(io);
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    if (int rc = orders_in_order(t, io, clock, "orders" + suffix, seed, deadline))
        return rc;
    if (int rc = dedup_window(t, io, clock, "payments" + suffix, seed, deadline))
        return rc;
    return two_workers(t, make_worker, io, clock, "partitioned-orders" + suffix, deadline);
}

std::uint64_t seed_from_environment() {
    const char* text = std::getenv("LETTERBOX_SEED");
    if (text == nullptr || *text == '\0')
        return 2002;
    return std::strtoull(text, nullptr, 10);
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
    const auto seed = seed_from_environment();
    try {
        asio::io_context io;
        letterbox::steady_clock clock;
        if (!url.empty()) {
            const auto u = amqp::parse_url(url);
            std::printf("transport: amqp (%s)\nLETTERBOX_SEED=%llu\n", u.redacted().c_str(),
                        static_cast<unsigned long long>(seed));
            // Queues of our own on a broker that may be shared (CI runs tests in parallel).
            char suffix[16];
            std::snprintf(suffix, sizeof suffix, ".%08x", std::random_device{}());
            amqp::transport transport(io.get_executor(), u);
            auto worker = [&] {
                return amqp::transport(io.get_executor(), u);
            };
            return run_scenario(transport, worker, io, clock, suffix, seed);
        }
        std::printf("transport: in-memory (no LETTERBOX_AMQP_URL)\nLETTERBOX_SEED=%llu\n",
                    static_cast<unsigned long long>(seed));
        in_memory::broker broker(io.get_executor(), clock);
        in_memory::transport transport(broker, "message-groups");
        int workers = 0;
        auto worker = [&] {
            return in_memory::transport(broker, "worker-" + std::to_string(++workers));
        };
        return run_scenario(transport, worker, io, clock, "", seed);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "MISMATCH: %s\n", e.what());
        return 1;
    }
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   ^transport: (in-memory|amqp)
//   LETTERBOX_SEED=[0-9]+
//   A's orders handled: 1 2 3 4 5 6 7 8 9 10
//   B's orders handled: 1 2 3 4 5 6 7 8 9 10
//   most orders of one customer in progress at once: 1
//   A's and B's orders overlapped for [1-9][0-9]* ms
//   t=0:00 sent pay-A11 -> charged 1 time\(s\), duplicates 0
//   t=2:00 sent pay-A11 -> charged 1 time\(s\), duplicates 1
//   t=6:00 the inbox purges records older than 5 min: 1
//   t=6:00 sent pay-A11 -> charged 2 time\(s\), duplicates 1
//   one effect within the window, a second one after it
//   3. two workers, four partitions \(consistent-hash exchange, single active consumer\)
//   worker 1 handled [1-9][0-9]* orders, worker 2 handled [1-9][0-9]*
//   every customer's orders in order: yes
