// SPDX-License-Identifier: BSL-1.0
// Runs the transport conformance suite against in_memory::transport.

#include <letterbox/testing/transport_suite.hpp>
#include <letterbox/transport/in_memory.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <tuple>

namespace conformance_in_memory_transport {

namespace {

//[in_memory_transport_fixture
/// One broker on a single-threaded io_context per test case. The io_context runs only inside
/// run_until, on the suite's thread; other threads may initiate operations (they post).
struct in_memory_transport_fixture {
    static constexpr letterbox::testing::transport_features features{
        .guaranteed_order = true,
        .guaranteed_order_with_single_subscriber = true,
        .persistent = true,
        .exactly_once_delivery = false,
        .redelivery_on_nack = true,
        .restartable = true,
        .size = letterbox::testing::suite_size::short_sizes,
        .timeout = std::chrono::seconds{10},
        .quiet_period = std::chrono::milliseconds{20},
    };

    letterbox::in_memory::transport make() { return letterbox::in_memory::transport(broker_); }

    bool run_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!done()) {
            const auto now = std::chrono::steady_clock::now();
            if (now >= deadline)
                return false;
            // The work guard keeps run_one_for waiting for posts from other threads instead
            // of returning when the queue is momentarily empty.
            io_.run_one_for(deadline - now);
        }
        return true;
    }

    std::string unique_name(std::string_view stem) { return names_(stem); }

    void restart_broker() { broker_.restart(); }

private:
    boost::asio::io_context io_{};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
        io_.get_executor()};
    letterbox::in_memory::broker broker_{io_.get_executor()};
    letterbox::testing::unique_names names_{};
};
//]

static_assert(letterbox::testing::transport_suite_fixture<in_memory_transport_fixture>);

using in_memory_transport_fixtures = std::tuple<in_memory_transport_fixture>;

} // namespace

LETTERBOX_TRANSPORT_SUITE(in_memory_transport_fixtures)

} // namespace conformance_in_memory_transport
