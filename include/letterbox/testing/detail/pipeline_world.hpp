// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/backoff/exponential.hpp>
#include <letterbox/backoff/immediate.hpp>
#include <letterbox/config.hpp>
#include <letterbox/consumer.hpp>
#include <letterbox/disposition.hpp>
#include <letterbox/dlq/dead_letter_queue.hpp>
#include <letterbox/error.hpp>
#include <letterbox/failpoint.hpp>
#include <letterbox/group_key.hpp>
#include <letterbox/group_options.hpp>
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
#include <letterbox/transport/in_memory/transport.hpp>

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

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing::detail {

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
        , group_commit_(options_.group_commit.value_or(
              options_.defect == pipeline_defect::ack_before_batch_commit
                  ? std::size_t{options_.prefetch}
                  : group_commit_from_seed(seed, options_.prefetch)))
        , message_groups_(options_.message_groups.value_or(
              options_.defect == pipeline_defect::groups_let_retries_overtake ||
              message_groups_from_seed(seed)))
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
        r.group_commit = group_commit_;
        r.message_groups = message_groups_;
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
    using wire = process_transport<in_memory::transport>;
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

    void record(history_event_payload what);
    void record_fault(fault_kind kind, std::string detail,
                      std::optional<message_id> id = std::nullopt);

    process_observer relay_observer();

    process_observer consumer_observer(consumer_process& p);

    /// Why a delivery falls behind the ones after it, by what the consumer's pipeline decided
    /// for it; empty for an ack (it settles in its turn).
    static std::string deferral(const middleware::disposition& r);

    // -- set-up ----------------------------------------------------------------------------------

    backoff::exponential redelivery_policy() const;

    void declare_topology();

    // -- the relay process -----------------------------------------------------------------------

    void start_relay();

    bool relay_failpoint(relay_point p, const outbox_record& row);

    void on_relay_done(relay_process* p);

    // -- the consumer processes ------------------------------------------------------------------

    void start_consumer(std::size_t g, std::size_t slot);

    void subscribe(consumer_process& p);
    // The consumers' message groups (`pipeline_options::message_groups`), or none.
    group_options message_groups() const;

    void apply(consumer_process& p, const message& m, consumer_unit& u);

    bool consumer_failpoint(consumer_process& p, failpoint fp, const message_id& id);

    /// A process's connection is lost with what it had not settled: the broker redelivers
    /// each of those, and one whose handler already forwarded a copy (a retry or a dead letter)
    /// before the lost ack now exists twice, each copy with its own attempts.
    void lose_unsettled_deliveries(consumer_process& p);
    void lose_all_unsettled_deliveries();

    void kill_consumer(consumer_process& p);

    // -- the producer ----------------------------------------------------------------------------

    void schedule_writes();

    void write(std::size_t k);

    // -- faults ----------------------------------------------------------------------------------

    static double chance(std::mt19937_64& rng);

    bool crash_now(failpoint fp);

    std::chrono::nanoseconds restart_delay();

    void schedule_faults();

    void inject(const fault_command& c);

    void publish_duplicate(std::uint64_t pick);

    void cancel_consumer(std::chrono::nanoseconds pause);

    // -- unroutable publishes: bindings removed, queues deleted ---------------------------------

    /// Runs `op(channel)` on a channel of a connection of its own, as an operator's command line
    /// would, and closes it. Every operation is synchronous on the in-memory broker.
    template <class Op>
    void as_operator(Op op);

    /// Every binding from the exchange to a work queue is removed, and restored after `length`:
    /// the exchange routes nothing meanwhile, so each publish of the relay comes back
    /// unroutable (`basic.return`), and the relay must keep its row and publish it again. The
    /// queues and what they hold are not touched. (Unbinding only some queues would not make a
    /// publish unroutable: the others would take it, and the broker would confirm it.)
    void remove_bindings(std::chrono::milliseconds length);

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
    void delete_queues(std::chrono::milliseconds length);

    /// Whether the work queues and their retry queues hold nothing at all.
    bool queues_empty();

    /// Puts back what is due: the deleted queues once no deletion lasts any longer (and their
    /// processes subscribe again), the bindings once no removal lasts any longer.
    void restore_topology();

    bool topology_restored();

    // -- the operator's replay ----------------------------------------------------------------

    /// The operator fixes the handler (the permanent failures stop) and replays the
    /// `permanent-failure` entries of each consumer's dead-letter queue; the replay may die
    /// between a republish and its remove (`failpoint::between_republish_and_remove`), and is
    /// then run again.
    void replay_dead_letters();

    void start_replay(std::size_t g);

    // -- the end ---------------------------------------------------------------------------------

    /// Every committed message applied or dead-lettered by every consumer, the outbox drained,
    /// the topology restored with every process subscribed, and the broker holding nothing but
    /// the dead-letter queues.
    bool settled();

    void shut_down();

    void check(pipeline_result& r);

    /// Order per aggregate (I-06), for each consumer with one process on its queue (competing
    /// processes may handle two events of one aggregate at once: nothing is promised then).
    /// `check_aggregate_order` skips, per consumer, the aggregates with a deferred delivery (a
    /// retried, held-back or dead-lettered message): see docs/guarantees.md.
    void check_order(pipeline_result& r);

    static invariant_violation violation(invariant which, std::optional<message_id> id,
                                         std::string explanation);

    std::uint32_t duplicates_of(const message_id& id) const;

    /// The application's own count of each message's effects, against the history's: every
    /// consumer applies it once, so its data may hold as many effects as the history shows
    /// `effect_applied` events, and no more. A rolled-back message has none.
    void check_application_effects(pipeline_result& r);

    simulation sim_;
    pipeline_options options_;
    fault_profile profile_;
    fault_schedule schedule_;
    pipeline_topology shape_;
    std::size_t group_commit_; // deliveries per commit at most; 0: one per delivery
    bool message_groups_;      // consumers keep each aggregate in strict order
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
    std::optional<in_memory::transport> chaos_;
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
    std::vector<std::unique_ptr<in_memory::transport>> operators_;
    std::uint32_t replay_passes_ = 0;
    bool replaying_ = false;
    bool replay_crashed_ = false;
    bool replayed_ = false;
    bool faults_over_ = false;
    bool shutting_down_ = false;
};

} // namespace letterbox::testing::detail

#include <letterbox/testing/detail/impl/pipeline_world_faults.hpp>
#include <letterbox/testing/detail/impl/pipeline_world_finish.hpp>
#include <letterbox/testing/detail/impl/pipeline_world_processes.hpp>
#include <letterbox/testing/detail/impl/pipeline_world_producer.hpp>
#include <letterbox/testing/detail/impl/pipeline_world_recording.hpp>
