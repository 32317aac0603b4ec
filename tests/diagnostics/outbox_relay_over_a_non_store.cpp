// SPDX-License-Identifier: BSL-1.0
// A relay over something that is not an outbox store.
#include <letterbox/outbox/outbox_relay.hpp>
#include <letterbox/testing/archetypes/transport.hpp>
#include <letterbox/virtual_clock.hpp>

// expect: letterbox::outbox_store: the type does not opt in

struct my_store {};

void run(my_store& s, letterbox::testing::transport_archetype& t, letterbox::virtual_clock& c) {
    letterbox::outbox_relay relay(s, t, c);
}
