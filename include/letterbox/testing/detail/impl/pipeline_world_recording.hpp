// SPDX-License-Identifier: BSL-1.0
#pragma once

// pipeline_world, out of line: recording the history: events, faults, and the observers of the
// relay and consumer processes.

#include <letterbox/config.hpp>
#include <letterbox/testing/detail/pipeline_world.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <variant>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

template <pipeline_application App>
void pipeline_world<App>::record(history_event_payload what) {
    // What settled, kept as it happens: settled() asks after every step of the drain.
    if (const auto* e = std::get_if<effect_applied>(&what))
        settled_.emplace(e->consumer, e->id);
    else if (const auto* d = std::get_if<dead_lettered>(&what); d && !d->reason.empty())
        settled_.emplace(d->consumer, d->id);
    history_.record(sim_.elapsed(), std::move(what));
}

template <pipeline_application App>
void pipeline_world<App>::record_fault(fault_kind kind, std::string detail,
                                       std::optional<message_id> id) {
    switch (kind) {
    case fault_kind::connection_drop:
    case fault_kind::broker_restart:
    case fault_kind::lost_confirm:
    case fault_kind::publish_nack:
    case fault_kind::consumer_cancel:
    case fault_kind::sqlite_busy:
    case fault_kind::crash:
        ++disruptions_;
        break;
    default:
        break;
    }
    record(fault_injected{.kind = kind, .id = id, .detail = std::move(detail)});
}

template <pipeline_application App>
process_observer pipeline_world<App>::relay_observer() {
    process_observer o;
    o.publishing = [this](const message& m) {
        record(relay_published{.id = m.id, .attempt = ++publishes_[m.id]});
    };
    o.published = [this](const message& m, std::error_code ec) {
        if (!ec) {
            record(relay_confirmed{.id = m.id});
            confirmed_.push_back(m);
        } else if (ec == errc::outcome_unknown || is_transport_failure(ec)) {
            record(relay_outcome_unknown{.id = m.id});
        }
    };
    o.after = [this](std::chrono::nanoseconds d, std::function<void()> f) {
        sim_.after(d, std::move(f));
    };
    return o;
}

template <pipeline_application App>
process_observer pipeline_world<App>::consumer_observer(consumer_process& p) {
    process_observer o;
    o.delivered = [this, &p](const delivery& d) {
        const auto& group = groups_[p.group];
        if (d.queue != group.retry.queue)
            return;
        record(broker_delivered{.consumer = group.id,
                                .id = d.msg.id,
                                .redelivered = d.redelivered,
                                .attempt = ++deliveries_[{group.id, d.msg.id}]});
        p.unsettled.emplace(std::pair{d.channel, d.delivery_tag}, d.msg.id);
    };
    o.acking = [this, &p](const delivery& d) {
        p.unsettled.erase({d.channel, d.delivery_tag});
        record(delivery_acked{.consumer = groups_[p.group].id, .id = d.msg.id});
    };
    o.nacking = [this, &p](const delivery& d, bool requeue) {
        p.unsettled.erase({d.channel, d.delivery_tag});
        record(
            delivery_nacked{.consumer = groups_[p.group].id, .id = d.msg.id, .requeue = requeue});
    };
    o.published = [this, &p](const message& m, std::error_code ec) {
        const auto& group = groups_[p.group];
        if (!ec && m.routing_key == group.retry.dead_letter_queue_name())
            record(dead_lettered{
                .consumer = group.id,
                .id = m.id,
                .reason = m.headers.get<std::string>(headers::death_reason).value_or("")});
    };
    o.delivery_delay = [this] {
        return sim_.clock().now() < slow_until_ ? std::chrono::nanoseconds(slow_delay_)
                                                : std::chrono::nanoseconds{};
    };
    o.after = [this](std::chrono::nanoseconds d, std::function<void()> f) {
        sim_.after(d, std::move(f));
    };
    return o;
}

template <pipeline_application App>
std::string pipeline_world<App>::deferral(const middleware::disposition& r) {
    using kind = middleware::disposition::kind;
    switch (r.what()) {
    case kind::ack:
        return {};
    case kind::fail:
        return "failed"; // the consumer settles it: held for its store, or rejected
    case kind::retry_in:
        return "retried";
    case kind::reject:
        return "rejected";
    case kind::requeue:
        return "requeued";
    case kind::forward:
        return r.why() == middleware::disposition::purpose::dead_letter ? "dead_lettered"
                                                                        : "redelivered";
    }
    return "unknown";
}

} // namespace letterbox::testing::detail
