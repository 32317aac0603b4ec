// SPDX-License-Identifier: BSL-1.0
//
// letterbox's non-template code, compiled once for the whole program
// (docs/separate-compilation.md). The program's other sources are built with
// LETTERBOX_SEPARATE_COMPILATION defined, so they only declare it. Optional: without this file
// and that definition, letterbox is header-only.
//[src
#include <letterbox/sqlite/src.hpp>
#include <letterbox/src.hpp>
//]
