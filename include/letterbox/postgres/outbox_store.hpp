// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/postgres/database.hpp>
#include <letterbox/postgres/detail/database_state.hpp>
#include <letterbox/postgres/outbox_options.hpp>
#include <letterbox/postgres/unit_of_work.hpp>
#include <letterbox/store_time.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::postgres {

/// The transactional outbox in a PostgreSQL database: a model of `letterbox::outbox_store` (and
/// of `outbox_batch_settler`) whose rows are written in the caller's `postgres::unit_of_work`
/// and drained by relays in **any number of processes** at once.
///
/// - **Several relays.** `claim` picks the claimable rows with `FOR UPDATE SKIP LOCKED` and
///   leases them in the same statement: two relays claiming at the same moment skip each
///   other's rows instead of waiting for them or fighting over leases.
/// - **Per-aggregate order.** A row is claimable only when no earlier row of its aggregate is
///   unpublished, so at most one event per aggregate is in flight. `add` takes a transaction
///   advisory lock on the row's aggregate before it takes a sequence number, so two units that
///   add to one aggregate commit in the order of their sequences: a relay never sees a later
///   event of an aggregate before an earlier one commits (docs/design/postgres.md). Units that
///   add to different aggregates do not wait for each other.
/// - **Set-based settling.** `mark_published(ids, ...)` marks a whole batch in one statement.
/// - **Announcements.** Each `add` queues a notification (`outbox_options::notify`) that the
///   server delivers at commit to every `outbox_listener`, in any process: relays wake at once,
///   and their poll is only the fallback for a lost notification.
/// - **Duplicates.** The unique key on `message_id` decides (`INSERT ... ON CONFLICT DO
///   NOTHING`): a duplicate is refused with `errc::duplicate_message_id` without a server
///   error, so the unit stays usable. When another open unit holds the same id, `add` waits for
///   it and refuses the id if that unit commits.
///
/// Rows live in `<schema>.letterbox_outbox` (see `schema`). Reads see committed rows only.
///
/// Thread safety: every member function may be called concurrently, from any number of
/// processes; a unit of work is used by one thread at a time.
///
/// Example:
///
///     letterbox::postgres::outbox_store outbox(db);
///     auto uow = db.begin();
///     // ... business writes on uow.connection() ...
///     if (auto ec = outbox.add(uow, {msg, "order", order_id}, clock.wall_now()))
///         return ec;
///     return uow.commit();
class outbox_store {
public:
    using outbox_store_concept = outbox_store_tag;
    using unit_of_work_type = postgres::unit_of_work;

    /// A store on `db`'s schema. `db` must be open.
    explicit outbox_store(const database& db, outbox_options options = {});

    /// Stages `entry` in `uow` (see `outbox_store` concept). `errc::duplicate_message_id`,
    /// `errc::payload_malformed` and `errc::precondition_failed` (the nil id) leave the unit
    /// usable; a database error fails it.
    [[nodiscard]] std::error_code add(unit_of_work& uow, const outbox_entry& entry, store_time now);

    std::vector<outbox_record> claim(std::string_view owner, std::size_t max_rows,
                                     store_time::duration lease, store_time now,
                                     std::error_code& ec);

    [[nodiscard]] std::error_code mark_published(const message_id& id, std::string_view owner,
                                                 store_time now);
    /// `outbox_batch_settler`: one statement, in one transaction with the check of the rows it
    /// did not mark.
    [[nodiscard]] std::error_code mark_published(std::span<const message_id> ids,
                                                 std::string_view owner, store_time now,
                                                 std::vector<std::error_code>& results);
    [[nodiscard]] std::error_code record_failure(const message_id& id, std::string_view owner,
                                                 std::string_view error, store_time next_attempt_at,
                                                 std::uint32_t max_attempts, store_time now);
    [[nodiscard]] std::error_code park(const message_id& id, std::string_view reason);
    [[nodiscard]] std::error_code unpark(const message_id& id, store_time now);
    std::size_t release_expired_leases(store_time now, std::error_code& ec);
    std::size_t purge_published(store_time older_than, std::error_code& ec);

    std::optional<outbox_record> find(const message_id& id, std::error_code& ec);
    std::vector<outbox_record> list(const outbox_query& query, std::error_code& ec);
    outbox_stats stats(store_time now, std::error_code& ec);

private:
    struct statements;
    /// Runs `sql` (with the id as $1 and `args` after it) on one row; when it changes none,
    /// tells `otherwise` (the row exists) from `errc::record_not_found`.
    [[nodiscard]] std::error_code update_row(const message_id& id, errc otherwise,
                                             const std::string& sql,
                                             std::initializer_list<param> args);
    std::size_t count_changes(const std::string& sql, store_time at, std::error_code& ec);

    std::shared_ptr<detail::database_state> db_;
    std::shared_ptr<const statements> sql_;
};

} // namespace letterbox::postgres

#if LETTERBOX_HEADER_ONLY
#include <letterbox/postgres/impl/outbox_store.hpp>
#endif
