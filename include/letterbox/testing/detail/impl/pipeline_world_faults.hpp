// SPDX-License-Identifier: BSL-1.0
#pragma once

// pipeline_world, out of line: the faults: crashes, the scheduled commands, duplicates, cancels,
// and unroutable publishes (bindings removed, queues deleted).

#include <letterbox/config.hpp>
#include <letterbox/testing/detail/pipeline_world.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

template <pipeline_application App>
double pipeline_world<App>::chance(std::mt19937_64& rng) {
    return static_cast<double>(rng() >> 11U) * 0x1.0p-53;
}

template <pipeline_application App>
bool pipeline_world<App>::crash_now(failpoint fp) {
    // Only the pipeline's failpoints are simulated (not a projection's).
    if ((faults_over_ && !replaying_) || shutting_down_ ||
        static_cast<std::size_t>(fp) >= armed_.size())
        return false;
    auto& armed = armed_[static_cast<std::size_t>(fp)];
    if (armed) { // a scheduled crash: the first pass after its time
        armed = false;
        ++crashes_;
        return true;
    }
    const double rate = profile_.rate(fp);
    if (rate <= 0.0 || crashes_ >= profile_.max_crashes || chance(crash_rng_) >= rate)
        return false;
    ++crashes_;
    return true;
}

template <pipeline_application App>
std::chrono::nanoseconds pipeline_world<App>::restart_delay() {
    return std::chrono::milliseconds(100 + static_cast<std::int64_t>(faults_() % 900));
}

template <pipeline_application App>
void pipeline_world<App>::schedule_faults() {
    for (const auto& c : schedule_.commands)
        sim_.after(c.at, [this, c] { inject(c); });
}

template <pipeline_application App>
void pipeline_world<App>::inject(const fault_command& c) {
    if (faults_over_)
        return;
    auto& b = sim_.broker();
    switch (c.kind) {
    case fault_kind::connection_drop:
        record_fault(c.kind, "every connection");
        lose_all_unsettled_deliveries();
        return b.sever_all();
    case fault_kind::broker_restart:
        record_fault(c.kind, "broker");
        lose_all_unsettled_deliveries();
        return b.restart();
    case fault_kind::lost_confirm:
        record_fault(c.kind, "publish +" + std::to_string(std::max<std::uint32_t>(c.arg, 1)));
        return b.lose_nth_confirm(std::max<std::uint32_t>(c.arg, 1));
    case fault_kind::publish_nack:
        record_fault(c.kind, "publish +" + std::to_string(std::max<std::uint32_t>(c.arg, 1)));
        return b.nack_nth_publish(std::max<std::uint32_t>(c.arg, 1));
    case fault_kind::duplicate_delivery:
        return publish_duplicate(c.arg);
    case fault_kind::slow_consumer:
        record_fault(c.kind, "for 1000ms, each delivery +" + std::to_string(c.arg) + "ms");
        slow_delay_ = std::chrono::milliseconds(c.arg);
        slow_until_ = sim_.clock().now() + std::chrono::seconds(1);
        return;
    case fault_kind::consumer_cancel:
        return cancel_consumer(std::chrono::milliseconds(c.arg));
    case fault_kind::sqlite_busy:
        record_fault(c.kind, "inbox locked for " + std::to_string(c.arg) + "ms");
        busy_until_ = std::max(busy_until_, sim_.clock().now() + std::chrono::milliseconds(c.arg));
        return;
    case fault_kind::binding_removed:
        return remove_bindings(std::chrono::milliseconds(c.arg));
    case fault_kind::queue_deleted:
        return delete_queues(std::chrono::milliseconds(c.arg));
    case fault_kind::crash:
        if (c.arg < armed_.size())
            armed_[c.arg] = true;
        return;
    default:
        return;
    }
}

template <pipeline_application App>
void pipeline_world<App>::publish_duplicate(std::uint64_t pick) {
    if (confirmed_.empty() || faults_over_)
        return;
    const message copy = confirmed_[pick % confirmed_.size()];
    record_fault(fault_kind::duplicate_delivery, "published once more", copy.id);
    duplicate_publishes_.push_back(copy.id);
    if (!chaos_)
        chaos_.emplace(sim_.broker(), "chaos");
    chaos_->async_publish(copy, [](std::error_code) {});
}

template <pipeline_application App>
void pipeline_world<App>::cancel_consumer(std::chrono::nanoseconds pause) {
    if (faults_over_)
        return;
    std::vector<consumer_process*> subscribed;
    for (auto& g : groups_)
        for (auto& p : g.processes)
            if (p && !p->dead && p->tag)
                subscribed.push_back(p.get());
    if (subscribed.empty())
        return;
    // One process of one consumer. The pick has a stream of its own, and is not drawn when
    // there is a single process, so that such a run stays the same as before fan-outs.
    auto& p = *subscribed[subscribed.size() == 1 ? 0 : picks_() % subscribed.size()];
    record_fault(
        fault_kind::consumer_cancel,
        (groups_.size() == 1 && subscribed.size() == 1
             ? std::string()
             : groups_[p.group].id + " process " + std::to_string(p.slot + 1) + ", ") +
            "resubscribes after " +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(pause).count()) +
            "ms");
    const auto tag = *p.tag;
    p.tag.reset();
    p.stop(tag, [this, &p, pause](std::error_code) {
        sim_.after(pause, [this, &p] {
            if (!p.dead && !shutting_down_ && !p.tag && !p.cancelled_by_broker)
                subscribe(p);
        });
    });
}

template <pipeline_application App>
template <class Op>
void pipeline_world<App>::as_operator(Op op) {
    auto conn = sim_.broker().connect("operator");
    op(conn);
    conn.close();
}

template <pipeline_application App>
void pipeline_world<App>::remove_bindings(std::chrono::milliseconds length) {
    record(fault_injected{.kind = fault_kind::binding_removed,
                          .id = std::nullopt,
                          .detail = "every binding of the exchange, restored after " +
                                    std::to_string(length.count()) + "ms"});
    unbound_until_ = std::max(unbound_until_, sim_.clock().now() + length);
    bindings_removed_ = true;
    as_operator([this](in_memory::connection& conn) {
        for (const auto& g : groups_)
            if (!g.queue_deleted)
                (void)conn.open_channel().queue_unbind(g.retry.queue, exchange_name, binding_key);
    });
    sim_.after(length, [this] { restore_topology(); });
}

template <pipeline_application App>
void pipeline_world<App>::delete_queues(std::chrono::milliseconds length) {
    if (faults_over_)
        return;
    if (!queues_empty())
        return sim_.after(std::chrono::milliseconds(10), [this, length] { delete_queues(length); });
    record(fault_injected{.kind = fault_kind::queue_deleted,
                          .id = std::nullopt,
                          .detail = "every work queue (empty), restored after " +
                                    std::to_string(length.count()) + "ms"});
    deleted_until_ = std::max(deleted_until_, sim_.clock().now() + length);
    as_operator([this](in_memory::connection& conn) {
        for (auto& g : groups_) {
            if (g.queue_deleted)
                continue;
            std::error_code ec;
            (void)conn.open_channel().queue_delete(g.retry.queue, ec);
            g.queue_deleted = true;
            // The broker cancels its consumers (consumer_cancel_notify); the in-memory
            // transport drops those subscriptions, so each process subscribes again when
            // the queue is back.
            for (auto& p : g.processes)
                if (p && !p->dead) {
                    p->tag.reset();
                    p->cancelled_by_broker = true;
                }
        }
    });
    sim_.after(length, [this] { restore_topology(); });
}

template <pipeline_application App>
bool pipeline_world<App>::queues_empty() {
    auto& b = sim_.broker();
    for (const auto& g : groups_) {
        for (const auto& q : g.retry.queues()) {
            if (q.name == g.retry.dead_letter_queue_name())
                continue;
            const auto info = b.queue(q.name);
            if (info && (info->ready != 0 || info->unacked != 0))
                return false;
        }
    }
    return true;
}

template <pipeline_application App>
void pipeline_world<App>::restore_topology() {
    const auto now = sim_.clock().now();
    const bool queues_due =
        now >= deleted_until_ &&
        std::any_of(groups_.begin(), groups_.end(), [](const auto& g) { return g.queue_deleted; });
    const bool bindings_due = now >= unbound_until_ && bindings_removed_;
    if (!queues_due && !bindings_due)
        return;
    std::vector<std::size_t> restored;
    as_operator([&](in_memory::connection& conn) {
        for (std::size_t g = 0; queues_due && g < groups_.size(); ++g) {
            auto& group = groups_[g];
            if (!group.queue_deleted)
                continue;
            if (conn.open_channel().queue_declare(group.retry.queues().back()))
                throw std::runtime_error("letterbox::testing: restoring a queue failed");
            group.queue_deleted = false;
            restored.push_back(g);
        }
        if (now < unbound_until_)
            return; // the bindings stay removed a while longer
        for (std::size_t g = 0; g < groups_.size(); ++g) {
            const bool was_restored =
                std::find(restored.begin(), restored.end(), g) != restored.end();
            if (groups_[g].queue_deleted || (!bindings_due && !was_restored))
                continue;
            if (conn.open_channel().queue_bind(groups_[g].retry.queue, exchange_name, binding_key))
                throw std::runtime_error("letterbox::testing: restoring a binding failed");
        }
    });
    if (!restored.empty())
        record(fault_injected{.kind = fault_kind::queue_deleted,
                              .id = std::nullopt,
                              .detail = "restored: every work queue"});
    if (bindings_due) {
        bindings_removed_ = false;
        record(fault_injected{.kind = fault_kind::binding_removed,
                              .id = std::nullopt,
                              .detail = "restored: every binding of the exchange"});
    }
    for (const auto g : restored)
        for (auto& p : groups_[g].processes)
            if (p && !p->dead && p->cancelled_by_broker) {
                p->cancelled_by_broker = false;
                subscribe(*p);
            }
}

template <pipeline_application App>
bool pipeline_world<App>::topology_restored() {
    const auto now = sim_.clock().now();
    if (now < unbound_until_ || now < deleted_until_)
        return false;
    return std::none_of(groups_.begin(), groups_.end(),
                        [](const consumer_group& g) { return g.queue_deleted; });
}

} // namespace letterbox::testing::detail
