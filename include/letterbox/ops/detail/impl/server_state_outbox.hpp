// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of server_state (included by server_state.hpp when header-only, by
// <letterbox/ops/src.hpp> under LETTERBOX_SEPARATE_COMPILATION): the outbox routes, and the
// store calls they make on the store worker.

#include <letterbox/config.hpp>
#include <letterbox/ops/detail/server_state.hpp>

#include <letterbox/detail/rfc3339.hpp>
#include <letterbox/message.hpp>
#include <letterbox/ops/detail/route_support.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

// ---- the outbox routes -------------------------------------------------------------------

namespace route {

inline nlohmann::json to_json(const outbox_record& r) {
    nlohmann::json j;
    j["id"] = letterbox::to_string(r.msg.id);
    j["sequence"] = r.sequence;
    j["aggregate_type"] = r.aggregate_type;
    j["aggregate_id"] = r.aggregate_id;
    j["event_type"] = r.msg.type;
    j["exchange"] = r.msg.exchange;
    j["routing_key"] = r.msg.routing_key;
    j["status"] = to_string(r.status);
    j["attempts"] = r.attempts;
    j["last_error"] = r.last_error;
    j["created_at"] = letterbox::detail::format_rfc3339(r.created_at);
    j["next_attempt_at"] = letterbox::detail::format_rfc3339(r.next_attempt_at);
    return j;
}

} // namespace route

template <class Result>
void server_state::call_store(const respond_fn& respond,
                              std::function<Result(outbox_endpoint&)> work,
                              std::function<void(Result)> done) {
    call_worker<Result>(
        respond, "the outbox store",
        "the database may be locked by another process. The operation may still complete: GET "
        "/outbox shows the rows as they are",
        [endpoint = outbox_, work = std::move(work)] { return work(*endpoint); }, std::move(done));
}

template <class Result>
void server_state::call_worker(const respond_fn& respond, std::string_view what,
                               std::string_view why_late, std::function<Result()> work,
                               std::function<void(Result)> done) {
    // More calls than this waiting means the store is stuck: say so at once instead of
    // queueing more behind it.
    constexpr std::size_t max_store_calls = 8;
    const std::string name(what);
    if (store_calls_ >= max_store_calls)
        return respond(
            route::busy("store_busy", std::to_string(store_calls_) +
                                          " store calls are still running (the outbox database may "
                                          "be locked by another process); try again"));
    struct call {
        bool answered = false;
        boost::asio::steady_timer timer;
        explicit call(const strand_type& s)
            : timer(s) {}
    };
    auto c = std::make_shared<call>(strand_);
    c->timer.expires_after(options_.store_timeout);
    c->timer.async_wait(
        [c, respond,
         late = name + " did not answer within " + std::to_string(options_.store_timeout.count()) +
                " ms (store_timeout): " + std::string(why_late)](boost::system::error_code ec) {
            if (ec || c->answered)
                return;
            c->answered = true;
            respond(route::busy("store_busy", late));
        });
    ++store_calls_;
    auto task = [self = shared_from_this(), work = std::move(work), done = std::move(done), respond,
                 c, name]() mutable {
        std::optional<Result> r;
        try {
            r.emplace(work());
        } catch (...) {
        }
        // Everything that leads back to the server moves into the handler posted to the
        // strand: nothing of it is released on this thread (see store_worker).
        auto ex = self->strand_;
        boost::asio::post(ex, [self = std::move(self), done = std::move(done),
                               respond = std::move(respond), c = std::move(c), r = std::move(r),
                               name = std::move(name)]() mutable {
            --self->store_calls_;
            c->timer.cancel();
            if (c->answered) {
                self->log("ops http: a call of " + name + " completed after its request got 503");
                return;
            }
            c->answered = true;
            if (!r)
                return respond(error_response(status::internal_server_error, "store_error",
                                              name + " call failed"));
            done(std::move(*r));
        });
    };
    if (!store_worker_->post(std::move(task))) {
        --store_calls_;
        c->answered = true;
        c->timer.cancel();
        respond(error_response(status::service_unavailable, "stopping", "the server is stopping"));
    }
}

LETTERBOX_DECL void server_state::get_outbox(const parsed_target& t, const respond_fn& respond) {
    if (!outbox_)
        return respond(error_response(status::not_found, "no_outbox",
                                      "no outbox store is registered (http_server::set_outbox)"));
    std::optional<outbox_status> only;
    std::uint64_t after = 0;
    std::size_t limit = 100;
    for (const auto& [name, value] : t.params) {
        if (name == "status") {
            if (value == "pending")
                only = outbox_status::pending;
            else if (value == "parked")
                only = outbox_status::parked;
            else if (value == "published")
                only = outbox_status::published;
            else
                return respond(route::bad_parameter(name, "use pending, parked or published"));
        } else if (name == "after") {
            auto n = route::parse_count(value, 0, std::size_t(-1));
            if (!n)
                return respond(route::bad_parameter(name, "not a sequence number"));
            after = *n;
        } else if (name == "limit") {
            auto n = route::parse_count(value, 1, route::max_limit);
            if (!n)
                return respond(route::bad_parameter(name, "not an integer from 1 to 1000"));
            limit = *n;
        } else {
            return respond(route::bad_parameter(name, "unknown; use status, after, limit"));
        }
    }
    struct listing {
        std::error_code ec;
        outbox_stats stats;
        std::vector<outbox_record> rows;
    };
    const auto now = outbox_->now();
    call_store<listing>(
        respond,
        [only, after, limit, now](outbox_endpoint& store) {
            listing out;
            out.stats = store.stats(now, out.ec);
            const auto read = [&](outbox_status s) {
                outbox_query q;
                q.status = s;
                q.after_sequence = after;
                q.limit = limit;
                auto part = store.list(q, out.ec);
                out.rows.insert(out.rows.end(), std::make_move_iterator(part.begin()),
                                std::make_move_iterator(part.end()));
            };
            if (!out.ec && only)
                read(*only);
            if (!out.ec && !only)
                read(outbox_status::pending);
            if (!out.ec && !only)
                read(outbox_status::parked);
            return out;
        },
        [self = shared_from_this(), respond, limit](listing l) {
            if (l.ec == errc::store_busy)
                return respond(route::busy("store_busy", "reading the outbox store failed: " +
                                                             l.ec.message() + "; try again"));
            if (l.ec)
                return respond(
                    error_response(status::service_unavailable, "store_error",
                                   "reading the outbox store failed: " + l.ec.message()));
            auto& rows = l.rows;
            std::sort(rows.begin(), rows.end(),
                      [](const auto& a, const auto& b) { return a.sequence < b.sequence; });
            if (rows.size() > limit)
                rows.resize(limit);
            const auto& stats = l.stats;
            nlohmann::json body;
            body["stats"] = {{"pending", stats.pending},
                             {"leased", stats.leased},
                             {"parked", stats.parked},
                             {"published", stats.published},
                             {"oldest_pending_age_seconds",
                              std::chrono::duration<double>(stats.oldest_pending_age).count()}};
            body["rows"] = nlohmann::json::array();
            for (const auto& r : rows)
                body["rows"].push_back(route::to_json(r));
            self->respond_within_budget(respond, json_response(status::ok, body));
        });
}

LETTERBOX_DECL void server_state::retry_outbox(const std::string& id_text,
                                               const respond_fn& respond) {
    if (!outbox_)
        return respond(error_response(status::not_found, "no_outbox",
                                      "no outbox store is registered (http_server::set_outbox)"));
    const auto id = parse_message_id(id_text);
    if (!id)
        return respond(
            error_response(status::bad_request, "bad_id", "the outbox row id is not a UUID"));
    struct outcome {
        std::error_code ec;
        std::optional<outbox_status> now_status;
    };
    const auto now = outbox_->now();
    call_store<outcome>(
        respond,
        [id = *id, now](outbox_endpoint& store) {
            outcome out;
            out.ec = store.unpark(id, now);
            if (out.ec == errc::invalid_state) {
                std::error_code fec;
                if (const auto row = store.find(id, fec))
                    out.now_status = row->status;
            }
            return out;
        },
        [respond, id = *id](outcome o) {
            if (o.ec == errc::record_not_found)
                return respond(error_response(status::not_found, "unknown_row",
                                              "the outbox holds no row with this id"));
            if (o.ec == errc::invalid_state) {
                const std::string now =
                    o.now_status ? std::string(to_string(*o.now_status)) : "not parked";
                return respond(
                    error_response(status::conflict, "not_parked",
                                   "only a parked row can be retried; this one is " + now));
            }
            if (o.ec == errc::store_busy)
                return respond(route::busy(
                    "store_busy", "unparking the row failed: " + o.ec.message() + "; try again"));
            if (o.ec)
                return respond(error_response(status::service_unavailable, "store_error",
                                              "unparking the row failed: " + o.ec.message()));
            respond(json_response(status::ok,
                                  {{"id", letterbox::to_string(id)}, {"status", "pending"}}));
        });
}

} // namespace letterbox::ops::detail
