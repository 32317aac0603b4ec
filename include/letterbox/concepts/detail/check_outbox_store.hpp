// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/config.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// Checks `S` against `outbox_store` one requirement at a time (see `check_transport`).
template <class S>
consteval bool check_outbox_store() {
    static_assert(outbox_store_opted_in<S>,
                  "letterbox::outbox_store: the type does not opt in. An outbox store declares "
                  "`using outbox_store_concept = letterbox::outbox_store_tag;` once it keeps the "
                  "contract of docs/concepts/outbox_store.md");
    static_assert(has_unit_of_work<S>,
                  "letterbox::outbox_store: missing `unit_of_work_type`, a letterbox::unit_of_work "
                  "(commit, rollback and on_commit, each returning std::error_code)");
    static_assert(outbox_writer<S>, "letterbox::outbox_store: missing `std::error_code "
                                    "add(unit_of_work_type&, const outbox_entry&, store_time)`");
    static_assert(outbox_claimer<S>,
                  "letterbox::outbox_store: missing `claim(owner, n, lease, now, ec)` or "
                  "`release_expired_leases(now, ec)` (docs/concepts/outbox_store.md)");
    static_assert(outbox_settler<S>,
                  "letterbox::outbox_store: missing `mark_published(id, owner, now)` or "
                  "`record_failure(id, owner, error, at, max, now)`, each returning "
                  "std::error_code");
    static_assert(outbox_maintainer<S>,
                  "letterbox::outbox_store: missing `park(id, reason)`, `unpark(id, now)` or "
                  "`purge_published(now, ec)`");
    static_assert(outbox_reader<S>, "letterbox::outbox_store: missing `find(id, ec)`, "
                                    "`list(query, ec)` or `stats(now, ec)`");
    return true;
}

} // namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail
