// SPDX-License-Identifier: BSL-1.0
#pragma once

/// The definitions of the PostgreSQL component's non-template functions, for a program built
/// with `LETTERBOX_SEPARATE_COMPILATION` (letterbox/config.hpp): include this header in exactly
/// one source file of the program, with `<letterbox/src.hpp>` (docs/separate-compilation.md).

#include <letterbox/config.hpp>

#include <letterbox/postgres/impl/connection.hpp>
#include <letterbox/postgres/impl/database.hpp>
#include <letterbox/postgres/impl/outbox_store.hpp>
#include <letterbox/postgres/impl/schema.hpp>
