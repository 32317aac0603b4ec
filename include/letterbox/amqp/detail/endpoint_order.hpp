// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/amqp/endpoint.hpp>
#include <letterbox/backoff/detail/hash.hpp>
#include <letterbox/config.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::amqp::detail {

/// `list` in the order a transport tries it: shuffled when `shuffle` is set, else as given.
/// The shuffle is Fisher-Yates drawing from the splitmix64 sequence of `seed` (a random seed
/// from `std::random_device` when there is none), with integer arithmetic of our own rather
/// than `std::shuffle`, whose distribution is the standard library's: the same seed and list
/// give the same order on every platform. The modulo bias is below 64 / 2^64.
inline std::vector<endpoint> endpoint_order(std::vector<endpoint> list, bool shuffle,
                                            std::optional<std::uint64_t> seed) {
    if (!shuffle || list.size() < 2)
        return list;
    if (!seed) {
        std::random_device device;
        seed = std::uint64_t{device()} << 32U | device();
    }
    for (std::size_t i = list.size() - 1, draw = 0; i > 0; --i, ++draw) {
        // splitmix64(seed + k * golden) is the k-th output of the splitmix64 generator.
        const auto bits = backoff::detail::splitmix64(*seed + draw * 0x9e3779b97f4a7c15U);
        std::swap(list[i], list[bits % (i + 1)]);
    }
    return list;
}

} // namespace letterbox::amqp::detail
