// SPDX-License-Identifier: BSL-1.0
//
// Orchestration, the saga: the whole flow, in one place. Its steps in order, each with the
// command that does it and the one that undoes it. The orders service runs it
// (order_service.hpp); the participants only answer its commands.
#pragma once

#include "email_service.hpp" // +email
#include "payment_service.hpp"
#include "stock_service.hpp"

#include <string>
#include <string_view>

namespace example::orchestration {

/// The saga's data, stored with each instance.
struct order {
    int id = 0;
    std::string sku;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(order, id, sku)

/// The orders service's own step, the last one.
struct confirm_order {
    static constexpr std::string_view message_type = "confirm-order";
    int order_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(confirm_order, order_id)
inline constexpr std::string_view confirm_queue = "orders.commands";

// The commands of the steps, made from the saga's data.
inline lb::message reserve(const order& o) {
    return lb::saga_command(reserve_stock{o.id, o.sku}, std::string(stock_service::queue));
}
inline lb::message release(const order& o) {
    return lb::saga_command(release_stock{o.id}, std::string(stock_service::queue));
}
inline lb::message charge(const order& o) {
    return lb::saga_command(charge_payment{o.id}, std::string(payment_service::queue));
}
inline lb::message refund(const order& o) {
    return lb::saga_command(refund_payment{o.id}, std::string(payment_service::queue));
}
inline lb::message email(const order& o) {                                        // +email
    return lb::saga_command(send_email{o.id}, std::string(email_service::queue)); // +email
} // +email
inline lb::message confirm(const order& o) {
    return lb::saga_command(confirm_order{o.id}, std::string(confirm_queue));
}

inline lb::saga_definition<order> order_saga() {
    auto saga = lb::saga_definition<order>("order-fulfilment");
    saga.step({.name = "reserve-stock", .invoke = reserve, .compensate = release});
    saga.step({.name = "charge-payment", .invoke = charge, .compensate = refund});
    if (email_step)                                         // ?email
        saga.step({.name = "send-email", .invoke = email}); // +email
    saga.step({.name = "confirm-order", .invoke = confirm});
    return saga;
}

} // namespace example::orchestration
