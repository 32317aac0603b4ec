// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/frame_reader.hpp>
#include <letterbox/config.hpp>

#include <cstring>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

LETTERBOX_DECL std::error_code frame_reader::set_limits(std::uint32_t frame_max,
                                                        std::uint16_t channel_max) noexcept {
    if (frame_max != 0 && frame_max < frame_min_size)
        return errc::invalid_argument;
    frame_max_ = effective_frame_max(frame_max);
    channel_max_ = effective_channel_max(channel_max);
    return {};
}

LETTERBOX_DECL void frame_reader::compact() {
    // Move the unread bytes to the front once they no longer start there, so that the buffer
    // does not grow with the total traffic, only with the largest unread backlog.
    if (begin_ == 0)
        return;
    const auto unread = end_ - begin_;
    if (unread != 0)
        std::memmove(buffer_.data(), buffer_.data() + begin_, unread);
    begin_ = 0;
    end_ = unread;
}

LETTERBOX_DECL std::span<char> frame_reader::prepare(std::size_t n) {
    compact();
    if (buffer_.size() < end_ + n)
        buffer_.resize(end_ + n);
    prepared_ = n;
    return {buffer_.data() + end_, n};
}

LETTERBOX_DECL void frame_reader::commit(std::size_t n) noexcept {
    end_ += n < prepared_ ? n : prepared_;
    prepared_ = 0;
}

LETTERBOX_DECL void frame_reader::feed(std::string_view bytes) {
    if (bytes.empty())
        return;
    const auto area = prepare(bytes.size());
    std::memcpy(area.data(), bytes.data(), bytes.size());
    commit(bytes.size());
}

LETTERBOX_DECL std::error_code frame_reader::fail(errc e) noexcept {
    error_ = make_error_code(e);
    return error_;
}

LETTERBOX_DECL std::size_t frame_reader::bytes_wanted() const noexcept {
    const auto available = end_ - begin_;
    if (error_)
        return 0;
    if (available < frame_header_size)
        return frame_overhead - available; // header + end octet of an empty frame
    const auto* p = reinterpret_cast<const unsigned char*>(buffer_.data() + begin_);
    const std::uint32_t size = (std::uint32_t{p[3]} << 24U) | (std::uint32_t{p[4]} << 16U) |
                               (std::uint32_t{p[5]} << 8U) | std::uint32_t{p[6]};
    if (size > frame_max_ - frame_overhead)
        return 0; // next() reports the error
    const std::size_t total = frame_overhead + size;
    return available >= total ? 0 : total - available;
}

LETTERBOX_DECL std::optional<frame_view> frame_reader::next(std::error_code& ec) {
    ec = error_;
    if (error_)
        return std::nullopt;
    const auto available = end_ - begin_;
    const auto* p = reinterpret_cast<const unsigned char*>(buffer_.data() + begin_);

    // 1. The type octet, as soon as it is there.
    if (available < 1)
        return std::nullopt;
    const auto type = p[0];
    if (type != 1 && type != 2 && type != 3 && type != 8) {
        ec = fail(errc::frame_error);
        return std::nullopt;
    }
    // 2. The channel.
    if (available < 3)
        return std::nullopt;
    const auto channel = static_cast<std::uint16_t>((p[1] << 8U) | p[2]);
    if (channel > channel_max_) {
        ec = fail(errc::channel_error);
        return std::nullopt;
    }
    if (type == 8 && channel != 0) {
        ec = fail(errc::frame_error);
        return std::nullopt;
    }
    // 3. The payload size, compared with the limit before anything waits for the payload.
    if (available < frame_header_size)
        return std::nullopt;
    const std::uint32_t size = (std::uint32_t{p[3]} << 24U) | (std::uint32_t{p[4]} << 16U) |
                               (std::uint32_t{p[5]} << 8U) | std::uint32_t{p[6]};
    // frame_max_ >= frame_min_size, so the subtraction cannot wrap.
    if (size > frame_max_ - frame_overhead) {
        ec = fail(errc::frame_error);
        return std::nullopt;
    }
    // 4. Per-type minimum (and exact) sizes.
    if ((type == 1 && size < 4) || (type == 2 && size < 14) || (type == 8 && size != 0)) {
        ec = fail(errc::frame_error);
        return std::nullopt;
    }
    // 5. The whole frame and its end octet. `size` is at most frame_max_ceiling here, so the
    // sum cannot overflow a size_t.
    const std::size_t total = frame_overhead + std::size_t{size};
    if (available < total)
        return std::nullopt;
    if (p[total - 1] != frame_end) {
        ec = fail(errc::frame_error);
        return std::nullopt;
    }
    frame_view f;
    f.type = static_cast<frame_type>(type);
    f.channel = channel;
    f.payload = std::string_view(buffer_.data() + begin_ + frame_header_size, size);
    begin_ += total;
    if (begin_ == end_) {
        begin_ = 0; // everything handed out: the next input starts at the front again
        end_ = 0;
    }
    return f;
}

} // namespace letterbox::amqp::codec
