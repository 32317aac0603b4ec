// SPDX-License-Identifier: BSL-1.0
#pragma once

// pipeline_world, out of line: the end of a run: the operator's replay of the dead letters,
// settling, shutting down, and the checks of the history.

#include <letterbox/config.hpp>
#include <letterbox/testing/detail/pipeline_world.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

template <pipeline_application App>
void pipeline_world<App>::replay_dead_letters() {
    permanent_.clear();
    replaying_ = true;
    record(fault_injected{.kind = fault_kind::other,
                          .id = std::nullopt,
                          .detail = "the operator replays the dead-letter queue"});
    start_replay(0);
}

template <pipeline_application App>
void pipeline_world<App>::start_replay(std::size_t g) {
    ++replay_passes_;
    ++groups_[g].replay_passes;
    auto* t = operators_
                  .emplace_back(std::make_unique<in_memory::transport>(
                      sim_.broker(), "operator-" + std::to_string(replay_passes_)))
                  .get();
    dlq::dead_letter_queue_options o;
    o.wall_clock = [this] {
        return sim_.clock().wall_now();
    };
    o.after_republish_before_remove = [this](const dlq::dead_letter_entry& e) {
        // One crash at most per run here, whatever the fault window's crashes used up.
        const double rate = profile_.rate(failpoint::between_republish_and_remove);
        if (replay_crashed_ || rate <= 0.0 || chance(crash_rng_) >= rate)
            return;
        replay_crashed_ = true;
        record(fault_injected{.kind = fault_kind::crash,
                              .id = std::nullopt,
                              .detail = "operator at between_republish_and_remove (" + e.id + ")"});
        ++disruptions_;
        throw failpoint_halt(failpoint::between_republish_and_remove);
    };
    auto queue = std::make_shared<dlq::dead_letter_queue<in_memory::transport>>(
        *t, groups_[g].retry.dead_letter_queue_name(), std::move(o));
    dlq::dead_letter_filter permanent;
    permanent.reason = "permanent-failure";
    queue->async_replay(permanent, [this, g, queue, t](std::error_code ec, dlq::replay_result) {
        t->async_close([](std::error_code) {}); // what it held goes back to the queue
        if (ec && groups_[g].replay_passes < 4)
            return sim_.after(restart_delay(), [this, g] { start_replay(g); });
        if (g + 1 < groups_.size())
            return start_replay(g + 1);
        replayed_ = true;
    });
}

template <pipeline_application App>
bool pipeline_world<App>::settled() {
    if (!relay_ || !topology_restored())
        return false;
    for (const auto& g : groups_)
        for (const auto& p : g.processes)
            if (!p || p->dead || !p->tag || p->transport.holding() != 0)
                return false;
    for (const auto& [id, row] : rows_)
        for (const auto& g : groups_)
            if (!settled_.contains({g.id, id}) && !settled_.contains({std::string(), id}))
                return false;
    auto& b = sim_.broker();
    if (b.total_unacked() != 0)
        return false;
    std::size_t dead_letters = 0;
    for (const auto& g : groups_)
        if (const auto dlq = b.queue(g.retry.dead_letter_queue_name()))
            dead_letters += dlq->ready;
    if (b.total_ready() != dead_letters)
        return false;
    std::error_code ec;
    const auto stats = app_.outbox().stats(sim_.clock().wall_now(), ec);
    return !ec && stats.pending == 0;
}

template <pipeline_application App>
void pipeline_world<App>::shut_down() {
    shutting_down_ = true;
    if (relay_ && !relay_->finished) {
        relay_->relay.stop();
        sim_.drive_until([this] { return relay_->finished; }, 100'000);
    }
    for (auto& g : groups_)
        for (auto& p : g.processes) {
            if (!p || !p->tag || p->dead)
                continue;
            bool stopped = false;
            p->stop(*p->tag, [&stopped](std::error_code) { stopped = true; });
            sim_.drive_until([&stopped] { return stopped; }, 100'000);
        }
    if (relay_)
        relay_->transport.kill();
    for (auto& g : groups_)
        for (auto& p : g.processes)
            if (p)
                p->transport.kill();
    if (chaos_)
        chaos_->async_close([](std::error_code) {});
    for (auto& t : operators_)
        t->async_close([](std::error_code) {});
    sim_.run_ready();
}

template <pipeline_application App>
void pipeline_world<App>::check(pipeline_result& r) {
    const history& h = r.events;
    std::vector<std::string> consumers;
    for (const auto& g : groups_)
        consumers.push_back(g.id);
    auto add = [&r](std::vector<invariant_violation> found) {
        r.violations.insert(r.violations.end(), std::make_move_iterator(found.begin()),
                            std::make_move_iterator(found.end()));
    };
    add(check_no_loss(h, consumers));
    add(check_no_phantom(h));
    add(check_no_duplicate_effect(h));
    check_order(r);
    // Each copy of a message may be delivered max_attempts times. Copies come from the
    // publishes of its row, the duplicates the faults published, and the deliveries a lost
    // connection took with it unsettled: each comes back, and its handler may already have
    // forwarded a retry copy (at-least-once), so it counts as one more copy. With prefetch
    // several copies of one message are in flight at once, so one drop may add several (CI
    // found 16 copies of a poison message after four drops with up to three in flight).
    // Every other disruption may hide the outcome of one forward (a lost confirm, a cancel,
    // a crash of the relay or the operator) and counts once for every message. So does a
    // refused publish: a refused retry copy makes the consumer requeue the delivery, which
    // comes back without using an attempt (the extended tier found a poison message
    // delivered max_attempts + 1 times after one, 1 run in 200,000). A locked store counts
    // too: the extended tier found a poison message delivered once more than max_attempts
    // per copy while the inbox was locked (2 runs in 25,000).
    std::uint32_t most_copies = 1;
    for (const auto& [id, n] : publishes_) {
        for (const auto& g : groups_) {
            const auto lost = lost_unsettled_.find({g.id, id});
            most_copies =
                std::max(most_copies, n + duplicates_of(id) +
                                          (lost == lost_unsettled_.end() ? 0 : lost->second));
        }
    }
    r.delivery_bound = options_.max_attempts * (most_copies + disruptions_ + replay_passes_);
    add(check_bounded_redelivery(h, r.delivery_bound));
    add(check_poison_isolation(h, consumers));
    add(check_convergence(h, consumers, options_.settle_within));
    if (!r.settled)
        r.violations.push_back(violation(invariant::convergence, std::nullopt,
                                         "the run did not settle within " +
                                             std::to_string(2 * options_.settle_within.count()) +
                                             "ms of virtual time after the faults stopped"));
    if constexpr (counts_effects<App>)
        check_application_effects(r);

    for (const auto& e : h) {
        std::visit(
            [&r](const auto& ev) {
                using T = std::decay_t<decltype(ev)>;
                if constexpr (std::is_same_v<T, transaction_committed>)
                    ++r.committed;
                else if constexpr (std::is_same_v<T, transaction_rolled_back>)
                    ++r.rolled_back;
                else if constexpr (std::is_same_v<T, effect_applied>)
                    ++r.effects;
                else if constexpr (std::is_same_v<T, dead_lettered>)
                    ++r.dead_letters;
                else if constexpr (std::is_same_v<T, broker_delivered>)
                    ++r.deliveries;
                else if constexpr (std::is_same_v<T, fault_injected>)
                    ++r.faults_injected;
            },
            e.what);
    }
    r.crashes = crashes_;
}

template <pipeline_application App>
void pipeline_world<App>::check_order(pipeline_result& r) {
    std::set<std::string> competing;
    for (std::size_t g = 0; g < groups_.size(); ++g)
        if (groups_[g].processes.size() > 1)
            competing.insert(groups_[g].id);
    for (auto& v : check_aggregate_order(r.events))
        if (!competing.contains(v.consumer))
            r.violations.push_back(std::move(v));
    const auto scope = detail::aggregate_order_scope(r.events);
    for (const auto& [key, checked] : scope) {
        if (competing.contains(key.first))
            continue;
        ++r.order_aggregates;
        r.order_checked_aggregates += checked ? 1 : 0;
    }
    r.order_checked = r.order_checked_aggregates != 0;
}

template <pipeline_application App>
invariant_violation pipeline_world<App>::violation(invariant which, std::optional<message_id> id,
                                                   std::string explanation) {
    return invariant_violation{.which = which,
                               .id = id,
                               .consumer = {},
                               .aggregate = {},
                               .explanation = std::move(explanation),
                               .events = {}};
}

template <pipeline_application App>
std::uint32_t pipeline_world<App>::duplicates_of(const message_id& id) const {
    std::uint32_t n = 0;
    for (const auto& e : duplicate_publishes_)
        n += e == id ? 1 : 0;
    return n;
}

template <pipeline_application App>
void pipeline_world<App>::check_application_effects(pipeline_result& r) {
    std::map<message_id, std::size_t> applied;
    for (const auto& e : r.events)
        if (const auto* a = std::get_if<effect_applied>(&e.what))
            ++applied[a->id];
    for (const auto& e : r.events) {
        if (const auto* c = std::get_if<transaction_committed>(&e.what)) {
            for (const auto& row : c->rows) {
                const std::size_t n = app_.effects(row.id);
                const std::size_t expected = std::max<std::size_t>(applied[row.id], 1);
                if (n > expected)
                    r.violations.push_back(violation(
                        invariant::no_duplicate_effect, row.id,
                        "the application's data holds " + std::to_string(n) +
                            " effects of message " + to_string(row.id) +
                            (expected == 1 ? std::string()
                                           : ", its history " + std::to_string(expected)) +
                            " (an effect outside the unit of work?)"));
            }
        } else if (const auto* rb = std::get_if<transaction_rolled_back>(&e.what)) {
            for (const auto& row : rb->rows) {
                if (app_.effects(row.id) != 0)
                    r.violations.push_back(
                        violation(invariant::no_phantom, row.id,
                                  "the application's data holds an effect of message " +
                                      to_string(row.id) + ", whose transaction rolled back"));
            }
        }
    }
}

} // namespace letterbox::testing::detail
