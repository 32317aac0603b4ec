// SPDX-License-Identifier: BSL-1.0
#pragma once

/// The definitions of the ops component's non-template functions (the HTTP server's state and
/// its sessions, where Boost.Beast's HTTP reader and writer are instantiated), for a program
/// built with `LETTERBOX_SEPARATE_COMPILATION` (letterbox/config.hpp): include this header in
/// exactly one source file of the program, with `<letterbox/src.hpp>`
/// (docs/separate-compilation.md).

#include <letterbox/config.hpp>

#include <letterbox/ops/detail/impl/http_session.hpp>
#include <letterbox/ops/detail/impl/server_state.hpp>
#include <letterbox/ops/detail/impl/server_state_dashboard.hpp>
#include <letterbox/ops/detail/impl/server_state_dlq.hpp>
#include <letterbox/ops/detail/impl/server_state_outbox.hpp>
#include <letterbox/ops/detail/impl/server_state_routes.hpp>
