// SPDX-License-Identifier: BSL-1.0
//
// Orchestration, the orders service. It runs the saga (order_saga.hpp) and does its last step,
// confirming the order. Its database holds the orders, the saga's instances, its outbox and its
// inbox: placing an order starts the saga in the same transaction, and every move of the saga
// commits with the reply that moved it and the command it sends next.
#pragma once

#include "order_saga.hpp"

#include <chrono>
#include <optional>
#include <string>

namespace example::orchestration {

class order_service : public service {
public:
    using orchestrator_type =
        lb::saga_orchestrator<order, lb::sqlite::saga_store, lb::sqlite::outbox_store,
                              lb::virtual_clock, lb::backoff::exponential>;

    explicit order_service(world& w)
        : service(w, "orders", "CREATE TABLE orders(id INTEGER PRIMARY KEY, sku TEXT, status TEXT)")
        , sagas_(database())
        , orchestrator_(
              order_saga(), sagas_, outbox(), w.sim.clock(), "order-saga.replies",
              lb::backoff::exponential(std::chrono::seconds(1), 2.0, std::chrono::seconds(10), 5)) {
        consume("order-saga.replies", work_time::orchestrator,
                [this](const lb::message& reply, unit_of_work& u) { return move(reply, u); });
        consume(std::string(confirm_queue), work_time::orders,
                [this](const lb::message& c, unit_of_work& u) { return confirm(c, u); });
    }

    /// Places order `id` and starts its saga; returns its conversation, which every message of
    /// the saga carries.
    std::string place(int id, const std::string& sku) {
        auto u = begin();
        exec(u, "INSERT INTO orders(id, sku, status) VALUES (?1, ?2, 'pending')", id, sku);
        must(orchestrator_.start(u, std::to_string(id), order{id, sku}), "start the saga");
        must(publish_on_commit(u), "wake the relay");
        must(u.commit(), "commit the order");
        return saga(id)->conversation_id;
    }

    /// Order `id`'s saga: its state, why it failed, its conversation.
    std::optional<lb::saga_view<order>> saga(int id) {
        std::error_code ec;
        return orchestrator_.find(std::to_string(id), ec);
    }

private:
    // The orchestrator is the effect of the replies' consumer: the reply's inbox record, the
    // saga's move and its next command commit together.
    std::error_code move(const lb::message& reply, unit_of_work& u) {
        if (auto ec = orchestrator_(reply, u))
            return ec;
        return publish_on_commit(u);
    }

    std::error_code confirm(const lb::message& command, unit_of_work& u) {
        const int id = lb::decode_payload<confirm_order>(command).order_id;
        exec(u, "UPDATE orders SET status = 'confirmed' WHERE id = ?1", id);
        return send(u, lb::saga_reply(command, ids(), lb::saga_outcome::success), id);
    }

    lb::sqlite::saga_store sagas_;
    orchestrator_type orchestrator_;
};

} // namespace example::orchestration
