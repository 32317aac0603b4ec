// SPDX-License-Identifier: BSL-1.0
//
// Choreography, the stock service. It reserves stock when an order is placed, and releases the
// reservation when the order's payment fails: it has to know that a failed payment undoes its
// step. That compensation is its part of the flow's logic.
#pragma once

#include "events.hpp"

namespace example::choreography {

//[stock_service
class stock_service : public service {
public:
    explicit stock_service(world& w)
        : service(w, "stock", "CREATE TABLE reservations(order_id INTEGER PRIMARY KEY, sku TEXT)") {
        bind("stock", events, {order_placed::message_type, payment_failed::message_type});
        consume("stock", work_time::stock,
                [this](const lb::message& e, unit_of_work& u) { return react(e, u); });
    }

private:
    std::error_code react(const lb::message& e, unit_of_work& u) {
        const int id = order_of(e);
        if (e.type == order_placed::message_type) {
            const auto placed = lb::decode_payload<order_placed>(e);
            exec(u, "INSERT INTO reservations(order_id, sku) VALUES (?1, ?2)", id, placed.sku);
            return send(u, event(ids(), stock_reserved{id}, e), id);
        }
        exec(u, "DELETE FROM reservations WHERE order_id = ?1", id);
        return send(u, event(ids(), stock_released{id}, e), id);
    }
};
//]

} // namespace example::choreography
