// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of server_state (included by server_state.hpp when header-only, by
// <letterbox/ops/src.hpp> under LETTERBOX_SEPARATE_COMPILATION): the dead-letter routes (the
// queues and their depths, browse, one message, replay, purge).

#include <letterbox/config.hpp>
#include <letterbox/ops/detail/server_state.hpp>

#include <letterbox/dlq/dead_letter_filter.hpp>
#include <letterbox/dlq/page.hpp>
#include <letterbox/dlq/replay_result.hpp>
#include <letterbox/ops/detail/dlq_query.hpp>
#include <letterbox/ops/detail/route_support.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

// ---- the dead-letter routes ---------------------------------------------------------------

LETTERBOX_DECL void server_state::get_queues(const respond_fn& respond) {
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

LETTERBOX_DECL void server_state::browse(const std::string& queue, const parsed_target& t,
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
    if (budget_spent(respond))
        return;
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

LETTERBOX_DECL void server_state::get_message(const std::string& queue, const std::string& key,
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
    if (budget_spent(respond))
        return;
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

LETTERBOX_DECL std::optional<server_state::bulk_selection>
server_state::select_bulk(const std::string& queue, const parsed_target& t, const request& req,
                          const respond_fn& respond, std::string_view no_criterion_message) const {
    auto* e = find_dlq(queue);
    if (!e) {
        respond(route::unknown_queue(queue));
        return std::nullopt;
    }
    std::optional<response> refused;
    auto sel = route::read_selection(t, req, refused);
    if (!sel) {
        respond(std::move(*refused));
        return std::nullopt;
    }
    if (!sel->filter.has_criterion() && !sel->all) {
        respond(error_response(status::bad_request, "no_criterion", no_criterion_message));
        return std::nullopt;
    }
    return bulk_selection{e, std::move(sel->filter)};
}

LETTERBOX_DECL void server_state::replay(const std::string& queue, const parsed_target& t,
                                         const request& req, const respond_fn& respond) {
    auto sel = select_bulk(queue, t, req, respond,
                           "this would replay every message of the queue: give a filter (in the "
                           "body or the query string), or add ?all=true to mean it");
    if (!sel)
        return;
    sel->endpoint->replay(
        std::move(sel->filter), [respond, queue](std::error_code ec, dlq::replay_result r) {
            if (ec)
                return respond(route::operation_failed(ec, "replaying " + queue + " (" +
                                                               std::to_string(r.replayed) +
                                                               " replayed before the failure)"));
            respond(json_response(status::ok, r.to_json()));
        });
}

LETTERBOX_DECL void server_state::purge(const std::string& queue, const parsed_target& t,
                                        const request& req, const respond_fn& respond) {
    auto sel = select_bulk(queue, t, req, respond,
                           "this would delete every message of the queue: give a filter, or add "
                           "?all=true to mean it");
    if (!sel)
        return;
    sel->endpoint->purge(std::move(sel->filter),
                         [respond, queue](std::error_code ec, std::size_t removed) {
                             if (ec)
                                 return respond(route::operation_failed(ec, "purging " + queue));
                             respond(json_response(status::ok, {{"removed", removed}}));
                         });
}

} // namespace letterbox::ops::detail
