// SPDX-License-Identifier: BSL-1.0
//
// Example 07: a welcome-e-mail worker behind a registration API, with an e-mail provider that
// fails now and then.
//
//   sign-ups --POST /register--> registration API --user.registered--> [welcome-emails]
//                                                                           |
//                           fake e-mail API <--POST /send-- worker <--------+
//
// - The registration API (Boost.Beast, 127.0.0.1, ephemeral port) publishes `user.registered`
//   (message id = the registration id) and answers 202 once the broker confirmed it.
// - The worker sends the welcome e-mail through a fake e-mail HTTP API that fails on a seeded
//   schedule: some addresses get 503 once or twice before it accepts them; one address is
//   invalid and gets 422 every time.
// - A 503 is transient: the message waits in a TTL retry queue (50, 100, 200 ms: exponential
//   backoff) and comes back. A 422 is permanent: it is dead-lettered at once into
//   `<queue>.dlq` with its reason, instead of being rejected without requeue onto a queue with
//   no dead-letter exchange, where the broker would drop it without a trace.
//
// The transport is RabbitMQ when LETTERBOX_AMQP_URL (or --url) names a broker, otherwise the
// in-memory RabbitMQ model; the scenario is one template over the transport type. Time is real
// (steady_clock): the run takes about a second. The program checks its own outcome and exits
// non-zero, with `MISMATCH: ...` on stderr, when it is wrong.
//
// Needs: the amqp component (-DLETTERBOX_WITH_AMQP=ON) and Boost.Beast (header-only).
// Run: build/release/examples/example_07_email_worker [--url amqp://...]
#include "email_provider.hpp"
#include "http.hpp"

#include <letterbox/amqp.hpp>
#include <letterbox/dlq/dead_letter_queue.hpp>
#include <letterbox/letterbox.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

using namespace letterbox;
using namespace std::chrono_literals;
using example::http_reply;
using example::post_json;

namespace mail {

/// The e-mail API could not take the e-mail now (a 5xx, a timeout, a refused connection):
/// worth trying again later.
struct provider_unavailable : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// The e-mail API refused this e-mail for good (a 4xx such as 422, invalid address): trying
/// again cannot help.
struct address_rejected : std::runtime_error {
    using std::runtime_error::runtime_error;
};

} // namespace mail

namespace {

namespace asio = boost::asio;
using time_point = std::chrono::steady_clock::time_point;

// The sign-ups, in order. The last-but-one address has no `@`: the provider rejects it.
const std::vector<std::string> signups = {"alice@example.com", "bob@example.com",
                                          "carol@example.org", "dave.example.com",
                                          "erin@example.net"};

int fail(const char* what) {
    std::fprintf(stderr, "MISMATCH: %s\n", what);
    return 1;
}

// Runs `io` until `done()` or `deadline`, in slices of at most 20 ms so that a condition set
// by another thread (the sign-up client) is seen promptly.
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

// The worker's log: which attempt of a message this is, and how long it waited since the
// previous one (the backoff, as observed). Written from the worker's thread pool.
class attempt_log {
public:
    void record(const message& m, const std::string& to, const std::string& outcome) {
        const std::lock_guard lock(mutex_);
        std::int64_t before = 0;
        if (const auto* v = m.headers.find(headers::attempts))
            before = v->as_integer().value_or(0);
        const auto now = std::chrono::steady_clock::now();
        const auto key = letterbox::to_string(m.id);
        std::string waited;
        if (auto it = last_.find(key); it != last_.end())
            waited = ", " +
                     std::to_string(
                         std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second)
                             .count()) +
                     " ms later";
        last_[key] = now;
        std::printf("worker: %-18s attempt %lld%s -> %s\n", to.c_str(),
                    static_cast<long long>(before + 1), waited.c_str(), outcome.c_str());
    }

private:
    std::mutex mutex_;
    std::map<std::string, time_point> last_;
};

// The whole scenario, on any transport. `io` runs only on this thread; the e-mail provider and
// the sign-up client have threads of their own.
template <class Transport>
int run_scenario(Transport& transport, asio::io_context& io, letterbox::steady_clock& clock,
                 const std::string& queue, std::uint64_t seed) {
    auto work = asio::make_work_guard(io);
    const auto deadline = std::chrono::steady_clock::now() + 60s;

    // --- the fake e-mail API, failing on a schedule drawn from the seed -----------------------
    std::mt19937 engine(static_cast<std::mt19937::result_type>(seed));
    std::map<std::string, unsigned> outages;
    std::size_t expected_sent = 0;
    unsigned expected_503 = 0;
    std::string schedule;
    for (const auto& to : signups) {
        const bool valid = example::fake_email_provider::valid_address(to);
        const unsigned n = valid ? static_cast<unsigned>(engine() % 3) : 0;
        outages[to] = n;
        expected_sent += valid ? 1 : 0;
        expected_503 += n;
        schedule += (schedule.empty() ? "" : ", ") + to +
                    (valid ? " 503x" + std::to_string(n) : std::string(" 422"));
    }
    example::fake_email_provider provider(outages);
    std::printf("e-mail API on 127.0.0.1:%u; schedule: %s\n", provider.port(), schedule.c_str());

    // --- topology: exchange `users`, the work queue with its retry queues and DLQ --------------
    //[email_policy
    // A 422 is permanent, a 503 (or a timeout) transient; transient failures wait 50, 100 and
    // 200 ms in retry queues, for 4 attempts at most.
    const auto policy = backoff::exponential(50ms, 2.0, 200ms, 4)
                            .with_classifier(backoff::classifier{}
                                                 .permanent<mail::address_rejected>()
                                                 .transient<mail::provider_unavailable>());
    // Production runs on a cluster: quorum queues, replicated. The defaults: a delivery limit
    // of 20 on the work queue (a message that crashes the worker ends in the DLQ) and
    // at-least-once dead-lettering between the queues (RabbitMQ 3.10+).
    const topology::retry_topology topo{.queue = queue,
                                        .delays = topology::retry_topology::levels_of(policy),
                                        .quorum = topology::quorum_options{}};
    //]
    auto queues = topo.queues();
    for (auto& q : queues) // a shared broker forgets this run's queues 10 minutes after it
        q.arguments.set(topology::args::expires, std::int64_t{600'000});
    const topology::exchange users{.name = "users", .type = topology::exchange_type::topic};
    if (auto ec = await(io, deadline, [&](auto h) { transport.async_declare(users, h); }))
        return fail(("declare exchange: " + ec.message()).c_str());
    if (auto ec =
            await(io, deadline, [&](auto h) { topology::async_declare_all(transport, queues, h); }))
        return fail(("declare queues: " + ec.message()).c_str());
    if (auto ec = await(io, deadline, [&](auto h) {
            transport.async_bind({"users", queue, "user.registered"}, h);
        }))
        return fail(("bind: " + ec.message()).c_str());

    // --- the registration API -----------------------------------------------------------------
    message_id_generator registration_ids{seed};
    example::http_server api(io.get_executor(), [&](const example::request& req,
                                                    example::http_server::respond done) {
        using example::json_response;
        namespace http = example::http;
        if (req.method() != http::verb::post || req.target() != "/register")
            return done(json_response(http::status::not_found, {{"error", "no such endpoint"}}));
        const auto doc = nlohmann::json::parse(req.body(), nullptr, false);
        if (doc.is_discarded() || !doc.contains("email") || !doc["email"].is_string())
            return done(
                json_response(http::status::bad_request, {{"error", "expected {\"email\": ...}"}}));
        message m;
        m.id = registration_ids(); // the registration id is the message id
        m.type = "user.registered";
        m.exchange = "users";
        m.routing_key = "user.registered";
        m.body =
            nlohmann::json{{"registration_id", letterbox::to_string(m.id)}, {"email", doc["email"]}}
                .dump();
        m.properties.content_type = "application/json";
        std::printf("registration API: %-18s -> user.registered %s\n",
                    doc["email"].get<std::string>().c_str(), letterbox::to_string(m.id).c_str());
        // 202 only once the broker has confirmed the event: from then on it cannot be lost.
        transport.async_publish(m, [done, id = letterbox::to_string(m.id)](std::error_code ec) {
            if (ec)
                return done(
                    json_response(http::status::service_unavailable, {{"error", ec.message()}}));
            done(json_response(http::status::accepted, {{"registration_id", id}}));
        });
    });
    std::printf("registration API on 127.0.0.1:%u\n", api.port());

    // --- the worker ---------------------------------------------------------------------------
    attempt_log log;
    std::atomic<std::size_t> sent_by_worker{0};
    //[send_welcome_email
    // It blocks for one HTTP exchange, 2 s at most, so it runs on a thread pool of its own
    // (below): the io thread keeps serving the broker and the API meanwhile. It succeeds or
    // throws; the classifier above sorts what it throws.
    auto send_welcome_email = [&](const message& m) {
        const auto to = nlohmann::json::parse(m.body).at("email").get<std::string>();
        const http_reply r = post_json(provider.port(), "/send",
                                       nlohmann::json{{"to", to}, {"template", "welcome"}}.dump(),
                                       {{"Idempotency-Key", letterbox::to_string(m.id)}}, 2s);
        if (!r.error.empty() || r.status >= 500) {
            log.record(m, to, r.error.empty() ? std::to_string(r.status) + ", transient" : r.error);
            throw mail::provider_unavailable(
                "e-mail API: " + (r.error.empty() ? std::to_string(r.status) : r.error));
        }
        if (r.status >= 400) {
            log.record(m, to, std::to_string(r.status) + ", permanent");
            throw mail::address_rejected("e-mail API answered " + std::to_string(r.status) + ": " +
                                         r.body);
        }
        log.record(m, to, std::to_string(r.status) + ", sent");
        ++sent_by_worker;
    };
    //]
    //[email_pipeline
    auto pipeline = middleware::compose(
        send_welcome_email, middleware::dead_letter({.consumer_id = "welcome-email-worker"}, clock),
        middleware::redelivery(policy, topo, clock));
    boost::asio::thread_pool blocking(1); // where the handler runs, off the io thread
    consumer worker(
        transport, pipeline, clock,
        {.consume = {.queue = queue, .prefetch = 1}, .handler_executor = blocking.get_executor()});
    //]
    std::optional<std::string> tag;
    worker.async_start([&](std::error_code ec, std::string t) {
        if (ec)
            std::fprintf(stderr, "consume: %s\n", ec.message().c_str());
        tag = std::move(t);
    });
    if (!run_until(io, deadline, [&] { return tag.has_value(); }) || tag->empty())
        return fail("the worker did not start");

    // --- the sign-ups, from a client thread, one POST /register each ----------------------------
    std::vector<http_reply> replies(signups.size());
    std::atomic<bool> signups_done{false};
    std::thread client([&, port = api.port()] {
        for (std::size_t i = 0; i < signups.size(); ++i) {
            replies[i] =
                post_json(port, "/register", nlohmann::json{{"email", signups[i]}}.dump(), {}, 5s);
            if (!replies[i].error.empty())
                std::fprintf(stderr, "sign-up %s: %s\n", signups[i].c_str(),
                             replies[i].error.c_str());
        }
        signups_done = true;
    });
    const bool settled = run_until(io, deadline, [&] {
        const auto s = worker.stats();
        return signups_done && sent_by_worker == expected_sent &&
               s.dead_lettered == signups.size() - expected_sent;
    });
    client.join();

    // --- the dead-letter queue ----------------------------------------------------------------
    dlq::dead_letter_queue dead(transport, topo.dead_letter_queue_name());
    std::optional<std::vector<dlq::dead_letter_entry>> entries;
    dead.async_browse({}, {}, [&](std::error_code ec, std::vector<dlq::dead_letter_entry> e) {
        if (ec)
            std::fprintf(stderr, "browse: %s\n", ec.message().c_str());
        entries = std::move(e);
    });
    run_until(io, deadline, [&] { return entries.has_value(); });

    const auto stats = worker.stats();
    await(io, deadline, [&](auto h) { worker.async_stop(*tag, h); });
    await(io, deadline, [&](auto h) { transport.async_close(h); });
    api.close();
    provider.stop();
    io.poll();

    // --- the outcome --------------------------------------------------------------------------
    const auto registered = static_cast<std::size_t>(
        std::count_if(replies.begin(), replies.end(),
                      [](const http_reply& r) { return r.error.empty() && r.status == 202; }));
    std::printf("registered %zu users\n", registered);
    std::printf("sent %zu e-mails\n", provider.sent().size());
    std::printf("retried %llu transient failures (503) through the retry queues\n",
                static_cast<unsigned long long>(stats.redelivered));
    if (entries) {
        for (const auto& e : *entries) {
            const auto doc = nlohmann::json::parse(e.msg.body, nullptr, false);
            const std::string to =
                doc.is_object() && doc.contains("email") ? doc["email"].get<std::string>() : "?";
            std::printf("dead-lettered %zu: %s reason=%s attempts=%u queue=%s\n", entries->size(),
                        to.c_str(), e.reason.c_str(), e.attempts,
                        topo.dead_letter_queue_name().c_str());
            std::printf("  exception: %s: %s\n", e.exception_type.c_str(),
                        e.exception_message.c_str());
        }
    }
    std::printf("worker: delivered %llu, acked %llu, redelivered %llu, dead-lettered %llu\n",
                static_cast<unsigned long long>(stats.delivered),
                static_cast<unsigned long long>(stats.acked),
                static_cast<unsigned long long>(stats.redelivered),
                static_cast<unsigned long long>(stats.dead_lettered));

    if (!settled)
        return fail("the run did not settle before its deadline");
    if (registered != signups.size())
        return fail("a registration was not accepted");
    auto sent = provider.sent();
    std::sort(sent.begin(), sent.end());
    if (sent.size() != expected_sent || std::adjacent_find(sent.begin(), sent.end()) != sent.end())
        return fail("every valid address must get exactly one e-mail");
    if (stats.redelivered != expected_503 || provider.answered_503() != expected_503)
        return fail("every 503 must be retried once, through a retry queue");
    if (provider.answered_422() != 1 || stats.dead_lettered != 1 || stats.acked != expected_sent)
        return fail("the invalid address must be dead-lettered, the others acked");
    if (!entries || entries->size() != 1 || entries->front().reason != "permanent-failure" ||
        entries->front().attempts != 1 ||
        entries->front().exception_type.find("address_rejected") == std::string::npos)
        return fail("the DLQ must hold the invalid address, with reason permanent-failure");
    return 0;
}

std::uint64_t seed_from_environment() {
    const char* text = std::getenv("LETTERBOX_SEED");
    if (text == nullptr || *text == '\0')
        return 64;
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
            // A queue of our own on a broker that may be shared (CI runs tests in parallel).
            char suffix[16];
            std::snprintf(suffix, sizeof suffix, "%08x", std::random_device{}());
            amqp::transport transport(io.get_executor(), u);
            return run_scenario(transport, io, clock, "welcome-emails." + std::string(suffix),
                                seed);
        }
        std::printf("transport: in-memory (no LETTERBOX_AMQP_URL)\nLETTERBOX_SEED=%llu\n",
                    static_cast<unsigned long long>(seed));
        in_memory::broker broker(io.get_executor(), clock);
        in_memory::transport transport(broker, "welcome-email-worker");
        return run_scenario(transport, io, clock, "welcome-emails", seed);
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
//   registered 5 users
//   sent 4 e-mails
//   retried [0-9]+ transient failures
//   dead-lettered 1: dave\.example\.com reason=permanent-failure attempts=1
//   exception: mail::address_rejected: e-mail API answered 422
//   worker: delivered [0-9]+, acked 4, redelivered [0-9]+, dead-lettered 1
