// SPDX-License-Identifier: BSL-1.0
#pragma once

// Dead-lettering: the x-death history, cycles, and republishing to the DLX.
// Member functions of `broker_state`, declared in ../broker_state.hpp.

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/detail/broker_state.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

LETTERBOX_DECL void broker_state::dead_letter(queue_state& q, queued m, dead_letter_reason r) {
    const auto ri = static_cast<std::size_t>(r);
    if (!q.args.dead_letter_exchange) {
        ++counters_.discarded[ri];
        return;
    }
    if (exchanges_.find(*q.args.dead_letter_exchange) == exchanges_.end()) {
        // DLX-14: a missing dead-letter exchange drops the message, and RabbitMQ counts it
        // under the `disabled` strategy (as if the queue had no DLX), not as dead-lettered.
        ++counters_.discarded[ri];
        ++counters_
              .dead_letters_dropped[static_cast<std::size_t>(dead_letter_drop::exchange_missing)];
        return;
    }
    ++counters_.dead_lettered[ri];
    pending_dead_letters_.push_back({queues_.at(q.name), std::move(m), r});
}

LETTERBOX_DECL void broker_state::process_dead_letters() {
    while (!pending_dead_letters_.empty()) {
        auto p = std::move(pending_dead_letters_.front());
        pending_dead_letters_.pop_front();
        republish_dead_letter(*p.queue, std::move(p.m), p.reason);
    }
}

LETTERBOX_DECL field_table broker_state::make_death_entry(const queue_state& q, const envelope& env,
                                                          dead_letter_reason r) const {
    field_array keys{field_value(env.msg.routing_key)};
    for (const auto& k : env.cc)
        keys.emplace_back(k);
    // Fields in the sorted order RabbitMQ writes them.
    field_table t;
    t.set(headers::x_death_field::count, std::int64_t{1});
    t.set(headers::x_death_field::exchange, env.msg.exchange);
    if (env.msg.properties.expiration)
        t.set(headers::x_death_field::original_expiration, *env.msg.properties.expiration);
    t.set(headers::x_death_field::queue, q.name);
    t.set(headers::x_death_field::reason, std::string(to_string(r)));
    t.set(headers::x_death_field::routing_keys, std::move(keys));
    t.set(headers::x_death_field::time,
          std::chrono::time_point_cast<std::chrono::seconds>(clock_->wall_now()));
    return t;
}

LETTERBOX_DECL void broker_state::update_history(message& msg, const queue_state& q,
                                                 const envelope& env, dead_letter_reason r) const {
    field_array deaths;
    // 3.10 (update_x_death_header): the x-first-death-* headers are written only by the
    // event that creates x-death; when an x-death is already there (even a client's), they
    // are left as they are, absent or not (§0.3 fact 5).
    const bool had_history = env.history_is_ours && msg.headers.contains(headers::x_death);
    if (env.history_is_ours)
        if (const auto* v = msg.headers.find(headers::x_death))
            if (const auto* arr = v->get_if<field_array>())
                deaths = *arr;
    const auto reason = std::string(to_string(r));
    auto same = std::find_if(deaths.begin(), deaths.end(), [&](const field_value& v) {
        const auto* t = v.get_if<field_table>();
        return t && t->get<std::string>(headers::x_death_field::queue) == q.name &&
               t->get<std::string>(headers::x_death_field::reason) == reason;
    });
    field_value entry;
    if (same != deaths.end()) {
        // Keyed by (queue, reason): count grows; exchange, routing keys and time keep
        // their first values (§0.3 fact 6).
        entry = std::move(*same);
        deaths.erase(same);
        auto& t = *entry.get_if<field_table>();
        const auto n = t.find(headers::x_death_field::count)
                           ? t.find(headers::x_death_field::count)->as_integer()
                           : std::optional<std::int64_t>{};
        t.set(headers::x_death_field::count, std::int64_t{n.value_or(0) + 1});
    } else {
        entry = make_death_entry(q, env, r);
    }
    if (profile_.reverse_x_death_on_event)
        std::reverse(deaths.begin(), deaths.end()); // 3.10.8, observed (§0.3 fact 6)
    deaths.insert(deaths.begin(), std::move(entry));
    msg.headers.set(headers::x_death, std::move(deaths));
    if (!had_history) {
        msg.headers.set(headers::x_first_death_reason, reason);
        msg.headers.set(headers::x_first_death_queue, q.name);
        msg.headers.set(headers::x_first_death_exchange, env.msg.exchange);
    }
    if (profile_.x_last_death_headers) {
        msg.headers.set(headers::x_last_death_reason, reason);
        msg.headers.set(headers::x_last_death_queue, q.name);
        msg.headers.set(headers::x_last_death_exchange, env.msg.exchange);
    }
}

LETTERBOX_DECL bool broker_state::is_cycle(const std::string& target, const field_array& deaths) {
    for (const auto& v : deaths) {
        const auto* t = v.get_if<field_table>();
        if (!t)
            return false; // something a client put there: not a fully automatic cycle
        if (t->get<std::string>(headers::x_death_field::reason) == std::string("rejected"))
            return false;
        if (t->get<std::string>(headers::x_death_field::queue) == target)
            return true;
    }
    return false;
}

LETTERBOX_DECL void broker_state::republish_dead_letter(queue_state& q, queued m,
                                                        dead_letter_reason r) {
    const auto& dlx = *q.args.dead_letter_exchange;
    const auto& old = *m.env;
    auto env = std::make_shared<envelope>();
    env->msg = old.msg;
    update_history(env->msg, q, old, r);
    env->msg.properties.expiration.reset();
    env->msg.exchange = dlx;
    const std::string* explicit_key = nullptr;
    if (q.args.dead_letter_routing_key) {
        env->msg.routing_key = *q.args.dead_letter_routing_key;
        explicit_key = &env->msg.routing_key;
        if (!profile_.keep_cc_with_dead_letter_routing_key)
            env->msg.headers.erase(headers::cc);
    } else {
        env->cc = old.cc;
        env->bcc = old.bcc;
    }
    if (!profile_.keep_cc_with_dead_letter_routing_key && explicit_key)
        env->cc.clear();
    if (exchanges_.find(dlx) == exchanges_.end()) {
        ++counters_
              .dead_letters_dropped[static_cast<std::size_t>(dead_letter_drop::exchange_missing)];
        return;
    }
    std::vector<queue_state*> targets;
    route(env, targets, explicit_key);
    if (targets.empty()) {
        ++counters_.dead_letters_dropped[static_cast<std::size_t>(dead_letter_drop::unroutable)];
        return;
    }
    if (r != dead_letter_reason::rejected) {
        const auto& deaths = *env->msg.headers.find(headers::x_death)->get_if<field_array>();
        std::erase_if(targets, [&](queue_state* t) { return is_cycle(t->name, deaths); });
        if (targets.empty()) {
            ++counters_.dead_letters_dropped[static_cast<std::size_t>(dead_letter_drop::cycle)];
            return;
        }
    }
    bool stored = false;
    for (auto* t : targets)
        stored |= enqueue(*t, env, -1);
    if (!stored)
        ++counters_.dead_letters_dropped[static_cast<std::size_t>(dead_letter_drop::refused)];
    // A dead letter arrives like a publish (deliver_or_enqueue): a waiting consumer gets it
    // before its expiry is checked, so TTL 0 does not expire it on arrival (RMQ-TTL-06).
    for (auto* t : targets)
        after_change(*t, true);
}

} // namespace letterbox::in_memory::detail
