// SPDX-License-Identifier: BSL-1.0
#pragma once

/// The definitions of the SQLite component's non-template functions, for a program built with
/// `LETTERBOX_SEPARATE_COMPILATION` (letterbox/config.hpp): include this header in exactly one
/// source file of the program, with `<letterbox/src.hpp>` (docs/separate-compilation.md).

#include <letterbox/config.hpp>

#include <letterbox/sqlite/impl/checkpoint_store.hpp>
#include <letterbox/sqlite/impl/connection.hpp>
#include <letterbox/sqlite/impl/database.hpp>
#include <letterbox/sqlite/impl/event_store.hpp>
#include <letterbox/sqlite/impl/outbox_store.hpp>
#include <letterbox/sqlite/impl/saga_store.hpp>
#include <letterbox/sqlite/impl/schema.hpp>
#include <letterbox/sqlite/impl/snapshot_store.hpp>
