// SPDX-License-Identifier: BSL-1.0
//
// The three services downstream of `enrollment.confirmed`: course access (what the student
// sees), invoicing (the nota fiscal) and e-mail (the welcome message). Each has its own SQLite
// database, its own connection to the broker and its own queue, and applies one effect per
// enrollment: a row in its table. Counting those rows per enrollment is how the demo tells a
// lost event (no row) from a duplicate effect (two rows).
//
// Two ways to consume:
// - naive: a plain handler in its own transaction, ack on success; on failure the delivery is
//   rejected without requeue onto a queue without a dead-letter exchange, so it is dropped;
// - letterbox: `dead_letter > redelivery > retry` around `idempotent(effect, sqlite inbox)`.
#pragma once

#include "driver.hpp"

#include <letterbox/backoff/exponential.hpp>
#include <letterbox/backoff/immediate.hpp>
#include <letterbox/consumer.hpp>
#include <letterbox/middleware/compose.hpp>
#include <letterbox/middleware/dead_letter.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/middleware/redelivery.hpp>
#include <letterbox/middleware/retry.hpp>
#include <letterbox/ops/letterbox_metrics.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/inbox_store.hpp>
#include <letterbox/steady_clock.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/topology/retry_topology.hpp>
#include <letterbox/transport/async_declare_all.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace demo {

enum class service_kind { course_access, invoicing, email };

struct service_info {
    service_kind kind;
    const char* id;     // consumer id, queue and database name
    const char* table;  // one row per effect
    const char* effect; // the effect, in words
};

inline constexpr std::array<service_info, 3> downstream_services = {{
    {service_kind::course_access, "course-access", "grants", "course access granted"},
    {service_kind::invoicing, "invoicing", "invoices", "nota fiscal issued"},
    {service_kind::email, "email", "emails", "welcome e-mail sent"},
}};

/// The e-mail provider is unavailable (503): worth trying again.
struct email_unavailable : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// A fake e-mail provider that answers 503 to the first `failures` attempts for the
/// enrollments in `hiccups`.
class email_provider {
public:
    email_provider(std::set<std::size_t> hiccups, unsigned failures)
        : hiccups_(std::move(hiccups))
        , failures_(failures) {}

    void send(std::int64_t enrollment) {
        const auto n = static_cast<std::size_t>(enrollment);
        if (hiccups_.count(n) != 0 && attempts_[n]++ < failures_)
            throw email_unavailable("e-mail API answered 503 Service Unavailable");
    }

private:
    std::set<std::size_t> hiccups_;
    unsigned failures_;
    std::map<std::size_t, unsigned> attempts_;
};

using effect_fn = std::function<void(const letterbox::message&, letterbox::sqlite::unit_of_work&)>;

/// The effect of a service: read the event, write one row, in the unit of work. The invoicing
/// effect needs `price_cents`; `at` throws `nlohmann::json::out_of_range` when it is missing,
/// which letterbox's default classifier calls permanent.
inline effect_fn make_effect(service_kind kind, email_provider* mail) {
    return [kind, mail](const letterbox::message& m, letterbox::sqlite::unit_of_work& uow) {
        const auto event = nlohmann::json::parse(m.body);
        const auto enrollment = event.at("enrollment").get<std::int64_t>();
        const auto student = event.at("student").get<std::string>();
        std::string sql;
        std::string detail;
        switch (kind) {
        case service_kind::course_access:
            sql = "INSERT INTO grants(enrollment, student, detail) VALUES (?1, ?2, ?3)";
            detail = event.at("course").get<std::string>();
            break;
        case service_kind::invoicing:
            sql = "INSERT INTO invoices(enrollment, student, detail) VALUES (?1, ?2, ?3)";
            detail = std::to_string(event.at("price_cents").get<std::int64_t>());
            break;
        case service_kind::email:
            mail->send(enrollment);
            sql = "INSERT INTO emails(enrollment, student, detail) VALUES (?1, ?2, ?3)";
            detail = "welcome";
            break;
        }
        std::error_code ec;
        auto st = uow.connection().prepare(sql, ec);
        if (ec)
            throw letterbox::error(ec, "prepare");
        st->bind_int64(1, enrollment);
        st->bind_text(2, student);
        st->bind_text(3, detail);
        if (auto failed = st->execute())
            throw letterbox::error(failed, "insert");
    };
}

/// One downstream service: database, connection, queue(s), consumer.
template <class Transport>
class downstream {
public:
    using plain_handler = std::function<void(const letterbox::message&)>;
    using pipeline_handler =
        std::function<letterbox::middleware::disposition(const letterbox::middleware::handling&)>;
    using begin_fn = std::function<letterbox::sqlite::unit_of_work()>;
    using inbox_handler = letterbox::idempotent_handler<letterbox::sqlite::inbox_store, begin_fn,
                                                        effect_fn, letterbox::steady_clock>;

    /// The e-mail service's broker-level retry: 50 ms, then 100 ms, 3 deliveries at most; each
    /// delivery gets 2 immediate in-process runs first.
    static auto redelivery_policy() {
        return letterbox::backoff::exponential(std::chrono::milliseconds(50), 2.0,
                                               std::chrono::milliseconds(100), 3);
    }

    downstream(const service_info& info, bool reliable, const std::filesystem::path& dir,
               std::unique_ptr<Transport> transport, std::string queue,
               letterbox::steady_clock& clock, email_provider* mail,
               letterbox::ops::letterbox_metrics& metrics)
        : info_(info)
        , reliable_(reliable)
        , db_(letterbox::sqlite::database::open((dir / (std::string(info.id) + ".db")).string()))
        , inbox_(db_)
        , transport_(std::move(transport))
        , topo_{.queue = std::move(queue),
                .delays = letterbox::topology::retry_topology::levels_of(redelivery_policy())} {
        exec(db_, std::string("CREATE TABLE ") + info.table +
                      "(enrollment INTEGER NOT NULL, student TEXT NOT NULL, detail TEXT)");
        auto effect = make_effect(info.kind, mail);
        if (!reliable) {
            // Commit, ack; on failure reject without requeue: with no dead-letter exchange on
            // the queue, the broker drops the message.
            plain_handler h = [this, effect](const letterbox::message& m) {
                auto uow = db_.begin();
                effect(m, uow);
                if (auto ec = uow.commit())
                    throw letterbox::error(ec, "commit");
            };
            naive_.emplace(
                *transport_, std::move(h), clock,
                letterbox::consumer_options{.consume = {.queue = topo_.queue},
                                            .on_failure = letterbox::failure_action::dead_letter});
            return;
        }
        //[reliable_consumer
        auto inbox = letterbox::idempotent(effect, inbox_, begin_fn([this] { return db_.begin(); }),
                                           info.id, clock)
                         .with_retention(std::chrono::hours(24 * 7))
                         .on_duplicate(metrics.duplicate_observer());
        inbox_handler_.emplace(inbox);
        pipeline_handler pipeline = letterbox::middleware::compose(
            inbox, letterbox::middleware::dead_letter({.consumer_id = info.id}, clock),
            letterbox::middleware::redelivery(redelivery_policy(), topo_, clock),
            letterbox::middleware::retry(letterbox::backoff::immediate(2)));
        reliable_consumer_.emplace(
            *transport_, std::move(pipeline), clock,
            letterbox::consumer_options{.consume = {.queue = topo_.queue},
                                        .on_event = metrics.consumer_observer()});
        //]
    }

    const service_info& info() const noexcept { return info_; }
    Transport& transport() noexcept { return *transport_; }
    const std::string& queue() const noexcept { return topo_.queue; }
    std::string dead_letter_queue() const { return topo_.dead_letter_queue_name(); }
    letterbox::sqlite::database& database() noexcept { return db_; }
    letterbox::sqlite::inbox_store& inbox() noexcept { return inbox_; }

    /// Every queue this service reads or feeds: the work queue, and for letterbox its retry
    /// queues and its dead-letter queue. `expires` (AMQP only) lets a shared broker forget them.
    std::vector<letterbox::topology::queue>
    queues(std::optional<std::chrono::milliseconds> expires) const {
        std::vector<letterbox::topology::queue> out;
        if (reliable_)
            out = topo_.queues();
        else
            out.push_back({.name = topo_.queue});
        if (expires)
            for (auto& q : out)
                q.arguments.set(letterbox::topology::args::expires,
                                static_cast<std::int64_t>(expires->count()));
        return out;
    }

    /// The queues whose depth must be 0 when the run has settled (all but the DLQ).
    std::vector<std::string> transit_queues() const {
        std::vector<std::string> out{topo_.queue};
        if (reliable_)
            for (auto level : topo_.delays)
                out.push_back(topo_.retry_queue_name(level));
        return out;
    }

    template <class Token>
    void async_start(Token&& token) {
        auto done = [this, t = std::forward<Token>(token)](std::error_code ec,
                                                           std::string tag) mutable {
            tag_ = tag;
            t(ec);
        };
        if (naive_)
            naive_->async_start(std::move(done));
        else
            reliable_consumer_->async_start(std::move(done));
    }

    template <class Token>
    void async_stop(Token&& token) {
        if (naive_)
            naive_->async_stop(tag_, std::forward<Token>(token));
        else
            reliable_consumer_->async_stop(tag_, std::forward<Token>(token));
    }

    letterbox::consumer_stats stats() const {
        return naive_ ? naive_->stats() : reliable_consumer_->stats();
    }
    letterbox::idempotent_stats inbox_stats() const {
        return inbox_handler_ ? inbox_handler_->stats() : letterbox::idempotent_stats{};
    }

    /// Every delivery the consumer received has been settled.
    bool idle() const {
        const auto s = stats();
        return s.delivered ==
               s.acked + s.failed + s.redelivered + s.dead_lettered + s.forward_failed;
    }

    /// Effect rows per enrollment.
    std::map<std::int64_t, std::int64_t> effects() {
        return query_pairs(db_, std::string("SELECT enrollment, COUNT(*) FROM ") + info_.table +
                                    " GROUP BY enrollment");
    }

private:
    service_info info_;
    bool reliable_;
    letterbox::sqlite::database db_;
    letterbox::sqlite::inbox_store inbox_;
    std::unique_ptr<Transport> transport_;
    letterbox::topology::retry_topology topo_;
    std::optional<letterbox::consumer<Transport, plain_handler, letterbox::steady_clock>> naive_;
    std::optional<letterbox::consumer<Transport, pipeline_handler, letterbox::steady_clock>>
        reliable_consumer_;
    std::optional<inbox_handler> inbox_handler_;
    std::string tag_;
};

} // namespace demo
