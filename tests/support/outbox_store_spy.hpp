// SPDX-License-Identifier: BSL-1.0
#pragma once

// An outbox store that forwards every call to another one, and shows each call to a hook
// first: to count the calls, see which thread makes them, or hold one up.

#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/store_time.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <system_error>
#include <vector>

namespace test_support {

/// The calls an `outbox_store_spy` shows its hook.
enum class outbox_call {
    add,
    claim,
    release_expired_leases,
    mark_one,
    mark_batch,
    record_failure,
    park,
    unpark,
    purge_published,
    find,
    list,
    stats
};

/// Forwards to `*inner`, calling `before(call, rows)` first (`rows`: the size of a batch of
/// marks, else 1). It models `outbox_batch_settler` only when `Batch` is true; otherwise the
/// relay marks row by row.
template <class Inner, bool Batch = true>
struct outbox_store_spy {
    using outbox_store_concept = letterbox::outbox_store_tag;
    using unit_of_work_type = typename Inner::unit_of_work_type;
    using store_time = letterbox::store_time;
    using message_id = letterbox::message_id;

    Inner* inner;
    std::function<void(outbox_call, std::size_t)> before{};

    std::error_code add(unit_of_work_type& u, const letterbox::outbox_entry& e, store_time now) {
        show(outbox_call::add);
        return inner->add(u, e, now);
    }
    std::vector<letterbox::outbox_record> claim(std::string_view owner, std::size_t n,
                                                store_time::duration lease, store_time now,
                                                std::error_code& ec) {
        show(outbox_call::claim);
        return inner->claim(owner, n, lease, now, ec);
    }
    std::size_t release_expired_leases(store_time now, std::error_code& ec) {
        show(outbox_call::release_expired_leases);
        return inner->release_expired_leases(now, ec);
    }
    std::error_code mark_published(const message_id& id, std::string_view owner, store_time now) {
        show(outbox_call::mark_one);
        return inner->mark_published(id, owner, now);
    }
    std::error_code mark_published(std::span<const message_id> ids, std::string_view owner,
                                   store_time now,
                                   std::vector<std::error_code>& results) requires Batch {
        show(outbox_call::mark_batch, ids.size());
        return inner->mark_published(ids, owner, now, results);
    }
    std::error_code record_failure(const message_id& id, std::string_view owner,
                                   std::string_view error, store_time at, std::uint32_t max,
                                   store_time now) {
        show(outbox_call::record_failure);
        return inner->record_failure(id, owner, error, at, max, now);
    }
    std::error_code park(const message_id& id, std::string_view reason) {
        show(outbox_call::park);
        return inner->park(id, reason);
    }
    std::error_code unpark(const message_id& id, store_time now) {
        show(outbox_call::unpark);
        return inner->unpark(id, now);
    }
    std::size_t purge_published(store_time older_than, std::error_code& ec) {
        show(outbox_call::purge_published);
        return inner->purge_published(older_than, ec);
    }
    std::optional<letterbox::outbox_record> find(const message_id& id, std::error_code& ec) {
        show(outbox_call::find);
        return inner->find(id, ec);
    }
    std::vector<letterbox::outbox_record> list(const letterbox::outbox_query& q,
                                               std::error_code& ec) {
        show(outbox_call::list);
        return inner->list(q, ec);
    }
    letterbox::outbox_stats stats(store_time now, std::error_code& ec) {
        show(outbox_call::stats);
        return inner->stats(now, ec);
    }

private:
    void show(outbox_call call, std::size_t rows = 1) {
        if (before)
            before(call, rows);
    }
};

} // namespace test_support
