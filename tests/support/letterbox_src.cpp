// SPDX-License-Identifier: BSL-1.0
// The test executables are built with LETTERBOX_SEPARATE_COMPILATION (tests/CMakeLists.txt):
// the non-template definitions of the core and of the enabled components are compiled here,
// once per build, instead of in every test batch. docs/separate-compilation.md.
#include <letterbox/src.hpp>

#if defined(LETTERBOX_TEST_SRC_SQLITE)
#include <letterbox/sqlite/src.hpp>
#endif
#if defined(LETTERBOX_TEST_SRC_POSTGRES)
#include <letterbox/postgres/src.hpp>
#endif
#if defined(LETTERBOX_TEST_SRC_AMQP)
#include <letterbox/amqp/src.hpp>
#endif
#if defined(LETTERBOX_TEST_SRC_OPS)
#include <letterbox/ops/src.hpp>
#endif
