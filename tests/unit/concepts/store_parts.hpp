// SPDX-License-Identifier: BSL-1.0
// The parts that every store concept's near-miss test assembles its types from: a unit of work
// and a type that is not one, the clause that names either, and the sum of parts. Each test adds
// the parts of its own concept (its opt-in tag and its members).
#pragma once

#include <functional>
#include <system_error>

namespace unit_concepts_store_parts {

struct uow {
    std::error_code commit() { return {}; }
    std::error_code rollback() { return {}; }
    std::error_code on_commit(std::function<void()>) { return {}; }
};
struct not_a_uow {
    std::error_code commit() { return {}; }
};

struct has_uow {
    using unit_of_work_type = uow;
};
struct has_bad_uow {
    using unit_of_work_type = not_a_uow;
};

/// A store type made of `Parts`: one part per clause of the concept.
template <class... Parts>
struct store_of : Parts... {};

} // namespace unit_concepts_store_parts
