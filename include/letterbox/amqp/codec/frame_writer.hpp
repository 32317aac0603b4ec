// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/basic_properties.hpp>
#include <letterbox/amqp/codec/frame.hpp>
#include <letterbox/amqp/codec/method.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

/// Appends AMQP frames to an output buffer, without I/O, never exceeding frame_max.
///
/// Every write appends whole frames to `out` (a connection's coalescing write buffer) or, on
/// error, leaves `out` exactly as it was, so a failed write never leaves half a frame queued.
/// Errors are the caller's (`errc::invalid_argument`, reply code 0): the connection fails the
/// one operation, not the connection.
/// - A method or content header whose payload exceeds frame_max - 8 is refused: neither can be
///   split.
/// - A content body is split into body frames of at most frame_max - 8 bytes each; an empty
///   body sends no body frame (GHSA-hfjv-vcp3-39wh is the bug this rules out).
///
/// Thread safety: const member functions may run concurrently; `set_frame_max` may not.
///
/// Example:
///
///     frame_writer writer;
///     std::string out;
///     writer.write_method(out, 1, basic_qos{.prefetch_count = 100});
///     writer.write_content(out, 1, basic_publish{.exchange = "orders", .routing_key = "new"},
///                          to_basic_properties(message), message.body);
///     // async_write(socket, asio::buffer(out), ...)
class frame_writer {
public:
    /// A writer for frame_min_size (4096), the limit before connection.tune.
    frame_writer() = default;

    /// Sets the negotiated frame_max: 0 or above `frame_max_ceiling` means the ceiling. Returns
    /// `errc::invalid_argument` (and changes nothing) below `frame_min_size` other than 0.
    std::error_code set_frame_max(std::uint32_t frame_max) noexcept {
        if (frame_max != 0 && frame_max < frame_min_size)
            return errc::invalid_argument;
        frame_max_ = effective_frame_max(frame_max);
        return {};
    }

    /// The largest frame written, header and frame-end included.
    std::uint32_t frame_max() const noexcept { return frame_max_; }
    /// The largest payload of one frame: frame_max - 8.
    std::size_t max_payload() const noexcept { return frame_max_ - frame_overhead; }

    /// Appends the protocol header "AMQP" 0 0 9 1, which a client sends first.
    static void write_protocol_header(std::string& out) { out.append(protocol_header); }

    /// Appends one frame with the given payload. Errors: a payload over `max_payload()`.
    std::error_code write_frame(std::string& out, frame_type type, std::uint16_t channel,
                                std::string_view payload) const;

    /// Appends a heartbeat frame (type 8, channel 0, empty).
    void write_heartbeat(std::string& out) const;

    /// Appends a method frame. Errors: those of `encode(const method&, std::string&)`, and a
    /// payload over `max_payload()`. A content-bearing method (basic.publish, ...) written alone
    /// is allowed here; the peer then expects its content, so use `write_content` for those.
    std::error_code write_method(std::string& out, std::uint16_t channel, const method& m) const;

    /// Appends a content-bearing method (basic.publish, basic.return, basic.deliver,
    /// basic.get-ok), its content header with `properties` and `body.size()`, and the body in
    /// frames of at most `max_payload()` bytes.
    ///
    /// Errors: a method without content; those of `write_method`; a content header that does not
    /// fit in one frame or cannot be encoded.
    std::error_code write_content(std::string& out, std::uint16_t channel, const method& m,
                                  const basic_properties& properties, std::string_view body) const;

private:
    // Writes the 7-byte header with a placeholder size, runs `payload(out)`, then patches the
    // size and appends the end octet; rolls back on error or when the payload is too large.
    template <class WritePayload>
    std::error_code framed(std::string& out, frame_type type, std::uint16_t channel,
                           WritePayload&& payload) const;

    std::uint32_t frame_max_ = frame_min_size;
};

} // namespace letterbox::amqp::codec

#include <letterbox/amqp/codec/impl/frame_writer.hpp>
