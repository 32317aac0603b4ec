// SPDX-License-Identifier: BSL-1.0
// +email: this whole file is new with the e-mail step.
//
// Orchestration, the e-mail service: a participant of the saga. It e-mails the customer when a
// command says so, and replies. It knows nothing of the flow.
#pragma once

#include "../service.hpp"

#include <string_view>

namespace example::orchestration {

// The command it takes: its API.
struct send_email {
    static constexpr std::string_view message_type = "send-email";
    int order_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(send_email, order_id)

class email_service : public service {
public:
    static constexpr std::string_view queue = "email";

    explicit email_service(world& w)
        : service(w, "email", "CREATE TABLE emails(order_id INTEGER PRIMARY KEY)") {
        consume(std::string(queue), work_time::email,
                [this](const lb::message& c, unit_of_work& u) { return handle(c, u); });
    }

private:
    std::error_code handle(const lb::message& command, unit_of_work& u) {
        const int id = lb::decode_payload<send_email>(command).order_id;
        exec(u, "INSERT INTO emails(order_id) VALUES (?1)", id);
        return send(u, lb::saga_reply(command, ids(), lb::saga_outcome::success), id);
    }
};

} // namespace example::orchestration
