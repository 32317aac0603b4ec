// SPDX-License-Identifier: BSL-1.0
//
// Example 15: request/reply, a price-quote service with one slow answer.
//
//   client --quotes: A-1, B-2, SLOW-9--> [quotes] --> consumer + responder
//      ^                                                   |
//      +---- replies (correlation id) <---- direct reply-to +
//
// 1. The service. A consumer of the `quotes` queue runs a responder: a function from a request
//    to its reply, which replies to the request's `reply_to` with its correlation id. The SKU
//    SLOW-9 is priced after 600 ms (a coroutine waiting on a timer in front of the responder:
//    the responder composes like any handler).
// 2. The client. A request client asks for three quotes, each with a timeout of 300 ms. A-1 and
//    B-2 are answered; SLOW-9 ends with `errc::timed_out` at 300 ms. Its reply comes 300 ms
//    later: the client drops it and counts it as late; it is never handed to another request.
//
// Replies come by RabbitMQ's direct reply-to (`amq.rabbitmq.reply-to`): no reply queue is
// declared. The transport is RabbitMQ when LETTERBOX_AMQP_URL (or --url) names a broker,
// otherwise the in-memory RabbitMQ model, which models direct reply-to too. The program checks
// its own outcome and exits non-zero, with `MISMATCH: ...` on stderr, when it is wrong.
//
// Needs: the amqp component (-DLETTERBOX_WITH_AMQP=ON).
// Run: build/release/examples/example_15_request_reply [--url amqp://...]
#include <letterbox/amqp.hpp>
#include <letterbox/letterbox.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
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

using namespace letterbox;
using namespace std::chrono_literals;

namespace {

namespace asio = boost::asio;
using time_point = std::chrono::steady_clock::time_point;

int fail(const std::string& what) {
    std::fprintf(stderr, "MISMATCH: %s\n", what.c_str());
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

template <class Start>
std::error_code await(asio::io_context& io, time_point deadline, Start start) {
    auto result = std::make_shared<std::optional<std::error_code>>();
    start([result](std::error_code ec) { *result = ec; });
    if (!run_until(io, deadline, [&] { return result->has_value(); }))
        return make_error_code(errc::timed_out);
    return **result;
}

const std::map<std::string, std::string> prices{
    {"A-1", "12.50"}, {"B-2", "7.00"}, {"SLOW-9", "99.00"}};

template <class Transport>
int run_scenario(Transport& t, asio::io_context& io, letterbox::steady_clock& clock,
                 const std::string& queue) {
    auto work = asio::make_work_guard(io);
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    topology::queue q;
    q.name = queue;
    if (auto ec = await(io, deadline, [&](auto h) { t.async_declare(q, h); }))
        return fail("declare: " + ec.message());

    std::printf("1. the quote service\n");
    //[responder
    auto quote = responder(t, [](const message& request) {
        message reply;
        reply.body = prices.at(request.body);
        return reply;
    });
    // SLOW-9 takes 600 ms to price; the responder runs after the wait, as any inner handler.
    auto slow_then_quote = [&](const message& request) -> asio::awaitable<void> {
        if (request.body == "SLOW-9") {
            asio::steady_timer pricing(co_await asio::this_coro::executor, 600ms);
            co_await pricing.async_wait(asio::use_awaitable);
        }
        co_await quote(request, asio::use_awaitable);
    };
    consumer service(t, slow_then_quote, clock, {.consume = {.queue = queue}});
    //]
    bool started = false;
    service.async_start([&](std::error_code ec, const std::string&) { started = !ec; });
    if (!run_until(io, deadline, [&] { return started; }))
        return fail("the service did not start");

    std::printf("2. the client: three quotes, 300 ms each\n");
    //[request_client
    request_client client(t, clock); // direct reply-to when the transport takes it
    //]
    if (auto ec = await(io, deadline, [&](auto h) { client.async_start(h); }))
        return fail("client start: " + ec.message());
    std::printf("   replies come to: %s\n", client.reply_to().c_str());

    std::map<std::string, std::string> outcome;
    for (const std::string sku : {"A-1", "B-2", "SLOW-9"}) {
        //[request
        message ask;
        ask.routing_key = queue;
        ask.body = sku;
        client.async_request(ask, 300ms, [&outcome, sku](error_code ec, message reply) {
            outcome[sku] = ec ? "no quote (" + ec.message() + ")" : reply.body;
        });
        //]
    }
    if (!run_until(io, deadline, [&] { return outcome.size() == 3; }))
        return fail("a request never ended");
    for (const auto& [sku, text] : outcome)
        std::printf("   %s: %s\n", sku.c_str(), text.c_str());
    if (outcome["A-1"] != "12.50" || outcome["B-2"] != "7.00")
        return fail("a quick quote was not answered");
    if (outcome["SLOW-9"] != "no quote (" + make_error_code(errc::timed_out).message() + ")")
        return fail("the slow quote did not time out");

    // The slow reply arrives about 300 ms after its request gave up.
    if (!run_until(io, deadline, [&] { return client.stats().late_replies == 1; }))
        return fail("the late reply never came");
    const auto s = client.stats();
    std::printf("   the late reply to SLOW-9 was dropped: late replies %llu\n",
                static_cast<unsigned long long>(s.late_replies));
    std::printf("   requests %llu, replied %llu, timed out %llu, unknown replies %llu\n",
                static_cast<unsigned long long>(s.requests),
                static_cast<unsigned long long>(s.replied),
                static_cast<unsigned long long>(s.timed_out),
                static_cast<unsigned long long>(s.unknown_replies));
    if (s.requests != 3 || s.replied != 2 || s.timed_out != 1 || s.unknown_replies != 0)
        return fail("the client's counters");
    if (!run_until(io, deadline, [&] { return quote.stats().replied == 3; }))
        return fail("the service did not send its three replies");
    std::printf("   the service replied %llu times\n",
                static_cast<unsigned long long>(quote.stats().replied));
    if (await(io, deadline, [&](auto h) { client.async_stop(h); }))
        return fail("client stop");
    return 0;
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
    try {
        asio::io_context io;
        letterbox::steady_clock clock;
        if (!url.empty()) {
            const auto u = amqp::parse_url(url);
            std::printf("transport: amqp (%s)\n", u.redacted().c_str());
            // A queue of our own on a broker that may be shared (CI runs tests in parallel).
            char suffix[16];
            std::snprintf(suffix, sizeof suffix, ".%08x", std::random_device{}());
            amqp::transport transport(io.get_executor(), u);
            return run_scenario(transport, io, clock, std::string("quotes") + suffix);
        }
        std::printf("transport: in-memory (no LETTERBOX_AMQP_URL)\n");
        in_memory::broker broker(io.get_executor(), clock);
        in_memory::transport transport(broker, "request-reply");
        return run_scenario(transport, io, clock, "quotes");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "MISMATCH: %s\n", e.what());
        return 1;
    }
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   ^transport: (in-memory|amqp)
//   1. the quote service
//   2. the client: three quotes, 300 ms each
//   replies come to: amq.rabbitmq.reply-to
//   12.50
//   B-2: 7.00
//   SLOW-9: no quote \(timed out\)
//   the late reply to SLOW-9 was dropped: late replies 1
//   requests 3, replied 2, timed out 1, unknown replies 0
//   the service replied 3 times
