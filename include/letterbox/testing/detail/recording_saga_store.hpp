// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/saga_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/saga/in_memory_saga_store.hpp>
#include <letterbox/saga_instance.hpp>
#include <letterbox/store_time.hpp>
#include <letterbox/testing/saga_history_event.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

/// An `in_memory_saga_store` that reports every committed write as a `moved` event: from the
/// state the instance had to the one written, with the cause that `cause(old)` names at the
/// time of the write (the saga simulation knows whether a reply or a timeout is being applied).
class recording_saga_store {
public:
    using saga_store_concept = saga_store_tag;
    using unit_of_work_type = in_memory_unit_of_work;
    using cause_function = std::function<std::string(const std::optional<saga_instance>&)>;
    using record_function = std::function<void(saga_history_event)>;

    recording_saga_store(cause_function cause, record_function record)
        : cause_(std::move(cause))
        , record_(std::move(record)) {}

    std::error_code insert(unit_of_work_type& u, const saga_instance& instance) {
        if (auto ec = inner_.insert(u, instance))
            return ec;
        return report(u, std::nullopt, instance);
    }

    std::error_code update(unit_of_work_type& u, const saga_instance& instance) {
        std::error_code ec;
        auto old = inner_.find(instance.saga_type, instance.id, ec);
        if (ec)
            return ec;
        if ((ec = inner_.update(u, instance)))
            return ec;
        return report(u, old, instance);
    }

    std::optional<saga_instance> find(std::string_view type, std::string_view id,
                                      std::error_code& ec) {
        return inner_.find(type, id, ec);
    }
    std::optional<saga_instance>
    find_by_correlation(std::string_view type, std::string_view correlation, std::error_code& ec) {
        return inner_.find_by_correlation(type, correlation, ec);
    }
    std::size_t size(std::error_code& ec) { return inner_.size(ec); }
    std::vector<saga_timeout_due> due_timeouts(store_time now, std::size_t limit,
                                               std::error_code& ec) {
        return inner_.due_timeouts(now, limit, ec);
    }
    std::size_t purge_finished(store_time older_than, std::error_code& ec) {
        return inner_.purge_finished(older_than, ec);
    }

private:
    std::error_code report(unit_of_work_type& u, const std::optional<saga_instance>& old,
                           const saga_instance& now) {
        saga_history_event e;
        e.what = saga_history_event::kind::moved;
        e.saga = old ? old->correlation : now.correlation;
        e.from = old ? old->state : std::string();
        e.to = now.state;
        e.cause = cause_(old);
        return u.on_commit([this, e = std::move(e)] { record_(e); });
    }

    in_memory_saga_store inner_;
    cause_function cause_;
    record_function record_;
};

} // namespace letterbox::testing::detail
