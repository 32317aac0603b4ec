// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Deliberately broken variants of the pipeline, for the self-test: each one gives up a step
/// that a guarantee rests on, and a run of `check_pipeline` with it must report violations
/// (with the seed that shows them). If a checker never fails on these, it proves nothing on
/// the correct pipeline either.
enum class pipeline_defect : std::uint8_t {
    none,
    /// The relay's publish reports success as soon as it is sent, so the relay marks the row
    /// published before the broker confirmed it. A publish the broker then refuses (nack) or
    /// never stores is lost: `no-loss` fails.
    mark_before_confirm,
    /// The consumer acknowledges each delivery as it arrives, before its handler's commit. A
    /// crash before the commit loses the message: `no-loss` fails.
    ack_before_commit,
    /// The inbox record is written and committed in a unit of work of its own, before the
    /// effect's. A crash between the two leaves a message marked handled without its effect,
    /// and the redelivery is skipped as a duplicate: `no-loss` fails.
    inbox_check_outside_transaction,
    /// The relay's publish treats a `basic.return` (the message was unroutable: no queue
    /// took it) as success, so the relay marks the row published though no queue holds its
    /// message. A publish while the bindings are removed or the queues deleted is lost:
    /// `no-loss` fails.
    return_as_success,
    /// The inbox keys its records on the message id alone, without the consumer id, so two
    /// consumers of the same event deduplicate each other: the second to handle it skips it
    /// as a duplicate. With two consumers or more (a fan-out), `no-loss` fails.
    inbox_key_without_consumer,
    /// With group commit on (the defect turns it on unless the options say otherwise), the
    /// consumer acknowledges each delivery of a batch as soon as its handler has staged it,
    /// before the batch's commit. A crash before that commit loses the acknowledged messages
    /// of the batch: `no-loss` fails.
    ack_before_batch_commit,
    /// With message groups on (the defect turns them on unless the options say otherwise), the
    /// consumers run them in relaxed order (`group_order::relaxed`) while the run checks every
    /// aggregate as strict order promises: a message sent to a retry queue leaves its group's
    /// line, and the group's next message is handled before it: `aggregate-order` fails.
    groups_let_retries_overtake,
};

/// The name of a defect, as reports spell it.
constexpr std::string_view to_string(pipeline_defect d) noexcept {
    switch (d) {
    case pipeline_defect::none:
        return "none";
    case pipeline_defect::mark_before_confirm:
        return "mark_before_confirm";
    case pipeline_defect::ack_before_commit:
        return "ack_before_commit";
    case pipeline_defect::inbox_check_outside_transaction:
        return "inbox_check_outside_transaction";
    case pipeline_defect::return_as_success:
        return "return_as_success";
    case pipeline_defect::inbox_key_without_consumer:
        return "inbox_key_without_consumer";
    case pipeline_defect::ack_before_batch_commit:
        return "ack_before_batch_commit";
    case pipeline_defect::groups_let_retries_overtake:
        return "groups_let_retries_overtake";
    }
    return "unknown";
}

} // namespace letterbox::testing
