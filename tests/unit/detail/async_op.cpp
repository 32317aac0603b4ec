// SPDX-License-Identifier: BSL-1.0
// The operation base: where completions run, outstanding work, the associated allocator, and
// cancellation through the associated slot, alone and under parallel_group and ||.
#include <letterbox/detail/async_op.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <variant>

namespace unit_detail_async_op {

namespace {

using letterbox::detail::async_op;
using letterbox::detail::async_start;
using letterbox::detail::outstanding_work;
using signature = void(std::error_code, std::string);
using op_type = async_op<signature>;

bool canceled(std::error_code ec) {
    return ec == std::errc::operation_canceled;
}

/// An owner whose operations wait until the test completes them: `parked` holds the last one.
struct owner {
    boost::asio::io_context io;
    boost::asio::strand<boost::asio::io_context::executor_type> strand{io.get_executor()};
    std::optional<op_type> parked;
    int starts = 0;

    template <outstanding_work Work = outstanding_work::tracked, class Token>
    auto async_wait_for_test(Token&& token) {
        return async_start<signature, Work>(std::forward<Token>(token), strand, [this](op_type op) {
            ++starts;
            parked = op;
        });
    }

    /// One that waits, and completes with `operation_canceled` when cancelled while it waits.
    //[async_start_shape
    template <class Token>
    auto async_wait_cancellable(Token&& token) {
        return async_start<signature>(std::forward<Token>(token), strand, [this](op_type op) {
            ++starts;
            op.on_cancel([](op_type cancelled) { cancelled.cancelled(); });
            parked = op;
        });
    }
    //]

    /// An operation that completes as soon as it starts.
    template <class Token>
    auto async_now(std::string value, Token&& token) {
        return async_start<signature>(std::forward<Token>(token), strand,
                                      [this, value](op_type op) {
                                          ++starts;
                                          op(std::error_code{}, value);
                                      });
    }

    void poll() {
        io.restart();
        while (io.poll() != 0) {
        }
    }
};

struct result {
    int calls = 0;
    std::error_code ec;
    std::string value;
    auto handler() {
        return [this](std::error_code e, std::string v) {
            ++calls;
            ec = e;
            value = std::move(v);
        };
    }
};

/// Counts what is allocated through it.
template <class T>
struct counting_allocator {
    using value_type = T;
    std::size_t* count;
    explicit counting_allocator(std::size_t* c) noexcept
        : count(c) {}
    template <class U>
    counting_allocator(const counting_allocator<U>& o) noexcept
        : count(o.count) {}
    T* allocate(std::size_t n) {
        ++*count;
        return std::allocator<T>().allocate(n);
    }
    void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
    template <class U>
    bool operator==(const counting_allocator<U>& o) const noexcept {
        return count == o.count;
    }
};

/// An operation of an owner, waiting (started and parked), with a cancellation slot bound.
struct parked_wait {
    owner o;
    result r;
    boost::asio::cancellation_signal signal;

    parked_wait() {
        o.async_wait_for_test(boost::asio::bind_cancellation_slot(signal.slot(), r.handler()));
        o.poll();
        REQUIRE(o.parked);
    }
};

} // namespace

TEST_CASE("an operation completes on the handler's executor, never inside the initiating call",
          "[async_op]") {
    owner o;
    boost::asio::io_context other;
    result r;
    bool on_other = false;
    o.async_now("x", boost::asio::bind_executor(other, [&](std::error_code ec, std::string v) {
                    on_other = other.get_executor().running_in_this_thread();
                    r.handler()(ec, std::move(v));
                }));
    CHECK(r.calls == 0);
    o.poll();
    CHECK(o.starts == 1);
    CHECK(r.calls == 0); // posted to `other`, which has not run
    other.poll();
    CHECK(r.calls == 1);
    CHECK(on_other);
    CHECK(r.value == "x");
}

TEST_CASE("a pending operation keeps its executor's run() going, unless it is untracked",
          "[async_op]") {
    SECTION("tracked") {
        owner o;
        result r;
        o.async_wait_for_test(r.handler());
        o.poll();
        REQUIRE(o.parked);
        CHECK_FALSE(o.io.stopped()); // outstanding work: run() would wait
        (*o.parked)(std::error_code{}, "done");
        o.poll();
        CHECK(r.calls == 1);
        CHECK(o.io.stopped()); // the work ended with the completion
    }
    SECTION("untracked") {
        owner o;
        result r;
        o.async_wait_for_test<outstanding_work::untracked>(r.handler());
        o.poll();
        REQUIRE(o.parked);
        CHECK(o.io.stopped()); // nothing keeps run() going
        CHECK(r.calls == 0);
    }
}

TEST_CASE("an operation allocates with the handler's associated allocator", "[async_op]") {
    owner o;
    result r;
    std::size_t allocations = 0;
    o.async_now("x",
                boost::asio::bind_allocator(counting_allocator<void>(&allocations), r.handler()));
    o.poll();
    CHECK(r.calls == 1);
    CHECK(allocations >= 1);
}

TEST_CASE("a cancellation before the start completes with operation_canceled and starts nothing",
          "[async_op][cancellation]") {
    for (auto type :
         {boost::asio::cancellation_type::terminal, boost::asio::cancellation_type::partial,
          boost::asio::cancellation_type::total}) {
        owner o;
        result r;
        boost::asio::cancellation_signal signal;
        o.async_now("x", boost::asio::bind_cancellation_slot(signal.slot(), r.handler()));
        signal.emit(type);
        o.poll();
        CHECK(o.starts == 0);
        CHECK(r.calls == 1);
        CHECK(canceled(r.ec));
        CHECK(r.value.empty());
        CHECK_FALSE(signal.slot().has_handler()); // cleared before the handler ran
    }
}

TEST_CASE("a terminal cancellation of a waiting operation runs what it registered, once",
          "[async_op][cancellation]") {
    parked_wait w;
    auto& [o, r, signal] = w;
    bool on_strand = false;
    // (clang 14 cannot capture a structured binding: name the strand for the lambda)
    auto& strand = o.strand;
    o.parked->on_cancel([&](op_type op) {
        on_strand = strand.running_in_this_thread();
        op(std::make_error_code(std::errc::timed_out), "cancelled");
    });
    signal.emit(boost::asio::cancellation_type::terminal);
    o.poll();
    CHECK(on_strand);
    CHECK(r.calls == 1);
    CHECK(r.ec == std::errc::timed_out);
    CHECK(r.value == "cancelled");
    CHECK_FALSE(signal.slot().has_handler());
    // The normal completion, arriving later, is ignored.
    (*o.parked)(std::error_code{}, "late");
    o.poll();
    CHECK(r.calls == 1);
    CHECK(r.value == "cancelled");
}

TEST_CASE("a waiting operation ignores partial and total cancellation, and none registered",
          "[async_op][cancellation]") {
    parked_wait w;
    auto& [o, r, signal] = w;
    int hooks = 0;
    o.parked->on_cancel([&](op_type) { ++hooks; });
    signal.emit(boost::asio::cancellation_type::partial);
    signal.emit(boost::asio::cancellation_type::total);
    o.poll();
    CHECK(hooks == 0);
    CHECK(r.calls == 0);
    (*o.parked)(std::error_code{}, "normal");
    o.poll();
    CHECK(r.calls == 1);
    CHECK(r.value == "normal");

    // Without a hook, a terminal signal leaves the operation to complete normally.
    parked_wait w2;
    auto& [o2, r2, signal2] = w2;
    signal2.emit(boost::asio::cancellation_type::terminal);
    o2.poll();
    CHECK(r2.calls == 0);
    (*o2.parked)(std::error_code{}, "normal");
    o2.poll();
    CHECK(r2.calls == 1);
    CHECK_FALSE(r2.ec);
}

TEST_CASE("complete_then runs its continuation on the owner after the handler", "[async_op]") {
    owner o;
    std::string trace;
    async_start<signature>(
        [&](std::error_code, std::string) { trace += "handler;"; }, o.strand,
        [&](op_type op) {
            op.complete_then([&] { trace += o.strand.running_in_this_thread() ? "then;" : "?"; },
                             std::error_code{}, "x");
        });
    o.poll();
    CHECK(trace == "handler;then;");
}

TEST_CASE("parallel_group cancels the operation that did not finish first",
          "[async_op][cancellation]") {
    owner o;
    std::optional<std::error_code> waited;
    std::string quick;
    std::array<std::size_t, 2> order{};
    boost::asio::experimental::make_parallel_group(
        [&](auto token) { return o.async_wait_cancellable(token); },
        [&](auto token) { return o.async_now("quick", token); })
        .async_wait(boost::asio::experimental::wait_for_one(),
                    [&](std::array<std::size_t, 2> completed, std::error_code e1, std::string,
                        std::error_code, std::string v2) {
                        order = completed;
                        waited = e1;
                        quick = v2;
                    });
    o.poll();
    REQUIRE(waited);
    CHECK(canceled(*waited));
    CHECK(quick == "quick");
    CHECK(order == std::array<std::size_t, 2>{1, 0});
    REQUIRE(o.parked);
    CHECK(o.parked->done());
}

TEST_CASE("|| on awaitables cancels the losing operation", "[async_op][cancellation]") {
    // With boost::system::error_code first, use_awaitable throws on an error, as Beast's
    // operations do.
    using namespace boost::asio::experimental::awaitable_operators;
    using awaitable_signature = void(boost::system::error_code, std::string);
    using awaitable_op = async_op<awaitable_signature>;
    owner o;
    std::optional<std::variant<std::string, std::string>> outcome;
    std::optional<awaitable_op> parked;
    int cancel_hooks = 0;
    auto waiting = [&]() -> boost::asio::awaitable<std::string> {
        co_return co_await async_start<awaitable_signature>(
            boost::asio::use_awaitable, o.strand, [&](awaitable_op op) {
                op.on_cancel([&](awaitable_op cancelled) {
                    ++cancel_hooks;
                    cancelled.cancelled();
                });
                parked = op;
            });
    };
    auto quick = [&]() -> boost::asio::awaitable<std::string> {
        co_return co_await async_start<awaitable_signature>(
            boost::asio::use_awaitable, o.strand,
            [](awaitable_op op) { op(boost::system::error_code{}, "quick"); });
    };
    boost::asio::co_spawn(
        o.io, [&]() -> boost::asio::awaitable<void> { outcome = co_await (waiting() || quick()); },
        boost::asio::detached);
    o.poll();
    REQUIRE(outcome);
    CHECK(outcome->index() == 1);
    CHECK(std::get<1>(*outcome) == "quick");
    CHECK(cancel_hooks == 1);
    REQUIRE(parked);
    CHECK(parked->done());
}

TEST_CASE("a cancelled operation with boost::system::error_code completes with operation_aborted",
          "[async_op][cancellation]") {
    owner o;
    boost::system::error_code got;
    int calls = 0;
    boost::asio::cancellation_signal signal;
    async_start<void(boost::system::error_code)>(
        boost::asio::bind_cancellation_slot(signal.slot(),
                                            [&](boost::system::error_code ec) {
                                                ++calls;
                                                got = ec;
                                            }),
        o.strand, [](async_op<void(boost::system::error_code)> op) { op({}); });
    signal.emit(boost::asio::cancellation_type::terminal);
    o.poll();
    CHECK(calls == 1);
    CHECK(got == boost::asio::error::operation_aborted);
}

} // namespace unit_detail_async_op
