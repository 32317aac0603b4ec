// SPDX-License-Identifier: BSL-1.0
//
// Orchestration, the deployment: the services that run. The commands go to each participant's
// queue, and the replies to the saga's; the order of the steps is in order_saga.hpp.
#pragma once

#include "email_service.hpp" // +email
#include "order_service.hpp"
#include "payment_service.hpp"
#include "stock_service.hpp"

#include <optional>

namespace example::orchestration {

struct deployment {
    explicit deployment(world& w)
        : orders(w)
        , stock(w)
        , payments(w) {
        if (email_step)       // ?email
            email.emplace(w); // +email
    }

    order_service orders;
    stock_service stock;
    payment_service payments;
    std::optional<email_service> email; // +email
};

} // namespace example::orchestration
