// SPDX-License-Identifier: BSL-1.0
#pragma once

/// The `letterbox::amqp` component: an AMQP 0-9-1 transport for RabbitMQ on Boost.Asio. Link
/// `letterbox::amqp` (CMake option `LETTERBOX_WITH_AMQP`). It holds the sans-I/O codec
/// (`letterbox::amqp::codec`), the URL parser, the connection (`amqp::connection`) and the
/// `letterbox::transport` model built on it (`amqp::transport`). See docs/amqp.md.
#include <letterbox/amqp/broker_info.hpp>
#include <letterbox/amqp/codec.hpp>
#include <letterbox/amqp/connection.hpp>
#include <letterbox/amqp/endpoint.hpp>
#include <letterbox/amqp/transport.hpp>
#include <letterbox/amqp/transport_event.hpp>
#include <letterbox/amqp/transport_options.hpp>
#include <letterbox/amqp/url.hpp>
