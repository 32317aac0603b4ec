// SPDX-License-Identifier: BSL-1.0
// A coroutine handler that returns a bool instead of void or an error code.
#include <letterbox/consumer.hpp>
#include <letterbox/testing/archetypes/transport.hpp>

#include <boost/asio/awaitable.hpp>

// expect: letterbox: a coroutine handler returns asio::awaitable<void> or

void start(letterbox::testing::transport_archetype& t) {
    letterbox::consumer c(
        t, [](const letterbox::message&) -> boost::asio::awaitable<bool> { co_return true; });
}
