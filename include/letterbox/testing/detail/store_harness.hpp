// SPDX-License-Identifier: BSL-1.0
#pragma once

// What outbox_store_harness and inbox_store_harness hold, written once. Private to the store
// suites.

#include <letterbox/config.hpp>

#include <functional>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

/// The store under test, a way to begin a unit of work for it, and the model's features
/// (`outbox_store_features` or `inbox_store_features`). The public harnesses derive from it,
/// so a check names `h.store`, `h.begin()` and `h.features` whichever store it checks.
template <class Store, class Features>
struct store_harness {
    Store& store;
    std::function<typename Store::unit_of_work_type()> begin;
    Features features{};
};

} // namespace letterbox::testing::detail
