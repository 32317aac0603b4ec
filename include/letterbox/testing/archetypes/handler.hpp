// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/handler.hpp>
#include <letterbox/config.hpp>
#include <letterbox/message.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Exactly what `letterbox::handler` requires, with a trivial body: generic code instantiated
/// with it proves it uses nothing else. It is move-constructible only (the concept does not
/// require copyability): not default-constructible, copyable or assignable, and callable only
/// as a non-const lvalue.
//[handler_archetype
struct handler_archetype {
    handler_archetype(handler_archetype&&) = default;
    void operator()(const message&) {}
};
//]

} // namespace letterbox::testing
