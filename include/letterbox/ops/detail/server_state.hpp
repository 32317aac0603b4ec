// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/ops/detail/dlq_endpoint.hpp>
#include <letterbox/ops/detail/outbox_endpoint.hpp>
#include <letterbox/ops/detail/query_string.hpp>
#include <letterbox/ops/detail/responses.hpp>
#include <letterbox/ops/http_server_options.hpp>
#include <letterbox/ops/readiness.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace letterbox::ops::detail {

class server_state;

/// One client connection: reads a request (within the limits and timeouts of the options),
/// hands it to the server, writes the response, and loops while the client keeps the
/// connection alive. Every member function runs on the server's strand.
class http_session : public std::enable_shared_from_this<http_session> {
public:
    http_session(std::shared_ptr<server_state> server, boost::asio::ip::tcp::socket socket,
                 std::uint64_t id);
    http_session(const http_session&) = delete;
    http_session& operator=(const http_session&) = delete;
    ~http_session();

    void start();
    /// Closes the connection at once; what is in flight completes with an error and stops.
    void close() noexcept;
    /// The response to the request being served (once per request).
    void respond(response r);

private:
    void wait_for_request();
    void on_first_bytes(boost::system::error_code ec, std::size_t n);
    void read_request();
    void on_read(boost::system::error_code ec);
    void send(response r, bool close_after);
    void on_write(boost::system::error_code ec);
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
    std::string request_line_; // method and path (no query) of the request being served
    unsigned version_ = 11;
    bool keep_alive_ = false;
    bool first_ = true;
    bool timed_out_ = false;
    bool awaiting_response_ = false; // a request was handed to the server, not answered yet
    bool closed_ = false;
    std::size_t lingered_ = 0;
    std::array<char, 4096> discard_{};
};

/// What an `http_server` shares with its sessions and pending operations: the strand, the
/// acceptor, the live sessions and what was registered. Owned by shared pointers, so the
/// `http_server` object can go while operations still complete.
class server_state : public std::enable_shared_from_this<server_state> {
public:
    server_state(boost::asio::any_io_executor ex, http_server_options o)
        : strand_(boost::asio::make_strand(ex))
        , options_(std::move(o))
        , acceptor_(strand_)
        , retry_(strand_) {}

    const strand_type& strand() const noexcept { return strand_; }
    const http_server_options& options() const noexcept { return options_; }

    // Registration (before listen).
    void add_dlq(std::shared_ptr<dlq_endpoint> e);
    void set_outbox(std::shared_ptr<outbox_endpoint> e) { outbox_ = std::move(e); }
    void set_metrics(std::function<std::string()> render) { metrics_ = std::move(render); }
    void add_check(std::string name, std::function<readiness()> check) {
        checks_.emplace_back(std::move(name), std::move(check));
    }

    std::error_code listen();
    boost::asio::ip::tcp::endpoint local_endpoint() const { return endpoint_; }
    bool listening() const noexcept { return listening_; }
    /// Closes the acceptor and every session (dispatched to the strand).
    void stop();
    bool stopped() const noexcept { return stopped_.load(std::memory_order_acquire); }

    // For sessions (on the strand).
    void handle(const std::shared_ptr<http_session>& s, request req);
    void forget(std::uint64_t id) noexcept { sessions_.erase(id); }
    void log(std::string_view line) const {
        if (options_.log)
            options_.log(line);
    }

private:
    void accept();
    void on_accept(boost::system::error_code ec, boost::asio::ip::tcp::socket socket);
    void close_all();

    using respond_fn = std::function<void(response)>;
    bool authorized(const request& req, const respond_fn& respond) const;
    dlq_endpoint* find_dlq(const std::string& queue) const;
    void get_readiness(const respond_fn& respond) const;
    void get_metrics(const respond_fn& respond) const;
    void get_queues(const respond_fn& respond);
    void browse(const std::string& queue, const parsed_target& t, const respond_fn& respond);
    void replay(const std::string& queue, const request& req, const respond_fn& respond);
    void purge(const std::string& queue, const parsed_target& t, const request& req,
               const respond_fn& respond);
    void get_outbox(const parsed_target& t, const respond_fn& respond);
    void retry_outbox(const std::string& id, const respond_fn& respond);

    strand_type strand_;
    http_server_options options_;
    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::steady_timer retry_;
    boost::asio::ip::tcp::endpoint endpoint_{};
    bool listening_ = false;
    std::atomic<bool> stopped_{false};
    std::uint64_t next_session_ = 0;
    std::map<std::uint64_t, std::weak_ptr<http_session>> sessions_;

    std::vector<std::shared_ptr<dlq_endpoint>> dlqs_;
    std::shared_ptr<outbox_endpoint> outbox_;
    std::function<std::string()> metrics_;
    std::vector<std::pair<std::string, std::function<readiness()>>> checks_;
};

} // namespace letterbox::ops::detail

#include <letterbox/ops/detail/impl/http_session.hpp>
#include <letterbox/ops/detail/impl/server_state.hpp>
