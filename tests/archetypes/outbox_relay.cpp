// SPDX-License-Identifier: BSL-1.0
// outbox_relay needs no more of its store, transport and clock than their concepts promise:
// it instantiates with the archetypes. Compiling is the test.

#include <letterbox/outbox/outbox_relay.hpp>
#include <letterbox/testing/archetypes/clock.hpp>
#include <letterbox/testing/archetypes/outbox_store.hpp>
#include <letterbox/testing/archetypes/transport.hpp>

template class letterbox::outbox_relay<letterbox::testing::outbox_store_archetype,
                                       letterbox::testing::transport_archetype,
                                       letterbox::testing::clock_archetype>;
