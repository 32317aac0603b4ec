// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of server_state (included by server_state.hpp): the accept loop and the routes.

#include <letterbox/ops/detail/server_state.hpp>

#include <letterbox/detail/rfc3339.hpp>
#include <letterbox/dlq/dead_letter_filter.hpp>
#include <letterbox/dlq/page.hpp>
#include <letterbox/error.hpp>
#include <letterbox/message.hpp>
#include <letterbox/ops/detail/constant_time_equal.hpp>
#include <letterbox/ops/detail/dashboard_page.hpp>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <exception>
#include <string_view>

namespace letterbox::ops::detail {

// ---- listening and accepting -------------------------------------------------------------

inline std::error_code server_state::listen() {
    namespace ip = boost::asio::ip;
    if (listening_ || stopped())
        return make_error_code(errc::invalid_state);
    boost::system::error_code ec;
    const auto address = ip::make_address(options_.address, ec);
    if (ec)
        return ec;
    const ip::tcp::endpoint ep{address, options_.port};
    acceptor_.open(ep.protocol(), ec);
    if (!ec)
        acceptor_.set_option(boost::asio::socket_base::reuse_address(true), ec);
    if (!ec)
        acceptor_.bind(ep, ec);
    if (!ec)
        acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
    if (!ec)
        endpoint_ = acceptor_.local_endpoint(ec);
    if (ec) {
        boost::system::error_code ignored;
        acceptor_.close(ignored);
        return ec;
    }
    listening_ = true;
    log("ops http: listening on " + endpoint_.address().to_string() + ":" +
        std::to_string(endpoint_.port()));
    boost::asio::dispatch(strand_, [self = shared_from_this()] { self->accept(); });
    return {};
}

inline void server_state::accept() {
    if (stopped() || !acceptor_.is_open())
        return;
    acceptor_.async_accept(strand_, [self = shared_from_this()](boost::system::error_code ec,
                                                                boost::asio::ip::tcp::socket s) {
        self->on_accept(ec, std::move(s));
    });
}

inline void server_state::on_accept(boost::system::error_code ec,
                                    boost::asio::ip::tcp::socket socket) {
    if (stopped() || !acceptor_.is_open())
        return;
    if (ec) {
        // Out of descriptors and the like: try again a little later rather than spin.
        log("ops http: accept failed: " + ec.message());
        retry_.expires_after(std::chrono::milliseconds{100});
        retry_.async_wait([self = shared_from_this()](boost::system::error_code e) {
            if (!e)
                self->accept();
        });
        return;
    }
    if (sessions_.size() >= options_.max_connections) {
        log("ops http: connection refused: max_connections (" +
            std::to_string(options_.max_connections) + ") reached");
        boost::system::error_code ignored;
        socket.close(ignored);
        return accept();
    }
    const auto id = ++next_session_;
    auto s = std::make_shared<http_session>(shared_from_this(), std::move(socket), id);
    sessions_.emplace(id, s);
    s->start();
    accept();
}

inline void server_state::stop() {
    stopped_.store(true, std::memory_order_release);
    boost::asio::dispatch(strand_, [self = shared_from_this()] { self->close_all(); });
}

inline void server_state::close_all() {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    retry_.cancel();
    std::vector<std::shared_ptr<http_session>> live;
    for (auto& [id, weak] : sessions_)
        if (auto s = weak.lock())
            live.push_back(std::move(s));
    for (auto& s : live)
        s->close();
}

inline void server_state::add_dlq(std::shared_ptr<dlq_endpoint> e) {
    if (find_dlq(e->queue()))
        throw letterbox::error(errc::invalid_argument, "http_server: dead-letter queue '" +
                                                           e->queue() + "' is already registered");
    dlqs_.push_back(std::move(e));
}

inline dlq_endpoint* server_state::find_dlq(const std::string& queue) const {
    for (const auto& e : dlqs_)
        if (e->queue() == queue)
            return e.get();
    return nullptr;
}

// ---- helpers for the routes --------------------------------------------------------------

namespace route {

inline std::string json_string(std::string_view s) {
    return nlohmann::json(std::string(s))
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

inline response bad_parameter(std::string_view name, std::string_view what) {
    return error_response(status::bad_request, "bad_parameter",
                          "query parameter " + json_string(name) + ": " + std::string(what));
}

inline response method_not_allowed(std::string_view allow) {
    auto r = error_response(status::method_not_allowed, "method_not_allowed",
                            "this resource supports " + std::string(allow) + " only");
    r.set(boost::beast::http::field::allow, allow);
    return r;
}

inline response unknown_queue(const std::string& queue) {
    return error_response(status::not_found, "unknown_queue",
                          "no dead-letter queue " + json_string(queue) +
                              " is registered with this server (GET /queues lists them)");
}

/// The status and body of a failed dead-letter or store operation.
inline response operation_failed(std::error_code ec, std::string_view what) {
    if (ec == errc::not_found)
        return error_response(status::not_found, "queue_not_found",
                              std::string(what) + ": the broker has no such queue");
    return error_response(status::service_unavailable, "operation_failed",
                          std::string(what) + " failed: " + ec.message() +
                              "; nothing was lost, try again");
}

/// A decimal count in `[min, max]` (larger values are clamped to `max`).
inline std::optional<std::size_t> parse_count(std::string_view text, std::size_t min,
                                              std::size_t max) {
    std::uint64_t v = 0;
    const auto* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec == std::errc::invalid_argument || p != end)
        return std::nullopt;
    if (ec == std::errc::result_out_of_range)
        return max;
    if (v < min)
        return std::nullopt;
    return static_cast<std::size_t>(std::min<std::uint64_t>(v, max));
}

inline constexpr std::size_t max_limit = 1000;

/// The filter members of a query string, as the JSON `dead_letter_filter::from_json` reads:
/// reason, exception_type, message_type, since, until, header.<name>, id (repeatable). Other
/// parameters go to `other(name, value)`, which returns false to refuse them (and sets
/// `refused`).
template <class Other>
std::optional<nlohmann::json> filter_json(const parsed_target& t, Other&& other,
                                          std::optional<response>& refused) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [name, value] : t.params) {
        if (name == "reason" || name == "exception_type" || name == "message_type" ||
            name == "since" || name == "until") {
            if (j.contains(name)) {
                refused = bad_parameter(name, "given more than once");
                return std::nullopt;
            }
            j[name] = value;
        } else if (name.starts_with("header.") && name.size() > 7) {
            j["headers"][name.substr(7)] = value;
        } else if (name == "id") {
            j["ids"].push_back(value);
        } else if (!other(name, value)) {
            return std::nullopt;
        }
    }
    return j;
}

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

// ---- the routes --------------------------------------------------------------------------

inline void server_state::handle(const std::shared_ptr<http_session>& s, request req) {
    namespace http = boost::beast::http;
    const respond_fn respond = [s](response r) {
        s->respond(std::move(r));
    };
    if (stopped())
        return respond(
            error_response(status::service_unavailable, "stopping", "the server is stopping"));
    const auto target = parse_target(req.target());
    if (!target)
        return respond(error_response(status::bad_request, "bad_target",
                                      "the request target is not a valid path"));
    const auto& seg = target->segments;
    const auto method = req.method();
    const bool get = method == http::verb::get;

    if (seg.empty()) {
        if (!get)
            return respond(route::method_not_allowed("GET"));
        return respond(
            make_response(status::ok, "text/html; charset=utf-8", std::string(dashboard_page())));
    }
    if (seg[0] == "health" && seg.size() <= 2) {
        const bool live = seg.size() == 2 && seg[1] == "live";
        if (seg.size() == 2 && !live && seg[1] != "ready")
            return respond(error_response(status::not_found, "not_found",
                                          "no such resource: see /health/live, /health/ready"));
        if (!get)
            return respond(route::method_not_allowed("GET"));
        if (live)
            return respond(json_response(status::ok, {{"status", "live"}}));
        return get_readiness(respond);
    }
    if (seg[0] == "metrics" && seg.size() == 1) {
        if (!get)
            return respond(route::method_not_allowed("GET"));
        return get_metrics(respond);
    }
    if (seg[0] == "queues" && seg.size() == 1) {
        if (!get)
            return respond(route::method_not_allowed("GET"));
        return get_queues(respond);
    }
    if (seg[0] == "dlq" && seg.size() == 2) {
        if (get)
            return browse(seg[1], *target, respond);
        if (method != http::verb::delete_)
            return respond(route::method_not_allowed("GET, DELETE"));
        if (!authorized(req, respond))
            return;
        return purge(seg[1], *target, req, respond);
    }
    if (seg[0] == "dlq" && seg.size() == 3 && seg[2] == "replay") {
        if (method != http::verb::post)
            return respond(route::method_not_allowed("POST"));
        if (!authorized(req, respond))
            return;
        return replay(seg[1], req, respond);
    }
    if (seg[0] == "outbox" && seg.size() == 1) {
        if (!get)
            return respond(route::method_not_allowed("GET"));
        return get_outbox(*target, respond);
    }
    if (seg[0] == "outbox" && seg.size() == 3 && seg[2] == "retry") {
        if (method != http::verb::post)
            return respond(route::method_not_allowed("POST"));
        if (!authorized(req, respond))
            return;
        return retry_outbox(seg[1], respond);
    }
    respond(error_response(status::not_found, "not_found",
                           "no such resource: see /health, /metrics, /queues, /dlq/{queue}, "
                           "/outbox"));
}

// Mutations need `Authorization: Bearer <token>`. A missing and a wrong token get the same
// 401 (nothing tells them apart); no configured token disables mutations (403).
inline bool server_state::authorized(const request& req, const respond_fn& respond) const {
    if (options_.token.empty()) {
        respond(error_response(status::forbidden, "mutations_disabled",
                               "mutations are disabled: set http_server_options::token"));
        return false;
    }
    std::string_view given;
    if (const auto it = req.find(boost::beast::http::field::authorization); it != req.end()) {
        const std::string_view value = it->value();
        constexpr std::string_view scheme = "bearer ";
        if (value.size() > scheme.size() &&
            std::equal(scheme.begin(), scheme.end(), value.begin(), [](char a, char b) {
                return a == (b >= 'A' && b <= 'Z' ? static_cast<char>(b - 'A' + 'a') : b);
            }))
            given = value.substr(scheme.size());
    }
    // Compared even when there is none, so a missing header costs what a wrong one does.
    if (constant_time_equal(given, options_.token) && !given.empty())
        return true;
    auto r = error_response(status::unauthorized, "unauthorized",
                            "this operation needs the header 'Authorization: Bearer <token>' "
                            "with the token configured in http_server_options::token");
    r.set(boost::beast::http::field::www_authenticate, "Bearer");
    respond(std::move(r));
    return false;
}

inline void server_state::get_readiness(const respond_fn& respond) const {
    bool all = true;
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& [name, check] : checks_) {
        readiness r;
        try {
            r = check ? check() : readiness{false, "no check function"};
        } catch (const std::exception& e) {
            r = readiness{false, std::string("the check threw: ") + e.what()};
        } catch (...) {
            r = readiness{false, "the check threw"};
        }
        all = all && r.ok;
        checks.push_back({{"name", name}, {"ok", r.ok}, {"detail", r.detail}});
    }
    nlohmann::json body;
    body["status"] = all ? "ready" : "not_ready";
    body["checks"] = std::move(checks);
    respond(json_response(all ? status::ok : status::service_unavailable, body));
}

inline void server_state::get_metrics(const respond_fn& respond) const {
    if (!metrics_)
        return respond(error_response(status::not_found, "no_metrics",
                                      "no metrics are registered (http_server::set_metrics)"));
    std::string text;
    try {
        text = metrics_();
    } catch (const std::exception& e) {
        return respond(error_response(status::internal_server_error, "metrics_failed",
                                      std::string("rendering the metrics failed: ") + e.what()));
    } catch (...) {
        return respond(error_response(status::internal_server_error, "metrics_failed",
                                      "rendering the metrics failed"));
    }
    respond(make_response(status::ok, "text/plain; version=0.0.4; charset=utf-8", std::move(text)));
}

inline void server_state::get_queues(const respond_fn& respond) {
    if (dlqs_.empty())
        return respond(json_response(status::ok, {{"queues", nlohmann::json::array()}}));
    // One depth read per queue, all at once; the last one to complete responds.
    struct gather {
        nlohmann::json queues;
        std::size_t left;
        respond_fn respond;
    };
    auto g = std::make_shared<gather>();
    g->queues = nlohmann::json::array();
    g->left = dlqs_.size();
    g->respond = respond;
    for (std::size_t i = 0; i < dlqs_.size(); ++i)
        g->queues.push_back({{"queue", dlqs_[i]->queue()}, {"depth", nullptr}});
    for (std::size_t i = 0; i < dlqs_.size(); ++i)
        dlqs_[i]->depth([g, i](std::error_code ec, std::uint32_t depth) {
            auto& q = g->queues[i];
            if (ec)
                q["error"] = ec.message();
            else
                q["depth"] = depth;
            if (--g->left == 0)
                g->respond(json_response(status::ok, {{"queues", std::move(g->queues)}}));
        });
}

inline void server_state::browse(const std::string& queue, const parsed_target& t,
                                 const respond_fn& respond) {
    auto* e = find_dlq(queue);
    if (!e)
        return respond(route::unknown_queue(queue));
    dlq::page p;
    std::optional<response> refused;
    auto j = route::filter_json(
        t,
        [&](const std::string& name, const std::string& value) {
            if (name == "offset") {
                if (auto n = route::parse_count(value, 0, std::size_t(-1) / 2)) {
                    p.offset = *n;
                    return true;
                }
                refused = route::bad_parameter(name, "not a non-negative integer");
                return false;
            }
            if (name == "limit") {
                if (auto n = route::parse_count(value, 1, route::max_limit)) {
                    p.limit = *n;
                    return true;
                }
                refused = route::bad_parameter(name, "not an integer from 1 to 1000");
                return false;
            }
            refused = route::bad_parameter(
                name, "unknown; use reason, exception_type, message_type, since, until, "
                      "header.<name>, id, offset, limit");
            return false;
        },
        refused);
    if (!j)
        return respond(std::move(*refused));
    dlq::dead_letter_filter f;
    try {
        f = dlq::dead_letter_filter::from_json(*j);
    } catch (const std::exception& ex) {
        return respond(error_response(status::bad_request, "bad_filter", ex.what()));
    }
    e->browse(std::move(f), p,
              [respond, queue, p](std::error_code ec, std::vector<dlq::dead_letter_entry> entries) {
                  if (ec)
                      return respond(route::operation_failed(ec, "browsing " + queue));
                  nlohmann::json body;
                  body["queue"] = queue;
                  body["offset"] = p.offset;
                  body["limit"] = p.limit;
                  body["entries"] = nlohmann::json::array();
                  for (const auto& entry : entries)
                      body["entries"].push_back(entry.to_json());
                  respond(json_response(status::ok, body));
              });
}

inline void server_state::replay(const std::string& queue, const request& req,
                                 const respond_fn& respond) {
    auto* e = find_dlq(queue);
    if (!e)
        return respond(route::unknown_queue(queue));
    if (req.body().empty())
        return respond(error_response(status::bad_request, "empty_body",
                                      "the body is the filter of the messages to replay: send {} "
                                      "to replay every message"));
    auto j = nlohmann::json::parse(req.body(), nullptr, false);
    if (j.is_discarded())
        return respond(
            error_response(status::bad_request, "malformed_json", "the body is not valid JSON"));
    dlq::dead_letter_filter f;
    try {
        f = dlq::dead_letter_filter::from_json(j);
    } catch (const std::exception& ex) {
        return respond(error_response(status::bad_request, "bad_filter", ex.what()));
    }
    e->replay(std::move(f), [respond, queue](std::error_code ec, dlq::replay_result r) {
        if (ec)
            return respond(route::operation_failed(ec, "replaying " + queue + " (" +
                                                           std::to_string(r.replayed) +
                                                           " replayed before the failure)"));
        nlohmann::json body;
        body["replayed"] = r.replayed;
        body["failed"] = r.failed;
        body["skipped"] = r.skipped;
        body["failures"] = nlohmann::json::array();
        for (const auto& f : r.failures)
            body["failures"].push_back({{"id", f.id}, {"error", f.error.message()}});
        respond(json_response(status::ok, body));
    });
}

inline void server_state::purge(const std::string& queue, const parsed_target& t,
                                const request& req, const respond_fn& respond) {
    auto* e = find_dlq(queue);
    if (!e)
        return respond(route::unknown_queue(queue));
    bool all = false;
    std::optional<response> refused;
    auto from_query = route::filter_json(
        t,
        [&](const std::string& name, const std::string& value) {
            if (name == "all" && (value == "true" || value == "false")) {
                all = value == "true";
                return true;
            }
            refused = route::bad_parameter(
                name, name == "all" ? "use all=true"
                                    : "unknown; use reason, exception_type, message_type, since, "
                                      "until, header.<name>, id, all=true");
            return false;
        },
        refused);
    if (!from_query)
        return respond(std::move(*refused));
    nlohmann::json j = std::move(*from_query);
    if (!req.body().empty()) {
        if (!j.empty())
            return respond(error_response(status::bad_request, "ambiguous_filter",
                                          "give the filter in the query string or in the body, "
                                          "not both"));
        j = nlohmann::json::parse(req.body(), nullptr, false);
        if (j.is_discarded())
            return respond(error_response(status::bad_request, "malformed_json",
                                          "the body is not valid JSON"));
    }
    dlq::dead_letter_filter f;
    try {
        f = dlq::dead_letter_filter::from_json(j);
    } catch (const std::exception& ex) {
        return respond(error_response(status::bad_request, "bad_filter", ex.what()));
    }
    if (!f.has_criterion() && !all)
        return respond(error_response(status::bad_request, "no_criterion",
                                      "this would delete every message of the queue: give a "
                                      "filter, or add ?all=true to mean it"));
    e->purge(std::move(f), [respond, queue](std::error_code ec, std::size_t removed) {
        if (ec)
            return respond(route::operation_failed(ec, "purging " + queue));
        respond(json_response(status::ok, {{"removed", removed}}));
    });
}

inline void server_state::get_outbox(const parsed_target& t, const respond_fn& respond) {
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
    std::error_code ec;
    const auto stats = outbox_->stats(ec);
    std::vector<outbox_record> rows;
    const auto read = [&](outbox_status s) {
        outbox_query q;
        q.status = s;
        q.after_sequence = after;
        q.limit = limit;
        auto part = outbox_->list(q, ec);
        rows.insert(rows.end(), std::make_move_iterator(part.begin()),
                    std::make_move_iterator(part.end()));
    };
    if (!ec && only)
        read(*only);
    if (!ec && !only)
        read(outbox_status::pending);
    if (!ec && !only)
        read(outbox_status::parked);
    if (ec)
        return respond(error_response(status::service_unavailable, "store_error",
                                      "reading the outbox store failed: " + ec.message()));
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.sequence < b.sequence; });
    if (rows.size() > limit)
        rows.resize(limit);
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
    respond(json_response(status::ok, body));
}

inline void server_state::retry_outbox(const std::string& id_text, const respond_fn& respond) {
    if (!outbox_)
        return respond(error_response(status::not_found, "no_outbox",
                                      "no outbox store is registered (http_server::set_outbox)"));
    const auto id = parse_message_id(id_text);
    if (!id)
        return respond(
            error_response(status::bad_request, "bad_id", "the outbox row id is not a UUID"));
    const auto ec = outbox_->unpark(*id);
    if (ec == errc::record_not_found)
        return respond(error_response(status::not_found, "unknown_row",
                                      "the outbox holds no row with this id"));
    if (ec == errc::invalid_state) {
        std::error_code fec;
        const auto row = outbox_->find(*id, fec);
        const std::string now = row ? std::string(to_string(row->status)) : "not parked";
        return respond(error_response(status::conflict, "not_parked",
                                      "only a parked row can be retried; this one is " + now));
    }
    if (ec)
        return respond(error_response(status::service_unavailable, "store_error",
                                      "unparking the row failed: " + ec.message()));
    respond(json_response(status::ok, {{"id", letterbox::to_string(*id)}, {"status", "pending"}}));
}

} // namespace letterbox::ops::detail
