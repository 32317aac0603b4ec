// SPDX-License-Identifier: BSL-1.0
#pragma once

// pipeline_world, out of line: the producer: the business transactions and their outbox rows.

#include <letterbox/config.hpp>
#include <letterbox/payload.hpp>
#include <letterbox/testing/detail/pipeline_world.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

template <pipeline_application App>
void pipeline_world<App>::schedule_writes() {
    const auto window = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(options_.write_window).count());
    std::vector<std::uint64_t> at;
    for (std::size_t k = 0; k < options_.messages; ++k)
        at.push_back(window == 0 ? 0 : workload_() % window);
    std::sort(at.begin(), at.end());
    const auto start = sim_.clock().now();
    for (std::size_t k = 0; k < at.size(); ++k)
        sim_.at(start + std::chrono::microseconds(at[k]), [this, k] { write(k); });
    // Which committed messages the handler fails on: drawn now, applied at commit.
    if (options_.messages > 0) {
        if (profile_.poison_message)
            poison_index_ = workload_() % options_.messages;
        for (std::uint32_t i = 0; i < profile_.handler_permanent_failures; ++i)
            permanent_indexes_.insert(workload_() % options_.messages);
    }
}

template <pipeline_application App>
void pipeline_world<App>::write(std::size_t k) {
    const auto aggregate_key = std::to_string(k % std::max<std::size_t>(options_.aggregates, 1));
    outbox_entry e;
    e.msg.id = ids_();
    e.msg.type = "letterbox.sim.event";
    e.msg.exchange = exchange_name;
    e.msg.routing_key = "sim.event";
    e.aggregate_type = "account";
    e.aggregate_id = aggregate_key;
    (void)encode_payload(e.msg, nlohmann::json{{"number", k},
                                               {"aggregate", aggregate_key},
                                               {"amount", 1 + static_cast<int>(k % 7)}});
    const bool roll_back = chance(workload_) < options_.rollback_rate;
    const auto aggregate = "account/" + aggregate_key;

    auto u = app_.begin_producer();
    app_.write(u, e.msg);
    auto ec = app_.outbox().add(u, e, sim_.clock().wall_now());
    if (!ec && !roll_back)
        ec = u.commit();
    else
        (void)u.rollback();
    if (ec || roll_back) {
        record(transaction_rolled_back{{{.id = e.msg.id, .aggregate = aggregate, .sequence = 0}}});
        return;
    }
    const auto sequence = ++sequences_[aggregate];
    rows_[e.msg.id] = row_info{aggregate, sequence};
    record(transaction_committed{{{.id = e.msg.id, .aggregate = aggregate, .sequence = sequence}}});
    if (poison_index_ && *poison_index_ == k) {
        poison_ = e.msg.id;
        record_fault(fault_kind::poison_message, "handler", e.msg.id);
    }
    if (permanent_indexes_.contains(k)) {
        permanent_.insert(e.msg.id);
        record_fault(fault_kind::handler_permanent_failure, "handler", e.msg.id);
    }
    if (crash_now(failpoint::after_business_commit)) {
        // The writer died before waking the relay: only polling finds the row.
        record_fault(fault_kind::crash, "writer at after_business_commit", e.msg.id);
        return;
    }
    if (relay_)
        relay_->relay.wake();
}

} // namespace letterbox::testing::detail
