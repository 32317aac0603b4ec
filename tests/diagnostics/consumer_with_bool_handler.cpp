// SPDX-License-Identifier: BSL-1.0
// A handler that returns bool for success.
#include <letterbox/consumer.hpp>
#include <letterbox/testing/archetypes/transport.hpp>

// expect: letterbox: a handler or an effect returns void or std::error_code
// expect: (a bool?)

void start(letterbox::testing::transport_archetype& t) {
    letterbox::consumer c(t, [](const letterbox::message& m) { return !m.body.empty(); });
}
