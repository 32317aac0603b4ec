// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/async_delivery_handler.hpp>
#include <letterbox/concepts/async_handler.hpp>
#include <letterbox/concepts/delivery_handler.hpp>
#include <letterbox/concepts/handler.hpp>
#include <letterbox/config.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::middleware::detail {

/// A handler or a delivery handler, synchronous or not: what a middleware layer can wrap.
template <class H>
concept wrappable =
    handler<H> || delivery_handler<H> || async_handler<H> || async_delivery_handler<H>;

/// A wrappable handler that is asynchronous: the layer around it is too.
template <class H>
concept wraps_async = async_handler<H> || async_delivery_handler<H>;

} // namespace letterbox::middleware::detail
