// SPDX-License-Identifier: BSL-1.0
//
// The enrollment service: `POST /enrollments` confirms an enrollment in its SQLite database and
// announces `enrollment.confirmed`. Two builds of it:
//
// - naive: commit, then publish, with the "fix" everybody reaches for first (try again twice,
//   10 ms apart). When the publish still fails, it logs and answers "confirmed" anyway: the
//   enrollment exists, the student paid.
// - outbox: the enrollment and its event commit in one transaction (`sqlite::outbox_store`),
//   and an `outbox_relay` publishes the event, retrying until the broker confirms it.
//
// Two faults happen inside the process, so they are hooks of the service: the process dying
// right after a commit (`dies_after_commit`), and a canary release that writes one event with a
// renamed field (`canary`). The dying is simulated in-process: the request is never answered,
// the naive publish never starts, and in the outbox build the relay is destroyed abruptly
// (letterbox documents that as "as if its process died": nothing more is published or marked,
// its leases stay held) and a new relay, with a new lease owner, starts as the restarted
// process would.
#pragma once

#include "flaky_link.hpp"
#include "http.hpp"

#include <letterbox/message.hpp>
#include <letterbox/outbox/outbox_relay.hpp>
#include <letterbox/payload.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/outbox_store.hpp>
#include <letterbox/steady_clock.hpp>

#include <boost/asio/steady_timer.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

namespace demo {

template <class Transport>
class enrollment_service {
public:
    using link_type = flaky_link<Transport>;
    using relay_type = letterbox::outbox_relay<letterbox::sqlite::outbox_store, link_type,
                                               letterbox::steady_clock>;

    struct hooks {
        std::function<bool(std::int64_t)> dies_after_commit;
        std::function<bool(std::int64_t)> canary;
    };

    enrollment_service(bool use_outbox, const std::filesystem::path& dir, link_type& link,
                       letterbox::steady_clock& clock, std::string exchange, hooks h,
                       letterbox::relay_options relay_options, std::uint64_t seed)
        : use_outbox_(use_outbox)
        , db_(letterbox::sqlite::database::open((dir / "enrollment.db").string()))
        , outbox_(db_)
        , link_(&link)
        , clock_(&clock)
        , exchange_(std::move(exchange))
        , hooks_(std::move(h))
        , relay_options_(std::move(relay_options))
        , ids_(seed) {
        exec(db_, "CREATE TABLE enrollments(id INTEGER PRIMARY KEY, student TEXT NOT NULL, "
                  "course TEXT NOT NULL, price_cents INTEGER NOT NULL)");
        if (use_outbox_)
            start_relay();
    }

    enrollment_service(const enrollment_service&) = delete;
    enrollment_service& operator=(const enrollment_service&) = delete;

    /// The route of the HTTP server.
    void handle(const http::request& req, http::responder r) {
        namespace bhttp = http::bhttp;
        if (req.method() != bhttp::verb::post || req.target() != "/enrollments")
            return r.reply(
                http::json_response(bhttp::status::not_found, R"({"error":"POST /enrollments"})"));
        const auto body = nlohmann::json::parse(req.body(), nullptr, false);
        if (!body.is_object() || !body.contains("student") || !body.contains("course") ||
            !body.contains("price_cents"))
            return r.reply(http::json_response(bhttp::status::bad_request,
                                               R"({"error":"student, course, price_cents"})"));
        try {
            use_outbox_ ? confirm_with_outbox(body, r) : confirm_then_publish(body, r);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "enrollment-service: %s\n", e.what());
            r.reply(http::json_response(bhttp::status::internal_server_error,
                                        nlohmann::json{{"error", e.what()}}.dump()));
        }
    }

    letterbox::sqlite::database& database() noexcept { return db_; }
    letterbox::sqlite::outbox_store& outbox() noexcept { return outbox_; }
    /// The relay of the running process (outbox build only).
    relay_type* relay() noexcept { return relay_.get(); }

    std::size_t crashes() const noexcept { return crashes_; }
    std::size_t publish_failures() const noexcept { return publish_failures_; }
    std::size_t republished() const noexcept { return republished_; }
    /// The relay counters summed over every relay this service ran.
    letterbox::relay_counters relay_totals() const {
        auto t = finished_;
        if (relay_)
            add(t, relay_->counters());
        return t;
    }

    /// Stops the relay gracefully; `done` runs when it has stopped.
    void stop(std::function<void()> done) {
        if (!relay_)
            return done();
        relay_done_ = std::move(done);
        relay_->stop();
    }

private:
    // -- naive: commit, then publish -------------------------------------------------------------
    void confirm_then_publish(const nlohmann::json& body, http::responder r) {
        const auto id = insert(body, nullptr);
        if (hooks_.dies_after_commit(id)) {
            ++crashes_; // the process dies here: no publish, no answer
            return r.drop();
        }
        auto m = std::make_shared<letterbox::message>(event(id, body));
        publish(std::move(m), id, 1, std::move(r));
    }

    void publish(std::shared_ptr<letterbox::message> m, std::int64_t id, int attempt,
                 http::responder r) {
        link_->async_publish(*m, [this, m, id, attempt, r](std::error_code ec) {
            if (!ec)
                return r.reply(confirmed(id));
            if (attempt < 3) { // "just retry it": the first fix everybody tries
                ++republished_;
                auto timer = std::make_shared<boost::asio::steady_timer>(
                    link_->get_executor(), std::chrono::milliseconds(10));
                timer->async_wait([this, timer, m, id, attempt, r](std::error_code) {
                    publish(m, id, attempt + 1, r);
                });
                return;
            }
            // The exception goes to a log nobody reads at 10 p.m. on a Friday; the student sees
            // "confirmed", because the enrollment is committed.
            ++publish_failures_;
            r.reply(confirmed(id));
        });
    }

    // -- letterbox: the transactional outbox ---------------------------------------------------
    void confirm_with_outbox(const nlohmann::json& body, http::responder r) {
        std::int64_t id = 0;
        //[confirm_with_outbox
        auto uow = db_.begin();  // BEGIN IMMEDIATE
        id = insert(body, &uow); // the enrollment...
        letterbox::outbox_entry entry{event(id, body), "student",
                                      body.at("student").get<std::string>()};
        if (auto ec = outbox_.add(uow, entry, clock_->wall_now())) // ...and its event
            throw letterbox::error(ec, "outbox");
        const bool dies = hooks_.dies_after_commit(id);
        if (!dies) { // publish now, not at the next poll
            if (auto ec = uow.on_commit(relay_->waker()))
                throw letterbox::error(ec, "on_commit");
        }
        if (auto ec = uow.commit()) // both, or neither
            throw letterbox::error(ec, "commit");
        //]
        if (dies) {
            ++crashes_;
            restart_relay();
            return r.drop();
        }
        r.reply(confirmed(id));
    }

    void start_relay() {
        auto options = relay_options_;
        options.owner = "enrollment-relay-" + std::to_string(++relay_generation_);
        options.seed = relay_options_.seed.value_or(0) + relay_generation_;
        relay_ = std::make_unique<relay_type>(outbox_, *link_, *clock_, options);
        relay_->async_run([this, generation = relay_generation_](std::error_code) {
            if (generation == relay_generation_ && relay_done_)
                std::exchange(relay_done_, {})();
        });
    }

    // The process died: its relay with it, abruptly (leases held, publishes in flight
    // forgotten). The restarted process starts a new relay.
    void restart_relay() {
        add(finished_, relay_->counters());
        relay_.reset();
        start_relay();
    }

    static void add(letterbox::relay_counters& to, const letterbox::relay_counters& c) {
        to.published += c.published;
        to.publish_attempts += c.publish_attempts;
        to.transport_failures += c.transport_failures;
        to.backoffs += c.backoffs;
        to.leases_expired += c.leases_expired;
        to.lease_lost += c.lease_lost;
    }

    // -- shared ------------------------------------------------------------------------------
    std::int64_t insert(const nlohmann::json& body, letterbox::sqlite::unit_of_work* outer) {
        std::optional<letterbox::sqlite::unit_of_work> own;
        auto& uow = outer ? *outer : own.emplace(db_.begin());
        std::error_code ec;
        auto st = uow.connection().prepare(
            "INSERT INTO enrollments(student, course, price_cents) VALUES (?1, ?2, ?3)", ec);
        if (ec)
            throw letterbox::error(ec, "prepare");
        st->bind_text(1, body.at("student").get<std::string>());
        st->bind_text(2, body.at("course").get<std::string>());
        st->bind_int64(3, body.at("price_cents").get<std::int64_t>());
        if (auto failed = st->execute())
            throw letterbox::error(failed, "insert");
        const auto id = uow.connection().last_insert_rowid();
        if (own)
            if (auto failed = own->commit())
                throw letterbox::error(failed, "commit");
        return id;
    }

    letterbox::message event(std::int64_t id, const nlohmann::json& body) {
        nlohmann::json payload{
            {"enrollment", id}, {"student", body.at("student")}, {"course", body.at("course")}};
        // The canary of the next release renamed the field.
        payload[hooks_.canary(id) ? "amount_cents" : "price_cents"] = body.at("price_cents");
        return letterbox::make_message(ids_, "enrollment.confirmed", exchange_,
                                       "enrollment.confirmed", payload);
    }

    static http::response confirmed(std::int64_t id) {
        return http::json_response(
            http::bhttp::status::created,
            nlohmann::json{{"enrollment", id}, {"status", "confirmed"}}.dump());
    }

    bool use_outbox_;
    letterbox::sqlite::database db_;
    letterbox::sqlite::outbox_store outbox_;
    link_type* link_;
    letterbox::steady_clock* clock_;
    std::string exchange_;
    hooks hooks_;
    letterbox::relay_options relay_options_;
    letterbox::message_id_generator ids_;
    std::unique_ptr<relay_type> relay_;
    std::uint64_t relay_generation_ = 0;
    std::function<void()> relay_done_;
    letterbox::relay_counters finished_{};
    std::size_t crashes_ = 0;
    std::size_t publish_failures_ = 0;
    std::size_t republished_ = 0;
};

} // namespace demo
