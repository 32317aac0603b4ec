// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <type_traits>

#include <letterbox/amqp/codec/methods/basic.hpp>
#include <letterbox/amqp/codec/methods/channel.hpp>
#include <letterbox/amqp/codec/methods/confirm.hpp>
#include <letterbox/amqp/codec/methods/connection.hpp>
#include <letterbox/amqp/codec/methods/exchange.hpp>
#include <letterbox/amqp/codec/methods/queue.hpp>
#include <letterbox/amqp/codec/methods/tx.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec::detail {

/// The argument list of each method, in wire order, for one visitor that writes and one that
/// reads (method_fields<T>::apply(visitor, m) with `m` const for writing). Consecutive `bit`s
/// share octets; the visitors do the packing. Reserved arguments are visited as `reserved_*`.
template <class Method>
struct method_fields {
    // Methods without arguments need no specialisation; one with arguments that lacks its
    // specialisation fails here instead of encoding nothing.
    static_assert(std::is_empty_v<Method>, "method_fields: this method has arguments to list");
    template <class Visitor, class M>
    static void apply(Visitor&, M&) {}
};

template <>
struct method_fields<connection_start> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.u8(m.version_major);
        v.u8(m.version_minor);
        v.table(m.server_properties);
        v.longstr(m.mechanisms);
        v.longstr(m.locales);
    }
};
template <>
struct method_fields<connection_start_ok> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.table(m.client_properties);
        v.shortstr(m.mechanism);
        v.longstr(m.response);
        v.shortstr(m.locale);
    }
};
template <>
struct method_fields<connection_secure> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.longstr(m.challenge);
    }
};
template <>
struct method_fields<connection_secure_ok> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.longstr(m.response);
    }
};
template <>
struct method_fields<connection_tune> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.u16(m.channel_max);
        v.u32(m.frame_max);
        v.u16(m.heartbeat);
    }
};
template <>
struct method_fields<connection_tune_ok> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.u16(m.channel_max);
        v.u32(m.frame_max);
        v.u16(m.heartbeat);
    }
};
template <>
struct method_fields<connection_open> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.shortstr(m.virtual_host);
        v.reserved_shortstr();
        v.reserved_bit();
    }
};
template <>
struct method_fields<connection_open_ok> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M&) {
        v.reserved_shortstr();
    }
};
template <>
struct method_fields<connection_close> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.u16(m.reply_code);
        v.shortstr(m.reply_text);
        v.u16(m.failing_class_id);
        v.u16(m.failing_method_id);
    }
};
template <>
struct method_fields<connection_blocked> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.shortstr(m.reason);
    }
};
template <>
struct method_fields<channel_open> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M&) {
        v.reserved_shortstr();
    }
};
template <>
struct method_fields<channel_open_ok> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M&) {
        v.reserved_longstr();
    }
};
template <>
struct method_fields<channel_flow> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.bit(m.active);
    }
};
template <>
struct method_fields<channel_flow_ok> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.bit(m.active);
    }
};
template <>
struct method_fields<channel_close> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.u16(m.reply_code);
        v.shortstr(m.reply_text);
        v.u16(m.failing_class_id);
        v.u16(m.failing_method_id);
    }
};
template <>
struct method_fields<exchange_declare> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.reserved_u16();
        v.shortstr(m.exchange);
        v.shortstr(m.type);
        v.bit(m.passive);
        v.bit(m.durable);
        v.bit(m.auto_delete);
        v.bit(m.internal);
        v.bit(m.no_wait);
        v.table(m.arguments);
    }
};
template <>
struct method_fields<exchange_delete> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.reserved_u16();
        v.shortstr(m.exchange);
        v.bit(m.if_unused);
        v.bit(m.no_wait);
    }
};
template <>
struct method_fields<exchange_bind> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.reserved_u16();
        v.shortstr(m.destination);
        v.shortstr(m.source);
        v.shortstr(m.routing_key);
        v.bit(m.no_wait);
        v.table(m.arguments);
    }
};
template <>
struct method_fields<exchange_unbind> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.reserved_u16();
        v.shortstr(m.destination);
        v.shortstr(m.source);
        v.shortstr(m.routing_key);
        v.bit(m.no_wait);
        v.table(m.arguments);
    }
};
template <>
struct method_fields<queue_declare> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.reserved_u16();
        v.shortstr(m.queue);
        v.bit(m.passive);
        v.bit(m.durable);
        v.bit(m.exclusive);
        v.bit(m.auto_delete);
        v.bit(m.no_wait);
        v.table(m.arguments);
    }
};
template <>
struct method_fields<queue_declare_ok> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.shortstr(m.queue);
        v.u32(m.message_count);
        v.u32(m.consumer_count);
    }
};
template <>
struct method_fields<queue_bind> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.reserved_u16();
        v.shortstr(m.queue);
        v.shortstr(m.exchange);
        v.shortstr(m.routing_key);
        v.bit(m.no_wait);
        v.table(m.arguments);
    }
};
template <>
struct method_fields<queue_purge> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.reserved_u16();
        v.shortstr(m.queue);
        v.bit(m.no_wait);
    }
};
template <>
struct method_fields<queue_purge_ok> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.u32(m.message_count);
    }
};
template <>
struct method_fields<queue_delete> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.reserved_u16();
        v.shortstr(m.queue);
        v.bit(m.if_unused);
        v.bit(m.if_empty);
        v.bit(m.no_wait);
    }
};
template <>
struct method_fields<queue_delete_ok> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.u32(m.message_count);
    }
};
template <>
struct method_fields<queue_unbind> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.reserved_u16();
        v.shortstr(m.queue);
        v.shortstr(m.exchange);
        v.shortstr(m.routing_key);
        v.table(m.arguments);
    }
};
template <>
struct method_fields<basic_qos> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.u32(m.prefetch_size);
        v.u16(m.prefetch_count);
        v.bit(m.global);
    }
};
template <>
struct method_fields<basic_consume> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.reserved_u16();
        v.shortstr(m.queue);
        v.shortstr(m.consumer_tag);
        v.bit(m.no_local);
        v.bit(m.no_ack);
        v.bit(m.exclusive);
        v.bit(m.no_wait);
        v.table(m.arguments);
    }
};
template <>
struct method_fields<basic_consume_ok> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.shortstr(m.consumer_tag);
    }
};
template <>
struct method_fields<basic_cancel> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.shortstr(m.consumer_tag);
        v.bit(m.no_wait);
    }
};
template <>
struct method_fields<basic_cancel_ok> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.shortstr(m.consumer_tag);
    }
};
template <>
struct method_fields<basic_publish> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.reserved_u16();
        v.shortstr(m.exchange);
        v.shortstr(m.routing_key);
        v.bit(m.mandatory);
        v.bit(m.immediate);
    }
};
template <>
struct method_fields<basic_return> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.u16(m.reply_code);
        v.shortstr(m.reply_text);
        v.shortstr(m.exchange);
        v.shortstr(m.routing_key);
    }
};
template <>
struct method_fields<basic_deliver> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.shortstr(m.consumer_tag);
        v.u64(m.delivery_tag);
        v.bit(m.redelivered);
        v.shortstr(m.exchange);
        v.shortstr(m.routing_key);
    }
};
template <>
struct method_fields<basic_get> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.reserved_u16();
        v.shortstr(m.queue);
        v.bit(m.no_ack);
    }
};
template <>
struct method_fields<basic_get_ok> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.u64(m.delivery_tag);
        v.bit(m.redelivered);
        v.shortstr(m.exchange);
        v.shortstr(m.routing_key);
        v.u32(m.message_count);
    }
};
template <>
struct method_fields<basic_get_empty> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M&) {
        v.reserved_shortstr();
    }
};
template <>
struct method_fields<basic_ack> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.u64(m.delivery_tag);
        v.bit(m.multiple);
    }
};
template <>
struct method_fields<basic_reject> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.u64(m.delivery_tag);
        v.bit(m.requeue);
    }
};
template <>
struct method_fields<basic_recover> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.bit(m.requeue);
    }
};
template <>
struct method_fields<basic_nack> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.u64(m.delivery_tag);
        v.bit(m.multiple);
        v.bit(m.requeue);
    }
};
template <>
struct method_fields<confirm_select> {
    template <class Visitor, class M>
    static void apply(Visitor& v, M& m) {
        v.bit(m.no_wait);
    }
};

} // namespace letterbox::amqp::codec::detail
