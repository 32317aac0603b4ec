// SPDX-License-Identifier: BSL-1.0
//
// Orchestration, the payment service: a participant of the saga. It charges and refunds when a
// command says so, and replies whether the charge went through. It knows nothing of the flow.
// The card of order 2 is declined.
#pragma once

#include "../service.hpp"

#include <string_view>

namespace example::orchestration {

// The commands it takes: its API.
struct charge_payment {
    static constexpr std::string_view message_type = "charge-payment";
    int order_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(charge_payment, order_id)

struct refund_payment {
    static constexpr std::string_view message_type = "refund-payment";
    int order_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(refund_payment, order_id)

class payment_service : public service {
public:
    static constexpr std::string_view queue = "payments";

    explicit payment_service(world& w)
        : service(w, "payments", "CREATE TABLE charges(order_id INTEGER PRIMARY KEY)") {
        consume(std::string(queue), work_time::payment,
                [this](const lb::message& c, unit_of_work& u) { return handle(c, u); });
    }

private:
    std::error_code handle(const lb::message& command, unit_of_work& u) {
        if (command.type == charge_payment::message_type) {
            const int id = lb::decode_payload<charge_payment>(command).order_id;
            if (id == 2) // declined: nothing is charged
                return send(
                    u, lb::saga_reply(command, ids(), lb::saga_outcome::failure, "card declined"),
                    id);
            exec(u, "INSERT INTO charges(order_id) VALUES (?1)", id);
            return send(u, lb::saga_reply(command, ids(), lb::saga_outcome::success), id);
        }
        const int id = lb::decode_payload<refund_payment>(command).order_id;
        exec(u, "DELETE FROM charges WHERE order_id = ?1", id);
        return send(u, lb::saga_reply(command, ids(), lb::saga_outcome::success), id);
    }
};

} // namespace example::orchestration
