// SPDX-License-Identifier: BSL-1.0
//
// Choreography, the payment service. It charges an order once its stock is reserved, and says
// whether the charge went through. It has to know that the stock comes first: its part of the
// flow's logic. The card of order 2 is declined.
#pragma once

#include "events.hpp"

namespace example::choreography {

class payment_service : public service {
public:
    explicit payment_service(world& w)
        : service(w, "payments", "CREATE TABLE charges(order_id INTEGER PRIMARY KEY)") {
        bind("payments", events, {stock_reserved::message_type});
        consume("payments", work_time::payment,
                [this](const lb::message& e, unit_of_work& u) { return react(e, u); });
    }

private:
    std::error_code react(const lb::message& e, unit_of_work& u) {
        const int id = order_of(e);
        if (id == 2) // declined: nothing is charged
            return send(u, event(ids(), payment_failed{id, "card declined"}, e), id);
        exec(u, "INSERT INTO charges(order_id) VALUES (?1)", id);
        return send(u, event(ids(), payment_charged{id}, e), id);
    }
};

} // namespace example::choreography
