// SPDX-License-Identifier: BSL-1.0
#pragma once

// The one-thread world that the in-memory tests run in: a single-threaded io_context, a
// virtual clock, and the in-memory broker on both, as plain members (the public
// letterbox::testing::simulation has the same loop, behind accessors). Time moves only when the
// driver moves it, so a test never sleeps and a run is deterministic.

#include <letterbox/testing/simulation.hpp>
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
    simulation() = default;
    /// A broker made with `options` (another profile, a short consumer timeout, ...).
    explicit simulation(letterbox::in_memory::broker_options options)
        : broker{io.get_executor(), clock, std::move(options)} {}

    boost::asio::io_context io;
    letterbox::virtual_clock clock;
    letterbox::in_memory::broker broker{io.get_executor(), clock};

    /// letterbox::testing::drive_until on this world (a smaller default bound).
    bool drive_until(const std::function<bool()>& done, std::size_t max_steps = 2'000'000) {
        return letterbox::testing::drive_until(io, clock, done, max_steps);
    }

    /// letterbox::testing::run_for on this world.
    void run_for(std::chrono::nanoseconds d) { letterbox::testing::run_for(io, clock, d); }

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
};

} // namespace test_support
