// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

/// The four AMQP 0-9-1 frame types (spec 4.2.3). Any other type octet is a frame error.
enum class frame_type : std::uint8_t {
    method = 1,    ///< a method (class id, method id, arguments)
    header = 2,    ///< a content header (class id, weight, body size, properties)
    body = 3,      ///< a slice of a content body
    heartbeat = 8, ///< an empty frame on channel 0
};

/// One frame as the `frame_reader` hands it out: a view, not a copy.
///
/// `payload` points into the reader's buffer and stays valid until the next non-const call on
/// that reader (`next`, `feed`, `prepare`, `commit`, `set_limits`). Copy what you keep.
struct frame_view {
    frame_type type = frame_type::heartbeat;
    std::uint16_t channel = 0;
    std::string_view payload{};

    friend bool operator==(const frame_view&, const frame_view&) = default;
};

/// Bytes of the frame header: type (1), channel (2), payload size (4).
inline constexpr std::size_t frame_header_size = 7;
/// Bytes a frame adds to its payload: the header and the frame-end octet.
inline constexpr std::size_t frame_overhead = frame_header_size + 1;
/// The octet that ends every frame (spec: frame-end, 206).
inline constexpr std::uint8_t frame_end = 0xCE;
/// The smallest frame_max a peer may negotiate, and the limit before connection.tune (spec:
/// frame-min-size). A server proposing less is refused (GHSA-jh48-qjf5-fx5v).
inline constexpr std::uint32_t frame_min_size = 4096;
/// letterbox's hard ceiling on frame_max, in bytes (1 MiB, eight times RabbitMQ's default of
/// 128 KiB). A frame_max of 0 ("no limit" in AMQP) means this, and larger values are clamped to
/// it, so that no peer can make the reader wait for (and buffer) more than 1 MiB per frame.
/// Content bodies of any size still pass: they are split into body frames.
inline constexpr std::uint32_t frame_max_ceiling = 1024U * 1024U;
/// The protocol header a client sends first: "AMQP" 0 0 9 1.
inline constexpr std::string_view protocol_header{"AMQP\x00\x00\x09\x01", 8};

/// The frame_max a reader or writer enforces for a configured value: 0 and anything above
/// `frame_max_ceiling` give the ceiling. (Values below `frame_min_size` are refused earlier.)
constexpr std::uint32_t effective_frame_max(std::uint32_t frame_max) noexcept {
    return frame_max == 0 || frame_max > frame_max_ceiling ? frame_max_ceiling : frame_max;
}

/// The channel_max a reader enforces: 0 ("no limit") means 65535.
constexpr std::uint16_t effective_channel_max(std::uint16_t channel_max) noexcept {
    return channel_max == 0 ? std::uint16_t{65535} : channel_max;
}

} // namespace letterbox::amqp::codec
