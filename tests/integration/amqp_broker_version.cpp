// SPDX-License-Identifier: BSL-1.0
// The broker version amqp::transport reads from a real RabbitMQ's connection.start (the broker
// LETTERBOX_AMQP_URL names; tests/tools/rabbitmq.sh starts one): the version the installed
// package says, and its broker profile. Hidden ([.integration]); fails clearly when the variable
// is not set.

#include <letterbox/amqp/transport.hpp>
#include <letterbox/amqp/transport_event.hpp>
#include <letterbox/amqp/transport_options.hpp>
#include <letterbox/ops/connection_check.hpp>
#include <letterbox/transport/in_memory/profile_for_version.hpp>

#include "amqp_broker.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace integration_amqp_broker_version {

namespace {

/// The `major.minor.patch` of the installed rabbitmq-server package (Debian's version without
/// its revision, "3.10.8" from "3.10.8-1.1+deb12u1"); empty when dpkg-query cannot tell.
std::string installed_rabbitmq_version() {
    FILE* p = popen("dpkg-query -W -f='${Version}' rabbitmq-server 2>/dev/null", "r");
    if (p == nullptr)
        return {};
    std::string out;
    std::array<char, 128> buf{};
    while (std::fgets(buf.data(), static_cast<int>(buf.size()), p) != nullptr)
        out += buf.data();
    if (pclose(p) != 0)
        return {};
    return out.substr(0, out.find_first_of("-+~ \n"));
}

/// "3.10" of "3.10.8".
std::string major_minor(const std::string& version) {
    const auto first = version.find('.');
    return version.substr(0, version.find('.', first == std::string::npos ? 0 : first + 1));
}

} // namespace

TEST_CASE("amqp transport: the real broker's version is the installed RabbitMQ's, and its "
          "profile is that version's",
          "[.integration][amqp][broker_version]") {
    amqp_test::amqp_transport_fixture f;
    std::vector<letterbox::amqp::transport_event::kind> events;
    letterbox::amqp::transport_options options;
    options.on_event = [&events](const letterbox::amqp::transport_event& e) {
        events.push_back(e.what);
    };
    auto t = f.make(options);
    REQUIRE(
        f.run_until([&] { return t.is_connected() && !events.empty(); }, std::chrono::seconds{20}));
    const auto b = t.broker();
    REQUIRE(b);
    INFO("the broker says " << b->describe());
    CHECK(b->product == "RabbitMQ");
    CHECK(b->exact);
    CHECK(b->note.empty());
    CHECK(b->profile.name == letterbox::in_memory::profile_for_version(b->version).profile.name);
    CHECK(events == std::vector{letterbox::amqp::transport_event::kind::broker_identified});

    const auto installed = installed_rabbitmq_version();
    if (installed.empty()) {
        WARN("dpkg-query does not know rabbitmq-server: the version is not compared");
    } else {
        INFO("the installed package is " << installed);
        CHECK(major_minor(b->version) == major_minor(installed));
        // Debian 12's RabbitMQ, the baseline every profile is described against.
        if (major_minor(installed) == "3.10")
            CHECK(b->profile.name == "3.10");
    }

    const auto ready = letterbox::ops::connection_check(t)();
    CHECK(ready.ok);
    CHECK(ready.detail == "connected to " + b->describe());

    std::optional<std::error_code> closed;
    t.async_close([&](std::error_code ec) { closed = ec; });
    REQUIRE(f.run_until([&] { return closed.has_value(); }, std::chrono::seconds{20}));
    CHECK(*closed == std::error_code{});
}

} // namespace integration_amqp_broker_version
