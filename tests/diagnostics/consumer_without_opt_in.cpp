// SPDX-License-Identifier: BSL-1.0
// A transport that has every operation but forgot the opt-in tag.
#include <letterbox/consumer.hpp>
#include <letterbox/testing/archetypes/transport.hpp>

// expect: letterbox::transport: the type does not opt in
// expect: using transport_concept = letterbox::transport_tag;

struct my_transport : letterbox::testing::transport_archetype {
    using transport_concept = void;
};

void start(my_transport& t) {
    letterbox::consumer c(t, [](const letterbox::message&) {});
}
