// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/topology/queue.hpp>

#include <variant>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::topology {

/// One thing to declare on a broker: an exchange, a queue or a binding
/// (`topology::async_declare_all` declares a list of them in order).
using declaration = std::variant<exchange, queue, binding>;

} // namespace letterbox::topology
