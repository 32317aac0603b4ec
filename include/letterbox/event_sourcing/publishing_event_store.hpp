// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/append_result.hpp>
#include <letterbox/concepts/event_store.hpp>
#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/concepts/unit_of_work.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/event_metadata.hpp>
#include <letterbox/event_data.hpp>
#include <letterbox/event_sourcing/event_publication.hpp>
#include <letterbox/expected_version.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox_record.hpp>
#include <letterbox/recorded_event.hpp>
#include <letterbox/store_time.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// An `event_store` that also adds the events `publication` selects to an outbox, in the same
/// unit of work as the append: an event that commits is published at least once by the relay,
/// and one that rolls back is never published. It is the event store to hand to the
/// aggregates and projections: it models `event_store` itself, reading through to `Events`.
///
/// Each published event's message has the event's id (so a consumer's inbox and the event
/// store name it alike), its type, its data as a JSON body, `publication.exchange` and the
/// type as routing key, and the trace and causation headers its metadata holds (see
/// `caused_by(cause, event_data&)`). Its outbox aggregate is (`publication.aggregate_type`,
/// stream): one stream's events are published in order.
///
/// The append and the outbox rows are one step: when an outbox row is refused (a duplicate
/// message id; data that is not JSON, `errc::payload_malformed`; a nil id), the append's
/// events are taken back too (a savepoint of the unit), and the error is returned with the
/// unit still usable. So a published event's data must be JSON, as the outbox requires.
///
/// Thread safety: as `Events` and `Outbox`; the object holds references and options only.
///
/// Example:
///
///     letterbox::publishing_event_store events(event_store, outbox,
///                                              {.exchange = "accounts",
///                                               .stream_prefixes = {"account-"}});
///     auto uow = db.begin();
///     letterbox::append_result at;
///     if (auto ec = events.append(uow, "account-42", letterbox::expected_version::exactly(7),
///                                 deposited, clock.wall_now(), at))
///         return ec;
///     return uow.commit(); // the events and their outbox rows, or nothing
template <event_store Events, outbox_store Outbox>
    requires std::same_as<typename Events::unit_of_work_type, typename Outbox::unit_of_work_type> &&
        savepoint_unit_of_work<typename Events::unit_of_work_type>
class publishing_event_store {
public:
    using event_store_concept = event_store_tag;
    using unit_of_work_type = typename Events::unit_of_work_type;

    /// Both stores must outlive this object.
    publishing_event_store(Events& events, Outbox& outbox, event_publication publication)
        : events_(&events)
        , outbox_(&outbox)
        , publication_(std::move(publication)) {}

    /// Appends as `Events` does, then adds an outbox row for each event `publication` selects.
    [[nodiscard]] std::error_code append(unit_of_work_type& u, std::string_view stream,
                                         expected_version expected,
                                         std::span<const event_data> events, store_time now,
                                         append_result& result) {
        if (auto ec = u.savepoint())
            return ec;
        auto ec = events_->append(u, stream, expected, events, now, result);
        for (std::size_t i = 0; !ec && i < events.size(); ++i)
            if (publication_.publishes(stream, events[i].type))
                ec = outbox_->add(u, entry_of(stream, events[i]), now);
        if (ec) {
            if (auto back = u.rollback_to_savepoint(); back && back != ec)
                return back;
            return ec;
        }
        return u.release_savepoint();
    }

    std::vector<recorded_event> read_stream(std::string_view stream, std::uint64_t after_version,
                                            std::size_t limit, std::error_code& ec) {
        return events_->read_stream(stream, after_version, limit, ec);
    }
    std::vector<recorded_event> read_all(std::uint64_t after_position, std::size_t limit,
                                         std::error_code& ec) {
        return events_->read_all(after_position, limit, ec);
    }
    std::uint64_t stream_version(std::string_view stream, std::error_code& ec) {
        return events_->stream_version(stream, ec);
    }
    std::uint64_t head_position(std::error_code& ec) { return events_->head_position(ec); }

    /// Begins a unit of work as `Events` does, when it can.
    unit_of_work_type begin() requires requires(Events& e) {
        { e.begin() } -> std::same_as<unit_of_work_type>;
    }
    { return events_->begin(); }

    /// What it publishes, and where.
    const event_publication& publication() const noexcept { return publication_; }

private:
    outbox_entry entry_of(std::string_view stream, const event_data& e) const {
        outbox_entry entry;
        entry.msg.id = e.id;
        entry.msg.type = e.type;
        entry.msg.exchange = publication_.exchange;
        entry.msg.routing_key = e.type;
        entry.msg.body = e.data;
        entry.msg.properties.content_type = "application/json";
        detail::apply_event_metadata(e.metadata, entry.msg);
        entry.aggregate_type = publication_.aggregate_type;
        entry.aggregate_id = std::string(stream);
        return entry;
    }

    Events* events_;
    Outbox* outbox_;
    event_publication publication_;
};

} // namespace letterbox
