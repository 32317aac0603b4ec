// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <version>

#if !defined(__cpp_concepts) || __cpp_concepts < 201907L
#error "letterbox needs C++20 concepts: compile with -std=c++20 or newer"
#endif

#include <cstdio>
#include <cstdlib>

/// `LETTERBOX_ASSERT(cond)` checks an internal invariant. It is active unless `NDEBUG` is
/// defined; define `LETTERBOX_ASSERT` before including letterbox to route it elsewhere.
/// It never changes class layout, so translation units that disagree on it stay ODR-safe.
#ifndef LETTERBOX_ASSERT
#ifdef NDEBUG
#define LETTERBOX_ASSERT(cond) ((void)0)
#else
#define LETTERBOX_ASSERT(cond)                                                                     \
    ((cond) ? (void)0                                                                              \
            : (std::fprintf(stderr, "letterbox: assertion failed: %s (%s:%d)\n", #cond, __FILE__,  \
                            __LINE__),                                                             \
               std::abort()))
#endif
#endif

/// `LETTERBOX_ABI_NAMESPACE` names the inline namespace that every letterbox entity is declared
/// in: `letterbox::message` is `letterbox::LETTERBOX_ABI_NAMESPACE::message`, and users never
/// spell the inner name. It encodes the switches that change definitions, today only
/// `LETTERBOX_FAILPOINTS` (failpoint.hpp): a program that mixes translation units built with and
/// without it gets two distinct sets of symbols, so a call from one set into the other fails to
/// link, instead of the one-definition-rule violation that would silently keep one of the two
/// definitions (STYLE 2.4; nlohmann_json's `abi_macros.hpp` tags its namespace the same way).
#if defined(LETTERBOX_FAILPOINTS)
#define LETTERBOX_ABI_NAMESPACE abi_v0_failpoints
#else
#define LETTERBOX_ABI_NAMESPACE abi_v0
#endif

/// Separate compilation (after Beast's `BOOST_BEAST_SEPARATE_COMPILATION`). By default letterbox
/// is header-only: the non-template functions of the in-memory broker, the SQLite stores and
/// the other stateful parts are defined `inline` in `impl/` headers, which every translation
/// unit that includes them parses and compiles again. A program that defines
/// `LETTERBOX_SEPARATE_COMPILATION` (in every translation unit, e.g. with `-D`) includes only
/// their declarations, and compiles their definitions once, in one source file of its own that
/// includes `<letterbox/src.hpp>` and the `src.hpp` of each component it uses
/// (`<letterbox/sqlite/src.hpp>`, `<letterbox/amqp/src.hpp>`, `<letterbox/ops/src.hpp>`).
/// Templates stay in the headers either way. docs/separate-compilation.md.
///
/// `LETTERBOX_DECL` marks those definitions: `inline` when header-only, nothing otherwise.
/// `LETTERBOX_HEADER_ONLY` is 1 when the `impl/` headers are included from their headers.
#if defined(LETTERBOX_SEPARATE_COMPILATION)
#define LETTERBOX_HEADER_ONLY 0
#define LETTERBOX_DECL
#else
#define LETTERBOX_HEADER_ONLY 1
#define LETTERBOX_DECL inline
#endif
