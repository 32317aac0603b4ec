// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/content_header.hpp>
#include <letterbox/amqp/codec/detail/wire.hpp>
#include <letterbox/amqp/codec/frame_writer.hpp>
#include <letterbox/config.hpp>

#include <algorithm>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

template <class WritePayload>
std::error_code frame_writer::framed(std::string& out, frame_type type, std::uint16_t channel,
                                     WritePayload&& payload) const {
    const auto start = out.size();
    {
        detail::wire_writer w(out);
        w.u8(static_cast<std::uint8_t>(type));
        w.u16(channel);
        w.u32(0); // size, patched below
    }
    if (const std::error_code ec = payload(out)) {
        out.resize(start);
        return ec;
    }
    const auto size = out.size() - start - frame_header_size;
    if (size > max_payload()) {
        out.resize(start);
        return errc::invalid_argument;
    }
    detail::wire_writer w(out);
    w.patch_u32(start + 3, static_cast<std::uint32_t>(size));
    w.u8(frame_end);
    return {};
}

inline std::error_code frame_writer::write_frame(std::string& out, frame_type type,
                                                 std::uint16_t channel,
                                                 std::string_view payload) const {
    if (payload.size() > max_payload())
        return errc::invalid_argument;
    return framed(out, type, channel, [payload](std::string& o) {
        o.append(payload);
        return std::error_code{};
    });
}

inline void frame_writer::write_heartbeat(std::string& out) const {
    (void)write_frame(out, frame_type::heartbeat, 0, {});
}

inline std::error_code frame_writer::write_method(std::string& out, std::uint16_t channel,
                                                  const method& m) const {
    return framed(out, frame_type::method, channel, [&m](std::string& o) { return encode(m, o); });
}

inline std::error_code frame_writer::write_content(std::string& out, std::uint16_t channel,
                                                   const method& m,
                                                   const basic_properties& properties,
                                                   std::string_view body) const {
    if (!has_content(m))
        return errc::invalid_argument;
    const auto start = out.size();
    if (const auto ec = write_method(out, channel, m))
        return ec;
    content_header header;
    header.class_id = class_id_of(m);
    header.body_size = body.size();
    header.properties = properties;
    if (const auto ec = framed(out, frame_type::header, channel,
                               [&header](std::string& o) { return encode(header, o); })) {
        out.resize(start); // drop the method frame too: all or nothing
        return ec;
    }
    // Body frames of at most max_payload() bytes (which the size check of write_frame would
    // also enforce); reserve once for all of them.
    const auto chunk = max_payload();
    const auto frames = (body.size() + chunk - 1) / chunk;
    out.reserve(out.size() + body.size() + frames * frame_overhead);
    while (!body.empty()) {
        const auto n = std::min(body.size(), chunk);
        (void)write_frame(out, frame_type::body, channel, body.substr(0, n));
        body.remove_prefix(n);
    }
    return {};
}

} // namespace letterbox::amqp::codec
