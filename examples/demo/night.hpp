// SPDX-License-Identifier: BSL-1.0
//
// One replay of the Friday night: the enrollment service behind its HTTP front door, the three
// downstream services, the load generator, and the faults of the plan, all on one io_context
// (one thread). `night<Transport>` builds it, `run()` plays it until everything has settled,
// `result()` counts effects in the downstream databases, `stop()` takes it down.
#pragma once

#include "downstream.hpp"
#include "driver.hpp"
#include "enrollment_service.hpp"
#include "flaky_link.hpp"
#include "http.hpp"
#include "report.hpp"
#include "scenario.hpp"

#include <letterbox/dlq/dead_letter_queue.hpp>
#include <letterbox/ops/letterbox_metrics.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/transport/async_declare_all.hpp>
#include <letterbox/transport/in_memory.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace demo {

/// Where the night runs: how to open a connection to the broker, and how to take the broker
/// out of reach.
template <class Transport>
struct backend {
    boost::asio::io_context* io = nullptr;
    std::function<std::unique_ptr<Transport>(const std::string& name)> connect;
    /// In memory: the outage takes this broker down (`go_down`), for everyone. Null on
    /// RabbitMQ: the outage cuts the enrollment service's link only.
    letterbox::in_memory::broker* broker = nullptr;
    /// Appended to exchange and queue names (RabbitMQ: unique per run, for shared brokers).
    std::string suffix{};
    /// `x-expires` of the queues (RabbitMQ), so that a shared broker forgets them.
    std::optional<std::chrono::milliseconds> expires{};
};

template <class Transport>
class night {
public:
    using service_type = enrollment_service<Transport>;

    night(backend<Transport> b, bool use_letterbox, const fault_plan& plan,
          const std::filesystem::path& dir, letterbox::steady_clock& clock,
          letterbox::ops::letterbox_metrics& metrics, std::uint64_t seed)
        : b_(std::move(b))
        , letterbox_(use_letterbox)
        , plan_(plan)
        , clock_(&clock)
        , mail_(plan.email_hiccups, plan.email_failures)
        , exchange_(std::string(use_letterbox ? "enrollments" : "enrollments.naive") + b_.suffix) {
        std::filesystem::create_directories(dir);
        service_transport_ = b_.connect("enrollment-service");
        link_ = std::make_unique<flaky_link<Transport>>(*service_transport_);
        link_->lose_confirm_if([this](const letterbox::message& m) {
            const auto n = nlohmann::json::parse(m.body).at("enrollment").get<std::size_t>();
            const bool lose =
                plan_.lost_confirms.count(n) != 0 && confirms_lost_for_.insert(n).second;
            if (lose)
                mark('L');
            return lose;
        });
        for (const auto& info : downstream_services)
            downstream_.push_back(std::make_unique<downstream<Transport>>(
                info, letterbox_, dir, b_.connect(info.id),
                std::string(letterbox_ ? "" : "naive.") + info.id + b_.suffix, clock, &mail_,
                metrics));

        letterbox::relay_options relay;
        relay.batch_size = 50;
        relay.window = 16;
        relay.lease = std::chrono::milliseconds(400); // a dead relay's rows wait this long
        relay.poll_interval = std::chrono::milliseconds(100);
        relay.transport_retry = {.initial = std::chrono::milliseconds(40),
                                 .multiplier = 2.0,
                                 .max = std::chrono::milliseconds(320),
                                 .jitter = 0.2};
        relay.seed = seed;
        relay.on_event = metrics.relay_observer();
        typename service_type::hooks hooks{
            .dies_after_commit =
                [this](std::int64_t id) {
                    const bool dies = plan_.crashes.count(static_cast<std::size_t>(id)) != 0;
                    if (dies)
                        mark('X');
                    return dies;
                },
            .canary =
                [this](std::int64_t id) {
                    return static_cast<std::size_t>(id) == plan_.poison;
                }};
        service_ = std::make_unique<service_type>(letterbox_, dir, *link_, clock, exchange_,
                                                  std::move(hooks), relay, seed);
    }

    night(const night&) = delete;
    night& operator=(const night&) = delete;

    service_type& service() noexcept { return *service_; }
    std::vector<std::unique_ptr<downstream<Transport>>>& downstreams() noexcept {
        return downstream_;
    }

    /// Declares the topology, starts the consumers and the service, sends the load, and runs
    /// until every event has been handled (or `deadline`). Returns false on a setup failure or
    /// a missed deadline, with the reason in `error()`.
    bool run(time_point deadline) {
        auto& io = *b_.io;
        const letterbox::topology::exchange x{.name = exchange_,
                                              .type = letterbox::topology::exchange_type::topic};
        if (auto ec = await(io, deadline, [&](auto h) { link_->async_declare(x, h); }))
            return failed("declare " + exchange_ + ": " + ec.message());
        for (auto& d : downstream_) {
            auto& t = d->transport();
            if (auto ec = await(io, deadline, [&](auto h) {
                    letterbox::topology::async_declare_all(t, d->queues(b_.expires), h);
                }))
                return failed("declare " + d->queue() + ": " + ec.message());
            const letterbox::topology::binding bind{exchange_, d->queue(), "enrollment.confirmed"};
            if (auto ec = await(io, deadline, [&](auto h) { t.async_bind(bind, h); }))
                return failed("bind " + d->queue() + ": " + ec.message());
            if (auto ec = await(io, deadline, [&](auto h) { d->async_start(h); }))
                return failed("consume " + d->queue() + ": " + ec.message());
        }
        http::http_server front(io.get_executor(),
                                [this](const http::request& req, http::responder r) {
                                    service_->handle(req, std::move(r));
                                });

        started_ = std::chrono::steady_clock::now();
        if (letterbox_)
            sample_lag();
        send(front.port(), 1);
        if (!run_until(io, deadline, [&] { return answered_ == plan_.enrollments; }))
            return failed("the load did not finish before the deadline");
        front.close();
        if (!settle(deadline))
            return failed("the run did not settle before the deadline");
        seconds_ =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
        sampling_ = false;
        return true;
    }

    /// Counts what happened, from the databases (and, for letterbox, the dead-letter queues).
    run_result result(time_point deadline) {
        run_result r;
        r.letterbox = letterbox_;
        r.seconds = seconds_;
        auto ids = query_pairs(service_->database(), "SELECT id, 1 FROM enrollments");
        r.committed = ids.size();
        r.confirmed = confirmed_;
        r.no_answer = no_answer_;
        r.other_answers = other_answers_;
        r.publish_failures = service_->publish_failures();
        r.crashes = service_->crashes();
        r.relay = service_->relay_totals();
        r.link_stored = link_->stored();
        r.confirms_lost = link_->confirms_lost();
        r.lag = lag_;
        r.markers = markers_;
        for (auto& d : downstream_) {
            consumer_outcome c;
            c.id = d->info().id;
            c.effect = d->info().effect;
            const auto s = d->stats();
            c.delivered = s.delivered;
            c.dropped = letterbox_ ? 0 : s.failed;
            c.redelivered = s.redelivered;
            c.absorbed = d->inbox_stats().duplicates;
            std::set<std::int64_t> in_dlq;
            if (letterbox_) {
                for (auto& e : browse(*d, deadline)) {
                    const auto body = nlohmann::json::parse(e.msg.body, nullptr, false);
                    const auto enrollment = body.is_object()
                                                ? body.value("enrollment", std::int64_t{0})
                                                : std::int64_t{0};
                    in_dlq.insert(enrollment);
                    r.dead_letters.push_back({d->dead_letter_queue(), enrollment, e.reason,
                                              e.exception_type, e.exception_message, e.attempts});
                }
            }
            c.in_dlq = in_dlq.size();
            const auto effects = d->effects();
            for (const auto& [id, one] : ids) {
                (void)one;
                auto it = effects.find(id);
                if (it == effects.end()) {
                    if (in_dlq.count(id) == 0) {
                        ++c.lost;
                        if (d->info().kind == service_kind::course_access)
                            r.access_denied.push_back(id);
                    }
                    continue;
                }
                ++c.with_effect;
                c.duplicate_effects += static_cast<std::size_t>(it->second - 1);
            }
            r.consumers.push_back(c);
        }
        return r;
    }

    /// Stops the relay, the consumers and the connections.
    void stop(time_point deadline) {
        auto& io = *b_.io;
        sampling_ = false;
        bool relay_stopped = false;
        service_->stop([&] { relay_stopped = true; });
        run_until(io, deadline, [&] { return relay_stopped; });
        for (auto& d : downstream_)
            await(io, deadline, [&](auto h) { d->async_stop(h); });
        for (auto& d : downstream_)
            await(io, deadline, [&](auto h) { d->transport().async_close(h); });
        await(io, deadline, [&](auto h) { service_transport_->async_close(h); });
    }

    const std::string& error() const noexcept { return error_; }

private:
    bool failed(std::string why) {
        error_ = std::move(why);
        return false;
    }

    double now_s() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    }
    void mark(char symbol) { markers_.push_back({now_s(), symbol}); }

    void outage(bool start) {
        mark(start ? 'D' : 'U');
        if (b_.broker)
            start ? b_.broker->go_down() : b_.broker->come_back();
        else
            start ? link_->cut() : link_->restore();
    }

    // The load generator: enrollment n starts `interval` after n - 1 did, or when n - 1 was
    // answered if that took longer (one request at a time, so the service numbers them 1..N).
    void send(std::uint16_t port, std::size_t n) {
        if (n > plan_.enrollments)
            return;
        if (n == plan_.outage_first)
            outage(true);
        const auto started = std::chrono::steady_clock::now();
        http::async_post_json(
            b_.io->get_executor(), port, "/enrollments", enrollment_request(n), 10s,
            [this, port, n, started](http::reply r) {
                ++answered_;
                if (r.error.empty() && r.status == 201)
                    ++confirmed_;
                else if (r.error.empty())
                    ++other_answers_;
                else
                    ++no_answer_;
                if (n == plan_.outage_last)
                    outage(false);
                const auto next = started + std::chrono::milliseconds(plan_.interval_ms);
                auto timer =
                    std::make_shared<boost::asio::steady_timer>(b_.io->get_executor(), next);
                timer->async_wait([this, timer, port, n](std::error_code) { send(port, n + 1); });
            });
    }

    // Every 20 ms: the age of the oldest unpublished event (the relay's lag).
    void sample_lag() {
        sampling_ = true;
        auto timer = std::make_shared<boost::asio::steady_timer>(b_.io->get_executor(), 20ms);
        timer->async_wait([this, timer](std::error_code) {
            if (!sampling_)
                return;
            std::error_code ec;
            const auto s = service_->outbox().stats(clock_->wall_now(), ec);
            if (!ec)
                lag_.push_back(
                    {now_s(),
                     std::chrono::duration<double, std::milli>(s.oldest_pending_age).count(),
                     s.pending});
            sample_lag();
        });
    }

    // Settled: every event the broker took has been handled by every consumer, and (letterbox)
    // the outbox is empty, nothing is in flight and nothing waits in a retry queue.
    bool settle(time_point deadline) {
        auto& io = *b_.io;
        auto quiet = [&] {
            for (auto& d : downstream_) {
                if (!d->idle() || d->stats().delivered < link_->stored())
                    return false;
            }
            if (!letterbox_)
                return true;
            std::error_code ec;
            const auto s = service_->outbox().stats(clock_->wall_now(), ec);
            return !ec && s.pending == 0 && service_->relay() &&
                   service_->relay()->counters().in_flight == 0;
        };
        while (run_until(io, deadline, quiet)) {
            bool empty = true;
            for (auto& d : downstream_) {
                for (const auto& q : d->transit_queues()) {
                    std::uint32_t depth = 0;
                    auto ec = await(io, deadline, [&](auto h) {
                        d->transport().async_queue_depth(
                            q, [&depth, h](std::error_code e, std::uint32_t n) mutable {
                                depth = n;
                                h(e);
                            });
                    });
                    empty = empty && !ec && depth == 0;
                }
            }
            if (empty && quiet())
                return true;
            run_until(io, std::min(deadline, std::chrono::steady_clock::now() + 20ms),
                      [] { return false; });
        }
        return false;
    }

    std::vector<letterbox::dlq::dead_letter_entry> browse(downstream<Transport>& d,
                                                          time_point deadline) {
        letterbox::dlq::dead_letter_queue<Transport> dead(d.transport(), d.dead_letter_queue());
        std::optional<std::vector<letterbox::dlq::dead_letter_entry>> entries;
        dead.async_browse(
            {}, {}, [&](std::error_code ec, std::vector<letterbox::dlq::dead_letter_entry> e) {
                if (ec)
                    std::fprintf(stderr, "browse %s: %s\n", d.dead_letter_queue().c_str(),
                                 ec.message().c_str());
                entries = std::move(e);
            });
        run_until(*b_.io, deadline, [&] { return entries.has_value(); });
        return entries.value_or(std::vector<letterbox::dlq::dead_letter_entry>{});
    }

    backend<Transport> b_;
    bool letterbox_;
    fault_plan plan_;
    letterbox::steady_clock* clock_;
    email_provider mail_;
    std::string exchange_;
    std::unique_ptr<Transport> service_transport_;
    std::unique_ptr<flaky_link<Transport>> link_;
    std::set<std::size_t> confirms_lost_for_;
    std::vector<std::unique_ptr<downstream<Transport>>> downstream_;
    std::unique_ptr<service_type> service_;

    std::chrono::steady_clock::time_point started_{};
    double seconds_ = 0;
    std::size_t answered_ = 0, confirmed_ = 0, no_answer_ = 0, other_answers_ = 0;
    bool sampling_ = false;
    std::vector<lag_sample> lag_;
    std::vector<marker> markers_;
    std::string error_;
};

} // namespace demo
