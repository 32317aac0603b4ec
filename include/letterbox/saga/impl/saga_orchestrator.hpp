// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of letterbox/saga/saga_orchestrator.hpp; included at its end.

#include <letterbox/caused_by.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/async_op.hpp>
#include <letterbox/error.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/saga/saga_orchestrator.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/error_code.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

namespace detail {

// The states that are not a step's (docs/sagas.md).
inline constexpr std::string_view saga_completed = "completed";
inline constexpr std::string_view saga_failed = "failed";
inline constexpr std::string_view saga_compensation_failed = "compensation_failed";
inline constexpr std::string_view saga_compensating = "compensating:";

// The names of the timeouts an instance keeps: its step's reply, its compensation's reply,
// and the delay before a failed compensation is sent again.
inline constexpr std::string_view saga_step_timeout = "step";
inline constexpr std::string_view saga_compensation_timeout = "compensation";
inline constexpr std::string_view saga_retry_timeout = "retry";

inline std::string saga_duration_text(std::chrono::milliseconds d) {
    return std::to_string(d.count()) + " ms";
}

} // namespace detail

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::saga_orchestrator(
    saga_definition<Data> definition, Sagas& sagas, Outbox& outbox, Clock& clock,
    std::string reply_to, Policy compensation_retry, std::optional<std::uint64_t> id_seed)
    : definition_(std::move(definition))
    , sagas_(&sagas)
    , outbox_(&outbox)
    , clock_(&clock)
    , reply_to_(std::move(reply_to))
    , retry_(std::move(compensation_retry))
    , shared_(std::make_shared<shared>(id_seed)) {
    if (reply_to_.empty())
        throw error(errc::invalid_argument,
                    "saga '" + definition_.name() + "': replies need a queue (reply_to)");
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
std::error_code saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::start(
    unit_of_work_type& u, std::string_view correlation, const Data& data) {
    return begin(u, correlation, data, nullptr);
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
std::error_code saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::start(
    unit_of_work_type& u, std::string_view correlation, const Data& data, const message& cause) {
    return begin(u, correlation, data, &cause);
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
std::error_code saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::begin(
    unit_of_work_type& u, std::string_view correlation, const Data& data, const message* cause) {
    transition m;
    m.now = clock_->wall_now();
    {
        std::lock_guard lock(shared_->mutex);
        m.instance.id = letterbox::to_string(shared_->ids());
    }
    m.instance.saga_type = definition_.name();
    m.instance.correlation = std::string(correlation);
    m.state.data = data;
    m.counts.started = 1;
    m.cause = cause;
    if (definition_.steps().empty())
        finish(m, std::string(detail::saga_completed), &saga_stats::completed);
    else
        enter(m, 0);
    return write(u, m, true);
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
std::error_code
saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::operator()(const message& reply,
                                                                  unit_of_work_type& u) {
    const auto text = [&](std::string_view name) {
        return reply.headers.get<std::string>(name);
    };
    const auto type = text(headers::saga_type);
    const auto id = text(headers::saga_id);
    const auto step = text(headers::saga_step);
    const auto what = text(headers::saga_phase);
    const auto outcome = text(headers::saga_outcome);
    if (!type || !id || !step || !what || !outcome || *type != definition_.name() ||
        (*what != "invoke" && *what != "compensate") ||
        (*outcome != "success" && *outcome != "failure"))
        return errc::payload_malformed; // not a reply of this saga: dead-lettered, with reason

    std::error_code ec;
    auto instance = sagas_->find(*type, *id, ec);
    if (ec)
        return ec;
    if (!instance)
        return ignore(u, &saga_stats::unknown);
    if (instance->finished)
        return ignore(u, &saga_stats::for_finished);
    const auto at = where(instance->state);
    const auto replied = *what == "invoke" ? phase::invoke : phase::compensate;
    if (!at || at->what != replied || definition_.steps()[at->step].name != *step)
        return ignore(u, &saga_stats::stale);

    transition m{.instance = std::move(*instance), .state = {}};
    m.now = clock_->wall_now();
    m.cause = &reply;
    if (auto failed = read(m.instance, m.state))
        return failed;
    if (auto failed = apply_reply(m, *at, *outcome == "success", reply))
        return failed;
    return write(u, m, false);
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
std::error_code saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::apply_reply(
    transition& m, const position& at, bool success, const message& reply) {
    const auto& step = definition_.steps()[at.step];
    if (at.what == phase::invoke && success) {
        if (step.on_reply)
            step.on_reply(m.state.data, reply);
        if (at.step + 1 < definition_.steps().size())
            enter(m, at.step + 1);
        else
            finish(m, std::string(detail::saga_completed), &saga_stats::completed);
        return {};
    }
    const auto reason = reply.headers.get<std::string>(headers::saga_reason).value_or("");
    if (at.what == phase::invoke) {
        m.state.reason = "step '" + step.name + "' failed: " + reason;
        compensate_below(m, at.step);
    } else if (success) {
        compensate_below(m, at.step); // this one is undone: the next one down
    } else {
        compensation_failed(m, at.step, reason);
    }
    return {};
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
template <class Begin>
std::size_t saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::fire_due_timeouts(
    Begin&& begin, std::error_code& ec, std::size_t limit) {
    ec.clear();
    const auto due = sagas_->due_timeouts(clock_->wall_now(), limit, ec);
    if (ec)
        return 0;
    std::size_t fired = 0;
    std::error_code unreadable;
    for (const auto& timeout : due) {
        if (timeout.saga_type != definition_.name())
            continue;
        auto instance = sagas_->find(timeout.saga_type, timeout.id, ec);
        if (ec)
            return fired;
        const auto is_this = [&](const saga_timeout& t) {
            return t.name == timeout.name && t.due == timeout.due;
        };
        // Gone, finished, or moved on since it was listed: nothing to do.
        if (!instance || instance->finished ||
            std::none_of(instance->timeouts.begin(), instance->timeouts.end(), is_this))
            continue;
        const auto at = where(instance->state);
        transition m{.instance = std::move(*instance), .state = {}};
        m.now = clock_->wall_now();
        // An instance whose data this definition cannot read (another version of `Data`) is
        // skipped, so that it does not hold back the others' timeouts; `ec` reports it.
        if (auto failed = read(m.instance, m.state)) {
            if (!unreadable)
                unreadable = failed;
            continue;
        }
        if (!at || !apply_timeout(m, *at, timeout))
            continue;
        m.counts.timeouts_fired = 1;
        // A unit only for a timeout that moves its instance (an SQLite unit holds the write lock
        // from its start). The instance was read before it: the version, checked by the write,
        // refuses the move if the instance moved on meanwhile.
        auto u = begin();
        auto written = write(u, m, false);
        if (!written)
            written = u.commit();
        if (written == errc::concurrency_conflict)
            continue; // a reply moved it first; if the timeout still stands, it is listed again
        if ((ec = written))
            return fired;
        ++fired;
    }
    ec = unreadable;
    return fired;
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
template <class Begin, class Token>
auto saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::async_run_timeouts(
    boost::asio::any_io_executor ex, Begin begin, std::chrono::milliseconds interval,
    Token&& token) {
    using op_type = detail::async_op<void(boost::system::error_code)>;
    // Its own strand: the cancellation hook and the rounds never run at once, whatever `ex` is
    // (a thread pool with several threads, say).
    auto strand = boost::asio::make_strand(ex);
    // What the loop holds while it runs: a copy of the orchestrator (copies share their
    // statistics), the unit factory and the timer.
    struct loop {
        saga_orchestrator saga;
        Begin begin;
        decltype(std::declval<Clock&>().make_timer(strand)) timer;
        std::chrono::milliseconds interval;

        static void tick(const std::shared_ptr<loop>& self, const op_type& op) {
            if (op.done())
                return;
            // A failed round (a locked database, a corrupt instance, a definition that throws)
            // is counted, and the next round tries again: one bad instance must not stop every
            // other saga's timeouts.
            bool failed = false;
            try {
                std::error_code ec;
                self->saga.fire_due_timeouts(self->begin, ec);
                failed = static_cast<bool>(ec);
            } catch (...) {
                failed = true;
            }
            if (failed) {
                std::lock_guard lock(self->saga.shared_->mutex);
                self->saga.shared_->stats.timeout_round_errors += 1;
            }
            self->timer.expires_after(self->interval);
            self->timer.async_wait([self, op](boost::system::error_code) { tick(self, op); });
        }
    };
    auto state = std::make_shared<loop>(loop{*this, std::move(begin), clock_->make_timer(strand),
                                             std::max(interval, decltype(interval){1})});
    return detail::async_start<void(boost::system::error_code),
                               detail::outstanding_work::untracked>(
        std::forward<Token>(token), strand, [state](op_type op) {
            op.on_cancel(
                [state](const op_type& cancelled) {
                    state->timer.cancel();
                    cancelled.cancelled();
                },
                boost::asio::cancellation_type::all);
            loop::tick(state, op);
        });
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
bool saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::apply_timeout(
    transition& m, const position& at, const saga_timeout_due& due) {
    const auto& step = definition_.steps()[at.step];
    if (due.name == detail::saga_step_timeout && at.what == phase::invoke) {
        m.state.reason =
            "step '" + step.name + "' timed out after " + detail::saga_duration_text(step.timeout);
        // Unlike a failure reply, a timeout does not say the step did not happen: its command
        // may still be in flight, or applied with its reply lost. So the step is compensated too.
        compensate_below(m, at.step + 1);
    } else if (due.name == detail::saga_compensation_timeout && at.what == phase::compensate) {
        compensation_failed(m, at.step,
                            "no reply within " + detail::saga_duration_text(step.timeout));
    } else if (due.name == detail::saga_retry_timeout && at.what == phase::compensate) {
        m.instance.timeouts =
            timeout_of(at.step, std::string(detail::saga_compensation_timeout), m.now);
        send(m, at.step, phase::compensate);
    } else {
        return false;
    }
    return true;
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
std::optional<saga_view<Data>>
saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::find(std::string_view correlation,
                                                            std::error_code& ec) {
    auto instance = sagas_->find_by_correlation(definition_.name(), correlation, ec);
    if (ec || !instance)
        return std::nullopt;
    record r;
    if ((ec = read(*instance, r)))
        return std::nullopt;
    return saga_view<Data>{.id = instance->id,
                           .correlation = instance->correlation,
                           .state = instance->state,
                           .version = instance->version,
                           .finished = instance->finished,
                           .data = std::move(r.data),
                           .reason = std::move(r.reason),
                           .conversation_id = std::move(r.conversation)};
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
saga_stats saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::stats() const {
    std::lock_guard lock(shared_->mutex);
    return shared_->stats;
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
auto saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::where(std::string_view state) const
    -> std::optional<position> {
    phase what = phase::invoke;
    if (state.starts_with(detail::saga_compensating)) {
        what = phase::compensate;
        state.remove_prefix(detail::saga_compensating.size());
    }
    const auto& steps = definition_.steps();
    for (std::size_t i = 0; i < steps.size(); ++i)
        if (steps[i].name == state)
            return position{what, i};
    return std::nullopt; // a final state, or a step this definition no longer has
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
std::error_code
saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::read(const saga_instance& instance,
                                                            record& out) const {
    const auto j = nlohmann::json::parse(instance.data, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("data"))
        return errc::store_corrupt;
    try {
        out.data = j.at("data").template get<Data>();
        out.reason = j.value("reason", std::string());
        out.attempts = j.value("attempts", std::uint32_t{0});
        out.conversation = j.value("conversation", std::string());
        if (const auto last = j.find("last"); last != j.end()) {
            out.last.id = parse_message_id(last->value("id", std::string())).value_or(message_id{});
            for (const auto name : {headers::traceparent, headers::tracestate})
                if (const auto value = last->find(std::string(name)); value != last->end())
                    out.last.headers.set(name, value->template get<std::string>());
            if (!out.conversation.empty())
                out.last.headers.set(headers::conversation_id, out.conversation);
        }
    } catch (const nlohmann::json::exception&) {
        return errc::store_corrupt; // not this saga's data
    }
    return {};
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
std::string saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::encode(const record& r) const {
    nlohmann::json j;
    j["data"] = r.data;
    if (!r.reason.empty())
        j["reason"] = r.reason;
    if (r.attempts != 0)
        j["attempts"] = r.attempts;
    if (!r.conversation.empty())
        j["conversation"] = r.conversation;
    if (!r.last.id.is_nil()) {
        auto& last = j["last"];
        last["id"] = letterbox::to_string(r.last.id);
        for (const auto name : {headers::traceparent, headers::tracestate})
            if (const auto value = r.last.headers.template get<std::string>(name))
                last[std::string(name)] = *value;
    }
    return j.dump();
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
void saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::enter(transition& m, std::size_t step) {
    m.instance.state = definition_.steps()[step].name;
    m.instance.timeouts = timeout_of(step, std::string(detail::saga_step_timeout), m.now);
    send(m, step, phase::invoke);
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
void saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::finish(
    transition& m, std::string state, std::uint64_t saga_stats::*count) {
    m.instance.state = std::move(state);
    m.instance.timeouts.clear();
    // A parked instance stays unfinished: it is not purged, and an operator finds it.
    m.instance.finished = m.instance.state != detail::saga_compensation_failed;
    m.counts.*count += 1;
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
void saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::compensate_below(
    transition& m, std::size_t failed_step) {
    const auto& steps = definition_.steps();
    for (std::size_t k = failed_step; k-- > 0;) {
        if (!steps[k].compensate)
            continue; // nothing to undo
        m.instance.state = std::string(detail::saga_compensating) + steps[k].name;
        m.instance.timeouts = timeout_of(k, std::string(detail::saga_compensation_timeout), m.now);
        m.state.attempts = 0;
        send(m, k, phase::compensate);
        return;
    }
    finish(m, std::string(detail::saga_failed), &saga_stats::failed);
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
void saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::compensation_failed(
    transition& m, std::size_t step, std::string_view reason) {
    const auto& name = definition_.steps()[step].name;
    m.state.attempts += 1;
    attempt_failure failure;
    failure.attempt = m.state.attempts;
    failure.error = make_error_code(errc::handler_failed);
    failure.message_id = m.instance.id;
    const auto decision = retry_.decide(failure);
    if (decision.what == retry_decision::action::retry) {
        m.instance.timeouts = {{std::string(detail::saga_retry_timeout), m.now + decision.delay}};
        return;
    }
    m.state.reason = "the compensation of step '" + name + "' failed " +
                     std::to_string(m.state.attempts) + " times: " + std::string(reason) +
                     (m.state.reason.empty() ? "" : " (after " + m.state.reason + ")");
    finish(m, std::string(detail::saga_compensation_failed), &saga_stats::compensation_failed);
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
void saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::send(transition& m, std::size_t step,
                                                                 phase what) {
    const auto& s = definition_.steps()[step];
    message command = what == phase::invoke ? s.invoke(m.state.data) : s.compensate(m.state.data);
    if (command.id.is_nil()) {
        std::lock_guard lock(shared_->mutex);
        command.id = shared_->ids();
    }
    command.headers.set(headers::saga_type, definition_.name());
    command.headers.set(headers::saga_id, m.instance.id);
    command.headers.set(headers::saga_step, s.name);
    command.headers.set(headers::saga_phase,
                        std::string(what == phase::invoke ? "invoke" : "compensate"));
    command.properties.reply_to = reply_to_;
    command.properties.correlation_id = m.instance.id;
    // Its cause: the reply (or the start's cause) that made the saga send it; for what a timeout
    // sends, the command that got no reply in time; for a start without a cause, nothing.
    if (m.cause)
        caused_by(*m.cause, command);
    else if (!m.state.last.id.is_nil())
        caused_by(m.state.last, command);
    else
        begin_conversation(command);
    m.state.conversation =
        command.headers.template get<std::string>(headers::conversation_id).value_or("");
    m.state.last = message{};
    m.state.last.id = command.id;
    for (const auto name : {headers::traceparent, headers::tracestate})
        if (const auto* value = command.headers.find(name))
            m.state.last.headers.set(name, *value);
    m.state.last.headers.set(headers::conversation_id, m.state.conversation);
    m.commands.push_back(std::move(command));
    (what == phase::invoke ? m.counts.commands : m.counts.compensations) += 1;
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
std::vector<saga_timeout> saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::timeout_of(
    std::size_t step, std::string name, store_time now) const {
    const auto after = definition_.steps()[step].timeout;
    if (after.count() <= 0)
        return {};
    return {{std::move(name), now + after}};
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
std::error_code saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::write(unit_of_work_type& u,
                                                                             transition& m,
                                                                             bool insert) {
    m.instance.data = encode(m.state);
    m.instance.updated_at = m.now;
    if (auto ec = insert ? sagas_->insert(u, m.instance) : sagas_->update(u, m.instance))
        return ec;
    for (auto& command : m.commands)
        if (auto ec =
                outbox_->add(u, {std::move(command), definition_.name(), m.instance.id}, m.now))
            return ec;
    // Counted when the move is: a rolled-back or conflicting unit counts nothing.
    return u.on_commit([shared = shared_, counts = m.counts] {
        std::lock_guard lock(shared->mutex);
        auto& s = shared->stats;
        s.started += counts.started;
        s.completed += counts.completed;
        s.failed += counts.failed;
        s.compensation_failed += counts.compensation_failed;
        s.commands += counts.commands;
        s.compensations += counts.compensations;
        s.timeouts_fired += counts.timeouts_fired;
        s.unknown += counts.unknown;
        s.for_finished += counts.for_finished;
        s.stale += counts.stale;
        s.timeout_round_errors += counts.timeout_round_errors;
    });
}

template <class Data, saga_store Sagas, outbox_store Outbox, clock Clock, retry_policy Policy>
std::error_code
saga_orchestrator<Data, Sagas, Outbox, Clock, Policy>::ignore(unit_of_work_type& u,
                                                              std::uint64_t saga_stats::*count) {
    return u.on_commit([shared = shared_, count] {
        std::lock_guard lock(shared->mutex);
        shared->stats.*count += 1;
    });
}

} // namespace letterbox
