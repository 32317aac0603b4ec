// SPDX-License-Identifier: BSL-1.0
//
// Property (model-based, RapidCheck state machine): random command sequences against the
// in-memory RabbitMQ model keep the invariants RabbitMQ itself keeps. After every command:
// conservation of messages, per-consumer (and channel-wide) prefetch, queue length bounds,
// unacknowledged counts, lease exclusivity, no delivery after an ack, delivery-tag sequences,
// redelivered flags, publisher confirms and returns, TTL, quorum delivery counts and limits,
// and x-death integrity. Anchors: research/reliability-anchors.md §0.3, A10 (RMQ-PROP-01/02),
// A12 and C3 (I-10, I-11, I-12, I-14, I-15, I-16, I-17).
//
// Each sequence runs on a fixed topology whose arguments (length limits, overflow modes, delivery
// limit, TTL, where expired messages go) are generated with it, over 2 connections x 2
// channels. Commands pick their targets (a delivery tag, a consumer) by an index resolved
// against what the test has observed, so every command stays meaningful when RapidCheck
// shrinks a failing sequence.
//
// Randomness comes only from RapidCheck, seeded with LETTERBOX_SEED by the shared test main.
// Replay: LETTERBOX_SEED=<n> ./letterbox_property_tests "[broker]", or the
// RC_PARAMS="reproduce=..." line RapidCheck prints. RC_PARAMS max_success / max_size override
// the defaults below (1,000 sequences of up to kMaxSize commands).

#include <letterbox/error.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>
#include <letterbox/testing/seed.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/virtual_clock.hpp>

#include <boost/asio/io_context.hpp>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace property_broker_state_machine {

namespace {

namespace lb = letterbox;
namespace im = letterbox::in_memory;
namespace topo = letterbox::topology;
namespace hdr = letterbox::headers;
namespace xf = letterbox::headers::x_death_field;

constexpr int kMaxSuccess = 1000;
constexpr int kMaxSize = 300;

// ---- topology ------------------------------------------------------------------------------

enum queue_index : std::size_t {
    q_work,
    q_bounded,
    q_quorum,
    q_ttl,
    q_transient,
    q_dead,
    queue_count
};
constexpr std::size_t no_queue = queue_count;
constexpr std::array<std::string_view, queue_count> queue_name{
    "sm.work", "sm.bounded", "sm.quorum", "sm.ttl", "sm.transient", "sm.dead"};

std::size_t index_of_queue(std::string_view name) {
    for (std::size_t i = 0; i < queue_count; ++i)
        if (queue_name[i] == name)
            return i;
    return no_queue;
}

constexpr unsigned bit(std::size_t q) {
    return 1U << q;
}

struct route {
    std::string_view exchange;
    std::string_view key;
    unsigned targets; // queues the publish reaches
};

constexpr std::array<route, 10> routes{{
    {"", "sm.work", bit(q_work)},
    {"", "sm.bounded", bit(q_bounded)},
    {"", "sm.quorum", bit(q_quorum)},
    {"", "sm.ttl", bit(q_ttl)},
    {"", "sm.transient", bit(q_transient)},
    {"", "sm.dead", bit(q_dead)},
    {"sm.ex", "multi", bit(q_work) | bit(q_bounded) | bit(q_quorum)},
    {"sm.ex", "t", bit(q_ttl)},
    {"sm.ex", "nowhere", 0},
    {"", "sm.missing", 0},
}};

std::string route_label(std::size_t r) {
    const auto& x = routes[r];
    return (x.exchange.empty() ? std::string("\"\"") : std::string(x.exchange)) + "/" +
           std::string(x.key);
}

// Where sm.ttl's expired and rejected messages go.
enum class ttl_dead_letter { none, to_work, to_itself };

/// The generated part of the topology. Fixed part:
///   sm.work      classic, DLX sm.dlx key "dead"
///   sm.bounded   classic, x-max-length(-bytes), x-overflow, DLX sm.dlx key "dead"
///   sm.quorum    quorum, x-delivery-limit, x-max-length, x-overflow, DLX "" key sm.dead
///   sm.ttl       classic, x-message-ttl; DLX none, "" key sm.work, or "" without key (itself)
///   sm.transient classic, non-durable
///   sm.dead      classic; bound to sm.dlx with "dead"; optionally DLX "" key sm.work (a
///                cycle through sm.work that needs a rejection at each hop)
///   sm.ex        direct: "multi" -> work, bounded, quorum; "t" -> ttl
struct topology_config {
    std::int64_t bounded_max_length = 2;
    std::optional<std::int64_t> bounded_max_bytes;
    topo::overflow_behaviour bounded_overflow = topo::overflow_behaviour::drop_head;
    std::optional<std::int64_t> quorum_delivery_limit;
    std::optional<std::int64_t> quorum_max_length;
    topo::overflow_behaviour quorum_overflow = topo::overflow_behaviour::drop_head;
    std::int64_t ttl_ms = 20;
    ttl_dead_letter ttl_dlx = ttl_dead_letter::to_work;
    bool dead_to_work = false;
};

std::string describe(const topology_config& c) {
    std::ostringstream os;
    os << "topology: sm.bounded max-length " << c.bounded_max_length;
    if (c.bounded_max_bytes)
        os << " max-length-bytes " << *c.bounded_max_bytes;
    os << " overflow " << topo::to_string(c.bounded_overflow) << "; sm.quorum delivery-limit ";
    if (c.quorum_delivery_limit)
        os << *c.quorum_delivery_limit;
    else
        os << "none";
    os << " max-length ";
    if (c.quorum_max_length)
        os << *c.quorum_max_length << " overflow " << topo::to_string(c.quorum_overflow);
    else
        os << "none";
    os << "; sm.ttl message-ttl " << c.ttl_ms << " ms, dead letters "
       << (c.ttl_dlx == ttl_dead_letter::none      ? "discarded"
           : c.ttl_dlx == ttl_dead_letter::to_work ? "to sm.work"
                                                   : "to itself (original key)")
       << "; sm.dead dead letters " << (c.dead_to_work ? "to sm.work" : "discarded");
    return os.str();
}

struct length_limit {
    std::optional<std::int64_t> max;
    std::optional<std::int64_t> max_bytes;
    bool drop_head = true;
    std::size_t overshoot = 0; // quorum reject-publish checks before the publish
};

length_limit limit_of(const topology_config& c, std::size_t q) {
    if (q == q_bounded)
        return {c.bounded_max_length, c.bounded_max_bytes,
                c.bounded_overflow == topo::overflow_behaviour::drop_head, 0};
    if (q == q_quorum && c.quorum_max_length)
        // 3.10.8 accepts reject-publish-dlx on a quorum queue and treats it as drop-head (§0.3.3).
        return {c.quorum_max_length, std::nullopt,
                c.quorum_overflow != topo::overflow_behaviour::reject_publish, 1};
    return {};
}

// Can a dead letter from queue `from` land in queue `to`?
bool dead_letters_to(const topology_config& c, std::size_t from, std::size_t to) {
    if (to == q_dead)
        return from == q_work || from == q_bounded || from == q_quorum;
    if (to == q_work)
        return (from == q_ttl && c.ttl_dlx == ttl_dead_letter::to_work) ||
               (from == q_dead && c.dead_to_work);
    if (to == q_ttl)
        return from == q_ttl && c.ttl_dlx == ttl_dead_letter::to_itself;
    return false;
}

// ---- message ids ---------------------------------------------------------------------------

lb::message_id make_id(std::uint64_t n) {
    lb::message_id id{};
    for (std::size_t i = 0; i < 8; ++i)
        id.data[15 - i] = static_cast<std::uint8_t>(n >> (8 * i));
    return id;
}

std::uint64_t number_of(const lb::message_id& id) {
    std::uint64_t n = 0;
    for (std::size_t i = 8; i < 16; ++i)
        n = (n << 8) | id.data[i];
    return n;
}

// ---- the RapidCheck model: what decides which commands are valid ----------------------------

constexpr std::size_t channel_count = 4; // slots 0,1 on connection 0; 2,3 on connection 1

struct model {
    std::array<bool, channel_count> open{true, true, true, true};
    std::array<bool, channel_count> global_qos{};
};

// ---- the system under test and everything the test observed ---------------------------------

/// A message copy's identity: (published message number, the queue it was first stored in).
/// Every dead-letter exchange of the topology routes to one queue, so a copy is in one place
/// at a time.
using lineage = std::pair<std::uint64_t, std::size_t>;
/// A copy's stay in one queue: its lineage and how many times it was dead-lettered (the sum
/// of its x-death counts).
using incarnation = std::pair<lineage, std::int64_t>;

struct published_info {
    std::size_t route = 0;
    std::string exchange;
    std::string routing_key;
    std::optional<std::string> expiration;
    std::optional<std::int64_t> expiration_ms;
    std::int64_t at_ns = 0;
    std::uint64_t publisher = 0; // channel id
};

struct lineage_state {
    std::optional<std::pair<std::string, std::string>> first_death;        // reason, exchange
    std::map<std::pair<std::string, std::string>, lb::field_table> deaths; // (queue, reason)
    std::vector<std::pair<std::string, std::string>> death_order;          // as last seen
    std::int64_t death_total = 0;
    std::int64_t returns = 0;        // returns to the quorum queue the test caused
    std::int64_t delivery_count = 0; // last x-delivery-count seen
    std::uint32_t quorum_deliveries = 0;
};

enum class consumer_mode { manual, ack_in_handler, no_ack };

struct consumer_track {
    std::size_t queue = 0;
    std::uint32_t prefetch = 0;
    consumer_mode mode = consumer_mode::manual;
    bool active = true;
    std::uint32_t outstanding = 0;
};

struct outstanding_delivery {
    incarnation copy;
    std::size_t queue = 0;
    std::string consumer; // empty for basic.get
};

struct notification {
    char kind = 'C'; // 'C' confirm, 'R' return
    std::uint64_t seq = 0;
    bool ack = false;
    bool multiple = false;
};

struct slot {
    im::channel ch;
    std::uint64_t id = 0;
    bool confirm = false;
    std::uint64_t next_seq = 1;
    std::uint16_t consumer_prefetch = 0;
    std::uint16_t global_prefetch = 0;
    std::uint64_t last_tag = 0;
    std::map<std::uint64_t, outstanding_delivery> outstanding;
    std::map<std::string, consumer_track, std::less<>> consumers; // cancelled ones too
    std::vector<notification> notes;
    int closes = 0;
};

struct pending_delivery {
    std::size_t slot = 0;
    std::uint64_t channel = 0;
    std::string consumer;
    im::basic_delivery d;
};

/// Totals over every sequence, to show the property is not vacuous.
struct coverage {
    std::uint64_t sequences = 0;
    std::uint64_t commands = 0;
    std::uint64_t deliveries = 0;
    std::uint64_t gets = 0;
    std::uint64_t acked = 0;
    std::uint64_t requeued = 0;
    std::uint64_t redelivered = 0;
    std::array<std::uint64_t, im::dead_letter_reason_count> dead_lettered{};
    std::uint64_t discarded = 0;
    std::uint64_t dropped = 0;
    std::uint64_t cycles_dropped = 0;
    std::uint64_t confirms_nacked = 0;
    std::uint64_t returned = 0;
    std::uint64_t dead_letter_deliveries = 0; // deliveries carrying x-death
    std::uint64_t multi_death_deliveries = 0; // ... with two entries or more
    std::uint64_t invalid_tags = 0;
    std::uint64_t restarts = 0;
    std::uint64_t global_qos_refusals = 0;
    std::uint64_t prefetch_saturated = 0; // deliveries that filled a consumer's prefetch
};

std::string show_coverage(const coverage& c) {
    std::ostringstream os;
    os << c.sequences << " sequences, " << c.commands << " commands, " << c.deliveries
       << " deliveries (" << c.gets << " by basic.get, " << c.redelivered << " redelivered, "
       << c.prefetch_saturated << " filling a prefetch), " << c.acked << " acked, " << c.requeued
       << " requeued; dead-lettered rejected/expired/maxlen/delivery_limit " << c.dead_lettered[0]
       << "/" << c.dead_lettered[1] << "/" << c.dead_lettered[2] << "/" << c.dead_lettered[3]
       << ", " << c.cycles_dropped << " dropped as cycles, " << c.discarded << " discarded, "
       << c.dropped << " dropped; " << c.dead_letter_deliveries << " deliveries with x-death ("
       << c.multi_death_deliveries << " with 2+ entries); " << c.confirms_nacked
       << " confirms nacked, " << c.returned << " returned; " << c.invalid_tags << " invalid tags, "
       << c.global_qos_refusals << " global-qos refusals, " << c.restarts << " restarts";
    return os.str();
}

class harness;

#define SM_CHECK(h, cond, ...)                                                                     \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::ostringstream sm_check_os_;                                                       \
            sm_check_os_ << __VA_ARGS__;                                                           \
            (h).fail(#cond, sm_check_os_.str(), __LINE__);                                         \
        }                                                                                          \
    } while (false)

class harness {
public:
    harness(const topology_config& cfg, coverage& cov)
        : broker_(io_.get_executor(), clock_)
        , cfg_(cfg)
        , cov_(cov) {
        connect();
        if (!violations_.empty())
            RC_FAIL("setting up the topology failed: " + violations_.front());
    }

    harness(const harness&) = delete;
    harness& operator=(const harness&) = delete;

    ~harness() {
        const auto& c = broker_.counters();
        ++cov_.sequences;
        cov_.commands += step_;
        cov_.acked += c.acked;
        cov_.requeued += c.requeued;
        for (std::size_t r = 0; r < im::dead_letter_reason_count; ++r)
            cov_.dead_lettered[r] += c.dead_lettered[r];
        cov_.discarded += c.discarded_total();
        cov_.dropped += c.dropped_total();
        cov_.cycles_dropped += c.dead_letters_dropped_of(im::dead_letter_drop::cycle);
        cov_.confirms_nacked += c.confirms_nacked;
        cov_.returned += c.returned;
    }

    // ---- used by the commands ----------------------------------------------------------

    slot& at(std::size_t i) { return slots_[i]; }
    im::broker& broker() { return broker_; }
    lb::virtual_clock& clock() { return clock_; }
    const topology_config& config() const { return cfg_; }
    coverage& stats() { return cov_; }

    void fail(const char* expr, const std::string& what, int line) {
        std::ostringstream os;
        os << "step " << step_ << " [" << current_ << "] line " << line << ": " << what << "  ("
           << expr << ")";
        violations_.push_back(os.str());
    }

    void begin(const std::string& shown) {
        ++step_;
        current_ = shown;
        arrivals_.clear();
        delivered_now_.clear();
        delivered_from_.fill(false);
        for (std::size_t q = 0; q < queue_count; ++q) {
            const auto info = broker_.queue(queue_name[q]);
            ready_before_[q] = info ? info->ready : 0;
            bytes_before_[q] = info ? info->ready_bytes : 0;
        }
        requeued_before_ = broker_.counters().requeued;
    }

    // Runs what is due at the current virtual time, checks every invariant, and fails the
    // sequence with everything that went wrong in this step.
    void end() {
        poll();
        check_invariants();
        if (violations_.empty())
            return;
        std::string all;
        for (const auto& v : violations_)
            all += v + "\n";
        RC_FAIL(all);
    }

    void poll() {
        io_.restart();
        io_.poll();
    }

    std::int64_t now_ns() const { return clock_.now().time_since_epoch().count(); }

    std::uint64_t new_message() { return ++last_message_; }
    std::string new_consumer_tag() { return "sm-c" + std::to_string(++last_consumer_); }

    void record_publish(std::uint64_t n, published_info p) { published_.emplace(n, std::move(p)); }
    void publishing(std::uint64_t n) { publishing_ = n; }
    void count_publish(bool confirm, bool returned) {
        ++publishes_;
        confirm_publishes_ += confirm ? 1 : 0;
        returns_ += returned ? 1 : 0;
    }

    /// Updates the tracking for settling `tags` of slot `i`. Called before the broker call,
    /// because the broker redelivers requeued messages within the call.
    void settle_tracked(std::size_t i, const std::vector<std::uint64_t>& tags, bool ack,
                        bool requeue) {
        auto& s = slots_[i];
        for (auto t : tags) {
            auto it = s.outstanding.find(t);
            if (it == s.outstanding.end())
                continue;
            const auto& o = it->second;
            if (!o.consumer.empty())
                --s.consumers.at(o.consumer).outstanding;
            leased_.erase(o.copy.first);
            if (ack) {
                acked_.insert(o.copy.first);
                ++acks_;
            } else if (!requeue) {
                gone_.insert(o.copy);
                ++rejections_;
                // sm.ttl dead-letters to itself by the original key: a rejected message
                // published with key sm.ttl comes straight back (a cycle with a rejection is
                // allowed, DLX-20).
                if (o.queue == q_ttl && cfg_.ttl_dlx == ttl_dead_letter::to_itself &&
                    published_.at(o.copy.first.first).routing_key == queue_name[q_ttl])
                    arrivals_.emplace_back(o.copy.first, q_ttl);
                // Rejections from one queue reach a classic target in rejection order (tag order
                // within one multiple nack, DLX-07/DLX-11).
                for (std::size_t target : {q_dead, q_work})
                    if (dead_letters_to(cfg_, o.queue, target) && keeps_position(target))
                        rejected_into_[{o.copy.first, o.copy.second + 1}] = {
                            o.queue, target, ++rejection_order_[o.queue]};
            } else {
                ++requeues_;
                if (keeps_position(o.queue) && o.copy.second == 0)
                    requeued_ready_[o.queue][o.copy] = o.copy.first.first;
                if (o.queue == q_quorum) {
                    // 3.10: every return counts (§0.3.2, RMQ-DL-01); past the limit it is
                    // dead-lettered instead.
                    const auto r = ++lineages_[o.copy.first].returns;
                    if (cfg_.quorum_delivery_limit && r > *cfg_.quorum_delivery_limit)
                        ++delivery_limit_deaths_;
                }
            }
            s.outstanding.erase(it);
        }
    }

    /// The channel of slot `i` is about to close: its deliveries go back to their queues and
    /// its consumers go away.
    void channel_closing(std::size_t i) {
        auto& s = slots_[i];
        std::vector<std::uint64_t> all;
        for (const auto& [t, o] : s.outstanding)
            all.push_back(t);
        settle_tracked(i, all, false, true);
        for (auto& [tag, c] : s.consumers)
            c.active = false;
    }

    void open_slot(std::size_t i) {
        auto& s = slots_[i];
        s = slot{};
        // A hard error (540) closed the connection: the reopened channel needs a new one.
        if (!conns_[i / 2].is_open())
            conns_[i / 2] = broker_.connect("sm-" + std::to_string(i / 2) + "-again");
        s.ch = conns_[i / 2].open_channel();
        s.id = s.ch.id();
        const auto id = s.id;
        s.ch.on_confirm([this, i, id](std::uint64_t seq, bool ack, bool multiple) {
            SM_CHECK(*this, slots_[i].id == id, "confirm for a replaced channel");
            slots_[i].notes.push_back({'C', seq, ack, multiple});
        });
        s.ch.on_return([this, i, id](const im::returned_message& r) {
            SM_CHECK(*this, slots_[i].id == id, "return for a replaced channel");
            SM_CHECK(*this, r.reply_code == 312 && r.reply_text == "NO_ROUTE",
                     "return " << r.reply_code << " " << r.reply_text);
            slots_[i].notes.push_back({'R', r.publish_seq, false, false});
        });
        s.ch.on_close([this, i, id](const im::close_reason&) {
            if (slots_[i].id == id)
                ++slots_[i].closes;
        });
    }

    // Deliveries to consumers are checked as they arrive, except while a basic.get is in
    // flight: the get-ok carries the lower tag but reaches the test after the deliveries its
    // operation caused, so those wait until the get-ok has been checked.
    void defer_deliveries() { deferring_ = true; }
    void drain_deliveries() {
        while (!pending_.empty()) {
            auto p = std::move(pending_.front());
            pending_.pop_front();
            process_delivery(p.slot, p.channel, p.consumer, p.d);
        }
        deferring_ = false;
    }

    void on_consumer_delivery(std::size_t i, std::uint64_t channel, const std::string& tag,
                              const im::basic_delivery& d) {
        if (deferring_) {
            pending_.push_back({i, channel, tag, d});
            return;
        }
        process_delivery(i, channel, tag, d);
    }

    /// Checks a delivery (consumer or basic.get) and records it; returns whether it is now
    /// awaiting an ack.
    bool observe(std::size_t i, const im::basic_delivery& d, bool by_get, bool no_ack,
                 const std::string& consumer);

    /// Classic queues put a requeued message back at its original position (§0.3.1); checked
    /// on the queues where nothing but deliveries, purges and per-message expiry removes one.
    static bool keeps_position(std::size_t q) {
        return q == q_work || q == q_transient || q == q_dead;
    }

    void purged(std::size_t q) { requeued_ready_[q].clear(); }

    void restart() {
        for (std::size_t i = 0; i < channel_count; ++i)
            if (slots_[i].ch.is_open())
                channel_closing(i);
        broker_.restart();
        SM_CHECK(*this, broker_.connection_count() == 0,
                 broker_.connection_count() << " connections survived the restart");
        for (std::size_t i = 0; i < channel_count; ++i)
            SM_CHECK(*this, !slots_[i].ch.is_open(), "channel " << i << " survived the restart");
        SM_CHECK(*this, !broker_.queue(queue_name[q_transient]),
                 "the non-durable queue survived the restart");
        restarted_ = true;
        acked_.clear();
        gone_.clear();
        seen_since_restart_.clear();
        leased_.clear();
        for (auto& r : requeued_ready_)
            r.clear();
        ++cov_.restarts;
        connect();
    }

private:
    void connect() {
        for (std::size_t c = 0; c < 2; ++c)
            conns_[c] = broker_.connect("sm-" + std::to_string(c));
        for (std::size_t i = 0; i < channel_count; ++i)
            open_slot(i);
        declare();
    }

    void declare() {
        auto& ch = slots_[0].ch;
        auto ok = [&](std::error_code ec, const std::string& what) {
            SM_CHECK(*this, !ec, "declaring " << what << ": " << ec.message());
        };
        ok(ch.exchange_declare({.name = "sm.ex", .type = topo::exchange_type::direct}), "sm.ex");
        ok(ch.exchange_declare({.name = "sm.dlx", .type = topo::exchange_type::direct}), "sm.dlx");

        topo::queue_arguments work;
        work.dead_letter_exchange = "sm.dlx";
        work.dead_letter_routing_key = "dead";

        topo::queue_arguments bounded = work;
        bounded.max_length = cfg_.bounded_max_length;
        bounded.max_length_bytes = cfg_.bounded_max_bytes;
        bounded.overflow = cfg_.bounded_overflow;

        topo::queue_arguments quorum;
        quorum.type = topo::queue_type::quorum;
        quorum.dead_letter_exchange = "";
        quorum.dead_letter_routing_key = std::string(queue_name[q_dead]);
        quorum.delivery_limit = cfg_.quorum_delivery_limit;
        if (cfg_.quorum_max_length) {
            quorum.max_length = cfg_.quorum_max_length;
            quorum.overflow = cfg_.quorum_overflow;
        }

        topo::queue_arguments ttl;
        ttl.message_ttl = std::chrono::milliseconds(cfg_.ttl_ms);
        if (cfg_.ttl_dlx != ttl_dead_letter::none)
            ttl.dead_letter_exchange = "";
        if (cfg_.ttl_dlx == ttl_dead_letter::to_work)
            ttl.dead_letter_routing_key = std::string(queue_name[q_work]);

        topo::queue_arguments dead;
        if (cfg_.dead_to_work) {
            dead.dead_letter_exchange = "";
            dead.dead_letter_routing_key = std::string(queue_name[q_work]);
        }

        const std::array<topo::queue, queue_count> decls{{
            {.name = std::string(queue_name[q_work]), .arguments = work.to_table()},
            {.name = std::string(queue_name[q_bounded]), .arguments = bounded.to_table()},
            {.name = std::string(queue_name[q_quorum]), .arguments = quorum.to_table()},
            {.name = std::string(queue_name[q_ttl]), .arguments = ttl.to_table()},
            {.name = std::string(queue_name[q_transient]), .durable = false},
            {.name = std::string(queue_name[q_dead]), .arguments = dead.to_table()},
        }};
        for (const auto& q : decls)
            ok(ch.queue_declare(q), q.name);
        ok(ch.queue_bind(std::string(queue_name[q_dead]), "sm.dlx", "dead"), "dead <- sm.dlx");
        for (auto q : {q_work, q_bounded, q_quorum})
            ok(ch.queue_bind(std::string(queue_name[q]), "sm.ex", "multi"), "multi binding");
        ok(ch.queue_bind(std::string(queue_name[q_ttl]), "sm.ex", "t"), "ttl <- sm.ex");
    }

    void process_delivery(std::size_t i, std::uint64_t channel, const std::string& tag,
                          const im::basic_delivery& d);

    struct history {
        std::size_t origin = no_queue;
        std::int64_t deaths = 0;
    };
    history check_history(const lb::message& m, std::size_t qi, const published_info& p,
                          std::uint64_t n);
    void check_quorum_header(const lb::message& m, std::size_t qi, bool by_get, bool redelivered,
                             const lineage& l);
    void check_invariants();

    boost::asio::io_context io_;
    lb::virtual_clock clock_;
    im::broker broker_;
    topology_config cfg_;
    coverage& cov_;
    std::array<im::connection, 2> conns_{};
    std::array<slot, channel_count> slots_{};

    std::map<std::uint64_t, published_info> published_;
    std::map<lineage, lineage_state> lineages_;
    std::map<lineage, std::pair<std::size_t, std::uint64_t>> leased_; // -> (slot, tag)
    std::set<lineage> acked_;                                         // since the last restart
    std::set<incarnation> gone_; // settled without requeue, since the last restart
    std::set<incarnation> seen_since_restart_;
    std::set<incarnation> seen_ever_;
    // Copies requeued into a classic queue without limits or TTL and not delivered since, by
    // publish order (only copies published straight into that queue).
    std::array<std::map<incarnation, std::uint64_t>, queue_count> requeued_ready_{};
    struct rejected_copy {
        std::size_t source = 0;
        std::size_t target = 0;
        std::uint64_t order = 0;
    };
    std::map<incarnation, rejected_copy> rejected_into_; // the copy a rejection will create
    std::array<std::uint64_t, queue_count> rejection_order_{};
    std::map<std::pair<std::size_t, std::size_t>, std::uint64_t> first_rejected_delivered_;
    std::map<std::pair<std::uint64_t, std::size_t>, std::uint64_t> first_delivered_;
    std::deque<pending_delivery> pending_;
    bool deferring_ = false;
    bool restarted_ = false;

    std::uint64_t last_message_ = 0;
    std::uint64_t last_consumer_ = 0;
    std::uint64_t publishing_ = 0; // message being published (0: none)
    std::uint64_t publishes_ = 0;
    std::uint64_t confirm_publishes_ = 0;
    std::uint64_t returns_ = 0;
    std::uint64_t acks_ = 0;       // acks and auto-acks the test made
    std::uint64_t rejections_ = 0; // nacks and rejects without requeue
    std::uint64_t requeues_ = 0;   // deliveries the test saw go back to their queue
    std::uint64_t deliveries_ = 0; // deliveries the test saw
    std::uint64_t redeliveries_ = 0;
    std::uint64_t delivery_limit_deaths_ = 0; // predicted from the test's returns
    // This step: dead letters the test expects to arrive in a queue, what was delivered.
    std::vector<std::pair<lineage, std::size_t>> arrivals_;
    std::set<lineage> delivered_now_;
    std::array<bool, queue_count> delivered_from_{};

    std::size_t step_ = 0;
    std::string current_ = "setup";
    std::vector<std::string> violations_;
    std::array<std::size_t, queue_count> ready_before_{};
    std::array<std::size_t, queue_count> bytes_before_{};
    std::uint64_t requeued_before_ = 0;
};

void harness::process_delivery(std::size_t i, std::uint64_t channel, const std::string& tag,
                               const im::basic_delivery& d) {
    auto& s = slots_[i];
    SM_CHECK(*this, s.id == channel && s.ch.is_open(),
             "delivery to closed or replaced channel " << channel);
    if (s.id != channel)
        return;
    auto cit = s.consumers.find(tag);
    SM_CHECK(*this, cit != s.consumers.end() && cit->second.active,
             "delivery to unknown or cancelled consumer " << tag);
    if (cit == s.consumers.end())
        return;
    auto& c = cit->second;
    SM_CHECK(*this, d.queue == queue_name[c.queue],
             "consumer of " << queue_name[c.queue] << " got a delivery from " << d.queue);
    const bool no_ack = c.mode == consumer_mode::no_ack;
    if (!no_ack) {
        // I-11: checked when the delivery is made, so lowering a prefetch is allowed to leave
        // more outstanding than the new value.
        SM_CHECK(*this, c.prefetch == 0 || c.outstanding < c.prefetch,
                 "consumer " << tag << " with prefetch " << c.prefetch << " got a delivery with "
                             << c.outstanding << " unacked");
        if (s.global_prefetch != 0 && c.queue != q_quorum) {
            // Channel-wide qos: counted over active classic consumers only (a lower bound of
            // what RabbitMQ's limiter counts).
            std::uint32_t held = 0;
            for (const auto& [t, o] : s.outstanding)
                if (!o.consumer.empty() && o.queue != q_quorum && s.consumers.at(o.consumer).active)
                    ++held;
            SM_CHECK(*this, held < s.global_prefetch,
                     "global prefetch " << s.global_prefetch << " exceeded: " << held
                                        << " unacked on the channel");
        }
    }
    const bool awaiting = observe(i, d, false, no_ack, tag);
    if (awaiting && c.prefetch != 0 && c.outstanding == c.prefetch)
        ++cov_.prefetch_saturated;
    if (awaiting && c.mode == consumer_mode::ack_in_handler) {
        // Settles from inside the handler: the broker must accept calls from its callbacks.
        settle_tracked(i, {d.delivery_tag}, true, false);
        auto ch = s.ch;
        const auto ec = ch.basic_ack(d.delivery_tag);
        SM_CHECK(*this, !ec, "ack from the handler: " << ec.message());
    }
}

bool harness::observe(std::size_t i, const im::basic_delivery& d, bool by_get, bool no_ack,
                      const std::string& consumer) {
    auto& s = slots_[i];
    ++cov_.deliveries;
    cov_.gets += by_get ? 1 : 0;
    cov_.redelivered += d.redelivered ? 1 : 0;
    SM_CHECK(*this, d.msg != nullptr, "delivery without a message");
    if (!d.msg)
        return false;
    const auto& m = *d.msg;
    const auto n = number_of(m.id);
    const auto pit = published_.find(n);
    SM_CHECK(*this, pit != published_.end(), "delivery of a message never published: " << n);
    const auto qi = index_of_queue(d.queue);
    SM_CHECK(*this, qi != no_queue, "delivery from unknown queue " << d.queue);
    if (pit == published_.end() || qi == no_queue)
        return false;
    const auto& p = pit->second;

    // Tags are per channel, from 1, one per delivery (including redeliveries and gets).
    SM_CHECK(*this, d.channel == s.id, "delivery names channel " << d.channel);
    SM_CHECK(*this, d.delivery_tag == s.last_tag + 1,
             "delivery tag " << d.delivery_tag << " after " << s.last_tag);
    s.last_tag = std::max(s.last_tag, d.delivery_tag);
    SM_CHECK(*this, d.consumer_tag == consumer,
             "consumer tag '" << d.consumer_tag << "', expected '" << consumer << "'");

    const auto h = check_history(m, qi, p, n);
    const lineage l{n, h.origin};
    const incarnation copy{l, h.deaths};
    std::ostringstream who;
    who << "message " << n << " (first stored in " << queue_name[h.origin] << ", " << h.deaths
        << " dead-letterings) from " << d.queue;

    // TTL (RMQ-TTL-03/06): an expired message is never delivered, except a message delivered
    // while it is being published (TTL 0 reaching a waiting consumer).
    if (h.deaths == 0) {
        std::optional<std::int64_t> ttl = p.expiration_ms;
        if (qi == q_ttl)
            ttl = std::min(ttl.value_or(cfg_.ttl_ms), cfg_.ttl_ms);
        if (ttl) {
            const auto deadline = p.at_ns + *ttl * 1'000'000;
            const auto now = now_ns();
            SM_CHECK(*this, now < deadline || (publishing_ == n && now == deadline),
                     who.str() << " delivered at " << now << " ns, expired at " << deadline);
        }
    }
    check_quorum_header(m, qi, by_get, d.redelivered, l);

    // Redelivered flag (RMQ-ACK-25): false on the first delivery from a queue, true after.
    if (!d.redelivered)
        SM_CHECK(*this, !seen_since_restart_.contains(copy),
                 who.str() << " delivered again with redelivered=false");
    else if (!restarted_)
        SM_CHECK(*this, seen_ever_.contains(copy),
                 who.str() << " has redelivered=true on its first delivery");
    seen_since_restart_.insert(copy);
    seen_ever_.insert(copy);

    // I-07 for classic queues: a requeued message published before this one (and not expired)
    // is ahead of it, so it must have been delivered first.
    requeued_ready_[qi].erase(copy);
    if (keeps_position(qi) && h.deaths == 0) {
        for (const auto& [other, order] : requeued_ready_[qi]) {
            if (order >= n)
                break;
            const auto& op = published_.at(order);
            if (op.expiration_ms && op.at_ns + *op.expiration_ms * 1'000'000 <= now_ns())
                continue;
            SM_CHECK(*this, false,
                     who.str() << " delivered while requeued message " << order
                               << " (published earlier) is ready in " << d.queue);
        }
    }

    // Dead letters of rejections, from one source queue, are first delivered in the order of
    // the rejections.
    if (auto rit = rejected_into_.find(copy); rit != rejected_into_.end()) {
        const auto rc = rit->second;
        SM_CHECK(*this, rc.target == qi,
                 who.str() << ": rejected from " << queue_name[rc.source] << " towards "
                           << queue_name[rc.target]);
        if (!d.redelivered && rc.target == qi) {
            auto& last = first_rejected_delivered_[{rc.source, qi}];
            SM_CHECK(*this, rc.order > last,
                     who.str() << " overtook a message rejected before it from "
                               << queue_name[rc.source]);
            last = std::max(last, rc.order);
        }
    }

    // I-17: nothing acked comes back (a restart excepted). Settled without requeue: the copy
    // left the queue for good.
    SM_CHECK(*this, !acked_.contains(l), who.str() << " delivered after it was acked");
    SM_CHECK(*this, !gone_.contains(copy),
             who.str() << " delivered after it was rejected without requeue");
    // I-16: one lease at a time.
    if (auto lit = leased_.find(l); lit != leased_.end())
        SM_CHECK(*this, false,
                 who.str() << " delivered while unacked on slot " << lit->second.first << " tag "
                           << lit->second.second);

    // I-06: messages never requeued leave a queue in the order their channel published them.
    if (h.deaths == 0 && !d.redelivered) {
        auto& last = first_delivered_[{p.publisher, qi}];
        SM_CHECK(*this, n > last,
                 who.str() << " first delivered after message " << last
                           << " that the same channel published later");
        last = std::max(last, n);
    }

    ++deliveries_;
    redeliveries_ += d.redelivered ? 1 : 0;
    delivered_now_.insert(l);
    delivered_from_[qi] = true;
    if (no_ack) {
        acked_.insert(l);
        ++acks_;
        return false;
    }
    s.outstanding[d.delivery_tag] = {copy, qi, consumer};
    leased_[l] = {i, d.delivery_tag};
    if (!consumer.empty())
        ++s.consumers.at(consumer).outstanding;
    return true;
}

harness::history harness::check_history(const lb::message& m, std::size_t qi,
                                        const published_info& p, std::uint64_t n) {
    const auto* xd = m.headers.find(hdr::x_death);
    const bool any_first = m.headers.contains(hdr::x_first_death_queue) ||
                           m.headers.contains(hdr::x_first_death_reason) ||
                           m.headers.contains(hdr::x_first_death_exchange);
    if (!xd) {
        SM_CHECK(*this, !any_first, "x-first-death-* without x-death");
        SM_CHECK(*this, m.properties.expiration == p.expiration,
                 "expiration changed before any dead-lettering");
        SM_CHECK(*this, (routes[p.route].targets & bit(qi)) != 0,
                 "message " << n << " in " << queue_name[qi] << ", where it was not published");
        const auto it = lineages_.find({n, qi});
        SM_CHECK(*this, it == lineages_.end() || it->second.deaths.empty(),
                 "message " << n << " lost its x-death header");
        return {qi, 0};
    }
    ++cov_.dead_letter_deliveries;
    const auto* arr = xd->get_if<lb::field_array>();
    SM_CHECK(*this, arr && !arr->empty(), "x-death is not a non-empty array");
    const auto fq = m.headers.get<std::string>(hdr::x_first_death_queue);
    const auto fr = m.headers.get<std::string>(hdr::x_first_death_reason);
    const auto fe = m.headers.get<std::string>(hdr::x_first_death_exchange);
    SM_CHECK(*this, fq && fr && fe, "x-first-death-* missing or not strings");
    const auto origin = fq ? index_of_queue(*fq) : no_queue;
    SM_CHECK(*this, origin != no_queue && (routes[p.route].targets & bit(origin)) != 0,
             "x-first-death-queue " << fq.value_or("?") << " is not a queue message " << n
                                    << " was published to");
    if (!arr || arr->empty() || !fq || !fr || !fe || origin == no_queue)
        return {qi, 0};
    SM_CHECK(*this, *fe == p.exchange,
             "x-first-death-exchange '" << *fe << "', published to '" << p.exchange << "'");
    SM_CHECK(*this, !m.properties.expiration, "a dead-lettered copy keeps its expiration");
    if (arr->size() >= 2)
        ++cov_.multi_death_deliveries;

    std::int64_t deaths = 0;
    bool first_found = false;
    std::map<std::pair<std::string, std::string>, lb::field_table> entries;
    std::vector<std::pair<std::string, std::string>> order;
    for (std::size_t k = 0; k < arr->size(); ++k) {
        const auto* t = (*arr)[k].get_if<lb::field_table>();
        SM_CHECK(*this, t, "x-death entry " << k << " is not a table");
        if (!t)
            continue;
        const auto q = t->get<std::string>(xf::queue);
        const auto r = t->get<std::string>(xf::reason);
        const auto count = t->get<std::int64_t>(xf::count);
        SM_CHECK(*this, q && r && count && *count >= 1,
                 "x-death entry " << k << " lacks queue, reason or a count >= 1 (a long)");
        SM_CHECK(*this, t->get<std::string>(xf::exchange), "x-death entry " << k << ": exchange");
        SM_CHECK(*this, t->get<lb::timestamp>(xf::time), "x-death entry " << k << ": time");
        SM_CHECK(*this, t->get<lb::field_array>(xf::routing_keys),
                 "x-death entry " << k << ": routing-keys");
        if (!q || !r || !count)
            continue;
        const auto eq = index_of_queue(*q);
        SM_CHECK(*this, eq != no_queue, "x-death names unknown queue " << *q);
        // I-14: one entry per (queue, reason).
        SM_CHECK(*this, !entries.contains({*q, *r}),
                 "two x-death entries for (" << *q << ", " << *r << ")");
        const bool is_first = *q == *fq && *r == *fr;
        // Reasons must be possible for that queue in this topology.
        if (*r == "delivery_limit")
            SM_CHECK(*this, eq == q_quorum && cfg_.quorum_delivery_limit,
                     "delivery_limit death in " << *q);
        else if (*r == "maxlen")
            SM_CHECK(*this, eq != no_queue && limit_of(cfg_, eq).max, "maxlen death in " << *q);
        else if (*r == "expired")
            SM_CHECK(*this, eq == q_ttl || (is_first && p.expiration),
                     "expired death in " << *q << " of a message without a TTL there");
        else
            SM_CHECK(*this, *r == "rejected", "unknown x-death reason " << *r);
        if (k == 0 && eq != no_queue)
            SM_CHECK(*this, dead_letters_to(cfg_, eq, qi),
                     "latest death in " << *q << " cannot have led to " << queue_name[qi]);
        if (is_first) {
            first_found = true;
            SM_CHECK(*this, t->get<std::string>(xf::exchange) == p.exchange,
                     "first x-death entry: exchange");
            SM_CHECK(*this,
                     t->get<lb::field_array>(xf::routing_keys) ==
                         lb::field_array{lb::field_value(p.routing_key)},
                     "first x-death entry: routing-keys");
            // §0.3.8: original-expiration whenever the message had an expiration.
            SM_CHECK(*this, t->get<std::string>(xf::original_expiration) == p.expiration,
                     "first x-death entry: original-expiration");
        } else {
            SM_CHECK(*this, !t->contains(xf::original_expiration),
                     "original-expiration on a later x-death entry (" << *q << ", " << *r << ")");
        }
        // I-15: without a rejection a message cannot come back to die in the same queue again
        // (the cycle rule drops it; dead-lettered copies lose their per-message TTL).
        if (*r != "rejected")
            SM_CHECK(*this, *count == 1,
                     "died " << *count << " times in " << *q << " (" << *r << ")");
        deaths += *count;
        entries.emplace(std::pair{*q, *r}, *t);
        order.emplace_back(*q, *r);
    }
    SM_CHECK(*this, first_found, "no x-death entry matches x-first-death-queue/reason");

    // I-14 over time: first-death headers never change; entries are never removed, their count
    // never decreases, and their other fields keep their first values (§0.3.6).
    auto& ls = lineages_[{n, origin}];
    const std::pair<std::string, std::string> first{*fr, *fe};
    if (ls.first_death)
        SM_CHECK(*this, *ls.first_death == first,
                 "x-first-death-reason/exchange changed for message " << n);
    else
        ls.first_death = first;
    auto without_count = [](lb::field_table t) {
        t.erase(xf::count);
        return t;
    };
    for (const auto& [key, old] : ls.deaths) {
        const auto it = entries.find(key);
        SM_CHECK(*this, it != entries.end(),
                 "x-death entry (" << key.first << ", " << key.second << ") disappeared");
        if (it == entries.end())
            continue;
        SM_CHECK(*this, it->second.get<std::int64_t>(xf::count) >= old.get<std::int64_t>(xf::count),
                 "x-death count of (" << key.first << ", " << key.second << ") went down");
        SM_CHECK(*this, without_count(it->second) == without_count(old),
                 "x-death entry (" << key.first << ", " << key.second << ") changed fields");
    }
    SM_CHECK(*this, deaths >= ls.death_total, "x-death counts went down for message " << n);
    if (!ls.death_order.empty() && deaths == ls.death_total) {
        SM_CHECK(*this, order == ls.death_order, "x-death reordered without a new event");
    } else if (!ls.death_order.empty() && deaths == ls.death_total + 1 && !order.empty()) {
        // Exactly one event since the last look (§0.3.6, 3.10.8): its entry comes first, and
        // the other entries are reversed.
        const auto& latest = order.front();
        const auto before = ls.deaths.find(latest);
        const auto now_count = entries.at(latest).get<std::int64_t>(xf::count).value_or(0);
        SM_CHECK(*this,
                 before == ls.deaths.end()
                     ? now_count == 1
                     : now_count == before->second.get<std::int64_t>(xf::count).value_or(0) + 1,
                 "the first x-death entry is not the latest event's");
        auto rest = ls.death_order;
        std::erase(rest, latest);
        std::reverse(rest.begin(), rest.end());
        SM_CHECK(*this, std::equal(order.begin() + 1, order.end(), rest.begin(), rest.end()),
                 "x-death order after one event in " << order.front().first
                                                     << " is not 3.10's (others reversed)");
    }
    ls.death_order = std::move(order);
    ls.deaths = std::move(entries);
    ls.death_total = std::max(ls.death_total, deaths);
    return {origin, deaths};
}

void harness::check_quorum_header(const lb::message& m, std::size_t qi, bool by_get,
                                  bool redelivered, const lineage& l) {
    const auto* h = m.headers.find(hdr::x_delivery_count);
    if (qi != q_quorum) {
        SM_CHECK(*this, !h, "x-delivery-count on a delivery from " << queue_name[qi]);
        return;
    }
    // §0.3.2: basic.get carries x-delivery-count from 0; a consumer delivery has none the first
    // time, then 1, 2, ...
    const auto v = m.headers.get<std::int64_t>(hdr::x_delivery_count);
    if (by_get)
        SM_CHECK(*this, v, "basic.get from a quorum queue without an x-delivery-count long");
    else
        SM_CHECK(*this, !h || (v && *v >= 1), "consumer delivery with x-delivery-count 0");
    const auto count = v.value_or(0);
    if (count > 0)
        SM_CHECK(*this, redelivered, "x-delivery-count " << count << " but redelivered=false");
    if (!by_get && redelivered && !restarted_)
        SM_CHECK(*this, h, "a quorum redelivery without x-delivery-count");
    auto& ls = lineages_[l];
    if (!restarted_)
        SM_CHECK(*this, count == ls.returns,
                 "x-delivery-count " << count << " after " << ls.returns << " returns");
    SM_CHECK(*this, count >= ls.delivery_count,
             "x-delivery-count went from " << ls.delivery_count << " to " << count);
    ls.delivery_count = count;
    ++ls.quorum_deliveries;
    if (const auto limit = cfg_.quorum_delivery_limit) {
        // I-08: at most limit + 1 deliveries, then it is dead-lettered.
        SM_CHECK(*this, count <= *limit, "x-delivery-count " << count << " over the limit");
        SM_CHECK(*this, ls.quorum_deliveries <= static_cast<std::uint32_t>(*limit) + 1,
                 ls.quorum_deliveries << " deliveries with delivery limit " << *limit);
    }
}

void harness::check_invariants() {
    const auto& c = broker_.counters();
    const auto ready = broker_.total_ready();
    const auto unacked = broker_.total_unacked();
    // I-10: every copy that entered a queue is in exactly one place.
    const auto accounted = ready + unacked + c.acked + c.dead_lettered_total() +
                           c.discarded_total() + c.dropped_total();
    SM_CHECK(*this, c.enqueued == accounted,
             "conservation: enqueued "
                 << c.enqueued << " != ready " << ready << " + unacked " << unacked << " + acked "
                 << c.acked << " + dead-lettered " << c.dead_lettered_total() << " + discarded "
                 << c.discarded_total() << " + dropped " << c.dropped_total());
    SM_CHECK(*this, c.published == publishes_,
             "published " << c.published << ", the test published " << publishes_);
    SM_CHECK(*this, c.returned == returns_,
             "returned " << c.returned << ", the test saw " << returns_);
    SM_CHECK(*this, c.confirms_acked + c.confirms_nacked == confirm_publishes_,
             "confirms " << c.confirms_acked + c.confirms_nacked << " for " << confirm_publishes_
                         << " publishes in confirm mode");
    // Every settlement the test made is counted once, where it says. A restart closes the
    // connections one after the other, so a message requeued by the first may be redelivered
    // to a channel of a later one and, when its consumer is no-ack, be acked unseen (a real
    // broker's shutdown allows the same interleaving).
    SM_CHECK(*this, restarted_ ? c.acked >= acks_ : c.acked == acks_,
             "acked " << c.acked << ", the test acked " << acks_);
    const auto rejected = c.dead_lettered_of(im::dead_letter_reason::rejected) +
                          c.discarded_of(im::dead_letter_reason::rejected);
    SM_CHECK(*this, rejected == rejections_,
             "rejected " << rejected << ", the test rejected " << rejections_);
    if (!restarted_) {
        // A restart closes channels that may hold deliveries the test never saw.
        SM_CHECK(*this, c.requeued == requeues_,
                 "requeued " << c.requeued << ", the test requeued " << requeues_);
        const auto limit_deaths = c.dead_lettered_of(im::dead_letter_reason::delivery_limit) +
                                  c.discarded_of(im::dead_letter_reason::delivery_limit);
        SM_CHECK(*this, limit_deaths == delivery_limit_deaths_,
                 limit_deaths << " delivery-limit dead letters, the test expected "
                              << delivery_limit_deaths_);
        SM_CHECK(*this, c.delivered == deliveries_ && c.redelivered == redeliveries_,
                 "delivered " << c.delivered << " (" << c.redelivered
                              << " redelivered), the test saw " << deliveries_ << " ("
                              << redeliveries_ << ")");
    }

    std::size_t tracked = 0;
    std::array<std::size_t, queue_count> tracked_in{};
    std::array<std::size_t, queue_count> consumers_on{};
    for (std::size_t i = 0; i < channel_count; ++i) {
        const auto& s = slots_[i];
        if (!s.ch.is_open()) {
            SM_CHECK(*this, s.outstanding.empty(), "test bug: closed slot " << i << " holds tags");
            continue;
        }
        SM_CHECK(*this, s.ch.unacked_count() == s.outstanding.size(),
                 "channel " << i << " has " << s.ch.unacked_count() << " unacked, the test holds "
                            << s.outstanding.size());
        tracked += s.outstanding.size();
        std::map<std::string, std::uint32_t, std::less<>> per_consumer;
        for (const auto& [t, o] : s.outstanding) {
            ++tracked_in[o.queue];
            if (!o.consumer.empty())
                ++per_consumer[o.consumer];
        }
        for (const auto& [tag, ct] : s.consumers) {
            if (ct.active)
                ++consumers_on[ct.queue];
            SM_CHECK(*this, ct.outstanding == per_consumer[tag], "test bug: consumer count");
            // I-11
            SM_CHECK(*this, ct.prefetch == 0 || ct.outstanding <= ct.prefetch,
                     "consumer " << tag << " holds " << ct.outstanding << " with prefetch "
                                 << ct.prefetch);
        }
    }
    SM_CHECK(*this, unacked == tracked,
             "broker has " << unacked << " unacked, the test holds " << tracked);

    // Liveness at quiescence: no ready message while a consumer of its queue has room. Room is
    // computed conservatively (channel-wide qos counts every consumer delivery).
    std::array<bool, queue_count> has_room{};
    std::array<bool, queue_count> has_own_room{}; // a consumer on a channel without global qos
    for (std::size_t i = 0; i < channel_count; ++i) {
        const auto& s = slots_[i];
        if (!s.ch.is_open())
            continue;
        std::size_t held = 0;
        for (const auto& [t, o] : s.outstanding)
            held += o.consumer.empty() ? 0 : 1;
        for (const auto& [tag, ct] : s.consumers) {
            if (!ct.active)
                continue;
            const bool room = ct.mode == consumer_mode::no_ack ||
                              ((ct.prefetch == 0 || ct.outstanding < ct.prefetch) &&
                               (s.global_prefetch == 0 || held < s.global_prefetch));
            has_room[ct.queue] = has_room[ct.queue] || room;
            has_own_room[ct.queue] = has_own_room[ct.queue] || (room && s.global_prefetch == 0);
        }
    }

    // A dead letter arriving in a queue where a consumer waits is delivered to it, as a
    // publish is, even with TTL 0 (RMQ-TTL-06: RabbitMQ tries the consumers before it checks
    // the expiry). Sound when nothing was delivered from that queue during the step: then the
    // consumer that has room now had it when the dead letter arrived.
    for (const auto& [l, q] : arrivals_)
        SM_CHECK(*this, delivered_now_.contains(l) || delivered_from_[q] || !has_own_room[q],
                 "message " << l.first << " dead-lettered back into " << queue_name[q]
                            << " was not delivered to the consumer waiting there");

    const bool requeue_step = c.requeued != requeued_before_;
    for (std::size_t q = 0; q < queue_count; ++q) {
        const auto info = broker_.queue(queue_name[q]);
        SM_CHECK(*this, info.has_value(), queue_name[q] << " is missing");
        if (!info)
            continue;
        SM_CHECK(*this, info->unacked == tracked_in[q],
                 queue_name[q] << " has " << info->unacked << " unacked, the test holds "
                               << tracked_in[q]);
        SM_CHECK(*this, info->consumers == consumers_on[q],
                 queue_name[q] << " has " << info->consumers << " consumers, the test has "
                               << consumers_on[q]);
        SM_CHECK(*this, info->ready == 0 || !has_room[q],
                 queue_name[q] << " holds " << info->ready
                               << " ready messages while a consumer has room");
        // I-12. drop-head (also on requeue, §0.3.4): never over the limit. reject-publish:
        // only publishes are refused, requeues may overfill (RMQ-ML-05), so a step without a
        // requeue never grows the queue past the limit (quorum: limit + 1, RMQ-ML-08).
        const auto lim = limit_of(cfg_, q);
        const auto max = lim.max ? static_cast<std::size_t>(*lim.max) : 0;
        const auto max_bytes = lim.max_bytes ? static_cast<std::size_t>(*lim.max_bytes) : 0;
        if (lim.drop_head) {
            SM_CHECK(*this, !lim.max || info->ready <= max,
                     queue_name[q] << " has " << info->ready << " ready, max-length " << max);
            SM_CHECK(*this, !lim.max_bytes || info->ready_bytes <= max_bytes,
                     queue_name[q] << " has " << info->ready_bytes << " ready bytes, max "
                                   << max_bytes);
        } else if (!requeue_step) {
            SM_CHECK(*this,
                     !lim.max || info->ready <= std::max(max + lim.overshoot, ready_before_[q]),
                     queue_name[q] << " grew from " << ready_before_[q] << " to " << info->ready
                                   << " ready, max-length " << max << " (reject-publish)");
            SM_CHECK(
                *this, !lim.max_bytes || info->ready_bytes <= std::max(max_bytes, bytes_before_[q]),
                queue_name[q] << " grew from " << bytes_before_[q] << " to " << info->ready_bytes
                              << " ready bytes, max " << max_bytes << " (reject-publish)");
        }
    }
}

// ---- commands ------------------------------------------------------------------------------

using command = rc::state::Command<model, harness>;
using command_ptr = std::shared_ptr<const command>;

/// Runs a command between the harness's step bookkeeping and its invariant checks.
struct step : command {
    void run(const model& m, harness& h) const final {
        std::ostringstream os;
        show(os);
        h.begin(os.str());
        exec(m, h);
        h.end();
    }
    virtual void exec(const model& m, harness& h) const = 0;
};

/// The channel slots of the connection that slot `i` is on (slot i uses connection i / 2).
std::array<std::size_t, 2> connection_slots(std::size_t i) {
    return {i / 2 * 2, i / 2 * 2 + 1};
}

std::size_t pick_open_channel(const model& m) {
    std::vector<std::size_t> open;
    for (std::size_t i = 0; i < channel_count; ++i)
        if (m.open[i])
            open.push_back(i);
    RC_PRE(!open.empty());
    return *rc::gen::elementOf(open);
}

/// A command on one open channel.
struct on_channel : step {
    std::size_t ch = 0;
    explicit on_channel(const model& m)
        : ch(pick_open_channel(m)) {}
    void checkPreconditions(const model& m) const override { RC_PRE(m.open[ch]); }
    void exec(const model& m, harness& h) const final {
        SM_CHECK(h, h.at(ch).ch.is_open(),
                 "channel " << ch << " closed unexpectedly: " << h.at(ch).ch.close_reason().text);
        if (h.at(ch).ch.is_open())
            exec_on(m, h, h.at(ch));
    }
    virtual void exec_on(const model& m, harness& h, slot& s) const = 0;
};

struct publish_cmd : on_channel {
    std::size_t route = 0;
    bool persistent = true;
    std::optional<std::int64_t> expiration_ms;
    std::size_t body = 0;
    bool mandatory = false;

    explicit publish_cmd(const model& m)
        : on_channel(m)
        , route(*rc::gen::inRange<std::size_t>(0, routes.size()))
        , persistent(*rc::gen::weightedElement<bool>({{3, true}, {1, false}}))
        , body(*rc::gen::inRange<std::size_t>(0, 17))
        , mandatory(*rc::gen::weightedElement<bool>({{3, false}, {1, true}})) {
        switch (*rc::gen::weightedElement<int>({{6, 0}, {1, 1}, {3, 2}})) {
        case 1:
            expiration_ms = 0;
            break;
        case 2:
            expiration_ms = *rc::gen::inRange<std::int64_t>(1, 151);
            break;
        default:
            break;
        }
    }

    void exec_on(const model&, harness& h, slot& s) const override {
        const auto& r = routes[route];
        const auto n = h.new_message();
        lb::message msg;
        msg.id = make_id(n);
        msg.exchange = std::string(r.exchange);
        msg.routing_key = std::string(r.key);
        msg.body.assign(body, 'b');
        msg.properties.persistent = persistent;
        if (expiration_ms)
            msg.properties.expiration = std::to_string(*expiration_ms);
        h.record_publish(n, {route, msg.exchange, msg.routing_key, msg.properties.expiration,
                             expiration_ms, h.now_ns(), s.id});

        // Which targets were full before the publish (a nack needs one, RMQ-ML-04/07/08).
        bool some_target_full = false;
        for (std::size_t q = 0; q < queue_count; ++q) {
            const auto lim = limit_of(h.config(), q);
            if (!(r.targets & bit(q)) || lim.drop_head)
                continue;
            const auto info = h.broker().queue(queue_name[q]);
            if (!info)
                continue;
            some_target_full |= (lim.max && info->ready >= static_cast<std::size_t>(*lim.max)) ||
                                (lim.max_bytes && info->ready_bytes + body >
                                                      static_cast<std::size_t>(*lim.max_bytes));
        }

        const std::uint64_t seq = s.confirm ? s.next_seq : 0;
        if (s.confirm)
            SM_CHECK(h, s.ch.next_publish_seq() == seq,
                     "next publish seq " << s.ch.next_publish_seq() << ", expected " << seq);
        s.notes.clear();
        const auto refused_before = h.broker().counters().refused;
        const auto enqueued_before = h.broker().counters().enqueued;
        h.publishing(n);
        const auto ec = s.ch.basic_publish(std::move(msg), mandatory);
        h.publishing(0);
        SM_CHECK(h, !ec, "publish failed: " << ec.message());

        // RMQ-PC-05/06: a mandatory unroutable publish is returned, before its confirm (an ack);
        // nothing else is returned.
        const bool unroutable = r.targets == 0;
        const auto returned = std::count_if(s.notes.begin(), s.notes.end(),
                                            [](const notification& x) { return x.kind == 'R'; });
        SM_CHECK(h, returned == ((mandatory && unroutable) ? 1 : 0),
                 returned << " returns for a " << (mandatory ? "" : "non-") << "mandatory "
                          << (unroutable ? "unroutable" : "routable") << " publish");
        h.count_publish(s.confirm, returned > 0);
        if (!s.confirm) {
            SM_CHECK(h, s.notes.size() == static_cast<std::size_t>(returned),
                     "a confirm outside confirm mode");
            return;
        }
        // RMQ-PC-02/14: exactly one confirm, for this publish's sequence number.
        ++s.next_seq;
        const auto& notes = s.notes;
        SM_CHECK(h,
                 notes.size() == static_cast<std::size_t>(returned) + 1 && notes.back().kind == 'C',
                 "expected one confirm as the last notification, got " << notes.size()
                                                                       << " notifications");
        if (notes.empty() || notes.back().kind != 'C')
            return;
        const auto& conf = notes.back();
        SM_CHECK(h, conf.seq == seq && !conf.multiple,
                 "confirm seq " << conf.seq << (conf.multiple ? " multiple" : "") << ", expected "
                                << seq);
        if (returned)
            SM_CHECK(h, notes.front().seq == seq && conf.ack,
                     "the return names seq " << notes.front().seq
                                             << " or the unroutable publish was nacked");
        if (!conf.ack) {
            SM_CHECK(h, some_target_full, "nack although no reject-publish target was full");
        } else {
            // I-13: an ack means every queue it was routed to stored it.
            const auto& c = h.broker().counters();
            SM_CHECK(h,
                     c.refused == refused_before &&
                         c.enqueued - enqueued_before >=
                             static_cast<std::uint64_t>(std::popcount(r.targets)),
                     "acked, but " << c.refused - refused_before << " queues refused it and "
                                   << c.enqueued - enqueued_before << " stored it");
        }
    }

    void show(std::ostream& os) const override {
        os << "publish(ch " << ch << ", " << route_label(route)
           << (persistent ? ", persistent" : ", transient");
        if (expiration_ms)
            os << ", expiration " << *expiration_ms;
        os << ", body " << body << (mandatory ? ", mandatory" : "") << ")";
    }
};

struct confirm_select_cmd : on_channel {
    using on_channel::on_channel;
    void exec_on(const model&, harness& h, slot& s) const override {
        const auto ec = s.ch.confirm_select();
        SM_CHECK(h, !ec, "confirm.select: " << ec.message());
        s.confirm = true;
    }
    void show(std::ostream& os) const override { os << "confirm_select(ch " << ch << ")"; }
};

struct qos_cmd : on_channel {
    std::uint16_t prefetch = 0;
    bool global = false;
    explicit qos_cmd(const model& m)
        : on_channel(m)
        , global(*rc::gen::weightedElement<bool>({{5, false}, {1, true}})) {
        prefetch = global ? *rc::gen::inRange<std::uint16_t>(1, 5)
                          : *rc::gen::inRange<std::uint16_t>(0, 5);
    }
    void apply(model& m) const override { m.global_qos[ch] = global; }
    void exec_on(const model& m, harness& h, slot& s) const override {
        SM_CHECK(h, m.global_qos[ch] == (s.global_prefetch != 0), "test bug: global qos");
        // Recorded first: the broker delivers what the new limits allow within the call.
        if (global) {
            s.global_prefetch = prefetch;
        } else {
            // 3.10 (§0.3.10): a consumer qos after a global one clears the global limit; it
            // applies to consumers created afterwards only.
            s.consumer_prefetch = prefetch;
            s.global_prefetch = 0;
        }
        const auto ec = s.ch.basic_qos(prefetch, global);
        SM_CHECK(h, !ec, "basic.qos: " << ec.message());
    }
    void show(std::ostream& os) const override {
        os << "qos(ch " << ch << ", " << prefetch << (global ? ", global" : "") << ")";
    }
};

struct consume_cmd : on_channel {
    std::size_t queue = 0;
    consumer_mode mode = consumer_mode::manual;
    explicit consume_cmd(const model& m)
        : on_channel(m)
        , queue(*rc::gen::inRange<std::size_t>(0, queue_count))
        , mode(*rc::gen::weightedElement<consumer_mode>({{6, consumer_mode::manual},
                                                         {2, consumer_mode::ack_in_handler},
                                                         {1, consumer_mode::no_ack}})) {}
    bool refused(const model& m) const { return queue == q_quorum && m.global_qos[ch]; }
    void apply(model& m) const override {
        // §0.3.3: the 540 is a hard error, which closes the connection with both its channels.
        if (refused(m))
            for (const auto j : connection_slots(ch)) {
                m.open[j] = false;
                m.global_qos[j] = false;
            }
    }
    void exec_on(const model& m, harness& h, slot& s) const override {
        const auto tag = h.new_consumer_tag();
        im::basic_consume_options opts;
        opts.consumer_tag = tag;
        opts.no_ack = mode == consumer_mode::no_ack;
        if (refused(m)) { // §0.3.3: global qos on a quorum queue: 540, connection closed
            for (const auto j : connection_slots(ch))
                if (m.open[j])
                    h.channel_closing(j);
        } else {
            s.consumers.emplace(tag, consumer_track{queue, s.consumer_prefetch, mode});
        }
        std::error_code ec;
        harness* hp = &h;
        const auto i = ch;
        const auto id = s.id;
        const auto got = s.ch.basic_consume(
            queue_name[queue],
            [hp, i, id, tag](const im::basic_delivery& d) {
                hp->on_consumer_delivery(i, id, tag, d);
            },
            ec, opts);
        if (refused(m)) {
            ++h.stats().global_qos_refusals;
            SM_CHECK(h, ec == make_error_code(lb::errc::not_implemented),
                     "consume on a quorum queue with global qos: " << ec.message());
            for (const auto j : connection_slots(ch))
                SM_CHECK(h, !h.at(j).ch.is_open(),
                         "channel " << j << " still open after the 540 closed its connection");
            return;
        }
        SM_CHECK(h, !ec && got == tag, "basic.consume: " << ec.message() << " tag " << got);
    }
    void show(std::ostream& os) const override {
        os << "consume(ch " << ch << ", " << queue_name[queue]
           << (mode == consumer_mode::manual           ? ""
               : mode == consumer_mode::ack_in_handler ? ", ack in handler"
                                                       : ", no-ack")
           << ")";
    }
};

struct cancel_cmd : on_channel {
    std::size_t pick = 0;
    explicit cancel_cmd(const model& m)
        : on_channel(m)
        , pick(*rc::gen::inRange<std::size_t>(0, 8)) {}
    void exec_on(const model&, harness& h, slot& s) const override {
        std::vector<std::string> active;
        for (const auto& [tag, c] : s.consumers)
            if (c.active)
                active.push_back(tag);
        if (active.empty())
            return;
        const auto& tag = active[pick % active.size()];
        s.consumers.at(tag).active = false;
        const auto ec = s.ch.basic_cancel(tag);
        SM_CHECK(h, !ec, "basic.cancel: " << ec.message());
    }
    void show(std::ostream& os) const override {
        os << "cancel(ch " << ch << ", consumer #" << pick << ")";
    }
};

struct get_cmd : on_channel {
    std::size_t queue = 0;
    bool no_ack = false;
    explicit get_cmd(const model& m)
        : on_channel(m)
        , queue(*rc::gen::inRange<std::size_t>(0, queue_count))
        , no_ack(*rc::gen::weightedElement<bool>({{4, false}, {1, true}})) {}
    void exec_on(const model&, harness& h, slot& s) const override {
        std::error_code ec;
        h.defer_deliveries();
        const auto d = s.ch.basic_get(queue_name[queue], ec, no_ack);
        SM_CHECK(h, !ec, "basic.get: " << ec.message());
        if (d) {
            SM_CHECK(h, d->queue == queue_name[queue], "basic.get returned from " << d->queue);
            h.observe(ch, *d, true, no_ack, "");
        } else if (!ec) {
            const auto info = h.broker().queue(queue_name[queue]);
            SM_CHECK(h, info && info->ready == 0,
                     "get-empty from a queue with " << (info ? info->ready : 0) << " ready");
        }
        h.drain_deliveries();
    }
    void show(std::ostream& os) const override {
        os << "get(ch " << ch << ", " << queue_name[queue] << (no_ack ? ", no-ack" : "") << ")";
    }
};

enum class settle_kind { ack, nack, reject };

const char* settle_name(settle_kind k) {
    return k == settle_kind::ack ? "ack" : k == settle_kind::nack ? "nack" : "reject";
}

std::error_code do_settle(im::channel& ch, settle_kind k, std::uint64_t tag, bool multiple,
                          bool requeue) {
    switch (k) {
    case settle_kind::ack:
        return ch.basic_ack(tag, multiple);
    case settle_kind::nack:
        return ch.basic_nack(tag, multiple, requeue);
    case settle_kind::reject:
        return ch.basic_reject(tag, requeue);
    }
    return {};
}

struct settle_cmd : on_channel {
    settle_kind kind = settle_kind::ack;
    std::size_t pick = 0;
    bool multiple = false;
    bool requeue = false;
    bool everything = false; // tag 0 with multiple (RMQ-ACK-22)
    explicit settle_cmd(const model& m)
        : on_channel(m)
        , kind(*rc::gen::weightedElement<settle_kind>(
              {{5, settle_kind::ack}, {3, settle_kind::nack}, {2, settle_kind::reject}}))
        , pick(*rc::gen::inRange<std::size_t>(0, 16))
        , multiple(kind != settle_kind::reject &&
                   *rc::gen::weightedElement<bool>({{3, false}, {1, true}}))
        , requeue(kind != settle_kind::ack && *rc::gen::arbitrary<bool>())
        , everything(multiple && *rc::gen::weightedElement<bool>({{4, false}, {1, true}})) {}
    void exec_on(const model&, harness& h, slot& s) const override {
        if (s.outstanding.empty())
            return;
        std::vector<std::uint64_t> tags;
        std::uint64_t tag = 0;
        if (everything) {
            for (const auto& [t, o] : s.outstanding)
                tags.push_back(t);
        } else {
            auto it = std::next(s.outstanding.begin(),
                                static_cast<std::ptrdiff_t>(pick % s.outstanding.size()));
            tag = it->first;
            if (multiple)
                for (auto j = s.outstanding.begin(); j != std::next(it); ++j)
                    tags.push_back(j->first);
            else
                tags.push_back(tag);
        }
        h.settle_tracked(ch, tags, kind == settle_kind::ack, requeue);
        const auto ec = do_settle(s.ch, kind, tag, multiple, requeue);
        SM_CHECK(h, !ec, settle_name(kind) << " of tag " << tag << ": " << ec.message());
    }
    void show(std::ostream& os) const override {
        os << settle_name(kind) << "(ch " << ch << ", ";
        if (everything)
            os << "tag 0";
        else
            os << "unacked #" << pick;
        os << (multiple ? ", multiple" : "");
        if (kind != settle_kind::ack)
            os << (requeue ? ", requeue" : ", no requeue");
        os << ")";
    }
};

/// An ack, nack or reject of a tag the channel does not hold (never issued, or already
/// settled): RabbitMQ closes the channel with 406 (RMQ-ACK-21, §0.3.14).
struct invalid_settle_cmd : on_channel {
    settle_kind kind = settle_kind::ack;
    std::size_t pick = 0;
    explicit invalid_settle_cmd(const model& m)
        : on_channel(m)
        , kind(*rc::gen::element(settle_kind::ack, settle_kind::nack, settle_kind::reject))
        , pick(*rc::gen::inRange<std::size_t>(0, 16)) {}
    void apply(model& m) const override {
        m.open[ch] = false;
        m.global_qos[ch] = false;
    }
    void exec_on(const model& m, harness& h, slot& s) const override {
        std::vector<std::uint64_t> candidates;
        for (std::uint64_t t = 1; t <= s.last_tag + 3; ++t)
            if (!s.outstanding.contains(t))
                candidates.push_back(t);
        const auto tag = candidates[pick % candidates.size()];
        ++h.stats().invalid_tags;
        h.channel_closing(ch);
        const auto ec = do_settle(s.ch, kind, tag, false, true);
        SM_CHECK(h, ec == make_error_code(lb::errc::precondition_failed),
                 settle_name(kind) << " of unknown tag " << tag << ": " << ec.message());
        SM_CHECK(h, !s.ch.is_open(), "channel still open after an unknown delivery tag");
        SM_CHECK(h,
                 s.ch.close_reason().text ==
                     "PRECONDITION_FAILED - unknown delivery tag " + std::to_string(tag),
                 "close reason '" << s.ch.close_reason().text << "'");
        SM_CHECK(h, s.closes == 1, "on_close ran " << s.closes << " times");
        for (std::size_t j = 0; j < channel_count; ++j)
            if (j != ch)
                SM_CHECK(h, h.at(j).ch.is_open() == m.open[j], "channel " << j << " changed");
    }
    void show(std::ostream& os) const override {
        os << settle_name(kind) << "_unknown_tag(ch " << ch << ", candidate #" << pick << ")";
    }
};

struct recover_cmd : on_channel {
    using on_channel::on_channel;
    void exec_on(const model&, harness& h, slot& s) const override {
        std::vector<std::uint64_t> all;
        for (const auto& [t, o] : s.outstanding)
            all.push_back(t);
        h.settle_tracked(ch, all, false, true);
        const auto ec = s.ch.basic_recover(true);
        SM_CHECK(h, !ec, "basic.recover: " << ec.message());
    }
    void show(std::ostream& os) const override { os << "recover(ch " << ch << ")"; }
};

struct purge_cmd : on_channel {
    std::size_t queue = 0;
    explicit purge_cmd(const model& m)
        : on_channel(m)
        , queue(*rc::gen::inRange<std::size_t>(0, queue_count)) {}
    void exec_on(const model&, harness& h, slot& s) const override {
        const auto before = h.broker().queue(queue_name[queue]);
        std::error_code ec;
        const auto n = s.ch.queue_purge(queue_name[queue], ec);
        SM_CHECK(h, !ec, "queue.purge: " << ec.message());
        h.purged(queue);
        // RMQ-ACK-16: purges the ready messages only.
        SM_CHECK(h, before && n == before->ready,
                 "purged " << n << " of " << (before ? before->ready : 0) << " ready");
        const auto after = h.broker().queue(queue_name[queue]);
        SM_CHECK(h, after && after->ready == 0 && after->unacked == before->unacked,
                 "after purge: ready " << after->ready << ", unacked " << after->unacked);
    }
    void show(std::ostream& os) const override {
        os << "purge(ch " << ch << ", " << queue_name[queue] << ")";
    }
};

struct close_channel_cmd : on_channel {
    using on_channel::on_channel;
    void apply(model& m) const override {
        m.open[ch] = false;
        m.global_qos[ch] = false;
    }
    void exec_on(const model&, harness& h, slot& s) const override {
        h.channel_closing(ch);
        s.ch.close();
        SM_CHECK(h, !s.ch.is_open(), "channel still open after close");
        SM_CHECK(h, s.closes == 1, "on_close ran " << s.closes << " times");
    }
    void show(std::ostream& os) const override { os << "close_channel(ch " << ch << ")"; }
};

struct reopen_channel_cmd : step {
    std::size_t ch = 0;
    explicit reopen_channel_cmd(const model& m) {
        std::vector<std::size_t> closed;
        for (std::size_t i = 0; i < channel_count; ++i)
            if (!m.open[i])
                closed.push_back(i);
        RC_PRE(!closed.empty());
        ch = *rc::gen::elementOf(closed);
    }
    void checkPreconditions(const model& m) const override { RC_PRE(!m.open[ch]); }
    void apply(model& m) const override {
        m.open[ch] = true;
        m.global_qos[ch] = false;
    }
    void exec(const model&, harness& h) const override {
        auto& s = h.at(ch);
        SM_CHECK(h, !s.ch.is_open(), "channel " << ch << " is open");
        const auto ec = s.ch.basic_qos(1);
        // connection_closed when a hard error (540) took the whole connection down.
        SM_CHECK(h,
                 ec == make_error_code(lb::errc::channel_closed) ||
                     ec == make_error_code(lb::errc::connection_closed),
                 "a call on a closed channel: " << ec.message());
        h.open_slot(ch);
        SM_CHECK(h, h.at(ch).ch.is_open(), "reopened channel " << ch << " is closed");
    }
    void show(std::ostream& os) const override { os << "reopen_channel(ch " << ch << ")"; }
};

struct advance_cmd : step {
    std::int64_t ms = 1;
    explicit advance_cmd(const model&)
        : ms(*rc::gen::inRange<std::int64_t>(1, 121)) {}
    void exec(const model&, harness& h) const override {
        h.clock().advance(std::chrono::milliseconds(ms));
    }
    void show(std::ostream& os) const override { os << "advance(" << ms << " ms)"; }
};

struct restart_cmd : step {
    explicit restart_cmd(const model&) {}
    void apply(model& m) const override { m = model{}; }
    void exec(const model&, harness& h) const override { h.restart(); }
    void show(std::ostream& os) const override { os << "restart_broker_and_reconnect()"; }
};

template <class T>
rc::Gen<command_ptr> make(const model& m) {
    return rc::gen::exec([m] { return command_ptr(std::make_shared<const T>(m)); });
}

rc::Gen<command_ptr> next_command(const model& m) {
    const bool any_open = std::find(m.open.begin(), m.open.end(), true) != m.open.end();
    const bool any_closed = std::find(m.open.begin(), m.open.end(), false) != m.open.end();
    const std::size_t o = any_open ? 1 : 0;
    return rc::gen::weightedOneOf<command_ptr>({
        {28 * o, make<publish_cmd>(m)},
        {4 * o, make<confirm_select_cmd>(m)},
        {6 * o, make<qos_cmd>(m)},
        {8 * o, make<consume_cmd>(m)},
        {3 * o, make<cancel_cmd>(m)},
        {12 * o, make<get_cmd>(m)},
        {24 * o, make<settle_cmd>(m)},
        {1 * o, make<invalid_settle_cmd>(m)},
        {2 * o, make<recover_cmd>(m)},
        {1 * o, make<purge_cmd>(m)},
        {2 * o, make<close_channel_cmd>(m)},
        {any_closed ? 6U : 0U, make<reopen_channel_cmd>(m)},
        {10, make<advance_cmd>(m)},
        {1, make<restart_cmd>(m)},
    });
}

// Generated field by field, enums as indices, so RapidCheck shrinks each and prints numbers
// (the RC_LOG line spells the topology out).
topology_config generate_topology() {
    constexpr std::array overflows{topo::overflow_behaviour::drop_head,
                                   topo::overflow_behaviour::reject_publish,
                                   topo::overflow_behaviour::reject_publish_dlx};
    constexpr std::array ttl_targets{ttl_dead_letter::to_work, ttl_dead_letter::to_itself,
                                     ttl_dead_letter::none};
    topology_config c;
    c.bounded_max_length = *rc::gen::inRange<std::int64_t>(1, 4);
    if (*rc::gen::arbitrary<bool>())
        c.bounded_max_bytes = *rc::gen::inRange<std::int64_t>(4, 41);
    c.bounded_overflow = overflows[*rc::gen::inRange<std::size_t>(0, overflows.size())];
    if (*rc::gen::weightedElement<bool>({{1, false}, {3, true}}))
        c.quorum_delivery_limit = *rc::gen::inRange<std::int64_t>(0, 4);
    if (*rc::gen::arbitrary<bool>()) {
        c.quorum_max_length = *rc::gen::inRange<std::int64_t>(1, 4);
        c.quorum_overflow = overflows[*rc::gen::inRange<std::size_t>(0, overflows.size())];
    }
    // TTL 0 is its own case (RMQ-TTL-06: expires on arrival unless a consumer takes it).
    switch (*rc::gen::weightedElement<int>({{1, 0}, {2, 1}, {2, 2}})) {
    case 0:
        c.ttl_ms = 0;
        break;
    case 1:
        c.ttl_ms = *rc::gen::inRange<std::int64_t>(1, 21);
        break;
    default:
        c.ttl_ms = *rc::gen::inRange<std::int64_t>(21, 101);
        break;
    }
    c.ttl_dlx = ttl_targets[*rc::gen::inRange<std::size_t>(0, ttl_targets.size())];
    c.dead_to_work = *rc::gen::arbitrary<bool>();
    return c;
}

bool mentions(const char* text, std::string_view key) {
    return text != nullptr && std::string_view(text).find(key) != std::string_view::npos;
}

/// RapidCheck's configuration (RC_PARAMS, which the test main seeds from LETTERBOX_SEED),
/// with this test's defaults where RC_PARAMS says nothing. Without a seed in RC_PARAMS the
/// seed is LETTERBOX_SEED's, so the sequences never depend on anything else.
rc::detail::TestParams test_params() {
    auto params = rc::detail::configuration().testParams;
    const char* env = std::getenv("RC_PARAMS");
    if (!mentions(env, "seed="))
        params.seed = letterbox::testing::test_seed();
    if (!mentions(env, "max_success="))
        params.maxSuccess = kMaxSuccess;
    if (!mentions(env, "max_size="))
        params.maxSize = kMaxSize;
    return params;
}

} // namespace

TEST_CASE("random command sequences keep the broker's conservation, prefetch and length "
          "invariants",
          "[property][broker]") {
    const auto params = test_params();
    INFO("LETTERBOX_SEED=" << letterbox::testing::test_seed() << " (RapidCheck seed " << params.seed
                           << ", " << params.maxSuccess << " sequences, max size " << params.maxSize
                           << ")");
    coverage cov;
    rc::detail::TestMetadata metadata;
    metadata.id = "broker_state_machine";
    metadata.description = "in-memory broker state machine";
    const auto result = rc::detail::checkTestable(
        [&cov] {
            const auto cfg = generate_topology();
            RC_LOG() << describe(cfg) << "\n";
            harness h(cfg, cov);
            rc::state::check(model{}, h, &next_command);
        },
        metadata, params);
    std::ostringstream report;
    rc::detail::printResultMessage(result, report);
    INFO(report.str());
    REQUIRE(result.is<rc::detail::SuccessResult>());

    // Not vacuous: the sequences reached the states the invariants are about.
    INFO("coverage: " << show_coverage(cov));
    CHECK(cov.sequences >= static_cast<std::uint64_t>(params.maxSuccess));
    CHECK(cov.deliveries > 0);
    CHECK(cov.prefetch_saturated > 0);
    CHECK(cov.requeued > 0);
    CHECK(cov.dead_letter_deliveries > 0);
    CHECK(cov.multi_death_deliveries > 0);
    for (auto n : cov.dead_lettered)
        CHECK(n > 0);
    CHECK(cov.confirms_nacked > 0);
    CHECK(cov.returned > 0);
    CHECK(cov.invalid_tags > 0);
    CHECK(cov.restarts > 0);
}

} // namespace property_broker_state_machine
