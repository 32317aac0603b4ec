// SPDX-License-Identifier: BSL-1.0
//
// Orchestration, the stock service: a participant of the saga. It reserves and releases stock
// when a command says so, and replies. It knows nothing of the flow: not what comes before it,
// nor what comes after.
#pragma once

#include "../service.hpp"

#include <string>
#include <string_view>

namespace example::orchestration {

// The commands it takes: its API.
struct reserve_stock {
    static constexpr std::string_view message_type = "reserve-stock";
    int order_id = 0;
    std::string sku;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(reserve_stock, order_id, sku)

struct release_stock {
    static constexpr std::string_view message_type = "release-stock";
    int order_id = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(release_stock, order_id)

class stock_service : public service {
public:
    static constexpr std::string_view queue = "stock";

    explicit stock_service(world& w)
        : service(w, "stock", "CREATE TABLE reservations(order_id INTEGER PRIMARY KEY, sku TEXT)") {
        consume(std::string(queue), work_time::stock,
                [this](const lb::message& c, unit_of_work& u) { return handle(c, u); });
    }

private:
    std::error_code handle(const lb::message& command, unit_of_work& u) {
        if (command.type == reserve_stock::message_type) {
            const auto r = lb::decode_payload<reserve_stock>(command);
            exec(u, "INSERT INTO reservations(order_id, sku) VALUES (?1, ?2)", r.order_id, r.sku);
            return send(u, lb::saga_reply(command, ids(), lb::saga_outcome::success), r.order_id);
        }
        const auto r = lb::decode_payload<release_stock>(command);
        exec(u, "DELETE FROM reservations WHERE order_id = ?1", r.order_id);
        return send(u, lb::saga_reply(command, ids(), lb::saga_outcome::success), r.order_id);
    }
};

} // namespace example::orchestration
