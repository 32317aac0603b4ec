// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/frame.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

/// Cuts an incoming byte stream into AMQP frames, without I/O: feed it bytes as they arrive,
/// pull complete frames out. Frames come out identically however the stream is split into
/// reads (S-AMQP-19).
///
/// Every frame header is checked before the reader waits for, or buffers, the payload it
/// announces, in this order (each error is sticky: the reader stays failed, and the connection
/// should close with `amqp_reply_code(error)`):
/// 1. the type octet is method (1), header (2), body (3) or heartbeat (8), else
///    `errc::frame_error` (this also rejects a peer that is not speaking AMQP, such as an HTTP
///    server, after one byte: S-AMQP-01, -06);
/// 2. the channel is at most channel_max, else `errc::channel_error`; a heartbeat is on
///    channel 0, else `errc::frame_error`;
/// 3. the payload size is at most frame_max - 8, else `errc::frame_error` (the size is compared,
///    never added to, so a length near 2^32 cannot wrap: CVE-2019-18609);
/// 4. per-type minimum sizes: a method payload has at least 4 bytes, a content header at least
///    14, a heartbeat exactly 0, else `errc::frame_error` (GHSA-9mmv-r8g3-qp46);
/// 5. once the frame is complete, its last octet is 0xCE, else `errc::frame_error`.
///
/// Memory: the reader holds only the bytes it was given and has not handed out yet; it never
/// reserves memory from a length field. `prepare(n)` / `commit(n)` let a socket read straight
/// into it; `bytes_wanted()` says how many more bytes would complete the next frame.
///
/// Thread safety: none; one reader per connection, used from one strand.
///
/// Example:
///
///     frame_reader reader;                  // frame_min_size until connection.tune
///     reader.feed(bytes_from_socket);
///     std::error_code ec;
///     while (auto frame = reader.next(ec)) { /* dispatch *frame */ }
///     if (ec) { /* close the connection with amqp_reply_code(ec) */ }
class frame_reader {
public:
    /// A reader that enforces frame_min_size (4096) and no channel limit, as the spec requires
    /// before connection.tune.
    frame_reader() = default;

    /// Sets the limits negotiated in connection.tune/tune-ok (see `negotiate_frame_max`).
    /// `frame_max` 0 or above `frame_max_ceiling` means the ceiling; `channel_max` 0 means 65535.
    /// Returns `errc::invalid_argument` (and changes nothing) for a frame_max below
    /// `frame_min_size` other than 0.
    std::error_code set_limits(std::uint32_t frame_max, std::uint16_t channel_max) noexcept;

    /// The largest frame accepted, header and frame-end included.
    std::uint32_t frame_max() const noexcept { return frame_max_; }
    /// The largest channel number accepted.
    std::uint16_t channel_max() const noexcept { return channel_max_; }

    /// Appends a copy of `bytes` to the input.
    void feed(std::string_view bytes);

    /// Returns a writable area of `n` bytes at the end of the input, for a socket read; call
    /// `commit` with the number of bytes actually read. The area is valid until the next
    /// non-const call.
    std::span<char> prepare(std::size_t n);
    /// Makes the first `n` bytes of the last `prepare`d area part of the input (at most the size
    /// prepared).
    void commit(std::size_t n) noexcept;

    /// The next complete frame, or `std::nullopt`: with `ec` clear when more bytes are needed,
    /// with `ec` set (and kept for every later call) when the stream is invalid.
    ///
    /// The frame's payload points into the reader and stays valid until the next non-const call.
    std::optional<frame_view> next(std::error_code& ec);

    /// How many more bytes complete the next frame, when known (1 to 7 while its header is
    /// incomplete, as if the payload were empty; 0 when a complete frame is waiting).
    std::size_t bytes_wanted() const noexcept;
    /// Bytes buffered and not yet handed out as frames.
    std::size_t buffered() const noexcept { return end_ - begin_; }
    /// The error that stopped the reader, if any.
    std::error_code error() const noexcept { return error_; }

private:
    std::error_code fail(errc e) noexcept;
    void compact();

    std::string buffer_{};
    std::size_t begin_ = 0;    // first byte not yet handed out
    std::size_t end_ = 0;      // one past the last input byte
    std::size_t prepared_ = 0; // size of the area returned by the last prepare()
    std::uint32_t frame_max_ = frame_min_size;
    std::uint16_t channel_max_ = 65535;
    std::error_code error_{};
};

} // namespace letterbox::amqp::codec

#if LETTERBOX_HEADER_ONLY
#include <letterbox/amqp/codec/impl/frame_reader.hpp>
#endif
