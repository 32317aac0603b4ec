// SPDX-License-Identifier: BSL-1.0
#pragma once

// Definitions of connection_core and channel_core (included by connection_core.hpp
// when header-only, by <letterbox/amqp/src.hpp> under LETTERBOX_SEPARATE_COMPILATION).

#include <letterbox/amqp/detail/connection_core.hpp>
#include <letterbox/config.hpp>

#include <algorithm>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::detail {

// ---- channel_core --------------------------------------------------------------------------

LETTERBOX_DECL void channel_core::call(codec::method m, reply_filter filter, rpc_done done) {
    if (state_ == state::closed || state_ == state::closing) {
        done(close_error_ ? close_error_ : make_error_code(errc::channel_closed), {});
        return;
    }
    rpcs_.push_back(rpc{std::move(m), filter, std::move(done)});
    if (rpcs_.size() == 1)
        send_next();
}

LETTERBOX_DECL void channel_core::send_next() {
    // Requests that cannot even be encoded fail alone; the next one goes out.
    while (!rpcs_.empty() && !rpcs_.front().sent) {
        auto& r = rpcs_.front();
        auto conn = conn_.lock();
        if (!conn) {
            fail_all(make_error_code(errc::connection_closed), {});
            return;
        }
        if (auto ec = conn->write_method(id_, r.request)) {
            auto done = std::move(r.done);
            rpcs_.pop_front();
            done(ec, {});
            continue;
        }
        r.sent = true;
    }
}

LETTERBOX_DECL std::error_code channel_core::send(const codec::method& m) {
    if (state_ != state::open)
        return close_error_ ? close_error_ : make_error_code(errc::channel_closed);
    auto conn = conn_.lock();
    if (!conn)
        return errc::connection_closed;
    return conn->write_method(id_, m);
}

LETTERBOX_DECL std::error_code channel_core::publish(const codec::basic_publish& p,
                                                     const codec::basic_properties& props,
                                                     std::string_view body) {
    if (state_ != state::open)
        return close_error_ ? close_error_ : make_error_code(errc::channel_closed);
    auto conn = conn_.lock();
    if (!conn)
        return errc::connection_closed;
    return conn->write_content(id_, p, props, body);
}

LETTERBOX_DECL void channel_core::close(letterbox::detail::unique_function<void()> done) {
    if (state_ == state::closed || state_ == state::closing) {
        if (done)
            done();
        return;
    }
    auto conn = conn_.lock();
    state_ = state::closing;
    close_done_ = std::move(done);
    if (!conn || conn->write_method(id_, codec::channel_close{200, "Goodbye", 0, 0})) {
        lost(make_error_code(errc::connection_closed));
        return;
    }
}

LETTERBOX_DECL void channel_core::fail_all(std::error_code first, const std::string& text) {
    (void)text;
    auto pending = std::move(rpcs_);
    rpcs_.clear();
    bool head = true;
    for (auto& r : pending) {
        // The request being answered gets the reason; those never sent are simply refused.
        r.done(head && r.sent ? first : make_error_code(errc::channel_closed), {});
        head = false;
    }
}

LETTERBOX_DECL void channel_core::handle(codec::command&& cmd) {
    auto self = shared_from_this(); // callbacks below may drop the last other reference
    if (const auto* close = std::get_if<codec::channel_close>(&cmd.method)) {
        auto conn = conn_.lock();
        const bool was_closing = state_ == state::closing;
        state_ = state::closed;
        close_error_ = error_from_reply_code(close->reply_code, errc::channel_closed);
        assembler_.reset();
        if (conn) {
            (void)conn->write_method(id_, codec::channel_close_ok{});
            conn->release_channel(id_);
        }
        fail_all(close_error_, close->reply_text);
        if (was_closing) {
            if (auto d = std::move(close_done_))
                d();
        } else if (on_close) {
            on_close(close_error_, close->reply_text);
        }
        return;
    }
    if (std::holds_alternative<codec::channel_close_ok>(cmd.method)) {
        if (state_ != state::closing)
            return; // unexpected; ignore
        state_ = state::closed;
        close_error_ = make_error_code(errc::channel_closed);
        if (auto conn = conn_.lock())
            conn->release_channel(id_);
        fail_all(close_error_, {});
        if (auto d = std::move(close_done_))
            d();
        return;
    }
    if (state_ == state::closing)
        return; // everything but close and close-ok is discarded after channel.close
    if (std::holds_alternative<codec::channel_open_ok>(cmd.method))
        state_ = state::open;
    if (auto* flow = std::get_if<codec::channel_flow>(&cmd.method)) {
        // RabbitMQ never sends it; answer as the spec requires.
        (void)send(codec::channel_flow_ok{flow->active});
        return;
    }
    if (!rpcs_.empty() && rpcs_.front().sent && rpcs_.front().filter(cmd.method)) {
        auto done = std::move(rpcs_.front().done);
        rpcs_.pop_front();
        send_next();
        done({}, std::move(cmd));
        return;
    }
    if (on_command)
        on_command(std::move(cmd));
}

LETTERBOX_DECL void channel_core::lost(std::error_code ec) {
    if (state_ == state::closed)
        return;
    auto self = shared_from_this();
    const bool was_closing = state_ == state::closing;
    state_ = state::closed;
    close_error_ = ec;
    assembler_.reset();
    fail_all(ec, {});
    if (was_closing) {
        if (auto d = std::move(close_done_))
            d();
    } else if (on_close) {
        on_close(ec, {});
    }
}

// ---- connection_core -----------------------------------------------------------------------

LETTERBOX_DECL field_table connection_core::client_properties() const {
    field_table capabilities;
    capabilities.set("publisher_confirms", true);
    capabilities.set("consumer_cancel_notify", true);
    capabilities.set("basic.nack", true);
    capabilities.set("connection.blocked", true);
    capabilities.set("exchange_exchange_bindings", true);
    capabilities.set("authentication_failure_close", true);
    field_table props;
    props.set("product", std::string("letterbox"));
    props.set("version", std::to_string(LETTERBOX_VERSION_MAJOR) + "." +
                             std::to_string(LETTERBOX_VERSION_MINOR) + "." +
                             std::to_string(LETTERBOX_VERSION_PATCH));
    props.set("platform", std::string("C++20, Boost.Asio"));
    props.set("connection_name", name_);
    props.set("capabilities", std::move(capabilities));
    return props;
}

LETTERBOX_DECL void connection_core::connect(const url& u, done_handler done) {
    if (state_ != state::idle) {
        boost::asio::post(
            strand_, [d = std::move(done)]() mutable { d(make_error_code(errc::invalid_state)); });
        return;
    }
    url_ = u;
    connect_done_ = std::move(done);
    state_ = state::connecting;
    timer_.expires_after(url_.connection_timeout.value_or(default_connection_timeout));
    timer_.async_wait([self = shared_from_this()](std::error_code ec) {
        if (!ec && self->state_ != state::open && self->state_ != state::closed &&
            self->state_ != state::closing)
            self->finish(make_error_code(errc::timed_out));
    });
    resolver_.async_resolve(
        url_.host, std::to_string(url_.port),
        [self = shared_from_this()](std::error_code ec,
                                    boost::asio::ip::tcp::resolver::results_type results) {
            if (self->state_ != state::connecting)
                return;
            if (ec)
                return self->finish(ec);
            self->start_connect(results);
        });
}

LETTERBOX_DECL void
connection_core::start_connect(const boost::asio::ip::tcp::resolver::results_type& endpoints) {
    boost::asio::async_connect(
        socket_, endpoints,
        [self = shared_from_this()](std::error_code ec, const boost::asio::ip::tcp::endpoint&) {
            if (self->state_ != state::connecting)
                return;
            if (ec)
                return self->finish(ec);
            boost::system::error_code ignored;
            self->socket_.set_option(boost::asio::ip::tcp::no_delay(true), ignored);
            if (!self->url_.tls)
                return self->start_amqp();
            if (auto e = self->start_tls())
                return self->finish(e);
            self->tls_->async_handshake(tls_stream::client, [self](std::error_code e) {
                if (self->state_ != state::connecting)
                    return;
                if (e)
                    return self->finish(e);
                self->start_amqp();
            });
        });
}

// The TLS client side of amqps: TLS 1.2 or later; the server's certificate checked against
// `cacertfile` (or the system's CAs) and the host name (or `server_name_indication`) unless
// `verify=verify_none`; SNI sent for a host name (never for an IP address); a client
// certificate when `certfile`/`keyfile` are given. Errors are OpenSSL's (asio::error::ssl).
LETTERBOX_DECL std::error_code connection_core::start_tls() {
    namespace ssl = boost::asio::ssl;
    boost::system::error_code ec;
    tls_context_.emplace(ssl::context::tls_client);
    auto& ctx = *tls_context_;
    ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                        ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1,
                    ec);
    if (!ec && url_.cacertfile)
        ctx.load_verify_file(*url_.cacertfile, ec);
    else if (!ec)
        ctx.set_default_verify_paths(ec);
    if (!ec && url_.certfile)
        ctx.use_certificate_chain_file(*url_.certfile, ec);
    if (!ec && (url_.keyfile || url_.certfile))
        ctx.use_private_key_file(url_.keyfile ? *url_.keyfile : *url_.certfile, ssl::context::pem,
                                 ec);
    if (ec)
        return ec;
    tls_.emplace(socket_, ctx);
    const bool sni_disabled = url_.server_name && *url_.server_name == "disable";
    const std::string name = url_.server_name && !sni_disabled ? *url_.server_name : url_.host;
    if (url_.verify_peer) {
        tls_->set_verify_mode(ssl::verify_peer, ec);
        if (!ec)
            tls_->set_verify_callback(ssl::host_name_verification(name), ec);
    } else {
        tls_->set_verify_mode(ssl::verify_none, ec);
    }
    if (ec)
        return ec;
    boost::system::error_code not_an_address;
    (void)boost::asio::ip::make_address(name, not_an_address);
    if (!sni_disabled && not_an_address && !name.empty() &&
        SSL_set_tlsext_host_name(tls_->native_handle(), name.c_str()) != 1)
        return make_error_code(errc::invalid_argument);
    return {};
}

LETTERBOX_DECL void connection_core::start_amqp() {
    state_ = state::handshaking;
    codec::frame_writer::write_protocol_header(out_);
    flush();
    last_read_ = std::chrono::steady_clock::now();
    do_read();
}

template <class Handler>
void connection_core::read_some(boost::asio::mutable_buffer b, Handler&& h) {
    if (tls_)
        tls_->async_read_some(b, std::forward<Handler>(h));
    else
        socket_.async_read_some(b, std::forward<Handler>(h));
}

template <class Handler>
void connection_core::write_all(boost::asio::const_buffer b, Handler&& h) {
    if (tls_)
        boost::asio::async_write(*tls_, b, std::forward<Handler>(h));
    else
        boost::asio::async_write(socket_, b, std::forward<Handler>(h));
}

LETTERBOX_DECL void connection_core::close(done_handler done) {
    switch (state_) {
    case state::closed:
        boost::asio::post(strand_, [d = std::move(done)]() mutable { d({}); });
        return;
    case state::closing:
        close_done_.push_back(std::move(done));
        return;
    case state::idle:
        state_ = state::closed;
        error_ = errc::closed;
        boost::asio::post(strand_, [d = std::move(done)]() mutable { d({}); });
        return;
    case state::connecting:
    case state::handshaking:
        close_done_.push_back(std::move(done));
        finish(make_error_code(errc::closed));
        return;
    case state::open:
        break;
    }
    state_ = state::closing;
    close_done_.push_back(std::move(done));
    (void)writer_.write_method(out_, 0, codec::connection_close{200, "Goodbye", 0, 0});
    flush();
    timer_.expires_after(close_timeout);
    timer_.async_wait([self = shared_from_this()](std::error_code ec) {
        if (!ec)
            self->finish(make_error_code(errc::closed));
    });
}

LETTERBOX_DECL void connection_core::open_channel(channel_handler done) {
    if (state_ != state::open) {
        boost::asio::post(strand_, [d = std::move(done), e = error_]() mutable {
            d(e ? e : make_error_code(errc::connection_closed), nullptr);
        });
        return;
    }
    // The next free number after the last one handed out, not the lowest free one: a number
    // closed a moment ago is not reused at once, so a late frame of its old channel (RabbitMQ
    // 3.10 can send a second channel.close after a consumer timeout) cannot reach a new one.
    std::uint16_t id = 0;
    for (std::uint32_t k = 1; k <= channel_max_; ++k) {
        const auto candidate =
            static_cast<std::uint16_t>((last_channel_ + k - 1) % channel_max_ + 1);
        if (!channels_.contains(candidate)) {
            id = candidate;
            break;
        }
    }
    if (id == 0) {
        boost::asio::post(strand_, [d = std::move(done)]() mutable {
            d(make_error_code(errc::resource_error), nullptr);
        });
        return;
    }
    last_channel_ = id;
    auto ch = std::make_shared<channel_core>(weak_from_this(), id, ++next_uid_);
    channels_[id] = ch;
    ch->call(codec::channel_open{}, &is_one_of<codec::channel_open_ok>,
             [ch, d = std::move(done)](std::error_code ec, codec::command) mutable {
                 d(ec, ec ? nullptr : ch);
             });
}

LETTERBOX_DECL std::error_code connection_core::write_method(std::uint16_t channel,
                                                             const codec::method& m) {
    if (state_ == state::closed)
        return errc::connection_closed;
    auto ec = writer_.write_method(out_, channel, m);
    if (!ec)
        flush();
    return ec;
}

LETTERBOX_DECL std::error_code connection_core::write_content(std::uint16_t channel,
                                                              const codec::method& m,
                                                              const codec::basic_properties& props,
                                                              std::string_view body) {
    if (state_ != state::open)
        return errc::connection_closed;
    auto ec = writer_.write_content(out_, channel, m, props, body);
    if (!ec)
        flush();
    return ec;
}

// Frames appended while one strand handler runs (a burst of publishes, acks of a batch) go out
// in one write: the flush is posted, not started at once, and frames appended while a write
// is in flight wait in `out_` for the next one.
LETTERBOX_DECL void connection_core::flush() {
    if (flush_posted_ || write_in_flight_)
        return;
    flush_posted_ = true;
    boost::asio::post(strand_, [self = shared_from_this()] {
        self->flush_posted_ = false;
        if (self->write_in_flight_ || self->out_.empty() || self->state_ == state::closed)
            return;
        self->write_in_flight_ = true;
        std::swap(self->writing_, self->out_);
        self->write_all(boost::asio::buffer(self->writing_),
                        [self](std::error_code ec, std::size_t) { self->on_written(ec); });
    });
}

LETTERBOX_DECL void connection_core::on_written(std::error_code ec) {
    write_in_flight_ = false;
    writing_.clear();
    if (state_ == state::closed)
        return;
    if (ec)
        return finish(make_error_code(errc::connection_closed)); // the socket failed under us
    last_write_ = std::chrono::steady_clock::now();
    if (!out_.empty())
        return flush();
    if (close_after_write_)
        finish(*close_after_write_);
}

LETTERBOX_DECL void connection_core::close_after_write(std::error_code ec) {
    state_ = state::closing;
    close_after_write_ = ec;
    flush();
    // A peer that stops reading must not keep the connection half-closed forever.
    timer_.expires_after(close_timeout);
    timer_.async_wait([self = shared_from_this(), ec](std::error_code e) {
        if (!e)
            self->finish(ec);
    });
}

LETTERBOX_DECL void connection_core::protocol_error(std::error_code ec, const std::string& text) {
    if (state_ == state::closing || state_ == state::closed)
        return finish(ec);
    (void)writer_.write_method(out_, 0, codec::connection_close{reply_code_for(ec), text, 0, 0});
    close_after_write(ec);
}

LETTERBOX_DECL void connection_core::do_read() {
    auto area = reader_.prepare(65536);
    read_some(
        boost::asio::buffer(area.data(), area.size()),
        [self = shared_from_this()](std::error_code ec, std::size_t n) { self->on_read(ec, n); });
}

LETTERBOX_DECL void connection_core::on_read(std::error_code ec, std::size_t n) {
    if (state_ == state::closed)
        return;
    reader_.commit(ec ? 0 : n);
    if (ec) {
        if (state_ == state::closing && close_after_write_)
            return finish(*close_after_write_);
        if (state_ == state::closing)
            return finish(make_error_code(errc::closed));
        return finish(make_error_code(errc::connection_closed)); // eof, reset, ...
    }
    last_read_ = std::chrono::steady_clock::now();
    auto self = shared_from_this();
    std::error_code fe;
    while (auto f = reader_.next(fe)) {
        handle_frame(*f);
        if (state_ == state::closed || close_after_write_)
            return;
    }
    if (fe)
        return protocol_error(fe, "letterbox: invalid frame (" + fe.message() + ")");
    do_read();
}

LETTERBOX_DECL void connection_core::handle_frame(const codec::frame_view& f) {
    if (f.type == codec::frame_type::heartbeat)
        return;
    std::error_code ec;
    if (f.channel == 0) {
        auto cmd = channel0_.feed(f, ec);
        if (ec)
            return protocol_error(ec, "letterbox: " + ec.message() + " on channel 0");
        if (cmd)
            handle_connection_method(std::move(*cmd));
        return;
    }
    if (state_ != state::open && state_ != state::closing)
        return protocol_error(make_error_code(errc::unexpected_frame),
                              "letterbox: channel frame before connection.open-ok");
    auto it = channels_.find(f.channel);
    if (it == channels_.end()) {
        if (state_ == state::closing)
            return; // channels are gone once we asked to close
        if (is_stray_channel_close(f))
            return;
        return protocol_error(make_error_code(errc::channel_error),
                              "letterbox: frame for channel " + std::to_string(f.channel) +
                                  ", which is not open");
    }
    auto ch = it->second;
    auto cmd = ch->assembler().feed(f, ec);
    if (ec)
        return protocol_error(ec, "letterbox: " + ec.message() + " on channel " +
                                      std::to_string(f.channel));
    if (cmd && state_ == state::open)
        ch->handle(std::move(*cmd));
    else if (cmd && (std::holds_alternative<codec::channel_close>(cmd->method) ||
                     std::holds_alternative<codec::channel_close_ok>(cmd->method)))
        ch->handle(std::move(*cmd));
}

LETTERBOX_DECL bool connection_core::is_stray_channel_close(const codec::frame_view& f) {
    // A channel.close (20, 40) or channel.close-ok (20, 41) for a channel that is no longer
    // open: what is left of a close already done, which RabbitMQ 3.10 can send twice (a channel
    // that times a delivery out on two ticks). It carries nothing to act on; anything else on
    // such a channel is a protocol error.
    if (f.type != codec::frame_type::method || f.payload.size() < 4)
        return false;
    const auto u = [&](std::size_t i) {
        return static_cast<unsigned char>(f.payload[i]);
    };
    const unsigned class_id = u(0) << 8 | u(1);
    const unsigned method_id = u(2) << 8 | u(3);
    return class_id == 20 && (method_id == 40 || method_id == 41);
}

LETTERBOX_DECL void connection_core::handle_connection_method(codec::command&& cmd) {
    auto& m = cmd.method;
    if (auto* close = std::get_if<codec::connection_close>(&m)) {
        close_text_ = close->reply_text;
        (void)writer_.write_method(out_, 0, codec::connection_close_ok{});
        if (state_ == state::closing && !close_after_write_)
            return close_after_write(make_error_code(errc::closed));
        return close_after_write(error_from_reply_code(close->reply_code, errc::connection_closed));
    }
    if (std::holds_alternative<codec::connection_close_ok>(m)) {
        if (state_ == state::closing)
            return finish(close_after_write_ ? *close_after_write_ : make_error_code(errc::closed));
        return protocol_error(make_error_code(errc::command_invalid),
                              "letterbox: unexpected connection.close-ok");
    }
    if (state_ == state::closing)
        return; // after connection.close only close and close-ok matter
    if (auto* start = std::get_if<codec::connection_start>(&m)) {
        if (state_ != state::handshaking || handshake_step_ != handshake_step::start)
            return protocol_error(make_error_code(errc::command_invalid),
                                  "letterbox: unexpected connection.start");
        if (start->version_major != 0 || start->version_minor != 9)
            return protocol_error(make_error_code(errc::not_implemented),
                                  "letterbox: speaks AMQP 0-9-1 only");
        if (start->mechanisms.find("PLAIN") == std::string::npos)
            return protocol_error(make_error_code(errc::access_refused),
                                  "letterbox: the server does not offer SASL PLAIN");
        server_properties_ = start->server_properties;
        codec::connection_start_ok ok;
        ok.client_properties = client_properties();
        ok.mechanism = "PLAIN";
        ok.response.reserve(url_.user.size() + url_.password.size() + 2);
        ok.response.push_back('\0');
        ok.response += url_.user;
        ok.response.push_back('\0');
        ok.response += url_.password;
        ok.locale = "en_US";
        (void)writer_.write_method(out_, 0, ok);
        handshake_step_ = handshake_step::tune;
        return flush();
    }
    if (std::holds_alternative<codec::connection_secure>(m))
        return protocol_error(make_error_code(errc::not_implemented),
                              "letterbox: SASL challenges are not supported (PLAIN only)");
    if (auto* tune = std::get_if<codec::connection_tune>(&m)) {
        if (state_ != state::handshaking || handshake_step_ != handshake_step::tune)
            return protocol_error(make_error_code(errc::command_invalid),
                                  "letterbox: unexpected connection.tune");
        std::error_code ec;
        const auto frame_max = codec::negotiate_frame_max(
            url_.frame_max.value_or(default_frame_max), tune->frame_max, ec);
        if (ec)
            return protocol_error(
                ec == errc::invalid_argument ? make_error_code(errc::invalid_argument) : ec,
                "letterbox: unacceptable frame_max");
        channel_max_ = codec::negotiate_channel_max(url_.channel_max.value_or(default_channel_max),
                                                    tune->channel_max);
        const auto wanted = url_.heartbeat.value_or(default_heartbeat);
        const auto server = std::chrono::seconds{tune->heartbeat};
        heartbeat_ = wanted.count() == 0   ? std::chrono::seconds{0}
                     : server.count() == 0 ? wanted
                                           : std::min(wanted, server);
        (void)reader_.set_limits(frame_max, channel_max_);
        (void)writer_.set_frame_max(frame_max);
        (void)writer_.write_method(
            out_, 0,
            codec::connection_tune_ok{channel_max_, frame_max,
                                      static_cast<std::uint16_t>(heartbeat_.count())});
        (void)writer_.write_method(out_, 0, codec::connection_open{url_.vhost});
        handshake_step_ = handshake_step::open_ok;
        flush();
        start_heartbeat();
        return;
    }
    if (std::holds_alternative<codec::connection_open_ok>(m)) {
        if (state_ != state::handshaking || handshake_step_ != handshake_step::open_ok)
            return protocol_error(make_error_code(errc::command_invalid),
                                  "letterbox: unexpected connection.open-ok");
        state_ = state::open;
        timer_.cancel();
        if (auto d = std::move(connect_done_))
            d({});
        return;
    }
    if (auto* blocked = std::get_if<codec::connection_blocked>(&m)) {
        blocked_ = true;
        blocked_reason_ = blocked->reason;
        if (on_blocked)
            on_blocked(true, blocked_reason_);
        return;
    }
    if (std::holds_alternative<codec::connection_unblocked>(m)) {
        blocked_ = false;
        blocked_reason_.clear();
        if (on_blocked)
            on_blocked(false, blocked_reason_);
        return;
    }
    protocol_error(make_error_code(errc::command_invalid),
                   "letterbox: unexpected " + std::string(codec::name_of(m)) + " on channel 0");
}

LETTERBOX_DECL void connection_core::start_heartbeat() {
    if (heartbeat_.count() == 0)
        return;
    last_write_ = std::chrono::steady_clock::now();
    on_heartbeat_tick();
}

// Ticks every quarter interval: sends a heartbeat when nothing was written for half an
// interval, and declares the peer dead after two intervals without a byte from it.
LETTERBOX_DECL void connection_core::on_heartbeat_tick() {
    if (state_ == state::closed)
        return;
    const auto now = std::chrono::steady_clock::now();
    const auto interval = std::chrono::duration_cast<std::chrono::milliseconds>(heartbeat_);
    if (now - last_read_ >= 2 * interval)
        return finish(make_error_code(errc::timed_out)); // the peer is gone: no close handshake
    if (now - last_write_ >= interval / 2 && !write_in_flight_) {
        writer_.write_heartbeat(out_);
        flush();
    }
    heartbeat_timer_.expires_after(std::max(interval / 4, std::chrono::milliseconds{10}));
    heartbeat_timer_.async_wait([self = shared_from_this()](std::error_code ec) {
        if (!ec)
            self->on_heartbeat_tick();
    });
}

LETTERBOX_DECL void connection_core::finish(std::error_code ec) {
    if (state_ == state::closed)
        return;
    auto self = shared_from_this();
    const bool was_open = state_ == state::open || state_ == state::closing;
    state_ = state::closed;
    error_ = ec;
    boost::system::error_code ignored;
    timer_.cancel();
    heartbeat_timer_.cancel();
    resolver_.cancel();
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    auto channels = std::move(channels_);
    channels_.clear();
    const auto channel_error = ec == errc::closed ? make_error_code(errc::closed)
                                                  : make_error_code(errc::connection_closed);
    for (auto& [id, ch] : channels)
        ch->lost(channel_error);
    if (auto d = std::move(connect_done_))
        d(ec);
    auto waiters = std::move(close_done_);
    close_done_.clear();
    for (auto& d : waiters)
        d({});
    auto watchers = std::move(closed_waiters_);
    closed_waiters_.clear();
    for (auto& d : watchers)
        d(ec);
    if (was_open && on_closed)
        on_closed(ec);
}

} // namespace letterbox::amqp::detail
