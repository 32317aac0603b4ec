// SPDX-License-Identifier: BSL-1.0
// Must NOT compile cleanly: every line marked `// discarded` drops the error code of a store or
// unit-of-work call, and each must be diagnosed as an ignored [[nodiscard]] result (and nothing
// else may be). check.py builds this file and compares the diagnosed lines with the marked ones,
// so removing [[nodiscard]] from any of these calls fails the test `nodiscard`. One call per line
// and no templates: a line diagnosed for one model must not hide another model's missing
// attribute.

#include <letterbox/event_sourcing/aggregate_repository.hpp>
#include <letterbox/event_sourcing/in_memory_checkpoint_store.hpp>
#include <letterbox/event_sourcing/in_memory_event_store.hpp>
#include <letterbox/event_sourcing/in_memory_snapshot_store.hpp>
#include <letterbox/event_sourcing/projection_runner.hpp>
#include <letterbox/event_sourcing/publishing_event_store.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>
#include <letterbox/saga/in_memory_saga_store.hpp>
#include <letterbox/testing/archetypes/checkpoint_store.hpp>
#include <letterbox/testing/archetypes/event_store.hpp>
#include <letterbox/testing/archetypes/inbox_store.hpp>
#include <letterbox/testing/archetypes/outbox_store.hpp>
#include <letterbox/testing/archetypes/saga_store.hpp>
#include <letterbox/testing/archetypes/snapshot_store.hpp>
#include <letterbox/testing/archetypes/unit_of_work.hpp>
#include <letterbox/virtual_clock.hpp>

#if defined(LETTERBOX_NODISCARD_SQLITE)
#include <letterbox/sqlite.hpp>
#endif

#include <span>
#include <system_error>
#include <vector>

namespace nodiscard_check {

using letterbox::message_id;
using letterbox::store_time;

inline void in_memory(letterbox::in_memory_outbox_store& outbox,
                      letterbox::in_memory_inbox_store& inbox,
                      letterbox::in_memory_unit_of_work& uow, const letterbox::outbox_entry& e,
                      const message_id& id, store_time now) {
    outbox.add(uow, e, now);                                 // discarded
    outbox.mark_published(id, "relay", now);                 // discarded
    outbox.record_failure(id, "relay", "boom", now, 3, now); // discarded
    outbox.park(id, "poison");                               // discarded
    outbox.unpark(id, now);                                  // discarded
    std::vector<std::error_code> results;
    outbox.mark_published(std::span<const message_id>(), "relay", now, results); // discarded
    inbox.try_record(uow, "billing", id, now);                                   // discarded
    uow.on_commit([] {});                                                        // discarded
    uow.commit();                                                                // discarded
    uow.rollback();                                                              // discarded
}

inline void archetypes(letterbox::testing::outbox_store_archetype& outbox,
                       letterbox::testing::inbox_store_archetype& inbox,
                       letterbox::testing::unit_of_work_archetype& uow,
                       const letterbox::outbox_entry& e, const message_id& id, store_time now) {
    outbox.add(uow, e, now);                                 // discarded
    outbox.mark_published(id, "relay", now);                 // discarded
    outbox.record_failure(id, "relay", "boom", now, 3, now); // discarded
    outbox.park(id, "poison");                               // discarded
    outbox.unpark(id, now);                                  // discarded
    inbox.try_record(uow, "billing", id, now);               // discarded
    uow.on_commit([] {});                                    // discarded
    uow.commit();                                            // discarded
    uow.rollback();                                          // discarded
}

inline void sagas(letterbox::in_memory_saga_store& store,
                  letterbox::testing::saga_store_archetype& archetype,
                  letterbox::in_memory_unit_of_work& uow,
                  letterbox::testing::unit_of_work_archetype& archetype_uow,
                  const letterbox::saga_instance& s) {
    store.insert(uow, s);               // discarded
    store.update(uow, s);               // discarded
    archetype.insert(archetype_uow, s); // discarded
    archetype.update(archetype_uow, s); // discarded
}

inline void events(letterbox::in_memory_event_store& store,
                   letterbox::testing::event_store_archetype& archetype,
                   letterbox::in_memory_unit_of_work& uow,
                   letterbox::testing::unit_of_work_archetype& archetype_uow,
                   std::span<const letterbox::event_data> events, store_time now,
                   letterbox::append_result& result) {
    const auto any = letterbox::expected_version::any();
    store.append(uow, "a", any, events, now, result);               // discarded
    archetype.append(archetype_uow, "a", any, events, now, result); // discarded
}

inline void snapshots(letterbox::in_memory_snapshot_store& store,
                      letterbox::testing::snapshot_store_archetype& archetype,
                      letterbox::in_memory_unit_of_work& uow,
                      letterbox::testing::unit_of_work_archetype& archetype_uow,
                      const letterbox::snapshot& snap) {
    store.save(uow, snap);               // discarded
    archetype.save(archetype_uow, snap); // discarded
}

inline void checkpoints(letterbox::in_memory_checkpoint_store& store,
                        letterbox::testing::checkpoint_store_archetype& archetype,
                        letterbox::in_memory_unit_of_work& uow,
                        letterbox::testing::unit_of_work_archetype& archetype_uow) {
    store.save(uow, "balances", 0, 7);               // discarded
    archetype.save(archetype_uow, "balances", 0, 7); // discarded
}

struct counter_fold {
    using state_type = int;
    static constexpr std::uint32_t fold_version = 1;
    void apply(int& n, const letterbox::recorded_event&) const { ++n; }
};
struct nothing_projection {
    using unit_of_work_type = letterbox::in_memory_unit_of_work;
    letterbox::in_memory_unit_of_work begin() { return {}; }
    std::error_code apply(unit_of_work_type&, const letterbox::recorded_event&) { return {}; }
    std::error_code reset(unit_of_work_type&) { return {}; }
};
using publishing = letterbox::publishing_event_store<letterbox::in_memory_event_store,
                                                     letterbox::in_memory_outbox_store>;
using repository = letterbox::aggregate_repository<counter_fold, letterbox::in_memory_event_store,
                                                   letterbox::in_memory_snapshot_store>;
using runner = letterbox::projection_runner<letterbox::in_memory_event_store,
                                            letterbox::in_memory_checkpoint_store,
                                            nothing_projection, letterbox::virtual_clock>;

inline void event_sourcing(publishing& events, repository& accounts, runner& projection,
                           letterbox::in_memory_unit_of_work& uow,
                           const letterbox::aggregate<int>& a,
                           std::span<const letterbox::event_data> e, store_time now,
                           letterbox::append_result& result) {
    const auto any = letterbox::expected_version::any();
    events.append(uow, "a", any, e, now, result); // discarded
    accounts.append(uow, a, e, now, result);      // discarded
    accounts.save_snapshot(uow, a);               // discarded
    projection.reset();                           // discarded
}

#if defined(LETTERBOX_NODISCARD_SQLITE)
inline void sqlite_snapshots(letterbox::sqlite::snapshot_store& store,
                             letterbox::sqlite::unit_of_work& uow,
                             const letterbox::snapshot& snap) {
    store.save(uow, snap); // discarded
}

inline void sqlite_checkpoints(letterbox::sqlite::checkpoint_store& store,
                               letterbox::sqlite::unit_of_work& uow) {
    store.save(uow, "balances", 0, 7); // discarded
}

inline void sqlite_events(letterbox::sqlite::event_store& store,
                          letterbox::sqlite::unit_of_work& uow,
                          std::span<const letterbox::event_data> events, store_time now,
                          letterbox::append_result& result) {
    const auto any = letterbox::expected_version::any();
    store.append(uow, "a", any, events, now, result); // discarded
}

inline void sqlite_sagas(letterbox::sqlite::saga_store& store, letterbox::sqlite::unit_of_work& uow,
                         const letterbox::saga_instance& s) {
    store.insert(uow, s); // discarded
    store.update(uow, s); // discarded
}

inline void sqlite(letterbox::sqlite::outbox_store& outbox, letterbox::sqlite::inbox_store& inbox,
                   letterbox::sqlite::unit_of_work& uow, const letterbox::outbox_entry& e,
                   const message_id& id, store_time now) {
    outbox.add(uow, e, now);                                 // discarded
    outbox.mark_published(id, "relay", now);                 // discarded
    outbox.record_failure(id, "relay", "boom", now, 3, now); // discarded
    outbox.park(id, "poison");                               // discarded
    outbox.unpark(id, now);                                  // discarded
    std::vector<std::error_code> results;
    outbox.mark_published(std::span<const message_id>(), "relay", now, results); // discarded
    inbox.try_record(uow, "billing", id, now);                                   // discarded
    uow.on_commit([] {});                                                        // discarded
    uow.commit();                                                                // discarded
    uow.rollback();                                                              // discarded
}

inline void sqlite_helpers(letterbox::sqlite::connection& conn) {
    conn.exec("VACUUM");                      // discarded
    letterbox::sqlite::schema::migrate(conn); // discarded
    std::error_code ec;
    auto st = conn.prepare("SELECT 1", ec);
    st->execute(); // discarded
}
#endif

} // namespace nodiscard_check
