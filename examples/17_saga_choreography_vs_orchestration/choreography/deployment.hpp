// SPDX-License-Identifier: BSL-1.0
//
// Choreography, the deployment: the services that run, and the exchange their events meet on.
// Nothing here says in which order things happen; the services' subscriptions do.
#pragma once

#include "email_service.hpp" // +email
#include "events.hpp"
#include "order_service.hpp"
#include "payment_service.hpp"
#include "stock_service.hpp"

#include <optional>

namespace example::choreography {

struct deployment {
    explicit deployment(world& w)
        : orders(w)
        , stock(w)
        , payments(w) {
        w.topology.push_back(lb::topology::exchange{.name = std::string(events),
                                                    .type = lb::topology::exchange_type::topic});
        // Every event is kept in a log, too: so an event that no service reacts to (yet) is
        // routed, not returned to its relay as unroutable.
        w.topology.push_back(lb::topology::queue{.name = "events.log"});
        w.topology.push_back(lb::topology::binding{std::string(events), "events.log", "#"});
        if (email_step)       // ?email
            email.emplace(w); // +email
    }

    order_service orders;
    stock_service stock;
    payment_service payments;
    std::optional<email_service> email; // +email
};

} // namespace example::choreography
