// SPDX-License-Identifier: BSL-1.0
//
// Choreography, the orders service. It takes an order: the order row and `order-placed`, in one
// transaction. Then it waits for the end of the flow, and has to know what that end is: the
// order is confirmed after the step that comes before confirmation, and fails when the payment
// fails. That knowledge is its part of the flow's logic; every service holds a part.
#pragma once

#include "events.hpp"

#include <string>
#include <string_view>

namespace example::choreography {

class order_service : public service {
public:
    explicit order_service(world& w)
        : service(
              w, "orders",
              "CREATE TABLE orders(id INTEGER PRIMARY KEY, sku TEXT, status TEXT, reason TEXT)") {
        bind("orders", events, {confirm_after(), payment_failed::message_type});
        consume("orders", work_time::orders,
                [this](const lb::message& e, unit_of_work& u) { return react(e, u); });
    }

    /// Places order `id`; returns its conversation: the id of its `order-placed`, which every
    /// event of its flow carries.
    std::string place(int id, const std::string& sku) {
        auto placed = event(ids(), order_placed{id, sku});
        lb::begin_conversation(placed);
        auto u = begin();
        exec(u, "INSERT INTO orders(id, sku, status) VALUES (?1, ?2, 'pending')", id, sku);
        must(send(u, placed, id), "send order-placed");
        must(u.commit(), "commit the order");
        return lb::to_string(placed.id);
    }

private:
    // The event after which an order is confirmed: the step before confirmation.
    static std::string_view confirm_after() {
        if (!email_step)                          // ?email
            return payment_charged::message_type; // -email
        return email_sent::message_type;          // +email
    }

    std::error_code react(const lb::message& e, unit_of_work& u) {
        const int id = order_of(e);
        if (e.type == confirm_after()) {
            exec(u, "UPDATE orders SET status = 'confirmed' WHERE id = ?1", id);
            return send(u, event(ids(), order_confirmed{id}, e), id);
        }
        const auto reason = lb::decode_payload<payment_failed>(e).reason;
        exec(u, "UPDATE orders SET status = 'FAILED', reason = ?2 WHERE id = ?1", id, reason);
        return send(u, event(ids(), order_failed{id, reason}, e), id);
    }
};

} // namespace example::choreography
