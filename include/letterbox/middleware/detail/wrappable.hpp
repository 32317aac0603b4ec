// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/delivery_handler.hpp>
#include <letterbox/concepts/handler.hpp>
#include <letterbox/config.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware::detail {

/// A plain handler or a delivery handler: what a middleware layer can wrap.
template <class H>
concept wrappable = handler<H> || delivery_handler<H>;

} // namespace letterbox::middleware::detail
