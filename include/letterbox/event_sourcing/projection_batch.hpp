// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/recorded_event.hpp>
#include <letterbox/store_time.hpp>

#include <span>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// What a `projection_runner` tells `projection_options::on_batch` after it committed a batch:
/// the projection's name, the events applied (in position order), and the clock's wall time at
/// the commit. `committed_at - e.recorded_at` is each event's consistency lag: how long a query
/// on the read model could not see it (`ops::letterbox_metrics::projection_observer` keeps its
/// distribution). The span is valid during the call only.
struct projection_batch {
    std::string_view projection;
    std::span<const recorded_event> events;
    store_time committed_at{};
};

} // namespace letterbox
