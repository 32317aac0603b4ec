// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/consumer.hpp>
#include <letterbox/dlq/dead_letter_queue.hpp>
#include <letterbox/error.hpp>
#include <letterbox/failpoint.hpp>
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
#include <letterbox/testing/simulation.hpp>
#include <letterbox/testing/temp_directory.hpp>
#include <letterbox/topology/async_declare_all.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/retry_topology.hpp>
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
/// business transactions and outbox, a relay process, the in-memory broker, a consumer process
/// (inbox + retry + redelivery + dead-letter) and the fault schedule, all in one `simulation`,
/// recorded into a `history` and checked.
template <pipeline_application App>
class pipeline_world {
public:
    pipeline_world(std::uint64_t seed, pipeline_options options)
        : sim_(seed)
        , options_(std::move(options))
        , profile_(options_.faults.value_or(fault_profile::from_seed(seed)))
        , schedule_(options_.schedule.value_or(profile_.schedule(seed, options_.fault_window)))
        , dir_("letterbox-sim-", simulation_directory(options_))
        , app_(dir_.path())
        , inbox_(
              app_.inbox(), [this] { return sim_.clock().now() < busy_until_; },
              options_.defect == pipeline_defect::inbox_check_outside_transaction)
        , workload_(sim_.rng("workload"))
        , faults_(sim_.rng("faults"))
        , handler_rng_(sim_.rng("handler"))
        , crash_rng_(sim_.rng("crashes"))
        , ids_(sim_.derive("message_ids")) {}

    pipeline_world(const pipeline_world&) = delete;
    pipeline_world& operator=(const pipeline_world&) = delete;

    pipeline_result run() {
        pipeline_result r;
        r.seed = sim_.seed();
        r.faults = profile_;
        r.schedule = schedule_;
        r.defect = options_.defect;
        declare_topology();
        start_relay();
        start_consumer();
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

    static constexpr const char* exchange_name = "letterbox.sim";
    static constexpr const char* queue_name = "sim.work";
    static constexpr const char* consumer_name = "consumer";

    struct relay_process {
        relay_process(wire w, outbox_type& store, virtual_clock& clock, relay_options o)
            : transport(std::move(w))
            , relay(store, transport, clock, std::move(o)) {}
        wire transport;
        relay_type relay;
        bool finished = false;
    };

    struct consumer_process {
        explicit consumer_process(wire w)
            : transport(std::move(w)) {}
        wire transport;
        std::shared_ptr<void> consumer; // letterbox::consumer<wire, pipeline, virtual_clock>
        std::function<void(std::function<void(std::error_code, std::string)>)> start;
        std::function<void(const std::string&, std::function<void(std::error_code)>)> stop;
        std::optional<std::string> tag;
        bool dead = false;
    };

    struct row_info {
        std::string aggregate;
        std::uint64_t sequence = 0;
    };

    // -- recording -----------------------------------------------------------------------------

    void record(history_event_payload what) { history_.record(sim_.elapsed(), std::move(what)); }
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

    process_observer consumer_observer() {
        process_observer o;
        o.delivered = [this](const delivery& d) {
            if (d.queue != queue_name)
                return;
            record(broker_delivered{.consumer = consumer_name,
                                    .id = d.msg.id,
                                    .redelivered = d.redelivered,
                                    .attempt = ++deliveries_[d.msg.id]});
            unsettled_.emplace(std::pair{d.channel, d.delivery_tag}, d.msg.id);
        };
        o.acking = [this](const delivery& d) {
            unsettled_.erase({d.channel, d.delivery_tag});
            record(delivery_acked{.consumer = consumer_name, .id = d.msg.id});
        };
        o.nacking = [this](const delivery& d, bool requeue) {
            unsettled_.erase({d.channel, d.delivery_tag});
            record(delivery_nacked{.consumer = consumer_name, .id = d.msg.id, .requeue = requeue});
        };
        o.published = [this](const message& m, std::error_code ec) {
            if (!ec && m.routing_key == topology_.dead_letter_queue_name())
                record(dead_lettered{
                    .consumer = consumer_name,
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

    // -- set-up ----------------------------------------------------------------------------------

    retry::exponential redelivery_policy() const {
        return retry::exponential(std::chrono::milliseconds(200), 2.0, std::chrono::seconds(2),
                                  options_.max_attempts);
    }

    void declare_topology() {
        topology_.queue = queue_name;
        topology_.delays = topology::retry_topology::levels_of(redelivery_policy());
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
        step([&](auto h) { topology::async_declare_all(admin, topology_.queues(), h); });
        step([&](auto h) {
            admin.async_bind(topology::binding{.source = exchange_name,
                                               .destination = queue_name,
                                               .routing_key = "#"},
                             h);
        });
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

    // -- the consumer process --------------------------------------------------------------------

    void start_consumer() {
        auto p = std::make_unique<consumer_process>(
            wire(in_memory_transport(sim_.broker(),
                                     "consumer-" + std::to_string(++consumer_generation_)),
                 consumer_observer()));
        if (options_.defect == pipeline_defect::ack_before_commit)
            p->transport.ack_on_delivery(true);
        auto* raw = p.get();
        auto effect = [this, raw](const message& m, consumer_unit& u) {
            apply(*raw, m, u);
        };
        auto handler = idempotent(
                           effect, inbox_, [this] { return app_.begin_consumer(); }, consumer_name,
                           sim_.clock())
                           .with_failpoint([this, raw](failpoint fp, const message_id& id) {
                               return consumer_failpoint(*raw, fp, id);
                           })
                           .on_duplicate(options_.on_duplicate);
        auto pipeline = middleware::compose(
            std::move(handler),
            middleware::dead_letter({.consumer_id = consumer_name}, sim_.clock()),
            middleware::redelivery(redelivery_policy(), topology_, sim_.clock()),
            middleware::retry(retry::immediate(2)));
        using consumer_type = consumer<wire, decltype(pipeline), virtual_clock>;
        auto c = std::make_shared<consumer_type>(
            p->transport, std::move(pipeline), sim_.clock(),
            consumer_options{.consume = {.queue = queue_name, .prefetch = options_.prefetch},
                             .on_event = options_.on_consumer_event});
        p->start = [c](std::function<void(std::error_code, std::string)> cb) {
            c->async_start(std::move(cb));
        };
        p->stop = [c](const std::string& tag, std::function<void(std::error_code)> cb) {
            c->async_stop(tag, std::move(cb));
        };
        p->consumer = c;
        consumer_ = std::move(p);
        subscribe(*consumer_);
    }

    void subscribe(consumer_process& p) {
        p.start([this, &p](std::error_code ec, std::string tag) {
            if (!ec)
                p.tag = std::move(tag);
            else if (!p.dead && !shutting_down_) // e.g. the connection dropped meanwhile
                sim_.after(std::chrono::milliseconds(100), [this, &p] {
                    if (!p.dead && !p.tag)
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
            record_fault(fault_kind::handler_transient_failure, "handler", m.id);
            throw std::runtime_error("simulated transient failure");
        }
        app_.handle(m, u);
        const auto it = rows_.find(m.id);
        const row_info row = it == rows_.end() ? row_info{} : it->second;
        (void)u.on_commit([this, id = m.id, row] {
            record(effect_applied{.consumer = consumer_name,
                                  .id = id,
                                  .aggregate = row.aggregate,
                                  .sequence = row.sequence});
            record(inbox_committed{.consumer = consumer_name, .id = id});
        });
    }

    bool consumer_failpoint(consumer_process& p, failpoint fp, const message_id& id) {
        if (p.dead || !crash_now(fp))
            return false;
        record_fault(fault_kind::crash, "consumer at " + std::string(to_string(fp)), id);
        lose_unsettled_deliveries();
        kill_consumer(p);
        return true;
    }

    /// The consumer's connection is lost with what it had not settled: the broker redelivers
    /// each of those, and one whose handler already forwarded a copy (a retry or a dead letter)
    /// before the lost ack now exists twice, each copy with its own attempts.
    void lose_unsettled_deliveries() {
        for (const auto& entry : unsettled_)
            ++lost_unsettled_[entry.second];
        unsettled_.clear();
    }

    void kill_consumer(consumer_process& p) {
        p.dead = true;
        p.transport.kill();
        if (consumer_.get() == &p) {
            buried_consumers_.push_back(std::move(consumer_));
            sim_.after(restart_delay(), [this] { start_consumer(); });
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
            lose_unsettled_deliveries();
            return b.sever_all();
        case fault_kind::broker_restart:
            record_fault(c.kind, "broker");
            lose_unsettled_deliveries();
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
        if (faults_over_ || !consumer_ || consumer_->dead || !consumer_->tag)
            return;
        record_fault(fault_kind::consumer_cancel,
                     "resubscribes after " +
                         std::to_string(
                             std::chrono::duration_cast<std::chrono::milliseconds>(pause).count()) +
                         "ms");
        auto& p = *consumer_;
        const auto tag = *p.tag;
        p.tag.reset();
        p.stop(tag, [this, &p, pause](std::error_code) {
            sim_.after(pause, [this, &p] {
                if (!p.dead && !shutting_down_ && !p.tag)
                    subscribe(p);
            });
        });
    }

    // -- the operator's replay ----------------------------------------------------------------

    /// The operator fixes the handler (the permanent failures stop) and replays the dead-letter
    /// queue's `permanent-failure` entries; the replay may die between a republish and its
    /// remove (`failpoint::between_republish_and_remove`), and is then run again.
    void replay_dead_letters() {
        permanent_.clear();
        replaying_ = true;
        record(fault_injected{.kind = fault_kind::other,
                              .id = std::nullopt,
                              .detail = "the operator replays the dead-letter queue"});
        start_replay();
    }

    void start_replay() {
        ++replay_passes_;
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
            *t, topology_.dead_letter_queue_name(), std::move(o));
        dlq::dead_letter_filter permanent;
        permanent.reason = "permanent-failure";
        queue->async_replay(permanent, [this, queue, t](std::error_code ec, dlq::replay_result) {
            t->async_close([](std::error_code) {}); // what it held goes back to the queue
            if (ec && replay_passes_ < 4)
                return sim_.after(restart_delay(), [this] { start_replay(); });
            replayed_ = true;
        });
    }

    // -- the end ---------------------------------------------------------------------------------

    /// Every committed message applied or dead-lettered, the outbox drained, and the broker
    /// holding nothing but the dead-letter queue.
    bool settled() {
        if (!relay_ || !consumer_ || consumer_->dead || !consumer_->tag)
            return false;
        for (const auto& [id, row] : rows_)
            if (!settled_ids_.contains(id) && !is_settled(id))
                return false;
        auto& b = sim_.broker();
        if (b.total_unacked() != 0)
            return false;
        const auto dlq = b.queue(topology_.dead_letter_queue_name());
        if (b.total_ready() != (dlq ? dlq->ready : 0))
            return false;
        std::error_code ec;
        const auto stats = app_.outbox().stats(sim_.clock().wall_now(), ec);
        return !ec && stats.pending == 0;
    }

    bool is_settled(const message_id& id) {
        // Scans the history once per message, and remembers what settled.
        for (const auto& e : history_) {
            if (const auto* a = std::get_if<effect_applied>(&e.what); a && a->id == id) {
                settled_ids_.insert(id);
                return true;
            }
            if (const auto* d = std::get_if<dead_lettered>(&e.what); d && d->id == id) {
                settled_ids_.insert(id);
                return true;
            }
        }
        return false;
    }

    void shut_down() {
        shutting_down_ = true;
        if (relay_ && !relay_->finished) {
            relay_->relay.stop();
            sim_.drive_until([this] { return relay_->finished; }, 100'000);
        }
        if (consumer_ && consumer_->tag && !consumer_->dead) {
            bool stopped = false;
            consumer_->stop(*consumer_->tag, [&stopped](std::error_code) { stopped = true; });
            sim_.drive_until([&stopped] { return stopped; }, 100'000);
        }
        if (relay_)
            relay_->transport.kill();
        if (consumer_)
            consumer_->transport.kill();
        if (chaos_)
            chaos_->async_close([](std::error_code) {});
        for (auto& t : operators_)
            t->async_close([](std::error_code) {});
        sim_.run_ready();
    }

    void check(pipeline_result& r) {
        const history& h = r.events;
        const std::vector<std::string> consumers{consumer_name};
        auto add = [&r](std::vector<invariant_violation> found) {
            r.violations.insert(r.violations.end(), std::make_move_iterator(found.begin()),
                                std::make_move_iterator(found.end()));
        };
        add(check_no_loss(h, consumers));
        add(check_no_phantom(h));
        add(check_no_duplicate_effect(h));
        // Order holds while no message of an aggregate is retried or dead-lettered (a retried
        // message is overtaken by its successors): see docs/guarantees.md.
        r.order_checked =
            profile_.handler_transient_rate == 0.0 && !profile_.poison_message &&
            profile_.handler_permanent_failures == 0 &&
            std::none_of(schedule_.commands.begin(), schedule_.commands.end(),
                         [](const fault_command& c) { return c.kind == fault_kind::sqlite_busy; });
        if (r.order_checked)
            add(check_aggregate_order(h));
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
            const auto lost = lost_unsettled_.find(id);
            most_copies =
                std::max(most_copies, n + duplicates_of(id) +
                                          (lost == lost_unsettled_.end() ? 0 : lost->second));
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

    static invariant_violation violation(invariant which, std::optional<message_id> id,
                                         std::string explanation) {
        return invariant_violation{.which = which,
                                   .id = id,
                                   .consumer = consumer_name,
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

    void check_application_effects(pipeline_result& r) {
        for (const auto& e : r.events) {
            if (const auto* c = std::get_if<transaction_committed>(&e.what)) {
                for (const auto& row : c->rows) {
                    const std::size_t n = app_.effects(row.id);
                    if (n > 1)
                        r.violations.push_back(
                            violation(invariant::no_duplicate_effect, row.id,
                                      "the application's data holds " + std::to_string(n) +
                                          " effects of message " + to_string(row.id) +
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
    temp_directory dir_;
    App app_;
    simulated_inbox_store<inbox_type> inbox_;
    history history_;
    std::mt19937_64 workload_;
    std::mt19937_64 faults_;
    std::mt19937_64 handler_rng_;
    std::mt19937_64 crash_rng_;
    message_id_generator ids_;
    topology::retry_topology topology_{};

    std::unique_ptr<relay_process> relay_;
    std::vector<std::unique_ptr<relay_process>> buried_relays_;
    std::unique_ptr<consumer_process> consumer_;
    std::vector<std::unique_ptr<consumer_process>> buried_consumers_;
    std::optional<in_memory_transport> chaos_;
    int relay_generation_ = 0;
    int consumer_generation_ = 0;

    std::map<message_id, row_info> rows_;
    std::map<std::string, std::uint64_t> sequences_;
    std::map<message_id, std::uint32_t> publishes_;
    std::map<message_id, std::uint32_t> deliveries_;
    // Consumer deliveries not yet acked or nacked, by (channel, delivery tag); and per message,
    // how many a lost connection took with it.
    std::map<std::pair<std::uint64_t, std::uint64_t>, message_id> unsettled_;
    std::map<message_id, std::uint32_t> lost_unsettled_;
    std::vector<message_id> duplicate_publishes_;
    std::vector<message> confirmed_;
    std::set<message_id> settled_ids_;
    std::optional<std::size_t> poison_index_;
    std::set<std::size_t> permanent_indexes_;
    std::optional<message_id> poison_;
    std::set<message_id> permanent_;
    virtual_clock::time_point slow_until_{};
    std::chrono::milliseconds slow_delay_{};
    std::array<bool, all_failpoints.size()> armed_{};
    virtual_clock::time_point busy_until_{};
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
