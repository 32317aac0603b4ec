// SPDX-License-Identifier: BSL-1.0
// A coroutine handler.
#include <letterbox/consumer.hpp>
#include <letterbox/testing/archetypes/transport.hpp>

#include <boost/asio/awaitable.hpp>

// expect: letterbox: the handler is a coroutine (it returns an awaitable)

void start(letterbox::testing::transport_archetype& t) {
    letterbox::consumer c(
        t, [](const letterbox::message&) -> boost::asio::awaitable<void> { co_return; });
}
