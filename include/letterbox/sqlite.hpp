// SPDX-License-Identifier: BSL-1.0
#pragma once

/// The `letterbox::sqlite` component: a durable `outbox_store`, `inbox_store`, `saga_store`,
/// `event_store`, `snapshot_store` and `checkpoint_store` in an SQLite database file (WAL), their
/// `unit_of_work` (a `BEGIN IMMEDIATE` transaction that the caller's business writes share), the
/// `database` with its connection pool, and the schema migrations. Needs SQLite 3.38 or newer
/// (`RETURNING`, `json_each`); link `letterbox::sqlite` (CMake option `LETTERBOX_WITH_SQLITE`).
/// See docs/sqlite.md.
#include <letterbox/sqlite/checkpoint_store.hpp>
#include <letterbox/sqlite/connection.hpp>
#include <letterbox/sqlite/database.hpp>
#include <letterbox/sqlite/database_options.hpp>
#include <letterbox/sqlite/event_store.hpp>
#include <letterbox/sqlite/inbox_store.hpp>
#include <letterbox/sqlite/outbox_row_error.hpp>
#include <letterbox/sqlite/outbox_store.hpp>
#include <letterbox/sqlite/saga_store.hpp>
#include <letterbox/sqlite/schema.hpp>
#include <letterbox/sqlite/snapshot_store.hpp>
#include <letterbox/sqlite/statement.hpp>
#include <letterbox/sqlite/to_error_code.hpp>
#include <letterbox/sqlite/unit_of_work.hpp>
