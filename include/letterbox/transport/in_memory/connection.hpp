// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/channel.hpp>
#include <letterbox/transport/in_memory/detail/broker_state.hpp>

#include <cstdint>
#include <memory>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory {

/// A client connection to the in-memory broker. Closing it (or losing it to a fault or a
/// broker restart) closes its channels, requeues their unacknowledged deliveries and deletes
/// its exclusive queues.
///
/// A `connection` is a cheap handle: copies refer to the same connection.
/// Thread safety: none; use the broker's executor.
class connection {
public:
    connection() = default;

    std::uint64_t id() const noexcept { return state_->id; }
    bool is_open() const noexcept { return state_ && state_->open; }
    const in_memory::close_reason& close_reason() const noexcept { return state_->reason; }

    /// Opens a channel (already closed if the connection is).
    channel open_channel() { return channel(b_, b_->open_channel(*state_)); }

    void on_close(close_handler h) { state_->on_close = std::move(h); }

    /// `connection.close` by the client.
    void close() {
        b_->close_connection(*state_, {make_error_code(errc::closed), "closed by the client"});
    }

private:
    friend class broker;
    connection(std::shared_ptr<detail::broker_state> b, std::shared_ptr<detail::connection_state> s)
        : b_(std::move(b))
        , state_(std::move(s)) {}

    std::shared_ptr<detail::broker_state> b_;
    std::shared_ptr<detail::connection_state> state_;
};

} // namespace letterbox::in_memory
