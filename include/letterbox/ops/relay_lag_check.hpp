// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/ops/readiness.hpp>
#include <letterbox/outbox/relay_counters.hpp>

#include <chrono>
#include <concepts>
#include <functional>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops {

/// `R` reports an outbox relay's counters, as `outbox_relay` does: `r.counters()` returns a
/// `relay_counters` (callable from any thread).
template <class R>
concept relay_counters_source = requires(const R& r) {
    { r.counters() } -> std::convertible_to<relay_counters>;
};

/// A readiness check that fails when the relay's lag (`relay_counters::lag`: the age of the
/// oldest pending outbox row at the relay's last poll) is over `threshold`. Detail:
/// "nothing pending", "oldest pending row is 3s old (threshold 60s)" or, failing,
/// "oldest pending row is 75s old (threshold 60s)".
///
/// `relay` must outlive the check (and so the `http_server` it is added to).
///
/// Example:
///
///     server.add_readiness_check("outbox_relay_lag",
///                                letterbox::ops::relay_lag_check(relay,
///                                std::chrono::seconds{60}));
template <relay_counters_source Relay>
std::function<readiness()> relay_lag_check(const Relay& relay, std::chrono::seconds threshold) {
    return [r = &relay, threshold] {
        const auto lag = r->counters().lag;
        const auto limit = " (threshold " + std::to_string(threshold.count()) + "s)";
        if (lag <= lag.zero())
            return readiness{true, "nothing pending" + limit};
        const auto whole = std::chrono::duration_cast<std::chrono::seconds>(lag);
        return readiness{lag <= threshold, "oldest pending row is " +
                                               std::to_string(whole.count()) + "s old" + limit};
    };
}

} // namespace letterbox::ops
