// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <concepts>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The name that messages of payload type `T` travel under: the message's `type` (AMQP's
/// `type` property), which the dead-letter queue's filters and the operators' tools show, and
/// which other services read to know what they received. `name` is a `std::string_view`.
///
/// Give `T` a static member `message_type`, or specialise this trait for a type you cannot
/// change:
///
///     struct order_shipped {
///         static constexpr std::string_view message_type = "order-shipped";
///         int order_id = 0;
///     };
///
///     template <> struct letterbox::message_type<vendor::invoice> {
///         static constexpr std::string_view name = "invoice";
///     };
template <class T>
struct message_type {};

template <class T>
    requires requires {
        { T::message_type } -> std::convertible_to<std::string_view>;
    }
struct message_type<T> {
    static constexpr std::string_view name = T::message_type;
};

/// `T` has a message type name (`message_type<T>::name`).
template <class T>
concept named_message = requires {
    { message_type<T>::name } -> std::convertible_to<std::string_view>;
};

} // namespace letterbox
