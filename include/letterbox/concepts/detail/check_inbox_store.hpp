// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/inbox_store.hpp>
#include <letterbox/config.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// Checks `S` against `inbox_store` one requirement at a time (see `check_transport`).
template <class S>
consteval bool check_inbox_store() {
    static_assert(inbox_store_opted_in<S>,
                  "letterbox::inbox_store: the type does not opt in. An inbox store declares "
                  "`using inbox_store_concept = letterbox::inbox_store_tag;` once it keeps the "
                  "contract of docs/concepts/inbox_store.md");
    static_assert(has_unit_of_work<S>,
                  "letterbox::inbox_store: missing `unit_of_work_type`, a letterbox::unit_of_work "
                  "(commit, rollback and on_commit, each returning std::error_code)");
    static_assert(inbox_recorder<S>,
                  "letterbox::inbox_store: missing `std::error_code try_record(unit_of_work_type&, "
                  "std::string_view consumer, const message_id&, store_time)`");
    static_assert(inbox_reader<S>,
                  "letterbox::inbox_store: missing `bool contains(std::string_view consumer, const "
                  "message_id&, std::error_code&)` or `std::size_t size(std::error_code&)`");
    static_assert(inbox_purger<S>, "letterbox::inbox_store: missing `std::size_t "
                                   "purge(store_time older_than, std::error_code&)`");
    return true;
}

} // namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail
