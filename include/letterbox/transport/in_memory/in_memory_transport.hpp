// SPDX-License-Identifier: BSL-1.0
#pragma once

// Moved to <letterbox/transport/in_memory/transport.hpp>, and renamed `in_memory::transport`
// (next to `in_memory::broker`, as `amqp::transport` is next to `amqp::connection`); kept so
// existing includes and the old name compile, with a deprecation warning where it is used.
#include <letterbox/config.hpp>
#include <letterbox/transport/in_memory/transport.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

using in_memory_transport [[deprecated("use letterbox::in_memory::transport")]] =
    in_memory::transport;

} // namespace letterbox
