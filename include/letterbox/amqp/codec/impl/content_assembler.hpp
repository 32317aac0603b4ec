// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/content_assembler.hpp>
#include <letterbox/config.hpp>

#include <algorithm>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

LETTERBOX_DECL void content_assembler::reset() noexcept {
    pending_ = command{};
    remaining_ = 0;
    state_ = state::idle;
}

LETTERBOX_DECL std::optional<command> content_assembler::fail(errc e,
                                                              std::error_code& ec) noexcept {
    reset();
    ec = e;
    return std::nullopt;
}

LETTERBOX_DECL std::optional<command> content_assembler::feed(const frame_view& frame,
                                                              std::error_code& ec) {
    ec.clear();
    if (state_ != state::idle && frame.channel != pending_.channel)
        return fail(errc::invalid_argument, ec);

    switch (frame.type) {
    case frame_type::heartbeat:
        return std::nullopt;

    case frame_type::method: {
        if (state_ != state::idle)
            return fail(errc::unexpected_frame, ec);
        auto m = decode_method(frame.payload, ec);
        if (ec)
            return std::nullopt;
        // Connection-class methods live on channel 0, and only they do.
        if ((class_id_of(m) == 10) != (frame.channel == 0))
            return fail(errc::command_invalid, ec);
        if (!has_content(m)) {
            command c;
            c.channel = frame.channel;
            c.method = std::move(m);
            return c;
        }
        pending_.channel = frame.channel;
        pending_.method = std::move(m);
        state_ = state::header;
        return std::nullopt;
    }

    case frame_type::header: {
        if (state_ != state::header)
            return fail(errc::unexpected_frame, ec);
        auto h = decode_content_header(frame.payload, ec);
        if (ec) {
            reset();
            return std::nullopt;
        }
        if (h.class_id != class_id_of(pending_.method))
            return fail(errc::unexpected_frame, ec);
        if (h.body_size > max_body_size_)
            return fail(errc::content_too_large, ec);
        remaining_ = h.body_size;
        pending_.header = std::move(h);
        if (remaining_ == 0) {
            auto done = std::move(pending_);
            reset();
            return done;
        }
        pending_.body.reserve(static_cast<std::size_t>(std::min(remaining_, preallocation_limit)));
        state_ = state::body;
        return std::nullopt;
    }

    case frame_type::body: {
        if (state_ != state::body)
            return fail(errc::unexpected_frame, ec);
        if (frame.payload.size() > remaining_)
            return fail(errc::unexpected_frame, ec);
        pending_.body.append(frame.payload);
        remaining_ -= frame.payload.size();
        if (remaining_ != 0)
            return std::nullopt;
        auto done = std::move(pending_);
        reset();
        return done;
    }
    }
    return fail(errc::frame_error, ec); // not a frame type (the reader never produces one)
}

} // namespace letterbox::amqp::codec
