// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::postgres {

/// How a `postgres::outbox_store` announces new rows.
struct outbox_options {
    /// The channel of the announcements (`LISTEN letterbox_outbox`); the payload is the schema's
    /// name, so that stores of several schemas on one database share it.
    static constexpr std::string_view channel = "letterbox_outbox";

    /// Each `add` also queues `pg_notify(channel, schema)` in the unit of work, in the same
    /// statement as the row. The server delivers it when the unit commits (once per unit and
    /// schema, however many rows it added), to every `outbox_listener` of any process, which
    /// wakes its relay at once instead of at its next poll. A unit that rolls back announces
    /// nothing. Off: relays in other processes find new rows by polling
    /// (`relay_options::poll_interval`) only. PostgreSQL serialises the commits of notifying
    /// transactions on one lock: measure before turning it off for throughput, and turn it off
    /// where nobody listens.
    bool notify = true;
};

} // namespace letterbox::postgres
