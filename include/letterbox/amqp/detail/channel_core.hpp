// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/basic_properties.hpp>
#include <letterbox/amqp/codec/command.hpp>
#include <letterbox/amqp/codec/content_assembler.hpp>
#include <letterbox/amqp/codec/method.hpp>
#include <letterbox/config.hpp>
#include <letterbox/detail/unique_function.hpp>
#include <letterbox/error.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::detail {

class connection_core;

/// One AMQP channel of a `connection_core`. Everything runs on the connection's strand.
///
/// Synchronous methods (those with a reply) are queued and sent one at a time: the next one
/// goes out when the previous reply arrived, so a channel error answers exactly the request
/// that caused it. Requests still queued when the channel closes complete with
/// `errc::channel_closed` without ever having been sent (the caller may retry them on another
/// channel). Asynchronous commands from the peer (deliver, return, ack, nack, cancel, flow)
/// go to `on_command`.
class channel_core : public std::enable_shared_from_this<channel_core> {
public:
    using rpc_done = letterbox::detail::unique_function<void(std::error_code, codec::command)>;
    /// Whether a method answers the request.
    using reply_filter = bool (*)(const codec::method&);
    enum class state { opening, open, closing, closed };

    channel_core(std::weak_ptr<connection_core> conn, std::uint16_t id, std::uint64_t uid)
        : conn_(std::move(conn))
        , id_(id)
        , uid_(uid) {}

    /// The channel number on the wire.
    std::uint16_t id() const noexcept { return id_; }
    /// A number no other channel of the process ever has (delivery::channel).
    std::uint64_t uid() const noexcept { return uid_; }
    bool is_open() const noexcept { return state_ == state::open; }
    state current_state() const noexcept { return state_; }
    /// Why the channel closed (set once closed).
    std::error_code close_error() const noexcept { return close_error_; }

    /// Sends `m` when the requests before it were answered; `done` gets the reply (a command
    /// for which `filter` is true) or the error that closed the channel.
    void call(codec::method m, reply_filter filter, rpc_done done);
    /// Sends an asynchronous method (ack, nack, reject, cancel with no-wait...).
    std::error_code send(const codec::method& m);
    /// Sends basic.publish with its content.
    std::error_code publish(const codec::basic_publish& p, const codec::basic_properties& props,
                            std::string_view body);
    /// Closes the channel (channel.close 200); `done` runs once channel.close-ok arrived or
    /// the connection is gone.
    void close(letterbox::detail::unique_function<void()> done);

    /// Asynchronous commands from the peer.
    std::function<void(codec::command&&)> on_command;
    /// Called once when the channel closes for any reason other than `close()`: the error
    /// (a reply code's `errc`, or the connection's error) and the peer's reply text.
    std::function<void(std::error_code, const std::string&)> on_close;

    // ---- called by connection_core ----
    codec::content_assembler& assembler() noexcept { return assembler_; }
    void handle(codec::command&& cmd);
    void lost(std::error_code ec);
    void mark_opening() noexcept { state_ = state::opening; }

private:
    struct rpc {
        codec::method request;
        reply_filter filter;
        rpc_done done;
        bool sent = false;
    };
    void send_next();
    void fail_all(std::error_code first, const std::string& text);

    std::weak_ptr<connection_core> conn_;
    std::uint16_t id_;
    std::uint64_t uid_;
    state state_ = state::opening;
    std::error_code close_error_{};
    codec::content_assembler assembler_{};
    std::deque<rpc> rpcs_{};
    letterbox::detail::unique_function<void()> close_done_{};
};

/// A reply filter for one method type.
template <class... M>
bool is_one_of(const codec::method& m) {
    return (std::holds_alternative<M>(m) || ...);
}

} // namespace letterbox::amqp::detail
