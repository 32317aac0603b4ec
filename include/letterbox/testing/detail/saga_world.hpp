// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/backoff/exponential.hpp>
#include <letterbox/config.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/message.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>
#include <letterbox/outbox/outbox_relay.hpp>
#include <letterbox/receive_endpoint.hpp>
#include <letterbox/saga/saga_definition.hpp>
#include <letterbox/saga/saga_orchestrator.hpp>
#include <letterbox/saga/saga_reply.hpp>
#include <letterbox/testing/check_saga_history.hpp>
#include <letterbox/testing/detail/recording_saga_store.hpp>
#include <letterbox/testing/detail/simulated_relay_options.hpp>
#include <letterbox/testing/saga_history_event.hpp>
#include <letterbox/testing/saga_simulation_options.hpp>
#include <letterbox/testing/saga_simulation_result.hpp>
#include <letterbox/testing/simulation.hpp>
#include <letterbox/transport/in_memory/transport.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

/// One simulated run of an orchestrated saga for one seed (see `run_saga_simulation`): an
/// orchestrator service and one participant service per step, each with its own in-memory
/// outbox, inbox and relay, on the in-memory broker and a virtual clock, under the faults of a
/// `saga_fault_profile`; recorded into a saga history and checked.
class saga_world {
public:
    saga_world(std::uint64_t seed, const saga_simulation_options& options)
        : sim_(seed)
        , options_(options)
        , profile_(options.faults.value_or(saga_fault_profile::from_seed(seed)))
        , steps_(options.steps.value_or(2 + sim_.rng("steps")() % 3))
        , chance_(sim_.rng("chances"))
        , ids_(sim_.derive("reply_ids"))
        , sagas_([this](const std::optional<saga_instance>& old) { return cause_of(old); },
                 [this](saga_history_event e) { record(std::move(e)); }) {
        if (steps_ == 0 || steps_ > step_names.size())
            throw std::invalid_argument("letterbox::testing: a simulated saga has 1 to 4 steps");
        orchestrator_ = &add_service("orchestrator", "saga.replies");
        for (std::size_t i = 0; i < steps_; ++i)
            participants_.push_back(
                &add_service(std::string(step_names[i]), "saga." + std::string(step_names[i])));
        saga_ = std::make_unique<orchestrator_type>(
            definition(), sagas_, orchestrator_->outbox, sim_.clock(), orchestrator_->queue,
            backoff::exponential(std::chrono::milliseconds(50), 2.0, std::chrono::seconds(1), 8),
            sim_.derive("saga_ids"));
    }

    saga_world(const saga_world&) = delete;
    saga_world& operator=(const saga_world&) = delete;

    ~saga_world() { shut_down(); }

    saga_simulation_result run() {
        saga_simulation_result r;
        r.seed = sim_.seed();
        r.faults = profile_;
        r.steps = steps_;
        r.defect = options_.defect;
        for (auto& s : services_)
            declare(*s);
        for (std::size_t i = 0; i < services_.size(); ++i)
            start(i);
        schedule_sagas();
        schedule_faults();
        tick();
        const auto window_end = sim_.clock().now() + options_.window;
        sim_.at(window_end, [this] { faults_over_ = true; });
        bool gave_up = false;
        sim_.at(window_end + options_.settle_within, [&gave_up] { gave_up = true; });
        r.settled = sim_.drive_until([&] {
            return gave_up || (faults_over_ && ended_ == options_.sagas);
        }) && !gave_up;
        sim_.run_for(options_.quiet); // late commands, duplicates and replies come in
        shut_down();

        r.stats = saga_->stats();
        r.crashes = crashes_;
        r.deliveries = deliveries_;
        r.events = std::move(history_);
        std::vector<std::string> names;
        for (std::size_t i = 0; i < steps_; ++i)
            names.emplace_back(step_names[i]);
        r.violations = check_saga_history(
            r.events, {.steps = names, .without_compensation = {}, .step_timeout = timeout()});
        return r;
    }

private:
    static constexpr std::array<std::string_view, 4> step_names{"reserve-stock", "charge-payment",
                                                                "book-shipping", "notify-customer"};

    using effect_type = std::function<std::error_code(const message&, in_memory_unit_of_work&)>;
    using endpoint_type =
        receive_endpoint<in_memory::transport, virtual_clock, backoff::exponential>;
    using worker_type = decltype(std::declval<const endpoint_type&>().consume(
        std::declval<in_memory_inbox_store&>(), std::declval<effect_type>()));
    using relay_type = outbox_relay<in_memory_outbox_store, in_memory::transport, virtual_clock>;
    using orchestrator_type = saga_orchestrator<int, recording_saga_store, in_memory_outbox_store,
                                                virtual_clock, backoff::exponential>;

    // A participant's business record of one saga's step.
    struct step_record {
        bool applied = false;
        bool compensated = false;
    };

    // One process: its connection, outbox, inbox and relay, and the consumer of its queue.
    struct service {
        service(simulation& sim, std::string n, std::string q)
            : name(std::move(n))
            , queue(std::move(q))
            , transport(sim.broker(), name)
            , endpoint(receive_endpoint(transport, sim.clock(), {.queue = queue, .prefetch = 4})
                           .retry(backoff::exponential(std::chrono::milliseconds(20), 2.0,
                                                       std::chrono::milliseconds(500), 10))) {}
        std::string name;
        std::string queue;
        in_memory::transport transport;
        in_memory_outbox_store outbox;
        in_memory_inbox_store inbox;
        endpoint_type endpoint;
        std::unique_ptr<relay_type> relay;
        std::unique_ptr<worker_type> worker;
        std::optional<std::string> tag;
        bool relay_done = false;
        bool stopping = false;
        std::map<std::string, step_record> records; // by saga (participants)
    };

    std::chrono::milliseconds timeout() const { return options_.step_timeout; }

    saga_definition<int> definition() {
        saga_definition<int> d("simulated-order");
        for (std::size_t i = 0; i < steps_; ++i) {
            const std::string name(step_names[i]);
            const auto command = [name, queue = participants_[i]->queue](std::string phase) {
                return [name, queue, phase](const int& order) {
                    message m;
                    m.type = name + (phase == "invoke" ? "" : ".undo");
                    m.routing_key = queue;
                    m.body = "order-" + std::to_string(order);
                    return m;
                };
            };
            d.step({.name = name,
                    .invoke = command("invoke"),
                    .compensate = command("compensate"),
                    .on_reply = {},
                    .timeout = timeout()});
        }
        return d;
    }

    service& add_service(std::string name, std::string queue) {
        auto& s = *services_.emplace_back(
            std::make_unique<service>(sim_, std::move(name), std::move(queue)));
        auto o = simulated_relay_options(sim_, "relay-" + s.name);
        o.on_event = [this](const relay_event& e) {
            if (e.what == relay_event::kind::confirmed)
                published_.push_back(e.record.msg);
        };
        s.relay = std::make_unique<relay_type>(s.outbox, s.transport, sim_.clock(), std::move(o));
        s.relay->async_run([&s](std::error_code) { s.relay_done = true; });
        return s;
    }

    void declare(service& s) {
        std::optional<std::error_code> done;
        s.endpoint.async_declare([&done](std::error_code ec) { done = ec; });
        sim_.drive_until([&done] { return done.has_value(); });
        if (!done || *done)
            throw std::runtime_error("letterbox::testing: declaring the saga queues failed");
    }

    void start(std::size_t index) {
        auto& s = *services_[index];
        if (!s.worker) {
            effect_type effect = [this, index](const message& m, in_memory_unit_of_work& u) {
                return index == 0 ? apply_reply(m, u) : apply_command(index - 1, m, u);
            };
            s.worker = std::make_unique<worker_type>(s.endpoint.consume(s.inbox, effect));
        }
        s.worker->async_start([&s](std::error_code ec, std::string tag) {
            if (!ec)
                s.tag = std::move(tag);
        });
    }

    // Whether an occasion of chance `rate` happens. Integer arithmetic on the generator's
    // output, not a standard distribution (whose results differ between standard libraries),
    // so that a seed replays the same history wherever it is run.
    static bool draw(std::mt19937_64& rng, double rate) {
        return rate > 0.0 && static_cast<double>(rng() % 1'000'000) < rate * 1'000'000.0;
    }
    bool happens(double rate) { return draw(chance_, rate); }

    void record(saga_history_event e) {
        e.at = sim_.elapsed();
        if (e.what == saga_history_event::kind::moved &&
            (e.to == "completed" || e.to == "failed" || e.to == "compensation_failed"))
            ++ended_;
        history_.push_back(std::move(e));
    }

    void fault(std::string what) {
        record({.what = saga_history_event::kind::fault, .cause = std::move(what)});
    }

    // The cause of a move being written: a reply, a timeout (the instance's due one; an
    // instance waits on one timeout at a time) or the start.
    std::string cause_of(const std::optional<saga_instance>& old) {
        if (!old)
            return "start";
        if (applying_reply_)
            return *applying_reply_;
        for (const auto& t : old->timeouts)
            if (t.due <= sim_.clock().wall_now())
                return "timeout " + t.name;
        return "timeout";
    }

    std::error_code apply_reply(const message& reply, in_memory_unit_of_work& u) {
        ++deliveries_;
        if (happens(profile_.transient_rate))
            throw std::runtime_error("transient failure");
        const auto text = [&reply](std::string_view name) {
            return reply.headers.get<std::string>(name).value_or("?");
        };
        applying_reply_ = "reply " + text(headers::saga_step) + ' ' + text(headers::saga_phase) +
                          ' ' + text(headers::saga_outcome);
        // Reset however the move ends (an exception from the definition included).
        const std::unique_ptr<std::optional<std::string>, void (*)(std::optional<std::string>*)>
            reset(&applying_reply_, [](std::optional<std::string>* p) { p->reset(); });
        const auto ec = (*saga_)(reply, u);
        if (ec)
            return ec;
        if (auto woke = u.on_commit(orchestrator_->relay->waker()))
            return woke;
        if (happens(profile_.orchestrator_crash_rate)) {
            ++crashes_;
            fault("orchestrator dies before committing a move");
            throw std::runtime_error("the orchestrator died before its commit");
        }
        return {};
    }

    // Participant `step`: does, undoes or refuses its step, and replies, in one transaction
    // with the command's inbox record (but see `saga_defect`).
    std::error_code apply_command(std::size_t step, const message& command,
                                  in_memory_unit_of_work& u) {
        ++deliveries_;
        if (happens(profile_.transient_rate))
            throw std::runtime_error("transient failure");
        auto& s = *participants_[step];
        const std::string name(step_names[step]);
        const auto& saga = command.body;
        const auto current = s.records[saga];
        auto next = current;
        std::vector<saga_history_event> done;
        const auto event = [&](saga_history_event::kind what) {
            return saga_history_event{.what = what, .saga = saga, .step = name};
        };
        auto outcome = saga_outcome::success;
        std::string reason;
        if (command.headers.get<std::string>(headers::saga_phase) == "invoke") {
            if (current.compensated && options_.defect != saga_defect::late_command_applied) {
                outcome = saga_outcome::failure;
                reason = "compensated before it came";
                done.push_back(event(saga_history_event::kind::refused));
            } else if (current.applied) {
                // done already: the same reply again
            } else if (declines(saga, step)) {
                outcome = saga_outcome::failure;
                reason = "declined";
                done.push_back(event(saga_history_event::kind::declined));
            } else {
                next.applied = true;
                done.push_back(event(saga_history_event::kind::applied));
            }
        } else if (!current.compensated) {
            next.compensated = true;
            if (current.applied || options_.defect == saga_defect::undo_without_check) {
                if (options_.defect == saga_defect::compensation_outside_transaction)
                    record(event(saga_history_event::kind::undone)); // committed on its own
                else
                    done.push_back(event(saga_history_event::kind::undone));
            }
        }
        const auto reply = saga_reply(command, ids_, outcome, reason);
        if (auto ec = s.outbox.add(u, {reply, "saga", saga}, sim_.clock().wall_now()))
            return ec;
        if (auto ec = u.on_commit(s.relay->waker()))
            return ec;
        if (auto ec = u.on_commit([this, &s, saga, next, done = std::move(done)] {
                s.records[saga] = next;
                for (const auto& e : done)
                    record(e);
            }))
            return ec;
        if (happens(profile_.participant_crash_rate)) {
            ++crashes_;
            fault(name + " dies before its commit");
            throw std::runtime_error("the participant died before its commit");
        }
        return {};
    }

    // Whether the participant of `step` declines it for `saga`: drawn once per pair, so that a
    // command handled again gets the same answer.
    bool declines(const std::string& saga, std::size_t step) const {
        std::mt19937_64 rng(sim_.derive("decline/" + saga + '/' + std::to_string(step)));
        return draw(rng, profile_.decline_rate);
    }

    void schedule_sagas() {
        auto rng = sim_.rng("sagas");
        const auto span = static_cast<std::uint64_t>(std::max<std::int64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(options_.window).count(), 1));
        for (std::size_t n = 1; n <= options_.sagas; ++n)
            sim_.after(std::chrono::microseconds(rng() % span), [this, n] { start_saga(n); });
    }

    void start_saga(std::size_t n) {
        in_memory_unit_of_work u;
        const auto order = static_cast<int>(n);
        if (saga_->start(u, "order-" + std::to_string(order), order) ||
            u.on_commit(orchestrator_->relay->waker()) || u.commit())
            throw std::runtime_error("letterbox::testing: starting a simulated saga failed");
    }

    // The orchestrator's timer: fires the due timeouts every `timeout_tick` (each move wakes
    // the relay when it commits), until shut down.
    void tick() {
        saga_->async_run_timeouts(
            sim_.executor(),
            [this] {
                in_memory_unit_of_work u;
                if (u.on_commit(orchestrator_->relay->waker()))
                    throw std::runtime_error("letterbox::testing: a unit refused its callback");
                return u;
            },
            options_.timeout_tick,
            boost::asio::bind_cancellation_slot(stop_timeouts_.slot(),
                                                [](boost::system::error_code) {}));
    }

    void schedule_faults() {
        auto rng = sim_.rng("faults");
        const auto span = static_cast<std::uint64_t>(std::max<std::int64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(options_.window).count(), 1));
        const auto at = [&rng, span] {
            return std::chrono::microseconds(rng() % span);
        };
        for (std::uint32_t i = 0; i < profile_.connection_drops; ++i)
            sim_.after(at(), [this] {
                fault("every connection drops");
                sim_.broker().sever_all();
            });
        for (std::uint32_t i = 0; i < profile_.lost_confirms; ++i)
            sim_.after(at(), [this, n = 1 + rng() % 3] {
                fault("the confirm of publish +" + std::to_string(n) + " is lost");
                sim_.broker().lose_nth_confirm(n);
            });
        for (std::uint32_t i = 0; i < profile_.duplicate_publishes; ++i)
            sim_.after(at(), [this, pick = rng()] { publish_duplicate(pick); });
        for (std::uint32_t i = 0; i < profile_.outages; ++i)
            sim_.after(at(), [this, who = 1 + rng() % steps_] { outage(who); });
    }

    void publish_duplicate(std::uint64_t pick) {
        if (published_.empty() || stopping_)
            return;
        const auto copy = published_[pick % published_.size()];
        fault("'" + copy.type + "' published once more");
        if (!chaos_)
            chaos_ = std::make_unique<in_memory::transport>(sim_.broker(), "chaos");
        chaos_->async_publish(copy, [](std::error_code) {});
    }

    // Participant `index` stops consuming for the profile's outage length.
    void outage(std::size_t index) {
        auto& s = *services_[index];
        if (!s.tag || stopping_)
            return;
        fault(s.name + " stops consuming for " + std::to_string(profile_.outage_length.count()) +
              "ms");
        const auto tag = *std::exchange(s.tag, std::nullopt);
        s.worker->async_stop(tag, [this, index](std::error_code ec) {
            if (ec)
                return; // not cancelled (the subscription was already gone): no outage
            sim_.after(profile_.outage_length, [this, index] {
                if (!stopping_)
                    start(index);
            });
        });
    }

    void shut_down() {
        if (stopping_)
            return;
        stopping_ = true;
        stop_timeouts_.emit(boost::asio::cancellation_type::terminal);
        std::size_t pending = 0;
        for (auto& s : services_)
            if (s->worker && s->tag) {
                ++pending;
                s->worker->async_shutdown(*s->tag, [&pending](std::error_code) { --pending; });
            }
        sim_.drive_until([&pending] { return pending == 0; }, 1'000'000);
        for (auto& s : services_)
            s->relay->stop();
        sim_.drive_until(
            [this] {
                return std::all_of(services_.begin(), services_.end(),
                                   [](const auto& s) { return s->relay_done; });
            },
            1'000'000);
    }

    simulation sim_;
    saga_simulation_options options_;
    saga_fault_profile profile_;
    std::size_t steps_;
    std::mt19937_64 chance_;
    message_id_generator ids_;
    recording_saga_store sagas_;
    std::vector<std::unique_ptr<service>> services_;
    service* orchestrator_ = nullptr;
    std::vector<service*> participants_;
    std::unique_ptr<orchestrator_type> saga_;
    boost::asio::cancellation_signal stop_timeouts_;
    std::unique_ptr<in_memory::transport> chaos_;
    std::vector<message> published_;
    std::vector<saga_history_event> history_;
    std::optional<std::string> applying_reply_;
    std::size_t ended_ = 0;
    std::size_t crashes_ = 0;
    std::size_t deliveries_ = 0;
    bool faults_over_ = false;
    bool stopping_ = false;
};

} // namespace letterbox::testing::detail
