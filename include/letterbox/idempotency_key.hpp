// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/detail/header_text.hpp>
#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/foreign_message_id.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/message.hpp>
#include <letterbox/payload.hpp>

#include <nlohmann/json.hpp>

#include <concepts>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

/// The key that the idempotent middleware (`letterbox::idempotent`) deduplicates a message on,
/// and the functions that find it. The inbox stores (consumer id, key) pairs; by default the
/// key is the message id, and a consumer can take it from a header or a field of the body
/// instead (`idempotent_handler::with_key`).
///
/// A message for which the function finds no key is never deduplicated against others: the
/// idempotent handler refuses it (`errc::missing_idempotency_key`, dead-lettered with the
/// reason `missing-idempotency-key`) or handles it without deduplication, as the consumer
/// chose (`idempotent_handler::on_missing_key`). The nil message id is never a key: it is what
/// a message published without an AMQP `message-id` carries, so it names no message. See
/// `docs/design/idempotency-keys.md`.
namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::idempotency_key {

/// The key of a key text: the UUID itself when `text` is a UUID in canonical (lower-case)
/// form, else `foreign_message_id(text)`: the id the AMQP mapping gives a message whose
/// message-id is that text, so a key text and a foreign message-id of the same text give the
/// same key. The same text always gives the same key. Returns `std::nullopt` for empty text and
/// for the nil UUID, which name nothing.
inline std::optional<message_id> from_text(std::string_view text) {
    if (text.empty())
        return std::nullopt;
    if (const auto parsed = parse_message_id(text); parsed && letterbox::to_string(*parsed) == text)
        return parsed->is_nil() ? std::nullopt : parsed;
    return foreign_message_id(text);
}

/// The default key: the message id, or none when it is nil.
struct by_message_id {
    std::optional<message_id> operator()(const message& m) const noexcept {
        if (m.id.is_nil())
            return std::nullopt;
        return m.id;
    }
};

/// The key is the text of a header: a string (bytes as they are), a byte array, or an integer
/// in decimal. None when the header is absent, empty, or of another type (a table, a float,
/// a boolean...), so that a malformed key is refused rather than guessed.
class by_header {
public:
    explicit by_header(std::string name)
        : name_(std::move(name)) {}

    std::optional<message_id> operator()(const message& m) const {
        const auto* v = m.headers.find(name_);
        if (v == nullptr)
            return std::nullopt;
        const auto text = detail::header_text(*v);
        return text ? from_text(*text) : std::nullopt;
    }

    /// The header's name.
    const std::string& name() const noexcept { return name_; }

private:
    std::string name_;
};

/// The producer's deduplication id (`headers::dedup_id`, as with SQS FIFO's
/// `MessageDeduplicationId`), else the message id: a producer that sends the same business
/// request twice under two message ids gives both the same deduplication id, and the inbox keeps
/// the second from having an effect for as long as it keeps the first's record (the window,
/// `idempotent_handler::with_retention`). A header present but unusable (empty, or not a text
/// or an integer) gives no key, so that the message is refused rather than deduplicated on an
/// id its producer did not mean.
struct by_dedup_id {
    std::optional<message_id> operator()(const message& m) const {
        if (const auto* v = m.headers.find(headers::dedup_id)) {
            const auto text = detail::header_text(*v);
            return text ? from_text(*text) : std::nullopt;
        }
        return by_message_id{}(m);
    }
};

/// The key is a field of the message's JSON body, named by a JSON pointer (RFC 6901, such as
/// `/order/id`): a string, or an integer in decimal. None when the body is not JSON, the field
/// is absent, empty, or of another type. The constructor throws `letterbox::error` with
/// `errc::invalid_argument` for a malformed pointer.
///
/// The body is parsed once per message, so prefer a header when the producer can set one.
class by_json_field {
public:
    explicit by_json_field(const std::string& pointer)
        : pointer_(parse(pointer)) {}

    std::optional<message_id> operator()(const message& m) const {
        const auto body = detail::parse_json_body(m.body);
        if (body.is_discarded() || !body.contains(pointer_))
            return std::nullopt;
        const auto& field = body.at(pointer_);
        if (field.is_string())
            return from_text(field.get_ref<const std::string&>());
        if (field.is_number_unsigned())
            return from_text(std::to_string(field.get<std::uint64_t>()));
        if (field.is_number_integer())
            return from_text(std::to_string(field.get<std::int64_t>()));
        return std::nullopt;
    }

    /// The pointer, as text.
    std::string pointer() const { return pointer_.to_string(); }

private:
    static nlohmann::json::json_pointer parse(const std::string& pointer) {
        try {
            return nlohmann::json::json_pointer(pointer);
        } catch (const nlohmann::json::exception& e) {
            throw letterbox::error(errc::invalid_argument,
                                   "idempotency_key::by_json_field: \"" + pointer +
                                       "\" is not a JSON pointer such as /order/id: " + e.what());
        }
    }

    nlohmann::json::json_pointer pointer_;
};

/// A function that finds a message's key: called with `const message&`, it returns
/// `std::optional<message_id>` (the key itself) or something convertible to
/// `std::optional<std::string>` (a key text, turned into a key by `from_text`); an empty
/// optional means "this message has no key". It must be deterministic (every delivery of a
/// message gives the same key) and must not throw for a message it cannot read: return no key.
template <class F>
concept function = std::copy_constructible<F> && std::invocable<const F&, const message&> &&
    (std::same_as<std::invoke_result_t<const F&, const message&>, std::optional<message_id>> ||
     std::convertible_to<std::invoke_result_t<const F&, const message&>,
                         std::optional<std::string>>);

/// What the idempotent middleware does with a message for which the key function finds no key.
enum class missing_key_action {
    /// Refuse it as a permanent failure (`errc::missing_idempotency_key`): the dead-letter
    /// layer dead-letters it with the reason `missing-idempotency-key`, and without one the
    /// consumer rejects it to the queue's dead-letter exchange. The default.
    refuse,
    /// Run the effect in its unit of work without an inbox record: every delivery of it has
    /// its effect. For effects that are idempotent by themselves (an upsert) or consumers of
    /// publishers that cannot set a key; counted in `idempotent_stats::unkeyed`.
    handle_without_dedup,
};

} // namespace letterbox::idempotency_key
