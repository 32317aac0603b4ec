// SPDX-License-Identifier: BSL-1.0
#pragma once

// The broker of the integration tests (LETTERBOX_AMQP_URL), the transport suite's fixture for
// amqp::transport, and a way to wait for one operation on it; shared by the AMQP integration
// tests.

#include <letterbox/amqp/transport.hpp>

#include <letterbox/testing/transport_suite.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace amqp_test {

/// The broker URL from the environment; fails the test case when it is missing.
inline std::string broker_url() {
    const char* url = std::getenv("LETTERBOX_AMQP_URL");
    if (url == nullptr || *url == '\0')
        FAIL("LETTERBOX_AMQP_URL is not set: start a broker with `export $(tests/tools/rabbitmq.sh "
             "start)` (or run through `tests/tools/rabbitmq.sh run -- ...`) and run again");
    return url;
}

//[amqp_transport_fixture
/// A real broker per test case (the same one for all), reached through a single-threaded
/// io_context that runs only inside run_until, on the suite's thread.
struct amqp_transport_fixture {
    static constexpr letterbox::testing::transport_features features{
        .guaranteed_order = true,
        .guaranteed_order_with_single_subscriber = true,
        .persistent = true,
        .exactly_once_delivery = false,
        .redelivery_on_nack = true,
        .restartable = false,
        .size = letterbox::testing::suite_size::short_sizes,
        .timeout = std::chrono::seconds{20},
        .quiet_period = std::chrono::milliseconds{200},
        // A shared broker forgets the suite's queues ten minutes after a run.
        .queue_expires = std::chrono::minutes{10},
    };

    letterbox::amqp::transport make(letterbox::amqp::transport_options options = {}) {
        return letterbox::amqp::transport(io_.get_executor(), url_, std::move(options));
    }

    bool run_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!done()) {
            const auto now = std::chrono::steady_clock::now();
            if (now >= deadline)
                return false;
            io_.run_one_for(deadline - now);
        }
        return true;
    }

    std::string unique_name(std::string_view stem) { return names_(stem); }

    boost::asio::io_context& io() { return io_; }

private:
    std::string url_ = broker_url();
    boost::asio::io_context io_{};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
        io_.get_executor()};
    letterbox::testing::unique_names names_{"letterbox.amqp"};
};
//]

/// Starts an operation that completes with a `std::error_code` (`start(handler)`), runs `fx`
/// until it completes (at most 20 s, then the test case fails) and returns that code.
template <class Start>
std::error_code await(amqp_transport_fixture& fx, Start&& start) {
    std::optional<std::error_code> r;
    std::forward<Start>(start)([&r](std::error_code ec) { r = ec; });
    REQUIRE(fx.run_until([&r] { return r.has_value(); }, std::chrono::seconds{20}));
    return *r;
}

} // namespace amqp_test
