// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of letterbox/outbox/in_memory_outbox_store.hpp; included at its end.

#include <letterbox/config.hpp>
#include <letterbox/detail/in_memory_store_operation.hpp>
#include <letterbox/outbox/detail/store_preconditions.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

LETTERBOX_DECL outbox_record* in_memory_outbox_store::find_row(const message_id& id) {
    const auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &rows_.at(it->second);
}

LETTERBOX_DECL std::error_code in_memory_outbox_store::add(in_memory_unit_of_work& uow,
                                                           const outbox_entry& entry,
                                                           store_time now) {
    std::lock_guard lock(core_.mutex);
    if (auto ec = core_.faults.next())
        return ec;
    if (!uow.is_open())
        return errc::transaction_closed;
    if (auto invalid = detail::check_outbox_entry(entry))
        return invalid;
    const std::string key = letterbox::to_string(entry.msg.id);
    if (by_id_.contains(entry.msg.id) || uow.has_staged(core_, key))
        return errc::duplicate_message_id;

    outbox_record row;
    row.msg = entry.msg;
    row.aggregate_type = entry.aggregate_type;
    row.aggregate_id = entry.aggregate_id;
    row.created_at = now;
    row.next_attempt_at = now;
    const message_id id = entry.msg.id;
    // Validation and application run under core_.mutex, taken by the commit.
    return uow.stage(
        core_, key,
        [this, id]() -> std::error_code {
            return by_id_.contains(id) ? make_error_code(errc::duplicate_message_id)
                                       : std::error_code{};
        },
        [this, row = std::move(row)]() mutable {
            // The sequence is assigned at commit so that it follows commit order: a row never
            // becomes visible behind a later one that a relay may already have published.
            row.sequence = ++last_sequence_;
            by_id_.emplace(row.msg.id, row.sequence);
            rows_.emplace(row.sequence, std::move(row));
        });
}

LETTERBOX_DECL std::vector<outbox_record>
in_memory_outbox_store::claim(std::string_view owner, std::size_t max_rows,
                              store_time::duration lease, store_time now, std::error_code& ec) {
    return detail::in_memory_store_operation(core_, ec, [&] {
        std::vector<outbox_record> batch;
        if ((ec = detail::check_claim(true, owner)))
            return batch;
        // Aggregates whose earliest unpublished row has been seen: later rows of theirs wait.
        std::set<std::pair<std::string_view, std::string_view>> blocked;
        for (auto& [seq, row] : rows_) {
            if (batch.size() >= max_rows)
                break;
            if (row.status == outbox_status::published)
                continue;
            if (!row.aggregate_id.empty() &&
                !blocked.emplace(row.aggregate_type, row.aggregate_id).second)
                continue;
            const bool leased = !row.lease_owner.empty() && now < row.lease_expires_at;
            if (row.status != outbox_status::pending || leased || row.next_attempt_at > now)
                continue;
            row.lease_owner = owner;
            row.lease_expires_at = now + lease;
            batch.push_back(row);
        }
        return batch;
    });
}

LETTERBOX_DECL outbox_record* in_memory_outbox_store::leased_row(const message_id& id,
                                                                 std::string_view owner,
                                                                 std::error_code& ec) {
    auto* row = find_row(id);
    if (!row) {
        ec = errc::record_not_found;
        return nullptr;
    }
    if (row->status != outbox_status::pending || row->lease_owner.empty() ||
        row->lease_owner != owner) {
        ec = errc::lease_lost;
        return nullptr;
    }
    return row;
}

LETTERBOX_DECL outbox_record*
in_memory_outbox_store::leased_row_unless_faulted(const message_id& id, std::string_view owner,
                                                  std::error_code& ec) {
    ec = core_.faults.next();
    return ec ? nullptr : leased_row(id, owner, ec);
}

LETTERBOX_DECL std::error_code in_memory_outbox_store::mark_published(const message_id& id,
                                                                      std::string_view owner,
                                                                      store_time now) {
    std::lock_guard lock(core_.mutex);
    std::error_code ec;
    if (auto* row = leased_row_unless_faulted(id, owner, ec))
        publish(*row, now);
    return ec;
}

LETTERBOX_DECL std::error_code
in_memory_outbox_store::mark_published(std::span<const message_id> ids, std::string_view owner,
                                       store_time now, std::vector<std::error_code>& results) {
    std::lock_guard lock(core_.mutex);
    if (auto ec = core_.faults.next()) {
        results.assign(ids.size(), ec);
        return ec;
    }
    results.assign(ids.size(), std::error_code{});
    for (std::size_t i = 0; i < ids.size(); ++i) {
        // In order, so a repeated id finds its row already published: lease_lost.
        if (auto* row = leased_row(ids[i], owner, results[i]))
            publish(*row, now);
    }
    return {};
}

LETTERBOX_DECL void in_memory_outbox_store::publish(outbox_record& row, store_time now) {
    row.status = outbox_status::published;
    row.published_at = now;
    row.lease_owner.clear();
    row.lease_expires_at = {};
}

LETTERBOX_DECL std::error_code
in_memory_outbox_store::record_failure(const message_id& id, std::string_view owner,
                                       std::string_view error, store_time next_attempt_at,
                                       std::uint32_t max_attempts, store_time now) {
    std::lock_guard lock(core_.mutex);
    std::error_code ec;
    auto* row = leased_row_unless_faulted(id, owner, ec);
    if (!row)
        return ec;
    ++row->attempts;
    row->last_error = error;
    row->last_failure_at = now;
    row->lease_owner.clear();
    row->lease_expires_at = {};
    row->next_attempt_at = next_attempt_at;
    if (row->attempts >= max_attempts)
        row->status = outbox_status::parked;
    return {};
}

template <class MayChange, class Change>
std::error_code in_memory_outbox_store::change_row(const message_id& id, MayChange may_change,
                                                   Change change) {
    std::lock_guard lock(core_.mutex);
    if (auto ec = core_.faults.next())
        return ec;
    auto* row = find_row(id);
    if (!row)
        return errc::record_not_found;
    if (!may_change(row->status))
        return errc::invalid_state;
    change(*row);
    return {};
}

LETTERBOX_DECL std::error_code in_memory_outbox_store::park(const message_id& id,
                                                            std::string_view reason) {
    return change_row(
        id, [](outbox_status status) { return status != outbox_status::published; },
        [&](outbox_record& row) {
            row.status = outbox_status::parked;
            row.last_error = reason;
            row.lease_owner.clear();
            row.lease_expires_at = {};
        });
}

LETTERBOX_DECL std::error_code in_memory_outbox_store::unpark(const message_id& id,
                                                              store_time now) {
    return change_row(
        id, [](outbox_status status) { return status == outbox_status::parked; },
        [&](outbox_record& row) {
            row.status = outbox_status::pending;
            row.attempts = 0;
            row.next_attempt_at = now;
        });
}

LETTERBOX_DECL std::size_t in_memory_outbox_store::release_expired_leases(store_time now,
                                                                          std::error_code& ec) {
    return detail::in_memory_store_operation(core_, ec, [&] {
        std::size_t released = 0;
        for (auto& [seq, row] : rows_) {
            if (!row.lease_owner.empty() && row.lease_expires_at <= now) {
                row.lease_owner.clear();
                row.lease_expires_at = {};
                ++released;
            }
        }
        return released;
    });
}

LETTERBOX_DECL std::size_t in_memory_outbox_store::purge_published(store_time older_than,
                                                                   std::error_code& ec) {
    return detail::in_memory_store_operation(core_, ec, [&] {
        std::size_t purged = 0;
        for (auto it = rows_.begin(); it != rows_.end();) {
            const auto& row = it->second;
            if (row.status == outbox_status::published && row.published_at &&
                *row.published_at < older_than) {
                by_id_.erase(row.msg.id);
                it = rows_.erase(it);
                ++purged;
            } else {
                ++it;
            }
        }
        return purged;
    });
}

LETTERBOX_DECL std::optional<outbox_record> in_memory_outbox_store::find(const message_id& id,
                                                                         std::error_code& ec) {
    return detail::in_memory_store_operation(core_, ec, [&]() -> std::optional<outbox_record> {
        if (const auto* row = find_row(id))
            return *row;
        return std::nullopt;
    });
}

LETTERBOX_DECL std::vector<outbox_record> in_memory_outbox_store::list(const outbox_query& query,
                                                                       std::error_code& ec) {
    return detail::in_memory_store_operation(core_, ec, [&] {
        std::vector<outbox_record> rows;
        for (auto it = rows_.upper_bound(query.after_sequence);
             it != rows_.end() && rows.size() < query.limit; ++it) {
            if (!query.status || it->second.status == *query.status)
                rows.push_back(it->second);
        }
        return rows;
    });
}

LETTERBOX_DECL outbox_stats in_memory_outbox_store::stats(store_time now, std::error_code& ec) {
    return detail::in_memory_store_operation(core_, ec, [&] {
        outbox_stats s;
        std::optional<store_time> oldest;
        for (const auto& [seq, row] : rows_) {
            switch (row.status) {
            case outbox_status::pending:
                ++s.pending;
                if (!row.lease_owner.empty() && now < row.lease_expires_at)
                    ++s.leased;
                if (!oldest || row.created_at < *oldest)
                    oldest = row.created_at;
                break;
            case outbox_status::published:
                ++s.published;
                break;
            case outbox_status::parked:
                ++s.parked;
                break;
            }
        }
        if (oldest && *oldest < now)
            s.oldest_pending_age = now - *oldest;
        return s;
    });
}

LETTERBOX_DECL void in_memory_outbox_store::fail_nth(std::size_t n, std::error_code ec) {
    detail::in_memory_store_fail_nth(core_, n, ec);
}

LETTERBOX_DECL std::size_t in_memory_outbox_store::operation_count() {
    return detail::in_memory_store_operation_count(core_);
}

} // namespace letterbox
