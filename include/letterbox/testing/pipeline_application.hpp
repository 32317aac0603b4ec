// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/inbox_store.hpp>
#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/config.hpp>
#include <letterbox/message.hpp>

#include <concepts>
#include <cstddef>
#include <filesystem>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// The application code that `run_pipeline` and `check_pipeline` put under faults: a producer
/// that writes business data and its outbox in one transaction, and a consumer whose handler
/// applies each message's effect through an inbox.
///
/// Requirements, for `A` with `a` an `A&`, `m` a `const message&`, `p` an
/// `A::outbox_store_type::unit_of_work_type&`, `c` an `A::inbox_store_type::unit_of_work_type&`
/// and `dir` a `const std::filesystem::path&`:
/// 1. `A(dir)` makes a fresh application whose files (databases) live under `dir`, an empty
///    directory of its own for this run;
/// 2. `a.outbox()` returns the producer's `outbox_store`, `a.inbox()` the consumer's
///    `inbox_store` (they may live in one database or two);
/// 3. `a.begin_producer()` and `a.begin_consumer()` begin units of work of those stores;
/// 4. `a.write(p, m)`: the business write of the transaction that emits `m` (the runner adds
///    `m` to the outbox in the same unit and commits or rolls it back);
/// 5. `a.handle(m, c)`: the handler under test, which applies the effect of `m` through `c`
///    (the runner wraps it in `letterbox::idempotent`, so the inbox record commits with it).
///
/// Optional: `a.effects(m.id)` returning a `std::size_t` counts the effects of a message as the
/// application's own data shows them. When present, the runner compares it with the history
/// after the run, which catches effects written outside the unit of work (they survive a
/// rollback, so a redelivery applies them twice).
///
/// Does not require: copying or moving; thread safety (everything runs on the simulation's
/// thread).
template <class A>
concept pipeline_application = std::constructible_from<A, const std::filesystem::path&> &&
    outbox_store<typename A::outbox_store_type> && inbox_store<typename A::inbox_store_type> &&
    requires(A& a, const message& m, typename A::outbox_store_type::unit_of_work_type& p,
             typename A::inbox_store_type::unit_of_work_type& c) {
    { a.outbox() } -> std::same_as<typename A::outbox_store_type&>;
    { a.inbox() } -> std::same_as<typename A::inbox_store_type&>;
    { a.begin_producer() } -> std::same_as<typename A::outbox_store_type::unit_of_work_type>;
    { a.begin_consumer() } -> std::same_as<typename A::inbox_store_type::unit_of_work_type>;
    a.write(p, m);
    a.handle(m, c);
};

/// Whether a `pipeline_application` offers the optional `effects(id)` count.
template <class A>
concept counts_effects = requires(A& a, const message_id& id) {
    { a.effects(id) } -> std::convertible_to<std::size_t>;
};

} // namespace letterbox::testing
