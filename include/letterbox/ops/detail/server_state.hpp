// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/lint/finding.hpp>
#include <letterbox/message.hpp>
#include <letterbox/ops/consumer_counts.hpp>
#include <letterbox/ops/detail/dashboard_samples.hpp>
#include <letterbox/ops/detail/dlq_endpoint.hpp>
#include <letterbox/ops/detail/outbox_endpoint.hpp>
#include <letterbox/ops/detail/query_string.hpp>
#include <letterbox/ops/detail/responses.hpp>
#include <letterbox/ops/detail/store_worker.hpp>
#include <letterbox/ops/http_server_options.hpp>
#include <letterbox/ops/readiness.hpp>
#include <letterbox/outbox/relay_counters.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops::detail {

class server_state;

/// One client connection: reads a request (within the limits and timeouts of the options),
/// hands it to the server, writes the response, and loops while the client keeps the
/// connection alive. Every member function runs on the server's strand.
class http_session : public std::enable_shared_from_this<http_session> {
public:
    /// Where the connection is, for choosing which one to close when the cap is reached.
    enum class phase {
        waiting_first, // a new connection that has sent nothing yet
        reading,       // a request is arriving
        busy,          // a request is being handled, or its response written
        idle,          // kept alive, waiting for the next request
        closing        // its last response is out; draining before the close
    };

    http_session(std::shared_ptr<server_state> server, boost::asio::ip::tcp::socket socket,
                 std::uint64_t id, bool reserve);
    http_session(const http_session&) = delete;
    http_session& operator=(const http_session&) = delete;
    ~http_session();

    void start();
    /// Closes the connection at once; what is in flight completes with an error and stops.
    void close() noexcept;
    /// The response to the request being served (once per request).
    void respond(response r);
    /// The connection closes once the current request's response is written.
    void close_after_response() noexcept { close_after_ = true; }

    bool is_open() const noexcept { return !closed_; }
    phase current_phase() const noexcept { return phase_; }
    std::chrono::steady_clock::time_point phase_since() const noexcept { return since_; }
    /// Accepted beyond max_connections: serves the health endpoints only.
    bool reserve() const noexcept { return reserve_; }
    /// The address the client connected to (the server's side of the connection).
    const boost::asio::ip::address& local_address() const noexcept { return local_; }

private:
    void enter(phase p) noexcept {
        phase_ = p;
        since_ = std::chrono::steady_clock::now();
    }
    void wait_for_request();
    void on_first_bytes(boost::system::error_code ec, std::size_t n);
    void read_request();
    void on_read(boost::system::error_code ec);
    void send(response r, bool close_after);
    void on_write(boost::system::error_code ec);
    void release_held() noexcept;
    void linger_then_close();
    void on_linger(boost::system::error_code ec, std::size_t n);

    std::shared_ptr<server_state> server_;
    boost::beast::tcp_stream stream_;
    boost::beast::flat_buffer buffer_;
    std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
    boost::asio::steady_timer deadline_;
    response res_;
    std::uint64_t id_;
    std::string remote_;
    boost::asio::ip::address local_{};
    std::string request_line_; // method and path (no query) of the request being served
    unsigned version_ = 11;
    phase phase_ = phase::waiting_first;
    std::chrono::steady_clock::time_point since_ = std::chrono::steady_clock::now();
    std::size_t held_ = 0; // bytes of the response being written, counted by the server
    bool reserve_ = false;
    bool keep_alive_ = false;
    bool close_after_ = false;
    bool first_ = true;
    bool timed_out_ = false;
    bool awaiting_response_ = false; // a request was handed to the server, not answered yet
    bool closed_ = false;
    std::size_t lingered_ = 0;
    std::array<char, 4096> discard_{};
};

/// What an `http_server` shares with its sessions and pending operations: the strand, the
/// acceptor, the live sessions, what was registered, the responses in flight and the store
/// worker. Owned by shared pointers, so the `http_server` object can go while operations still
/// complete.
class server_state : public std::enable_shared_from_this<server_state> {
public:
    /// Checks the options (address, token, opt-outs); throws `letterbox::error` with
    /// `errc::invalid_argument` and a message naming the option for what cannot be served.
    server_state(boost::asio::any_io_executor ex, http_server_options o);

    const strand_type& strand() const noexcept { return strand_; }
    const http_server_options& options() const noexcept { return options_; }

    // Registration (before listen).
    void add_dlq(std::shared_ptr<dlq_endpoint> e);
    void set_outbox(std::shared_ptr<outbox_endpoint> e);
    void set_metrics(std::function<std::string()> render) { metrics_ = std::move(render); }
    using conversations_fn = std::function<std::vector<message>(std::string_view)>;
    void set_conversations(conversations_fn find) { conversations_ = std::move(find); }
    void add_check(std::string name, std::function<readiness()> check) {
        checks_.emplace_back(std::move(name), std::move(check));
    }
    /// Sampled on the strand (`relay_counters_source::counters()` is callable from any thread).
    void set_relay(std::function<relay_counters()> read) { relay_ = std::move(read); }
    /// Sampled on the strand (the counts are atomics).
    void set_consumers(std::function<std::vector<consumer_counts>()> read) {
        consumers_ = std::move(read);
    }
    using findings_fn = std::function<std::vector<lint::finding>()>;
    /// Called on the store worker (it may be slow: a live broker's passive declares).
    void set_topology_check(findings_fn check);

    std::error_code listen();
    boost::asio::ip::tcp::endpoint local_endpoint() const { return endpoint_; }
    bool listening() const noexcept { return listening_; }
    /// Closes the acceptor and every session (dispatched to the strand).
    void stop();
    bool stopped() const noexcept { return stopped_.load(std::memory_order_acquire); }
    /// Drops the store calls not started and waits for the running ones (from the
    /// `http_server`'s destructor, after `stop()`).
    void shutdown_store();

    // For sessions (on the strand).
    void handle(const std::shared_ptr<http_session>& s, request req);
    void forget(std::uint64_t id) noexcept { sessions_.erase(id); }
    void log(std::string_view line) const {
        if (options_.log)
            options_.log(line);
    }
    /// The bytes of response bodies being written, across every session.
    void hold(std::size_t n) noexcept { in_flight_ += n; }
    void release(std::size_t n) noexcept { in_flight_ -= std::min(n, in_flight_); }

private:
    void accept();
    void on_accept(boost::system::error_code ec, boost::asio::ip::tcp::socket socket);
    std::shared_ptr<http_session> pick_victim() const;
    void close_all();

    using respond_fn = std::function<void(response)>;
    bool host_allowed(const request& req, const boost::asio::ip::address& local) const;
    bool token_matches(const request& req) const;
    bool authorized(const request& req, const respond_fn& respond) const;
    // Whether `req` carries the configured token; else responds 403 (`code`, `no_token`) when
    // none is configured, 401 when it is missing or wrong.
    bool token_given(const request& req, const respond_fn& respond, std::string_view code,
                     std::string_view no_token) const;
    bool authorized_read(const request& req, const respond_fn& respond) const;
    /// Responds with `r` if its body fits in the response budget, else with 503.
    void respond_within_budget(const respond_fn& respond, response r) const;
    /// Whether the response budget is already spent on responses clients have not read; if so,
    /// responds 503 (a listing would not fit).
    bool budget_spent(const respond_fn& respond) const;
    dlq_endpoint* find_dlq(const std::string& queue) const;
    void get_readiness(const respond_fn& respond) const;
    void get_metrics(const respond_fn& respond) const;
    void get_conversation(const std::string& id, const respond_fn& respond) const;
    void get_queues(const respond_fn& respond);
    void browse(const std::string& queue, const parsed_target& t, const respond_fn& respond);
    void get_message(const std::string& queue, const std::string& id, const parsed_target& t,
                     const respond_fn& respond);
    /// What a replay or a purge acts on: the queue's endpoint and the filter.
    struct bulk_selection {
        dlq_endpoint* endpoint;
        dlq::dead_letter_filter filter;
    };
    /// The queue and the filter of a replay or a purge (`route::read_selection`). Responds, and
    /// returns nothing, when the queue is unknown, the selection is refused, or it has no
    /// criterion and no `?all=true` (then with 400 `no_criterion` and `no_criterion_message`).
    std::optional<bulk_selection> select_bulk(const std::string& queue, const parsed_target& t,
                                              const request& req, const respond_fn& respond,
                                              std::string_view no_criterion_message) const;
    void replay(const std::string& queue, const parsed_target& t, const request& req,
                const respond_fn& respond);
    void purge(const std::string& queue, const parsed_target& t, const request& req,
               const respond_fn& respond);
    void get_outbox(const parsed_target& t, const respond_fn& respond);
    void retry_outbox(const std::string& id, const respond_fn& respond);
    /// Runs `work` on the store worker and `done` with its result on the strand; answers 503
    /// (and drops the late result) when it takes longer than `store_timeout`, or at once when
    /// too many store calls are waiting.
    template <class Result>
    void call_store(const respond_fn& respond, std::function<Result(outbox_endpoint&)> work,
                    std::function<void(Result)> done);
    /// `call_store` for any work: `what` names what is called in the 503s ("the outbox store"),
    /// `why_late` says why it may be late and what to do.
    template <class Result>
    void call_worker(const respond_fn& respond, std::string_view what, std::string_view why_late,
                     std::function<Result()> work, std::function<void(Result)> done);

    // The dashboard's panels (server_state_dashboard.hpp).
    void sample();
    void schedule_sample();
    void get_relay_lag(const respond_fn& respond) const;
    void get_consumers(const respond_fn& respond) const;
    void get_findings(const respond_fn& respond);

    strand_type strand_;
    http_server_options options_;
    boost::asio::ip::address address_{};
    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::steady_timer retry_;
    boost::asio::ip::tcp::endpoint endpoint_{};
    bool listening_ = false;
    std::atomic<bool> stopped_{false};
    std::uint64_t next_session_ = 0;
    std::map<std::uint64_t, std::weak_ptr<http_session>> sessions_;
    std::size_t in_flight_ = 0;
    std::size_t store_calls_ = 0; // started on the worker, not yet completed on the strand

    std::vector<std::shared_ptr<dlq_endpoint>> dlqs_;
    std::shared_ptr<outbox_endpoint> outbox_;
    std::shared_ptr<store_worker> store_worker_;
    std::function<std::string()> metrics_;
    conversations_fn conversations_;
    std::vector<std::pair<std::string, std::function<readiness()>>> checks_;
    std::function<relay_counters()> relay_;
    std::function<std::vector<consumer_counts>()> consumers_;
    findings_fn findings_;
    boost::asio::steady_timer sampler_;
    dashboard_samples samples_;
};

} // namespace letterbox::ops::detail

#if LETTERBOX_HEADER_ONLY
#include <letterbox/ops/detail/impl/http_session.hpp>
#include <letterbox/ops/detail/impl/server_state.hpp>
#include <letterbox/ops/detail/impl/server_state_dashboard.hpp>
#include <letterbox/ops/detail/impl/server_state_dlq.hpp>
#include <letterbox/ops/detail/impl/server_state_outbox.hpp>
#include <letterbox/ops/detail/impl/server_state_routes.hpp>
#endif
