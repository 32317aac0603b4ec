// SPDX-License-Identifier: BSL-1.0
// Must NOT compile cleanly: every line marked `// discarded` drops the error code of a store or
// unit-of-work call, and each must be diagnosed as an ignored [[nodiscard]] result (and nothing
// else may be). check.py builds this file and compares the diagnosed lines with the marked ones,
// so removing [[nodiscard]] from any of these calls fails the test `nodiscard`. One call per line
// and no templates: a line diagnosed for one model must not hide another model's missing
// attribute.

#include <letterbox/event_sourcing/in_memory_event_store.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>
#include <letterbox/saga/in_memory_saga_store.hpp>
#include <letterbox/testing/archetypes/event_store.hpp>
#include <letterbox/testing/archetypes/inbox_store.hpp>
#include <letterbox/testing/archetypes/outbox_store.hpp>
#include <letterbox/testing/archetypes/saga_store.hpp>
#include <letterbox/testing/archetypes/unit_of_work.hpp>

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

#if defined(LETTERBOX_NODISCARD_SQLITE)
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
