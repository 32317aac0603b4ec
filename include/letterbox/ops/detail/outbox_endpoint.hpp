// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/clock.hpp>
#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/store_time.hpp>

#include <optional>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

/// The registered outbox store and its clock, with their types erased. Store calls are
/// synchronous and run on the server's store worker, never on its strand; "now" is the
/// clock's `wall_now()`, as `outbox_relay` passes it, read on the strand (a clock need not be
/// thread-safe) and handed to the calls that take it.
class outbox_endpoint {
public:
    outbox_endpoint() = default;
    outbox_endpoint(const outbox_endpoint&) = delete;
    outbox_endpoint& operator=(const outbox_endpoint&) = delete;
    virtual ~outbox_endpoint() = default;

    /// Reads the clock (on the strand).
    virtual store_time now() const = 0;

    // Store calls (on the store worker; the store must be thread-safe).
    virtual std::vector<outbox_record> list(const outbox_query& q, std::error_code& ec) = 0;
    virtual outbox_stats stats(store_time now, std::error_code& ec) = 0;
    virtual std::optional<outbox_record> find(const message_id& id, std::error_code& ec) = 0;
    virtual std::error_code unpark(const message_id& id, store_time now) = 0;
};

template <outbox_store Store, clock Clock>
class outbox_endpoint_for final : public outbox_endpoint {
public:
    outbox_endpoint_for(Store& store, Clock& clock)
        : store_(&store)
        , clock_(&clock) {}

    store_time now() const override { return store_time{clock_->wall_now()}; }

    std::vector<outbox_record> list(const outbox_query& q, std::error_code& ec) override {
        return store_->list(q, ec);
    }
    outbox_stats stats(store_time now, std::error_code& ec) override {
        return store_->stats(now, ec);
    }
    std::optional<outbox_record> find(const message_id& id, std::error_code& ec) override {
        return store_->find(id, ec);
    }
    std::error_code unpark(const message_id& id, store_time now) override {
        return store_->unpark(id, now);
    }

private:
    Store* store_;
    Clock* clock_;
};

} // namespace letterbox::ops::detail
