// SPDX-License-Identifier: BSL-1.0
//
// The Catch2 v2 main of every letterbox test executable (compiled once, as an OBJECT library).
//
// One seed per process: LETTERBOX_SEED (decimal u64) if set; else the value of a numeric
// --rng-seed; else a fresh one from std::random_device. The seed is exported as LETTERBOX_SEED
// (so letterbox::testing::test_seed() sees it), printed as `LETTERBOX_SEED=<n>` before any test
// runs, handed to Catch2 as its --rng-seed (unless one was given) and to RapidCheck by appending
// `seed=<n>` to RC_PARAMS (unless RC_PARAMS already holds a seed). Fresh seeds are below 2^32, so
// Catch2's "Randomness seeded to" prints the same number; larger seeds are folded to 32 bits for
// Catch2 only.
//
// Replay: LETTERBOX_SEED=<n> ./letterbox_unit_tests "<test name>"
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <letterbox/testing/seed.hpp>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <string_view>

namespace {

bool rng_seed_on_command_line(int argc, const char* const* argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--rng-seed" || arg.starts_with("--rng-seed=") ||
            arg.starts_with("--rng-seed:")) {
            return true;
        }
    }
    return false;
}

std::uint64_t fresh_seed() {
    std::random_device device;
    std::uint64_t seed = 0;
    while (seed == 0) { // Catch2 treats 0 as "do not seed"
        seed = device();
    }
    return seed & 0xffffffffU;
}

unsigned int catch_seed(std::uint64_t seed) {
    if (seed <= 0xffffffffU) {
        return static_cast<unsigned int>(seed);
    }
    return static_cast<unsigned int>((seed ^ (seed >> 32U)) & 0xffffffffU);
}

// Points RapidCheck at our seed. It reads RC_PARAMS lazily, when the first property runs.
void seed_rapidcheck(std::uint64_t seed) {
    const char* existing = std::getenv("RC_PARAMS");
    std::string params = existing == nullptr ? "" : existing;
    if (params.find("seed=") != std::string::npos) {
        return; // the user chose RapidCheck's seed explicitly
    }
    if (!params.empty()) {
        params += ' ';
    }
    params += "seed=" + std::to_string(seed);
    ::setenv("RC_PARAMS", params.c_str(), 1);
}

} // namespace

int main(int argc, char* argv[]) {
    Catch::Session session;
    if (const int rc = session.applyCommandLine(argc, argv); rc != 0) {
        return rc;
    }
    Catch::ConfigData& config = session.configData();
    const bool user_rng_seed = rng_seed_on_command_line(argc, argv);

    std::uint64_t seed = 0;
    if (const char* text = std::getenv(letterbox::testing::seed_environment_variable)) {
        const auto parsed = letterbox::testing::parse_seed(text);
        if (!parsed) {
            std::cerr << "LETTERBOX_SEED must be a decimal unsigned 64-bit integer, not '" << text
                      << "'\n";
            return 2;
        }
        seed = *parsed;
    } else if (user_rng_seed && config.rngSeed != 0) {
        seed = config.rngSeed;
    } else {
        seed = fresh_seed();
    }
    ::setenv(letterbox::testing::seed_environment_variable, std::to_string(seed).c_str(), 1);
    if (!user_rng_seed) {
        config.rngSeed = catch_seed(seed);
    }
    seed_rapidcheck(seed);

    // Listing (catch_discover_tests parses --list-test-names-only) and --help must print nothing
    // else on stdout.
    const bool listing = config.listTests || config.listTestNamesOnly || config.listTags ||
                         config.listReporters || config.showHelp;
    if (!listing) {
        std::cout << "LETTERBOX_SEED=" << seed << std::endl;
    }
    return session.run();
}
