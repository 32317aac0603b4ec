// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>

#include <boost/uuid/string_generator.hpp>
#include <boost/uuid/uuid.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <chrono>
#include <concepts>
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

/// Generates message ids, in one of two forms (RFC 9562):
///
/// - **time-ordered** (version 7), from the default constructor and from the constructor that
///   takes a clock: 48 bits of Unix milliseconds, a 12-bit counter, then 62 random bits. Each
///   id is greater than the one before it, as bytes and as text, even when the clock stands
///   still or steps back. A database index keyed on such ids (the inbox, the outbox's
///   `message_id`) grows at its end, instead of at a random page for each insert.
/// - **random** (version 4), from the constructor that takes only a seed: reproducible, the
///   same ids for the same seed in every version of letterbox.
///
/// The default constructor reads the system clock and seeds its random bits from
/// `std::random_device`. A seed and a clock (a `letterbox::clock` such as `virtual_clock`,
/// whose `wall_now()` it reads) give time-ordered ids that a deterministic run reproduces.
///
/// Thread safety: distinct objects are safe; a shared object is not.
class message_id_generator {
public:
    message_id_generator()
        : engine_(seed_from_device())
        , wall_now_([](const void*) { return std::chrono::system_clock::now(); }) {}

    explicit message_id_generator(std::uint64_t seed)
        : engine_(seed) {}

    /// Time-ordered ids at the times `clock.wall_now()` gives (any `std::chrono::sys_time`).
    /// The generator keeps a pointer to `clock`, which must outlive it.
    template <class Clock>
        requires requires(const Clock& c) {
            { c.wall_now() } -> std::convertible_to<std::chrono::system_clock::time_point>;
        }
    message_id_generator(std::uint64_t seed, const Clock& clock)
        : engine_(seed)
        , clock_(&clock)
        , wall_now_([](const void* c) -> std::chrono::system_clock::time_point {
            return static_cast<const Clock*>(c)->wall_now();
        }) {}
    /// Not from a temporary clock, which would be gone before the first id.
    template <class Clock>
    message_id_generator(std::uint64_t seed, const Clock&& clock) = delete;

    message_id_generator(const message_id_generator&) = delete;
    message_id_generator& operator=(const message_id_generator&) = delete;

    /// The next id: time-ordered or random, as constructed.
    message_id operator()() { return wall_now_ ? time_ordered() : random(); }

private:
    using wall_now_function = std::chrono::system_clock::time_point (*)(const void*);

    // The same ids, for the same seed, as `boost::uuids::basic_random_generator<std::mt19937_64>`
    // gives (each 64-bit draw fills 8 bytes, least significant first, then the variant and
    // version bits), without the Boost.Random headers that it costs every translation unit.
    message_id random() {
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

    // RFC 9562 section 6.2, method 1: the first 60 bits are the milliseconds and a counter,
    // read together as one number that only grows. A later millisecond starts its counter at a
    // random value below 2048, so that two generators seldom meet and the counter has room
    // to count; the same millisecond (or one before it) takes the last number plus one, which
    // carries into the milliseconds once the counter is full.
    message_id time_ordered() {
        const auto since_epoch = wall_now_(clock_).time_since_epoch();
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count();
        const std::uint64_t millis = ms < 0 ? 0 : static_cast<std::uint64_t>(ms) & 0xFFFF'FFFF'FFFF;
        if (millis > last_ >> 12)
            last_ = millis << 12 | engine_() >> 53;
        else
            ++last_;
        const std::uint64_t rand_b = engine_();
        // The milliseconds, the version (0111), the counter; then the variant (10), 62 bits.
        const std::uint64_t high = (last_ >> 12) << 16 | 0x7000 | (last_ & 0xFFF);
        const std::uint64_t low = (rand_b >> 2) | (std::uint64_t{1} << 63);
        message_id id;
        for (std::size_t i = 0; i < 8; ++i) {
            id.data[i] = static_cast<std::uint8_t>(high >> (56 - 8 * i));
            id.data[8 + i] = static_cast<std::uint8_t>(low >> (56 - 8 * i));
        }
        return id;
    }

    static std::uint64_t seed_from_device() {
        std::random_device rd;
        return (std::uint64_t{rd()} << 32) ^ rd();
    }

    std::mt19937_64 engine_{};
    const void* clock_ = nullptr;
    wall_now_function wall_now_ = nullptr;
    std::uint64_t last_ = 0; // the last id's 60 bits of time and counter
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
