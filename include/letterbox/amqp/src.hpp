// SPDX-License-Identifier: BSL-1.0
#pragma once

/// The definitions of the AMQP component's non-template functions, for a program built with
/// `LETTERBOX_SEPARATE_COMPILATION` (letterbox/config.hpp): include this header in exactly one
/// source file of the program, with `<letterbox/src.hpp>` (docs/separate-compilation.md).

#include <letterbox/config.hpp>

#include <letterbox/amqp/codec/impl/content_assembler.hpp>
#include <letterbox/amqp/codec/impl/frame_reader.hpp>
#include <letterbox/amqp/detail/impl/connection_core.hpp>
#include <letterbox/amqp/detail/impl/transport_state.hpp>
#include <letterbox/amqp/detail/impl/transport_state_consuming.hpp>
#include <letterbox/amqp/detail/impl/transport_state_publishing.hpp>
#include <letterbox/amqp/detail/impl/transport_state_settling.hpp>
#include <letterbox/amqp/detail/impl/transport_state_topology.hpp>
