// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/command.hpp>
#include <letterbox/amqp/codec/content_header.hpp>
#include <letterbox/amqp/codec/frame.hpp>
#include <letterbox/amqp/codec/method.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <cstdint>
#include <optional>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

/// Joins the frames of one channel into commands: a method frame alone, or a content-bearing
/// method followed by its content header and body frames (spec 4.2.6), checking the sequence.
///
/// Use one assembler per open channel (and one for channel 0), created when the channel opens:
/// per-channel state then exists only for channels the client opened, never for any number a
/// peer sends (GHSA-5fp7-wg2f-hhgp). Frames of different channels may interleave; within one
/// channel, content frames follow their method without anything in between.
///
/// Errors, each with the reply code to close with (`amqp_reply_code`); after an error the
/// partial content is dropped and the assembler is idle again:
/// - those of `decode_method` and `decode_content_header`;
/// - `errc::command_invalid` (503): a connection-class method on a channel other than 0, or any
///   other class on channel 0 (S-AMQP-08);
/// - `errc::unexpected_frame` (505): a content header without a content-bearing method before
///   it, or of another class; a body frame without a header; a method frame while content is
///   expected; a body frame longer than what is left of the declared body size (S-AMQP-09);
/// - `errc::content_too_large` (311): a declared body size above `max_body_size()`, refused
///   from the header, before any body byte is buffered (S-AMQP-10);
/// - `errc::invalid_argument`: a frame of another channel than the content in progress (the
///   caller routed it wrongly).
///
/// Heartbeat frames are not commands; the assembler ignores them.
///
/// Memory: the body grows with the body frames actually received, never from the declared size
/// alone (at most `preallocation_limit` is reserved up front).
///
/// Example:
///
///     content_assembler& a = channels[frame.channel].assembler;
///     if (auto cmd = a.feed(frame, ec)) { /* handle *cmd */ }
///     else if (ec) { /* close with amqp_reply_code(ec) */ }
class content_assembler {
public:
    /// RabbitMQ 3.10's default `max_message_size`: 128 MiB.
    static constexpr std::uint64_t default_max_body_size = 128ULL * 1024U * 1024U;
    /// The most a header's declared body size makes the assembler reserve before the body
    /// arrives.
    static constexpr std::uint64_t preallocation_limit = 128ULL * 1024U;

    content_assembler() = default;
    /// An assembler that refuses bodies above `max_body_size` bytes.
    explicit content_assembler(std::uint64_t max_body_size) noexcept
        : max_body_size_(max_body_size) {}

    std::uint64_t max_body_size() const noexcept { return max_body_size_; }

    /// Takes the next frame of this channel. Returns a command when `frame` completes one;
    /// otherwise `std::nullopt`, with `ec` clear (more frames needed) or set (see above).
    std::optional<command> feed(const frame_view& frame, std::error_code& ec);

    /// Whether a content-bearing method is waiting for its header or body.
    bool in_progress() const noexcept { return state_ != state::idle; }

    /// Drops any partial content (for example when the channel closes).
    void reset() noexcept;

private:
    enum class state { idle, header, body };

    std::optional<command> fail(errc e, std::error_code& ec) noexcept;

    command pending_{};
    std::uint64_t remaining_ = 0;
    std::uint64_t max_body_size_ = default_max_body_size;
    state state_ = state::idle;
};

} // namespace letterbox::amqp::codec

#if LETTERBOX_HEADER_ONLY
#include <letterbox/amqp/codec/impl/content_assembler.hpp>
#endif
