// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <cstdint>
#include <string_view>

/// The methods of the AMQP 0-9-1 tx class (90): standard transactions.
///
/// Each struct holds the method's arguments, with the spec's defaults; reserved arguments
/// are not members (they are written as zero or empty and skipped when read). The static
/// members give the wire identity: `class_id`, `method_id`, `name` ("class.method") and
/// `has_content` (a content header and body frames follow the method).
namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::codec {

/// tx.select (90, 10): Puts the channel in transaction mode.
struct tx_select {
    static constexpr std::uint16_t class_id = 90;
    static constexpr std::uint16_t method_id = 10;
    static constexpr std::string_view name = "tx.select";
    static constexpr bool has_content = false;

    friend bool operator==(const tx_select&, const tx_select&) = default;
};

/// tx.select-ok (90, 11): Confirms tx.select.
struct tx_select_ok {
    static constexpr std::uint16_t class_id = 90;
    static constexpr std::uint16_t method_id = 11;
    static constexpr std::string_view name = "tx.select-ok";
    static constexpr bool has_content = false;

    friend bool operator==(const tx_select_ok&, const tx_select_ok&) = default;
};

/// tx.commit (90, 20): Commits the current transaction.
struct tx_commit {
    static constexpr std::uint16_t class_id = 90;
    static constexpr std::uint16_t method_id = 20;
    static constexpr std::string_view name = "tx.commit";
    static constexpr bool has_content = false;

    friend bool operator==(const tx_commit&, const tx_commit&) = default;
};

/// tx.commit-ok (90, 21): Confirms tx.commit.
struct tx_commit_ok {
    static constexpr std::uint16_t class_id = 90;
    static constexpr std::uint16_t method_id = 21;
    static constexpr std::string_view name = "tx.commit-ok";
    static constexpr bool has_content = false;

    friend bool operator==(const tx_commit_ok&, const tx_commit_ok&) = default;
};

/// tx.rollback (90, 30): Abandons the current transaction.
struct tx_rollback {
    static constexpr std::uint16_t class_id = 90;
    static constexpr std::uint16_t method_id = 30;
    static constexpr std::string_view name = "tx.rollback";
    static constexpr bool has_content = false;

    friend bool operator==(const tx_rollback&, const tx_rollback&) = default;
};

/// tx.rollback-ok (90, 31): Confirms tx.rollback.
struct tx_rollback_ok {
    static constexpr std::uint16_t class_id = 90;
    static constexpr std::uint16_t method_id = 31;
    static constexpr std::string_view name = "tx.rollback-ok";
    static constexpr bool has_content = false;

    friend bool operator==(const tx_rollback_ok&, const tx_rollback_ok&) = default;
};

} // namespace letterbox::amqp::codec
