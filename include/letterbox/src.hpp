// SPDX-License-Identifier: BSL-1.0
#pragma once

/// The definitions of the core's non-template functions, for a program built with
/// `LETTERBOX_SEPARATE_COMPILATION` (config.hpp): include this header in exactly one source
/// file of the program, and nowhere else (docs/separate-compilation.md). Header-only, the
/// default, it adds nothing: every header already includes its definitions.

#include <letterbox/config.hpp>

#include <letterbox/dlq/impl/dead_letter_entry.hpp>
#include <letterbox/dlq/impl/dead_letter_filter.hpp>
#include <letterbox/impl/field_table.hpp>
#include <letterbox/impl/payload.hpp>
#include <letterbox/outbox/impl/in_memory_outbox_store.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_basic.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_connections.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_dead_letters.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_delivery.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_errors.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_events.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_expiry.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_faults.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_observation.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_queue_contents.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_reply_to.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_returns.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_routing.hpp>
#include <letterbox/transport/in_memory/detail/impl/broker_state_topology.hpp>
#include <letterbox/transport/in_memory/detail/impl/transport_state.hpp>
