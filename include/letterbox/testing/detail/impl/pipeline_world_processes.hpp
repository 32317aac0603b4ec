// SPDX-License-Identifier: BSL-1.0
#pragma once

// pipeline_world, out of line: the set-up and the processes: the topology, the relay process and
// the consumer processes, their failpoints and their deaths.

#include <letterbox/config.hpp>
#include <letterbox/testing/detail/pipeline_world.hpp>
#include <letterbox/testing/detail/simulated_relay_options.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

template <pipeline_application App>
backoff::exponential pipeline_world<App>::redelivery_policy() const {
    return backoff::exponential(std::chrono::milliseconds(200), 2.0, std::chrono::seconds(2),
                                options_.max_attempts);
}

template <pipeline_application App>
void pipeline_world<App>::declare_topology() {
    in_memory::transport admin(sim_.broker(), "admin");
    std::optional<std::error_code> done;
    const auto step = [&](auto op) {
        done.reset();
        op([&done](std::error_code ec) { done = ec; });
        sim_.drive_until([&done] { return done.has_value(); });
        if (!done || *done)
            throw std::runtime_error("letterbox::testing: declaring the topology failed");
    };
    step([&](auto h) {
        admin.async_declare(
            topology::exchange{.name = exchange_name, .type = topology::exchange_type::topic}, h);
    });
    for (const auto& g : groups_) {
        step([&](auto h) { topology::async_declare_all(admin, g.retry.queues(), h); });
        step([&](auto h) {
            admin.async_bind(topology::binding{.source = exchange_name,
                                               .destination = g.retry.queue,
                                               .routing_key = binding_key},
                             h);
        });
    }
    step([&](auto h) { admin.async_close(h); });
}

template <pipeline_application App>
void pipeline_world<App>::start_relay() {
    const auto name = "relay-" + std::to_string(++relay_generation_);
    auto o = simulated_relay_options(sim_, name);
    o.failpoint = [this](relay_point p, const outbox_record& row) {
        return relay_failpoint(p, row);
    };
    o.on_event = options_.on_relay_event;
    wire w(in_memory::transport(sim_.broker(), name), relay_observer());
    if (options_.defect == pipeline_defect::mark_before_confirm)
        w.confirm_on_send(true);
    if (options_.defect == pipeline_defect::return_as_success)
        w.return_as_success(true);
    relay_ =
        std::make_unique<relay_process>(std::move(w), app_.outbox(), sim_.clock(), std::move(o));
    relay_->relay.async_run([this, p = relay_.get()](std::error_code) { on_relay_done(p); });
}

template <pipeline_application App>
bool pipeline_world<App>::relay_failpoint(relay_point p, const outbox_record& row) {
    if (p == relay_point::after_mark) {
        record(relay_marked{.id = row.msg.id});
        return false;
    }
    const auto fp = p == relay_point::after_publish_sent ? failpoint::after_publish_before_confirm
                    : p == relay_point::after_confirm    ? failpoint::after_confirm_before_mark
                                                         : std::optional<failpoint>{};
    if (!fp || !crash_now(*fp))
        return false;
    record_fault(fault_kind::crash, "relay at " + std::string(to_string(*fp)), row.msg.id);
    return true;
}

template <pipeline_application App>
void pipeline_world<App>::on_relay_done(relay_process* p) {
    p->finished = true;
    if (shutting_down_ || p != relay_.get())
        return;
    // It halted at a failpoint: the process is dead. A new one starts a little later.
    relay_->transport.kill();
    buried_relays_.push_back(std::move(relay_));
    sim_.after(restart_delay(), [this] { start_relay(); });
}

template <pipeline_application App>
void pipeline_world<App>::start_consumer(std::size_t g, std::size_t slot) {
    auto& group = groups_[g];
    const auto name = "consumer-" + std::to_string(++consumer_generation_);
    auto p = std::make_unique<consumer_process>(g, slot, [&](consumer_process& self) {
        return wire(in_memory::transport(sim_.broker(), name), consumer_observer(self));
    });
    if (options_.defect == pipeline_defect::ack_before_commit)
        p->transport.ack_on_delivery(true);
    auto* raw = p.get();
    auto effect = [this, raw](const message& m, consumer_unit& u) {
        apply(*raw, m, u);
    };
    auto handler =
        idempotent(
            effect, inbox_, [this] { return app_.begin_consumer(); }, group.id, sim_.clock())
            .with_failpoint([this, raw](failpoint fp, const message_id& id) {
                return consumer_failpoint(*raw, fp, id);
            })
            .on_duplicate(options_.on_duplicate);
    auto pipeline = middleware::compose(
        std::move(handler), middleware::dead_letter({.consumer_id = group.id}, sim_.clock()),
        middleware::redelivery(redelivery_policy(), group.retry, sim_.clock()),
        middleware::retry(backoff::immediate(2)));
    // A delivery the pipeline does not ack falls behind: the deliveries after it may be
    // handled first, so its aggregate's order is no longer promised for this consumer
    // (check_aggregate_order skips it). Recorded when the pipeline decides, before the
    // consumer carries it out (a forward, say, completes later or, if the process dies
    // meanwhile, never). A dead process's decisions mean nothing. With message groups in
    // strict order nothing falls behind: the consumer holds its aggregate's later deliveries
    // until it is settled, so nothing is recorded and every aggregate is checked.
    auto observed = [this, raw, inner = std::move(pipeline)](
                        const middleware::handling& x) mutable -> middleware::disposition {
        auto r = inner(x);
        if (options_.defect == pipeline_defect::ack_before_batch_commit && !raw->dead &&
            r.what() == middleware::disposition::kind::ack && x.group != nullptr)
            raw->transport.ack_now(x.d); // the defect: before the batch's commit
        if (auto why = deferral(r); !why.empty() && !raw->dead && !message_groups_)
            record(delivery_deferred{
                .consumer = groups_[raw->group].id, .id = x.d.msg.id, .why = std::move(why)});
        return r;
    };
    using consumer_type = consumer<wire, decltype(observed), virtual_clock>;
    auto c = std::make_shared<consumer_type>(
        p->transport, std::move(observed), sim_.clock(),
        consumer_options{.consume = {.queue = group.retry.queue, .prefetch = options_.prefetch},
                         .on_event = options_.on_consumer_event,
                         .group_commit = {.max_messages = group_commit_,
                                          .max_delay = std::chrono::milliseconds(5)},
                         .groups = message_groups()});
    p->start = [c](std::function<void(std::error_code, std::string)> cb) {
        c->async_start(std::move(cb));
    };
    p->stop = [c](const std::string& tag, std::function<void(std::error_code)> cb) {
        c->async_stop(tag, std::move(cb));
    };
    p->consumer = c;
    group.processes[slot] = std::move(p);
    subscribe(*raw);
}

template <pipeline_application App>
group_options pipeline_world<App>::message_groups() const {
    if (!message_groups_)
        return {};
    // Every event of the workload has an aggregate; one without would run on its own.
    return {.key = group_key::standard{},
            .on_missing_key = missing_group_key::own_group,
            .order = options_.defect == pipeline_defect::groups_let_retries_overtake
                         ? group_order::relaxed // the defect
                         : group_order::strict};
}

template <pipeline_application App>
void pipeline_world<App>::subscribe(consumer_process& p) {
    p.start([this, &p](std::error_code ec, std::string tag) {
        if (!ec)
            p.tag = std::move(tag);
        else if (!p.dead && !shutting_down_) // e.g. the connection dropped meanwhile
            sim_.after(std::chrono::milliseconds(100), [this, &p] {
                if (!p.dead && !p.tag && !p.cancelled_by_broker)
                    subscribe(p);
            });
    });
}

template <pipeline_application App>
void pipeline_world<App>::apply(consumer_process& p, const message& m, consumer_unit& u) {
    if (p.dead)
        throw std::runtime_error("letterbox::testing: the consumer process is dead");
    if (poison_ && *poison_ == m.id)
        throw std::runtime_error("simulated poison message");
    if (permanent_.contains(m.id))
        throw error(errc::payload_malformed, "simulated permanent failure");
    if (profile_.handler_transient_rate > 0.0 &&
        chance(handler_rng_) < profile_.handler_transient_rate) {
        record_fault(fault_kind::handler_transient_failure,
                     groups_.size() == 1 ? "handler" : "handler of " + groups_[p.group].id, m.id);
        throw std::runtime_error("simulated transient failure");
    }
    app_.handle(m, u);
    const auto it = rows_.find(m.id);
    const row_info row = it == rows_.end() ? row_info{} : it->second;
    (void)u.on_commit([this, consumer = groups_[p.group].id, id = m.id, row] {
        record(effect_applied{
            .consumer = consumer, .id = id, .aggregate = row.aggregate, .sequence = row.sequence});
        record(inbox_committed{.consumer = consumer, .id = id});
    });
}

template <pipeline_application App>
bool pipeline_world<App>::consumer_failpoint(consumer_process& p, failpoint fp,
                                             const message_id& id) {
    if (p.dead || !crash_now(fp))
        return false;
    record_fault(fault_kind::crash, groups_[p.group].id + " at " + std::string(to_string(fp)), id);
    lose_unsettled_deliveries(p);
    kill_consumer(p);
    return true;
}

template <pipeline_application App>
void pipeline_world<App>::lose_unsettled_deliveries(consumer_process& p) {
    for (const auto& entry : p.unsettled)
        ++lost_unsettled_[{groups_[p.group].id, entry.second}];
    p.unsettled.clear();
}

template <pipeline_application App>
void pipeline_world<App>::lose_all_unsettled_deliveries() {
    for (auto& g : groups_)
        for (auto& p : g.processes)
            if (p)
                lose_unsettled_deliveries(*p);
}

template <pipeline_application App>
void pipeline_world<App>::kill_consumer(consumer_process& p) {
    p.dead = true;
    p.transport.kill();
    auto& slot = groups_[p.group].processes[p.slot];
    if (slot.get() == &p) {
        buried_consumers_.push_back(std::move(slot));
        sim_.after(restart_delay(), [this, g = p.group, s = p.slot] { start_consumer(g, s); });
    }
}

} // namespace letterbox::testing::detail
