// SPDX-License-Identifier: BSL-1.0
// +email: this whole file is new with the e-mail step.
//
// Choreography, the e-mail service. It e-mails the customer once the payment is charged, and
// says so (`email-sent`): the orders service waits for that before it confirms. It has to know
// that the payment comes first: its part of the flow's logic.
#pragma once

#include "events.hpp"

namespace example::choreography {

class email_service : public service {
public:
    explicit email_service(world& w)
        : service(w, "email", "CREATE TABLE emails(order_id INTEGER PRIMARY KEY)") {
        bind("email", events, {payment_charged::message_type});
        consume("email", work_time::email,
                [this](const lb::message& e, unit_of_work& u) { return react(e, u); });
    }

private:
    std::error_code react(const lb::message& e, unit_of_work& u) {
        const int id = order_of(e);
        exec(u, "INSERT INTO emails(order_id) VALUES (?1)", id);
        return send(u, event(ids(), email_sent{id}, e), id);
    }
};

} // namespace example::choreography
