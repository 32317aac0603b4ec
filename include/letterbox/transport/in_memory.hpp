// SPDX-License-Identifier: BSL-1.0
#pragma once

/// The in-memory RabbitMQ model and the `transport` over it.
#include <letterbox/transport/in_memory/basic_delivery.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/transport/in_memory/broker_counters.hpp>
#include <letterbox/transport/in_memory/broker_profile.hpp>
#include <letterbox/transport/in_memory/channel.hpp>
#include <letterbox/transport/in_memory/close_reason.hpp>
#include <letterbox/transport/in_memory/connection.hpp>
#include <letterbox/transport/in_memory/handlers.hpp>
#include <letterbox/transport/in_memory/queue_info.hpp>
#include <letterbox/transport/in_memory/returned_message.hpp>
#include <letterbox/transport/in_memory/transport.hpp>
