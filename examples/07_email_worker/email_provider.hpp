// SPDX-License-Identifier: BSL-1.0
//
// A fake transactional e-mail API, like the ones a real sign-up flow calls, that fails on a
// fixed schedule. It runs on its own thread and io_context, as a remote service would, so a
// worker can call it synchronously from a letterbox handler.
//
//   POST /send  {"to": "<address>", "template": "<name>"}   header Idempotency-Key: <key>
//
//   503  the provider is "overloaded": the first `outages[address]` requests for an address
//   422  the address is invalid (no `@`, or no dot in the domain): on every request
//   202  accepted: the e-mail is sent
//   200  a key it has already accepted: nothing is sent again (at-least-once delivery can
//        repeat a request; real providers deduplicate on such a key too)
#pragma once

#include "http.hpp"

#include <boost/asio/post.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace example {

class fake_email_provider {
public:
    /// `outages`: how many requests for each address get a 503 before one succeeds.
    explicit fake_email_provider(std::map<std::string, unsigned> outages)
        : outages_(std::move(outages))
        , server_(io_.get_executor(),
                  [this](const request& req, http_server::respond done) { done(handle(req)); })
        , port_(server_.port())
        , thread_([this] { io_.run(); }) {}

    fake_email_provider(const fake_email_provider&) = delete;
    fake_email_provider& operator=(const fake_email_provider&) = delete;
    ~fake_email_provider() { stop(); }

    std::uint16_t port() const { return port_; }

    /// Stops accepting, lets the requests in progress finish, and joins the thread. The
    /// counters below may be read only after this.
    void stop() {
        if (!thread_.joinable())
            return;
        boost::asio::post(io_, [this] { server_.close(); });
        thread_.join();
    }

    /// The addresses e-mails were sent to, in order (each once per key).
    const std::vector<std::string>& sent() const { return sent_; }
    unsigned answered_503() const { return answered_503_; }
    unsigned answered_422() const { return answered_422_; }
    unsigned repeated_keys() const { return repeated_keys_; }

    static bool valid_address(const std::string& a) {
        const auto at = a.find('@');
        return at != std::string::npos && at > 0 && a.find('@', at + 1) == std::string::npos &&
               a.find('.', at + 1) != std::string::npos && a.back() != '.';
    }

private:
    response handle(const request& req) {
        if (req.method() != http::verb::post || req.target() != "/send")
            return json_response(http::status::not_found, {{"error", "no such endpoint"}});
        const auto doc = nlohmann::json::parse(req.body(), nullptr, false);
        if (doc.is_discarded() || !doc.contains("to") || !doc["to"].is_string())
            return json_response(http::status::bad_request, {{"error", "expected {\"to\": ...}"}});
        const auto to = doc["to"].get<std::string>();
        if (!valid_address(to)) {
            ++answered_422_;
            return json_response(http::status::unprocessable_entity,
                                 {{"error", "invalid recipient address"}, {"to", to}});
        }
        if (requests_[to]++ < outages_[to]) {
            ++answered_503_;
            return json_response(http::status::service_unavailable,
                                 {{"error", "temporarily overloaded, try again later"}});
        }
        const std::string key(req["Idempotency-Key"]);
        if (!key.empty() && !keys_.insert(key).second) {
            ++repeated_keys_;
            return json_response(http::status::ok, {{"status", "already sent"}});
        }
        sent_.push_back(to);
        return json_response(
            http::status::accepted,
            {{"status", "queued"}, {"id", "mail-" + std::to_string(sent_.size())}});
    }

    // Everything below the thread is touched only on the provider's thread (until stop()).
    boost::asio::io_context io_;
    std::map<std::string, unsigned> outages_;
    std::map<std::string, unsigned> requests_;
    std::set<std::string> keys_;
    std::vector<std::string> sent_;
    unsigned answered_503_ = 0;
    unsigned answered_422_ = 0;
    unsigned repeated_keys_ = 0;
    http_server server_;
    std::uint16_t port_;
    std::thread thread_; // last: it starts once everything it uses exists
};

} // namespace example
