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
