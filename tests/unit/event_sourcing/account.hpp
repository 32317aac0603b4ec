// SPDX-License-Identifier: BSL-1.0
#pragma once

// A bank account, event-sourced: what the event-sourcing unit tests fold, publish and project.

#include <letterbox/event_data.hpp>
#include <letterbox/message.hpp>
#include <letterbox/recorded_event.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace unit_event_sourcing {

struct account {
    std::int64_t balance = 0;
    std::uint64_t movements = 0;

    friend bool operator==(const account&, const account&) = default;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(account, balance, movements)

/// Deposits add, withdrawals subtract; other events change nothing.
struct account_fold {
    using state_type = account;
    static constexpr std::uint32_t fold_version = 1;

    void apply(account& a, const letterbox::recorded_event& e) const {
        const auto amount = nlohmann::json::parse(e.data).at("amount").get<std::int64_t>();
        if (e.type == "deposited")
            a.balance += amount;
        else if (e.type == "withdrawn")
            a.balance -= amount;
        else
            return;
        ++a.movements;
    }
};

/// The same rules, in another fold version (what a deploy that changed the rules looks like):
/// every movement counts twice.
struct account_fold_v2 {
    using state_type = account;
    static constexpr std::uint32_t fold_version = 2;

    void apply(account& a, const letterbox::recorded_event& e) const {
        account_fold{}.apply(a, e);
        a.movements = 2 * a.movements;
    }
};

/// An event of `type` moving `amount`, with an id from `ids`.
inline letterbox::event_data movement(letterbox::message_id_generator& ids, std::string type,
                                      std::int64_t amount) {
    letterbox::event_data e;
    e.id = ids();
    e.type = std::move(type);
    e.data = nlohmann::json{{"amount", amount}}.dump();
    return e;
}

/// The state a full replay of `events` gives.
template <class Fold = account_fold>
account replay(const std::vector<letterbox::recorded_event>& events) {
    account a;
    for (const auto& e : events)
        Fold{}.apply(a, e);
    return a;
}

} // namespace unit_event_sourcing
