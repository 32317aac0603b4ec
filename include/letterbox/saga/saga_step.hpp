// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>

#include <chrono>
#include <functional>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// One step of an orchestrated saga (`saga_definition`): a command to a participant, the reply
/// that ends it, and the command that undoes it.
///
/// - `name` names the step; while the saga waits for the step's reply, it is the instance's
///   state. Unique within the saga.
/// - `invoke` makes the command that does the step from the saga's data: a message with its
///   type, routing key (and exchange) and body, as `saga_command` makes it. The orchestrator
///   gives it an id, the saga's headers, `reply_to` and the instance id as `correlation_id`,
///   and sends it through the outbox in the transaction that entered the step.
/// - `compensate`, if set, makes the command that undoes a step that succeeded, or that timed
///   out (it may have happened). A step without one has nothing to undo (a check, a read), and
///   is skipped when the saga compensates. Its participant must treat a compensation of a
///   command it never applied as done (nothing to undo), and refuse that command if it comes
///   later. A timed-out step's compensation is made from the data as the step left it, without
///   what `on_reply` would have added: name the effect by what the command carried (the order),
///   not by what its reply returned (a reservation id).
/// - `on_reply`, if set, applies the step's success reply to the data (a reservation id, say);
///   it runs in the transaction that moves the saga on.
/// - `timeout`, if not zero, is how long the step may wait for its reply: then its outcome is
///   unknown, and the saga compensates it and the steps before it. The same bound applies to
///   the reply to its compensation, which is then sent again, as after a failure.
template <class Data>
struct saga_step {
    std::string name{};
    std::function<message(const Data&)> invoke{};
    std::function<message(const Data&)> compensate{};
    std::function<void(Data&, const message&)> on_reply{};
    std::chrono::milliseconds timeout{0};
};

} // namespace letterbox
