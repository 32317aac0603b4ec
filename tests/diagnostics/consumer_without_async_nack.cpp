// SPDX-License-Identifier: BSL-1.0
// A transport that opts in but has no async_nack.
#include <letterbox/consumer.hpp>
#include <letterbox/testing/archetypes/transport.hpp>

// expect: letterbox::transport: missing `async_nack(const delivery&, bool requeue, token)`

struct my_transport : letterbox::testing::transport_archetype {
    template <class... Args>
    void async_nack(Args&&...) = delete;
};

void start(my_transport& t) {
    letterbox::consumer c(t, [](const letterbox::message&) {});
}
