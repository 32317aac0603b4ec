// SPDX-License-Identifier: BSL-1.0
#pragma once

// An exchange of the in-memory broker: its declaration, the bindings whose source it is, its
// alternate exchange, and a consistent-hash exchange's buckets. Private to the in-memory broker
// (broker_state.hpp).

#include <letterbox/config.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/exchange.hpp>
#include <letterbox/transport/in_memory/detail/consistent_hash_ring.hpp>

#include <optional>
#include <string>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

struct exchange_state {
    topology::exchange decl;
    std::vector<topology::binding> bindings; // bindings whose source is this exchange
    std::optional<std::string> alternate;    // the `alternate-exchange` argument
    consistent_hash_ring ring;               // x-consistent-hash only: its buckets
    bool builtin = false;
};

} // namespace letterbox::in_memory::detail
