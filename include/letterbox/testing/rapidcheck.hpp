// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/failpoint.hpp>
#include <letterbox/testing/fault_schedule.hpp>
#include <letterbox/testing/history_event.hpp>

#include <rapidcheck.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

/// RapidCheck generators for the simulation's fault schedules, so that a property over a
/// pipeline gets generation *and shrinking*: a failing schedule is cut down to the few
/// commands that matter (often one), and its text form (`fault_schedule::to_string`, which
/// RapidCheck prints) can be pasted into a regression test with `fault_schedule::parse`.
///
/// Example (Catch2 with rapidcheck/catch.h):
///
///     rc::prop("the wallet keeps its guarantees", [](const letterbox::testing::fault_schedule& s)
///     {
///         letterbox::testing::pipeline_options o;
///         o.faults = letterbox::testing::fault_profile::none();
///         o.schedule = s;
///         RC_ASSERT(letterbox::testing::run_pipeline<wallet_app>(1, o).ok());
///     });
namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// One schedulable command at an instant of `[0, window)`, with an argument in the range its
/// kind takes (see `fault_command`). Shrinks towards an earlier kind in the list below, an
/// earlier instant and a smaller argument.
inline rc::Gen<fault_command>
gen_fault_command(std::chrono::milliseconds window = std::chrono::milliseconds(4000)) {
    static const std::vector<fault_kind> kinds{
        fault_kind::connection_drop,    fault_kind::publish_nack,
        fault_kind::lost_confirm,       fault_kind::crash,
        fault_kind::broker_restart,     fault_kind::consumer_cancel,
        fault_kind::duplicate_delivery, fault_kind::sqlite_busy,
        fault_kind::slow_consumer,      fault_kind::binding_removed,
        fault_kind::queue_deleted,
    };
    const auto last = std::max<std::int64_t>(window.count(), 1) - 1;
    return rc::gen::mapcat(rc::gen::elementOf(kinds), [last](fault_kind kind) {
        std::uint32_t lo = 0;
        std::uint32_t hi = 0;
        switch (kind) {
        case fault_kind::lost_confirm:
        case fault_kind::publish_nack:
            lo = 1, hi = 3;
            break;
        case fault_kind::crash:
            hi = static_cast<std::uint32_t>(all_failpoints.size() - 1);
            break;
        case fault_kind::duplicate_delivery:
            hi = 999;
            break;
        case fault_kind::slow_consumer:
        case fault_kind::sqlite_busy:
            lo = 10, hi = 500;
            break;
        case fault_kind::consumer_cancel:
            lo = 50, hi = 1000;
            break;
        case fault_kind::binding_removed:
        case fault_kind::queue_deleted:
            lo = 50, hi = 1500;
            break;
        default:
            break;
        }
        return rc::gen::map(
            rc::gen::pair(rc::gen::inRange<std::int64_t>(0, last + 1),
                          rc::gen::inRange<std::uint32_t>(lo, hi + 1)),
            [kind](const std::pair<std::int64_t, std::uint32_t>& p) {
                return fault_command{std::chrono::milliseconds(p.first), kind, p.second};
            });
    });
}

/// A schedule of up to about a dozen commands (RapidCheck's size, scaled down) in time order.
/// Shrinks by removing commands and by shrinking each one.
inline rc::Gen<fault_schedule>
gen_fault_schedule(std::chrono::milliseconds window = std::chrono::milliseconds(4000)) {
    return rc::gen::map(rc::gen::scale(0.12, rc::gen::container<std::vector<fault_command>>(
                                                 gen_fault_command(window))),
                        [](std::vector<fault_command> commands) {
                            std::stable_sort(commands.begin(), commands.end(),
                                             [](const fault_command& a, const fault_command& b) {
                                                 return a.at < b.at;
                                             });
                            return fault_schedule{std::move(commands)};
                        });
}

} // namespace letterbox::testing

namespace rc {

/// `rc::gen::arbitrary<fault_schedule>()`: `gen_fault_schedule()` over the default 4 s window.
template <>
struct Arbitrary<letterbox::testing::fault_schedule> {
    static Gen<letterbox::testing::fault_schedule> arbitrary() {
        return letterbox::testing::gen_fault_schedule();
    }
};

} // namespace rc
