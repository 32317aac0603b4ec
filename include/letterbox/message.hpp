// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>

#include <boost/uuid/string_generator.hpp>
#include <boost/uuid/uuid.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// A message id: a UUID, assigned once when the message is born (the outbox row is written)
/// and carried unchanged through publish, redelivery, retry, dead-lettering and replay.
/// Deduplication (the inbox) depends on it.
using message_id = boost::uuids::uuid;

/// Parses the canonical text form of a message id; returns `std::nullopt` for anything else.
inline std::optional<message_id> parse_message_id(std::string_view text) noexcept {
    if (text.size() != 36)
        return std::nullopt;
    try {
        return boost::uuids::string_generator{}(text.begin(), text.end());
    } catch (...) {
        return std::nullopt;
    }
}

/// Generates message ids. Seeded generators give reproducible ids, which deterministic
/// simulations need; the default constructor seeds from `std::random_device`.
///
/// Thread safety: distinct objects are safe; a shared object is not.
class message_id_generator {
public:
    message_id_generator()
        : engine_(seed_from_device()) {}
    explicit message_id_generator(std::uint64_t seed)
        : engine_(seed) {}
    message_id_generator(const message_id_generator&) = delete;
    message_id_generator& operator=(const message_id_generator&) = delete;

    /// A version 4 (random) UUID: the same ids, for the same seed, as
    /// `boost::uuids::basic_random_generator<std::mt19937_64>` gives (each 64-bit draw fills
    /// 8 bytes, least significant first, then the RFC 4122 variant and version bits), without
    /// the Boost.Random headers that it costs every translation unit.
    message_id operator()() {
        message_id id;
        for (std::size_t i = 0; i < id.size(); i += 8) {
            const std::uint64_t bits = engine_();
            for (std::size_t j = 0; j < 8; ++j)
                id.data[i + j] = static_cast<std::uint8_t>(bits >> (8 * j));
        }
        id.data[8] = static_cast<std::uint8_t>((id.data[8] & 0xBF) | 0x80); // variant 10xxxxxx
        id.data[6] = static_cast<std::uint8_t>((id.data[6] & 0x4F) | 0x40); // version 0100xxxx
        return id;
    }

private:
    static std::uint64_t seed_from_device() {
        std::random_device rd;
        return (std::uint64_t{rd()} << 32) ^ rd();
    }

    std::mt19937_64 engine_{};
};

/// The AMQP basic properties a message carries besides its id, type and headers.
struct message_properties {
    std::optional<std::string> content_type{};
    std::optional<std::string> content_encoding{};
    std::optional<std::string> correlation_id{};
    std::optional<std::string> reply_to{};
    /// Per-message TTL in milliseconds, as a decimal string (AMQP says shortstr).
    std::optional<std::string> expiration{};
    std::optional<letterbox::timestamp> timestamp{};
    /// Delivery mode 2 when true, 1 when false. letterbox defaults to persistent because a
    /// reliable-messaging library should not lose messages on a broker restart by default.
    bool persistent = true;
    std::optional<std::uint8_t> priority{};
    std::optional<std::string> app_id{};
    std::optional<std::string> user_id{};

    friend bool operator==(const message_properties&, const message_properties&) = default;
};

/// The letterbox envelope: one message as it travels from the outbox to a handler.
///
/// - `id` is the letterbox message id (AMQP `message-id`). A default-constructed message has
///   the nil id until one is assigned. No message leaves letterbox with the nil id: the outbox
///   refuses it, and a transport's `async_publish` (`in_memory::transport`, `amqp::transport`)
///   gives a message whose id is nil a fresh id before it publishes it (the caller's object is
///   not changed: assign the id yourself when you need to know it). Only a publisher outside
///   letterbox sends a message without a message-id (or the in-memory broker's channel API,
///   which plays one and assigns nothing); it arrives with the nil id. A message-id that is not
///   a letterbox id arrives as `foreign_message_id` of its text (letterbox/basic_properties.hpp
///   says how properties map to a message).
/// - `type` is the event or command type name (AMQP `type`).
/// - `exchange` and `routing_key` say where it is (or was) published.
/// - `headers` is an AMQP field table.
/// - `body` holds opaque bytes; it may contain NULs and invalid UTF-8.
///
/// A message is a value: copying it copies everything, including the id.
struct message {
    message_id id{};
    std::string type{};
    std::string exchange{};
    std::string routing_key{};
    field_table headers{};
    std::string body{};
    message_properties properties{};

    friend bool operator==(const message&, const message&) = default;
};

/// Returns the id's canonical lower-case text form. Call it qualified
/// (`letterbox::to_string(id)`): unqualified, ADL also finds `boost::uuids::to_string`.
inline std::string to_string(const message_id& id) {
    return boost::uuids::to_string(id);
}

} // namespace letterbox
