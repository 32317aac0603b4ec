// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/transport/in_memory/profile_for_version.hpp>

#include <cctype>
#include <string>
#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp {

/// The broker a connection reached, as its `connection.start` announced itself (the `product`
/// and `version` server properties), and the `in_memory::broker_profile` letterbox assumes for
/// it: the `in_memory::profile_match` of its version (`version`, `profile`, `exact`, `note`),
/// plus the product.
///
/// The version is read only from a RabbitMQ broker: a `product` other than "RabbitMQ" (any
/// case), such as another AMQP 0-9-1 server, gives the baseline profile ("3.10"), not exact,
/// whatever its version. A broker that sends no `product` is taken for RabbitMQ.
///
/// Example (a log line at each connection):
///
///     auto b = letterbox::amqp::broker_info::from_server_properties(info.server_properties);
///     std::printf("%s\n", b.describe().c_str()); // RabbitMQ 3.10.8 (broker profile 3.10)
struct broker_info : in_memory::profile_match {
    /// The `product` server property ("RabbitMQ"), printable and at most `max_version_size`
    /// characters as `version` is; empty when the broker sent none.
    std::string product{};

    /// What `server_properties` (from `connection.start`) say; their `product` and `version`
    /// are read when they are strings (a longstr), and ignored otherwise.
    static broker_info from_server_properties(const field_table& server_properties) {
        const auto text = [&](std::string_view name) {
            const auto* v = server_properties.find(name);
            const auto* s = v != nullptr ? v->get_if<std::string>() : nullptr;
            return s != nullptr ? *s : std::string();
        };
        broker_info b;
        const auto product = text("product");
        static_cast<in_memory::profile_match&>(b) = in_memory::profile_for_version(text("version"));
        b.product = in_memory::detail::printable_prefix(product, max_version_size);
        if (!product.empty() && !is_rabbitmq(product)) {
            b.profile = in_memory::broker_profile::rabbitmq_3_10();
            b.exact = false;
            b.note = "the broker is " + b.product + (b.version.empty() ? "" : " " + b.version) +
                     ", not RabbitMQ: letterbox assumes RabbitMQ 3.10's behaviour, its baseline";
        }
        return b;
    }

    /// "RabbitMQ 3.10.8 (broker profile 3.10)": the product (or "the broker"), the version
    /// (or "of an unknown version") and the profile's name; without the note.
    std::string describe() const {
        std::string out = product.empty() ? std::string("the broker") : product;
        out += version.empty() ? std::string(" of an unknown version") : " " + version;
        out += " (broker profile ";
        out += profile.name;
        out += ')';
        return out;
    }

private:
    static bool is_rabbitmq(std::string_view product) noexcept {
        constexpr std::string_view name = "rabbitmq";
        if (product.size() != name.size())
            return false;
        for (std::size_t i = 0; i < name.size(); ++i)
            if (std::tolower(static_cast<unsigned char>(product[i])) != name[i])
                return false;
        return true;
    }
};

} // namespace letterbox::amqp
