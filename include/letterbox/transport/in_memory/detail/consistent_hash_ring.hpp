// SPDX-License-Identifier: BSL-1.0
#pragma once

// A consistent-hash exchange's bucket map, and how it picks a message's one destination, as
// RabbitMQ's rabbit_exchange_type_consistent_hash (3.10.8) does. Private to the in-memory
// broker (exchange_state.hpp, broker_state.hpp); docs/in-memory-transport.md §2.17.

#include <letterbox/basic_properties.hpp>
#include <letterbox/config.hpp>
#include <letterbox/field_table.hpp>
#include <letterbox/message.hpp>
#include <letterbox/topology/binding.hpp>
#include <letterbox/topology/consistent_hash_arguments.hpp>
#include <letterbox/topology/queue_arguments.hpp>
#include <letterbox/transport/in_memory/detail/erlang_hash.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::in_memory::detail {

/// A binding key as Erlang's `~p` prints a binary in a reply text: `<<>>`, `<<"abc">>` when
/// every byte is printable Latin-1 (with `\"`, `\\`, `\n` and the like escaped), else `<<0,1>>`.
inline std::string erlang_binary_text(std::string_view bytes) {
    if (bytes.empty())
        return "<<>>";
    std::string quoted;
    for (const char ch : bytes) {
        const auto c = static_cast<unsigned char>(ch);
        static constexpr std::string_view escaped = "\b\t\n\v\f\r\x1b";
        static constexpr std::string_view letters = "btnvfre";
        if (const auto at = escaped.find(ch); at != std::string_view::npos) {
            quoted += '\\';
            quoted += letters[at];
        } else if (ch == '"' || ch == '\\') {
            quoted += '\\';
            quoted += ch;
        } else if ((c >= 32 && c <= 126) || c >= 160) {
            quoted += ch;
        } else {
            std::string list = "<<";
            for (std::size_t i = 0; i < bytes.size(); ++i)
                list += (i ? "," : "") + std::to_string(static_cast<unsigned char>(bytes[i]));
            return list + ">>";
        }
    }
    return "<<\"" + quoted + "\">>";
}

/// The weight a consistent-hash binding key gives its destination (rabbit_exchange_type_
/// consistent_hash:validate_binding): a decimal integer as Erlang's `list_to_integer` reads it
/// (an optional sign, then digits: `+3` and `007` are fine) of at least 1. Otherwise
/// `std::nullopt` and the broker's 406 text in `reason`. A weight beyond 2^62 is taken as
/// 2^62 (the broker would try to make that many buckets).
inline std::optional<std::uint64_t> binding_weight(std::string_view key, std::string& reason) {
    constexpr std::uint64_t cap = std::uint64_t{1} << 62;
    std::string_view digits = key;
    const bool negative = !digits.empty() && digits.front() == '-';
    if (!digits.empty() && (digits.front() == '-' || digits.front() == '+'))
        digits.remove_prefix(1);
    const bool numeric = !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) {
        return c >= '0' && c <= '9';
    });
    if (!numeric) {
        reason = "The binding key must be an integer: " + erlang_binary_text(key);
        return std::nullopt;
    }
    std::uint64_t w = 0;
    for (const char c : digits)
        w = std::min(cap, w * 10 + static_cast<std::uint64_t>(c - '0'));
    if (negative || w == 0) {
        reason = "The binding key must be greater than 0";
        return std::nullopt;
    }
    return w;
}

inline void hash_bare_value(term_hash& h, const field_value& v);

/// Hashes a header value as RabbitMQ holds it, the tuple `{Type, Value}` (`{longstr, <<"1">>}`,
/// `{signedint, 1}`, `{table, [{Name, Type, Value}, ...]}`), into `h`.
inline void hash_header_value(term_hash& h, const field_value& v) {
    h.tuple(2);
    h.atom(topology::detail::amqp_type_name(v));
    hash_bare_value(h, v);
}

/// The value alone, as rabbit_binary_parser decodes it.
inline void hash_bare_value(term_hash& h, const field_value& v) {
    std::visit(
        [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                h.atom("undefined");
            } else if constexpr (std::is_same_v<T, bool>) {
                h.atom(x ? "true" : "false");
            } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
                h.float64(static_cast<double>(x));
            } else if constexpr (std::is_same_v<T, decimal>) {
                h.tuple(2);
                h.integer(x.scale);
                h.integer(static_cast<std::uint32_t>(x.value)); // unsigned on the wire
            } else if constexpr (std::is_same_v<T, std::string>) {
                h.binary(x);
            } else if constexpr (std::is_same_v<T, timestamp>) {
                h.unsigned_integer(static_cast<std::uint64_t>(x.time_since_epoch().count()));
            } else if constexpr (std::is_same_v<T, byte_array>) {
                h.binary(std::string_view(reinterpret_cast<const char*>(x.data()), x.size()));
            } else if constexpr (std::is_same_v<T, field_array>) {
                for (const auto& e : x)
                    hash_header_value(h, e);
                h.nil();
            } else if constexpr (std::is_same_v<T, field_table>) {
                for (const auto& [name, e] : x) {
                    h.tuple(3);
                    h.binary(name);
                    h.atom(topology::detail::amqp_type_name(e));
                    hash_bare_value(h, e);
                }
                h.nil();
            } else {
                h.integer(static_cast<std::int64_t>(x));
            }
        },
        v.variant());
}

/// A consistent-hash exchange's buckets, and what it hashes.
///
/// The buckets are a list of runs, one per destination, each as long as the weight of the
/// binding that made it, in binding order. A destination has at most one run: binding it again,
/// with any weight, changes nothing; removing any of its bindings removes the run, and the later
/// runs move down. A message goes to the run holding bucket
/// `jump_consistent_hash(phash2(V), total)`, where V is the routing key, or the header or
/// property the arguments name (the atom `undefined` when the message lacks it).
class consistent_hash_ring {
public:
    struct run {
        topology::destination_kind kind;
        std::string destination;
        std::uint64_t weight;
    };

    consistent_hash_ring() = default;
    explicit consistent_hash_ring(topology::consistent_hash_arguments hash_on)
        : hash_on_(std::move(hash_on)) {}

    /// Appends `weight` buckets for the destination of `b`, unless it has some already.
    void add(const topology::binding& b, std::uint64_t weight) {
        if (find(b.kind, b.destination) != runs_.end())
            return;
        runs_.push_back({b.kind, b.destination, weight});
        total_ = std::min(total_ + weight, max_total);
    }

    /// Removes every bucket of the destination `name` of kind `kind`.
    void remove(topology::destination_kind kind, std::string_view name) {
        if (auto it = find(kind, name); it != runs_.end()) {
            runs_.erase(it);
            total_ = 0;
            for (const auto& r : runs_)
                total_ = std::min(total_ + r.weight, max_total);
        }
    }

    /// The buckets a broker restart makes: each binding again, sorted as Erlang sorts the
    /// binding records (by key, then destination kind, `exchange` before `queue`, then name).
    void rebuild(std::vector<topology::binding> bindings) {
        std::sort(bindings.begin(), bindings.end(), [](const auto& a, const auto& b) {
            const auto kind_text = [](topology::destination_kind k) {
                return k == topology::destination_kind::queue ? "queue" : "exchange";
            };
            return std::tuple(std::string_view(a.routing_key), std::string_view(kind_text(a.kind)),
                              std::string_view(a.destination)) <
                   std::tuple(std::string_view(b.routing_key), std::string_view(kind_text(b.kind)),
                              std::string_view(b.destination));
        });
        runs_.clear();
        total_ = 0;
        std::string ignored;
        for (const auto& b : bindings)
            if (const auto w = binding_weight(b.routing_key, ignored))
                add(b, *w);
    }

    /// The one destination of a message published with `routing_key`; null when there are no
    /// buckets.
    const run* pick(std::string_view routing_key, const message& msg) const {
        if (runs_.empty())
            return nullptr;
        term_hash h;
        value_to_hash(h, routing_key, msg);
        auto bucket = jump_consistent_hash(h.phash2(), total_);
        for (const auto& r : runs_) {
            if (bucket < r.weight)
                return &r;
            bucket -= r.weight;
        }
        return &runs_.back();
    }

    const std::vector<run>& runs() const noexcept { return runs_; }
    std::uint64_t buckets() const noexcept { return total_; }

private:
    static constexpr std::uint64_t max_total = std::numeric_limits<std::int64_t>::max();

    std::vector<run>::iterator find(topology::destination_kind kind, std::string_view name) {
        return std::find_if(runs_.begin(), runs_.end(),
                            [&](const run& r) { return r.kind == kind && r.destination == name; });
    }

    // rabbit_exchange_type_consistent_hash:value_to_hash, as the Erlang term phash2 sees.
    void value_to_hash(term_hash& h, std::string_view routing_key, const message& msg) const {
        if (hash_on_.hash_header) {
            const auto* v = msg.headers.find(*hash_on_.hash_header);
            if (v == nullptr || !is_wire_header(msg, *hash_on_.hash_header))
                h.atom("undefined");
            else
                hash_header_value(h, *v);
        } else if (hash_on_.hash_property) {
            std::optional<std::string> p;
            switch (*hash_on_.hash_property) {
            case topology::hashed_property::message_id:
                p = to_basic_properties(msg).message_id;
                break;
            case topology::hashed_property::correlation_id:
                p = msg.properties.correlation_id;
                break;
            case topology::hashed_property::timestamp:
                if (const auto& t = msg.properties.timestamp)
                    p = std::to_string(t->time_since_epoch().count());
                break;
            }
            if (p)
                h.binary(*p);
            else
                h.atom("undefined");
        } else {
            h.binary(routing_key);
        }
    }

    topology::consistent_hash_arguments hash_on_{};
    std::vector<run> runs_{};
    std::uint64_t total_ = 0;
};

} // namespace letterbox::in_memory::detail
