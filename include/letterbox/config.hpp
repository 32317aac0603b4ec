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
