// SPDX-License-Identifier: BSL-1.0
#pragma once

// The broker of the integration tests (LETTERBOX_AMQP_URL), the transport suite's fixture for
// amqp::transport, a way to wait for one operation on it, and the tally of a publish stream's
// outcomes when a broker dies under it; shared by the AMQP integration tests.

#include <letterbox/amqp/transport.hpp>

#include <letterbox/testing/transport_suite.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace amqp_test {

/// The broker URL from the environment; fails the test case when it is missing.
inline std::string broker_url() {
    const char* url = std::getenv("LETTERBOX_AMQP_URL");
    if (url == nullptr || *url == '\0')
        FAIL("LETTERBOX_AMQP_URL is not set: start a broker with `export $(tests/tools/rabbitmq.sh "
             "start)` (or run through `tests/tools/rabbitmq.sh run -- ...`) and run again");
    return url;
}

/// The command line of `rabbitmqctl -q <args>` against the broker tests/tools/rabbitmq.sh started
/// (its state directory is LETTERBOX_RABBITMQ_DIR), with the environment that script gives its
/// CLI calls; empty when the directory is unknown.
inline std::string rabbitmqctl_command(const std::string& args) {
    const char* dir = std::getenv("LETTERBOX_RABBITMQ_DIR");
    if (dir == nullptr || *dir == '\0')
        return {};
    std::ifstream state(std::string(dir) + "/state");
    std::string line;
    std::string node;
    while (std::getline(state, line))
        if (line.rfind("node=", 0) == 0)
            node = line.substr(5);
    if (node.empty())
        return {};
    const std::string d(dir);
    return "env HOME='" + d + "/home' RABBITMQ_CONF_ENV_FILE='" + d +
           "/rabbitmq-env.conf' RABBITMQ_NODENAME='" + node +
           "' ERL_EPMD_ADDRESS=127.0.0.1 'RABBITMQ_CTL_ERL_ARGS=-kernel inet_dist_use_interface "
           "{127,0,0,1}' timeout 60 /usr/lib/rabbitmq/bin/rabbitmqctl -q " +
           args;
}

/// Runs `rabbitmqctl -q <args>` (see `rabbitmqctl_command`); false when the directory is
/// unknown or the command fails.
inline bool rabbitmqctl(const std::string& args) {
    const auto command = rabbitmqctl_command(args);
    return !command.empty() && std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

/// Evaluates the Erlang expression `expr` (no single quote in it) on the broker with
/// `rabbitmqctl eval`; what it printed, or std::nullopt when the call failed.
inline std::optional<std::string> rabbitmqctl_eval(const std::string& expr) {
    const auto command = rabbitmqctl_command("eval '" + expr + "'");
    if (command.empty())
        return std::nullopt;
    FILE* p = popen((command + " 2>/dev/null").c_str(), "r");
    if (p == nullptr)
        return std::nullopt;
    std::string out;
    std::array<char, 256> buf{};
    while (std::fgets(buf.data(), static_cast<int>(buf.size()), p) != nullptr)
        out += buf.data();
    if (pclose(p) != 0)
        return std::nullopt;
    return out;
}

/// Whether rabbitmqctl can reach the broker; warns (the test is then skipped) when it cannot.
inline bool broker_is_controllable() {
    if (std::getenv("LETTERBOX_RABBITMQ_DIR") != nullptr)
        return true;
    WARN("skipped: LETTERBOX_RABBITMQ_DIR is not set (the broker was not started by "
         "tests/tools/rabbitmq.sh), so rabbitmqctl cannot reach it");
    return false;
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

/// How the publishes of a stream ended when its broker died under it: confirmed; sent and lost
/// before their confirm (`outcome_unknown`: never reported as a success it might not be);
/// refused unsent (`connection_closed`); and anything else, which no test expects.
struct publish_outcomes {
    std::size_t confirmed = 0;
    std::size_t unknown = 0;
    std::size_t unsent = 0;
    std::vector<std::string> unexpected; // "body: message"

    std::string summary() const {
        std::string text = std::to_string(confirmed) + " confirmed, " + std::to_string(unknown) +
                           " outcome_unknown, " + std::to_string(unsent) + " refused unsent";
        for (const auto& u : unexpected)
            text += "; unexpected: " + u;
        return text;
    }
};

/// Tallies `outcome` (each body's completion code, once it has one).
inline publish_outcomes
tally_outcomes(const std::map<std::string, std::optional<std::error_code>>& outcome) {
    publish_outcomes t;
    for (const auto& [body, ec] : outcome) {
        if (!ec)
            t.unexpected.push_back(body + ": no outcome yet");
        else if (!*ec)
            ++t.confirmed;
        else if (*ec == letterbox::errc::outcome_unknown)
            ++t.unknown;
        else if (*ec == letterbox::errc::connection_closed)
            ++t.unsent;
        else
            t.unexpected.push_back(body + ": " + ec->message());
    }
    return t;
}

/// The confirmed bodies of `outcome` that `seen` (the bodies a consumer received) lacks: what an
/// at-least-once check waits to see empty, and what it reports, up to 8 of them, if it is not.
struct missing_bodies {
    std::vector<std::string> bodies;

    template <class Seen>
    missing_bodies(const std::map<std::string, std::optional<std::error_code>>& outcome,
                   const Seen& seen) {
        for (const auto& [body, ec] : outcome)
            if (ec && !*ec && !seen.contains(body))
                bodies.push_back(body);
    }
    bool empty() const { return bodies.empty(); }
    std::string summary() const {
        std::string text = std::to_string(bodies.size()) + " confirmed bodies never seen (";
        for (std::size_t i = 0; i < bodies.size() && i < 8; ++i)
            text += " " + bodies[i];
        return text + " )";
    }
};

} // namespace amqp_test
