// SPDX-License-Identifier: BSL-1.0
// The ODR test's main: both translation units must agree on what they see.
#include "odr.hpp"

#include <iostream>

int main() {
    const letterbox_odr::probe one = letterbox_odr::from_tu1();
    const letterbox_odr::probe two = letterbox_odr::from_tu2();
    if (one.category != two.category || one.derived_seed != two.derived_seed ||
        one.version != two.version) {
        std::cout << "odr: the two translation units disagree\n";
        return 1;
    }
    std::cout << "odr: ok (" << one.category->name() << ", version " << one.version << ")\n";
    return 0;
}
