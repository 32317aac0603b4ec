// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/inbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/store_time.hpp>
#include <letterbox/testing/pipeline_defect.hpp>

#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

/// An `inbox_store` in front of the application's, for a simulated run: while `busy()` says so,
/// recording fails with `errc::store_busy`, as the SQLite store reports a database another
/// writer holds locked (F-17). Two of the self-test's defects (`pipeline_defect`) break it:
/// with `inbox_check_outside_transaction` the check-and-record is made at once, outside the
/// caller's unit of work (kept here, as another store would keep it), so it stays even when
/// that unit rolls back; with `inbox_key_without_consumer` every record is made under one
/// consumer id, so the record of one consumer makes the message a duplicate for all others.
template <inbox_store Inner>
class simulated_inbox_store {
public:
    using inbox_store_concept = inbox_store_tag;
    using unit_of_work_type = typename Inner::unit_of_work_type;

    simulated_inbox_store(Inner& inner, std::function<bool()> busy, pipeline_defect defect)
        : inner_(&inner)
        , busy_(std::move(busy))
        , outside_transaction_(defect == pipeline_defect::inbox_check_outside_transaction)
        , without_consumer_(defect == pipeline_defect::inbox_key_without_consumer) {}

    std::error_code try_record(unit_of_work_type& u, std::string_view consumer,
                               const message_id& id, store_time now) {
        if (busy_ && busy_())
            return make_error_code(errc::store_busy);
        consumer = key(consumer);
        if (!outside_transaction_)
            return inner_->try_record(u, consumer, id, now);
        if (!outside_.emplace(std::string(consumer), id).second)
            return make_error_code(errc::already_processed);
        return {};
    }

    bool contains(std::string_view consumer, const message_id& id, std::error_code& ec) {
        return inner_->contains(key(consumer), id, ec);
    }
    std::size_t size(std::error_code& ec) { return inner_->size(ec); }
    std::size_t purge(store_time older_than, std::error_code& ec) {
        return inner_->purge(older_than, ec);
    }

private:
    std::string_view key(std::string_view consumer) const noexcept {
        return without_consumer_ ? std::string_view("any-consumer") : consumer;
    }

    Inner* inner_;
    std::function<bool()> busy_;
    bool outside_transaction_;
    bool without_consumer_;
    std::set<std::pair<std::string, message_id>> outside_;
};

} // namespace letterbox::testing::detail
