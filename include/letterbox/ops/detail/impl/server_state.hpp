// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of server_state (included by server_state.hpp): the options' checks, the accept
// loop with its room-making at the cap, and the routes.

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
#include <boost/asio/ip/address_v4.hpp>
#include <boost/asio/ip/address_v6.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <exception>
#include <iterator>
#include <string_view>

namespace letterbox::ops::detail {

// ---- options, listening and accepting ---------------------------------------------------

namespace route {

/// `a` with an IPv4-mapped IPv6 address (a dual-stack socket's view of an IPv4 peer) as IPv4.
inline boost::asio::ip::address unmapped(const boost::asio::ip::address& a) {
    namespace ip = boost::asio::ip;
    if (a.is_v6() && a.to_v6().is_v4_mapped())
        return ip::make_address_v4(ip::v4_mapped, a.to_v6());
    return a;
}

inline bool is_loopback(const boost::asio::ip::address& a) {
    return unmapped(a).is_loopback();
}

/// The address `http_server_options::address` names: an IP address, or localhost.
inline boost::asio::ip::address parse_listen_address(const std::string& text) {
    if (text == "localhost")
        return boost::asio::ip::make_address_v4("127.0.0.1");
    boost::system::error_code ec;
    const auto a = boost::asio::ip::make_address(text, ec);
    if (!ec)
        return a;
    std::string message = "http_server_options::address '" + text +
                          "' is not an IP address: give an IPv4 or IPv6 address (127.0.0.1, "
                          "::1, 0.0.0.0, ::) or localhost; host names are not resolved";
    if (text.find(':') != std::string::npos)
        message += " (the port goes in http_server_options::port)";
    throw letterbox::error(errc::invalid_argument, message);
}

} // namespace route

inline server_state::server_state(boost::asio::any_io_executor ex, http_server_options o)
    : strand_(boost::asio::make_strand(ex))
    , options_(std::move(o))
    , address_(route::parse_listen_address(options_.address))
    , acceptor_(strand_)
    , retry_(strand_) {
    const auto shown = address_.to_string();
    const bool loopback = route::is_loopback(address_);
    if (options_.max_connections == 0)
        throw letterbox::error(errc::invalid_argument,
                               "http_server_options::max_connections must be at least 1");
    if (options_.loopback_reads_without_token && !loopback)
        throw letterbox::error(errc::invalid_argument,
                               "http_server_options::loopback_reads_without_token is only for a "
                               "loopback address, and " +
                                   shown +
                                   " is not one: set http_server_options::token and send it");
    if (!loopback && options_.token.empty()) {
        if (!options_.allow_non_loopback_without_token)
            throw letterbox::error(
                errc::invalid_argument,
                "http_server_options::address " + shown +
                    " is not a loopback address and http_server_options::token is empty: "
                    "anyone who reaches the port could read the queue names, the outbox rows "
                    "and the metrics. Set a token, listen on 127.0.0.1, or set "
                    "allow_non_loopback_without_token if a protected network stands in front "
                    "of the server");
        log("ops http: warning: listening on " + shown +
            " without a token (allow_non_loopback_without_token): the queue names, the outbox "
            "rows and the metrics are open to anyone who reaches the port; message bodies and "
            "mutations stay disabled");
    }
}

inline std::error_code server_state::listen() {
    namespace ip = boost::asio::ip;
    if (listening_ || stopped())
        return make_error_code(errc::invalid_state);
    boost::system::error_code ec;
    const ip::tcp::endpoint ep{address_, options_.port};
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
        log("ops http: cannot listen on " + address_.to_string() + " port " +
            std::to_string(options_.port) + ": " + ec.message());
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

// At the cap, the connection that costs least to lose: one closing anyway, then one kept alive
// between requests, then one that has sent nothing, then the oldest half-sent request (a
// probe's request arrives at once, so a slow one is the likelier attacker). Never one whose
// request is being handled or answered.
inline std::shared_ptr<http_session> server_state::pick_victim() const {
    using phase = http_session::phase;
    const auto rank = [](phase p) {
        switch (p) {
        case phase::closing:
            return 0;
        case phase::idle:
            return 1;
        case phase::waiting_first:
            return 2;
        case phase::reading:
            return 3;
        case phase::busy:
            break;
        }
        return 4;
    };
    std::shared_ptr<http_session> victim;
    for (const auto& [id, weak] : sessions_) {
        auto s = weak.lock();
        if (!s || !s->is_open() || rank(s->current_phase()) == 4)
            continue;
        if (!victim || rank(s->current_phase()) < rank(victim->current_phase()) ||
            (rank(s->current_phase()) == rank(victim->current_phase()) &&
             s->phase_since() < victim->phase_since()))
            victim = std::move(s);
    }
    return victim;
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
    std::size_t open = 0;
    std::size_t reserved = 0;
    for (const auto& [id, weak] : sessions_)
        if (auto s = weak.lock(); s && s->is_open())
            ++(s->reserve() ? reserved : open);
    bool reserve = false;
    if (open >= options_.max_connections) {
        if (auto victim = pick_victim()) {
            const char* name = "a silent";
            switch (victim->current_phase()) {
            case http_session::phase::closing:
                name = "a closing";
                break;
            case http_session::phase::idle:
                name = "an idle";
                break;
            case http_session::phase::reading:
                name = "a half-sent request's";
                break;
            default:
                break;
            }
            victim->close();
            log("ops http: closed " + std::string(name) +
                " connection to make room: max_connections (" +
                std::to_string(options_.max_connections) + ") reached");
            if (victim->reserve())
                --reserved;
            else
                --open;
        }
        if (open >= options_.max_connections) {
            if (reserved >= options_.reserved_connections) {
                log("ops http: connection refused: max_connections (" +
                    std::to_string(options_.max_connections) +
                    ") reached, every connection busy and the reserved ones taken");
                boost::system::error_code ignored;
                socket.close(ignored);
                return accept();
            }
            reserve = true;
        }
    }
    const auto id = ++next_session_;
    auto s = std::make_shared<http_session>(shared_from_this(), std::move(socket), id, reserve);
    sessions_.emplace(id, s);
    s->start();
    accept();
}

inline void server_state::stop() {
    stopped_.store(true, std::memory_order_release);
    boost::asio::dispatch(strand_, [self = shared_from_this()] { self->close_all(); });
}

inline void server_state::shutdown_store() {
    if (store_worker_)
        store_worker_->shutdown();
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

inline void server_state::set_outbox(std::shared_ptr<outbox_endpoint> e) {
    outbox_ = std::move(e);
    // Two threads: a write blocked on a locked database does not hold up the reads, which
    // SQLite's WAL serves without the lock.
    if (!store_worker_)
        store_worker_ = std::make_shared<store_worker>(2);
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

/// A 503 that tells the client to come back: the server is busy, not broken.
inline response busy(std::string_view code, std::string message, int retry_after_seconds = 1) {
    auto r = error_response(status::service_unavailable, code, message);
    r.set(boost::beast::http::field::retry_after, std::to_string(retry_after_seconds));
    return r;
}

/// What a replay or a purge acts on: the filter (from the query string or the body, not both)
/// and whether the caller asked for the whole queue (`?all=true`). Anything else in the query
/// string is refused.
struct selection {
    dlq::dead_letter_filter filter{};
    bool all = false;
};

inline std::optional<selection> read_selection(const parsed_target& t, const request& req,
                                               std::optional<response>& refused) {
    selection out;
    auto from_query = filter_json(
        t,
        [&](const std::string& name, const std::string& value) {
            if (name == "all" && (value == "true" || value == "false")) {
                out.all = value == "true";
                return true;
            }
            refused = bad_parameter(
                name, name == "all" ? "use all=true"
                                    : "unknown; use reason, exception_type, message_type, since, "
                                      "until, header.<name>, id, all=true");
            return false;
        },
        refused);
    if (!from_query)
        return std::nullopt;
    nlohmann::json j = std::move(*from_query);
    if (!req.body().empty()) {
        if (!j.empty()) {
            refused = error_response(status::bad_request, "ambiguous_filter",
                                     "give the filter in the query string or in the body, not "
                                     "both");
            return std::nullopt;
        }
        j = nlohmann::json::parse(req.body(), nullptr, false);
        if (j.is_discarded()) {
            refused =
                error_response(status::bad_request, "malformed_json", "the body is not valid JSON");
            return std::nullopt;
        }
    }
    try {
        out.filter = dlq::dead_letter_filter::from_json(j);
    } catch (const std::exception& ex) {
        refused = error_response(status::bad_request, "bad_filter", ex.what());
        return std::nullopt;
    }
    return out;
}

/// The key that names an entry in URLs and `ids` filters: its handle, which names exactly that
/// entry (its id names every copy of the message, and an entry without an id has none).
inline std::string entry_key(const nlohmann::json& entry) {
    if (const auto it = entry.find("handle");
        it != entry.end() && it->is_string() && !it->get_ref<const std::string&>().empty())
        return it->get<std::string>();
    return entry.value("id", std::string());
}

inline std::string message_url(const std::string& queue, const std::string& key) {
    return "/dlq/" + percent_encode(queue) + "/messages/" + percent_encode(key);
}

/// The JSON of `e` for a listing: its body cut to `max_body` bytes (at a character boundary:
/// a cut inside a UTF-8 sequence is moved before it), with `body_truncated`, `body_bytes` and
/// `message_url`. The encoding (`body_encoding`) is that of what is shown.
inline nlohmann::json listing_json(dlq::dead_letter_entry& e, const std::string& queue,
                                   std::size_t max_body) {
    const auto size = e.msg.body.size();
    const bool cut = size > max_body;
    if (cut) {
        std::size_t at = max_body;
        for (int back = 0;
             back < 3 && at > 0 && (static_cast<unsigned char>(e.msg.body[at]) & 0xC0) == 0x80;
             ++back)
            --at;
        e.msg.body.resize(at);
        e.msg.body.shrink_to_fit();
    }
    auto j = e.to_json();
    j["body_truncated"] = cut;
    j["body_bytes"] = size;
    j["message_url"] = message_url(queue, entry_key(j));
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
    const bool health = !seg.empty() && seg[0] == "health" && seg.size() <= 2;

    // Health answers any Host and on any connection: probes and load balancers name the
    // server as they please, and it shows no message.
    if (!health) {
        if (s->reserve()) {
            s->close_after_response();
            return respond(route::busy("busy",
                                       "every connection is busy: this one, held in reserve "
                                       "for the health probes, serves /health only"));
        }
        if (!host_allowed(req, s->local_address()))
            return respond(error_response(
                status::misdirected_request, "unknown_host",
                "the Host header names neither this server's address nor an allowed host: add "
                "the name the clients use to http_server_options::allowed_hosts"));
    }

    if (seg.empty()) {
        if (!get)
            return respond(route::method_not_allowed("GET"));
        return respond(
            make_response(status::ok, "text/html; charset=utf-8", std::string(dashboard_page())));
    }
    if (health) {
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
        if (get) {
            if (!authorized_read(req, respond))
                return;
            return browse(seg[1], *target, respond);
        }
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
        return replay(seg[1], *target, req, respond);
    }
    if (seg[0] == "dlq" && seg.size() == 4 && seg[2] == "messages") {
        if (!get)
            return respond(route::method_not_allowed("GET"));
        if (!authorized_read(req, respond))
            return;
        return get_message(seg[1], seg[3], *target, respond);
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

// DNS rebinding: a web page whose name the attacker points at this server's address is the
// same origin as the server for the browser, which then lets it read the answers; its requests
// name the attacker's host. So a request must name this server: its address (as bound, or as
// the connection reached it, which is what a probe uses for a server bound to 0.0.0.0),
// localhost on a loopback connection (only local processes can use that name), or a
// configured name. The port is not compared: proxies and port-forwards change it.
inline bool server_state::host_allowed(const request& req,
                                       const boost::asio::ip::address& local) const {
    const auto it = req.find(boost::beast::http::field::host);
    if (it == req.end())
        return false;
    std::string_view host = it->value();
    if (host.starts_with('[')) {
        const auto close = host.find(']');
        if (close == std::string_view::npos)
            return false;
        host = host.substr(1, close - 1);
    } else if (const auto colon = host.find(':'); colon != std::string_view::npos) {
        host = host.substr(0, colon);
    }
    if (host.empty())
        return false;
    std::string lower(host);
    for (auto& c : lower)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    if (lower == "localhost")
        return route::is_loopback(local);
    boost::system::error_code ec;
    if (const auto named = boost::asio::ip::make_address(lower, ec); !ec) {
        const auto a = route::unmapped(named);
        if (a == route::unmapped(local) ||
            (!address_.is_unspecified() && a == route::unmapped(address_)))
            return true;
    }
    for (const auto& allowed : options_.allowed_hosts) {
        if (allowed.size() != lower.size())
            continue;
        bool same = true;
        for (std::size_t i = 0; i < lower.size() && same; ++i) {
            char c = allowed[i];
            if (c >= 'A' && c <= 'Z')
                c = static_cast<char>(c - 'A' + 'a');
            same = c == lower[i];
        }
        if (same)
            return true;
    }
    return false;
}

inline bool server_state::token_matches(const request& req) const {
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
    return constant_time_equal(given, options_.token) && !given.empty();
}

namespace route {

inline response unauthorized() {
    auto r = error_response(status::unauthorized, "unauthorized",
                            "this operation needs the header 'Authorization: Bearer <token>' "
                            "with the token configured in http_server_options::token");
    r.set(boost::beast::http::field::www_authenticate, "Bearer");
    return r;
}

} // namespace route

// Mutations need `Authorization: Bearer <token>`. A missing and a wrong token get the same
// 401 (nothing tells them apart); no configured token disables mutations (403).
inline bool server_state::authorized(const request& req, const respond_fn& respond) const {
    if (options_.token.empty()) {
        respond(error_response(status::forbidden, "mutations_disabled",
                               "mutations are disabled: set http_server_options::token"));
        return false;
    }
    if (token_matches(req))
        return true;
    respond(route::unauthorized());
    return false;
}

// Reads of message bodies (personal data, often) need the token as mutations do, unless a
// loopback dashboard opted out (the constructor refuses the opt-out on another address).
inline bool server_state::authorized_read(const request& req, const respond_fn& respond) const {
    if (options_.loopback_reads_without_token)
        return true;
    if (options_.token.empty()) {
        respond(error_response(status::forbidden, "reads_disabled",
                               "reading message bodies needs a token: set "
                               "http_server_options::token (or, for a dashboard on a loopback "
                               "address only, loopback_reads_without_token)"));
        return false;
    }
    if (token_matches(req))
        return true;
    respond(route::unauthorized());
    return false;
}

inline void server_state::respond_within_budget(const respond_fn& respond, response r) const {
    const auto n = r.body().size();
    const auto budget = options_.max_response_bytes_in_flight;
    if (n > budget || in_flight_ > budget - n)
        return respond(route::busy(
            "busy", "the server holds " + std::to_string(in_flight_) +
                        " bytes of responses not yet read by their clients, and this one (" +
                        std::to_string(n) + " bytes) would take it beyond " +
                        std::to_string(budget) + " (max_response_bytes_in_flight); try again"));
    respond(std::move(r));
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
    // The scan holds at most max_listing_bytes of bodies (plus one message), and the response
    // stays under it, bodies cut to previews.
    p.max_bytes = options_.max_listing_bytes;
    if (in_flight_ >= options_.max_response_bytes_in_flight)
        return respond(route::busy("busy", "the server holds as many bytes of responses not yet "
                                           "read by their clients as it may "
                                           "(max_response_bytes_in_flight); try again"));
    e->browse(std::move(f), p,
              [self = shared_from_this(), respond, queue,
               p](std::error_code ec, std::vector<dlq::dead_letter_entry> entries) {
                  if (ec)
                      return respond(route::operation_failed(ec, "browsing " + queue));
                  const auto max = self->options_.max_listing_bytes;
                  std::size_t bodies = 0;
                  for (const auto& entry : entries)
                      bodies += entry.msg.body.size();
                  const bool full = entries.size() >= p.limit || bodies >= p.max_bytes;
                  std::string out = R"({"queue":)" + route::json_string(queue) + R"(,"offset":)" +
                                    std::to_string(p.offset) + R"(,"limit":)" +
                                    std::to_string(p.limit) + R"(,"entries":[)";
                  // Room for the end: `],"next_offset":<20 digits>}`.
                  constexpr std::size_t tail = 40;
                  std::size_t shown = 0;
                  for (auto& entry : entries) {
                      auto text =
                          route::listing_json(entry, queue, self->options_.listing_body_bytes)
                              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
                      entry = {}; // free the message now
                      if (shown > 0 && out.size() + 1 + text.size() + tail > max)
                          break;
                      if (shown > 0)
                          out += ',';
                      out += text;
                      ++shown;
                  }
                  out += R"(],"next_offset":)";
                  out += shown < entries.size() || full ? std::to_string(p.offset + shown)
                                                        : std::string("null");
                  out += '}';
                  self->respond_within_budget(
                      respond, make_response(status::ok, "application/json", std::move(out)));
              });
}

inline void server_state::get_message(const std::string& queue, const std::string& key,
                                      const parsed_target& t, const respond_fn& respond) {
    auto* e = find_dlq(queue);
    if (!e)
        return respond(route::unknown_queue(queue));
    if (!t.params.empty())
        return respond(route::bad_parameter(t.params.front().first,
                                            "unknown; this resource takes no parameter"));
    dlq::dead_letter_filter f;
    try {
        nlohmann::json j;
        j["ids"] = nlohmann::json::array({key});
        f = dlq::dead_letter_filter::from_json(j);
    } catch (const std::exception& ex) {
        return respond(error_response(status::bad_request, "bad_filter", ex.what()));
    }
    if (in_flight_ >= options_.max_response_bytes_in_flight)
        return respond(route::busy("busy", "the server holds as many bytes of responses not yet "
                                           "read by their clients as it may "
                                           "(max_response_bytes_in_flight); try again"));
    e->browse(std::move(f), dlq::page{0, 1},
              [self = shared_from_this(), respond,
               queue](std::error_code ec, std::vector<dlq::dead_letter_entry> entries) {
                  if (ec)
                      return respond(route::operation_failed(ec, "reading " + queue));
                  if (entries.empty())
                      return respond(error_response(
                          status::not_found, "unknown_message",
                          "the dead-letter queue " + route::json_string(queue) +
                              " holds no message with this id or handle (any more)"));
                  auto j = route::listing_json(entries.front(), queue, std::size_t(-1));
                  entries.clear();
                  self->respond_within_budget(respond, json_response(status::ok, j));
              });
}

inline void server_state::replay(const std::string& queue, const parsed_target& t,
                                 const request& req, const respond_fn& respond) {
    auto* e = find_dlq(queue);
    if (!e)
        return respond(route::unknown_queue(queue));
    std::optional<response> refused;
    auto sel = route::read_selection(t, req, refused);
    if (!sel)
        return respond(std::move(*refused));
    if (!sel->filter.has_criterion() && !sel->all)
        return respond(error_response(status::bad_request, "no_criterion",
                                      "this would replay every message of the queue: give a "
                                      "filter (in the body or the query string), or add "
                                      "?all=true to mean it"));
    e->replay(std::move(sel->filter), [respond, queue](std::error_code ec, dlq::replay_result r) {
        if (ec)
            return respond(route::operation_failed(ec, "replaying " + queue + " (" +
                                                           std::to_string(r.replayed) +
                                                           " replayed before the failure)"));
        respond(json_response(status::ok, r.to_json()));
    });
}

inline void server_state::purge(const std::string& queue, const parsed_target& t,
                                const request& req, const respond_fn& respond) {
    auto* e = find_dlq(queue);
    if (!e)
        return respond(route::unknown_queue(queue));
    std::optional<response> refused;
    auto sel = route::read_selection(t, req, refused);
    if (!sel)
        return respond(std::move(*refused));
    if (!sel->filter.has_criterion() && !sel->all)
        return respond(error_response(status::bad_request, "no_criterion",
                                      "this would delete every message of the queue: give a "
                                      "filter, or add ?all=true to mean it"));
    e->purge(std::move(sel->filter), [respond, queue](std::error_code ec, std::size_t removed) {
        if (ec)
            return respond(route::operation_failed(ec, "purging " + queue));
        respond(json_response(status::ok, {{"removed", removed}}));
    });
}

template <class Result>
void server_state::call_store(const respond_fn& respond,
                              std::function<Result(outbox_endpoint&)> work,
                              std::function<void(Result)> done) {
    // More calls than this waiting means the store is stuck: say so at once instead of
    // queueing more behind it.
    constexpr std::size_t max_store_calls = 8;
    if (store_calls_ >= max_store_calls)
        return respond(
            route::busy("store_busy", std::to_string(store_calls_) +
                                          " outbox store calls are still running (the database may "
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
        [c, respond, timeout = options_.store_timeout](boost::system::error_code ec) {
            if (ec || c->answered)
                return;
            c->answered = true;
            respond(route::busy(
                "store_busy",
                "the outbox store did not answer within " + std::to_string(timeout.count()) +
                    " ms (store_timeout): the database may be locked by another process. The "
                    "operation may still complete: GET /outbox shows the rows as they are"));
        });
    ++store_calls_;
    auto task = [self = shared_from_this(), endpoint = outbox_, work = std::move(work),
                 done = std::move(done), respond, c]() mutable {
        std::optional<Result> r;
        try {
            r.emplace(work(*endpoint));
        } catch (...) {
        }
        // Everything that leads back to the server moves into the handler posted to the
        // strand: nothing of it is released on this thread (see store_worker).
        auto ex = self->strand_;
        boost::asio::post(ex, [self = std::move(self), done = std::move(done),
                               respond = std::move(respond), c = std::move(c),
                               r = std::move(r)]() mutable {
            --self->store_calls_;
            c->timer.cancel();
            if (c->answered) {
                self->log("ops http: an outbox store call completed after its request got 503");
                return;
            }
            c->answered = true;
            if (!r)
                return respond(error_response(status::internal_server_error, "store_error",
                                              "the outbox store call failed"));
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

inline void server_state::retry_outbox(const std::string& id_text, const respond_fn& respond) {
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
