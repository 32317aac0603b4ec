// SPDX-License-Identifier: BSL-1.0
//
// Choreography: the events, the contract every service shares. Each service publishes what
// happened to the `events` topic exchange, under the event's type, and subscribes to the events
// it reacts to. No message says what to do next; each says what happened.
#pragma once

#include "../service.hpp"

#include <string>
#include <string_view>

namespace example::choreography {

inline constexpr std::string_view events = "events";

struct order_placed {
    static constexpr std::string_view message_type = "order-placed";
    int order_id = 0;
    std::string sku;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order_placed, order_id, sku)

struct stock_reserved {
    static constexpr std::string_view message_type = "stock-reserved";
    int order_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(stock_reserved, order_id)

struct payment_charged {
    static constexpr std::string_view message_type = "payment-charged";
    int order_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(payment_charged, order_id)

struct payment_failed {
    static constexpr std::string_view message_type = "payment-failed";
    int order_id = 0;
    std::string reason;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(payment_failed, order_id, reason)

struct email_sent {                                                // +email
    static constexpr std::string_view message_type = "email-sent"; // +email
    int order_id = 0;                                              // +email
};                                                                 // +email
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(email_sent, order_id)           // +email
                                                                   // +email
struct stock_released {
    static constexpr std::string_view message_type = "stock-released";
    int order_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(stock_released, order_id)

struct order_confirmed {
    static constexpr std::string_view message_type = "order-confirmed";
    int order_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order_confirmed, order_id)

struct order_failed {
    static constexpr std::string_view message_type = "order-failed";
    int order_id = 0;
    std::string reason;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order_failed, order_id, reason)

/// The order an event is about: every event names it.
inline int order_of(const lb::message& e) {
    return nlohmann::json::parse(e.body).at("order_id").get<int>();
}

/// `e` as a message to the `events` exchange, routed by its type.
template <class Event>
lb::message event(lb::message_id_generator& ids, const Event& e) {
    return lb::make_message(ids, e, std::string(Event::message_type), std::string(events));
}

//[caused_event
/// The same, caused by `cause`, the event being handled: it joins `cause`'s trace and
/// conversation, which is how one order is followed through every service.
template <class Event>
lb::message event(lb::message_id_generator& ids, const Event& e, const lb::message& cause) {
    auto m = event(ids, e);
    lb::caused_by(cause, m);
    return m;
}
//]

} // namespace example::choreography
