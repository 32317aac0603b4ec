// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of server_state (included by server_state.hpp when header-only, by
// <letterbox/ops/src.hpp> under LETTERBOX_SEPARATE_COMPILATION): the dispatch of a request to its
// route, the checks of Host and token, the response budget, and the health and metrics routes.

#include <letterbox/config.hpp>
#include <letterbox/ops/detail/server_state.hpp>

#include <letterbox/causal_tree.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>

#include <letterbox/ops/detail/constant_time_equal.hpp>
#include <letterbox/ops/detail/dashboard_page.hpp>
#include <letterbox/ops/detail/listen_address.hpp>
#include <letterbox/ops/detail/route_support.hpp>

#include <boost/asio/ip/address.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

// ---- the routes --------------------------------------------------------------------------

LETTERBOX_DECL void server_state::handle(const std::shared_ptr<http_session>& s, request req) {
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
    if (seg[0] == "outbox" && seg.size() == 2 && seg[1] == "lag") {
        if (!get)
            return respond(route::method_not_allowed("GET"));
        return get_relay_lag(respond);
    }
    if (seg[0] == "consumers" && seg.size() == 1) {
        if (!get)
            return respond(route::method_not_allowed("GET"));
        return get_consumers(respond);
    }
    if (seg[0] == "topology" && seg.size() == 2 && seg[1] == "findings") {
        if (!get)
            return respond(route::method_not_allowed("GET"));
        return get_findings(respond);
    }
    if (seg[0] == "outbox" && seg.size() == 3 && seg[2] == "retry") {
        if (method != http::verb::post)
            return respond(route::method_not_allowed("POST"));
        if (!authorized(req, respond))
            return;
        return retry_outbox(seg[1], respond);
    }
    if (seg[0] == "conversations" && seg.size() == 2) {
        if (!get)
            return respond(route::method_not_allowed("GET"));
        return get_conversation(seg[1], respond);
    }
    respond(error_response(status::not_found, "not_found",
                           "no such resource: see /health, /metrics, /queues, /dlq/{queue}, "
                           "/outbox, /outbox/lag, /consumers, /topology/findings, "
                           "/conversations/{id}"));
}

// DNS rebinding: a web page whose name the attacker points at this server's address is the
// same origin as the server for the browser, which then lets it read the answers; its requests
// name the attacker's host. So a request must name this server: its address (as bound, or as
// the connection reached it, which is what a probe uses for a server bound to 0.0.0.0),
// localhost on a loopback connection (only local processes can use that name), or a
// configured name. The port is not compared: proxies and port-forwards change it.
LETTERBOX_DECL bool server_state::host_allowed(const request& req,
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

LETTERBOX_DECL bool server_state::token_matches(const request& req) const {
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
// A missing and a wrong token get the same 401 (nothing tells them apart); no configured token
// is a 403.
LETTERBOX_DECL bool server_state::token_given(const request& req, const respond_fn& respond,
                                              std::string_view code,
                                              std::string_view no_token) const {
    if (options_.token.empty()) {
        respond(error_response(status::forbidden, code, no_token));
        return false;
    }
    if (token_matches(req))
        return true;
    respond(route::unauthorized());
    return false;
}

// Mutations need `Authorization: Bearer <token>`; no configured token disables them.
LETTERBOX_DECL bool server_state::authorized(const request& req, const respond_fn& respond) const {
    return token_given(req, respond, "mutations_disabled",
                       "mutations are disabled: set http_server_options::token");
}

// Reads of message bodies (personal data, often) need the token as mutations do, unless a
// loopback dashboard opted out (the constructor refuses the opt-out on another address).
LETTERBOX_DECL bool server_state::authorized_read(const request& req,
                                                  const respond_fn& respond) const {
    if (options_.loopback_reads_without_token)
        return true;
    return token_given(req, respond, "reads_disabled",
                       "reading message bodies needs a token: set "
                       "http_server_options::token (or, for a dashboard on a loopback "
                       "address only, loopback_reads_without_token)");
}

LETTERBOX_DECL void server_state::respond_within_budget(const respond_fn& respond,
                                                        response r) const {
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

LETTERBOX_DECL bool server_state::budget_spent(const respond_fn& respond) const {
    if (in_flight_ < options_.max_response_bytes_in_flight)
        return false;
    respond(route::busy("busy", "the server holds as many bytes of responses not yet read by their "
                                "clients as it may (max_response_bytes_in_flight); try again"));
    return true;
}

LETTERBOX_DECL void server_state::get_readiness(const respond_fn& respond) const {
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

LETTERBOX_DECL void server_state::get_metrics(const respond_fn& respond) const {
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

// A conversation's messages, from the trail: metadata only (ids, types, causes, routing), as
// /queues and /outbox show, never a body or a header's value besides the tracing ones. The
// trail's capacity bounds the messages, and the listing limit the tree's text.
LETTERBOX_DECL void server_state::get_conversation(const std::string& id,
                                                   const respond_fn& respond) const {
    if (!conversations_)
        return respond(error_response(status::not_found, "no_message_trail",
                                      "no message trail is registered "
                                      "(http_server::set_message_trail)"));
    const auto parsed = parse_message_id(id);
    if (!parsed)
        return respond(error_response(status::bad_request, "bad_conversation_id",
                                      "a conversation id is a message id (a UUID)"));
    if (budget_spent(respond))
        return;
    const auto key = letterbox::to_string(*parsed);
    const auto messages = conversations_(key);
    nlohmann::json list = nlohmann::json::array();
    const auto text = [](const message& m, std::string_view name) -> nlohmann::json {
        if (const auto value = m.headers.get<std::string>(name))
            return *value;
        return nullptr;
    };
    for (const auto& m : messages)
        list.push_back({{"id", letterbox::to_string(m.id)},
                        {"type", m.type},
                        {"exchange", m.exchange},
                        {"routing_key", m.routing_key},
                        {"causation_id", text(m, headers::causation_id)},
                        {"traceparent", text(m, headers::traceparent)}});
    nlohmann::json body;
    body["conversation"] = key;
    body["messages"] = std::move(list);
    // The text indents each generation: a long chain grows it faster than the messages, so it
    // is cut at the listing limit.
    auto tree = to_text(causal_tree(messages, key));
    const bool cut = tree.size() > options_.max_listing_bytes;
    if (cut)
        tree.resize(options_.max_listing_bytes);
    body["tree"] = std::move(tree);
    body["tree_truncated"] = cut;
    respond(json_response(status::ok, body));
}

} // namespace letterbox::ops::detail
