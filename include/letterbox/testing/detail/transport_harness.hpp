// SPDX-License-Identifier: BSL-1.0
#pragma once

// `letterbox::testing::transport_harness`, what each check of the transport conformance suite
// is given. Part of letterbox/testing/transport_suite.hpp, which includes it; a header of its
// own so that the suite's reusable pieces and checks can include it without the suite.

#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/testing/transport_features.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// What each check of the suite is given: the fixture's operations, type-erased, so that a
/// check is a function template of the transport type alone.
template <transport Transport>
struct transport_harness {
    /// A new transport.
    std::function<Transport()> make;
    /// Runs completion handlers until `done()` or the timeout; returns the last `done()`.
    std::function<bool(const std::function<bool()>&, std::chrono::milliseconds)> run_until;
    /// A name unique to the call.
    std::function<std::string(std::string_view)> unique_name;
    /// Restarts the broker; empty when the fixture cannot.
    std::function<void()> restart_broker;
    transport_features features{};

    /// Runs until `done()`, for at most `features.timeout`; returns whether `done()` held.
    bool wait(const std::function<bool()>& done) { return run_until(done, features.timeout); }
    /// Runs for `features.quiet_period`, to see that something does not happen.
    void quiet() {
        run_until([] { return false; }, features.quiet_period);
    }
};

} // namespace letterbox::testing
