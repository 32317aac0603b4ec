// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/codec/methods/basic.hpp>
#include <letterbox/amqp/codec/methods/channel.hpp>
#include <letterbox/amqp/codec/methods/confirm.hpp>
#include <letterbox/amqp/codec/methods/connection.hpp>
#include <letterbox/amqp/codec/methods/exchange.hpp>
#include <letterbox/amqp/codec/methods/queue.hpp>
#include <letterbox/amqp/codec/methods/tx.hpp>
#include <letterbox/config.hpp>
#include <letterbox/error.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <variant>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

/// Any AMQP 0-9-1 method letterbox speaks: every method of the connection, channel, exchange,
/// queue, basic, confirm and tx classes, including RabbitMQ's extensions (exchange.bind and
/// unbind, basic.nack, confirm.select, connection.blocked and unblocked). Left out: access.*
/// (gone in 0-9-1), basic.recover-async (deprecated), connection.update-secret.
///
/// A default-constructed `method` holds a `connection_start`.
using method = std::variant<
    connection_start, connection_start_ok, connection_secure, connection_secure_ok, connection_tune,
    connection_tune_ok, connection_open, connection_open_ok, connection_close, connection_close_ok,
    connection_blocked, connection_unblocked, channel_open, channel_open_ok, channel_flow,
    channel_flow_ok, channel_close, channel_close_ok, exchange_declare, exchange_declare_ok,
    exchange_delete, exchange_delete_ok, exchange_bind, exchange_bind_ok, exchange_unbind,
    exchange_unbind_ok, queue_declare, queue_declare_ok, queue_bind, queue_bind_ok, queue_purge,
    queue_purge_ok, queue_delete, queue_delete_ok, queue_unbind, queue_unbind_ok, basic_qos,
    basic_qos_ok, basic_consume, basic_consume_ok, basic_cancel, basic_cancel_ok, basic_publish,
    basic_return, basic_deliver, basic_get, basic_get_ok, basic_get_empty, basic_ack, basic_reject,
    basic_recover, basic_recover_ok, basic_nack, confirm_select, confirm_select_ok, tx_select,
    tx_select_ok, tx_commit, tx_commit_ok, tx_rollback, tx_rollback_ok>;

/// Appends the payload of a method frame for `m`: class id, method id, then the arguments
/// (consecutive bits packed into octets, low bit first).
///
/// Errors (`out` is left as it was): a shortstr argument longer than 255 bytes, a table that
/// cannot be encoded (see `encode(const field_table&, std::string&)`) or a longstr over
/// 2^32 - 1 bytes give `errc::invalid_argument`. These are the caller's errors, not protocol
/// errors: `amqp_reply_code` of them is 0.
inline std::error_code encode(const method& m, std::string& out);

/// Decodes the payload of a method frame.
///
/// Errors, each with the reply code to close the connection with (`amqp_reply_code`):
/// - `errc::frame_error` (501): fewer than 4 bytes, an argument truncated or running past the
///   payload, or bytes left after the last argument;
/// - `errc::syntax_error` (502): a table with an unknown type tag, nested deeper than
///   `max_field_depth` or holding more than `max_field_count` values;
/// - `errc::command_invalid` (503): a class id and method id that name no method above.
///
/// On error the result is a default `method` and must be ignored.
inline method decode_method(std::string_view payload, std::error_code& ec);

/// The method's name as the spec writes it ("basic.deliver"), for logs and errors.
inline std::string_view name_of(const method& m) noexcept;
/// The method's class id (10 connection, 20 channel, 40 exchange, 50 queue, 60 basic,
/// 85 confirm, 90 tx).
inline std::uint16_t class_id_of(const method& m) noexcept;
/// The method's id within its class.
inline std::uint16_t method_id_of(const method& m) noexcept;
/// Whether a content header and body frames follow the method (basic.publish, basic.return,
/// basic.deliver, basic.get-ok).
inline bool has_content(const method& m) noexcept;

} // namespace letterbox::amqp::codec

#include <letterbox/amqp/codec/impl/method.hpp>
