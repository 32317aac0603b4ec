// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/message.hpp>

#include <boost/uuid/name_generator_sha1.hpp>
#include <boost/uuid/uuid.hpp>

#include <string_view>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The header that keeps a foreign message-id: the AMQP `message-id` text of a message that
/// was not published by letterbox and is not a UUID in canonical form (a longstr). See
/// `to_message(const basic_properties&, std::string)`.
inline constexpr std::string_view foreign_message_id_header = "x-letterbox-amqp-message-id";

/// The namespace of the name-based (version 5) ids letterbox derives from foreign message-ids:
/// 428d4293-342f-4c54-826e-44324e7f7544. Part of the wire contract: changing it changes the
/// ids, and so breaks deduplication.
inline constexpr boost::uuids::uuid foreign_message_id_namespace = {
    {0x42, 0x8d, 0x42, 0x93, 0x34, 0x2f, 0x4c, 0x54, 0x82, 0x6e, 0x44, 0x32, 0x4e, 0x7f, 0x75,
     0x44}};

/// The letterbox id of a message whose AMQP message-id is `text` and not a canonical UUID: the
/// version 5 UUID of `text` in `foreign_message_id_namespace`. The same text always gives the
/// same id, so the inbox deduplicates redeliveries of foreign messages too.
inline message_id foreign_message_id(std::string_view text) {
    boost::uuids::name_generator_sha1 generate(foreign_message_id_namespace);
    return generate(text.data(), text.size());
}

} // namespace letterbox
