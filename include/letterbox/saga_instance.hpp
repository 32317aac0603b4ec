// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/store_time.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// A durable timeout of a saga instance ("if no payment reply in 30 s, compensate"): `name`
/// is due at `due`, unless a later write of the instance drops it first. Stored with the
/// instance, so it survives a restart.
struct saga_timeout {
    std::string name{};
    store_time due{};

    friend bool operator==(const saga_timeout&, const saga_timeout&) = default;
};

/// One instance of a saga, as a `saga_store` keeps it.
///
/// - `saga_type` names the saga's definition ("order-fulfilment"); every other key is within
///   it, so one store holds the instances of several sagas.
/// - `id` is the instance's identity: it travels in the saga's messages, and their replies
///   find the instance through it.
/// - `correlation` is the business key that started it (an order id). At most one instance of
///   a saga type has a given correlation, finished or not, until it is purged: a second start
///   for the same order finds the first instance instead of making another.
/// - `state` is the name of the state the instance is in.
/// - `version` is 0 for an instance never stored; the store sets 1 on insert and adds 1 on
///   each update. A write names the version it read, and fails if the stored one moved on.
/// - `data` is the saga's own data, as JSON text.
/// - `finished` says the instance reached a final state; it stays readable (so a late
///   message for it is recognised) until `purge_finished` deletes it.
/// - `timeouts` are the pending timeouts; each write replaces them all.
/// - `updated_at` is the time of the last write, as the writer gave it.
struct saga_instance {
    std::string saga_type{};
    std::string id{};
    std::string correlation{};
    std::string state{};
    std::uint64_t version = 0;
    std::string data{};
    bool finished = false;
    std::vector<saga_timeout> timeouts{};
    store_time updated_at{};

    friend bool operator==(const saga_instance&, const saga_instance&) = default;
};

/// Whether no two of `instance`'s timeouts have one name: a `saga_store` refuses an instance
/// that repeats one (`errc::invalid_argument`).
inline bool has_distinct_timeout_names(const saga_instance& instance) {
    std::vector<std::string_view> names;
    names.reserve(instance.timeouts.size());
    for (const auto& t : instance.timeouts)
        names.push_back(t.name);
    std::sort(names.begin(), names.end());
    return std::adjacent_find(names.begin(), names.end()) == names.end();
}

/// A timeout that is due, as `saga_store::due_timeouts` lists it: which instance, which
/// timeout, and when it was due.
struct saga_timeout_due {
    std::string saga_type{};
    std::string id{};
    std::string name{};
    store_time due{};

    friend bool operator==(const saga_timeout_due&, const saga_timeout_due&) = default;
};

} // namespace letterbox
