// SPDX-License-Identifier: BSL-1.0
// Translation unit 1 of the ODR test: includes everything, defines one probe. Keep in step with
// tu2.cpp.
#include "letterbox_odr_all.hpp"

#include <letterbox/error.hpp>
#include <letterbox/testing/seed.hpp>
#include <letterbox/version.hpp>

#include "odr.hpp"

namespace letterbox_odr {

probe from_tu1() {
    return {&letterbox::error_category(), letterbox::testing::derive_seed(42, "odr"),
            LETTERBOX_VERSION};
}

} // namespace letterbox_odr
