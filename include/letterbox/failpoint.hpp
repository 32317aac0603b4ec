// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>

#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <string_view>

/// Failpoints: the named places of the pipeline where a test can make a process die, exactly
/// where a `kill -9` would stop it (DESIGN §3.9; reliability-anchors F-05).
///
/// They are compiled in only when `LETTERBOX_FAILPOINTS` is defined, which linking
/// `letterbox::testing` does (its CMake target carries the definition). In any other build
/// every failpoint check is discarded at compile time (`if constexpr`), so a production
/// binary pays nothing, not even a branch; setting a failpoint hook there is refused
/// (`errc::precondition_failed` for `relay_options::failpoint`, a `static_assert` for
/// `idempotent_handler::with_failpoint`). Define it for a whole program or not at all: the
/// definitions differ, so the macro also changes `LETTERBOX_ABI_NAMESPACE` (config.hpp), and
/// translation units that disagree keep apart instead of silently sharing one definition.
#if defined(LETTERBOX_FAILPOINTS)
#define LETTERBOX_FAILPOINTS_ENABLED 1
#else
#define LETTERBOX_FAILPOINTS_ENABLED 0
#endif

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// Whether failpoints are compiled into this program (`LETTERBOX_FAILPOINTS` is defined).
inline constexpr bool failpoints_enabled = LETTERBOX_FAILPOINTS_ENABLED != 0;

/// The crash points: the pipeline's six, in the order a message passes them, then a
/// projection's two.
///
/// - `after_business_commit`: the business transaction and its outbox row committed; the writer
///   dies before it wakes the relay (`outbox_relay::waker()`), so the row is found only by the
///   relay's polling, or by another relay.
/// - `after_publish_before_confirm`: the relay handed the row's message to the broker and dies
///   before the confirm (`relay_point::after_publish_sent`): the message may be stored, the row
///   is still pending, and the next relay publishes it again.
/// - `after_confirm_before_mark`: the broker confirmed; the relay dies before marking the row
///   published (`relay_point::after_confirm`): a duplicate publish follows.
/// - `after_effect_before_inbox_commit`: the handler's effect ran in the consumer's unit of work,
///   which dies uncommitted (`idempotent_handler`): the effect and the inbox record roll back
///   together, and the redelivery applies it.
/// - `after_inbox_commit_before_ack`: the effect and the inbox record committed; the consumer
///   dies before acknowledging: the redelivery is absorbed by the inbox.
/// - `between_republish_and_remove`: a dead-letter replay republished a message (confirmed) and
///   dies before removing it from the dead-letter queue
///   (`dead_letter_queue_options::after_republish_before_remove`): both copies exist, and the
///   inbox absorbs the second.
///
/// Two more are a projection's (`projection_runner`), outside the pipeline's six:
/// - `after_projection_apply_before_commit`: the projection applied a batch of events to its
///   read model in its unit of work, with the checkpoint's move, and dies before the commit:
///   both roll back together, and the next runner applies the batch again, once;
/// - `after_projection_commit_before_wake`: the read model and the checkpoint committed; the
///   runner dies before it records its new position and wakes the queries waiting for it: the
///   next runner starts from the committed checkpoint, and applies nothing twice.
enum class failpoint : std::uint8_t {
    after_business_commit,
    after_publish_before_confirm,
    after_confirm_before_mark,
    after_effect_before_inbox_commit,
    after_inbox_commit_before_ack,
    between_republish_and_remove,
    after_projection_apply_before_commit,
    after_projection_commit_before_wake,
};

/// The pipeline's failpoints, in pipeline order (the projection's two are not among them).
inline constexpr std::array<failpoint, 6> all_failpoints{
    failpoint::after_business_commit,         failpoint::after_publish_before_confirm,
    failpoint::after_confirm_before_mark,     failpoint::after_effect_before_inbox_commit,
    failpoint::after_inbox_commit_before_ack, failpoint::between_republish_and_remove,
};

/// The name of a failpoint as logs and test output spell it: "after_business_commit", ...
constexpr std::string_view to_string(failpoint p) noexcept {
    switch (p) {
    case failpoint::after_business_commit:
        return "after_business_commit";
    case failpoint::after_publish_before_confirm:
        return "after_publish_before_confirm";
    case failpoint::after_confirm_before_mark:
        return "after_confirm_before_mark";
    case failpoint::after_effect_before_inbox_commit:
        return "after_effect_before_inbox_commit";
    case failpoint::after_inbox_commit_before_ack:
        return "after_inbox_commit_before_ack";
    case failpoint::between_republish_and_remove:
        return "between_republish_and_remove";
    case failpoint::after_projection_apply_before_commit:
        return "after_projection_apply_before_commit";
    case failpoint::after_projection_commit_before_wake:
        return "after_projection_commit_before_wake";
    }
    return "unknown";
}

/// Decides, at a failpoint reached with message `id`, whether the process dies there (true).
/// Called on the thread of the component that reached the point; it must not call back into
/// that component.
using failpoint_hook = std::function<bool(failpoint, const message_id& id)>;

/// What a component throws from a failpoint whose hook said "die here", when it cannot stop by
/// itself (a handler runs inside its caller): the caller must treat the process as dead and
/// make no further call on its behalf (no ack, no nack).
class failpoint_halt : public std::exception {
public:
    explicit failpoint_halt(failpoint p)
        : point_(p)
        , what_("letterbox: process halted at failpoint " + std::string(to_string(p))) {}

    failpoint point() const noexcept { return point_; }
    const char* what() const noexcept override { return what_.c_str(); }

private:
    failpoint point_;
    std::string what_;
};

} // namespace letterbox
