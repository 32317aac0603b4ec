// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include <string>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::topology {

/// A queue declaration (`queue.declare`). `arguments` holds the `x-` arguments; build them
/// with `queue_arguments` for type safety. An empty name asks the broker to generate one.
struct queue {
    std::string name{};
    bool durable = true;
    bool exclusive = false;
    bool auto_delete = false;
    field_table arguments{};

    friend bool operator==(const queue&, const queue&) = default;

    /// Refuses, before anything reaches a broker, a declaration that RabbitMQ would refuse
    /// with a channel error or, worse, accept and then not honour: throws `letterbox::error`
    /// with `errc::invalid_argument`, naming the queue and the reason. Checked:
    ///
    /// - the arguments `queue_arguments::parse` refuses (a wrong type or value);
    /// - a quorum queue that is not durable, is exclusive or is auto-delete, or has
    ///   `x-max-priority` (RabbitMQ: 406) or `x-overflow: reject-publish-dlx` (accepted by
    ///   every version, which then runs the queue as `drop-head`);
    /// - `x-delivery-limit` or `x-dead-letter-strategy` on a classic queue (406);
    /// - `x-dead-letter-strategy: at-least-once` without `x-overflow: reject-publish` or
    ///   without a dead-letter exchange: RabbitMQ accepts both, logs a warning and falls back
    ///   to at-most-once, or to no dead-lettering at all (seen on 3.10.8).
    ///
    /// Not checked: what depends on the broker's version or its policies (a negative
    /// `x-delivery-limit`, see `queue_arguments::delivery_limit`), and whether the queue exists
    /// already with other arguments (the broker's 406 on declaration).
    void check() const {
        std::error_code ec;
        std::string why;
        const auto a = queue_arguments::parse(arguments, ec, why);
        auto refuse = [&](const std::string& reason) {
            throw letterbox::error(errc::invalid_argument, "queue '" + name + "': " + reason);
        };
        if (!a)
            refuse(why);
        if (a->type == queue_type::quorum) {
            if (!durable)
                refuse("a quorum queue must be durable");
            if (exclusive)
                refuse("a quorum queue cannot be exclusive");
            if (auto_delete)
                refuse("a quorum queue cannot be auto-delete");
            if (a->max_priority)
                refuse("a quorum queue takes no x-max-priority");
            if (a->overflow == overflow_behaviour::reject_publish_dlx)
                refuse("a quorum queue takes no x-overflow reject-publish-dlx");
        } else {
            if (a->delivery_limit)
                refuse("x-delivery-limit is for quorum queues only");
            if (a->dead_letter_strategy)
                refuse("x-dead-letter-strategy is for quorum queues only");
        }
        if (a->dead_letter_strategy == dead_lettering::at_least_once) {
            if (!a->dead_letter_exchange)
                refuse("at-least-once dead-lettering needs a dead-letter exchange (without one, "
                       "RabbitMQ dead-letters nothing)");
            if (a->overflow != overflow_behaviour::reject_publish)
                refuse("at-least-once dead-lettering needs x-overflow reject-publish (without "
                       "it, RabbitMQ falls back to at-most-once)");
        }
    }
};

} // namespace letterbox::topology
