// SPDX-License-Identifier: BSL-1.0
#pragma once

/// The `letterbox::postgres` component: a durable `outbox_store` and `inbox_store` in a
/// PostgreSQL database shared by any number of processes (`FOR UPDATE SKIP LOCKED` claims, so
/// several relays share one outbox, and LISTEN/NOTIFY wakes them: `outbox_listener`), their
/// `unit_of_work` (a transaction that the caller's business writes share), the `database` with its
/// connection pool, and the schema migrations in a schema of its own. Needs libpq (Debian
/// `libpq-dev`) and PostgreSQL 12 or newer; link `letterbox::postgres` (CMake option
/// `LETTERBOX_WITH_POSTGRES`). See docs/postgres.md.

#include <letterbox/postgres/connection.hpp>
#include <letterbox/postgres/database.hpp>
#include <letterbox/postgres/database_options.hpp>
#include <letterbox/postgres/inbox_store.hpp>
#include <letterbox/postgres/outbox_listener.hpp>
#include <letterbox/postgres/outbox_options.hpp>
#include <letterbox/postgres/outbox_store.hpp>
#include <letterbox/postgres/param.hpp>
#include <letterbox/postgres/result.hpp>
#include <letterbox/postgres/schema.hpp>
#include <letterbox/postgres/to_error_code.hpp>
#include <letterbox/postgres/unit_of_work.hpp>
