// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <string>
#include <system_error>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The one error vocabulary of letterbox. Every component reports codes whose category is
/// `letterbox::error_category()`: as `std::error_code` from its synchronous calls, and as
/// `letterbox::error_code` (`boost::system::error_code`, which holds them unchanged) first in
/// the completion of its asynchronous operations.
///
/// The values from `not_found` to `internal_error` carry the AMQP 0-9-1 reply code of the
/// same name (see `amqp_reply_code`), so a channel or connection error from the in-memory
/// model and from a real broker compare equal.
enum class errc {
    // Protocol reply codes (AMQP 0-9-1 §1.2, RabbitMQ names).
    content_too_large = 1, ///< 311: a message exceeds the broker's size limit
    no_route,              ///< 312: a mandatory message could not be routed (basic.return)
    no_consumers,          ///< 313
    connection_forced,     ///< 320: the broker closed the connection (shutdown, restart)
    invalid_path,          ///< 402
    access_refused,        ///< 403
    not_found,             ///< 404: exchange or queue does not exist
    resource_locked,       ///< 405: exclusive queue owned by another connection
    precondition_failed,   ///< 406: e.g. unknown delivery tag, inequivalent declare
    frame_error,           ///< 501
    syntax_error,          ///< 502
    command_invalid,       ///< 503
    channel_error,         ///< 504
    unexpected_frame,      ///< 505
    resource_error,        ///< 506
    not_allowed,           ///< 530
    not_implemented,       ///< 540: e.g. global qos on a quorum queue
    internal_error,        ///< 541

    // Transport outcomes that are not reply codes.
    channel_closed = 100, ///< the operation's channel is closed (see its close reason)
    connection_closed,    ///< the operation's connection is closed
    publish_nacked,       ///< the broker refused the publish (basic.nack)
    outcome_unknown,      ///< the connection was lost before the confirm: it may or may not
                          ///< have been stored; publish again with the same message id
    consumer_cancelled,   ///< the broker cancelled the consumer (queue deleted, ...)
    timed_out,            ///< a deadline passed
    closed,               ///< the object was closed by its owner

    // Payload (decoding and encoding) errors: permanent by nature.
    payload_malformed = 200, ///< the body is not valid for its content type (e.g. not JSON)
    payload_type_mismatch,   ///< the body parsed but does not match the requested type
    payload_unencodable,     ///< the value could not be serialised (e.g. invalid UTF-8)

    // Store errors.
    already_processed = 300, ///< the inbox already holds (consumer id, message id)
    duplicate_message_id,    ///< the outbox already holds this message id
    lease_lost,              ///< the row's lease expired or belongs to another owner
    record_not_found,        ///< no row with this id
    transaction_closed,      ///< the unit of work was already committed or rolled back
    invalid_state,           ///< the record's status does not allow the operation
    concurrency_conflict,    ///< the record changed since it was read (optimistic concurrency):
                             ///< nothing was written; read it again and retry

    // Database errors of a durable store (SQLite, PostgreSQL), 400 to 499
    // (`condition::store_error`).
    // Each leaves the database unchanged: the failed statement or transaction was rolled back
    // as a whole.
    store_not_a_database = 400, ///< the file exists but is not a database of this kind
    store_corrupt,              ///< the database file is damaged (e.g. a torn or altered page)
    store_busy,                 ///< another connection held the lock past the busy timeout and the
                                ///< bounded retries; nothing was written, try again later
    store_full,                 ///< the disk or the database is full; the transaction rolled back
    store_io_error,             ///< the operating system reported an I/O error
    store_unavailable,    ///< the database could not be opened (missing directory, permissions)
    store_readonly,       ///< the database is read-only
    store_schema_too_new, ///< the schema was written by a newer letterbox; refusing to touch it
    store_error,          ///< any other database failure (the store keeps the driver's text)
    store_schema_too_old, ///< the schema is older than this letterbox's, and the database was
                          ///< opened read-only, which cannot migrate it; nothing was changed
    store_serialization_failure, ///< a serializable transaction lost to a concurrent one
                                 ///< (PostgreSQL 40001): nothing was written; run the whole
                                 ///< unit of work again (retry policy), never just the statement
    store_deadlock,              ///< the database broke a deadlock by aborting this transaction
                                 ///< (PostgreSQL 40P01): nothing was written; run the unit again
    store_connection_lost,       ///< the connection to the database server was lost or refused; a
                                 ///< COMMIT that lost it has an unknown outcome
    store_unique_violation,      ///< a write broke a unique constraint of the caller's own tables
                                 ///< (the stores report their keys as duplicate_message_id or
                                 ///< already_processed)

    // Message-handling and configuration errors, 500 to 599.
    handler_failed = 500,    ///< a handler failed without an error code of its own (it threw)
    dedup_window_too_short,  ///< the inbox retention is shorter than the redelivery horizon
    invalid_argument,        ///< an option is out of its documented range
    missing_idempotency_key, ///< the message has no idempotency key (no message id, or none
                             ///< that the consumer's key function found): it cannot be
                             ///< deduplicated, so it is refused rather than handled unguarded
    missing_group_key,       ///< the message has no group key, and the consumer's groups
                             ///< refuse such messages rather than guess an order for them
    missing_reply_to,        ///< a request reached a responder without a `reply_to` address,
                             ///< so no reply can be sent
};

/// The `std::error_category` of `letterbox::errc`.
class error_category_impl final : public std::error_category {
public:
    const char* name() const noexcept override { return "letterbox"; }

    std::string message(int value) const override {
        switch (static_cast<errc>(value)) {
        case errc::content_too_large:
            return "content too large";
        case errc::no_route:
            return "no route: the message was returned as unroutable";
        case errc::no_consumers:
            return "no consumers";
        case errc::connection_forced:
            return "connection forced closed by the broker";
        case errc::invalid_path:
            return "invalid path";
        case errc::access_refused:
            return "access refused";
        case errc::not_found:
            return "not found";
        case errc::resource_locked:
            return "resource locked";
        case errc::precondition_failed:
            return "precondition failed";
        case errc::frame_error:
            return "frame error";
        case errc::syntax_error:
            return "syntax error";
        case errc::command_invalid:
            return "command invalid";
        case errc::channel_error:
            return "channel error";
        case errc::unexpected_frame:
            return "unexpected frame";
        case errc::resource_error:
            return "resource error";
        case errc::not_allowed:
            return "not allowed";
        case errc::not_implemented:
            return "not implemented";
        case errc::internal_error:
            return "internal error";
        case errc::channel_closed:
            return "channel closed";
        case errc::connection_closed:
            return "connection closed";
        case errc::publish_nacked:
            return "publish refused by the broker (nack)";
        case errc::outcome_unknown:
            return "publish outcome unknown: the connection was lost before the confirm";
        case errc::consumer_cancelled:
            return "consumer cancelled by the broker";
        case errc::timed_out:
            return "timed out";
        case errc::closed:
            return "closed";
        case errc::payload_malformed:
            return "payload malformed";
        case errc::payload_type_mismatch:
            return "payload does not match the requested type";
        case errc::payload_unencodable:
            return "payload cannot be encoded";
        case errc::already_processed:
            return "message already processed by this consumer";
        case errc::duplicate_message_id:
            return "duplicate message id";
        case errc::lease_lost:
            return "lease lost";
        case errc::record_not_found:
            return "record not found";
        case errc::transaction_closed:
            return "unit of work already finished";
        case errc::invalid_state:
            return "the record's status does not allow this operation";
        case errc::concurrency_conflict:
            return "concurrency conflict: the record changed since it was read";
        case errc::store_not_a_database:
            return "the store's file is not a database";
        case errc::store_corrupt:
            return "the store's database file is corrupt";
        case errc::store_busy:
            return "the store is locked by another writer (busy timeout and retries exhausted)";
        case errc::store_full:
            return "the store's disk or database is full; the transaction was rolled back";
        case errc::store_io_error:
            return "the store hit an I/O error";
        case errc::store_unavailable:
            return "the store's database cannot be opened";
        case errc::store_readonly:
            return "the store's database is read-only";
        case errc::store_schema_too_new:
            return "the store's schema is newer than this version of letterbox";
        case errc::store_error:
            return "store error";
        case errc::store_schema_too_old:
            return "the store's schema is older than this version of letterbox, and a read-only "
                   "open does not migrate it";
        case errc::store_serialization_failure:
            return "the store's transaction lost to a concurrent one (serialization failure); "
                   "nothing was written, run it again";
        case errc::store_deadlock:
            return "the store's database aborted the transaction to break a deadlock; nothing "
                   "was written, run it again";
        case errc::store_connection_lost:
            return "the connection to the store's database server was lost";
        case errc::store_unique_violation:
            return "the write breaks a unique constraint of the store's database";
        case errc::handler_failed:
            return "the handler failed";
        case errc::dedup_window_too_short:
            return "the inbox retention is shorter than the redelivery horizon: a late redelivery "
                   "would no longer be recognised as a duplicate";
        case errc::invalid_argument:
            return "invalid argument";
        case errc::missing_idempotency_key:
            return "the message has no idempotency key (no message id, or none found by the "
                   "consumer's key function), so the inbox cannot deduplicate it";
        case errc::missing_group_key:
            return "the message has no group key (no x-letterbox-group header, or none found by "
                   "the consumer's key function), so its order is unknown";
        case errc::missing_reply_to:
            return "the request has no reply_to address, so no reply can be sent";
        }
        return "unknown letterbox error";
    }
};

/// Returns the category of `letterbox::errc`. Every call returns the same object.
inline const std::error_category& error_category() noexcept {
    // A function-local static constant, not mutable namespace-scope state.
    static const error_category_impl instance;
    return instance;
}

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), error_category()};
}

/// Families of `std::error_code`s that callers test for rather than single values, as
/// `std::error_condition`s of `letterbox::condition_category()`: write
/// `ec == letterbox::condition::store_error`. A code of any category can be compared with them.
enum class condition {
    /// A database error of a durable store (`errc::store_*`, the values from 400 to 499): a
    /// failure of the store itself, never of the message being handled.
    store_error = 1,
    /// An operation failed because of the way to the broker rather than because of the message
    /// it carried: a lost or closed connection or channel (`connection_closed`,
    /// `channel_closed`, `closed`), an unknown outcome, a timeout, a cancelled consumer, an AMQP
    /// connection-level ("hard") error (`connection_forced`, `invalid_path` and the 5xx reply
    /// codes), or any error outside letterbox's category (sockets, TLS). Everything else (a
    /// return, a nack, a channel-level refusal such as 404 or 406, a payload error) is the
    /// message's own failure. An empty `error_code` is never one.
    transport_failure,
};

/// The `std::error_category` of `letterbox::condition`: decides which codes each condition
/// stands for.
class condition_category_impl final : public std::error_category {
public:
    const char* name() const noexcept override { return "letterbox.condition"; }

    std::string message(int value) const override {
        switch (static_cast<condition>(value)) {
        case condition::store_error:
            return "store error";
        case condition::transport_failure:
            return "transport failure";
        }
        return "unknown letterbox condition";
    }

    bool equivalent(const std::error_code& ec, int value) const noexcept override {
        switch (static_cast<condition>(value)) {
        case condition::store_error:
            return ec.category() == letterbox::error_category() && ec.value() >= 400 &&
                   ec.value() < 500;
        case condition::transport_failure:
            if (!ec)
                return false;
            if (ec.category() != letterbox::error_category())
                return true;
            return is_transport_errc(static_cast<errc>(ec.value()));
        }
        return false;
    }

private:
    static bool is_transport_errc(errc e) noexcept {
        switch (e) {
        case errc::connection_forced:
        case errc::invalid_path:
        case errc::frame_error:
        case errc::syntax_error:
        case errc::command_invalid:
        case errc::channel_error:
        case errc::unexpected_frame:
        case errc::resource_error:
        case errc::not_allowed:
        case errc::not_implemented:
        case errc::internal_error:
        case errc::channel_closed:
        case errc::connection_closed:
        case errc::outcome_unknown:
        case errc::consumer_cancelled:
        case errc::timed_out:
        case errc::closed:
            return true;
        default:
            return false;
        }
    }
};

/// Returns the category of `letterbox::condition`. Every call returns the same object.
inline const std::error_category& condition_category() noexcept {
    // A function-local static constant, not mutable namespace-scope state.
    static const condition_category_impl instance;
    return instance;
}

inline std::error_condition make_error_condition(condition c) noexcept {
    return {static_cast<int>(c), condition_category()};
}

/// Whether `ec` is a database error of a durable store: `ec == condition::store_error`.
inline bool is_store_error(std::error_code ec) noexcept {
    return ec == make_error_condition(condition::store_error);
}

/// Whether an operation failed because of the way to the broker rather than because of the
/// message it carried: `ec == condition::transport_failure` (see `condition` for the codes).
/// The outbox relay backs off on these instead of counting a row's attempt; a dead-letter scan
/// stops on them (what it held has gone back to the queue).
inline bool is_transport_failure(const std::error_code& ec) noexcept {
    return ec == make_error_condition(condition::transport_failure);
}

/// The AMQP 0-9-1 reply code for a protocol error, or 0 when `e` is not one.
inline constexpr int amqp_reply_code(errc e) noexcept {
    switch (e) {
    case errc::content_too_large:
        return 311;
    case errc::no_route:
        return 312;
    case errc::no_consumers:
        return 313;
    case errc::connection_forced:
        return 320;
    case errc::invalid_path:
        return 402;
    case errc::access_refused:
        return 403;
    case errc::not_found:
        return 404;
    case errc::resource_locked:
        return 405;
    case errc::precondition_failed:
        return 406;
    case errc::frame_error:
        return 501;
    case errc::syntax_error:
        return 502;
    case errc::command_invalid:
        return 503;
    case errc::channel_error:
        return 504;
    case errc::unexpected_frame:
        return 505;
    case errc::resource_error:
        return 506;
    case errc::not_allowed:
        return 530;
    case errc::not_implemented:
        return 540;
    case errc::internal_error:
        return 541;
    default:
        return 0;
    }
}

/// The AMQP reply-text prefix RabbitMQ uses for a protocol error ("PRECONDITION_FAILED").
inline constexpr const char* amqp_reply_name(errc e) noexcept {
    switch (e) {
    case errc::content_too_large:
        return "CONTENT_TOO_LARGE";
    case errc::no_route:
        return "NO_ROUTE";
    case errc::no_consumers:
        return "NO_CONSUMERS";
    case errc::connection_forced:
        return "CONNECTION_FORCED";
    case errc::invalid_path:
        return "INVALID_PATH";
    case errc::access_refused:
        return "ACCESS_REFUSED";
    case errc::not_found:
        return "NOT_FOUND";
    case errc::resource_locked:
        return "RESOURCE_LOCKED";
    case errc::precondition_failed:
        return "PRECONDITION_FAILED";
    case errc::frame_error:
        return "FRAME_ERROR";
    case errc::syntax_error:
        return "SYNTAX_ERROR";
    case errc::command_invalid:
        return "COMMAND_INVALID";
    case errc::channel_error:
        return "CHANNEL_ERROR";
    case errc::unexpected_frame:
        return "UNEXPECTED_FRAME";
    case errc::resource_error:
        return "RESOURCE_ERROR";
    case errc::not_allowed:
        return "NOT_ALLOWED";
    case errc::not_implemented:
        return "NOT_IMPLEMENTED";
    case errc::internal_error:
        return "INTERNAL_ERROR";
    default:
        return "";
    }
}

/// An exception carrying a letterbox error code, thrown by the throwing convenience overloads.
class error : public std::system_error {
public:
    explicit error(std::error_code ec)
        : std::system_error(ec) {}
    error(std::error_code ec, const std::string& what)
        : std::system_error(ec, what) {}
    explicit error(errc e)
        : std::system_error(make_error_code(e)) {}
    error(errc e, const std::string& what)
        : std::system_error(make_error_code(e), what) {}
};

} // namespace letterbox

template <>
struct std::is_error_code_enum<letterbox::errc> : std::true_type {};

template <>
struct std::is_error_condition_enum<letterbox::condition> : std::true_type {};
