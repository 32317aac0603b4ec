// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/consumer.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/dlq/dead_letter_queue.hpp>
#include <letterbox/error.hpp>
#include <letterbox/failpoint.hpp>
#include <letterbox/handling.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>
#include <letterbox/middleware/compose.hpp>
#include <letterbox/middleware/dead_letter.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/middleware/redelivery.hpp>
#include <letterbox/middleware/retry.hpp>
#include <letterbox/outbox/outbox_relay.hpp>
#include <letterbox/payload.hpp>
#include <letterbox/retry/exponential.hpp>
#include <letterbox/retry/immediate.hpp>
#include <letterbox/testing/check_aggregate_order.hpp>
#include <letterbox/testing/check_bounded_redelivery.hpp>
#include <letterbox/testing/check_convergence.hpp>
#include <letterbox/testing/check_no_duplicate_effect.hpp>
#include <letterbox/testing/check_no_loss.hpp>
#include <letterbox/testing/check_no_phantom.hpp>
#include <letterbox/testing/check_poison_isolation.hpp>
#include <letterbox/testing/detail/process_transport.hpp>
#include <letterbox/testing/detail/simulated_inbox_store.hpp>
#include <letterbox/testing/fault_profile.hpp>
#include <letterbox/testing/fault_schedule.hpp>
#include <letterbox/testing/history.hpp>
#include <letterbox/testing/pipeline_application.hpp>
#include <letterbox/testing/pipeline_options.hpp>
#include <letterbox/testing/pipeline_result.hpp>
#include <letterbox/testing/pipeline_topology.hpp>
#include <letterbox/testing/simulation.hpp>
#include <letterbox/testing/temp_directory.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/retry_topology.hpp>
#include <letterbox/transport/async_declare_all.hpp>
#include <letterbox/transport/in_memory/channel.hpp>
#include <letterbox/transport/in_memory/in_memory_transport.hpp>

#include <nlohmann/json.hpp>

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
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::testing::detail {

/// One simulated run of the whole pipeline for one seed (see `run_pipeline`): the producer's
/// business transactions and outbox, a relay process, the in-memory broker, the consumers of
/// the run's `pipeline_topology` (each a consumer id with its own queue and one or more
/// competing processes, each process inbox + retry + redelivery + dead-letter) and the fault
/// schedule, all in one `simulation`, recorded into a `history` and checked.
template <pipeline_application App>
class pipeline_world {
public:
    pipeline_world(std::uint64_t seed, pipeline_options options)
        : sim_(seed)
        , options_(std::move(options))
        , profile_(options_.faults.value_or(fault_profile::from_seed(seed)))
        , schedule_(options_.schedule.value_or(profile_.schedule(seed, options_.fault_window)))
        , shape_(options_.topology.value_or(pipeline_topology::from_seed(seed)))
        , dir_("letterbox-sim-", simulation_directory(options_))
        , app_(dir_.path())
        , inbox_(
              app_.inbox(), [this] { return sim_.clock().now() < busy_until_; }, options_.defect)
        , workload_(sim_.rng("workload"))
        , faults_(sim_.rng("faults"))
        , handler_rng_(sim_.rng("handler"))
        , crash_rng_(sim_.rng("crashes"))
        , picks_(sim_.rng("picks"))
        , ids_(sim_.derive("message_ids")) {
        if (shape_.processes.empty() || shape_.processes.size() > 26 ||
            std::find(shape_.processes.begin(), shape_.processes.end(), 0U) !=
                shape_.processes.end())
            throw std::invalid_argument("letterbox::testing: a pipeline_topology needs 1 to 26 "
                                        "consumers, each with at least one process");
        for (std::size_t g = 0; g < shape_.consumers(); ++g) {
            auto& c = groups_.emplace_back();
            c.id = pipeline_topology::consumer_id(g);
            c.retry.queue = pipeline_topology::queue(g);
            c.retry.delays = topology::retry_topology::levels_of(redelivery_policy());
            c.processes.resize(shape_.processes[g]);
        }
    }

    pipeline_world(const pipeline_world&) = delete;
    pipeline_world& operator=(const pipeline_world&) = delete;

    pipeline_result run() {
        pipeline_result r;
        r.seed = sim_.seed();
        r.faults = profile_;
        r.schedule = schedule_;
        r.topology = shape_;
        r.defect = options_.defect;
        declare_topology();
        start_relay();
        for (std::size_t g = 0; g < groups_.size(); ++g)
            for (std::size_t slot = 0; slot < groups_[g].processes.size(); ++slot)
                start_consumer(g, slot);
        schedule_writes();
        schedule_faults();
        const auto faults_end = sim_.clock().now() + options_.fault_window;
        sim_.at(faults_end, [this] { faults_over_ = true; });
        const auto give_up = faults_end + 2 * options_.settle_within;
        bool gave_up = false;
        sim_.at(give_up, [&gave_up] { gave_up = true; });
        r.settled =
            sim_.drive_until([&] { return gave_up || (faults_over_ && settled()); }) && !gave_up;
        if (r.settled && !permanent_.empty()) {
            replay_dead_letters();
            r.settled =
                sim_.drive_until([&] { return gave_up || (replayed_ && settled()); }) && !gave_up;
        }
        shut_down();

        r.events = std::move(history_);
        check(r);
        return r;
    }

private:
    using outbox_type = typename App::outbox_store_type;
    using inbox_type = typename App::inbox_store_type;
    using consumer_unit = typename inbox_type::unit_of_work_type;
    using wire = process_transport<in_memory_transport>;
    using relay_type = outbox_relay<outbox_type, wire, virtual_clock>;
    using consumer_and_id = std::pair<std::string, message_id>;

    static constexpr const char* exchange_name = "letterbox.sim";
    static constexpr const char* binding_key = "#";

    struct relay_process {
        relay_process(wire w, outbox_type& store, virtual_clock& clock, relay_options o)
            : transport(std::move(w))
            , relay(store, transport, clock, std::move(o)) {}
        wire transport;
        relay_type relay;
        bool finished = false;
    };

    struct consumer_process {
        template <class MakeWire>
        consumer_process(std::size_t g, std::size_t s, MakeWire make)
            : group(g)
            , slot(s)
            , transport(make(*this)) {}
        std::size_t group;
        std::size_t slot;
        // Deliveries not yet acked or nacked, by (channel, delivery tag).
        std::map<std::pair<std::uint64_t, std::uint64_t>, message_id> unsettled;
        wire transport;
        std::shared_ptr<void> consumer; // letterbox::consumer<wire, pipeline, virtual_clock>
        std::function<void(std::function<void(std::error_code, std::string)>)> start;
        std::function<void(const std::string&, std::function<void(std::error_code)>)> stop;
        std::optional<std::string> tag;
        // Its queue was deleted under it: it subscribes again when the queue is restored.
        bool cancelled_by_broker = false;
        bool dead = false;
    };

    /// One consumer id: its queues, and the processes that compete on its work queue (one slot
    /// per process; a crashed process is replaced in its slot).
    struct consumer_group {
        std::string id;
        topology::retry_topology retry{};
        std::vector<std::unique_ptr<consumer_process>> processes;
        bool queue_deleted = false;
        std::uint32_t replay_passes = 0;
    };

    struct row_info {
        std::string aggregate;
        std::uint64_t sequence = 0;
    };

    // -- recording -----------------------------------------------------------------------------

    void record(history_event_payload what) {
        // What settled, kept as it happens: settled() asks after every step of the drain.
        if (const auto* e = std::get_if<effect_applied>(&what))
            settled_.emplace(e->consumer, e->id);
        else if (const auto* d = std::get_if<dead_lettered>(&what); d && !d->reason.empty())
            settled_.emplace(d->consumer, d->id);
        history_.record(sim_.elapsed(), std::move(what));
    }
    void record_fault(fault_kind kind, std::string detail,
                      std::optional<message_id> id = std::nullopt) {
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

    process_observer relay_observer() {
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

    process_observer consumer_observer(consumer_process& p) {
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
            record(delivery_nacked{
                .consumer = groups_[p.group].id, .id = d.msg.id, .requeue = requeue});
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

    /// Why a delivery falls behind the ones after it, by what the consumer's pipeline decided
    /// for it; empty for an ack (it settles in its turn).
    static std::string deferral(const middleware::disposition& r) {
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

    // -- set-up ----------------------------------------------------------------------------------

    retry::exponential redelivery_policy() const {
        return retry::exponential(std::chrono::milliseconds(200), 2.0, std::chrono::seconds(2),
                                  options_.max_attempts);
    }

    void declare_topology() {
        in_memory_transport admin(sim_.broker(), "admin");
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
                topology::exchange{.name = exchange_name, .type = topology::exchange_type::topic},
                h);
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

    // -- the relay process -----------------------------------------------------------------------

    void start_relay() {
        const auto name = "relay-" + std::to_string(++relay_generation_);
        relay_options o;
        o.owner = name;
        o.batch_size = 8;
        o.window = 4;
        o.lease = std::chrono::seconds(2);
        o.poll_interval = std::chrono::milliseconds(500);
        o.row_retry = {std::chrono::milliseconds(100), 2.0, std::chrono::seconds(2), 0.0};
        o.transport_retry = {std::chrono::milliseconds(50), 2.0, std::chrono::seconds(1), 0.2};
        o.max_attempts = 1000; // a refused publish is retried, never parked, in a simulation
        o.retention = std::nullopt;
        o.seed = sim_.derive(name);
        o.failpoint = [this](relay_point p, const outbox_record& row) {
            return relay_failpoint(p, row);
        };
        o.on_event = options_.on_relay_event;
        wire w(in_memory_transport(sim_.broker(), name), relay_observer());
        if (options_.defect == pipeline_defect::mark_before_confirm)
            w.confirm_on_send(true);
        if (options_.defect == pipeline_defect::return_as_success)
            w.return_as_success(true);
        relay_ = std::make_unique<relay_process>(std::move(w), app_.outbox(), sim_.clock(),
                                                 std::move(o));
        relay_->relay.async_run([this, p = relay_.get()](std::error_code) { on_relay_done(p); });
    }

    bool relay_failpoint(relay_point p, const outbox_record& row) {
        if (p == relay_point::after_mark) {
            record(relay_marked{.id = row.msg.id});
            return false;
        }
        const auto fp = p == relay_point::after_publish_sent
                            ? failpoint::after_publish_before_confirm
                        : p == relay_point::after_confirm ? failpoint::after_confirm_before_mark
                                                          : std::optional<failpoint>{};
        if (!fp || !crash_now(*fp))
            return false;
        record_fault(fault_kind::crash, "relay at " + std::string(to_string(*fp)), row.msg.id);
        return true;
    }

    void on_relay_done(relay_process* p) {
        p->finished = true;
        if (shutting_down_ || p != relay_.get())
            return;
        // It halted at a failpoint: the process is dead. A new one starts a little later.
        relay_->transport.kill();
        buried_relays_.push_back(std::move(relay_));
        sim_.after(restart_delay(), [this] { start_relay(); });
    }

    // -- the consumer processes ------------------------------------------------------------------

    void start_consumer(std::size_t g, std::size_t slot) {
        auto& group = groups_[g];
        const auto name = "consumer-" + std::to_string(++consumer_generation_);
        auto p = std::make_unique<consumer_process>(g, slot, [&](consumer_process& self) {
            return wire(in_memory_transport(sim_.broker(), name), consumer_observer(self));
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
            middleware::retry(retry::immediate(2)));
        // A delivery the pipeline does not ack falls behind: the deliveries after it may be
        // handled first, so its aggregate's order is no longer promised for this consumer
        // (check_aggregate_order skips it). Recorded when the pipeline decides, before the
        // consumer carries it out (a forward, say, completes later or, if the process dies
        // meanwhile, never). A dead process's decisions mean nothing.
        auto observed = [this, raw, inner = std::move(pipeline)](
                            const middleware::handling& x) mutable -> middleware::disposition {
            auto r = inner(x);
            if (auto why = deferral(r); !why.empty() && !raw->dead)
                record(delivery_deferred{
                    .consumer = groups_[raw->group].id, .id = x.d.msg.id, .why = std::move(why)});
            return r;
        };
        using consumer_type = consumer<wire, decltype(observed), virtual_clock>;
        auto c = std::make_shared<consumer_type>(
            p->transport, std::move(observed), sim_.clock(),
            consumer_options{.consume = {.queue = group.retry.queue, .prefetch = options_.prefetch},
                             .on_event = options_.on_consumer_event});
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

    void subscribe(consumer_process& p) {
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

    void apply(consumer_process& p, const message& m, consumer_unit& u) {
        if (p.dead)
            throw std::runtime_error("letterbox::testing: the consumer process is dead");
        if (poison_ && *poison_ == m.id)
            throw std::runtime_error("simulated poison message");
        if (permanent_.contains(m.id))
            throw error(errc::payload_malformed, "simulated permanent failure");
        if (profile_.handler_transient_rate > 0.0 &&
            chance(handler_rng_) < profile_.handler_transient_rate) {
            record_fault(fault_kind::handler_transient_failure,
                         groups_.size() == 1 ? "handler" : "handler of " + groups_[p.group].id,
                         m.id);
            throw std::runtime_error("simulated transient failure");
        }
        app_.handle(m, u);
        const auto it = rows_.find(m.id);
        const row_info row = it == rows_.end() ? row_info{} : it->second;
        (void)u.on_commit([this, consumer = groups_[p.group].id, id = m.id, row] {
            record(effect_applied{.consumer = consumer,
                                  .id = id,
                                  .aggregate = row.aggregate,
                                  .sequence = row.sequence});
            record(inbox_committed{.consumer = consumer, .id = id});
        });
    }

    bool consumer_failpoint(consumer_process& p, failpoint fp, const message_id& id) {
        if (p.dead || !crash_now(fp))
            return false;
        record_fault(fault_kind::crash, groups_[p.group].id + " at " + std::string(to_string(fp)),
                     id);
        lose_unsettled_deliveries(p);
        kill_consumer(p);
        return true;
    }

    /// A process's connection is lost with what it had not settled: the broker redelivers
    /// each of those, and one whose handler already forwarded a copy (a retry or a dead letter)
    /// before the lost ack now exists twice, each copy with its own attempts.
    void lose_unsettled_deliveries(consumer_process& p) {
        for (const auto& entry : p.unsettled)
            ++lost_unsettled_[{groups_[p.group].id, entry.second}];
        p.unsettled.clear();
    }
    void lose_all_unsettled_deliveries() {
        for (auto& g : groups_)
            for (auto& p : g.processes)
                if (p)
                    lose_unsettled_deliveries(*p);
    }

    void kill_consumer(consumer_process& p) {
        p.dead = true;
        p.transport.kill();
        auto& slot = groups_[p.group].processes[p.slot];
        if (slot.get() == &p) {
            buried_consumers_.push_back(std::move(slot));
            sim_.after(restart_delay(), [this, g = p.group, s = p.slot] { start_consumer(g, s); });
        }
    }

    // -- the producer ----------------------------------------------------------------------------

    void schedule_writes() {
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

    void write(std::size_t k) {
        const auto aggregate_key =
            std::to_string(k % std::max<std::size_t>(options_.aggregates, 1));
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
            record(
                transaction_rolled_back{{{.id = e.msg.id, .aggregate = aggregate, .sequence = 0}}});
            return;
        }
        const auto sequence = ++sequences_[aggregate];
        rows_[e.msg.id] = row_info{aggregate, sequence};
        record(transaction_committed{
            {{.id = e.msg.id, .aggregate = aggregate, .sequence = sequence}}});
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

    // -- faults ----------------------------------------------------------------------------------

    static double chance(std::mt19937_64& rng) {
        return static_cast<double>(rng() >> 11U) * 0x1.0p-53;
    }

    bool crash_now(failpoint fp) {
        if ((faults_over_ && !replaying_) || shutting_down_)
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

    std::chrono::nanoseconds restart_delay() {
        return std::chrono::milliseconds(100 + static_cast<std::int64_t>(faults_() % 900));
    }

    void schedule_faults() {
        for (const auto& c : schedule_.commands)
            sim_.after(c.at, [this, c] { inject(c); });
    }

    void inject(const fault_command& c) {
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
            busy_until_ =
                std::max(busy_until_, sim_.clock().now() + std::chrono::milliseconds(c.arg));
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

    void publish_duplicate(std::uint64_t pick) {
        if (confirmed_.empty() || faults_over_)
            return;
        const message copy = confirmed_[pick % confirmed_.size()];
        record_fault(fault_kind::duplicate_delivery, "published once more", copy.id);
        duplicate_publishes_.push_back(copy.id);
        if (!chaos_)
            chaos_.emplace(sim_.broker(), "chaos");
        chaos_->async_publish(copy, [](std::error_code) {});
    }

    void cancel_consumer(std::chrono::nanoseconds pause) {
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
        record_fault(fault_kind::consumer_cancel,
                     (groups_.size() == 1 && subscribed.size() == 1
                          ? std::string()
                          : groups_[p.group].id + " process " + std::to_string(p.slot + 1) + ", ") +
                         "resubscribes after " +
                         std::to_string(
                             std::chrono::duration_cast<std::chrono::milliseconds>(pause).count()) +
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

    // -- unroutable publishes: bindings removed, queues deleted ---------------------------------

    /// Runs `op(channel)` on a channel of a connection of its own, as an operator's command line
    /// would, and closes it. Every operation is synchronous on the in-memory broker.
    template <class Op>
    void as_operator(Op op) {
        auto conn = sim_.broker().connect("operator");
        op(conn);
        conn.close();
    }

    /// Every binding from the exchange to a work queue is removed, and restored after `length`:
    /// the exchange routes nothing meanwhile, so each publish of the relay comes back
    /// unroutable (`basic.return`), and the relay must keep its row and publish it again. The
    /// queues and what they hold are not touched. (Unbinding only some queues would not make a
    /// publish unroutable: the others would take it, and the broker would confirm it.)
    void remove_bindings(std::chrono::milliseconds length) {
        record(fault_injected{.kind = fault_kind::binding_removed,
                              .id = std::nullopt,
                              .detail = "every binding of the exchange, restored after " +
                                        std::to_string(length.count()) + "ms"});
        unbound_until_ = std::max(unbound_until_, sim_.clock().now() + length);
        bindings_removed_ = true;
        as_operator([this](in_memory::connection& conn) {
            for (const auto& g : groups_)
                if (!g.queue_deleted)
                    (void)conn.open_channel().queue_unbind(g.retry.queue, exchange_name,
                                                           binding_key);
        });
        sim_.after(length, [this] { restore_topology(); });
    }

    /// Every work queue is deleted, and declared and bound again after `length`; each process
    /// of its consumer, cancelled by the broker, subscribes again then.
    ///
    /// A deleted queue's messages are gone for good: RabbitMQ never brings them back (a
    /// definitions import restores a queue, not its contents), and no client can prevent that
    /// loss. So the operator here deletes the queues only when they are empty: nothing ready,
    /// nothing delivered and unacknowledged, and nothing waiting in their retry queues (which
    /// would expire into a missing queue and be dropped). Until then it waits, checking every
    /// 10 ms of virtual time, and gives up when the fault window ends. "Restored" thus means
    /// the same queues, with the same arguments and bindings, empty, which is all they held.
    /// What must not be lost is what the relay publishes while they are gone: with no queue
    /// bound, each publish comes back unroutable, and the relay keeps the row until the queues
    /// are back.
    void delete_queues(std::chrono::milliseconds length) {
        if (faults_over_)
            return;
        if (!queues_empty())
            return sim_.after(std::chrono::milliseconds(10),
                              [this, length] { delete_queues(length); });
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

    /// Whether the work queues and their retry queues hold nothing at all.
    bool queues_empty() {
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

    /// Puts back what is due: the deleted queues once no deletion lasts any longer (and their
    /// processes subscribe again), the bindings once no removal lasts any longer.
    void restore_topology() {
        const auto now = sim_.clock().now();
        const bool queues_due =
            now >= deleted_until_ && std::any_of(groups_.begin(), groups_.end(),
                                                 [](const auto& g) { return g.queue_deleted; });
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
                if (conn.open_channel().queue_bind(groups_[g].retry.queue, exchange_name,
                                                   binding_key))
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

    bool topology_restored() {
        const auto now = sim_.clock().now();
        if (now < unbound_until_ || now < deleted_until_)
            return false;
        return std::none_of(groups_.begin(), groups_.end(),
                            [](const consumer_group& g) { return g.queue_deleted; });
    }

    // -- the operator's replay ----------------------------------------------------------------

    /// The operator fixes the handler (the permanent failures stop) and replays the
    /// `permanent-failure` entries of each consumer's dead-letter queue; the replay may die
    /// between a republish and its remove (`failpoint::between_republish_and_remove`), and is
    /// then run again.
    void replay_dead_letters() {
        permanent_.clear();
        replaying_ = true;
        record(fault_injected{.kind = fault_kind::other,
                              .id = std::nullopt,
                              .detail = "the operator replays the dead-letter queue"});
        start_replay(0);
    }

    void start_replay(std::size_t g) {
        ++replay_passes_;
        ++groups_[g].replay_passes;
        auto* t = operators_
                      .emplace_back(std::make_unique<in_memory_transport>(
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
                                  .detail =
                                      "operator at between_republish_and_remove (" + e.id + ")"});
            ++disruptions_;
            throw failpoint_halt(failpoint::between_republish_and_remove);
        };
        auto queue = std::make_shared<dlq::dead_letter_queue<in_memory_transport>>(
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

    // -- the end ---------------------------------------------------------------------------------

    /// Every committed message applied or dead-lettered by every consumer, the outbox drained,
    /// the topology restored with every process subscribed, and the broker holding nothing but
    /// the dead-letter queues.
    bool settled() {
        if (!relay_ || !topology_restored())
            return false;
        for (const auto& g : groups_)
            for (const auto& p : g.processes)
                if (!p || p->dead || !p->tag)
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

    void shut_down() {
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

    void check(pipeline_result& r) {
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
            r.violations.push_back(
                violation(invariant::convergence, std::nullopt,
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

    /// Order per aggregate (I-06), for each consumer with one process on its queue (competing
    /// processes may handle two events of one aggregate at once: nothing is promised then).
    /// `check_aggregate_order` skips, per consumer, the aggregates with a deferred delivery (a
    /// retried, held-back or dead-lettered message): see docs/guarantees.md.
    void check_order(pipeline_result& r) {
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

    static invariant_violation violation(invariant which, std::optional<message_id> id,
                                         std::string explanation) {
        return invariant_violation{.which = which,
                                   .id = id,
                                   .consumer = {},
                                   .aggregate = {},
                                   .explanation = std::move(explanation),
                                   .events = {}};
    }

    std::uint32_t duplicates_of(const message_id& id) const {
        std::uint32_t n = 0;
        for (const auto& e : duplicate_publishes_)
            n += e == id ? 1 : 0;
        return n;
    }

    /// The application's own count of each message's effects, against the history's: every
    /// consumer applies it once, so its data may hold as many effects as the history shows
    /// `effect_applied` events, and no more. A rolled-back message has none.
    void check_application_effects(pipeline_result& r) {
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

    simulation sim_;
    pipeline_options options_;
    fault_profile profile_;
    fault_schedule schedule_;
    pipeline_topology shape_;
    temp_directory dir_;
    App app_;
    simulated_inbox_store<inbox_type> inbox_;
    history history_;
    std::mt19937_64 workload_;
    std::mt19937_64 faults_;
    std::mt19937_64 handler_rng_;
    std::mt19937_64 crash_rng_;
    std::mt19937_64 picks_;
    message_id_generator ids_;

    std::vector<consumer_group> groups_;
    std::unique_ptr<relay_process> relay_;
    std::vector<std::unique_ptr<relay_process>> buried_relays_;
    std::vector<std::unique_ptr<consumer_process>> buried_consumers_;
    std::optional<in_memory_transport> chaos_;
    int relay_generation_ = 0;
    int consumer_generation_ = 0;

    std::map<message_id, row_info> rows_;
    std::map<std::string, std::uint64_t> sequences_;
    std::map<message_id, std::uint32_t> publishes_;
    std::map<consumer_and_id, std::uint32_t> deliveries_;
    // Per consumer and message, how many deliveries a lost connection took with it unsettled.
    std::map<consumer_and_id, std::uint32_t> lost_unsettled_;
    std::vector<message_id> duplicate_publishes_;
    std::vector<message> confirmed_;
    // (consumer, message) applied or dead-lettered; consumer "" for everyone.
    std::set<consumer_and_id> settled_;
    std::optional<std::size_t> poison_index_;
    std::set<std::size_t> permanent_indexes_;
    std::optional<message_id> poison_;
    std::set<message_id> permanent_;
    virtual_clock::time_point slow_until_{};
    std::chrono::milliseconds slow_delay_{};
    std::array<bool, all_failpoints.size()> armed_{};
    virtual_clock::time_point busy_until_{};
    virtual_clock::time_point unbound_until_{};
    virtual_clock::time_point deleted_until_{};
    bool bindings_removed_ = false;
    std::uint32_t crashes_ = 0;
    std::uint32_t disruptions_ = 0;
    std::vector<std::unique_ptr<in_memory_transport>> operators_;
    std::uint32_t replay_passes_ = 0;
    bool replaying_ = false;
    bool replay_crashed_ = false;
    bool replayed_ = false;
    bool faults_over_ = false;
    bool shutting_down_ = false;
};

} // namespace letterbox::testing::detail
