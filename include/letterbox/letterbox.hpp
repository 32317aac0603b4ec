// SPDX-License-Identifier: BSL-1.0
#pragma once

/// The core of letterbox: the standard library, nlohmann_json and Boost.Asio headers only.
/// Optional components have their own umbrellas (`letterbox/testing.hpp`, ...), never
/// included from here.
#include <letterbox/clock.hpp>
#include <letterbox/concepts/clock.hpp>
#include <letterbox/concepts/handler.hpp>
#include <letterbox/concepts/inbox_store.hpp>
#include <letterbox/concepts/outbox_store.hpp>
#include <letterbox/concepts/retry_policy.hpp>
#include <letterbox/concepts/transport.hpp>
#include <letterbox/concepts/unit_of_work.hpp>
#include <letterbox/config.hpp>
#include <letterbox/consume_options.hpp>
#include <letterbox/consumer.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/error.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/headers.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/inbox/in_memory_inbox_store.hpp>
#include <letterbox/message.hpp>
#include <letterbox/middleware/idempotent.hpp>
#include <letterbox/outbox/in_memory_outbox_store.hpp>
#include <letterbox/outbox/outbox_record.hpp>
#include <letterbox/outbox/outbox_relay.hpp>
#include <letterbox/payload.hpp>
#include <letterbox/store_time.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/topology/topic_match.hpp>
#include <letterbox/transport/in_memory.hpp>
#include <letterbox/version.hpp>
