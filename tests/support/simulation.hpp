// SPDX-License-Identifier: BSL-1.0
#pragma once

// The one-thread world that the in-memory tests run in: a single-threaded io_context, a
// virtual clock, and the in-memory broker on both. Time moves only when the driver moves it,
// so a test never sleeps and a run is deterministic.

#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/virtual_clock.hpp>

#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <system_error>
#include <utility>

namespace test_support {

struct simulation {
    boost::asio::io_context io;
    letterbox::virtual_clock clock;
    letterbox::in_memory::broker broker{io.get_executor(), clock};

    /// Runs ready handlers one at a time; when none is ready, moves virtual time to the next
    /// deadline. True when `done()` holds; false when nothing is left to run first, or after
    /// `max_steps` steps.
    bool drive_until(const std::function<bool()>& done, std::size_t max_steps = 2'000'000) {
        for (std::size_t step = 0; step < max_steps; ++step) {
            if (done())
                return true;
            io.restart();
            if (io.poll_one() == 0 && !clock.advance_to_next())
                return done();
        }
        return done();
    }

    /// Runs everything ready now, then moves virtual time forward by `d`, firing what falls
    /// due on the way (and running what that makes ready).
    void run_for(std::chrono::nanoseconds d) {
        const auto end = clock.now() + d;
        for (int step = 0; step < 100'000; ++step) {
            run_ready();
            const auto next = clock.next_deadline();
            if (!next || *next > end)
                break;
            clock.advance_to(*next);
        }
        clock.advance_to(end);
        run_ready();
    }

    /// Starts `op` with a `void(std::error_code)` completion, drives until it completes, and
    /// returns its error code.
    template <class Op>
    std::error_code await(Op op) {
        std::optional<std::error_code> result;
        op([&result](std::error_code ec) { result = ec; });
        REQUIRE(drive_until([&] { return result.has_value(); }));
        return *result;
    }

    /// The same for a `void(std::error_code, R)` completion.
    template <class R, class Op>
    std::pair<std::error_code, R> await2(Op op) {
        std::optional<std::pair<std::error_code, R>> result;
        op([&result](std::error_code ec, R r) { result.emplace(ec, std::move(r)); });
        REQUIRE(drive_until([&] { return result.has_value(); }));
        return std::move(*result);
    }

private:
    void run_ready() {
        io.restart();
        for (int i = 0; i < 1'000'000 && io.poll_one() != 0; ++i) {
        }
    }
};

} // namespace test_support
