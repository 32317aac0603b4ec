// SPDX-License-Identifier: BSL-1.0
#pragma once

/// The sans-I/O AMQP 0-9-1 codec of `letterbox::amqp` (namespace `letterbox::amqp::codec`):
/// frames in (`frame_reader`) and out (`frame_writer`), methods (`method`, `encode`,
/// `decode_method`), content headers and basic properties, field tables, the per-channel
/// `content_assembler`, tune negotiation, and the mapping to and from `letterbox::message`.
/// No sockets, no threads, no clock: the connection layer feeds it bytes and writes what it
/// produces. See docs/amqp.md, "Codec".
#include <letterbox/amqp/codec/basic_properties.hpp>
#include <letterbox/amqp/codec/command.hpp>
#include <letterbox/amqp/codec/content_assembler.hpp>
#include <letterbox/amqp/codec/content_header.hpp>
#include <letterbox/amqp/codec/field_table.hpp>
#include <letterbox/amqp/codec/frame.hpp>
#include <letterbox/amqp/codec/frame_reader.hpp>
#include <letterbox/amqp/codec/frame_writer.hpp>
#include <letterbox/amqp/codec/message_mapping.hpp>
#include <letterbox/amqp/codec/method.hpp>
#include <letterbox/amqp/codec/negotiate.hpp>
