// SPDX-License-Identifier: BSL-1.0
#pragma once

// Shared helpers of the middleware layer tests (retry.cpp, redelivery.cpp, dead_letter.cpp,
// compose.cpp, attempts_before.cpp): the layers as pure functions, a delivery in, a disposition
// out, no broker.

#include <letterbox/delivery.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/error.hpp>
#include <letterbox/handling.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/retry_topology.hpp>

#include <chrono>
#include <cstdint>
#include <stdexcept>

namespace unit_middleware_layer_fixture {

using namespace std::chrono_literals;
using letterbox::errc;
using letterbox::middleware::disposition;
using letterbox::middleware::handling;
namespace headers = letterbox::headers;
namespace mw = letterbox::middleware;

using kind = disposition::kind;

inline letterbox::delivery make_delivery() {
    static letterbox::message_id_generator ids(7); // test-only state, never read by the library
    letterbox::delivery d;
    d.msg.id = ids();
    d.msg.exchange = "orders";
    d.msg.routing_key = "orders.created";
    d.msg.body = R"({"order":1})";
    d.queue = "billing";
    d.delivery_tag = 1;
    return d;
}

// Fails the first `failures` calls (throwing `E`), then succeeds.
struct flaky {
    int failures = 0;
    int* calls = nullptr;
    void operator()(const letterbox::message&) {
        ++*calls;
        if (*calls <= failures)
            throw std::runtime_error("database deadlock");
    }
};

struct always_throws_malformed {
    void operator()(const letterbox::message&) const {
        throw letterbox::error(errc::payload_malformed, "field 'amount' missing");
    }
};

inline letterbox::topology::retry_topology billing_topology() {
    return {.queue = "billing", .delays = {1s, 10s, 60s}};
}

inline std::int64_t attempts_header(const letterbox::message& m) {
    return m.headers.find(headers::attempts)->as_integer().value();
}

} // namespace unit_middleware_layer_fixture
